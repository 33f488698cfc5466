"""The job queue and mail through it: every e-mail is a job delivered to a real SMTP server on
loopback under a stable Message-ID; failures retry with backoff and then show in the chairs'
outbox; the admin mail log shows every e-mail in full; a worker killed with SIGKILL mid-run
loses nothing and resends at most what was in flight."""

from __future__ import annotations

import doctest
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import timedelta

import pytest
from review_helpers import fast_settings
from smtp_sink import start_sink
from sqlalchemy import select

from icml25.review import jobs as jobs_module
from icml25.review import models as m
from icml25.review import people as people_module
from icml25.review.db import make_engine, make_sessionmaker, upgrade
from icml25.review.demo import DEMO_PASSWORD, Cast, populate_venue
from icml25.review.jobs import run_due_jobs, utcnow
from icml25.review.service import ReviewService
from icml25.review.services import conflicts as conflicts_module
from icml25.review.workflow import Phase

CAST = Cast()


@pytest.fixture
def sink():
    controller, s = start_sink()
    s.port = controller.port
    yield s
    controller.stop()


def _maker(db):
    return make_sessionmaker(db.get_bind())


def _token(db, settings, email):
    user = db.scalar(select(m.User).where(m.User.email == email))
    return {"Authorization": f"Bearer {ReviewService(db, settings, user).create_api_token('t')}"}


@pytest.mark.parametrize("module", [jobs_module, people_module, conflicts_module])
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_every_mail_is_a_job_delivered_once_under_its_message_id(db, settings, sink):
    settings.smtp_host, settings.smtp_port = "127.0.0.1", sink.port
    populate_venue(db, settings, "jobs", Phase.REVIEWING, n_papers=2)
    mails = db.scalars(select(m.Email)).all()
    assert mails and all(e.status == "queued" and e.message_id for e in mails)
    kinds = Counter(db.scalars(select(m.Job.kind)))
    assert kinds["mail.send"] == len(mails)  # one job per e-mail, created with it
    assert run_due_jobs(_maker(db), settings) == len(mails)
    db.expire_all()
    got = Counter(x["message_id"] for x in sink.messages)
    assert set(got) == {e.message_id for e in db.scalars(select(m.Email))}
    assert set(got.values()) == {1}
    assert {e.status for e in db.scalars(select(m.Email))} == {"sent"}
    assert {j.status for j in db.scalars(select(m.Job))} == {"done"}
    assert run_due_jobs(_maker(db), settings) == 0 and sink.count() == len(mails)


def test_failures_retry_with_backoff_then_show_in_the_outbox(db, settings, sink):
    settings.smtp_host, settings.smtp_port = "127.0.0.1", sink.port
    settings.job_max_attempts, settings.job_backoff_seconds = 3, 30
    venue = populate_venue(db, settings, "retry", Phase.SUBMISSION, n_papers=1)
    run_due_jobs(_maker(db), settings)  # the submission receipts go out
    sink.refuse = True
    chair = ReviewService(db, settings).as_user(
        db.scalar(select(m.User).where(m.User.email == CAST.chair)))
    ReviewService(db, settings).create_user("late@r.example", "Late Reviewer", DEMO_PASSWORD)
    chair.add_member(venue, "late@r.example", "reviewer")
    job = db.scalar(select(m.Job).where(m.Job.status == "queued"))
    before = utcnow()
    assert run_due_jobs(_maker(db), settings) == 1
    db.expire_all()
    job = db.get(m.Job, job.id)
    assert job.status == "queued" and job.attempts == 1 and "451" in job.last_error
    wait = (job.run_after.replace(tzinfo=before.tzinfo) - before).total_seconds()
    assert 29 <= wait <= 40  # the first backoff
    assert run_due_jobs(_maker(db), settings) == 0  # not due yet
    for attempt in (2, 3):  # the clock moves on: each retry waits twice as long
        job.run_after = utcnow() - timedelta(seconds=1)
        db.commit()
        run_due_jobs(_maker(db), settings)
        db.expire_all()
        job = db.get(m.Job, job.id)
        assert job.attempts == attempt
    assert job.status == "failed"
    outbox = chair.admin_page(venue)["outbox"]
    failed = [e for e in outbox if e["to"] == "late@r.example"]
    assert failed[0]["status"] == "failed" and "451" in failed[0]["error"]
    # the chairs' page says so
    sink.refuse = False
    admin = ReviewService(db, settings).as_user(
        db.scalar(select(m.User).where(m.User.email == CAST.chair)))
    email_id = db.scalar(select(m.Email.id).where(m.Email.to_addr == "late@r.example"))
    mid = db.get(m.Email, email_id).message_id
    admin.retry_mail(email_id)  # the chair is this demo's site admin
    run_due_jobs(_maker(db), settings)
    assert [x["message_id"] for x in sink.messages if x["to"] == "late@r.example"] == [mid]


def test_outbox_page_and_admin_mail_log_without_smtp(client, db, settings):
    populate_venue(db, settings, "log", Phase.REVIEWING, n_papers=1)
    run_due_jobs(_maker(db), settings)  # no SMTP server: kept, unsent, readable
    db.expire_all()
    assert {e.status for e in db.scalars(select(m.Email))} == {"unsent"}
    admin = _token(db, settings, CAST.chair)
    r = client.get("/api/v1/admin/mail", headers=admin, params={"status": "unsent"})
    assert r.status_code == 200
    log = r.json()
    assert log["total"] == len(db.scalars(select(m.Email)).all())
    assert all(x["body"] and x["message_id"] for x in log["mails"])  # in full
    reviewer = _token(db, settings, CAST.reviewers[0])
    assert client.get("/api/v1/admin/mail", headers=reviewer).status_code == 403


