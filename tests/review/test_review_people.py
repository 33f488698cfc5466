"""Running a venue's people: invitations (one by one and by CSV, answered through single-use
links delivered by a real SMTP server on loopback), password reset, further addresses,
affiliation history, publication lists, conflicts found and explained, and bulk mail."""

from __future__ import annotations

import re
from collections import Counter
from datetime import timedelta

import pytest
from review_helpers import web_login
from smtp_sink import start_sink
from sqlalchemy import select

from icml25.review import models as m
from icml25.review.db import make_sessionmaker
from icml25.review.demo import DEMO_PASSWORD, Cast, populate_venue
from icml25.review.errors import ServiceError
from icml25.review.jobs import run_due_jobs, utcnow
from icml25.review.people import this_year
from icml25.review.service import ReviewService
from icml25.review.workflow import Phase

CAST = Cast()
PUBLIC = "http://review.test"


@pytest.fixture
def sink(settings):
    controller, s = start_sink()
    settings.smtp_host, settings.smtp_port = "127.0.0.1", controller.port
    settings.public_url = PUBLIC
    yield s
    controller.stop()


def _user(db, email):
    return db.scalar(select(m.User).where(m.User.email == email))


def _token(db, settings, email):
    return {"Authorization": "Bearer "
            + ReviewService(db, settings, _user(db, email)).create_api_token("t")}


def _run(db, settings):
    return run_due_jobs(make_sessionmaker(db.get_bind()), settings)


def _svc(db, settings, email=None):
    base = ReviewService(db, settings)
    return base.as_user(_user(db, email)) if email else base


INVITE = re.escape(PUBLIC) + r"/invitations/[A-Za-z0-9_\-]+"
RESET = re.escape(PUBLIC) + r"/reset-password\?token=[A-Za-z0-9_\-]+"


def _invite_by_csv_and_accept(client, db, settings, sink, n: int, accept: int, decline: int):
    populate_venue(db, settings, "inv", Phase.SUBMISSION, n_papers=1)
    _run(db, settings)
    before = sink.count()
    chair = _token(db, settings, CAST.chair)
    rows = [f"inv{i}@uni{i % 7}.example,Invitee {i},{'ac' if i % 10 == 0 else 'reviewer'}"
            f",Uni {i % 7},{i % 5 if i % 3 else ''}" for i in range(n)]
    r = client.post("/api/v1/venues/inv/invitations/csv", headers=chair,
                    content="email,name,role,affiliation,quota\n" + "\n".join(rows))
    assert r.status_code == 202, r.text
    assert r.json()["rows"] == n
    _run(db, settings)
    mails = sink.messages[before:]
    assert len(mails) == n and len({x["to"] for x in mails}) == n  # each once
    assert len({x["message_id"] for x in mails}) == n
    links = sink.links(INVITE)
    assert len(links) == n
    for i in range(accept):
        token = links[f"inv{i}@uni{i % 7}.example"].rsplit("/", 1)[1]
        r = client.post(f"/api/v1/invitations/{token}/accept",
                        json={"password": f"pw-of-invitee-{i}"})
        assert r.status_code == 200, r.text
        assert r.json()["account_created"] is True
    for i in range(accept, accept + decline):
        token = links[f"inv{i}@uni{i % 7}.example"].rsplit("/", 1)[1]
        assert client.post(f"/api/v1/invitations/{token}/decline",
                           json={"reason": "too busy"}).status_code == 200
    # every link works once
    token = links["inv0@uni0.example"].rsplit("/", 1)[1]
    assert client.post(f"/api/v1/invitations/{token}/accept",
                       json={"password": "another-pw-123"}).status_code == 400
    token = links[f"inv{accept}@uni{accept % 7}.example"].rsplit("/", 1)[1]
    assert client.post(f"/api/v1/invitations/{token}/accept",
                       json={"password": "another-pw-123"}).status_code == 400
    listed = client.get("/api/v1/venues/inv/invitations", headers=chair).json()
    assert Counter(x["status"] for x in listed) == {"accepted": accept, "declined": decline,
                                                    "pending": n - accept - decline}
    assert {"email", "role", "status"} <= set(listed[0])
    venue = db.scalar(select(m.Venue).where(m.Venue.slug == "inv"))
    members = {x["email"] for x in _svc(db, settings, CAST.chair).members(venue)}
    assert {f"inv{i}@uni{i % 7}.example" for i in range(accept)} <= members
    # the accounts were created verified (the link proved the address) and log in
    web_login(client, "inv7@uni0.example", "pw-of-invitee-7")
    # remind all: the pending get one more mail each, with a fresh link
    seen = len(sink.messages)
    r = client.post("/api/v1/venues/inv/invitations/remind", headers=chair)
    assert r.json() == {"reminded": n - accept - decline}
    _run(db, settings)
    assert Counter(x["to"] for x in sink.messages[seen:]) == {
        f"inv{i}@uni{i % 7}.example": 1 for i in range(accept + decline, n)}
    # the reminded links replace the first ones
    old = links[f"inv{n - 1}@uni{(n - 1) % 7}.example"].rsplit("/", 1)[1]
    assert client.post(f"/api/v1/invitations/{old}/decline").status_code == 404


