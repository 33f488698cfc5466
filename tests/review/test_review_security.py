"""Web security: CSRF rejection, stored XSS rendered inert, bad uploads refused with a clear
message, cookie flags, login throttling, API tokens and the OpenAPI document."""

from __future__ import annotations

import html

import pytest
from review_helpers import csrf_of, web_login
from sqlalchemy import func, select

from icml25.review import models as m
from icml25.review.demo import DEMO_PASSWORD, Cast, populate_venue
from icml25.review.security import minimal_pdf
from icml25.review.service import ReviewService
from icml25.review.workflow import Phase

CAST = Cast()
XSS = ['<script>alert("x1")</script>', '"><img src=x onerror=alert(2)>',
       "<svg/onload=alert(3)>", "javascript:alert(4)//<a href=javascript:alert(5)>x</a>"]


def _venue(db, settings, upto=Phase.SUBMISSION):
    return populate_venue(db, settings, "sec", upto, n_papers=1)


def test_csrf_missing_or_wrong_token_is_rejected_and_changes_nothing(client, db, settings):
    venue = _venue(db, settings, Phase.SUBMISSION)
    web_login(client, CAST.chair, DEMO_PASSWORD)
    page = client.get("/v/sec")
    token = csrf_of(page.text)
    for data in ({}, {"csrf_token": "wrong"}, {"csrf_token": ""}):
        r = client.post("/v/sec/advance", data=data, follow_redirects=False)
        assert r.status_code == 403
        assert "CSRF" in r.text
    db.refresh(venue)
    assert venue.phase == "submission"
    # the same form with the page's token works
    r = client.post("/v/sec/advance", data={"csrf_token": token}, follow_redirects=False)
    assert r.status_code == 303
    db.refresh(venue)
    assert venue.phase == "bidding"
    # logout, member changes and token creation are state changes too
    for url, data in (("/logout", {}), ("/tokens", {"name": "t"}),
                      ("/v/sec/members", {"email": CAST.ac, "role": "reviewer"})):
        assert client.post(url, data=data, follow_redirects=False).status_code == 403
    assert client.get("/v/sec").status_code == 200  # still logged in


def test_login_form_needs_its_csrf_cookie(client, db, settings):
    _venue(db, settings)
    r = client.post("/login", data={"email": CAST.chair, "password": DEMO_PASSWORD},
                    follow_redirects=False)
    assert r.status_code == 403


def test_session_cookie_flags_and_logout(client, db, settings):
    _venue(db, settings)
    page = client.get("/login")
    r = client.post("/login", data={"email": CAST.chair, "password": DEMO_PASSWORD,
                                    "csrf_token": csrf_of(page.text)}, follow_redirects=False)
    cookie = r.headers["set-cookie"]
    assert "icml25_session=" in cookie and "HttpOnly" in cookie
    assert "samesite=lax" in cookie.lower()
    home = client.get("/")
    assert home.status_code == 200 and "Dashboard" in home.text
    # status messages travel in a cookie we set, so a crafted link cannot inject text
    assert "INJECTED" not in client.get("/?msg=INJECTED").text
    client.post("/logout", data={"csrf_token": csrf_of(home.text)})
    assert client.get("/", follow_redirects=False).status_code == 303


def test_login_throttling(client, db, settings):
    _venue(db, settings)
    page = client.get("/login")
    tok = csrf_of(page.text)
    codes = [client.post("/login", data={"email": CAST.chair, "password": "wrong-password",
                                         "csrf_token": tok}, follow_redirects=False).status_code
             for _ in range(settings.login_max_failures)]
    assert codes == [401] * settings.login_max_failures
    # now even the right password is refused for this account
    r = client.post("/login", data={"email": CAST.chair, "password": DEMO_PASSWORD,
                                    "csrf_token": tok}, follow_redirects=False)
    assert r.status_code == 429 and "too many failed logins" in r.text
    # another account is unaffected
    r = client.post("/login", data={"email": CAST.ac, "password": DEMO_PASSWORD,
                                    "csrf_token": tok}, follow_redirects=False)
    assert r.status_code == 303


