"""Every setting of the review platform, in one place (pydantic-settings).

Each field ``name`` is read from the environment variable ``ICML25_<NAME>`` by
:meth:`Settings.from_env` (what the server and the CLI use); ``Settings(...)`` built directly
takes only what it is given plus the defaults below, so tests stay independent of the caller's
environment. docs/review-operators.md ("Settings") has the table of all of them.
"""

from __future__ import annotations

import os
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

ENV_PREFIX = "ICML25_"
DEFAULT_HOME = Path(os.environ.get("ICML25_REVIEW_HOME", "~/.icml25-review")).expanduser()

# set while Settings.from_env builds an instance: only then is the environment a source
_READ_ENV: ContextVar[bool] = ContextVar("icml25_review_settings_read_env", default=False)


def normalise_url(url: str) -> str:
    """Accept ``postgres://`` / ``postgresql://`` and pick the psycopg 3 driver."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    return url


class Settings(BaseSettings):
    """Runtime settings of one platform instance (one worker process)."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="forbid",
                                      validate_assignment=True)

    # ---- storage
    review_home: Path = Field(default_factory=lambda: DEFAULT_HOME, description="folder of the "
                              "default SQLite database and uploads (`~/.icml25-review`)")
    database_url: str = Field(
        "", description="SQLAlchemy URL; `postgresql://...` uses psycopg 3; empty: SQLite file "
        "`review.sqlite3` in the review home (filled in by `from_env`)")
    upload_dir: Path = Field(default_factory=lambda data: Path(data["review_home"]) / "uploads",
                             description="where uploaded PDFs are stored")
    max_supplementary_bytes: int = Field(50 * 1024 * 1024, ge=1024, description="largest "
                                         "supplementary material (one zip per paper)")
    # ---- database pool and locks (per worker process)
    db_pool_size: int = Field(10, ge=1, description="connections kept open per worker")
    db_max_overflow: int = Field(10, ge=0, description="extra connections a worker may open "
                                 "under load (closed again when idle)")
    db_pool_timeout: float = Field(5.0, gt=0, description="seconds a request waits for a free "
                                   "connection before it is answered 503")
    sqlite_busy_timeout: float = Field(5.0, ge=0, description="SQLite: seconds a write waits "
                                       "for another writer's lock before it is answered 503")
    # ---- admission control (per worker process; see icml25/review/admission.py)
    max_concurrent_requests: int = Field(4, ge=0, description="requests a worker serves at "
                                         "once (0: no limit); keep it below "
                                         "`db_pool_size + db_max_overflow`. A worker runs "
                                         "one Python thread at a time: a few in flight hide "
                                         "the database round trips, more only contend for "
                                         "the interpreter lock")
    max_concurrent_light_requests: int = Field(4, ge=0, description="separate lane for cheap "
                                               "pages (GET /login, /register), so they stay "
                                               "fast while the main lane is full")
    max_queued_requests: int = Field(100, ge=0, description="requests that may wait for a "
                                     "slot; beyond that: 503 at once")
    queue_timeout_seconds: float = Field(5.0, ge=0, description="longest wait for a slot "
                                         "before 503")
    retry_after_seconds: int = Field(2, ge=0, description="`Retry-After` of a 503")
    # ---- web
    secure_cookies: bool = Field(False, description="set the `Secure` cookie flag (behind "
                                 "HTTPS)")
    session_hours: int = Field(12, ge=1, description="login session lifetime")
    public_url: str = Field("http://127.0.0.1:8000", description="the address users reach the "
                            "platform at, for links in e-mails (never taken from a request)")
    max_request_bytes: int = Field(64 * 1024 * 1024, ge=0, description="larger request bodies "
                                   "are refused up front (413)")
    # ---- login throttling
    login_max_failures: int = Field(5, ge=1, description="failed logins per e-mail address "
                                    "within the window")
    login_max_failures_per_ip: int = Field(20, ge=1, description="failed logins per client IP "
                                           "address within the window")
    login_window_minutes: int = Field(15, ge=1, description="throttling window")
    # ---- mail
    smtp_host: str = Field("", description="SMTP server for the outbox (empty: mail stays "
                           "queued)")
    smtp_port: int = Field(25, description="SMTP port")
    mail_from: str = Field("noreply@icml25-review.invalid", description="sender address")
    # ---- password hashing: tests lower it, production keeps the argon2-cffi defaults
    argon2_time_cost: int = Field(3, ge=1, description="argon2id iterations")
    argon2_memory_kib: int = Field(65536, ge=8, description="argon2id memory (KiB)")
    # ---- view cache (per worker process; see icml25/review/cache.py)
    view_cache: bool = Field(True, description="keep loaded submissions and per-account facts "
                             "between requests, checked against versions the database bumps "
                             "with every write (never stale)")
    # ---- background work
    tick_seconds: float = Field(60.0, ge=0, description="how often the server advances venues "
                                "whose phase deadline passed (0: never)")

    # ---- jobs (icml25/review/jobs.py) and people
    job_runner: Literal["auto", "embedded", "worker"] = Field("auto", description="who runs "
                            "background jobs (every e-mail, imports, conflict computation): "
                            "`worker` = separate `icml25 review worker` processes, `embedded` "
                            "= every `serve` process too, `auto` = embedded on SQLite, "
                            "workers on PostgreSQL")
    job_lease_seconds: float = Field(60.0, gt=0, description="a claimed job's lease: a job "
                                     "whose worker died is run again once it expires")
    job_poll_seconds: float = Field(1.0, gt=0, description="how often an idle worker looks "
                                    "for jobs")
    job_max_attempts: int = Field(5, ge=1, description="tries of a failing job before it is "
                                  "`failed` (then shown in the chairs' outbox)")
    job_backoff_seconds: float = Field(30.0, ge=0, description="wait before the first retry; "
                                       "doubled for each further one")
    conflict_years: int = Field(3, ge=0, description="past affiliations and co-authored "
                                "papers of the last this many years are conflicts")
    invitation_days: int = Field(30, ge=1, description="an invitation link expires after this "
                                 "many days (resending renews it)")
    reset_max_per_hour: int = Field(3, ge=1, description="password-reset e-mails per address "
                                    "(and 10 times this per client address) an hour")

    @field_validator("database_url")
    @classmethod
    def _normalise(cls, v: str) -> str:
        return normalise_url(v)

    @field_validator("review_home", "upload_dir")
    @classmethod
    def _expand(cls, v: Path) -> Path:
        return Path(v).expanduser()

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings],
                                   init_settings: PydanticBaseSettingsSource,
                                   env_settings: PydanticBaseSettingsSource,
                                   dotenv_settings: PydanticBaseSettingsSource,
                                   file_secret_settings: PydanticBaseSettingsSource,
                                   ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings) if _READ_ENV.get() else (init_settings,)

    @classmethod
    def from_env(cls, **overrides: Any) -> Settings:
        """Settings from ``ICML25_*`` environment variables, then ``overrides`` (None values
        are ignored); an empty database URL becomes SQLite in the review home."""
        token = _READ_ENV.set(True)
        try:
            s = cls(**{k: v for k, v in overrides.items() if v is not None})
        finally:
            _READ_ENV.reset(token)
        if not s.database_url:
            s.database_url = f"sqlite:///{s.review_home / 'review.sqlite3'}"
        return s

    @classmethod
    def env_table(cls) -> list[tuple[str, str, str, str]]:
        """(setting, environment variable, default, meaning) of every setting (for the docs)."""
        rows = []
        for name, f in cls.model_fields.items():
            default = "derived" if f.default_factory is not None else repr(f.default)
            rows.append((name, ENV_PREFIX + name.upper(), default, f.description or ""))
        return rows