def test_invited_by_csv_accept_through_their_mailed_links(client, db, settings, sink):
    _invite_by_csv_and_accept(client, db, settings, sink, 40, 30, 4)


@pytest.mark.slow
def test_200_invited_by_csv_150_accept_through_their_mailed_links(client, db, settings, sink):
    _invite_by_csv_and_accept(client, db, settings, sink, 200, 150, 10)


def test_csv_errors_name_their_lines_and_apply_nothing(client, db, settings):
    populate_venue(db, settings, "csv", Phase.SUBMISSION, n_papers=0)
    chair = _token(db, settings, CAST.chair)
    bad = ("email,name,role,affiliation,quota\n"
           "ok@x.example,Ok,reviewer,,\n"
           "not-an-address,Bad,reviewer,,\n"
           "ok2@x.example,Ok2,king,,\n"
           "ok3@x.example,Ok3,ac,,99\n"
           "ok@x.example,Again,reviewer,,\n"
           f"{CAST.reviewers[0]},Member,reviewer,,\n")
    r = client.post("/api/v1/venues/csv/invitations/csv", headers=chair, content=bad)
    assert r.status_code == 400
    detail = r.json()["detail"]
    for line in ("line 3: invalid e-mail", "line 4: role must be", "line 5: quota must be",
                 "line 6: ok@x.example is invited as reviewer already on line 2"):
        assert line in detail, detail
    assert db.scalar(select(m.Invitation.id)) is None
    assert db.scalar(select(m.Job.id).where(m.Job.kind == "invitations.import")) is None
    # a row that is fine on its own but names a member: refused with its line, still nothing
    r = client.post("/api/v1/venues/csv/invitations/csv", headers=chair,
                    content=f"ok@x.example,Ok,reviewer\n{CAST.reviewers[0]},Member,reviewer\n")
    assert r.status_code == 400 and "line 2:" in r.json()["detail"]
    assert db.scalar(select(m.Invitation.id)) is None
    author = _token(db, settings, CAST.authors[0])
    assert client.post("/api/v1/venues/csv/invitations/csv", headers=author,
                       content="a@b.example,A,reviewer\n").status_code == 403


