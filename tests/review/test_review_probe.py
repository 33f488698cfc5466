"""Regression tests for the holes an outside probe found, one test per finding, and
the route-table test: every route of the app asks the one authority.

Each test failed on the code before the fix (noted per test)."""

from __future__ import annotations

import re

import pytest
from review_helpers import csrf_of, service_as, web_login
from sqlalchemy import select

from icml25.review import models as m
from icml25.review.authority import trail
from icml25.review.demo import DEMO_PASSWORD, Cast, populate_venue
from icml25.review.errors import LoginThrottled, ServiceError, UploadError
from icml25.review.security import check_pdf, format_size, minimal_pdf
from icml25.review.workflow import PHASE_ORDER, Phase

CAST = Cast()
COAUTHOR = "newcomer@uni-c.example"  # listed on a submission, no account yet


def _token(db, settings, email: str) -> dict:
    return {"Authorization": f"Bearer {service_as(db, settings, email).create_api_token('t')}"}


def _venue_with_coauthor(db, settings, slug: str, phase: Phase = Phase.FEEDBACK):
    venue = populate_venue(db, settings, slug, Phase.SUBMISSION)
    author = service_as(db, settings, CAST.authors[0])
    sub = author.submit(venue, title="With a co-author", abstract="Abstract.", authors=[
        {"name": "Author One", "email": CAST.authors[0]},
        {"name": "New Comer", "email": COAUTHOR}])
    return venue, sub


def _register(client, email: str, password: str = "long-enough-pw") -> object:
    page = client.get("/register")
    return client.post("/register", data={"csrf_token": csrf_of(page.text), "email": email,
                                          "name": "Somebody", "password": password},
                       follow_redirects=False)


# --- finding 1: anyone could become a co-author by registering the listed address ----------
def test_registering_a_coauthors_address_gives_nothing_until_the_link_is_followed(
        client, db, settings):
    # before: the new account was linked at once and read the submission (200)
    _, sub = _venue_with_coauthor(db, settings, "coauth")
    assert _register(client, COAUTHOR).status_code == 303
    user = db.scalar(select(m.User).where(m.User.email == COAUTHOR))
    assert user.email_verified_at is None
    link = db.scalar(select(m.SubmissionAuthor).where(m.SubmissionAuthor.email == COAUTHOR))
    assert link.user_id is None
    web_login(client, COAUTHOR, "long-enough-pw")
    assert client.get(f"/s/{sub.id}").status_code == 403
    assert "confirm your e-mail" in client.get("/").text
    api = _token(db, settings, COAUTHOR)
    assert client.get(f"/api/v1/submissions/{sub.id}", headers=api).status_code == 403
    assert client.get(f"/s/{sub.id}/pdf").status_code == 403
    # the link goes through the outbox to the address, and works once
    mail = db.scalars(select(m.Email).where(m.Email.to_addr == COAUTHOR)).all()[-1]
    token = re.search(r"verify-email\?token=([\w-]+)", mail.body).group(1)
    assert mail.body.startswith("Someone") and settings.public_url in mail.body
    assert client.get(f"/verify-email?token={token}").status_code == 200
    assert client.get(f"/s/{sub.id}").status_code == 200
    assert client.get(f"/verify-email?token={token}").status_code == 400  # single use
    assert client.get("/verify-email?token=forged").status_code == 400


def test_unverified_accounts_cannot_submit_or_join_a_committee(client, db, settings):
    venue = populate_venue(db, settings, "unver", Phase.SUBMISSION)
    stranger = service_as(db, settings).register("r9@r9-uni.example", "R Nine", "long-enough-pw")
    svc = service_as(db, settings, stranger.email)
    with pytest.raises(PermissionError, match="verify your e-mail"):
        svc.submit(venue, title="T", abstract="A",
                   authors=[{"name": "R Nine", "email": stranger.email}])
    chair = service_as(db, settings, CAST.chair)
    with pytest.raises(ServiceError, match="not verified"):
        chair.add_member(venue, stranger.email, "reviewer")


# --- finding 3: 500s on bad input ------------------------------------------------------------
def test_register_errors_are_400_pages(client, db, settings):
    # before: _render() got `name` twice -> 500 on every validation error
    populate_venue(db, settings, "reg", Phase.SUBMISSION)
    for email, password, message in [(CAST.authors[0], "long-enough-pw", "already exists"),
                                     ("short@pw.example", "short", "at least 8"),
                                     ("not-an-email", "long-enough-pw", "valid e-mail")]:
        r = _register(client, email, password)
        assert r.status_code == 400 and message in r.text, (email, r.status_code)


