"""Background jobs on a queue table in the platform's own database.

Why a table and not a broker: every job is written in the same transaction as the change that
causes it (a decision and its e-mails, an invitation and its mail), so a job exists exactly
when its cause was committed -- with Redis or RabbitMQ beside the database, a crash between
the commit and the publish loses the job, or publishes one for a change rolled back. The same
code runs on SQLite (the default: ``icml25 review serve`` runs the jobs itself) and on
PostgreSQL, where any number of ``icml25 review worker`` processes on any number of machines
claim jobs with ``SELECT ... FOR UPDATE SKIP LOCKED`` (the design of Oban, good_job and
procrastinate).

Delivery is at least once: a worker claims a job with a lease (``locked_until``); the job's
effects and its ``done`` mark are committed together; a worker that dies leaves its lease to
run out, and the job is claimed again. Handlers are therefore idempotent (an e-mail keeps one
``Message-ID`` and is skipped once marked sent). A failing job is retried with exponential
backoff, then marked ``failed``.

Examples
--------
>>> sorted(k for k in KINDS if k.startswith("mail."))
['mail.bulk', 'mail.digest', 'mail.send']
>>> backoff(Settings(job_backoff_seconds=30), 3)
120.0
"""

from __future__ import annotations

import json
import logging
import os
import smtplib
import socket
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from email.utils import format_datetime

from sqlalchemy import and_, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from icml25.review import models as m
from icml25.review.settings import Settings

log = logging.getLogger("icml25.review.jobs")

STATUSES = ("queued", "running", "done", "failed")


def utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass
class JobRun:
    """What a handler gets: the worker's database session (its changes are committed with the
    job's ``done`` mark), the settings, the payload and a progress reporter."""

    db: Session
    settings: Settings
    job: m.Job
    payload: dict
    worker: Worker
    smtp: Callable[[], smtplib.SMTP] = field(repr=False, default=None)  # type: ignore[assignment]

    def progress(self, done: int, total: int) -> None:
        """Record progress ``done / total`` and renew the lease (commits the work so far;
        a handler calling it must be able to resume from what it committed)."""
        self.job.progress = 0.0 if total <= 0 else min(1.0, done / total)
        self.job.locked_until = utcnow() + timedelta(seconds=self.settings.job_lease_seconds)
        self.db.commit()


Handler = Callable[[JobRun], "dict | None"]
#: the registry of job kinds: kind -> handler (each module registers its own with ``job_kind``)
KINDS: dict[str, Handler] = {}
#: called when a job of that kind has failed for good: (session, job, error)
ON_FAILURE: dict[str, Callable[[Session, m.Job, str], None]] = {}


def job_kind(kind: str, on_failure: Callable[[Session, m.Job, str], None] | None = None):  # noqa: ANN201
    """Register the handler of one job kind.

    Parameters
    ----------
    kind : str
        The name stored in ``jobs.kind`` (``area.verb``).
    on_failure : callable, optional
        Run in the worker's session when the job has failed for the last time.

    Returns
    -------
    callable
        The decorator.

    Raises
    ------
    ValueError
        When the kind is registered twice.

    Examples
    --------
    >>> "conflicts.venue" in KINDS
    True
    """
    def register(fn: Handler) -> Handler:
        if kind in KINDS:
            raise ValueError(f"job kind {kind!r} is registered twice")
        KINDS[kind] = fn
        if on_failure is not None:
            ON_FAILURE[kind] = on_failure
        return fn
    return register