def test_invitation_states_resend_revoke_quota_and_existing_accounts(client, db, settings,
                                                                     sink):
    venue = populate_venue(db, settings, "st", Phase.SUBMISSION, n_papers=0)
    chair = _token(db, settings, CAST.chair)
    _svc(db, settings).create_user("known@old.example", "Known Person", DEMO_PASSWORD)
    body = {"invitations": [
        {"email": "known@old.example", "name": "Known", "role": "ac", "quota": 3},
        {"email": "new@new.example", "name": "New", "role": "reviewer"},
        {"email": "gone@new.example", "name": "Gone", "role": "sac"}]}
    r = client.post("/api/v1/venues/st/invitations", headers=chair, json=body)
    assert r.status_code == 201 and [x["status"] for x in r.json()] == ["pending"] * 3
    too_much = {"invitations": [{"email": "q@q.example", "name": "Q", "role": "reviewer",
                                 "quota": venue.max_load + 1}]}
    r = client.post("/api/v1/venues/st/invitations", headers=chair, json=too_much)
    assert r.status_code == 400 and "invitation 1: quota" in r.json()["detail"]
    _run(db, settings)
    links = sink.links(INVITE)
    ids = {x["email"]: x["id"] for x in
           client.get("/api/v1/venues/st/invitations", headers=chair).json()}
    # revoke: the link stops working
    assert client.delete(f"/api/v1/venues/st/invitations/{ids['gone@new.example']}",
                         headers=chair).status_code == 200
    gone = links["gone@new.example"].rsplit("/", 1)[1]
    assert client.post(f"/api/v1/invitations/{gone}/decline").status_code == 404
    # resend: a fresh link, the old one is dead
    old = links["new@new.example"].rsplit("/", 1)[1]
    client.post(f"/api/v1/venues/st/invitations/{ids['new@new.example']}/resend",
                headers=chair)
    _run(db, settings)
    fresh = sink.links(INVITE)["new@new.example"].rsplit("/", 1)[1]
    assert fresh != old
    assert client.post(f"/api/v1/invitations/{old}/accept",
                       json={"password": "pw-12345678"}).status_code == 404
    info = client.get(f"/api/v1/invitations/{fresh}").json()
    assert info["has_account"] is False and info["role"] == "reviewer"
    r = client.post(f"/api/v1/invitations/{fresh}/accept", json={"password": "short"})
    assert r.status_code == 400  # nothing accepted with a bad password
    r = client.post(f"/api/v1/invitations/{fresh}/accept",
                    json={"password": "pw-12345678", "quota": venue.max_load + 1})
    assert r.status_code == 400
    r = client.post(f"/api/v1/invitations/{fresh}/accept",
                    json={"password": "pw-12345678", "quota": 2})
    assert r.status_code == 200
    # an existing account: the link needs no password and joins that account
    known = links["known@old.example"].rsplit("/", 1)[1]
    r = client.post(f"/api/v1/invitations/{known}/accept")
    assert r.status_code == 200 and r.json()["account_created"] is False
    ms = db.scalar(select(m.Membership).where(
        m.Membership.user_id == _user(db, "known@old.example").id))
    assert ms.role == "ac" and ms.quota == 3
    # a member declares their own quota, at most the venue's maximum
    member = _token(db, settings, "new@new.example")
    assert client.put("/api/v1/venues/st/my-quota", headers=member,
                      json={"quota": venue.max_load + 1}).status_code == 400
    assert client.put("/api/v1/venues/st/my-quota", headers=member,
                      json={"quota": 1}).json() == {"quota": 1}
    # expiry
    inv = db.scalar(select(m.Invitation).where(m.Invitation.status == "pending"))
    assert inv is None  # all answered or revoked
    client.post("/api/v1/venues/st/invitations", headers=chair, json={"invitations": [
        {"email": "late@new.example", "name": "Late", "role": "reviewer"}]})
    inv = db.scalar(select(m.Invitation).where(m.Invitation.email == "late@new.example"))
    inv.expires_at = utcnow() - timedelta(minutes=1)
    db.commit()
    rows = client.get("/api/v1/venues/st/invitations", headers=chair).json()
    assert {x["email"]: x["status"] for x in rows}["late@new.example"] == "expired"


def test_password_reset_is_single_use_throttled_and_ends_sessions(client, db, settings, sink):
    populate_venue(db, settings, "pw", Phase.SUBMISSION, n_papers=0)
    email = CAST.reviewers[0]
    web_login(client, email, DEMO_PASSWORD)
    assert client.get("/tokens", follow_redirects=False).status_code == 200
    known = client.post("/api/v1/password-reset", json={"email": email})
    unknown = client.post("/api/v1/password-reset", json={"email": "nobody@none.example"})
    assert known.status_code == unknown.status_code == 202
    assert known.json() == unknown.json()  # no account enumeration
    _run(db, settings)
    links = sink.links(RESET)
    assert set(links) == {email}
    token = links[email].split("token=", 1)[1]
    r = client.post("/api/v1/password-reset/confirm",
                    json={"token": token, "password": "a-brand-new-pw"})
    assert r.status_code == 200
    # every session ended: the browser's login is gone
    assert client.get("/tokens", follow_redirects=False).status_code in (303, 401, 403)
    again = client.post("/api/v1/password-reset/confirm",
                        json={"token": token, "password": "yet-another-pw"})
    assert again.status_code == 400  # single use
    web_login(client, email, "a-brand-new-pw")
    # an expired link is refused
    client.post("/api/v1/password-reset", json={"email": email})
    _run(db, settings)
    row = db.scalars(select(m.EmailToken).where(m.EmailToken.purpose == "reset")
                     .order_by(m.EmailToken.id.desc())).first()
    row.expires_at = utcnow() - timedelta(seconds=1)
    db.commit()
    late = sink.links(RESET)[email].split("token=", 1)[1]
    assert client.post("/api/v1/password-reset/confirm",
                       json={"token": late, "password": "late-pw-123"}).status_code == 400
    # throttled: beyond the hourly limit no further mail goes out, the answer is the same
    n = sink.count()
    for _ in range(settings.reset_max_per_hour + 2):
        r = client.post("/api/v1/password-reset", json={"email": email})
        assert r.status_code == 202 and r.json() == known.json()
    _run(db, settings)
    assert sink.count() - n == settings.reset_max_per_hour - 2  # two were used above


