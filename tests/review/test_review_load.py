"""Load without collapse: the settings in one place, the admission control in front
of the connection pool (against a toy ASGI app), and a burst of 500 concurrent review submits on
``icml25 review serve --workers 2`` (loopback only, bounded in count and time), followed by a
SIGKILL mid-burst, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
import time
from pathlib import Path
from typing import get_args

import pytest
from sqlalchemy import exc as sa_exc
from sqlalchemy import select, text

from icml25.review import models as m
from icml25.review.admission import LIGHT_PATHS, Admission, install, is_transient_db_error
from icml25.review.db import make_engine, make_sessionmaker
from icml25.review.settings import Settings

ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------------- settings
def _other_value(name: str, field, tmp_path: Path) -> tuple[str, object]:
    """A valid non-default value for one setting: (environment string, expected value)."""
    default = field.default
    if name == "database_url":
        return "postgresql://u@db.example/review", "postgresql+psycopg://u@db.example/review"
    if field.annotation in (Path, "Path"):
        return str(tmp_path / name), tmp_path / name
    if isinstance(default, bool):
        return ("0" if default else "1"), not default
    if isinstance(default, int):
        return str(default + 3), default + 3
    if isinstance(default, float):
        return str(default + 1.5), default + 1.5
    choices = get_args(field.annotation)  # a Literal: another of its values
    if choices:
        other = next(c for c in choices if c != default)
        return other, other
    return f"value-of-{name}", f"value-of-{name}"


def test_every_setting_is_read_from_its_environment_variable(monkeypatch, tmp_path):
    expected = {}
    for name, field in Settings.model_fields.items():
        env, value = _other_value(name, field, tmp_path)
        monkeypatch.setenv(f"ICML25_{name.upper()}", env)
        expected[name] = value
    s = Settings.from_env()
    assert {k: getattr(s, k) for k in expected} == expected


def test_direct_construction_ignores_the_environment_and_keeps_the_defaults(monkeypatch):
    monkeypatch.setenv("ICML25_SESSION_HOURS", "99")
    monkeypatch.setenv("ICML25_DB_POOL_SIZE", "77")
    s = Settings(database_url="sqlite:///x.sqlite3", argon2_time_cost=1)
    assert (s.session_hours, s.db_pool_size, s.argon2_time_cost) == (12, 10, 1)
    env = Settings.from_env(session_hours=5, database_url=None)
    assert (env.session_hours, env.db_pool_size) == (5, 77)  # overrides beat the environment
    assert env.database_url.startswith("sqlite:///")  # empty URL: SQLite in the review home
    # documented limit (the old default was 100)
    assert Settings().login_max_failures_per_ip == 20
    from icml25.review.db import Settings as FromDb

    assert FromDb is Settings
    with pytest.raises(ValueError):
        Settings(no_such_setting=1)
    s.max_request_bytes = 10_000  # tests adjust settings in place
    assert s.max_request_bytes == 10_000


def test_every_setting_is_documented():
    doc = "".join((ROOT / "docs" / name).read_text()
                  for name in ("review-operators.md", "review-onboarding.md"))
    missing = [env for _, env, _, _ in Settings.env_table() if f"`{env}`" not in doc]
    assert not missing, ("docs/review-operators.md and docs/review-onboarding.md do not list "
                         f"{missing}")


def test_engine_pool_and_sqlite_pragmas_come_from_settings(tmp_path):
    s = Settings(db_pool_size=3, db_max_overflow=4, db_pool_timeout=1.5, sqlite_busy_timeout=2)
    pg = make_engine("postgresql://nobody@127.0.0.1:1/none", s)  # no connection is made
    assert (pg.pool.size(), pg.pool.timeout(), pg.pool._max_overflow) == (3, 1.5, 4)
    lite = make_engine(f"sqlite:///{tmp_path / 'p.sqlite3'}", s)
    assert (lite.pool.size(), lite.pool.timeout()) == (3, 1.5)
    with lite.connect() as c:
        assert c.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert c.execute(text("PRAGMA busy_timeout")).scalar() == 2000
    pg.dispose()
    lite.dispose()


# ---------------------------------------------------------------------- admission, toy app
class Toy:
    """An ASGI app whose requests wait for ``gate``; records how many run at once."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.in_flight = self.max_in_flight = 0
        self.order: list[str] = []
        self.state = "toy state"

    async def __call__(self, scope, receive, send) -> None:  # noqa: ANN001
        if scope["type"] != "http":
            self.order.append(scope["type"])
            return
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        self.order.append(scope["path"])
        try:
            if scope["path"] not in LIGHT_PATHS:
                await self.gate.wait()
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"ok"})
        finally:
            self.in_flight -= 1