def enqueue(db: Session, kind: str, payload: dict | None = None, *, key: str | None = None,
            venue_id: int | None = None, created_by: int | None = None,
            delay: float = 0.0, max_attempts: int | None = None) -> m.Job:
    """Add a job to ``db``'s transaction (it runs once that commits).

    Parameters
    ----------
    db : Session
        The session of the change that causes the job.
    kind : str
        A registered job kind (``KINDS``).
    payload : dict, optional
        JSON-serialisable arguments.
    key : str, optional
        Idempotency key: a second job with the same key is never created (the caller checks
        with :func:`find_by_key` first, or lets the unique constraint refuse it).
    venue_id, created_by : int, optional
        Who may read the job's status (the venue's chairs, its creator).
    delay : float
        Seconds before it may start.
    max_attempts : int, optional
        Tries before it fails for good (default: the setting ``job_max_attempts``).

    Returns
    -------
    Job
        The new row (flushed lazily with the session).

    Raises
    ------
    ValueError
        For an unknown kind.

    Examples
    --------
    >>> enqueue(None, "no.such.kind")
    Traceback (most recent call last):
    ...
    ValueError: unknown job kind 'no.such.kind'
    """
    if kind not in KINDS:
        raise ValueError(f"unknown job kind {kind!r}")
    job = m.Job(kind=kind, payload=json.dumps(payload or {}), status="queued", progress=0.0,
                attempts=0, max_attempts=max_attempts or 0, idempotency_key=key,
                venue_id=venue_id, created_by=created_by, locked_by="", last_error="",
                result="{}", run_after=utcnow() + timedelta(seconds=delay))
    db.add(job)
    return job


def find_by_key(db: Session, key: str) -> m.Job | None:
    """The job with idempotency key ``key``, if any."""
    return db.scalar(select(m.Job).where(m.Job.idempotency_key == key))


def enqueue_once(db: Session, kind: str, payload: dict | None, key: str, **kw) -> m.Job:  # noqa: ANN003
    """:func:`enqueue` unless a job with ``key`` exists (then that job); commits."""
    found = find_by_key(db, key)
    if found is not None:
        return found
    job = enqueue(db, kind, payload, key=key, **kw)
    try:
        db.commit()
    except IntegrityError:  # another process enqueued it a moment ago
        db.rollback()
        return find_by_key(db, key)  # type: ignore[return-value]
    return job


def backoff(settings: Settings, attempts: int) -> float:
    """Seconds before retry number ``attempts`` (1, 2, ...): doubled each time, at most 6 h."""
    return min(6 * 3600.0, settings.job_backoff_seconds * 2 ** max(0, attempts - 1))


def job_view(job: m.Job) -> dict:
    """What ``GET /api/v1/jobs/{id}`` shows of a job."""
    return {"id": job.id, "kind": job.kind, "status": job.status,
            "progress": round(float(job.progress or 0.0), 4), "attempts": job.attempts,
            "last_error": job.last_error or "", "result": json.loads(job.result or "{}"),
            "created_at": job.created_at.isoformat() if job.created_at else None,
            "finished_at": job.finished_at.isoformat() if job.finished_at else None}


def runs_embedded(settings: Settings) -> bool:
    """Whether ``serve`` runs the jobs itself (``job_runner``: auto = on SQLite)."""
    if settings.job_runner == "auto":
        return settings.database_url.startswith("sqlite")
    return settings.job_runner == "embedded"


