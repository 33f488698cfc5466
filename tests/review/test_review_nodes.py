"""Several machines on loopback: two ``icml25 review serve`` nodes on two ports and two
``icml25 review worker`` processes against one PostgreSQL database (the job queue is a table
in it). Review writes are spread over both nodes, a bulk mail and a few hundred notifications
are queued, a venue's deadline passes while both nodes tick; then one node and one worker
are killed with SIGKILL mid-run. Afterwards: every write either node acknowledged is in the
database, every job is done (a bulk mail's e-mails exist once per recipient, every e-mail
reached the SMTP sink, a second copy only of what was in flight at the kill, under the same
``Message-ID``), and the venue advanced exactly once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from review_helpers import fast_settings
from smtp_sink import start_sink
from sqlalchemy import select

from icml25.review import models as m
from icml25.review.db import make_engine, make_sessionmaker, upgrade
from icml25.review.demo import Cast, populate_venue
from icml25.review.jobs import utcnow
from icml25.review.service import ReviewService
from icml25.review.workflow import Phase

ROOT = Path(__file__).resolve().parents[2]
FIELDS = ("summary", "strengths", "questions", "weaknesses")
BULK_SUBJECT = "Two nodes: hello {name}"
CAST = Cast()


@pytest.fixture
def sink():
    controller, s = start_sink()
    s.port = controller.port
    yield s
    controller.stop()


def _setup(url: str, tmp_path: Path, n_notifications: int) -> dict:
    """A venue in reviewing (the writes), a venue in reviewing whose deadline the nodes will
    see pass, and ``n_notifications`` queued e-mails (each with its ``mail.send`` job)."""
    upgrade(url)
    settings = fast_settings(url, tmp_path)
    engine = make_engine(url, settings)
    db = make_sessionmaker(engine)()
    base = ReviewService(db, settings)
    venue = populate_venue(db, settings, "nodes", Phase.ASSIGNMENT, n_papers=6)
    chair_user = db.scalar(select(m.User).where(m.User.email == CAST.chair))
    chair = base.as_user(chair_user)
    chair.advance_phase(venue)  # reviewing
    due = populate_venue(db, settings, "nodes-due", Phase.REVIEWING, n_papers=2)
    work = []  # (token, submission id, reviewer id)
    for email in CAST.reviewers:
        u = db.scalar(select(m.User).where(m.User.email == email))
        token = base.as_user(u).create_api_token("nodes")
        for a in db.scalars(select(m.Assignment).where(
                m.Assignment.user_id == u.id, m.Assignment.role == "reviewer",
                m.Assignment.submission_id.in_(select(m.Submission.id).where(
                    m.Submission.venue_id == venue.id)))):
            work.append((token, a.submission_id, u.id))
    for i in range(n_notifications):
        base.venues._mail(None, f"r{i}@nodes.example", f"Notification {i}", f"Body {i}.")
    db.commit()
    out = {"work": work, "chair": chair.create_api_token("nodes"), "due_id": due.id,
           "venue": venue.slug}
    db.close()
    engine.dispose()
    return out


def _worker(url: str, smtp_port: int) -> subprocess.Popen:
    env = dict(os.environ, ICML25_DATABASE_URL=url, ICML25_SMTP_HOST="127.0.0.1",
               ICML25_SMTP_PORT=str(smtp_port), ICML25_JOB_LEASE_SECONDS="3",
               ICML25_JOB_POLL_SECONDS="0.1", PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.Popen([sys.executable, "-m", "icml25", "review", "worker"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)


def _two_nodes(url: str, tmp_path: Path, sink, *, notifications: int, before_kill: int,
               after_kill: int, server_workers: int) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import review_load as rl

    plan = _setup(url, tmp_path, notifications)
    settings = fast_settings(url, tmp_path)
    engine = make_engine(url, settings)
    maker = make_sessionmaker(engine)
    env = {"ICML25_TICK_SECONDS": "0.2", "ICML25_JOB_RUNNER": "worker",
           "PYTHONPATH": os.pathsep.join(sys.path)}
    with ThreadPoolExecutor(2) as pool:  # both nodes start at once
        nodes = list(pool.map(lambda i: rl.start_server(url, tmp_path / f"node{i}",
                                                        server_workers, env=env), range(2)))
    ports = [port for _, port in nodes]
    workers = [_worker(url, sink.port) for _ in range(2)]
    dead: set[int] = set()
    acked: dict[tuple[int, int], int] = {}
    lock = threading.Lock()
    stop = threading.Event()
    errors: list[str] = []
    per_node = Counter()  # acknowledged writes per node
    try:
        with maker() as db:  # the deadline passes while both nodes tick
            due = db.get(m.Venue, plan["due_id"])
            due.timeline = json.dumps({"reviewing": (utcnow() + timedelta(seconds=1))
                                       .isoformat()})
            db.commit()

        def writer(k: int, items: list) -> None:
            version = 0
            clients = [httpx.Client(base_url=f"http://127.0.0.1:{p}/api/v1", timeout=10)
                       for p in ports]
            try:
                while not stop.is_set():
                    version += 1
                    for token, sid, uid in items:
                        node = (k + version) % 2  # spread over both nodes
                        if node in dead:
                            node = 1 - node  # what a proxy does once a node is down
                        body = {f: f"{f} version {version} " + "x" * 500 for f in FIELDS}
                        try:
                            r = clients[node].post(
                                f"/submissions/{sid}/review",
                                json=body | {"score": 1 + version % 10, "confidence": 3,
                                             "submit": True},
                                headers={"Authorization": f"Bearer {token}"})
                        except httpx.TransportError:
                            continue  # unacknowledged: the node died under it
                        if r.status_code == 200:
                            with lock:
                                acked[(sid, uid)] = max(acked.get((sid, uid), 0), version)
                                per_node[node] += 1
                        elif r.status_code != 503:
                            errors.append(f"{r.status_code} {r.text[:200]}")
            finally:
                for c in clients:
                    c.close()

        work = plan["work"]
        groups = [[w for w in work if w[0] == t] for t in sorted({w[0] for w in work})]
        threads = [threading.Thread(target=writer, args=(k, g)) for k, g in enumerate(groups)]
        for t in threads:
            t.start()
        chair = {"Authorization": f"Bearer {plan['chair']}"}
        bulk = {"to": {"role": "reviewer"}, "subject": BULK_SUBJECT,
                "body": "Dear {name}, both nodes say hello.", "dry_run": True}
        url_a = f"http://127.0.0.1:{ports[0]}/api/v1/venues/{plan['venue']}/mail"
        preview = httpx.post(url_a, json=bulk, headers=chair, timeout=30)
        assert preview.status_code == 200, preview.text
        recipients = {r["email"] for r in preview.json()["recipients"]}
        sent = httpx.post(url_a, json=bulk | {"dry_run": False}, headers=chair, timeout=30)
        assert sent.status_code == 202, sent.text
        deadline = time.monotonic() + 180

        def advanced() -> bool:
            with maker() as db:
                return db.get(m.Venue, plan["due_id"]).phase == Phase.FEEDBACK.value

        while (sum(acked.values()) < before_kill or sink.count() < notifications // 3
               or not advanced()):
            assert time.monotonic() < deadline, (sum(acked.values()), sink.count(), errors)
            assert all(t.is_alive() for t in threads)
            assert all(p.poll() is None for p in workers)
            time.sleep(0.05)
        # mid-run: node A and worker 1 die without a chance to clean up
        rl.kill_server(nodes[0][0])
        dead.add(0)
        os.kill(workers[0].pid, signal.SIGKILL)
        workers[0].wait()
        with maker() as db:
            in_flight = {json.loads(j.payload).get("message_id")
                         for j in db.scalars(select(m.Job).where(m.Job.status == "running"))}
            left = db.scalar(select(m.Job.id).where(m.Job.kind == "mail.send",
                                                    m.Job.status != "done").limit(1))
        assert left is not None, "the kill came too late to test anything"
        at_kill, killed_at = sum(acked.values()), time.monotonic()
        while sum(acked.values()) < at_kill + after_kill:  # node B serves on alone
            assert time.monotonic() < deadline, (sum(acked.values()), errors)
            time.sleep(0.05)
        stop.set()
        for t in threads:
            t.join()
        with maker() as db:  # the surviving worker finishes everything
            while db.scalar(select(m.Job.id).where(m.Job.status != "done").limit(1)) \
                    is not None:
                assert time.monotonic() < deadline + 120, Counter(
                    db.scalars(select(m.Job.status)))
                assert workers[1].poll() is None
                time.sleep(0.1)
                db.expire_all()
        drained = time.monotonic() - killed_at
        time.sleep(1.0)  # node B keeps ticking: a second advance would show now
    finally:
        stop.set()
        for server, _ in nodes:
            rl.kill_server(server)
        for p in workers:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                p.wait(30)
    assert not errors, errors[:5]
    db = maker()
    try:
        # every acknowledged write, from either node, is in the database, never half written
        assert len({sid for sid, _ in acked}) > 1
        for (sid, uid), version in acked.items():
            r = db.scalar(select(m.Review).where(m.Review.submission_id == sid,
                                                 m.Review.reviewer_id == uid))
            assert r is not None and r.submitted
            seen = {int(getattr(r, f).split()[2]) for f in FIELDS}
            assert len(seen) == 1, f"partial review: fields from versions {seen}"
            assert seen.pop() >= version, "an acknowledged write is missing"
        # every job done; the bulk mail's e-mails once per recipient
        assert Counter(db.scalars(select(m.Job.status))) == Counter(
            {"done": len(db.scalars(select(m.Job.id)).all())})
        bulk_to = Counter(db.scalars(select(m.Email.to_addr).where(
            m.Email.subject.like("Two nodes: hello %"))))
        assert set(bulk_to) == recipients and set(bulk_to.values()) == {1}
        # every e-mail delivered; a second copy only of what was in flight at the kill
        got = Counter(x["message_id"] for x in sink.messages)
        assert {e.status for e in db.scalars(select(m.Email))} == {"sent"}
        assert set(got) == set(db.scalars(select(m.Email.message_id)))
        assert {mid for mid, k in got.items() if k > 1} <= in_flight
        # the deadline advanced the venue once, though both nodes ticked
        events = [json.loads(d) for d in db.scalars(select(m.AuditEvent.detail).where(
            m.AuditEvent.venue_id == plan["due_id"], m.AuditEvent.action == "phase.advance"))]
        by_deadline = [e for e in events if e.get("by") == "deadline"]
        assert len(by_deadline) == 1, events
        assert by_deadline[0]["to"] == Phase.FEEDBACK.value
        assert db.get(m.Venue, plan["due_id"]).phase == Phase.FEEDBACK.value
        phase_mail = Counter(db.execute(select(m.Email.to_addr, m.Email.subject).where(
            m.Email.venue_id == plan["due_id"], m.Email.subject.like("%stage 1%"))).all())
        assert phase_mail and set(phase_mail.values()) == {1}
        print(f"\nacknowledged writes: node A {per_node[0]}, node B {per_node[1]}; "
              f"jobs done {len(db.scalars(select(m.Job.id)).all())}; e-mails delivered "
              f"{len(got)}, second copies {sum(k - 1 for k in got.values())} (jobs running "
              f"at the kill: {len(in_flight)}); all done {drained:.1f} s after the kill; "
              f"deadline advances {len(by_deadline)}")
    finally:
        db.close()
        engine.dispose()


def test_two_nodes_and_two_workers_survive_a_sigkill_of_each(tmp_path, sink, pg_server):
    _two_nodes(pg_server.new_database("nodes"), tmp_path, sink, notifications=200,
               before_kill=30, after_kill=20, server_workers=1)


@pytest.mark.slow
def test_two_nodes_of_two_processes_under_a_longer_load(tmp_path, sink, pg_server):
    _two_nodes(pg_server.new_database("nodes"), tmp_path, sink, notifications=1000,
               before_kill=300, after_kill=150, server_workers=2)
