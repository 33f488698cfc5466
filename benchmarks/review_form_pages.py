"""What an added review form costs a page: the submission page for a venue
on the built-in form and for the same venue with six added fields (every kind, both stages,
all audiences, every answer filled), measured side by side in one process, alternating, median
of ``--rounds`` (SQLite, the view cache on as in production); and the chairs' form page.

    .venv/bin/python benchmarks/review_form_pages.py
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from fastapi.testclient import TestClient
from sqlalchemy import select

sys.path.insert(0, str(Path(__file__).parents[1] / "tests" / "review"))
from review_helpers import fast_settings, service_as, web_login  # noqa: E402
from test_review_forms import CORE, FIELDS, _answers  # noqa: E402

from icml25.review import models as m  # noqa: E402
from icml25.review.db import make_engine, make_sessionmaker, upgrade  # noqa: E402
from icml25.review.demo import DEMO_PASSWORD, Cast, populate_venue  # noqa: E402
from icml25.review.web import create_app  # noqa: E402
from icml25.review.workflow import Phase, Role  # noqa: E402

CAST = Cast()


def _venue(db, settings, slug: str, fields: list[dict]) -> int:  # noqa: ANN001
    venue = populate_venue(db, settings, slug, Phase.ASSIGNMENT, n_papers=1)
    chair = service_as(db, settings, CAST.chair)
    if fields:
        chair.save_review_form(venue, fields)
    chair.advance_phase(venue)  # reviewing
    sub = db.scalar(select(m.Submission).where(m.Submission.venue_id == venue.id))
    for a in chair.bundle(sub.id).assignments:
        if a.role == Role.REVIEWER:
            service_as(db, settings, db.get(m.User, a.user_id).email).save_review(
                sub.id, **CORE, answers=_answers(slug) if fields else None)
    chair.advance_phase(venue)  # feedback
    author = service_as(db, settings, db.get(m.User, sub.submitter_id).email)
    for r in chair.bundle(sub.id).submitted_reviews():
        author.give_feedback(r.id, comprehension=4, constructiveness=4)  # stage 2 released
    return sub.id


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=200)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    settings = fast_settings(f"sqlite:///{tmp / 'forms.sqlite3'}", tmp)
    upgrade(settings.database_url)
    engine = make_engine(settings.database_url)
    db = make_sessionmaker(engine)()
    subs = {"built-in form": _venue(db, settings, "plain", []),
            "6 added fields": _venue(db, settings, "custom", FIELDS)}
    clients = {}
    for who in (CAST.chair, CAST.authors[0]):
        clients[who] = TestClient(create_app(settings, engine))
        web_login(clients[who], who, DEMO_PASSWORD)
    times: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.rounds):
        for who, client in clients.items():
            for form, sid in subs.items():
                t = time.perf_counter()
                r = client.get(f"/s/{sid}")
                times.setdefault((who, form), []).append(time.perf_counter() - t)
                assert r.status_code == 200
    form_page = []
    for _ in range(args.rounds):
        t = time.perf_counter()
        assert clients[CAST.chair].get("/v/custom/review-form").status_code == 200
        form_page.append(time.perf_counter() - t)
    print(f"GET /v/{{slug}}/review-form (chair, 6 added fields): median "
          f"{statistics.median(form_page) * 1e3:.2f} ms, max {max(form_page) * 1e3:.2f} ms")
    print(f"GET /s/{{sid}} (3 reviews, stage 2 released), median of {args.rounds} rounds:")
    for who in clients:
        base = statistics.median(times[(who, "built-in form")])
        added = statistics.median(times[(who, "6 added fields")])
        print(f"  {who:24s} built-in {base * 1e3:6.2f} ms   6 added fields "
              f"{added * 1e3:6.2f} ms   ratio {added / base:.2f}")


if __name__ == "__main__":
    main()