async def call(app, path: str = "/x", method: str = "POST") -> tuple[int, dict, float]:  # noqa: ANN001
    sent = []
    t0 = time.perf_counter()

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message) -> None:  # noqa: ANN001
        sent.append(message)

    await app({"type": "http", "method": method, "path": path, "headers": []}, receive, send)
    start = next(x for x in sent if x["type"] == "http.response.start")
    return start["status"], dict(start["headers"]), time.perf_counter() - t0


def test_admission_bounds_requests_in_flight_and_refuses_beyond_the_queue_at_once():
    async def scenario() -> None:
        toy = Toy()
        app = Admission(toy, max_concurrent=3, max_queued=2, queue_timeout=10, retry_after=7)
        tasks = [asyncio.ensure_future(call(app, f"/r{i}")) for i in range(10)]
        await asyncio.sleep(0.05)
        refused = [t.result() for t in tasks if t.done()]
        assert len(refused) == 5 and all(st == 503 for st, _, _ in refused)
        assert all(h[b"retry-after"] == b"7" and dt < 1 for _, h, dt in refused)
        assert toy.in_flight == 3
        toy.gate.set()
        done = [await t for t in tasks]
        assert sorted(st for st, _, _ in done) == [200] * 5 + [503] * 5
        assert toy.max_in_flight == 3
        assert toy.order == ["/r0", "/r1", "/r2", "/r3", "/r4"]  # queued ones in FIFO order
        assert app.lane.in_flight == 0 and not app.lane.waiters
        assert (await call(app))[0] == 200  # nothing leaked

    asyncio.run(scenario())


def test_admission_queue_wait_is_bounded_by_the_timeout():
    async def scenario() -> None:
        toy = Toy()
        app = Admission(toy, max_concurrent=1, max_queued=5, queue_timeout=0.2)
        first = asyncio.ensure_future(call(app))
        await asyncio.sleep(0.01)
        status, headers, waited = await call(app)
        assert status == 503 and b"retry-after" in headers and 0.15 < waited < 2
        toy.gate.set()
        assert (await first)[0] == 200
        assert app.lane.in_flight == 0

    asyncio.run(scenario())


def test_light_lane_answers_the_login_page_while_the_main_lane_is_full():
    async def scenario() -> None:
        toy = Toy()
        app = Admission(toy, max_concurrent=1, max_concurrent_light=2, max_queued=0)
        blocked = asyncio.ensure_future(call(app, "/api/v1/submissions/1/review"))
        await asyncio.sleep(0.01)
        assert (await call(app, "/s/1"))[0] == 503  # main lane full, no queue
        assert (await call(app, "/login", "POST"))[0] == 503  # a login attempt is not light
        status, _, dt = await call(app, "/login", "GET")
        assert status == 200 and dt < 1
        assert (await call(app, "/register", "HEAD"))[0] == 200
        toy.gate.set()
        assert (await blocked)[0] == 200

    asyncio.run(scenario())


