"""The app factory: pages at ``/``, the JSON API at ``/api/v1``, one error mapping, security
headers, and the background loop that ends phases whose deadline passed."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from sqlalchemy import Engine
from starlette.concurrency import run_in_threadpool

from icml25.review.db import Settings, make_engine, make_sessionmaker
from icml25.review.errors import HTTP_STATUS
from icml25.review.jobs import EmbeddedRunner, runs_embedded
from icml25.review.security import format_size
from icml25.review.service import ReviewService
from icml25.review.services.mailing import daily_scheduler
from icml25.review.web.api import api
from icml25.review.web.deps import TEMPLATES, CsrfError
from icml25.review.web.pages import pages
from icml25.review.web.people_pages import people_pages
from icml25.review.web.role_pages import role_pages
from icml25.review.web.tool_pages import tool_pages

log = logging.getLogger("icml25.review")


def create_app(settings: Settings | None = None, engine: Engine | None = None) -> FastAPI:
    """Build the ASGI app (pages at /, JSON API at /api/v1)."""
    settings = settings or Settings.from_env()
    engine = engine or make_engine(settings.database_url, settings)
    maker = make_sessionmaker(engine)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        loop = (asyncio.create_task(_deadline_loop(maker, settings))
                if settings.tick_seconds > 0 else None)
        runner = None
        if runs_embedded(settings):  # SQLite and no worker: this process runs the jobs
            runner = EmbeddedRunner(maker, settings,
                                    idle=daily_scheduler(maker, settings)).start()
        app.state.job_runner = runner
        yield
        if loop is not None:
            loop.cancel()
        if runner is not None:
            await run_in_threadpool(runner.close)

    app = FastAPI(title="icml25 review", docs_url=None, redoc_url=None, openapi_url=None,
                  lifespan=lifespan)
    app.state.settings, app.state.engine, app.state.maker = settings, engine, maker
    api_app = api(settings, maker)
    # the API first: a route table is matched in order, one route after the other, and the
    # API's requests (most of them under load) then skip the ~40 page routes
    app.mount("/api/v1", api_app)
    app.include_router(pages())
    app.include_router(tool_pages())  # the chair, reviewer and author tools
    app.include_router(role_pages())  # camera-ready, senior ACs, sub-reviewers
    app.include_router(people_pages())  # invitations, accounts, conflicts, mail
    _handlers(app, html=True)
    _handlers(api_app, html=False)
    from icml25.review.admission import install  # bounded concurrency, fast 503

    return SecurityHeaders(install(app, settings),  # type: ignore[return-value]
                           settings.max_request_bytes)


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


def _handlers(app: FastAPI, html: bool) -> None:
    """Every error the services raise becomes its 4xx status with the message for the user."""

    def reply(request: Request, status: int, message: str) -> Response:
        if not html or request.url.path.startswith("/api/"):
            return JSONResponse({"detail": message}, status_code=status)
        return TEMPLATES.TemplateResponse(request, "error.html", {
            "request": request, "status": status, "message": message}, status_code=status)

    for exc_type, status in (HTTP_STATUS | {CsrfError: 403}).items():
        app.add_exception_handler(
            exc_type, lambda request, exc, status=status: reply(request, status, str(exc)))
    if html:
        # a form field of the wrong type or value: a page that says which (the API keeps 422)
        def invalid_form(request: Request, exc: RequestValidationError) -> Response:
            fields = sorted({str(e["loc"][-1]) for e in exc.errors() if e.get("loc")})
            return reply(request, 400, "please check the form: invalid "
                         + (", ".join(fields) or "input"))

        app.add_exception_handler(RequestValidationError, invalid_form)


SECURITY_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
    (b"content-security-policy",
     b"default-src 'self'; style-src 'self' 'unsafe-inline'; script-src 'self'; "
     b"object-src 'none'; frame-ancestors 'none'"),
]


DOCS_HEADERS = [(k, v) for k, v in SECURITY_HEADERS if k != b"content-security-policy"] + [
    (b"content-security-policy",
     b"default-src 'self'; style-src 'self' 'unsafe-inline'; script-src 'self' 'unsafe-inline'; "
     b"img-src 'self' data:; object-src 'none'; frame-ancestors 'none'"),
]


class SecurityHeaders:
    """Plain ASGI wrapper adding security headers to every HTTP response (cheaper than
    Starlette's BaseHTTPMiddleware) and refusing oversized bodies up front (413). Attribute
    access falls through to the wrapped app."""

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
                response = JSONResponse(
                    {"detail": f"request too large (limit {format_size(self.max_request_bytes)})"},
                    status_code=413)
                await response(scope, receive, send)
                return
        # the interactive API docs (Swagger UI, served from an installed package) start with one
        # inline script; they show no user data
        docs = scope.get("path", "").startswith("/api/v1/docs")
        headers = DOCS_HEADERS if docs else SECURITY_HEADERS

        async def send_with_headers(message) -> None:  # noqa: ANN001
            if message["type"] == "http.response.start":
                names = {k.lower() for k, _ in message.get("headers", [])}
                message.setdefault("headers", [])
                message["headers"] = list(message["headers"]) + [
                    (k, v) for k, v in headers if k not in names]
            await send(message)

        await self.app(scope, receive, send_with_headers)
