"""Admission control: a bounded number of requests in flight per worker, a short queue, and a
fast ``503`` with ``Retry-After`` beyond that.

Why it is needed. Sync routes and sync dependencies run in anyio's thread pool (40 threads per
process). A request takes a connection in its first dependency (the session lookup) and needs a
*second* thread for the route itself; under a burst every thread ends up blocked waiting for a
connection while the requests holding the connections wait for a thread, so nothing moves
until the pool timeout (30 s by default) fails them all with 500 — and ``GET /login``, which
needs a thread too, waits just as long. Bounding the requests in flight below both the pool
size and the thread count removes that deadlock; the requests beyond the bound wait in a FIFO
queue for at most ``queue_timeout_seconds`` (at most ``max_queued_requests`` of them) and are
otherwise answered ``503 Service Unavailable`` with ``Retry-After`` at once.

Cheap pages (``GET``/``HEAD`` of :data:`LIGHT_PATHS`: the login and registration forms) have a
lane of their own, so they stay fast while the main lane is full.

:func:`install` wraps a FastAPI app and also maps the transient database errors that remain
possible (pool timeout, SQLite busy, PostgreSQL deadlock / lock timeout / too many
connections) to the same 503 instead of 500. Plain ASGI (no ``BaseHTTPMiddleware``); asyncio.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

log = logging.getLogger("icml25.review.admission")

#: GET/HEAD paths served in the light lane (no database work for an anonymous visitor)
LIGHT_PATHS: frozenset[str] = frozenset({"/login", "/register"})


class Lane:
    """At most ``limit`` holders at once; up to ``max_queue`` more wait (FIFO) for at most
    ``timeout`` seconds. ``limit`` 0 means no limit. One instance per event loop."""

    def __init__(self, limit: int, max_queue: int, timeout: float) -> None:
        self.limit, self.max_queue, self.timeout = limit, max_queue, timeout
        self.in_flight = 0
        self.waiters: deque[asyncio.Future[None]] = deque()
        self.rejected = 0
        self.served = 0

    async def acquire(self) -> bool:
        """True with a slot held (call :meth:`release` after), False when refused."""
        if self.limit <= 0:
            self.in_flight += 1
            return True
        if self.in_flight < self.limit and not self.waiters:
            self.in_flight += 1
            return True
        if len(self.waiters) >= self.max_queue or self.timeout <= 0:
            self.rejected += 1
            return False
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiters.append(fut)
        try:
            await asyncio.wait((fut,), timeout=self.timeout)  # never cancels ``fut`` itself
        except BaseException:  # cancelled while waiting
            self._leave(fut)
            raise
        if fut.done():
            return True  # a finishing request handed its slot over: in_flight is unchanged
        self._leave(fut)
        self.rejected += 1
        return False

    def _leave(self, fut: asyncio.Future[None]) -> None:
        if fut.done():  # the slot was handed over just now: give it on
            self.release()
            return
        fut.cancel()
        try:
            self.waiters.remove(fut)
        except ValueError:
            pass

    def release(self) -> None:
        """Give the slot to the oldest live waiter, or free it."""
        self.served += 1
        while self.waiters:
            fut = self.waiters.popleft()
            if not fut.done():
                fut.set_result(None)
                return
        self.in_flight -= 1


class Admission:
    """ASGI middleware bounding the HTTP requests in flight (one instance per worker process).

    ``light`` decides which requests use the light lane (default: GET/HEAD of
    :data:`LIGHT_PATHS`). Attribute access falls through to the wrapped app, so
    ``wrapped.state`` still works."""

    def __init__(self, app: ASGIApp, *, max_concurrent: int = 12, max_concurrent_light: int = 4,
                 max_queued: int = 100, queue_timeout: float = 5.0, retry_after: int = 2,
                 light: Callable[[Scope], bool] | None = None,
                 min_threads: int | None = None) -> None:
        self.app = app
        self.lane = Lane(max_concurrent, max_queued, queue_timeout)
        self.light_lane = Lane(max_concurrent_light, max_queued, queue_timeout)
        self.retry_after = retry_after
        self.is_light = light or default_light
        # enough worker threads that every admitted request gets one (each may use two in turn)
        self.min_threads = (min_threads if min_threads is not None
                            else max_concurrent + max_concurrent_light + 8)
        self._threads_checked = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.app, name)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if not self._threads_checked:
            self._threads_checked = True
            _ensure_threads(self.min_threads)
        lane = self.light_lane if self.is_light(scope) else self.lane
        if not await lane.acquire():
            await busy_response(scope, send, self.retry_after)
            return
        try:
            await self.app(scope, receive, send)
        finally:
            lane.release()


def default_light(scope: Scope) -> bool:
    return scope.get("method") in ("GET", "HEAD") and scope.get("path") in LIGHT_PATHS


def _ensure_threads(n: int) -> None:
    """Raise anyio's default thread limit (40) to ``n`` if it is lower."""
    if n <= 0:
        return
    try:
        import anyio.to_thread

        limiter = anyio.to_thread.current_default_thread_limiter()
        if limiter.total_tokens < n:
            limiter.total_tokens = n
    except Exception:  # noqa: BLE001 - not under anyio (plain asyncio server): nothing to do
        log.debug("thread limiter not adjusted", exc_info=True)