def test_a_cancelled_waiter_does_not_leak_its_slot():
    async def scenario() -> None:
        toy = Toy()
        app = Admission(toy, max_concurrent=1, max_queued=5, queue_timeout=10)
        first = asyncio.ensure_future(call(app))
        await asyncio.sleep(0.01)
        waiter = asyncio.ensure_future(call(app))
        await asyncio.sleep(0.01)
        waiter.cancel()
        await asyncio.sleep(0.01)
        assert not app.lane.waiters
        toy.gate.set()
        await first
        assert app.lane.in_flight == 0
        assert [(await call(app))[0] for _ in range(3)] == [200] * 3

    asyncio.run(scenario())


def test_admission_passes_other_scopes_and_attributes_through_and_zero_means_no_limit():
    async def scenario() -> None:
        toy = Toy()
        app = Admission(toy, max_concurrent=0)
        await app({"type": "lifespan"}, None, None)
        assert toy.order == ["lifespan"] and app.state == "toy state"
        toy.gate.set()
        assert [st for st, _, _ in await asyncio.gather(*(call(app) for _ in range(50)))] \
            == [200] * 50

    asyncio.run(scenario())


def test_transient_database_errors_are_answered_503_and_others_stay_500():
    import psycopg.errors
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    def op_error(orig: Exception) -> sa_exc.OperationalError:
        return sa_exc.OperationalError("UPDATE reviews ...", {}, orig)

    assert is_transient_db_error(sa_exc.TimeoutError("QueuePool limit ... reached"))
    assert is_transient_db_error(op_error(sqlite3.OperationalError(
        "database is locked")))
    assert is_transient_db_error(op_error(psycopg.errors.DeadlockDetected("deadlock")))
    assert not is_transient_db_error(sa_exc.IntegrityError("INSERT", {}, ValueError("dup")))
    assert not is_transient_db_error(ValueError("no"))

    app, api = FastAPI(), FastAPI()

    @app.get("/pool")
    def pool() -> None:
        raise sa_exc.TimeoutError("QueuePool limit of size 5 overflow 10 reached")

    @api.get("/locked")
    def locked() -> None:
        raise op_error(sqlite3.OperationalError("database is locked"))

    @api.get("/dup")
    def dup() -> None:
        raise sa_exc.IntegrityError("INSERT", {}, ValueError("duplicate key"))

    app.mount("/api/v1", api)
    wrapped = install(app, Settings(retry_after_seconds=3))
    with TestClient(wrapped, raise_server_exceptions=False) as c:
        r = c.get("/pool")
        assert r.status_code == 503 and r.headers["retry-after"] == "3"
        r = c.get("/api/v1/locked")
        assert r.status_code == 503 and r.json()["detail"].startswith("the server is busy")
        assert c.get("/api/v1/dup").status_code == 500


def test_create_app_is_wrapped_in_admission_control(settings, engine):
    from fastapi.testclient import TestClient

    from icml25.review.web import create_app

    app, chain = create_app(settings, engine), []
    while app is not None:
        chain.append(type(app).__name__)
        app = app.__dict__.get("app")
    assert "Admission" in chain, chain
    with TestClient(create_app(settings, engine)) as c:
        assert c.get("/login").status_code == 200


# ---------------------------------------------------------------------- burst on a real server
def _load_benchmark():  # noqa: ANN202
    sys.path.insert(0, str(ROOT / "benchmarks"))  # spawned probe processes import it by name
    import review_load

    return review_load


BURST = 500  # the burst target's size; takes ~5 s per backend on a 2-core machine


@pytest.fixture(params=["sqlite", "postgresql"])
def burst_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'burst.sqlite3'}"
    return request.getfixturevalue("pg_server").new_database("burst")


def _reviews(url: str, venue: str = "load-rev") -> dict[tuple[int, int], m.Review]:
    engine = make_engine(url)
    db = make_sessionmaker(engine)()
    try:
        v = db.scalar(select(m.Venue).where(m.Venue.slug == venue))
        rows = db.scalars(select(m.Review).join(m.Submission).where(
            m.Submission.venue_id == v.id)).all()
        return {(r.submission_id, r.reviewer_id): r for r in rows}
    finally:
        db.close()
        engine.dispose()