def test_bad_form_values_and_infeasible_assignments_are_4xx(client, db, settings):
    # before: unknown role, non-integer user id and the dense solver's AssignmentError -> 500
    venue = populate_venue(db, settings, "bad", Phase.ASSIGNMENT)
    sid = db.scalar(select(m.Submission.id).where(m.Submission.venue_id == venue.id))
    web_login(client, CAST.chair, DEMO_PASSWORD)
    csrf = csrf_of(client.get("/v/bad/admin").text)
    r = client.post("/v/bad/members", data={"csrf_token": csrf, "email": CAST.ac,
                                            "role": "overlord"})
    assert r.status_code == 400 and "role" in r.text
    r = client.post(f"/s/{sid}/assign", data={"csrf_token": csrf, "user_id": "abc"})
    assert r.status_code == 400 and "user_id" in r.text
    venue.max_load, venue.reviews_per_paper = 1, 3  # 2 papers x 3 reviews > 4 reviewers x 1
    db.commit()
    r = client.post("/v/bad/auto-assign", data={"csrf_token": csrf})
    assert r.status_code == 400 and "reviews needed" in r.text
    r = client.post("/api/v1/venues/bad/auto-assign", headers=_token(db, settings, CAST.chair))
    assert r.status_code == 400 and "reviews needed" in r.json()["detail"]
    with pytest.raises(ServiceError, match="roles are"):
        service_as(db, settings, CAST.chair).add_member(venue, CAST.ac, "overlord")


# --- finding 4: public profiles named every account ------------------------------------------
def test_public_profiles_only_for_reviewers_who_opted_in_or_earned_a_badge(client, db, settings):
    # before: any id answered 200 with the account's name (authors and chairs included)
    populate_venue(db, settings, "prof", Phase.SUBMISSION)
    ids = {e: db.scalar(select(m.User.id).where(m.User.email == e))
           for e in (CAST.chair, CAST.authors[0], CAST.reviewers[0], CAST.reviewers[1])}
    for email in (CAST.chair, CAST.authors[0], CAST.reviewers[0]):
        r = client.get(f"/api/v1/reviewers/{ids[email]}/profile")
        assert r.status_code == 404 and "no such reviewer" in r.text, email
    assert client.get("/api/v1/reviewers/999999/profile").status_code == 404
    r = client.put("/api/v1/me/profile", json={"public": True},
                   headers=_token(db, settings, CAST.reviewers[1]))
    assert r.status_code == 200
    r = client.get(f"/api/v1/reviewers/{ids[CAST.reviewers[1]]}/profile")
    assert r.status_code == 200 and r.json()["badges"] == []
    assert set(r.json()) == {"reviewer_id", "name", "badges"}  # no e-mail, nobody else


# --- finding 5: throttling as documented, no lock a stranger can trigger ---------------------
def test_a_stranger_cannot_lock_the_owner_out_and_the_ip_limit_is_20(db, settings):
    # before: 5 wrong passwords from anywhere locked the account everywhere; the IP limit was 100
    populate_venue(db, settings, "thr", Phase.SUBMISSION)
    svc = service_as(db, settings)
    for _ in range(settings.login_max_failures):
        with pytest.raises(PermissionError):
            svc.login(CAST.authors[0], "wrong-password", ip="198.51.100.7")
    with pytest.raises(LoginThrottled):
        svc.login(CAST.authors[0], DEMO_PASSWORD, ip="198.51.100.7")  # that pair is locked
    svc.login(CAST.authors[0], DEMO_PASSWORD, ip="203.0.113.5")  # the owner elsewhere is not
    assert settings.login_max_failures_per_ip == 20
    for i in range(20):
        with pytest.raises(PermissionError):
            svc.login(f"nobody{i}@x.example", "wrong-password", ip="192.0.2.9")
    with pytest.raises(LoginThrottled):
        svc.login(CAST.authors[1], DEMO_PASSWORD, ip="192.0.2.9")