def test_passwords_are_argon2_hashed(db, settings):
    _venue(db, settings)
    u = db.scalar(select(m.User).where(m.User.email == CAST.chair))
    assert u.password_hash.startswith("$argon2id$") and DEMO_PASSWORD not in u.password_hash


def _submit(client, title="A paper", pdf=None, **extra):
    page = client.get("/v/sec/submit")
    assert page.status_code == 200
    data = {"csrf_token": csrf_of(page.text), "title": title, "abstract": "An abstract.",
            "author_name_0": "Author 1", "author_email_0": CAST.authors[0], **extra}
    files = {"pdf": ("paper.pdf", pdf, "application/pdf")} if pdf is not None else None
    return client.post("/v/sec/submit", data=data, files=files, follow_redirects=False)


@pytest.mark.parametrize("payload, message", [
    (b"\x89PNG\r\n\x1a\n" + b"0" * 500, "not a PDF"),
    (b"%PDF-1.4\n" + b"0" * 500, "not a complete PDF"),
    (b"", "empty"),
    ("big", "too large"),
])
def test_bad_uploads_are_rejected_with_a_clear_message(client, db, settings, payload, message):
    venue = _venue(db, settings)
    if payload == "big":
        venue.max_pdf_bytes = 4000
        db.commit()
        payload = minimal_pdf() + b"%" + b"0" * 5000 + b"\n%%EOF\n"
    web_login(client, CAST.authors[0], DEMO_PASSWORD)
    n_before = db.scalar(select(func.count()).select_from(m.Submission))
    r = _submit(client, pdf=payload)
    assert r.status_code == 400
    assert message in r.text
    assert db.scalar(select(func.count()).select_from(m.Submission)) == n_before
    ok = _submit(client, pdf=minimal_pdf("good"))
    assert ok.status_code == 303
    sid = int(ok.headers["location"].split("/s/")[1].split("?")[0])
    pdf = client.get(f"/s/{sid}/pdf")
    assert pdf.status_code == 200 and pdf.content.startswith(b"%PDF-")
    # replacing the PDF through the edit form is checked the same way
    page = client.get(f"/s/{sid}")
    r = client.post(f"/s/{sid}/edit", data={"csrf_token": csrf_of(page.text), "title": "New",
                                            "abstract": "New abstract."},
                    files={"pdf": ("x.pdf", payload, "application/pdf")})
    assert r.status_code == 400 and message in r.text
    assert db.get(m.Submission, sid).title == "A paper"
    r = client.post(f"/s/{sid}/edit", data={"csrf_token": csrf_of(page.text), "title": "New",
                                            "abstract": "New abstract."})
    assert r.status_code == 200 and "Submission updated" in r.text
    db.expire_all()
    assert db.get(m.Submission, sid).title == "New"