class Worker:
    """Claims and runs jobs; one per process (or thread), any number against one database.

    Parameters
    ----------
    maker : sessionmaker
        Sessions of the platform's database.
    settings : Settings
        Lease, poll interval, retries and SMTP.
    name : str, optional
        Shown in ``jobs.locked_by`` (default: host, process id and a random suffix).
    """

    def __init__(self, maker: sessionmaker, settings: Settings, name: str | None = None) -> None:
        self.maker, self.settings = maker, settings
        self.name = name or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self._smtp: smtplib.SMTP | None = None
        self.stop = threading.Event()

    # ------------------------------------------------------------------ claiming
    def _claimable(self, now: datetime):  # noqa: ANN202
        return or_(and_(m.Job.status == "queued", m.Job.run_after <= now),
                   and_(m.Job.status == "running", m.Job.locked_until < now))

    def claim(self, db: Session, limit: int = 1) -> list[int]:
        """Claim up to ``limit`` jobs (queued and due, or running with a lapsed lease);
        returns their ids. PostgreSQL skips rows other workers hold locked; on SQLite the
        conditional update below is the claim (one writer at a time)."""
        now = utcnow()
        q = select(m.Job.id).where(self._claimable(now)).order_by(m.Job.id).limit(limit)
        if db.get_bind().dialect.name == "postgresql":
            q = q.with_for_update(skip_locked=True)
        ids = list(db.scalars(q))
        claimed = []
        lease = now + timedelta(seconds=self.settings.job_lease_seconds)
        for jid in ids:
            res = db.execute(update(m.Job).where(m.Job.id == jid, self._claimable(now)).values(
                status="running", locked_by=self.name, locked_until=lease,
                attempts=m.Job.attempts + 1))
            if res.rowcount == 1:
                claimed.append(jid)
        db.commit()
        return claimed

    # ------------------------------------------------------------------ running
    def smtp(self) -> smtplib.SMTP:
        """This worker's SMTP connection (opened on first use, reopened after an error)."""
        if self._smtp is None:
            self._smtp = smtplib.SMTP(self.settings.smtp_host, self.settings.smtp_port,
                                      timeout=30)
        return self._smtp

    def drop_smtp(self) -> None:
        if self._smtp is not None:
            try:
                self._smtp.quit()
            except (smtplib.SMTPException, OSError):
                pass
            self._smtp = None

    def run_job(self, job_id: int) -> str:
        """Run one claimed job to its end; returns its new status."""
        db = self.maker()
        try:
            job = db.get(m.Job, job_id)
            if job is None or job.locked_by != self.name or job.status != "running":
                return "lost"
            limit = job.max_attempts or self.settings.job_max_attempts
            handler = KINDS.get(job.kind)
            try:
                if handler is None:
                    raise LookupError(f"no handler for job kind {job.kind!r}")
                if job.attempts > limit:
                    raise RuntimeError(f"gave up after {limit} attempts (the worker stopped "
                                       "while running it each time)")
                result = handler(JobRun(db, self.settings, job, json.loads(job.payload or "{}"),
                                        self, self.smtp))
            except Exception as exc:  # noqa: BLE001 - any failure is recorded and retried
                db.rollback()
                if isinstance(exc, (smtplib.SMTPException, OSError)):
                    self.drop_smtp()
                return self._failed(db, job_id, exc, limit)
            job.status, job.progress, job.finished_at = "done", 1.0, utcnow()
            job.locked_until, job.result = None, json.dumps(result or {}, default=str)
            db.commit()  # the handler's effects and the done mark, together
            return "done"
        finally:
            db.close()

    def _failed(self, db: Session, job_id: int, exc: Exception, limit: int) -> str:
        job = db.get(m.Job, job_id)
        error = f"{type(exc).__name__}: {exc}"[:2000]
        log.warning("job %s (%s) failed: %s", job_id, job.kind, error)
        log.debug("%s", traceback.format_exc())
        job.last_error, job.locked_until = error, None
        if job.attempts >= limit:
            job.status, job.finished_at = "failed", utcnow()
            hook = ON_FAILURE.get(job.kind)
            if hook is not None:
                hook(db, job, error)
        else:
            job.status = "queued"
            job.run_after = utcnow() + timedelta(seconds=backoff(self.settings, job.attempts))
        db.commit()
        return job.status

    def run_until_idle(self, batch: int = 20, max_jobs: int | None = None) -> int:
        """Run jobs until none is due; returns how many ran."""
        n = 0
        while not self.stop.is_set():
            db = self.maker()
            try:
                ids = self.claim(db, batch)
            finally:
                db.close()
            if not ids:
                return n
            for jid in ids:
                self.run_job(jid)
                n += 1
                if max_jobs is not None and n >= max_jobs:
                    return n
        return n

    def run_forever(self, idle: Callable[[], None] | None = None) -> None:
        """Poll and run jobs until :attr:`stop` is set; ``idle`` runs between polls (the
        scheduled jobs: digests, reminders, deadlines)."""
        try:
            while not self.stop.is_set():
                try:
                    if idle is not None:
                        idle()
                    self.run_until_idle()
                except Exception:  # noqa: BLE001 - a database hiccup must not end the worker
                    log.exception("worker loop")
                self.stop.wait(self.settings.job_poll_seconds)
        finally:
            self.drop_smtp()