def test_further_addresses_verify_and_log_in(client, db, settings, sink):
    populate_venue(db, settings, "em", Phase.SUBMISSION, n_papers=0)
    email = CAST.reviewers[1]
    me = _token(db, settings, email)
    r = client.post("/api/v1/me/emails", headers=me, json={"email": "second@home.example"})
    assert r.status_code == 201
    # another account's address: the same answer as a free one (no account enumeration), the
    # address stays with its owner, who is told of the attempt
    taken = client.post("/api/v1/me/emails", headers=me, json={"email": CAST.chair})
    assert taken.status_code == 201
    assert taken.json() == {"email": CAST.chair, "primary": False, "verified": False}
    assert client.post("/api/v1/me/emails", headers=me,
                       json={"email": email}).status_code == 400  # one's own: said plainly
    r = client.post("/login", data={"email": "second@home.example",
                                    "password": DEMO_PASSWORD})
    _run(db, settings)
    link = sink.links(re.escape(PUBLIC) + r"/verify-email\?token=[A-Za-z0-9_\-]+")
    token = link["second@home.example"].split("token=", 1)[1]
    assert client.get(f"/verify-email?token={token}").status_code == 200
    rows = client.get("/api/v1/me/emails", headers=me).json()
    assert rows[1] == {"email": "second@home.example", "primary": False, "verified": True}
    assert CAST.chair not in {r["email"] for r in rows}
    assert any(msg["to"] == CAST.chair and "tried to add this address" in msg["subject"]
               for msg in sink.messages)
    web_login(client, "second@home.example", DEMO_PASSWORD)  # log in with any
    assert client.put("/api/v1/me/emails/primary", headers=me,
                      json={"email": "second@home.example"}).status_code == 200
    assert client.get("/api/v1/me", headers=me).json()["email"] == "second@home.example"


BIB = ("@inproceedings{p1, title={Learning to Review}, author={Reviewer, Two and Ada Lovelace},"
       f"\n  year={this_year() - 1}, abstract={{Graphs of reviews and their neural ranking.}}}}"
       "\n@article{p2, title={Ancient Work}, author={Two Reviewer and Old Friend}, year=1990}\n")


