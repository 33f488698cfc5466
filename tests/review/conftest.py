"""Fixtures for the review platform: every database test runs on SQLite and on PostgreSQL.

PostgreSQL comes from ``ICML25_TEST_PG_URL`` (default: the local server on 127.0.0.1:5432,
database ``test``, user ``postgres``). A fresh database is created for the test session and
dropped afterwards. If the server is unreachable the PostgreSQL variants are skipped, unless
``ICML25_REQUIRE_PG=1`` (then they fail).
"""

from __future__ import annotations

import os
import re
import uuid
import warnings

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")

from review_helpers import fast_settings  # noqa: E402
from sqlalchemy import text  # noqa: E402

from icml25.review.db import Settings, make_engine, make_sessionmaker  # noqa: E402
from icml25.review.models import Base  # noqa: E402

PG_ADMIN_URL = os.environ.get("ICML25_TEST_PG_URL",
                              "postgresql+psycopg://postgres@127.0.0.1:5432/test")
BACKENDS = ["sqlite", "postgresql"]


def _pg_unavailable(exc: Exception) -> None:
    if os.environ.get("ICML25_REQUIRE_PG") == "1":
        pytest.fail(f"PostgreSQL required but unreachable at {PG_ADMIN_URL}: {exc}")
    pytest.skip(f"PostgreSQL unreachable at {PG_ADMIN_URL}: {exc}")


class PgServer:
    """Creates throw-away databases on the test server (dropped at session end)."""

    def __init__(self) -> None:
        self.admin = make_engine(PG_ADMIN_URL).execution_options(isolation_level="AUTOCOMMIT")
        self.created: list[str] = []
        self.error: Exception | None = None
        try:
            with self.admin.connect() as c:
                c.execute(text("select 1"))
        except Exception as exc:  # noqa: BLE001 - any connection failure means "no server"
            self.error = exc

    def new_database(self, tag: str) -> str:
        if self.error:
            _pg_unavailable(self.error)
        name = f"icml25_review_{tag}_{uuid.uuid4().hex[:10]}"
        with self.admin.connect() as c:
            c.execute(text(f'CREATE DATABASE "{name}"'))
            # throw-away test data: no need to wait for WAL flushes on every commit
            c.execute(text(f'ALTER DATABASE "{name}" SET synchronous_commit = off'))
        self.created.append(name)
        return re.sub(r"/[^/]*$", f"/{name}", PG_ADMIN_URL)

    def close(self) -> None:
        with self.admin.connect() as c:
            for name in self.created:
                c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        self.admin.dispose()


@pytest.fixture(scope="session")
def pg_server():
    server = PgServer()
    yield server
    if not server.error:
        server.close()


@pytest.fixture(scope="session")
def pg_engine(pg_server):
    """One fresh PostgreSQL database (schema from the models) for the whole session."""
    engine = make_engine(pg_server.new_database("s"))
    Base.metadata.create_all(engine)
    yield engine
    engine.dispose()


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    return request.param


@pytest.fixture
def engine(backend, tmp_path, request):
    """A clean database on the requested backend."""
    if backend == "sqlite":
        eng = make_engine(f"sqlite:///{tmp_path / 'review.sqlite3'}")
        Base.metadata.create_all(eng)
        yield eng
        eng.dispose()
        return
    eng = request.getfixturevalue("pg_engine")
    _empty_tables(eng)
    yield eng


LOCK_TIMEOUT = "20s"  # a TRUNCATE that waits longer is blocked by a connection a test left open


class LeftOpenWarning(UserWarning):
    """An earlier test left a PostgreSQL session idle in a transaction, holding locks."""


def _empty_tables(eng) -> None:
    """TRUNCATE every table within ``LOCK_TIMEOUT``, else name the sessions that block it.

    A session idle in a transaction can only be one an earlier test left open: it is reported
    (a :class:`LeftOpenWarning` with its ``pg_stat_activity`` row), ended, and the TRUNCATE
    retried once. A blocker that is still working fails the test with the same report."""
    from sqlalchemy.exc import OperationalError

    names = ", ".join(f'"{t.name}"' for t in Base.metadata.sorted_tables)
    for attempt in range(2):
        try:
            with eng.begin() as c:
                c.execute(text(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'"))
                c.execute(text(f"TRUNCATE {names} RESTART IDENTITY CASCADE"))
            return
        except OperationalError as exc:
            if "lock timeout" not in str(exc).lower():
                raise
        report = _lock_holders(eng)
        if attempt == 0 and _end_idle_lock_holders(eng):
            warnings.warn(LeftOpenWarning(f"an earlier test left a session open; ended it:\n"
                                          f"{report}"), stacklevel=2)
            continue
        pytest.fail(f"TRUNCATE waited {LOCK_TIMEOUT} for a lock; sessions holding locks on the "
                    f"test database:\n{report}")


def _end_idle_lock_holders(eng) -> int:
    """End this database's other sessions that hold locks while idle in a transaction."""
    query = text("""
        SELECT count(pg_terminate_backend(a.pid)) FROM pg_stat_activity a
        WHERE a.datname = current_database() AND a.pid <> pg_backend_pid()
          AND a.state LIKE 'idle in transaction%'
          AND EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND l.granted)""")
    with eng.connect() as c:
        return int(c.execute(query).scalar() or 0)


def _lock_holders(eng) -> str:
    """Other sessions of this database that hold locks, from ``pg_stat_activity``."""
    query = text("""
        SELECT a.pid, a.state, a.application_name, now() - a.state_change AS in_state_for,
               string_agg(DISTINCT l.mode, ',') AS modes, left(a.query, 200) AS last_query
        FROM pg_stat_activity a JOIN pg_locks l ON l.pid = a.pid AND l.granted
        WHERE a.datname = current_database() AND a.pid <> pg_backend_pid()
        GROUP BY a.pid, a.state, a.application_name, a.state_change, a.query""")
    with eng.connect() as c:
        rows = c.execute(query).all()
    return "\n".join(f"  pid {r.pid} ({r.state}, {r.in_state_for} in that state, "
                     f"{r.application_name or 'no name'}), locks {r.modes}: {r.last_query!r}"
                     for r in rows) or "  (none left: the blocker ended meanwhile)"


@pytest.fixture
def settings(engine, tmp_path) -> Settings:
    return fast_settings(engine.url.render_as_string(hide_password=False), tmp_path)


@pytest.fixture
def db(engine):
    session = make_sessionmaker(engine)()
    yield session
    session.close()


@pytest.fixture
def client(settings, engine):
    from fastapi.testclient import TestClient

    from icml25.review.web import create_app

    with TestClient(create_app(settings, engine)) as c:
        yield c
