"""Load test of the tool and role web pages: 50 users with think time on ``icml25 review serve
--workers 2`` (PostgreSQL; ``--sqlite`` for a file), reusing review_load.py's server, CPU and
database helpers (its own core loop is left alone).

Each user is one person logged in through a real session cookie and reads the pages of their
role, one after the other, waiting 0.5-1.5 x ``--think`` seconds between them:

* reviewers: the bidding console (two filters), their rewards page, a public reviewer profile,
  the venue's review form;
* program chairs: the assignment workbench, the submissions table and its CSV, the admin page,
  the roles page (senior area chairs, camera-ready deadline), the review form editor, and
  (``--propose``, off by default) a workbench proposal, which runs the matcher;
* authors: the page of an accepted paper with its camera-ready and supplementary section, and
  the camera-ready download;
* a senior area chair: their console and a paper of theirs; a sub-reviewer: the paper they
  write for; anyone: the credential verification page.

Prints p50/p95/p99 per page and over all pages. Target: p95 < 300 ms at 50 users with
think time, zero errors.

    .venv/bin/python benchmarks/review_load_tool_pages.py               # 50 users, think 1 s, 60 s
    .venv/bin/python benchmarks/review_load_tool_pages.py --users 10 --seconds 10 --sqlite
    .venv/bin/python benchmarks/review_load_tool_pages.py --cpu   # CPU per page, in process

``--cpu`` measures what a shared machine's latency hides: the CPU time of each page, served in
process (FastAPI's test client, SQLite), the best of 6 batches of 8 requests, next to the JSON
API's submission view and the near-empty ``/verify`` page.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import random
import re
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path

import httpx
import numpy as np
from sqlalchemy import select

sys.path.insert(0, str(Path(__file__).parent))
from icml25.review import models as m  # noqa: E402
from icml25.review.db import Settings, make_engine, make_sessionmaker, upgrade  # noqa: E402
from icml25.review.demo import (  # noqa: E402
    DEMO_PASSWORD,
    REWARDS_CAST,
    Cast,
    ensure_user,
    populate_rewards_venue,
    populate_venue,
)
from icml25.review.security import minimal_pdf  # noqa: E402
from icml25.review.service import ReviewService  # noqa: E402
from icml25.review.workflow import Phase, Role  # noqa: E402
from review_load import (  # noqa: E402
    connections_per_worker,
    cpu_seconds,
    kill_server,
    scratch_database,
    start_server,
)

SAC, SUB = "sac@sac-inst.example", "sub@sub-lab.example"
# users per role out of every 10
ROLE_MIX = ("reviewer",) * 4 + ("chair",) * 2 + ("author",) * 2 + ("sac", "sub")


def setup(url: str, tmp: Path, n_papers: int) -> dict:
    """Four venues: bidding (console), assignment (workbench), a closed one with badges, decisions
    and a camera-ready upload (dashboards, rewards, camera-ready), and one in reviewing with a
    senior area chair and a sub-reviewer. Returns each role's sessions and pages."""
    upgrade(url)
    engine = make_engine(url)
    db = make_sessionmaker(engine)()
    settings = Settings(database_url=url, upload_dir=tmp, argon2_time_cost=1,
                        argon2_memory_kib=8192)
    cast, base = Cast(), ReviewService(db, settings)
    populate_venue(db, settings, "p29-bid", Phase.BIDDING, n_papers=n_papers)
    populate_venue(db, settings, "p29-asg", Phase.ASSIGNMENT, n_papers=n_papers)
    closed = populate_rewards_venue(db, settings, "p29-closed")
    rev = populate_venue(db, settings, "p29-rev", Phase.REVIEWING, n_papers=n_papers)
    user = {e: db.scalar(select(m.User).where(m.User.email == e)) for e in (
        cast.chair, cast.ac, *REWARDS_CAST.reviewers, *cast.authors)}
    user[SAC] = ensure_user(base, SAC, "Senior Person")
    user[SUB] = ensure_user(base, SUB, "Sub Person")
    chair = base.as_user(user[cast.chair])
    chair.add_member(rev, SAC, Role.SAC)
    chair.set_senior_ac(rev, user[cast.ac].id, user[SAC].id)
    rev_subs = base.bundles(rev)
    inviter = next(a for a in rev_subs[0].assignments if a.role == Role.REVIEWER)
    base.as_user(db.get(m.User, inviter.user_id)).invite_subreviewer(
        rev_subs[0].submission.id, SUB)
    accepted = next(b for b in base.bundles(closed) if b.decision.outcome == "accept")
    author = base.as_user(db.get(m.User, accepted.submission.submitter_id))
    sid = accepted.submission.id
    author.upload_camera_ready(sid, minimal_pdf("camera ready"))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("code/train.py", "print('train')\n")
    author.upload_supplementary(sid, buf.getvalue())
    holder = db.scalar(select(m.Badge.user_id).where(m.Badge.tier == "top-10"))
    reviewer_pages = ["/v/p29-bid/bids", "/v/p29-bid/bids?unbid=1&sort=number", "/me/rewards",
                      f"/reviewers/{holder}", "/verify", "/v/p29-rev/review-form"]
    pages = {
        "reviewer": reviewer_pages,
        "chair": ["/v/p29-asg/assignment", "/v/p29-closed/submissions",
                  "/v/p29-closed/submissions.csv?sort=mean_score&desc=true",
                  "/v/p29-closed/admin", "/v/p29-rev/roles", "/v/p29-rev/review-form"],
        "author": [f"/s/{sid}", f"/s/{sid}/camera-ready.pdf"],
        "sac": ["/v/p29-rev/senior-ac", f"/s/{rev_subs[0].submission.id}"],
        "sub": [f"/s/{rev_subs[0].submission.id}"],
    }
    who = {"reviewer": cast.reviewers, "chair": [cast.chair],
           "author": [db.get(m.User, accepted.submission.submitter_id).email],
           "sac": [SAC], "sub": [SUB]}
    db.close()
    engine.dispose()
    return {"pages": pages, "who": who, "url": url, "tmp": str(tmp)}