# ---------------------------------------------------------------------- mail
def message_id(settings: Settings) -> str:
    """A fresh, globally unique ``Message-ID`` under the platform's host name."""
    host = settings.public_url.split("//", 1)[-1].split("/", 1)[0].split(":", 1)[0] or "localhost"
    return f"<{uuid.uuid4().hex}@{host}>"


def build_message(settings: Settings, e: m.Email) -> EmailMessage:
    """The e-mail of an outbox row, with its stable ``Message-ID``."""
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = settings.mail_from, e.to_addr, e.subject
    if e.message_id:
        msg["Message-ID"] = e.message_id
    created = e.created_at if e.created_at.tzinfo else e.created_at.replace(tzinfo=UTC)
    msg["Date"] = format_datetime(created)
    msg.set_content(e.body)
    return msg


def _mail_failed(db: Session, job: m.Job, error: str) -> None:
    mid = json.loads(job.payload or "{}").get("message_id")
    e = db.scalar(select(m.Email).where(m.Email.message_id == mid))
    if e is not None and e.status != "sent":
        e.status, e.last_error = "failed", error


@job_kind("mail.send", on_failure=_mail_failed)
def _send_mail(run: JobRun) -> dict:
    e = run.db.scalar(select(m.Email).where(m.Email.message_id == run.payload["message_id"]))
    if e is None or e.status == "sent":
        return {"skipped": True}
    e.attempts += 1
    if not run.settings.smtp_host:
        e.status = "unsent"  # readable in the admin mail log; sent once SMTP is configured
        return {"sent": False}
    try:
        run.smtp().send_message(build_message(run.settings, e))
    except Exception as exc:
        e.last_error = f"{type(exc).__name__}: {exc}"[:2000]
        raise
    e.status, e.sent_at, e.last_error = "sent", utcnow(), ""
    return {"sent": True}


def run_due_jobs(maker: sessionmaker, settings: Settings) -> int:
    """Run every due job once in this thread (the embedded runner's step; also for scripts
    and tests). Returns how many ran."""
    return Worker(maker, settings, name=f"embedded:{os.getpid()}").run_until_idle()


class EmbeddedRunner:
    """The jobs run inside ``serve``: a daemon thread with a :class:`Worker`."""

    def __init__(self, maker: sessionmaker, settings: Settings,
                 idle: Callable[[], None] | None = None) -> None:
        self.worker = Worker(maker, settings, name=f"serve:{socket.gethostname()}:{os.getpid()}")
        self.thread = threading.Thread(target=self.worker.run_forever, args=(idle,),
                                       name="icml25-jobs", daemon=True)

    def start(self) -> EmbeddedRunner:
        self.thread.start()
        return self

    def close(self, timeout: float = 10.0) -> None:
        self.worker.stop.set()
        self.thread.join(timeout)


def wait_for(maker: sessionmaker, job_id: int, timeout: float = 60.0) -> m.Job:
    """Poll until a job is done or failed (tests and scripts)."""
    deadline = time.monotonic() + timeout
    while True:
        db = maker()
        try:
            job = db.get(m.Job, job_id)
            if job is not None and job.status in ("done", "failed"):
                return job
        finally:
            db.close()
        if time.monotonic() > deadline:
            raise TimeoutError(f"job {job_id} did not finish within {timeout} s")
        time.sleep(0.05)


# handlers of the other kinds register themselves when their modules load
from icml25.review import people  # noqa: E402, F401