def test_job_status_api_and_the_embedded_runner(db, settings, engine):
    from fastapi.testclient import TestClient

    from icml25.review.web import create_app

    venue = populate_venue(db, settings, "emb", Phase.SUBMISSION, n_papers=1)
    chair, author = _token(db, settings, CAST.chair), _token(db, settings, CAST.authors[0])
    csv = "email,name,role\n" + "".join(f"p{i}@inv.example,P {i},reviewer\n" for i in range(30))
    embedded = settings.model_copy(update={"job_runner": "embedded", "job_poll_seconds": 0.05})
    with TestClient(create_app(embedded, engine)) as c:
        r = c.post("/api/v1/venues/emb/invitations/csv", headers=chair, content=csv)
        assert r.status_code == 202, r.text
        job_id = r.json()["job_id"]
        assert c.get(f"/api/v1/jobs/{job_id}", headers=author).status_code == 403
        deadline = time.monotonic() + 30
        while True:
            st = c.get(f"/api/v1/jobs/{job_id}", headers=chair).json()
            assert st["status"] in ("queued", "running", "done")
            if st["status"] == "done" or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert st["status"] == "done" and st["progress"] == 1.0
        assert st["result"] == {"created": 30, "rows": 30}
        assert c.get("/api/v1/jobs/999999", headers=chair).status_code == 404
    n = db.scalar(select(m.Invitation.id).where(m.Invitation.venue_id == venue.id).limit(1))
    assert n is not None


def _fill(url: str, n: int, settings) -> None:
    """A venue and ``n`` queued notifications (each an e-mail and its job)."""
    upgrade(url)
    engine = make_engine(url, settings)
    db = make_sessionmaker(engine)()
    svc = ReviewService(db, settings)
    for i in range(n):
        svc.venues._mail(None, f"r{i}@kill.example", f"Notification {i}", f"Body {i}.")
    db.commit()
    db.close()
    engine.dispose()


def _worker(url: str, port: int) -> subprocess.Popen:
    env = dict(os.environ, ICML25_DATABASE_URL=url, ICML25_SMTP_HOST="127.0.0.1",
               ICML25_SMTP_PORT=str(port), ICML25_JOB_LEASE_SECONDS="1",
               ICML25_JOB_POLL_SECONDS="0.1", PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.Popen([sys.executable, "-m", "icml25", "review", "worker"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _kill_test(url: str, tmp_path, sink, n: int, workers: int = 1) -> None:
    """``workers`` workers send ``n`` notifications; one is killed with SIGKILL a third of
    the way, then started again."""
    settings = fast_settings(url, tmp_path)
    _fill(url, n, settings)
    running = [_worker(url, sink.port) for _ in range(workers)]
    w = running[0]
    deadline = time.monotonic() + 120
    while sink.count() < n // 3:
        assert time.monotonic() < deadline and w.poll() is None, "the worker did not send"
        time.sleep(0.005)
    w.send_signal(signal.SIGKILL)
    w.wait()
    engine = make_engine(url, settings)
    db = make_sessionmaker(engine)()
    in_flight = {json.loads(j.payload)["message_id"]
                 for j in db.scalars(select(m.Job).where(m.Job.status == "running"))}
    assert sink.count() < n, "the kill came too late to test anything"
    running[0] = _worker(url, sink.port)
    try:
        while sink.count() < n or db.scalar(select(m.Job.id).where(
                m.Job.status != "done").limit(1)) is not None:
            assert time.monotonic() < deadline + 120
            assert all(p.poll() is None for p in running)
            time.sleep(0.05)
            db.expire_all()
    finally:
        for p in running:
            p.send_signal(signal.SIGTERM)
        for p in running:
            p.wait(30)
    got = Counter(x["message_id"] for x in sink.messages)
    expected = set(db.scalars(select(m.Email.message_id)))
    assert set(got) == expected  # every one delivered
    twice = {mid for mid, k in got.items() if k > 1}
    # only what a worker held at the kill came twice (the survivor's own claims are in
    # in_flight too, so this bounds the duplicates from above)
    assert twice <= in_flight
    assert len(twice) <= 20  # at most the killed worker's claimed batch
    assert {e.status for e in db.scalars(select(m.Email))} == {"sent"}
    db.close()
    engine.dispose()


def test_sigkill_the_worker_mid_run_loses_nothing(tmp_path, sink):
    _kill_test(f"sqlite:///{tmp_path / 'kill.sqlite3'}", tmp_path, sink, 120)


@pytest.mark.slow
def test_sigkill_one_of_two_workers_on_postgresql(tmp_path, sink, pg_server):
    # two workers claim with SELECT ... FOR UPDATE SKIP LOCKED; one dies mid-run
    _kill_test(pg_server.new_database("kill"), tmp_path, sink, 120, workers=2)


@pytest.mark.slow
def test_sigkill_the_worker_while_it_sends_1000_notifications(tmp_path, sink):
    _kill_test(f"sqlite:///{tmp_path / 'kill.sqlite3'}", tmp_path, sink, 1000)