def login_all(plan: dict, n_users: int) -> list[tuple[str, str, str]]:
    """(role, session cookie, CSRF token) per virtual user, each its own session."""
    engine = make_engine(plan["url"])
    db = make_sessionmaker(engine)()
    settings = Settings(database_url=plan["url"], upload_dir=Path(plan["tmp"]),
                        argon2_time_cost=1, argon2_memory_kib=8192)
    base = ReviewService(db, settings)
    out = []
    for i in range(n_users):
        role = ROLE_MIX[i % len(ROLE_MIX)]
        emails = plan["who"][role]
        token, ws = base.login(emails[i % len(emails)], DEMO_PASSWORD, ip=f"10.0.0.{i % 250}")
        out.append((role, token, ws.csrf_token))
    db.close()
    engine.dispose()
    return out


def kind_of(path: str) -> str:
    """A short name per page (ids and queries dropped)."""
    return re.sub(r"/\d+", "/{id}", path.split("?")[0])


async def person(client: httpx.AsyncClient, role: str, cookie: str, csrf: str, plan: dict,
                 until: float, rng: random.Random, lat: dict[str, list[float]],
                 errors: list[str], think: float, propose: bool) -> None:
    pages = plan["pages"][role]
    jar = {"Cookie": f"icml25_session={cookie}"}
    await asyncio.sleep(rng.uniform(0, think))  # arrive spread out
    while time.perf_counter() < until:
        t0 = time.perf_counter()
        try:
            if propose and role == "chair" and rng.random() < 0.1:
                kind = "POST /v/p29-asg/assignment (propose)"
                r = await client.post("/v/p29-asg/assignment", headers=jar,
                                      data={"csrf_token": csrf, "objective": "total"})
            else:
                path = rng.choice(pages)
                kind = "GET " + kind_of(path)
                r = await client.get(path, headers=jar)
            if r.status_code != 200:
                errors.append(f"{kind} {r.status_code} {r.text[:120]}")
        except (httpx.HTTPError, OSError) as exc:
            kind = "error"
            errors.append(repr(exc))
        lat.setdefault(kind, []).append(time.perf_counter() - t0)
        await asyncio.sleep(rng.uniform(0.5 * think, 1.5 * think))


async def drive(port: int, plan: dict, users: list[tuple[str, str, str]], seconds: float,
                think: float, propose: bool) -> tuple[dict, list]:
    lat: dict[str, list[float]] = {}
    errors: list[str] = []
    limits = httpx.Limits(max_connections=len(users), max_keepalive_connections=len(users))
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30,
                                 limits=limits) as client:
        until = time.perf_counter() + seconds
        await asyncio.gather(*(person(client, role, cookie, csrf, plan, until,
                                      random.Random(i), lat, errors, think, propose)
                               for i, (role, cookie, csrf) in enumerate(users)))
    return lat, errors


