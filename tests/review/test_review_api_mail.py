"""More of the JSON API (edit, withdraw, members, timeline, unassign) and the SMTP outbox."""

from __future__ import annotations

from review_helpers import csrf_of, web_login
from sqlalchemy import select

from icml25.review import models as m
from icml25.review.demo import DEMO_PASSWORD, Cast, populate_venue
from icml25.review.service import ReviewService
from icml25.review.workflow import Phase

CAST = Cast()


def _token(db, settings, email):
    user = db.scalar(select(m.User).where(m.User.email == email))
    return {"Authorization": f"Bearer {ReviewService(db, settings, user).create_api_token('t')}"}


def test_api_edit_withdraw_members_timeline(client, db, settings):
    venue = populate_venue(db, settings, "api", Phase.SUBMISSION)
    author, chair = _token(db, settings, CAST.authors[0]), _token(db, settings, CAST.chair)
    r = client.post("/api/v1/venues/api/submissions", headers=author, json={
        "title": "Via the API", "abstract": "Scripted.",
        "authors": [{"name": "A One", "email": CAST.authors[0]}]})
    assert r.status_code == 201, r.text
    sid = r.json()["id"]
    assert client.patch(f"/api/v1/submissions/{sid}", headers=author,
                        json={"title": "Renamed"}).status_code == 200
    assert client.patch(f"/api/v1/submissions/{sid}", headers=chair,
                        json={"title": "Hijacked"}).status_code == 403
    bad = client.put(f"/api/v1/submissions/{sid}/pdf", headers=author, content=b"GIF89a...")
    assert bad.status_code == 400 and "not a PDF" in bad.json()["detail"]
    assert client.get(f"/api/v1/submissions/{sid}", headers=author).json()["title"] == "Renamed"
    assert client.post(f"/api/v1/submissions/{sid}/withdraw", headers=author).status_code == 200
    assert db.get(m.Submission, sid).status == "withdrawn"
    # members and timeline: chairs only, with clear errors
    base = ReviewService(db, settings)
    base.create_user("newrev@new.example", "New Reviewer", DEMO_PASSWORD)
    body = {"email": "newrev@new.example", "role": "reviewer"}
    assert client.post("/api/v1/venues/api/members", headers=author, json=body).status_code \
        == 403
    assert client.post("/api/v1/venues/api/members", headers=chair, json=body).status_code \
        == 201
    again = client.post("/api/v1/venues/api/members", headers=chair, json=body)
    assert again.status_code == 400 and "already" in again.json()["detail"]
    r = client.put("/api/v1/venues/api/timeline", headers=chair,
                   json={"reviewing": "2025-03-01", "feedback": "not a date"})
    assert r.status_code == 400 and "YYYY-MM-DD" in r.json()["detail"]
    r = client.put("/api/v1/venues/api/timeline", headers=chair,
                   json={"reviewing": "2025-03-01", "feedback": "2025-03-15"})
    assert r.json()["timeline"] == {"reviewing": "2025-03-01", "feedback": "2025-03-15"}
    # the web form sets it too, and the dashboard shows the current phase's deadline
    web_login(client, CAST.chair, DEMO_PASSWORD)
    page = client.get("/v/api/admin")
    r = client.post("/v/api/timeline", data={"csrf_token": csrf_of(page.text),
                                             "deadline_submission": "2025-01-30"})
    assert r.status_code == 200 and "Timeline saved" in r.text
    assert "deadline 2025-01-30" in client.get("/").text
    db.refresh(venue)
    assert venue.phase == "submission"


def test_api_unassign_and_phase_guard_messages(client, db, settings):
    venue = populate_venue(db, settings, "api2", Phase.ASSIGNMENT, n_papers=1)
    chair = _token(db, settings, CAST.chair)
    sub = db.scalar(select(m.Submission).where(m.Submission.venue_id == venue.id))
    uid = next(a.user_id for a in ReviewService(db, settings).bundle(sub.id).assignments
               if a.role == "reviewer")
    assert client.delete(f"/api/v1/submissions/{sub.id}/assignments/{uid}",
                         headers=chair).status_code == 200
    # skipping ahead is refused with the reason
    r = client.post("/api/v1/venues/api2/advance", headers=chair, json={})
    assert r.status_code == 200 and r.json()["phase"] == "reviewing"
    r = client.post("/api/v1/venues/api2/advance", headers=chair, json={})
    assert r.status_code == 409 and "not submitted" in r.json()["detail"]
    r = client.post("/api/v1/venues/api2/advance", headers=chair, json={"force": True})
    assert r.json()["phase"] == "feedback"


def test_outbox_is_sent_over_smtp(db, settings, monkeypatch):
    import smtplib

    sent = []

    class FakeSMTP:
        def __init__(self, host, port, timeout):
            assert (host, port) == ("mail.example", 2525)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def send_message(self, msg):
            sent.append((msg["To"], msg["Subject"], msg.get_content()))

    monkeypatch.setattr(smtplib, "SMTP", FakeSMTP)
    populate_venue(db, settings, "mail", Phase.REVIEWING, n_papers=1)
    settings.smtp_host, settings.smtp_port = "mail.example", 2525
    svc = ReviewService(db, settings)
    n = svc.send_outbox()
    assert n == len(sent) > 0
    assert any("Please review submission #1" in s[1] for s in sent)
    assert svc.send_outbox() == 0  # nothing is sent twice
    # notification bodies carry no identities
    names = [u.name for u in db.scalars(select(m.User))]
    assert not any(name in body for _, _, body in sent for name in names)


def test_oversized_requests_are_refused_before_reading(settings, engine):
    from fastapi.testclient import TestClient

    from icml25.review.web import create_app

    settings.max_request_bytes = 10_000
    c = TestClient(create_app(settings, engine))
    r = c.post("/login", content=b"x" * 20_000,
               headers={"content-type": "application/x-www-form-urlencoded"})
    assert r.status_code == 413 and "too large" in r.json()["detail"]


def test_review_drafts_are_private_to_their_writer(db, settings):
    venue = populate_venue(db, settings, "drafts", Phase.ASSIGNMENT, n_papers=1)
    base = ReviewService(db, settings)
    chair = base.as_user(db.scalar(select(m.User).where(m.User.email == CAST.chair)))
    chair.advance_phase(venue)  # reviewing
    sub = db.scalar(select(m.Submission).where(m.Submission.venue_id == venue.id))
    writer_id = next(a.user_id for a in base.bundle(sub.id).assignments if a.role == "reviewer")
    writer = base.as_user(db.get(m.User, writer_id))
    writer.save_review(sub.id, summary="DRAFT-TEXT", strengths="", questions="", weaknesses="",
                       score=None, confidence=None, submit=False)
    assert [r["summary"] for r in writer.submission_page(sub.id)["reviews"]] == ["DRAFT-TEXT"]
    for email in (CAST.chair, CAST.ac):
        page = base.as_user(db.scalar(select(m.User).where(m.User.email == email))) \
            .submission_page(sub.id)
        assert page["reviews"] == []