def test_conflicts_found_explained_overridden_and_incremental(client, db, settings):
    venue = populate_venue(db, settings, "cf", Phase.SUBMISSION, n_papers=0)
    base = _svc(db, settings)
    chair = _svc(db, settings, CAST.chair)
    r2 = _svc(db, settings, CAST.reviewers[1])
    r2.db.get(m.User, r2.actor.id).name = "Two Reviewer"
    db.commit()
    r3 = _svc(db, settings, CAST.reviewers[2])
    out = r2.upload_publications(BIB)
    assert out == {"publications": 2, "coauthors": 2}
    r3.add_affiliation("Uni B", "uni-b.example", 2015, this_year() - 2)  # within 3 years
    r4 = _svc(db, settings, CAST.reviewers[3])
    r4.add_affiliation("Old Lab", "old-lab.example", 2000, this_year() - 10)  # too long ago
    # the venue's own submissions: reviewer1 co-authors a paper with author1
    base.create_user("friend@old-lab.example", "Old Friend", DEMO_PASSWORD)
    author = _svc(db, settings, CAST.authors[1])
    sub = author.submit(venue, title="Reviews as graphs", abstract="Neural ranking of reviews.",
                        authors=[{"name": "Author Two", "email": CAST.authors[1]},
                                 {"name": "Ada Lovelace", "email": "ada@engine.example"},
                                 {"name": "Old Friend", "email": "friend@old-lab.example"}])
    other = _svc(db, settings, CAST.reviewers[0]).submit(
        venue, title="Other", abstract="Other.",
        authors=[{"name": "R One", "email": CAST.reviewers[0]},
                 {"name": "Author Two", "email": CAST.authors[1]}])
    reasons = {c["email"]: c["reason"] for c in chair.venue_conflicts(venue, sub.id)}
    assert reasons[CAST.reviewers[1]] == (
        f'co-authored "Learning to Review" ({this_year() - 1})')  # Old Friend: 1990, too old
    assert reasons[CAST.reviewers[2]] == f"same institution: uni-b.example until " \
                                         f"{this_year() - 2}"
    assert CAST.reviewers[3] not in reasons  # an affiliation of 10 years ago
    assert reasons[CAST.reviewers[0]] == f"co-author of submission #{other.number}"
    # the API: chairs only, rows with user_id and reason
    r = client.get(f"/api/v1/venues/cf/conflicts?submission={sub.id}",
                   headers=_token(db, settings, CAST.chair))
    assert r.status_code == 200
    assert {"user_id", "reason"} <= set(r.json()[0])
    assert client.get(f"/api/v1/venues/cf/conflicts?submission={sub.id}",
                      headers=_token(db, settings, CAST.reviewers[3])).status_code == 403
    # a reviewer declares one; a chair lifts another, with a reason in the audit log
    r4.declare_conflict(sub.id, "my former student")
    chair.override_conflict(sub.id, _user(db, CAST.reviewers[2]).id, False,
                            "left uni-b long before the paper")
    reasons = {c["email"]: c["reason"] for c in chair.venue_conflicts(venue, sub.id)}
    assert reasons[CAST.reviewers[3]] == "declared by the member: my former student"
    assert CAST.reviewers[2] not in reasons
    audit = db.scalar(select(m.AuditEvent).where(m.AuditEvent.action == "conflict.override"))
    assert "left uni-b" in audit.detail
    # adding a member touches only their conflicts: every other row stays as it was
    kept = {(c.submission_id, c.user_id): c.id for c in db.scalars(select(m.Conflict))}
    base.create_user("newcomer@uni-b.example", "Newcomer", DEMO_PASSWORD)
    chair.add_member(venue, "newcomer@uni-b.example", "reviewer")
    after = {(c.submission_id, c.user_id): c.id for c in db.scalars(select(m.Conflict))}
    newcomer = _user(db, "newcomer@uni-b.example").id
    assert {k: v for k, v in after.items() if k[1] != newcomer} == kept
    assert (sub.id, newcomer) in after
    # the venue-wide recompute (a job) finds the same
    job_id = chair.start_conflict_recompute(venue)
    _run(db, settings)
    db.expire_all()
    assert db.get(m.Job, job_id).status == "done"
    assert {k for k in (c for c in {(c.submission_id, c.user_id) for c in
                                    db.scalars(select(m.Conflict))})} == set(after)
    # a conflicted reviewer does not see the paper at bidding
    chair.advance_phase(venue)
    seen = [x["id"] for x in _svc(db, settings, CAST.reviewers[1]).venue_submissions(venue)]
    assert sub.id not in seen and other.id in seen


def test_publications_from_profile_exports_feed_affinity(client, db, settings):
    populate_venue(db, settings, "pub", Phase.SUBMISSION, n_papers=0)
    me = _token(db, settings, CAST.reviewers[0])
    export = ('{"result": {"hits": {"hit": [{"info": {"title": "Fair assignment", '
              '"year": "2024", "authors": {"author": [{"text": "Ann Lee"}]}}}]}}}')
    r = client.post("/api/v1/me/publications", headers=me, content=export)
    assert r.status_code == 201 and r.json()["publications"] == 1
    papers = db.scalars(select(m.ReviewerPaper.title).where(
        m.ReviewerPaper.user_id == _user(db, CAST.reviewers[0]).id)).all()
    assert "Fair assignment" in papers
    bad = client.post("/api/v1/me/publications", headers=me, content="@article{x, year=2020")
    assert bad.status_code == 400
    chair = _token(db, settings, CAST.chair)
    missing = client.get("/api/v1/venues/pub/members-without-publications", headers=chair)
    assert CAST.reviewers[0] not in {x["email"] for x in missing.json()}
    assert CAST.reviewers[1] in {x["email"] for x in missing.json()}
    # and the chair reminds exactly them
    r = client.post("/api/v1/venues/pub/mail", headers=chair, json={
        "to": {"role": "reviewer", "status": "no_publications"}, "subject": "Your papers",
        "body": "Dear {name}, please upload your publication list.", "dry_run": True})
    assert {x["email"] for x in r.json()["recipients"]} == set(CAST.reviewers[1:])