def _marker(r: m.Review) -> str:
    fields = {r.summary, r.strengths, r.questions, r.weaknesses}
    assert len(fields) == 1, f"half-written review {r.id}: {fields}"
    return fields.pop()


def test_burst_of_500_review_submits_on_two_workers_then_sigkill(burst_url, tmp_path):
    """The burst target: 0 responses with status 500, >= 95 % acknowledged or a fast 503 with
    Retry-After, no request waits 30 s, GET /login p95 < 1 s during the burst; then a second
    burst is cut by SIGKILL and after a restart every acknowledged write is there, whole."""
    rl = _load_benchmark()
    plan = rl.setup(burst_url, tmp_path, 8)
    server, port = rl.start_server(burst_url, tmp_path / "up", 2)
    try:
        uid = {}  # token -> reviewer id
        for token in {t for t, _ in plan["writes"]}:
            status, _, body = asyncio.run(rl.http(port, "GET", "/api/v1/me",
                                                  {"Authorization": f"Bearer {token}"}))
            assert status == 200
            uid[token] = json.loads(body)["id"]
        res = rl.run_burst(port, plan, BURST)
        rl.report_burst(res, BURST, 1, 2, burst_url.split(":")[0])  # shown with -s / failure
        st = res["statuses"]
        assert sum(st.values()) == BURST
        assert st.get(500, 0) == 0, st
        assert st.get(200, 0) + st.get(503, 0) >= 0.95 * BURST, st
        assert st.get(200, 0) >= 50, st  # it does work, not only refuse
        assert res["no_retry_after"] == 0
        assert max(x for v in res["lat"].values() for x in v) < 20, "a request waited >= 20 s"
        login = sorted(t for t, _ in res["login"])
        assert len(login) >= 5 and all(s == 200 for _, s in res["login"])
        assert login[int(0.95 * (len(login) - 1))] < 1.0, f"GET /login p95 {login[-1]:.2f} s"
        # every write of the burst that committed was acknowledged (refusals touch nothing)
        acked1: dict[tuple[int, int], set[str]] = {}
        for token, sid, marker in res["acked"]:
            acked1.setdefault((sid, uid[token]), set()).add(marker)
        rows = _reviews(burst_url)
        for pair, markers in acked1.items():
            assert rows[pair].submitted and _marker(rows[pair]) in markers

        # second burst, cut short by SIGKILL once some writes are acknowledged
        acked2: list = []

        async def cut() -> None:
            task = asyncio.ensure_future(rl.burst(port, plan, 200, timeout=10, tag="k",
                                                  acked=acked2))
            while len(acked2) < 20 and not task.done():
                await asyncio.sleep(0.005)
            rl.kill_server(server)
            await task

        asyncio.run(cut())
        assert len(acked2) >= 20
    finally:
        rl.kill_server(server)
    server, port = rl.start_server(burst_url, tmp_path / "up", 1)
    try:
        sent: dict[tuple[int, int], set[str]] = {}
        for i in range(200):
            token, sid = plan["writes"][i % len(plan["writes"])]
            sent.setdefault((sid, uid[token]), set()).add(f"burstk-{i}")
        rows = _reviews(burst_url)
        for r in rows.values():
            _marker(r)  # no review anywhere is half written
        for token, sid, marker in acked2:
            got = _marker(rows[(sid, uid[token])])
            assert got in sent[(sid, uid[token])], f"acknowledged {marker} lost (found {got})"
        token, sid = plan["writes"][0]
        assert asyncio.run(rl.http(port, "GET", f"/api/v1/submissions/{sid}",
                                   {"Authorization": f"Bearer {token}"}))[0] == 200
    finally:
        rl.kill_server(server)
