"""Database engine, settings and migrations.

SQLite by default (WAL journal, foreign keys on); PostgreSQL when ``ICML25_DATABASE_URL`` names
one (``postgresql://...`` is read as the psycopg 3 driver).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker

DEFAULT_HOME = Path(os.environ.get("ICML25_REVIEW_HOME", "~/.icml25-review")).expanduser()


def normalise_url(url: str) -> str:
    """Accept ``postgres://`` / ``postgresql://`` and pick the psycopg 3 driver."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    return url


@dataclass
class Settings:
    """Runtime settings of one platform instance."""

    database_url: str = ""
    upload_dir: Path = field(default_factory=lambda: DEFAULT_HOME / "uploads")
    secure_cookies: bool = False  # set True behind HTTPS
    session_hours: int = 12
    login_max_failures: int = 5  # per e-mail address within the window
    login_max_failures_per_ip: int = 100  # generous: many users may share a proxy address
    max_request_bytes: int = 64 * 1024 * 1024  # refuse larger request bodies up front (413)
    login_window_minutes: int = 15
    smtp_host: str = ""
    smtp_port: int = 25
    mail_from: str = "noreply@icml25-review.invalid"
    # argon2 cost; tests lower it, production keeps the argon2-cffi defaults
    argon2_time_cost: int = 3
    argon2_memory_kib: int = 65536
    # how often the server advances venues whose phase deadline passed (0: never)
    tick_seconds: float = 60.0

    @classmethod
    def from_env(cls, **overrides: object) -> Settings:
        """Settings from ``ICML25_*`` environment variables, then ``overrides``."""
        home = Path(os.environ.get("ICML25_REVIEW_HOME", str(DEFAULT_HOME))).expanduser()
        s = cls(
            database_url=os.environ.get("ICML25_DATABASE_URL", ""),
            upload_dir=Path(os.environ.get("ICML25_UPLOAD_DIR", str(home / "uploads"))),
            secure_cookies=os.environ.get("ICML25_SECURE_COOKIES", "") == "1",
            smtp_host=os.environ.get("ICML25_SMTP_HOST", ""),
            tick_seconds=float(os.environ.get("ICML25_TICK_SECONDS", "60")),
        )
        if not s.database_url:
            s.database_url = f"sqlite:///{home / 'review.sqlite3'}"
        for key, value in overrides.items():
            if value is not None:
                setattr(s, key, value)
        s.database_url = normalise_url(s.database_url)
        return s


def make_engine(url: str) -> Engine:
    """Create an engine; SQLite gets WAL and enforced foreign keys on every connection."""
    url = normalise_url(url)
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if path and path != ":memory:":
            Path(path).expanduser().parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn, _record):  # noqa: ANN001
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")  # safe with WAL; commits stay fast
            cur.execute("PRAGMA busy_timeout=30000")
            cur.close()

        return engine
    return create_engine(url, pool_pre_ping=True)


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
