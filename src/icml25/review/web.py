"""FastAPI application: server-rendered pages (Jinja2, usable without JavaScript) and the JSON API
under ``/api/v1``. Routes only parse input, call :class:`~icml25.review.service.ReviewService`
and render what it returns; authorisation and visibility live in the service layer.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, File, Form, Request, UploadFile
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from pydantic import BaseModel, Field
from sqlalchemy import Engine
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from icml25.review import models as m
from icml25.review.db import Settings, make_engine, make_sessionmaker
from icml25.review.security import UploadError, new_secret, same
from icml25.review.service import (
    LoginFailed,
    LoginThrottled,
    NotFound,
    ReviewService,
    ServiceError,
)
from icml25.review.workflow import PHASE_LABELS, PHASE_ORDER, NotAllowed, Phase, TransitionError

SESSION_COOKIE = "icml25_session"
ANON_CSRF_COOKIE = "icml25_csrf"
TEMPLATES = Jinja2Templates(directory=str(Path(__file__).parent / "templates"))
TEMPLATES.env.globals.update(PHASE_LABELS=PHASE_LABELS, PHASE_ORDER=PHASE_ORDER, Phase=Phase)


log = logging.getLogger("icml25.review")


class CsrfError(PermissionError):
    """Missing or wrong CSRF token on a state-changing form."""


# ---------------------------------------------------------------------- app factory
def create_app(settings: Settings | None = None, engine: Engine | None = None) -> FastAPI:
    """Build the ASGI app (pages at /, JSON API at /api/v1)."""
    settings = settings or Settings.from_env()
    engine = engine or make_engine(settings.database_url)
    maker = make_sessionmaker(engine)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        loop = (asyncio.create_task(_deadline_loop(maker, settings))
                if settings.tick_seconds > 0 else None)
        yield
        if loop is not None:
            loop.cancel()

    app = FastAPI(title="icml25 review", docs_url=None, redoc_url=None, openapi_url=None,
                  lifespan=lifespan)
    app.state.settings, app.state.engine, app.state.maker = settings, engine, maker
    app.include_router(_pages())
    api = _api(settings, maker)
    app.mount("/api/v1", api)
    _handlers(app, html=True)

    return SecurityHeaders(app, settings.max_request_bytes)  # type: ignore[return-value]


def _advance_due_with(maker, settings: Settings) -> list[dict]:  # noqa: ANN001
    db = maker()
    try:
        return ReviewService(db, settings).advance_due()
    finally:
        db.close()


async def _deadline_loop(maker, settings: Settings) -> None:  # noqa: ANN001
    """Every ``tick_seconds``: move venues on whose phase deadline passed. Each worker runs one;
    the service locks and re-checks each venue, so they never double-advance."""
    while True:
        await asyncio.sleep(settings.tick_seconds)
        try:
            for row in await run_in_threadpool(_advance_due_with, maker, settings):
                log.info("deadline: %s", json.dumps(row))
        except Exception:  # a failed tick must not stop the server; the next one retries
            log.exception("deadline tick failed")


SECURITY_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
    (b"content-security-policy",
     b"default-src 'self'; style-src 'self' 'unsafe-inline'; script-src 'self'; "
     b"object-src 'none'; frame-ancestors 'none'"),
]


class SecurityHeaders:
    """Plain ASGI wrapper adding security headers to every HTTP response (cheaper than
    Starlette's BaseHTTPMiddleware). Attribute access falls through to the wrapped app."""

    def __init__(self, app: FastAPI, max_request_bytes: int | None = None) -> None:
        self.app = app
        self.max_request_bytes = max_request_bytes

    def __getattr__(self, name: str) -> Any:
        return getattr(self.app, name)

    async def __call__(self, scope, receive, send) -> None:  # noqa: ANN001
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        if self.max_request_bytes is not None:
            length = dict(scope.get("headers", [])).get(b"content-length", b"0")
            if length.isdigit() and int(length) > self.max_request_bytes:
                limit = self.max_request_bytes / 1e6
                response = JSONResponse({"detail": f"request too large (limit {limit:.0f} MB)"},
                                        status_code=413)
                await response(scope, receive, send)
                return
        # the interactive API docs load Swagger UI from its CDN; they show no user data
        docs = scope.get("path", "").startswith(("/api/v1/docs", "/api/v1/redoc"))

        async def send_with_headers(message) -> None:  # noqa: ANN001
            if message["type"] == "http.response.start":
                names = {k.lower() for k, _ in message.get("headers", [])}
                if docs:
                    names.add(b"content-security-policy")
                message.setdefault("headers", [])
                message["headers"] = list(message["headers"]) + [
                    (k, v) for k, v in SECURITY_HEADERS if k not in names]
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _handlers(app: FastAPI, html: bool) -> None:
    def reply(request: Request, status: int, message: str) -> Response:
        if not html or request.url.path.startswith("/api/"):
            return JSONResponse({"detail": message}, status_code=status)
        return TEMPLATES.TemplateResponse(request, "error.html", _ctx(
            request, status=status, message=message), status_code=status)

    table = {NotAllowed: 403, CsrfError: 403, NotFound: 404, ServiceError: 400, UploadError: 400,
             TransitionError: 409, LoginFailed: 401, LoginThrottled: 429}
    for exc_type, status in table.items():
        app.add_exception_handler(
            exc_type, lambda request, exc, status=status: reply(request, status, str(exc)))


# ---------------------------------------------------------------------- dependencies
def _db(request: Request) -> Iterator[Session]:
    db = request.app.state.maker()
    try:
        yield db
    finally:
        db.close()


DB = Annotated[Session, Depends(_db)]


class Ctx:
    """Per-request: the service acting as the logged-in user, and the CSRF token to embed."""

    def __init__(self, request: Request, db: Session) -> None:
        settings = request.app.state.settings
        base = ReviewService(db, settings)
        found = base.session_user(request.cookies.get(SESSION_COOKIE))
        self.user: m.User | None = found[0] if found else None
        self.web_session: m.WebSession | None = found[1] if found else None
        self.svc = base.as_user(self.user)
        self.request = request
        self.new_anon_csrf: str | None = None
        if self.web_session:
            self.csrf = self.web_session.csrf_token
        else:
            self.csrf = request.cookies.get(ANON_CSRF_COOKIE) or ""
            if not self.csrf:
                self.csrf = self.new_anon_csrf = new_secret()

    def login_required(self) -> m.User:
        if self.user is None:
            raise NotAllowed("please log in")
        return self.user


async def _ctx_dep(request: Request, db: DB) -> Ctx:
    ctx = Ctx(request, db)
    if request.method == "POST":
        form = await request.form()
        sent = form.get("csrf_token")
        expected = (ctx.web_session.csrf_token if ctx.web_session
                    else request.cookies.get(ANON_CSRF_COOKIE))
        if not same(str(sent) if sent else None, expected):
            raise CsrfError("the form's security token (CSRF) is missing or wrong; "
                            "reload the page and try again")
    return ctx


C = Annotated[Ctx, Depends(_ctx_dep)]


def _ctx(request: Request, **extra: Any) -> dict:
    return {"request": request, **extra}


def _render(c: Ctx, name: str, status: int = 200, **extra: Any) -> Response:
    # one-shot status message from the previous redirect, carried in a cookie set by us (not in
    # the URL, so that a crafted link cannot put text into our pages)
    msg = _unflash(c.request.cookies.get(FLASH_COOKIE))
    resp = TEMPLATES.TemplateResponse(c.request, name, _ctx(
        c.request, user=c.user, csrf=c.csrf, msg=msg, **extra), status_code=status)
    if FLASH_COOKIE in c.request.cookies:
        resp.delete_cookie(FLASH_COOKIE)
    _set_anon_cookie(c, resp)
    return resp


def _set_anon_cookie(c: Ctx, resp: Response) -> None:
    if c.new_anon_csrf:
        resp.set_cookie(ANON_CSRF_COOKIE, c.new_anon_csrf, httponly=True, samesite="lax",
                        secure=c.request.app.state.settings.secure_cookies)


FLASH_COOKIE = "icml25_flash"


def _unflash(value: str | None) -> str | None:
    if not value:
        return None
    try:
        return base64.urlsafe_b64decode(value.encode()).decode()[:300]
    except (ValueError, UnicodeDecodeError):
        return None


def _back(url: str, msg: str) -> RedirectResponse:
    resp = RedirectResponse(url, status_code=303)
    resp.set_cookie(FLASH_COOKIE, base64.urlsafe_b64encode(msg.encode()).decode(),
                    httponly=True, samesite="lax", max_age=60)
    return resp


# ---------------------------------------------------------------------- pages
def _pages() -> APIRouter:
    r = APIRouter()

    @r.get("/", response_class=HTMLResponse)
    def home(c: C) -> Response:
        if c.user is None:
            return RedirectResponse("/login", status_code=303)
        return _render(c, "dashboard.html", venues=c.svc.dashboard())

    @r.get("/login", response_class=HTMLResponse)
    def login_page(c: C) -> Response:
        return _render(c, "login.html")

    @r.post("/login")
    def login(c: C, email: Annotated[str, Form()], password: Annotated[str, Form()]) -> Response:
        ip = c.request.client.host if c.request.client else ""
        try:
            token, _ = c.svc.login(email, password, ip)
        except LoginFailed as exc:
            return _render(c, "login.html", status=401, error=str(exc), email=email)
        except LoginThrottled as exc:
            return _render(c, "login.html", status=429, error=str(exc), email=email)
        resp = RedirectResponse("/", status_code=303)
        s = c.request.app.state.settings
        resp.set_cookie(SESSION_COOKIE, token, httponly=True, samesite="lax",
                        secure=s.secure_cookies, max_age=s.session_hours * 3600)
        resp.delete_cookie(ANON_CSRF_COOKIE)
        return resp

    @r.post("/logout")
    def logout(c: C) -> Response:
        c.svc.logout(c.request.cookies.get(SESSION_COOKIE))
        resp = RedirectResponse("/login", status_code=303)
        resp.delete_cookie(SESSION_COOKIE)
        return resp

    @r.get("/register", response_class=HTMLResponse)
    def register_page(c: C) -> Response:
        return _render(c, "register.html")

    @r.post("/register")
    def register(c: C, email: Annotated[str, Form()], name: Annotated[str, Form()],
                 password: Annotated[str, Form()],
                 affiliation: Annotated[str, Form()] = "") -> Response:
        try:
            c.svc.create_user(email, name, password, affiliation)
        except ServiceError as exc:
            return _render(c, "register.html", status=400, error=str(exc), email=email,
                           name=name)
        return _back("/login", "Account created; please log in.")

    @r.get("/venues/new", response_class=HTMLResponse)
    def new_venue_page(c: C) -> Response:
        c.login_required()
        return _render(c, "venue_new.html")

    @r.post("/venues")
    def new_venue(c: C, slug: Annotated[str, Form()], name: Annotated[str, Form()],
                  reviews_per_paper: Annotated[int, Form()] = 3,
                  bidding: Annotated[str, Form()] = "") -> Response:
        c.login_required()
        v = c.svc.create_venue(slug, name, reviews_per_paper=reviews_per_paper,
                               bidding_enabled=bool(bidding))
        return _back(f"/v/{v.slug}", "Venue created.")

    @r.get("/v/{slug}", response_class=HTMLResponse)
    def venue_page(c: C, slug: str) -> Response:
        c.login_required()
        v = c.svc.venue(slug)
        return _render(c, "venue.html", v=c.svc.venue_page(v))

    @r.get("/v/{slug}/submit", response_class=HTMLResponse)
    def submit_page(c: C, slug: str) -> Response:
        c.login_required()
        v = c.svc.venue(slug)
        return _render(c, "submit.html", v=c.svc.venue_page(v), max_mb=v.max_pdf_bytes / 1e6)

    @r.post("/v/{slug}/submit")
    async def submit(c: C, slug: str, title: Annotated[str, Form()],
                     abstract: Annotated[str, Form()], keywords: Annotated[str, Form()] = "",
                     declared_conflicts: Annotated[str, Form()] = "",
                     pdf: Annotated[UploadFile | None, File()] = None) -> Response:
        c.login_required()
        v = c.svc.venue(slug)
        form = await c.request.form()
        authors = [{"name": form.get(f"author_name_{i}", ""),
                    "email": form.get(f"author_email_{i}", ""),
                    "affiliation": form.get(f"author_affiliation_{i}", "")} for i in range(8)]
        data = await _read_upload(pdf, v.max_pdf_bytes)
        sub = c.svc.submit(v, title=title, abstract=abstract, keywords=keywords,
                           authors=authors, declared_conflicts=declared_conflicts, pdf=data)
        return _back(f"/s/{sub.id}", f"Submission #{sub.number} received.")

    @r.post("/v/{slug}/advance")
    def advance(c: C, slug: str, force: Annotated[str, Form()] = "") -> Response:
        v = c.svc.venue(slug)
        ph = c.svc.advance_phase(v, force=bool(force))
        return _back(f"/v/{slug}", f"The venue is now in phase: {PHASE_LABELS[ph]}.")

    @r.get("/v/{slug}/admin", response_class=HTMLResponse)
    def admin(c: C, slug: str) -> Response:
        v = c.svc.venue(slug)
        return _render(c, "admin.html", v=c.svc.venue_page(v), a=c.svc.admin_page(v))

    @r.post("/v/{slug}/members")
    def add_member(c: C, slug: str, email: Annotated[str, Form()],
                   role: Annotated[str, Form()]) -> Response:
        v = c.svc.venue(slug)
        c.svc.add_member(v, email, role)
        return _back(f"/v/{slug}/admin", "Member added.")

    @r.post("/v/{slug}/timeline")
    async def timeline(c: C, slug: str) -> Response:
        v = c.svc.venue(slug)
        form = await c.request.form()
        c.svc.set_timeline(v, {p.value: str(form.get(f"deadline_{p.value}") or "")
                               for p in PHASE_ORDER})
        return _back(f"/v/{slug}/admin", "Timeline saved.")

    @r.post("/v/{slug}/auto-assign")
    def auto(c: C, slug: str) -> Response:
        v = c.svc.venue(slug)
        n = c.svc.auto_assign(v)
        return _back(f"/v/{slug}", f"{n} reviewer assignment(s) made.")

    @r.get("/v/{slug}/export.json")
    def export(c: C, slug: str) -> Response:
        c.login_required()
        v = c.svc.venue(slug)
        body = json.dumps(c.svc.export(v), indent=2, default=str)
        return Response(body, media_type="application/json", headers={
            "Content-Disposition": f'attachment; filename="{v.slug}.json"'})

    @r.get("/s/{sid}", response_class=HTMLResponse)
    def submission(c: C, sid: int) -> Response:
        c.login_required()
        page = c.svc.submission_page(sid)
        members = []
        if page["can"]["assign"]:
            v = c.svc.venue(page["venue"])
            members = [mm for mm in c.svc.members(v) if mm["role"] in ("reviewer", "ac")]
        return _render(c, "submission.html", s=page, members=members)

    @r.post("/s/{sid}/edit")
    async def edit(c: C, sid: int, title: Annotated[str, Form()],
                   abstract: Annotated[str, Form()], keywords: Annotated[str, Form()] = "",
                   pdf: Annotated[UploadFile | None, File()] = None) -> Response:
        c.login_required()
        b = c.svc.bundle(sid)
        data = await _read_upload(pdf, b.venue.max_pdf_bytes)
        c.svc.update_submission(sid, title=title, abstract=abstract, keywords=keywords, pdf=data)
        return _back(f"/s/{sid}", "Submission updated.")

    @r.get("/s/{sid}/pdf")
    def pdf(c: C, sid: int) -> Response:
        c.login_required()
        path = c.svc.pdf(sid)
        # a neutral file name: the stored one carries no identities, but keep it generic
        return FileResponse(path, media_type="application/pdf",
                            filename=f"submission-{sid}.pdf")

    def _sub_action(path: str, fn, msg: str) -> None:  # noqa: ANN001
        @r.post(path, name=path)
        async def action(c: C, sid: int) -> Response:
            c.login_required()
            form = dict(await c.request.form())
            form.pop("csrf_token", None)
            fn(c.svc, sid, form)
            return _back(f"/s/{sid}", msg)

    _sub_action("/s/{sid}/withdraw", lambda s, sid, f: s.withdraw(sid), "Submission withdrawn.")
    _sub_action("/s/{sid}/bid", lambda s, sid, f: s.bid(sid, f.get("value")), "Bid saved.")
    _sub_action("/s/{sid}/assign", lambda s, sid, f: s.assign(sid, int(f.get("user_id") or 0),
                                                             f.get("role") or "reviewer"),
                "Assigned.")
    _sub_action("/s/{sid}/unassign", lambda s, sid, f: s.unassign(sid, int(f.get("user_id")
                                                                           or 0)), "Unassigned.")
    _sub_action("/s/{sid}/review", lambda s, sid, f: s.save_review(
        sid, summary=f.get("summary", ""), strengths=f.get("strengths", ""),
        questions=f.get("questions", ""), weaknesses=f.get("weaknesses", ""),
        score=f.get("score"), confidence=f.get("confidence"),
        submit=f.get("action") != "draft"), "Review saved.")
    _sub_action("/s/{sid}/discussion", lambda s, sid, f: s.post_discussion(sid, f.get("text")),
                "Posted.")
    _sub_action("/s/{sid}/metareview", lambda s, sid, f: s.write_metareview(
        sid, f.get("text"), f.get("recommendation", "")), "Meta-review saved.")
    _sub_action("/s/{sid}/decision", lambda s, sid, f: s.decide(sid, f.get("outcome", "")),
                "Decision recorded.")

    @r.post("/r/{rid}/feedback")
    async def feedback(c: C, rid: int) -> Response:
        c.login_required()
        f = await c.request.form()
        fb = c.svc.give_feedback(rid, comprehension=f.get("comprehension"),
                                 constructiveness=f.get("constructiveness"),
                                 llm_suspected=bool(f.get("llm_suspected")),
                                 llm_comment=str(f.get("llm_comment") or ""))
        sid = c.svc.db.get(m.Review, fb.review_id).submission_id
        return _back(f"/s/{sid}", "Thank you: your rating is recorded.")

    @r.post("/r/{rid}/rebuttal")
    async def rebuttal(c: C, rid: int) -> Response:
        c.login_required()
        f = await c.request.form()
        reb = c.svc.write_rebuttal(rid, str(f.get("text") or ""))
        sid = c.svc.db.get(m.Review, reb.review_id).submission_id
        return _back(f"/s/{sid}", "Rebuttal saved.")

    @r.get("/tokens", response_class=HTMLResponse)
    def tokens(c: C) -> Response:
        c.login_required()
        return _render(c, "tokens.html", tokens=c.svc.api_tokens())

    @r.post("/tokens")
    def new_token(c: C, name: Annotated[str, Form()]) -> Response:
        c.login_required()
        secret = c.svc.create_api_token(name)
        return _render(c, "tokens.html", tokens=c.svc.api_tokens(), secret=secret)

    @r.post("/tokens/{tid}/revoke")
    def revoke(c: C, tid: int) -> Response:
        c.login_required()
        c.svc.revoke_api_token(tid)
        return _back("/tokens", "Token revoked.")

    return r


async def _read_upload(upload: UploadFile | None, max_bytes: int) -> bytes | None:
    """Read at most ``max_bytes + 1`` bytes (enough to refuse an oversized file)."""
    if upload is None or not upload.filename:
        return None
    data = await upload.read(max_bytes + 1)
    if not data:
        raise UploadError("the uploaded file is empty")
    return data


# ---------------------------------------------------------------------- JSON API
class AuthorIn(BaseModel):
    name: str
    email: str
    affiliation: str = ""


class SubmissionIn(BaseModel):
    title: str
    abstract: str
    keywords: str = ""
    authors: list[AuthorIn]
    declared_conflicts: str = ""


class SubmissionEdit(BaseModel):
    title: str | None = None
    abstract: str | None = None
    keywords: str | None = None
    authors: list[AuthorIn] | None = None


class MemberIn(BaseModel):
    email: str
    role: str


class ReviewIn(BaseModel):
    summary: str
    strengths: str
    questions: str
    weaknesses: str
    score: int = Field(ge=1, le=10)
    confidence: int = Field(ge=1, le=5)
    submit: bool = True


class FeedbackIn(BaseModel):
    comprehension: int = Field(ge=1, le=5)
    constructiveness: int = Field(ge=1, le=5)
    llm_suspected: bool = False
    llm_comment: str = ""


class TextIn(BaseModel):
    text: str


class MetaIn(BaseModel):
    text: str
    recommendation: str


class DecisionIn(BaseModel):
    outcome: str


class BidIn(BaseModel):
    value: int = Field(ge=-2, le=2)


class AssignIn(BaseModel):
    user_id: int
    role: str = "reviewer"


class AdvanceIn(BaseModel):
    force: bool = False


def _api_service(request: Request, db: DB) -> ReviewService:
    """The service acting as the owner of the bearer token (no cookies: no CSRF surface)."""
    base = ReviewService(db, request.app.state.settings)
    auth = request.headers.get("authorization", "")
    token = auth[7:].strip() if auth.lower().startswith("bearer ") else None
    user = base.api_user(token)
    if user is None:
        raise NotAllowed("a valid personal access token is required (Authorization: Bearer)")
    return base.as_user(user)


S = Annotated[ReviewService, Depends(_api_service)]


def _public_service(request: Request, db: DB) -> ReviewService:
    """The service acting as nobody: for public reads (keys, profiles, credential checks)."""
    return ReviewService(db, request.app.state.settings)


P = Annotated[ReviewService, Depends(_public_service)]


class ProposalIn(BaseModel):
    objective: str = "total"
    top_k: int = Field(default=50, ge=1, le=10_000)
    bid_weight: float = 0.5
    min_load: int = Field(default=0, ge=0)
    affinity: str = "tfidf"  # or "embedding"


class CommitIn(BaseModel):
    pairs: list[tuple[int, int]]  # (submission id, user id)


class PairIn(BaseModel):
    kind: str  # pin | forbid | none


class RatingIn(BaseModel):
    rating: int = Field(ge=1, le=5)


class PaperIn(BaseModel):
    title: str
    abstract: str


def _api(settings: Settings, maker) -> FastAPI:  # noqa: ANN001
    api = FastAPI(title="icml25 review API", version="1",
                  description="Personal access tokens (create them at /tokens) go in "
                              "`Authorization: Bearer <token>`. Every response is filtered by "
                              "the same visibility rules as the web pages.")
    api.state.maker = maker
    api.state.settings = settings
    _handlers(api, html=False)

    @api.get("/me", summary="The token's user")
    def me(s: S) -> dict:
        return {"id": s.actor.id, "email": s.actor.email, "name": s.actor.name}

    @api.get("/venues", summary="Venues you take part in or may submit to")
    def venues(s: S) -> list[dict]:
        return s.venues_for_actor()

    @api.get("/venues/{slug}", summary="A venue and the submissions you may see")
    def venue(s: S, slug: str) -> dict:
        return s.venue_page(s.venue(slug))

    @api.get("/venues/{slug}/export", summary="The venue as you may see it")
    def export(s: S, slug: str) -> dict:
        return s.export(s.venue(slug))

    @api.get("/venues/{slug}/my-feedback", summary="Aggregate author feedback on your reviews")
    def my_feedback(s: S, slug: str) -> dict:
        return s.my_feedback(s.venue(slug))

    @api.post("/venues/{slug}/advance", summary="Move the venue to its next phase (chairs)")
    def advance(s: S, slug: str, body: AdvanceIn) -> dict:
        return {"phase": s.advance_phase(s.venue(slug), force=body.force).value}

    @api.post("/venues/{slug}/members", status_code=201, summary="Add a member (chairs)")
    def add_member(s: S, slug: str, body: MemberIn) -> dict:
        ms = s.add_member(s.venue(slug), body.email, body.role)
        return {"user_id": ms.user_id, "role": ms.role}

    @api.put("/venues/{slug}/timeline", summary="Set phase deadlines (chairs)")
    def set_timeline(s: S, slug: str, body: dict[str, str]) -> dict:
        v = s.venue(slug)
        s.set_timeline(v, body)
        return {"timeline": json.loads(v.timeline)}

    @api.post("/venues/{slug}/auto-assign", summary="Optimal reviewer assignment (chairs)")
    def auto(s: S, slug: str) -> dict:
        return {"new_assignments": s.auto_assign(s.venue(slug))}

    @api.post("/venues/{slug}/submissions", status_code=201, summary="Create a submission")
    def create(s: S, slug: str, body: SubmissionIn) -> dict:
        sub = s.submit(s.venue(slug), title=body.title, abstract=body.abstract,
                       keywords=body.keywords, authors=[a.model_dump() for a in body.authors],
                       declared_conflicts=body.declared_conflicts)
        return {"id": sub.id, "number": sub.number}

    @api.put("/submissions/{sid}/pdf", summary="Upload the PDF (raw application/pdf body)")
    async def upload(s: S, sid: int, request: Request) -> dict:
        data = await request.body()
        b = s.bundle(sid)
        s.update_submission(sid, pdf=data[: b.venue.max_pdf_bytes + 1])
        return {"ok": True}

    @api.patch("/submissions/{sid}", summary="Edit a submission (authors, submission phase)")
    def edit(s: S, sid: int, body: SubmissionEdit) -> dict:
        s.update_submission(sid, title=body.title, abstract=body.abstract,
                            keywords=body.keywords,
                            authors=[a.model_dump() for a in body.authors]
                            if body.authors is not None else None)
        return {"ok": True}

    @api.post("/submissions/{sid}/withdraw", summary="Withdraw a submission (authors)")
    def withdraw(s: S, sid: int) -> dict:
        s.withdraw(sid)
        return {"ok": True}

    @api.delete("/submissions/{sid}/assignments/{uid}", summary="Unassign (chairs)")
    def unassign(s: S, sid: int, uid: int) -> dict:
        s.unassign(sid, uid)
        return {"ok": True}

    @api.get("/submissions/{sid}", summary="One submission as you may see it")
    def submission(s: S, sid: int) -> dict:
        return s.submission_page(sid)

    @api.post("/submissions/{sid}/bid")
    def bid(s: S, sid: int, body: BidIn) -> dict:
        s.bid(sid, body.value)
        return {"ok": True}

    @api.post("/submissions/{sid}/assignments", summary="Assign a reviewer or AC (chairs)")
    def assign(s: S, sid: int, body: AssignIn) -> dict:
        a = s.assign(sid, body.user_id, body.role)
        return {"id": a.id, "pseudonym": a.pseudonym}

    @api.post("/submissions/{sid}/review", summary="Write your review (both stages)")
    def review(s: S, sid: int, body: ReviewIn) -> dict:
        r = s.save_review(sid, **body.model_dump())
        return {"id": r.id, "submitted": r.submitted}

    @api.post("/reviews/{rid}/feedback", summary="Rate a review (authors, feedback phase)")
    def feedback(s: S, rid: int, body: FeedbackIn) -> dict:
        s.give_feedback(rid, **body.model_dump())
        return {"ok": True}

    @api.post("/reviews/{rid}/rebuttal", summary="Reply to a review (authors)")
    def rebuttal(s: S, rid: int, body: TextIn) -> dict:
        s.write_rebuttal(rid, body.text)
        return {"ok": True}

    @api.post("/submissions/{sid}/discussion", summary="Post in the pseudonymous discussion")
    def discuss(s: S, sid: int, body: TextIn) -> dict:
        s.post_discussion(sid, body.text)
        return {"ok": True}

    @api.post("/submissions/{sid}/metareview", summary="Write the meta-review (area chair)")
    def meta(s: S, sid: int, body: MetaIn) -> dict:
        s.write_metareview(sid, body.text, body.recommendation)
        return {"ok": True}

    @api.post("/submissions/{sid}/decision", summary="Decide (program chairs)")
    def decide(s: S, sid: int, body: DecisionIn) -> dict:
        s.decide(sid, body.outcome)
        return {"ok": True}

    # ---- assignment at scale, rewards and credentials (issue 10)
    @api.post("/venues/{slug}/assignment/proposal",
              summary="Solve the assignment and show its quality; writes nothing (chairs)")
    def proposal(s: S, slug: str, body: ProposalIn) -> dict:
        return s.propose_assignment(s.venue(slug), **body.model_dump())

    @api.post("/venues/{slug}/assignment/commit", summary="Write reviewed pairs (chairs)")
    def commit(s: S, slug: str, body: CommitIn) -> dict:
        return {"new_assignments": s.commit_assignment(s.venue(slug), body.pairs)}

    @api.put("/submissions/{sid}/pairs/{uid}", summary="Pin, forbid or clear a pair (chairs)")
    def pair(s: S, sid: int, uid: int, body: PairIn) -> dict:
        s.set_pair_constraint(sid, uid, body.kind)
        return {"ok": True}

    @api.post("/me/papers", status_code=201, summary="Add one of your past papers")
    def add_paper(s: S, body: PaperIn) -> dict:
        return {"id": s.add_reviewer_paper(body.title, body.abstract).id}

    @api.post("/reviews/{rid}/ac-rating", summary="Rate a review 1-5 (area chair)")
    def ac_rating(s: S, rid: int, body: RatingIn) -> dict:
        s.rate_review(rid, body.rating)
        return {"ok": True}

    @api.get("/venues/{slug}/quality", summary="Reviewers' quality scores (chairs)")
    def quality(s: S, slug: str) -> list[dict]:
        return s.quality_scores(s.venue(slug))

    @api.get("/venues/{slug}/my-quality", summary="Your quality score and its formula")
    def my_quality(s: S, slug: str) -> dict:
        return s.my_quality(s.venue(slug))

    @api.post("/venues/{slug}/close", summary="Award badges at venue close (chairs)")
    def close(s: S, slug: str) -> dict:
        return {"badges": s.close_venue(s.venue(slug))}

    @api.put("/venues/{slug}/citations", summary="Import citation counts, CSV body (chairs)")
    async def citations(s: S, slug: str, request: Request) -> dict:
        text = (await request.body()).decode("utf-8", errors="replace")
        return {"rows": s.import_citations(s.venue(slug), text)}

    @api.get("/venues/{slug}/impact", summary="Reviewer impact scores (chairs)")
    def impact(s: S, slug: str) -> list[dict]:
        return s.reviewer_impact(s.venue(slug))

    @api.get("/me/badges", summary="Your badges as signed credentials")
    def my_badges(s: S) -> list[dict]:
        return s.my_badges()

    @api.get("/venues/{slug}/public-key", summary="The venue's credential key (public)")
    def public_key(p: P, slug: str) -> dict:
        return p.venue_public_key(p.venue(slug))

    @api.get("/reviewers/{uid}/profile", summary="Public reviewer profile with badges")
    def profile(p: P, uid: int) -> dict:
        return p.reviewer_profile(uid)

    @api.post("/credentials/verify", summary="Verify a badge credential (public)")
    def verify_credential(p: P, body: dict[str, Any]) -> dict:
        return p.verify_credential(body)

    return api
