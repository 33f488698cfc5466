"""Per-request dependencies: the database session, the logged-in user and the service acting as
them (web pages: session cookie + CSRF token; API: bearer token), and page rendering helpers."""

from __future__ import annotations

import base64
import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, get_type_hints

from fastapi import Depends, Request
from fastapi.responses import RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from icml25.review import models as m
from icml25.review.errors import NotAllowed
from icml25.review.scales import template_globals
from icml25.review.security import new_secret, same
from icml25.review.service import ReviewService
from icml25.review.workflow import PHASE_LABELS, PHASE_ORDER, Phase

SESSION_COOKIE = "icml25_session"
ANON_CSRF_COOKIE = "icml25_csrf"
FLASH_COOKIE = "icml25_flash"
TEMPLATES = Jinja2Templates(directory=str(Path(__file__).parent.parent / "templates"))
TEMPLATES.env.globals.update(PHASE_LABELS=PHASE_LABELS, PHASE_ORDER=PHASE_ORDER, Phase=Phase,
                             RATING_LABELS=[(1, "poor"), (2, "weak"), (3, "fair"), (4, "good"),
                                            (5, "excellent")],
                             BID_CHOICES=[(2, "Eager"), (1, "Willing"), (0, "Neutral"),
                                          (-1, "Reluctant"), (-2, "No")])
TEMPLATES.env.globals.update(template_globals())  # the labelled scales (scales.py)


class CsrfError(PermissionError):
    """Missing or wrong CSRF token on a state-changing form."""


@contextmanager
def _session(request: Request) -> Iterator[Session]:
    db = request.app.state.maker()
    try:
        yield db
    finally:
        db.close()


class Ctx:
    """Per-request: the service acting as the logged-in user, and the CSRF token to embed."""

    def __init__(self, request: Request, db: Session) -> None:
        base = ReviewService(db, request.app.state.settings)
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

    @property
    def settings(self):  # noqa: ANN201
        return self.request.app.state.settings

    @property
    def ip(self) -> str:
        return self.request.client.host if self.request.client else ""


def _page_ctx(request: Request) -> Iterator[Ctx]:
    # a sync dependency: FastAPI runs it in a worker thread, so the session lookup never
    # blocks the event loop; one dependency = one thread hop in and one out
    with _session(request) as db:
        yield Ctx(request, db)


async def _ctx_dep(request: Request, ctx: Annotated[Ctx, Depends(_page_ctx)]) -> Ctx:
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


def render(c: Ctx, template: str, status: int = 200, **extra: Any) -> Response:
    """Render a page with the user, CSRF token and the one-shot status message."""
    # the message of the previous redirect travels in a cookie set by us (not in the URL, so a
    # crafted link cannot put text into our pages)
    msg = _unflash(c.request.cookies.get(FLASH_COOKIE))
    resp = TEMPLATES.TemplateResponse(c.request, template, {
        "request": c.request, "user": c.user, "csrf": c.csrf, "msg": msg, **extra},
        status_code=status)
    if FLASH_COOKIE in c.request.cookies:
        resp.delete_cookie(FLASH_COOKIE)
    if c.new_anon_csrf:
        resp.set_cookie(ANON_CSRF_COOKIE, c.new_anon_csrf, httponly=True, samesite="lax",
                        secure=c.settings.secure_cookies)
    return resp


def _unflash(value: str | None) -> str | None:
    if not value:
        return None
    try:
        return base64.urlsafe_b64decode(value.encode()).decode()[:300]
    except (ValueError, UnicodeDecodeError):
        return None


async def form_answers(request: Request) -> dict[str, str]:
    """The answers to a review form's added fields, posted as ``answer_<key>`` (an unticked
    box is absent)."""
    return {k[len("answer_"):]: str(v) for k, v in (await request.form()).items()
            if k.startswith("answer_")}


def back(url: str, msg: str) -> RedirectResponse:
    """Redirect after a POST, carrying a one-shot status message."""
    resp = RedirectResponse(url, status_code=303)
    resp.set_cookie(FLASH_COOKIE, base64.urlsafe_b64encode(msg.encode()).decode(),
                    httponly=True, samesite="lax", max_age=60)
    return resp


def _api_service(request: Request) -> Iterator[ReviewService]:
    """The service acting as the owner of the bearer token (no cookies: no CSRF surface)."""
    with _session(request) as db:
        yield _api_user_service(request, db)


S = Annotated[ReviewService, Depends(_api_service)]


def _api_user_service(request: Request, db: Session) -> ReviewService:
    base = ReviewService(db, request.app.state.settings)
    auth = request.headers.get("authorization", "")
    token = auth[7:].strip() if auth.lower().startswith("bearer ") else None
    user = base.api_user(token)
    if user is None:
        raise NotAllowed("a valid personal access token is required (Authorization: Bearer)")
    return base.as_user(user)


def _public_service(request: Request) -> Iterator[ReviewService]:
    """The service acting as nobody: for public reads (keys, profiles, credential checks)."""
    with _session(request) as db:
        yield ReviewService(db, request.app.state.settings)


P = Annotated[ReviewService, Depends(_public_service)]


def one_hop(route: Callable[..., Any]) -> Callable[..., Any]:
    """A sync API route whose first parameter is ``s: S`` (the token's owner) or ``p: P``
    (nobody), run with its database session and token check in ONE worker thread.

    As a sync dependency plus a sync route, FastAPI hops to the thread pool three times per
    request (the dependency's start, the route, the dependency's end); under load those hops
    cost ~1 ms of CPU each request. The wrapper is an async route with the same parameters
    (the first replaced by the request) that makes one hop; errors are raised as before."""
    hints = get_type_hints(route, include_extras=True)
    params = list(inspect.signature(route).parameters.values())
    first = hints[params[0].name]
    public = first is P
    if not public and first is not S:
        raise TypeError(f"{route.__name__}: the first parameter must be s: S or p: P")
    rest = [p.replace(annotation=hints.get(p.name, p.annotation)) for p in params[1:]]
    name = params[0].name

    async def hop(request: Request, **kwargs: Any) -> Any:
        def work() -> Any:
            with _session(request) as db:
                svc = (ReviewService(db, request.app.state.settings) if public
                       else _api_user_service(request, db))
                return route(**{name: svc}, **kwargs)

        return await run_in_threadpool(work)

    hop.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter("request", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                           annotation=Request), *rest],
        return_annotation=hints.get("return", inspect.Signature.empty))
    hop.__name__, hop.__qualname__, hop.__doc__ = route.__name__, route.__qualname__, route.__doc__
    return hop
