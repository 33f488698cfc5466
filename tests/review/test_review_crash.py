"""Kill the server with SIGKILL in the middle of a write burst (small size, runs in CI): after a
restart no review is partially written and every acknowledged write is present."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from review_helpers import fast_settings
from sqlalchemy import select

from icml25.review import models as m
from icml25.review.db import make_engine, make_sessionmaker, upgrade
from icml25.review.demo import Cast, populate_venue
from icml25.review.service import ReviewService
from icml25.review.workflow import Phase

FIELDS = ("summary", "strengths", "questions", "weaknesses")


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'crash.sqlite3'}"
    return request.getfixturevalue("pg_server").new_database("crash")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(url: str, port: int, tmp_path: Path) -> subprocess.Popen:
    env = dict(os.environ, ICML25_DATABASE_URL=url, ICML25_UPLOAD_DIR=str(tmp_path / "up"))
    icml25 = Path(sys.executable).with_name("icml25")
    proc = subprocess.Popen([str(icml25), "review", "serve", "--port", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/api/v1/me", timeout=1)
            return proc
        except httpx.TransportError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("server did not start")


def test_sigkill_during_write_burst_loses_no_acknowledged_write(url, tmp_path):
    upgrade(url)
    engine = make_engine(url)
    db = make_sessionmaker(engine)()
    settings = fast_settings(url, tmp_path)
    venue = populate_venue(db, settings, "crash", Phase.ASSIGNMENT, n_papers=6)
    base = ReviewService(db, settings)
    cast = Cast()
    chair = base.as_user(db.scalar(select(m.User).where(m.User.email == cast.chair)))
    chair.advance_phase(venue)  # reviewing
    work = []  # (token, submission id, reviewer id)
    for email in cast.reviewers:
        u = db.scalar(select(m.User).where(m.User.email == email))
        token = base.as_user(u).create_api_token("burst")
        for a in db.scalars(select(m.Assignment).where(m.Assignment.user_id == u.id,
                                                       m.Assignment.role == "reviewer")):
            work.append((token, a.submission_id, u.id))
    db.close()
    port = _free_port()
    server = _serve(url, port, tmp_path)
    acked: dict[tuple[int, int], int] = {}
    lock = threading.Lock()
    stop = threading.Event()

    def writer(items):
        version = 0
        with httpx.Client(base_url=f"http://127.0.0.1:{port}/api/v1", timeout=5) as c:
            while not stop.is_set():
                version += 1
                for token, sid, uid in items:
                    body = {f: f"{f} version {version} " + "x" * 2000 for f in FIELDS}
                    try:
                        r = c.post(f"/submissions/{sid}/review", json=body | {
                            "score": 1 + version % 10, "confidence": 3, "submit": True},
                            headers={"Authorization": f"Bearer {token}"})
                    except httpx.TransportError:
                        return
                    if r.status_code == 200:
                        with lock:
                            acked[(sid, uid)] = max(acked.get((sid, uid), 0), version)

    groups = [[w for w in work if w[0] == t] for t in sorted({w[0] for w in work})]
    threads = [threading.Thread(target=writer, args=(g,)) for g in groups]
    for t in threads:
        t.start()
    while sum(acked.values()) < 60 and all(t.is_alive() for t in threads):
        time.sleep(0.05)
    os.kill(server.pid, signal.SIGKILL)  # mid-burst: writers are still sending
    server.wait()
    stop.set()
    for t in threads:
        t.join()
    assert sum(acked.values()) >= 60
    # restart on the same database and read everything back
    server = _serve(url, port, tmp_path)
    try:
        db = make_sessionmaker(engine)()
        for (sid, uid), version in acked.items():
            r = db.scalar(select(m.Review).where(m.Review.submission_id == sid,
                                                 m.Review.reviewer_id == uid))
            assert r is not None and r.submitted
            seen = {int(getattr(r, f).split()[2]) for f in FIELDS}
            assert len(seen) == 1, f"partial review: fields from versions {seen}"
            assert seen.pop() >= version, "an acknowledged write is missing"
            assert r.score == 1 + int(r.summary.split()[2]) % 10
        for r in db.scalars(select(m.Review)):  # no review anywhere is half written
            assert len({getattr(r, f).split()[2] for f in FIELDS}) == 1
        token, sid, _ = work[0]
        got = httpx.get(f"http://127.0.0.1:{port}/api/v1/submissions/{sid}",
                        headers={"Authorization": f"Bearer {token}"}, timeout=5)
        assert got.status_code == 200
        db.close()
    finally:
        server.kill()
        server.wait()
        engine.dispose()