# --- finding 6: any account read any venue's timeline and papers ----------------------------
@pytest.mark.parametrize("phase", PHASE_ORDER)
def test_outsiders_see_only_the_venue_card(client, db, settings, phase):
    # before: every logged-in account got the timeline (and settings) in every phase
    populate_venue(db, settings, "outs", phase)
    svc = service_as(db, settings)
    svc.create_user("outsider@else.example", "Out Sider", DEMO_PASSWORD)
    api = _token(db, settings, "outsider@else.example")
    page = client.get("/api/v1/venues/outs", headers=api).json()
    assert page["submissions"] == []
    assert "reviews_per_paper" not in page and "bidding_enabled" not in page
    published = {"submission": page["timeline"]["submission"]} if page["timeline"] else {}
    assert page["timeline"] == published  # at most the call for papers' deadline
    if phase is not Phase.SUBMISSION:
        assert page["timeline"] == {} and "max_pdf_size" not in page
    assert client.get("/api/v1/venues/outs/export", headers=api).status_code == 403
    web_login(client, "outsider@else.example", DEMO_PASSWORD)
    html = client.get("/v/outs")
    assert html.status_code == 200 and "deadline" not in html.text
    if phase is Phase.SUBMISSION:
        assert "at most 10 MiB" in client.get("/v/outs/submit").text
    member = client.get("/api/v1/venues/outs", headers=_token(db, settings, CAST.reviewers[0]))
    assert "reviewing" in member.json()["timeline"]


# --- finding 7: size messages ----------------------------------------------------------------
def test_size_messages_agree_with_the_form():
    # before: "the PDF is too large (10.5 MB); the limit is 10.5 MB" for a 10 MiB limit
    limit = 10 * 1024 * 1024
    pdf = minimal_pdf()
    big = pdf[:-6] + b"%" * (limit + 1 - len(pdf)) + pdf[-6:]
    with pytest.raises(UploadError) as exc:
        check_pdf(big, limit)
    assert str(exc.value) == "the PDF is too large (10.1 MiB); the limit is 10 MiB"
    assert format_size(64 * 1024 * 1024) == "64 MiB" and format_size(500) == "500 bytes"


def test_submit_form_and_413_state_the_limits_in_mib(client, db, settings, engine):
    from fastapi.testclient import TestClient

    from icml25.review.web import create_app

    populate_venue(db, settings, "size", Phase.SUBMISSION)
    web_login(client, CAST.authors[0], DEMO_PASSWORD)
    assert "at most 10 MiB" in client.get("/v/size/submit").text
    small = create_app(settings.model_copy(update={"max_request_bytes": 2**20}), engine)
    r = TestClient(small).put("/api/v1/submissions/1/pdf", content=b"x" * (2**20 + 1))
    assert r.status_code == 413 and r.json()["detail"] == "request too large (limit 1 MiB)"


# --- the route-table test --------------------------------------------------------------------
GENERIC_FORM = {"email": "someone@x.example", "password": "long-enough-pw", "name": "N",
                "slug": "new-venue", "role": "reviewer", "user_id": "1", "value": "1",
                "text": "t", "comprehension": "3", "constructiveness": "3", "title": "T",
                "abstract": "A", "outcome": "accept", "recommendation": "accept", "pairs": "",
                "bid_1": "1", "submission_id": "1", "kind": "none", "credential": "{}",
                "lines": "x", "max_chars": "1000",
                "template": "t", "institution": "U", "domain": "u.example",
                "mail_preference": "digest", "token": "no-such-token", "submission": "1",
                "conflicted": "yes", "reason": "r", "subject": "s", "body": "b"}
GENERIC_JSON = {"title": "T", "abstract": "A", "authors": [{"name": "N", "email": "a@b.example"}],
                "email": "someone@x.example", "role": "reviewer", "summary": "s",
                "strengths": "s", "questions": "q", "weaknesses": "w", "score": 5,
                "confidence": 3, "comprehension": 3, "constructiveness": 3, "text": "t",
                "recommendation": "accept", "outcome": "accept", "value": 1, "user_id": 1,
                "force": False, "pairs": [], "kind": "none", "rating": 3, "public": False,
                "bids": {}, "types": [], "max_chars": 1000,
                "template": "t", "fields": [],
                "invitations": [{"email": "inv@x.example", "name": "I", "role": "reviewer"}],
                "token": "no-such-token", "password": "long-enough-pw", "institution": "U",
                "domain": "u.example", "conflicted": True, "reason": "r", "subject": "s",
                "body": "b", "dry_run": True, "mail_preference": "digest", "quota": 1}