async def busy_response(scope: Scope, send: Send, retry_after: int) -> None:
    """``503`` with ``Retry-After`` (JSON under /api, plain text elsewhere)."""
    msg = f"the server is busy; please retry in {retry_after} s"
    if str(scope.get("path", "")).startswith("/api/"):
        body, ctype = json.dumps({"detail": msg}).encode(), b"application/json"
    else:
        body, ctype = msg.encode(), b"text/plain; charset=utf-8"
    await send({"type": "http.response.start", "status": 503, "headers": [
        (b"content-type", ctype), (b"content-length", str(len(body)).encode()),
        (b"retry-after", str(retry_after).encode()), (b"cache-control", b"no-store")]})
    await send({"type": "http.response.body", "body": body})


# ---------------------------------------------------------------------- transient DB errors
_PG_TRANSIENT = {"40001", "40P01", "55P03", "57014", "53300", "53400"}
# serialization failure, deadlock, lock not available, statement timeout (query canceled),
# too many connections, configuration limit exceeded


def is_transient_db_error(exc: BaseException) -> bool:
    """Pool timeout, SQLite busy/locked, or a PostgreSQL error worth retrying."""
    from sqlalchemy import exc as sa_exc

    if isinstance(exc, sa_exc.TimeoutError):  # pool checkout timed out
        return True
    if isinstance(exc, sa_exc.DBAPIError):
        orig = exc.orig
        code = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
        if code in _PG_TRANSIENT:
            return True
        text = str(orig).lower()
        return "database is locked" in text or "database is busy" in text
    return False


def _transient_handler(retry_after: int) -> Callable[..., Any]:
    from starlette.responses import JSONResponse, PlainTextResponse

    async def handler(request: Any, exc: Exception) -> Any:
        if not is_transient_db_error(exc):
            raise exc
        log.warning("transient database error answered 503: %s", exc.__class__.__name__)
        msg = f"the server is busy; please retry in {retry_after} s"
        headers = {"Retry-After": str(retry_after), "Cache-Control": "no-store"}
        if request.url.path.startswith("/api/"):
            return JSONResponse({"detail": msg}, status_code=503, headers=headers)
        return PlainTextResponse(msg, status_code=503, headers=headers)

    return handler


def _apps(app: Any) -> Iterable[Any]:
    """The app and the Starlette/FastAPI apps mounted in it (each has its own handlers)."""
    yield app
    for route in getattr(app, "routes", []):
        sub = getattr(route, "app", None)
        if sub is not None and hasattr(sub, "add_exception_handler"):
            yield from _apps(sub)


def install(app: Any, settings: Any) -> Admission:
    """Wrap a FastAPI app: 503 for transient database errors (in it and its mounted apps),
    and :class:`Admission` sized from ``settings``."""
    from sqlalchemy import exc as sa_exc

    handler = _transient_handler(settings.retry_after_seconds)
    for a in _apps(app):
        a.add_exception_handler(sa_exc.TimeoutError, handler)
        a.add_exception_handler(sa_exc.DBAPIError, handler)
    return Admission(app, max_concurrent=settings.max_concurrent_requests,
                     max_concurrent_light=settings.max_concurrent_light_requests,
                     max_queued=settings.max_queued_requests,
                     queue_timeout=settings.queue_timeout_seconds,
                     retry_after=settings.retry_after_seconds)
