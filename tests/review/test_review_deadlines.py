"""Phases move on by themselves at their deadlines: the pure rule, the service (stage 2 released
for everyone at the feedback deadline, blocked guards reported once, reviewing closes with late
reviews missing), concurrent ticks on PostgreSQL, the CLI and the server's background loop."""

from __future__ import annotations

import gc
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
from review_helpers import service_as
from sqlalchemy import select, text

from icml25.review import models as m
from icml25.review.demo import Cast, populate_venue
from icml25.review.service import ReviewService
from icml25.review.workflow import Phase, deadline_end, due_transition

CAST = Cast()
LATER = datetime(2030, 1, 1, tzinfo=UTC)


def _set_deadline(db, settings, slug, phase, day):
    chair = service_as(db, settings, CAST.chair)
    venue = chair.venue(slug)
    chair.set_timeline(venue, {phase.value: day})
    return venue


def test_deadline_end_is_end_of_day_utc_or_the_exact_time():
    assert deadline_end("2025-03-01") == datetime(2025, 3, 2, tzinfo=UTC)
    assert deadline_end("2025-03-01T12:30") == datetime(2025, 3, 1, 12, 30, tzinfo=UTC)
    assert deadline_end("2025-03-01T12:30+02:00") == datetime(2025, 3, 1, 10, 30, tzinfo=UTC)


def test_due_transition():
    tl = {"feedback": "2025-03-15", "bidding": "2025-01-10"}
    just_before = datetime(2025, 3, 15, 23, 59, tzinfo=UTC)
    assert due_transition(Phase.FEEDBACK, tl, just_before) is None
    assert due_transition(Phase.FEEDBACK, tl, just_before + timedelta(minutes=1)) \
        is Phase.REBUTTAL
    assert due_transition(Phase.REBUTTAL, tl, LATER) is None  # no deadline: chairs decide
    assert due_transition(Phase.BIDDING, tl, LATER, bidding_enabled=False) is Phase.ASSIGNMENT
    assert due_transition(Phase.NOTIFICATION, {"notification": "2025-01-01"}, LATER) is None


def test_feedback_deadline_releases_stage2_for_everyone(db, settings):
    populate_venue(db, settings, "fd", Phase.REVIEWING)
    chair = service_as(db, settings, CAST.chair)
    chair.advance_phase(chair.venue("fd"))  # stage 1 out; nobody has rated anything
    _set_deadline(db, settings, "fd", Phase.FEEDBACK, "2026-05-01")
    author = service_as(db, settings, CAST.authors[0])
    sid = db.scalars(select(m.Submission.id).order_by(m.Submission.id)).first()

    def hidden_parts():
        return [k for r in author.submission_page(sid)["reviews"]
                for k in ("weaknesses", "score") if k in r]

    assert hidden_parts() == []
    before = datetime(2026, 5, 1, 23, 0, tzinfo=UTC)
    assert service_as(db, settings).advance_due(before) == []
    report = service_as(db, settings).advance_due(datetime(2026, 5, 2, 0, 1, tzinfo=UTC))
    assert report == [{"venue": "fd", "from": "feedback", "to": "rebuttal", "advanced": True}]
    assert chair.venue("fd").phase == Phase.REBUTTAL.value
    assert hidden_parts() and set(hidden_parts()) == {"weaknesses", "score"}
    ev = db.scalars(select(m.AuditEvent).where(m.AuditEvent.action == "phase.advance")
                    .order_by(m.AuditEvent.id.desc())).first()
    assert ev.actor_id is None and '"by": "deadline"' in ev.detail
    assert service_as(db, settings).advance_due(LATER) == []  # rebuttal has no deadline


def test_reviewing_deadline_closes_with_late_reviews_missing(db, settings):
    populate_venue(db, settings, "late", Phase.ASSIGNMENT)
    chair = service_as(db, settings, CAST.chair)
    chair.advance_phase(chair.venue("late"))  # reviewing; nobody has written a review
    _set_deadline(db, settings, "late", Phase.REVIEWING, "2026-04-01")
    with pytest.raises(Exception, match="not submitted"):  # a chair needs force
        chair.advance_phase(chair.venue("late"))
    report = service_as(db, settings).advance_due(LATER)
    assert [r["advanced"] for r in report] == [True]
    assert chair.venue("late").phase == Phase.FEEDBACK.value


