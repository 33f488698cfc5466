"""Bounded load test of the review platform: an asyncio client on loopback against
``icml25 review serve --workers 2`` sharing one PostgreSQL database.

50 concurrent users for 60 s mix page views (venue and submission JSON views, 60 %), review
submissions (25 %) and author feedback updates (15 %). Prints p50/p95/p99 latency per kind,
throughput and the error count. Target (issue 10): p95 < 300 ms for page views, zero errors.

``--think S``: each user waits uniformly 0.5 S to 1.5 S between requests, like a person
reading a page (locust's ``between``); the default 0 is a saturation test, in which every user
fires its next request the moment the last one returns, so latency measures the queue.

    .venv/bin/python benchmarks/review_load.py            # local PostgreSQL (ICML25_TEST_PG_URL)
    .venv/bin/python benchmarks/review_load.py --users 10 --seconds 10 --workers 2
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx
import numpy as np
from sqlalchemy import select, text

from icml25.review import models as m
from icml25.review.db import Settings, make_engine, make_sessionmaker, upgrade
from icml25.review.demo import Cast, populate_venue
from icml25.review.service import ReviewService
from icml25.review.workflow import Phase

PG_ADMIN = os.environ.get("ICML25_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def setup(url: str, tmp: Path, n_papers: int) -> dict:
    """Two venues: one in reviewing (review writes), one in feedback (rating updates)."""
    upgrade(url)
    engine = make_engine(url)
    db = make_sessionmaker(engine)()
    settings = Settings(database_url=url, upload_dir=tmp / "up", argon2_time_cost=1,
                        argon2_memory_kib=8192)
    cast = Cast()
    rv = populate_venue(db, settings, "load-rev", Phase.ASSIGNMENT, n_papers=n_papers)
    base = ReviewService(db, settings)
    users = {e: db.scalar(select(m.User).where(m.User.email == e))
             for e in (cast.chair, *cast.reviewers, *cast.authors)}
    base.as_user(users[cast.chair]).advance_phase(rv)  # reviewing
    fv = populate_venue(db, settings, "load-fb", Phase.REVIEWING, n_papers=n_papers)
    base.as_user(users[cast.chair]).advance_phase(fv)  # feedback
    tokens = {e: base.as_user(u).create_api_token("load") for e, u in users.items()}
    rv_ids = [b.submission.id for b in base.bundles(rv)]
    writes = [(tokens[db.get(m.User, a.user_id).email], a.submission_id)
              for a in db.scalars(select(m.Assignment).where(
                  m.Assignment.role == "reviewer", m.Assignment.submission_id.in_(rv_ids)))]
    feedback = []
    for b in base.bundles(fv):
        author = db.get(m.User, b.submission.submitter_id).email
        for r in b.reviews[:-1]:  # never the last one: stage 2 stays closed, updates allowed
            feedback.append((tokens[author], r.id))
    views = [(tokens[e], s.id) for e in cast.reviewers for b in base.bundles(rv)
             for s in [b.submission] if b.assignment_of(users[e].id)]
    db.close()
    engine.dispose()
    return {"writes": writes, "feedback": feedback, "views": views,
            "chair": tokens[cast.chair]}


async def user(client: httpx.AsyncClient, plan: dict, until: float, rng: random.Random,
               lat: dict[str, list[float]], errors: list[str], think: float = 0.0) -> None:
    n = 0
    if think:
        await asyncio.sleep(rng.uniform(0, think))  # users arrive spread out, not in a burst
    while time.perf_counter() < until:
        n += 1
        u = rng.random()
        t0 = time.perf_counter()
        try:
            if u < 0.6:
                kind = "view"
                token, sid = rng.choice(plan["views"])
                path = f"/submissions/{sid}" if rng.random() < 0.5 else "/venues/load-rev"
                r = await client.get(path, headers={"Authorization": f"Bearer {token}"})
            elif u < 0.85:
                kind = "review"
                token, sid = rng.choice(plan["writes"])
                r = await client.post(f"/submissions/{sid}/review", headers={
                    "Authorization": f"Bearer {token}"}, json={
                    "summary": f"load {n}", "strengths": "s", "questions": "q",
                    "weaknesses": "w", "score": 1 + n % 10, "confidence": 3, "submit": True})
            else:
                kind = "feedback"
                token, rid = rng.choice(plan["feedback"])
                r = await client.post(f"/reviews/{rid}/feedback", headers={
                    "Authorization": f"Bearer {token}"}, json={
                    "comprehension": 1 + n % 5, "constructiveness": 1 + n % 5})
            if r.status_code != 200:
                errors.append(f"{kind} {r.status_code} {r.text[:120]}")
        except httpx.HTTPError as exc:
            kind = "error"
            errors.append(repr(exc))
        lat.setdefault(kind, []).append(time.perf_counter() - t0)
        if think:
            await asyncio.sleep(rng.uniform(0.5 * think, 1.5 * think))


async def drive(port: int, plan: dict, users: int, seconds: float,
                think: float = 0.0) -> tuple[dict, list]:
    lat: dict[str, list[float]] = {}
    errors: list[str] = []
    limits = httpx.Limits(max_connections=users, max_keepalive_connections=users)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}/api/v1", timeout=30,
                                 limits=limits) as client:
        until = time.perf_counter() + seconds
        await asyncio.gather(*(user(client, plan, until, random.Random(i), lat, errors, think)
                               for i in range(users)))
    return lat, errors


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--users", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--papers", type=int, default=8, help="per venue (4 reviewers, load 6)")
    ap.add_argument("--think", type=float, default=0.0,
                    help="mean seconds a user waits between requests (0: saturation test)")
    ap.add_argument("--server-log", default=os.devnull, help="server stderr goes here")
    args = ap.parse_args()
    name = f"icml25_review_load_{uuid.uuid4().hex[:8]}"
    admin = make_engine(PG_ADMIN).execution_options(isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f'CREATE DATABASE "{name}"'))
    url = re.sub(r"/[^/]*$", f"/{name}", PG_ADMIN)
    server = None
    try:
        with tempfile.TemporaryDirectory() as tmp:
            plan = setup(url, Path(tmp), args.papers)
            port = _port()
            env = dict(os.environ, ICML25_DATABASE_URL=url, ICML25_UPLOAD_DIR=tmp)
            icml25 = Path(sys.executable).with_name("icml25")
            server = subprocess.Popen([str(icml25), "review", "serve", "--port", str(port),
                                       "--workers", str(args.workers)], env=env,
                                      stdout=subprocess.DEVNULL, start_new_session=True,
                                      stderr=open(args.server_log, "wb"))  # noqa: SIM115
            for _ in range(300):
                try:
                    httpx.get(f"http://127.0.0.1:{port}/api/v1/me", timeout=1)
                    break
                except httpx.TransportError:
                    time.sleep(0.2)
            time.sleep(2)  # let every worker finish starting
            lat, errors = asyncio.run(drive(port, plan, args.users, args.seconds, args.think))
    finally:
        if server is not None:  # the whole group: uvicorn's workers outlive a killed parent
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        with admin.connect() as c:
            c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
    total = sum(len(v) for v in lat.values())
    print(f"{args.users} users (think {args.think:g} s), {args.seconds:.0f} s, "
          f"{args.workers} workers, PostgreSQL: "
          f"{total} requests ({total / args.seconds:.0f}/s), {len(errors)} errors")
    for kind, xs in sorted(lat.items()):
        ms = np.array(xs) * 1000
        print(f"  {kind:9s} n={len(ms):6d}  p50 {np.percentile(ms, 50):7.1f} ms  "
              f"p95 {np.percentile(ms, 95):7.1f} ms  p99 {np.percentile(ms, 99):7.1f} ms")
    for e in errors[:5]:
        print("  error:", e)
    view_p95 = np.percentile(np.array(lat.get("view", [0])) * 1000, 95)
    print(f"page-view p95 {view_p95:.1f} ms (target < 300 ms): "
          f"{'met' if view_p95 < 300 else 'NOT met'}; errors: {len(errors)} (target 0)")


if __name__ == "__main__":
    main()