def test_stored_xss_in_every_text_field_is_inert(client, db, settings, engine):
    from fastapi.testclient import TestClient

    from icml25.review.web import create_app

    payload = " | ".join(XSS)
    venue = populate_venue(db, settings, "sec", Phase.SUBMISSION, n_papers=0)
    base = ReviewService(db, settings)
    evil = base.create_user("evil@evil.example", payload, "password-123", affiliation=payload)
    author = base.as_user(evil)
    sub = author.submit(venue, title=payload, abstract=payload, keywords=payload[:400],
                        declared_conflicts=payload,
                        authors=[{"name": payload, "email": evil.email, "affiliation": payload}])
    chair = base.as_user(db.scalar(select(m.User).where(m.User.email == CAST.chair)))
    for phase in ("bidding", "assignment"):
        chair.advance_phase(venue, phase)
    rev = db.scalar(select(m.User).where(m.User.email == CAST.reviewers[0]))
    ac = db.scalar(select(m.User).where(m.User.email == CAST.ac))
    chair.assign(sub.id, rev.id)
    chair.assign(sub.id, ac.id, "ac")
    chair.advance_phase(venue, "reviewing")
    r = base.as_user(rev).save_review(sub.id, summary=payload, strengths=payload,
                                      questions=payload, weaknesses=payload, score=5,
                                      confidence=3)
    chair.advance_phase(venue, "feedback")
    author.give_feedback(r.id, comprehension=3, constructiveness=3, llm_suspected=True,
                         llm_comment=payload)
    chair.advance_phase(venue, "rebuttal")
    author.write_rebuttal(r.id, payload)
    chair.advance_phase(venue, "discussion")
    base.as_user(rev).post_discussion(sub.id, payload)
    chair.advance_phase(venue, "meta_review")
    base.as_user(ac).write_metareview(sub.id, payload, "accept")
    chair.advance_phase(venue, "decision")
    chair.decide(sub.id, "accept")
    chair.advance_phase(venue, "notification")

    app = create_app(settings, engine)
    for email, password in ((CAST.chair, DEMO_PASSWORD), ("evil@evil.example", "password-123"),
                            (CAST.reviewers[0], DEMO_PASSWORD), (CAST.ac, DEMO_PASSWORD)):
        c = TestClient(app)
        web_login(c, email, password)
        for url in ("/", "/v/sec", f"/s/{sub.id}", "/v/sec/admin"):
            body = c.get(url).text
            for x in XSS:
                assert x not in body, (email, url, x)
            assert "<script>" not in body and "<img src=x" not in body
        shown = c.get(f"/s/{sub.id}").text
        assert html.escape(XSS[0], quote=False) in shown or "&lt;script&gt;" in shown
        assert "Content-Security-Policy" in c.get("/").headers


def test_api_needs_a_token_and_follows_the_same_rules(client, db, settings):
    venue = populate_venue(db, settings, "sec", Phase.FEEDBACK, n_papers=2)
    assert client.get("/api/v1/me").status_code == 403
    assert client.get("/api/v1/me", headers={"Authorization": "Bearer nope"}).status_code == 403
    # a browser session cookie does not authenticate the API (so the API needs no CSRF)
    web_login(client, CAST.authors[0], DEMO_PASSWORD)
    assert client.get("/api/v1/me").status_code == 403
    # tokens are created through a CSRF-protected form and shown once
    page = client.get("/tokens")
    made = client.post("/tokens", data={"name": "script", "csrf_token": csrf_of(page.text)})
    secret = made.text.split('id="new-token">')[1].split("<")[0]
    h = {"Authorization": f"Bearer {secret}"}
    assert client.get("/api/v1/me", headers=h).json()["email"] == CAST.authors[0]
    assert secret not in client.get("/tokens").text
    subs = client.get(f"/api/v1/venues/{venue.slug}", headers=h).json()["submissions"]
    sid = next(s["id"] for s in subs if s["number"] == 2)  # paper 2: partly rated
    page = client.get(f"/api/v1/submissions/{sid}", headers=h).json()
    unrated = [r for r in page["reviews"] if not r["rated"]]
    assert unrated and all("score" not in r for r in page["reviews"])
    # rate through the API; bad values give 422 with a message
    bad = client.post(f"/api/v1/reviews/{unrated[0]['id']}/feedback", headers=h,
                      json={"comprehension": 9, "constructiveness": 3})
    assert bad.status_code == 422
    for r in unrated:
        ok = client.post(f"/api/v1/reviews/{r['id']}/feedback", headers=h,
                         json={"comprehension": 4, "constructiveness": 3})
        assert ok.status_code == 200, ok.text
    page = client.get(f"/api/v1/submissions/{sid}", headers=h).json()
    assert all("score" in r and "weaknesses" in r for r in page["reviews"])
    # an author may not advance the phase or decide
    assert client.post(f"/api/v1/venues/{venue.slug}/advance", headers=h,
                       json={}).status_code == 403
    assert client.post(f"/api/v1/submissions/{sid}/decision", headers=h,
                       json={"outcome": "accept"}).status_code == 403


def test_openapi_document_lists_the_api(client):
    doc = client.get("/api/v1/openapi.json").json()
    assert doc["info"]["title"] == "icml25 review API"
    for path in ("/submissions/{sid}", "/reviews/{rid}/feedback", "/venues/{slug}/export"):
        assert path in doc["paths"]
    assert client.get("/openapi.json").status_code == 404  # the HTML app exposes none