class _Recorder:
    """ASGI wrapper: per request, the authority's decisions and the response status."""

    def __init__(self, app) -> None:
        self.app, self.log = app, []

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = {}

        async def send_status(message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        with trail() as seen:
            await self.app(scope, receive, send_status)
        self.log.append((scope["method"], scope["path"], status.get("code"), list(seen)))


def _routes(routes, prefix: str = "") -> list[tuple[str, str]]:
    """(method, path) of every route, through mounted apps and included routers."""
    from fastapi.routing import APIRoute
    from starlette.routing import Mount

    out = []
    for route in routes:
        if isinstance(route, Mount):
            out += _routes(route.app.routes, prefix + route.path)
        elif isinstance(route, APIRoute):
            out += [(meth, prefix + route.path) for meth in route.methods]
        elif hasattr(route, "original_router"):  # FastAPI's included router
            out += _routes(route.original_router.routes, prefix)
        else:
            raise AssertionError(f"a route of unknown kind: {route!r}")
    return sorted(set(out))


def test_every_route_asks_the_authority(settings, engine, db):
    from fastapi.testclient import TestClient

    from icml25.review.web import create_app

    venue = populate_venue(db, settings, "routes", Phase.FEEDBACK)
    sub = db.scalar(select(m.Submission).where(m.Submission.venue_id == venue.id))
    review = db.scalar(select(m.Review).where(m.Review.submission_id == sub.id))
    values = {"slug": "routes", "sid": sub.id, "rid": review.id, "uid": sub.submitter_id,
              "tid": 999, "name": "swagger-ui.css", "bid": 1, "xid": 1,
              "ac_id": sub.submitter_id, "job_id": 1, "email_id": 1, "inv_id": 1,
              "token": "no-such-token", "aid": 1}
    app = create_app(settings, engine)
    routes = _routes(app.routes)
    assert len(routes) > 60  # the whole table: pages and API
    recorder = _Recorder(app)
    personas = {}
    for email in (None, CAST.authors[0], CAST.chair):
        c = TestClient(recorder)
        if email:
            web_login(c, email, DEMO_PASSWORD)
        personas[email] = (c, _token(db, settings, email) if email else {})
    logins = {id(c): email for email, (c, _) in personas.items() if email}
    unasked = []
    for method, template in routes:
        path = template.format(**values)
        asked = False
        for c, bearer in personas.values():
            recorder.log.clear()
            if method == "GET":
                r = c.get(path, headers=bearer, follow_redirects=False)
            elif path.startswith("/api/"):
                body = {"reviewing": "2030-01-01"} if path.endswith("/timeline") else GENERIC_JSON
                r = c.request(method, path, headers=bearer, json=body, follow_redirects=False)
            else:
                token = _csrf(c)
                r = c.request(method, path, data=GENERIC_FORM | {"csrf_token": token},
                              follow_redirects=False)
            assert r.status_code < 500, (method, path, r.status_code, r.text[:300])
            _, _, status, decisions = recorder.log[-1]
            assert decisions or status >= 400, (method, path, status)  # no answer unasked
            asked = asked or bool(decisions)
            if path == "/logout" and id(c) in logins:
                web_login(c, logins[id(c)], DEMO_PASSWORD)
        if not asked:
            unasked.append((method, template))
    assert not unasked, f"routes that never ask the authority: {unasked}"


def _csrf(client) -> str:
    """The CSRF token a browser of this client would send (session or anonymous cookie)."""
    page = client.get("/tokens", follow_redirects=False)
    if page.status_code == 200:
        return csrf_of(page.text)
    return csrf_of(client.get("/login").text)


# --- the API docs work offline --------------------------------------------
def test_api_docs_load_swagger_ui_from_the_installed_package(client):
    page = client.get("/api/v1/docs")
    assert page.status_code == 200
    assets = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert assets and all(a.startswith("/api/v1/") for a in assets), assets  # no CDN
    for url in assets:
        r = client.get(url)
        assert r.status_code == 200 and len(r.content) > 500, url
    assert "SwaggerUIBundle" in client.get("/api/v1/docs/assets/swagger-ui-bundle.js").text
    assert client.get("/api/v1/docs/assets/secrets.txt").status_code == 404
    assert "unsafe-inline" in page.headers["content-security-policy"]
    assert "unsafe-inline" not in client.get("/login").headers["content-security-policy"].split(
        "script-src")[1].split(";")[0]