def cpu_per_page(n_papers: int, batches: int = 6, per_batch: int = 8) -> None:
    """Print the CPU milliseconds of each page (best batch), served in process."""
    from fastapi.testclient import TestClient

    from icml25.review.web import create_app

    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'cpu.sqlite3'}"
        plan = setup(url, Path(tmp), n_papers)
        users = {role: cookie for role, cookie, _ in login_all(plan, len(ROLE_MIX))}
        settings = Settings(database_url=url, upload_dir=Path(tmp), tick_seconds=0)
        engine = make_engine(url, settings)
        sid = plan["pages"]["sub"][0].rsplit("/", 1)[1]
        rows = [("api", f"/api/v1/submissions/{sid}")] + [
            (role, path) for role, paths in plan["pages"].items() for path in paths]
        with TestClient(create_app(settings, engine)) as c:
            token = _api_token(url, tmp)
            for role, path in rows:
                headers = {"Authorization": f"Bearer {token}"} if role == "api" else {}
                if role != "api":
                    c.cookies.set("icml25_session", users[role])
                c.get(path, headers=headers)  # warm the view cache
                best = float("inf")
                for _ in range(batches):
                    t0 = time.process_time()
                    for _ in range(per_batch):
                        r = c.get(path, headers=headers)
                    best = min(best, (time.process_time() - t0) / per_batch)
                assert r.status_code == 200, (path, r.status_code)
                print(f"  {role:8s} {kind_of(path):40s} CPU {best * 1000:6.2f} ms")
        engine.dispose()


def _api_token(url: str, tmp: str) -> str:
    """A personal access token of the sub-reviewer (who may read the paper of the API row)."""
    engine = make_engine(url)
    db = make_sessionmaker(engine)()
    settings = Settings(database_url=url, upload_dir=Path(tmp))
    user = db.scalar(select(m.User).where(m.User.email == SUB))
    token = ReviewService(db, settings).as_user(user).create_api_token("cpu")
    db.close()
    engine.dispose()
    return token


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--users", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--papers", type=int, default=8, help="per venue (4 reviewers, load 6)")
    ap.add_argument("--think", type=float, default=1.0,
                    help="mean seconds a user reads a page (0.5-1.5 x this, uniform)")
    ap.add_argument("--propose", action="store_true",
                    help="chairs also run workbench proposals (10 %% of their requests)")
    ap.add_argument("--sqlite", action="store_true", help="a SQLite file, not PostgreSQL")
    ap.add_argument("--server-log", default="/dev/null")
    ap.add_argument("--cpu", action="store_true", help="CPU per page in process, no server")
    args = ap.parse_args()
    if args.cpu:
        cpu_per_page(args.papers)
        return
    if args.think <= 0:
        ap.error("this benchmark measures pages read by people: --think must be > 0")
    server = None
    with scratch_database("icml25_review_p29", args.sqlite) as (url, tmp, db_name):
        try:
            plan = setup(url, tmp, args.papers)
            users = login_all(plan, args.users)
            server, port = start_server(url, tmp, args.workers, args.server_log)
            cpu0 = cpu_seconds(server.pid, db_name)
            spread: list[int] = []
            timer = threading.Timer(min(5.0, args.seconds / 2), lambda: spread.extend(
                connections_per_worker(server.pid, port)))
            timer.start()
            lat, errors = asyncio.run(drive(port, plan, users, args.seconds, args.think,
                                            args.propose))
            timer.cancel()
            cpu1 = cpu_seconds(server.pid, db_name)
        finally:
            if server is not None:
                kill_server(server)
    total = sum(len(v) for v in lat.values())
    backend = "SQLite" if args.sqlite else "PostgreSQL"
    print(f"tool pages: {args.users} users (think {args.think:g} s), {args.seconds:.0f} s, "
          f"{args.workers} workers, {backend}: {total} requests ({total / args.seconds:.0f}/s), "
          f"{len(errors)} errors")
    for kind, xs in sorted(lat.items()):
        ms = np.array(xs) * 1000
        print(f"  {kind:52s} n={len(ms):5d}  p50 {np.percentile(ms, 50):6.1f}  "
              f"p95 {np.percentile(ms, 95):6.1f}  p99 {np.percentile(ms, 99):6.1f} ms")
    if spread:
        print(f"  client connections per worker: {spread}")
    for e in errors[:5]:
        print("  error:", e)
    pages = np.array([x for k, xs in lat.items() if k.startswith("GET") for x in xs]) * 1000
    p95 = float(np.percentile(pages, 95)) if len(pages) else float("nan")
    print(f"CPU per request: server {(cpu1['server'] - cpu0['server']) / max(total, 1) * 1000:.2f}"
          f" ms, PostgreSQL {(cpu1['postgres'] - cpu0['postgres']) / max(total, 1) * 1000:.2f} ms")
    print(f"all pages: p50 {np.percentile(pages, 50):.1f} ms, p95 {p95:.1f} ms, p99 "
          f"{np.percentile(pages, 99):.1f} ms (target p95 < 300 ms): "
          f"{'met' if p95 < 300 else 'NOT met'}; errors: {len(errors)} (target 0)")


if __name__ == "__main__":
    main()