def test_blocked_guard_keeps_the_phase_and_tells_the_chairs_once(db, settings):
    populate_venue(db, settings, "blk", Phase.SUBMISSION)
    chair = service_as(db, settings, CAST.chair)
    venue = chair.venue("blk")
    chair.advance_phase(venue)  # bidding
    chair.advance_phase(venue)  # assignment, nobody assigned yet
    _set_deadline(db, settings, "blk", Phase.ASSIGNMENT, "2026-04-01")
    for _ in range(2):
        report = service_as(db, settings).advance_due(LATER)
        assert len(report) == 1 and not report[0]["advanced"]
        assert "no reviewer assigned" in report[0]["reason"]
    assert chair.venue("blk").phase == Phase.ASSIGNMENT.value
    mails = db.scalars(select(m.Email).where(m.Email.subject.contains("deadline passed"))).all()
    assert [e.to_addr for e in mails] == [CAST.chair]


@pytest.mark.parametrize("backend", ["postgresql"])
def test_concurrent_ticks_advance_once(engine, settings, db):
    from icml25.review.db import make_sessionmaker

    populate_venue(db, settings, "race", Phase.REVIEWING)
    chair = service_as(db, settings, CAST.chair)
    chair.advance_phase(chair.venue("race"))
    _set_deadline(db, settings, "race", Phase.FEEDBACK, "2026-04-01")
    maker, start, reports = make_sessionmaker(engine), threading.Barrier(4), []

    def tick():
        session = maker()
        try:
            start.wait()
            reports.append(ReviewService(session, settings).advance_due(LATER))
        finally:
            session.close()

    threads = [threading.Thread(target=tick) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(len(r) for r in reports) == 1
    db.expire_all()
    moves = db.scalars(select(m.AuditEvent).where(m.AuditEvent.action == "phase.advance",
                                                  m.AuditEvent.actor_id.is_(None))).all()
    assert len(moves) == 1


def test_tick_cli(db, settings, engine):
    from typer.testing import CliRunner

    from icml25.review.cli import app

    populate_venue(db, settings, "cli", Phase.REVIEWING)
    chair = service_as(db, settings, CAST.chair)
    chair.advance_phase(chair.venue("cli"))
    _set_deadline(db, settings, "cli", Phase.FEEDBACK, "2026-04-01")
    url = settings.database_url
    gc.disable()  # what the command leaves open must be closed by it, not by a collection
    try:
        early = CliRunner().invoke(app, ["tick", "--now", "2026-04-01T10:00",
                                         "--database-url", url])
        assert early.exit_code == 0 and early.output == ""
        r = CliRunner().invoke(app, ["tick", "--now", "2026-04-02T00:00", "--database-url", url])
    finally:
        gc.enable()
    assert r.exit_code == 0, r.output
    assert '"to": "rebuttal"' in r.output and '"advanced": true' in r.output
    if engine.dialect.name == "postgresql":  # the command closed its connection when it ended
        with engine.connect() as c:
            open_tx = c.execute(text(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid() AND state LIKE 'idle in transaction%'")).scalar()
        assert open_tx == 0


def test_server_loop_advances_due_venues(db, settings, engine):
    from fastapi.testclient import TestClient

    from icml25.review.web import create_app

    populate_venue(db, settings, "loop", Phase.REVIEWING)
    chair = service_as(db, settings, CAST.chair)
    chair.advance_phase(chair.venue("loop"))
    _set_deadline(db, settings, "loop", Phase.FEEDBACK, "2020-01-01")
    settings.tick_seconds = 0.05
    with TestClient(create_app(settings, engine)):
        for _ in range(200):
            db.expire_all()
            if chair.venue("loop").phase == Phase.REBUTTAL.value:
                break
            time.sleep(0.05)
    assert chair.venue("loop").phase == Phase.REBUTTAL.value