def test_bulk_mail_previews_exactly_then_sends_as_a_job(client, db, settings, sink):
    populate_venue(db, settings, "bulk", Phase.ASSIGNMENT, n_papers=2)
    _run(db, settings)
    chair = _token(db, settings, CAST.chair)
    body = {"to": {"role": "reviewer", "status": "reviews_missing"},
            "subject": "[{venue}] {missing_reviews} reviews missing",
            "body": "Dear {name}, please finish: {link}", "dry_run": True}
    r = client.post("/api/v1/venues/bulk/mail", headers=chair, json=body)
    assert r.status_code == 200, r.text
    out = r.json()
    recips = [x["email"] for x in out["recipients"]]
    assigned = set(db.scalars(select(m.User.email).join(
        m.Assignment, m.Assignment.user_id == m.User.id).where(m.Assignment.role == "reviewer")))
    assert recips and set(recips) == assigned
    assert out["preview"]["body"].startswith("Dear ") and "/v/bulk" in out["preview"]["body"]
    assert "{" not in out["preview"]["subject"]
    n = sink.count()
    r = client.post("/api/v1/venues/bulk/mail", headers=chair, json=body | {"dry_run": False})
    assert r.status_code == 202 and "job_id" in r.json()
    assert sink.count() == n  # nothing before the job runs
    _run(db, settings)
    assert sorted(x["to"] for x in sink.messages[n:]) == sorted(recips)
    bad = client.post("/api/v1/venues/bulk/mail", headers=chair,
                      json=body | {"body": "{password}"})
    assert bad.status_code == 400 and "unknown template variable" in bad.json()["detail"]
    assert client.post("/api/v1/venues/bulk/mail", headers=_token(db, settings, recips[0]),
                       json=body).status_code == 403
    # invitation_pending and not_bid filters
    client.post("/api/v1/venues/bulk/invitations", headers=chair, json={"invitations": [
        {"email": "p@pending.example", "name": "Pending", "role": "reviewer"}]})
    r = client.post("/api/v1/venues/bulk/mail", headers=chair, json=body | {
        "to": {"status": "invitation_pending"}})
    assert [x["email"] for x in r.json()["recipients"]] == ["p@pending.example"]


def test_preferences_digest_and_late_reminders(db, settings, sink):
    venue = populate_venue(db, settings, "pref", Phase.ASSIGNMENT, n_papers=2)
    chair = _svc(db, settings, CAST.chair)
    chair.advance_phase(venue)  # reviewing, no review written yet
    _run(db, settings)
    late = [x["email"] for x in chair.bulk_mail(
        venue, to={"role": "reviewer", "status": "reviews_missing"}, subject="s", body="b")[
        "recipients"]]
    _svc(db, settings, late[0]).set_mail_preference("digest")
    _svc(db, settings, late[1]).set_mail_preference("off")
    deadline = (utcnow() - timedelta(days=1)).date().isoformat()
    chair.set_timeline(venue, {"reviewing": deadline})
    n = sink.count()
    out = _svc(db, settings).send_late_reminders()
    db.commit()
    assert out["reminders"] == len(late)
    _run(db, settings)
    got = [x["to"] for x in sink.messages[n:]]
    assert late[0] not in got and late[1] not in got  # held for the digest / off
    assert set(late[2:]) <= set(got)
    status = dict(db.execute(select(m.Email.to_addr, m.Email.status).where(
        m.Email.subject.contains("Reminder"))).all())
    assert status[late[0]] == "digest" and status[late[1]] == "off"
    _svc(db, settings).send_digests()
    db.commit()
    _run(db, settings)
    digest = [x for x in sink.messages if x["to"] == late[0]][-1]
    assert "daily digest" in digest["subject"] and "Reminder" in digest["body"]


def test_notifications_follow_the_process_and_name_no_one(db, settings):
    populate_venue(db, settings, "note", Phase.DISCUSSION, n_papers=1)
    mails = db.scalars(select(m.Email).where(m.Email.subject.contains("#1"))).all()
    subjects = {e.subject.split("] ", 1)[1] for e in mails}
    assert {"You were assigned submission #1", "A new review of submission #1",
            "The authors replied to a review of submission #1"} <= subjects
    ac = db.scalar(select(m.Email).where(m.Email.to_addr == CAST.ac,
                                         m.Email.subject.contains("A new review")))
    assert ac is not None and ac.submission_id is not None
    names = [u.name for u in db.scalars(select(m.User))]
    assert not any(n in e.body for e in mails for n in names)  # double blind


