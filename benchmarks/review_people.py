"""People at scale: a seeded venue of 10,000 members and 10,000 submissions.

Measures, in one process on one database (SQLite file by default, ``--pg`` for the local
PostgreSQL): adding one member (their conflicts alone), submitting one paper (its conflicts
alone), importing 10,000 invitations from CSV as a job, and recomputing every conflict of the
venue as a job. For comparison it times the recompute that adding a member used to run
(every submission against every member, ``--old-sample`` submissions of it, scaled up).

Targets: add member < 1 s, submit < 1 s, CSV import of 10,000 < 2 min.

    .venv/bin/python benchmarks/review_people.py                    # 10k x 10k, SQLite
    .venv/bin/python benchmarks/review_people.py --members 2000 --papers 2000
    .venv/bin/python benchmarks/review_people.py --pg               # ICML25_TEST_PG_URL
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from sqlalchemy import insert, select, text

from icml25.review import models as m
from icml25.review.db import Settings, make_engine, make_sessionmaker, upgrade
from icml25.review.jobs import Worker
from icml25.review.people import name_key
from icml25.review.service import ReviewService
from icml25.review.services.submissions import conflict_reason
from icml25.review.workflow import Role

PG = os.environ.get("ICML25_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
SURNAMES = ["Lee", "Kim", "Park", "Smith", "Garcia", "Chen", "Wang", "Muller", "Rossi", "Sato",
            "Novak", "Silva", "Khan", "Ivanov", "Dubois", "Cohen"]


def _url(args, tmp: Path) -> str:
    if not args.pg:
        return f"sqlite:///{tmp / 'people.sqlite3'}"
    from sqlalchemy import create_engine

    name = f"icml25_people_{uuid.uuid4().hex[:8]}"
    admin = create_engine(PG.replace("postgresql://", "postgresql+psycopg://"),
                          isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return PG.rsplit("/", 1)[0] + "/" + name


def seed(db, n_members: int, n_papers: int, rng: random.Random) -> m.Venue:
    """Members (each with an affiliation and a few co-authors) and papers (three authors
    each), bulk-inserted; the chair is user 1."""
    pw = "x" * 20  # never used to log in
    users = [{"email": "chair@venue.example", "name": "Chair", "password_hash": pw,
              "is_admin": True, "email_verified_at": m.utcnow(), "affiliation": ""}]
    users += [{"email": f"m{i}@inst{i % 500}.edu", "name": f"Member {i}",
               "password_hash": pw, "is_admin": False, "email_verified_at": m.utcnow(),
               "affiliation": ""} for i in range(n_members)]
    users += [{"email": f"a{j}@inst{rng.randrange(700)}.edu", "name": f"Ann {j} "
               f"{rng.choice(SURNAMES)}", "password_hash": pw, "is_admin": False,
               "email_verified_at": m.utcnow(), "affiliation": ""}
              for j in range(n_papers)]
    db.execute(insert(m.User), users)
    db.commit()
    db.execute(insert(m.Venue), [{"slug": "big", "name": "Big venue", "phase": "submission"}])
    venue = db.scalar(select(m.Venue).where(m.Venue.slug == "big"))
    ids = dict(db.execute(select(m.User.email, m.User.id)).all())
    db.execute(insert(m.Membership), [{"venue_id": venue.id, "user_id": 1, "role": "chair"}] + [
        {"venue_id": venue.id, "user_id": ids[f"m{i}@inst{i % 500}.edu"], "role": "reviewer"}
        for i in range(n_members)])
    db.execute(insert(m.Affiliation), [
        {"user_id": ids[f"m{i}@inst{i % 500}.edu"], "institution": "Past",
         "domain": f"inst{rng.randrange(700)}.edu", "start_year": 2015, "end_year": 2024}
        for i in range(n_members)])
    db.execute(insert(m.Publication), [
        {"user_id": ids[f"m{i}@inst{i % 500}.edu"], "title": f"Paper of member {i}",
         "year": 2024, "abstract": "", "authors": "[]", "source": "bibtex"}
        for i in range(n_members)])
    pubs = dict(db.execute(select(m.Publication.user_id, m.Publication.id)).all())
    db.execute(insert(m.Coauthor), [
        {"user_id": uid, "publication_id": pid,
         "name_key": f"ann {rng.randrange(n_papers)} {rng.choice(SURNAMES).lower()}"}
        for uid, pid in pubs.items() for _ in range(3)])
    authors = [u for u in users if u["email"].startswith("a")]
    db.execute(insert(m.Submission), [
        {"venue_id": venue.id, "number": j + 1, "title": f"Paper {j}", "abstract": "A.",
         "keywords": "", "declared_conflicts": "", "status": "active",
         "submitter_id": ids[authors[j]["email"]], "version": 0}
        for j in range(n_papers)])
    subs = dict(db.execute(select(m.Submission.number, m.Submission.id)).all())
    rows = []
    for j in range(n_papers):
        people = [authors[j]] + rng.sample(authors, 2)
        for pos, a in enumerate(people):
            rows.append({"submission_id": subs[j + 1], "position": pos, "name": a["name"],
                         "email": a["email"], "affiliation": "", "name_key": name_key(a["name"]),
                         "user_id": ids[a["email"]] if pos == 0 else None})
    db.execute(insert(m.SubmissionAuthor), rows)
    db.commit()
    return venue


def timed(fn, repeats: int) -> tuple[float, list[float]]:  # noqa: ANN001
    times = []
    for i in range(repeats):
        t = time.perf_counter()
        fn(i)
        times.append(time.perf_counter() - t)
    return statistics.median(times), times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--members", type=int, default=10_000)
    ap.add_argument("--papers", type=int, default=10_000)
    ap.add_argument("--invite", type=int, default=10_000, help="rows of the CSV import")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--old-sample", type=int, default=20,
                    help="papers of the former full recompute to time (scaled up)")
    ap.add_argument("--pg", action="store_true")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    rng = random.Random(0)
    tmp = Path(tempfile.mkdtemp(prefix="people-bench-"))
    url = _url(args, tmp)
    upgrade(url)
    settings = Settings(database_url=url, upload_dir=tmp / "uploads", argon2_time_cost=1,
                        argon2_memory_kib=8192, tick_seconds=0, job_runner="worker",
                        view_cache=False)
    engine = make_engine(url, settings)
    maker = make_sessionmaker(engine)
    db = maker()
    t = time.perf_counter()
    venue = seed(db, args.members, args.papers, rng)
    out = {"members": args.members, "papers": args.papers, "backend": url.split(":")[0],
           "seed_s": round(time.perf_counter() - t, 1)}
    print(f"seeded {args.members} members x {args.papers} papers in {out['seed_s']} s",
          flush=True)
    chair = ReviewService(db, settings, db.get(m.User, 1))

    # venue-wide recompute, as a job
    t = time.perf_counter()
    chair.start_conflict_recompute(venue)
    Worker(maker, settings).run_until_idle()
    out["recompute_job_s"] = round(time.perf_counter() - t, 2)
    out["conflicts"] = db.scalar(select(m.Conflict.id).order_by(m.Conflict.id.desc()).limit(1))
    print(f"venue recompute job: {out['recompute_job_s']} s ({out['conflicts']} rows)",
          flush=True)

    # add one member (an existing verified account) -- their conflicts alone
    base = ReviewService(db, settings)
    newcomers = [base.create_user(f"new{i}@inst{i}.edu", f"New {i}", "password-123")
                 for i in range(args.repeats)]
    med, times = timed(lambda i: chair.add_member(venue, newcomers[i].email, Role.REVIEWER),
                       args.repeats)
    out["add_member_s"], out["add_member_runs"] = round(med, 3), [round(x, 3) for x in times]
    print(f"add member: median {med:.3f} s {out['add_member_runs']}", flush=True)

    # submit one paper -- its conflicts alone
    author = db.scalar(select(m.User).where(m.User.email.like("a1@%")))
    author_svc = ReviewService(db, settings, author)
    med, times = timed(lambda i: author_svc.submit(
        venue, title=f"New paper {i}", abstract="Fresh.",
        authors=[{"name": author.name, "email": author.email},
                 {"name": "Co Author", "email": f"co{i}@inst{i * 7}.edu"}]), args.repeats)
    out["submit_s"], out["submit_runs"] = round(med, 3), [round(x, 3) for x in times]
    print(f"submit: median {med:.3f} s {out['submit_runs']}", flush=True)

    # what adding a member cost before: every submission against every member
    members = db.execute(select(m.User).join(m.Membership, m.Membership.user_id == m.User.id)
                         .where(m.Membership.venue_id == venue.id).distinct()).scalars().all()
    sample = db.scalars(select(m.Submission).where(m.Submission.venue_id == venue.id)
                        .limit(args.old_sample)).all()
    t = time.perf_counter()
    for sub in sample:
        sources = chair.conflict_sources(sub)
        for u in members:
            conflict_reason(u, sub, *sources)
    per_paper = (time.perf_counter() - t) / len(sample)
    out["old_add_member_s"] = round(per_paper * args.papers, 1)
    out["old_over_new"] = round(out["old_add_member_s"] / out["add_member_s"], 1)
    print(f"former add member (every paper x every member, {len(sample)} papers timed, scaled "
          f"to {args.papers}): {out['old_add_member_s']} s = {out['old_over_new']}x",
          flush=True)

    # 10,000 invitations from CSV, as a job
    csv = "email,name,role\n" + "".join(f"inv{i}@school{i % 900}.edu,Invitee {i},reviewer\n"
                                        for i in range(args.invite))
    t = time.perf_counter()
    job_id = chair.import_invitations(venue, csv)["job_id"]
    accepted_s = time.perf_counter() - t
    w = Worker(maker, settings)
    check = maker()
    while check.get(m.Job, job_id).status not in ("done", "failed"):
        ids = w.claim(check, 1)
        for jid in ids:
            w.run_job(jid)
        check.expire_all()
    out["csv_import_job_s"] = round(time.perf_counter() - t, 1)
    out["csv_check_s"] = round(accepted_s, 2)
    out["csv_job_status"] = check.get(m.Job, job_id).status
    print(f"CSV import of {args.invite}: checked in {accepted_s:.2f} s, job done in "
          f"{out['csv_import_job_s']} s ({out['csv_job_status']})", flush=True)
    t = time.perf_counter()
    n = w.run_until_idle(batch=100)
    out["invitation_mail_jobs"], out["invitation_mail_s"] = n, round(time.perf_counter() - t, 1)
    print(f"then its {n} mail jobs (no SMTP: logged): {out['invitation_mail_s']} s", flush=True)
    check.close()
    db.close()
    engine.dispose()
    print(json.dumps(out))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    sys.exit(main())
