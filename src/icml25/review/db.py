"""Database engine and migrations (the settings live in :mod:`icml25.review.settings` and are
re-exported here).

SQLite by default (WAL journal, foreign keys on); PostgreSQL when ``ICML25_DATABASE_URL`` names
one (``postgresql://...`` is read as the psycopg 3 driver).
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker

from icml25.review.settings import DEFAULT_HOME, Settings, normalise_url

__all__ = ["DEFAULT_HOME", "Settings", "make_engine", "make_sessionmaker", "normalise_url",
           "upgrade", "downgrade", "alembic_config"]


def make_engine(url: str, settings: Settings | None = None) -> Engine:
    """Create an engine with the pool sized by ``settings`` (default: ``Settings.from_env()``);
    SQLite gets WAL, enforced foreign keys and ``sqlite_busy_timeout`` on every connection.

    A checkout waits at most ``db_pool_timeout`` seconds for a free connection (then
    ``sqlalchemy.exc.TimeoutError``, which the web app answers with 503)."""
    s = settings if settings is not None else Settings.from_env()
    url = normalise_url(url)
    pool = {"pool_size": s.db_pool_size, "max_overflow": s.db_max_overflow,
            "pool_timeout": s.db_pool_timeout}
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        memory = not path or path == ":memory:" or "mode=memory" in url
        if not memory:
            Path(path).expanduser().parent.mkdir(parents=True, exist_ok=True)
        busy_ms = int(s.sqlite_busy_timeout * 1000)
        engine = create_engine(url, connect_args={"check_same_thread": False,
                                                  "timeout": s.sqlite_busy_timeout},
                               **({} if memory else pool))

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn, _record):  # noqa: ANN001
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")  # safe with WAL; commits stay fast
            cur.execute(f"PRAGMA busy_timeout={busy_ms}")
            cur.close()

        return engine
    return create_engine(url, pool_pre_ping=True, **pool)


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    """Session factory (objects stay readable after commit)."""
    return sessionmaker(engine, expire_on_commit=False)


def alembic_config(url: str):  # noqa: ANN201
    """An Alembic config pointing at the packaged migrations."""
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(Path(__file__).parent / "migrations"))
    cfg.set_main_option("sqlalchemy.url", normalise_url(url).replace("%", "%%"))
    return cfg


def upgrade(url: str, revision: str = "head") -> None:
    """Apply migrations up to ``revision`` (creates the schema on an empty database)."""
    from alembic import command

    command.upgrade(alembic_config(url), revision)


def downgrade(url: str, revision: str = "base") -> None:
    """Undo migrations down to ``revision``."""
    from alembic import command

    command.downgrade(alembic_config(url), revision)