def test_a_members_quota_caps_their_load_in_the_assignment_solver(db, settings):
    base = ReviewService(db, settings)
    chair = base.as_user(base.create_user("pcq@conf.example", "PC", "long-password",
                                          is_admin=True))
    venue = chair.create_venue("quota", "Quota", reviews_per_paper=2, max_load=4)
    revs = []
    for j in range(4):
        u = base.create_user(f"q{j}@q{j}-uni.example", f"Q{j}", "long-password")
        base.as_user(u).add_reviewer_paper(f"Work {j}", "graph neural networks for molecules")
        chair.add_member(venue, u.email, "reviewer")
        revs.append(u)
    subs = []
    for i in range(6):
        a = base.create_user(f"qa{i}@qauth{i}.example", f"QA{i}", "long-password")
        subs.append(base.as_user(a).submit(venue, title=f"Graph networks {i}",
                                           abstract="graph neural networks for molecules",
                                           authors=[{"name": a.name, "email": a.email}]))
    chair.advance_phase(venue)  # bidding
    eager = base.as_user(revs[0])
    for s in subs:  # the solver would give them the venue's maximum, 4 papers
        eager.bid(s.id, 2)
    assert eager.set_my_quota(venue, 1) == 1
    with pytest.raises(ServiceError, match="maximum 4"):
        eager.set_my_quota(venue, 5)
    chair.advance_phase(venue)  # assignment
    caps = chair.assignments.load_caps(venue, [u.id for u in revs])
    assert caps.tolist() == [1, 4, 4, 4]
    prop = chair.propose_assignment(venue)
    load = Counter(p["user_id"] for p in prop["pairs"])
    assert len(prop["pairs"]) == 12 and load[revs[0].id] == 1
    assert max(load.values()) <= 4
    preview = chair.preview_assignment(venue)
    assert {x["user_id"]: x["max_load"] for x in preview["loads"]}[revs[0].id] == 1
    assert all(r["ok"] for r in preview["report"] if "maximum load" in r["rule"])
    # the dense solver of auto-assign keeps to it too
    assert chair.auto_assign(venue) == 12
    got = Counter(a.user_id for a in db.scalars(select(m.Assignment).where(
        m.Assignment.role == "reviewer")))
    assert got[revs[0].id] == 1 and max(got.values()) <= 4
    # a quota lowered later removes no assignment: the cap is what they already hold
    base.as_user(revs[1]).set_my_quota(venue, 0)
    assert chair.assignments.load_caps(venue, [revs[1].id], [got[revs[1].id]]).tolist() == [
        got[revs[1].id]]


def test_auto_assign_as_a_job_with_prefer_respond_async(client, db, settings):
    venue = populate_venue(db, settings, "aj", Phase.BIDDING, n_papers=2)
    service_chair = ReviewService(db, settings).as_user(_user(db, CAST.chair))
    service_chair.advance_phase(venue)  # assignment
    chair, reviewer = _token(db, settings, CAST.chair), _token(db, settings, CAST.reviewers[0])
    async_ = {"Prefer": "respond-async"}
    assert client.post("/api/v1/venues/aj/auto-assign",
                       headers=reviewer | async_).status_code == 403
    r = client.post("/api/v1/venues/aj/auto-assign", headers=chair | async_)
    assert r.status_code == 202, r.text
    job_id = r.json()["job_id"]
    st = client.get(f"/api/v1/jobs/{job_id}", headers=chair).json()
    assert st["status"] == "queued" and st["kind"] == "assign.auto"
    assert db.scalar(select(m.Assignment).where(m.Assignment.role == "reviewer")) is None
    run_due_jobs(make_sessionmaker(db.get_bind()), settings)
    st = client.get(f"/api/v1/jobs/{job_id}", headers=chair).json()
    db.expire_all()
    n = len(db.scalars(select(m.Assignment).where(m.Assignment.role == "reviewer")).all())
    assert st["status"] == "done" and st["progress"] == 1.0
    assert st["result"] == {"new_assignments": n} and n == 2 * venue.reviews_per_paper
    # without the header: the synchronous answer, as before (nothing left to fill)
    r = client.post("/api/v1/venues/aj/auto-assign", headers=chair)
    assert r.status_code == 200 and r.json() == {"new_assignments": 0}
