"""``icml25 review``: run a venue (init, serve, demo, create-user, export, backup)."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import typer

app = typer.Typer(help="Peer-review platform with two-stage author feedback.",
                  no_args_is_help=True)

DB_OPT = typer.Option(None, "--database-url", help="default: $ICML25_DATABASE_URL or SQLite "
                      "in $ICML25_REVIEW_HOME (~/.icml25-review)")


def _settings(database_url: str | None):  # noqa: ANN202
    from icml25.core import require_extra

    for mod in ("fastapi", "sqlalchemy", "alembic", "argon2", "pydantic_settings"):
        require_extra(mod, "review")
    from icml25.review.db import Settings

    return Settings.from_env(database_url=database_url)


def _session(settings):  # noqa: ANN001, ANN202
    """A database session that is closed, and its engine disposed, when the command ends.

    A command may run inside a longer-lived process (a test's CliRunner, a notebook): left
    open, its connection would sit idle in a transaction holding locks until garbage
    collection."""
    import click

    from icml25.review.db import make_engine, make_sessionmaker

    engine = make_engine(settings.database_url, settings)
    session = make_sessionmaker(engine)()

    def close() -> None:
        session.close()
        engine.dispose()

    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.call_on_close(close)
    return session


@app.command()
def init(database_url: str | None = DB_OPT) -> None:
    """Create or upgrade the database schema (Alembic migrations)."""
    from icml25.review.db import upgrade

    s = _settings(database_url)
    upgrade(s.database_url)
    typer.echo(f"database ready: {_redact(s.database_url)}")


@app.command("create-user")
def create_user(email: str, name: str = typer.Option(..., "--name"),
                password: str = typer.Option(..., "--password", prompt=True,
                                             hide_input=True, confirmation_prompt=True),
                admin: bool = typer.Option(False, "--admin", help="may create venues"),
                database_url: str | None = DB_OPT) -> None:
    """Create an account (``--admin`` lets it create venues)."""
    from icml25.review.service import ReviewService, ServiceError

    s = _settings(database_url)
    db = _session(s)
    try:
        u = ReviewService(db, s).create_user(email, name, password, is_admin=admin)
    except ServiceError as exc:
        raise typer.BadParameter(str(exc)) from None
    typer.echo(f"created user {u.id} <{u.email}>{' (admin)' if admin else ''}")


@app.command()
def demo(database_url: str | None = DB_OPT) -> None:
    """Populate a demo: one venue in every phase; prints the demo logins."""
    from icml25.review.db import upgrade
    from icml25.review.demo import DEMO_PASSWORD, build_demo

    s = _settings(database_url)
    upgrade(s.database_url)
    logins = build_demo(_session(s), s)
    typer.echo(f"demo venues ready in {_redact(s.database_url)}; password for all: "
               f"{DEMO_PASSWORD}")
    for email, role in logins:
        typer.echo(f"  {email:32s} {role}")


@app.command()
def serve(host: str = typer.Option("127.0.0.1", envvar="ICML25_HOST"),
          port: int = typer.Option(8000, envvar="ICML25_PORT"),
          workers: int = typer.Option(1, envvar="ICML25_WORKERS", help="server processes; "
                                      "each has its own connection pool and request limit"),
          database_url: str | None = DB_OPT) -> None:
    """Serve the web UI and API (applies migrations first). Every other setting comes from
    ``ICML25_*`` environment variables (docs/review-operators.md, "Settings")."""
    import os

    from icml25.core import require_extra
    from icml25.review.db import upgrade

    s = _settings(database_url)
    require_extra("uvicorn", "review")
    from icml25.review.server import run

    upgrade(s.database_url)
    os.environ["ICML25_DATABASE_URL"] = s.database_url
    typer.echo(f"serving http://{host}:{port}/ (API: /api/v1/docs)")
    try:
        run("icml25.review.web:create_app", host=host, port=port, workers=workers)
    except OSError as exc:  # the port is taken, or the address is not this machine's
        typer.echo(f"error: cannot listen on {host}:{port}: {exc.strerror or exc}", err=True)
        raise typer.Exit(1) from None


@app.command()
def export(venue: str, as_user: str = typer.Option(..., "--as", help="e-mail of the user whose "
                                                   "view is exported"),
           out: Path | None = typer.Option(None, "--out"),
           database_url: str | None = DB_OPT) -> None:
    """Export a venue as JSON, exactly as the given user may see it."""
    from sqlalchemy import select

    from icml25.review import models as m
    from icml25.review.service import NotFound, ReviewService

    s = _settings(database_url)
    db = _session(s)
    user = db.scalar(select(m.User).where(m.User.email == as_user.lower()))
    if user is None:
        raise typer.BadParameter(f"no user {as_user}")
    svc = ReviewService(db, s, user)
    try:
        data = svc.export(svc.venue(venue))
    except NotFound as exc:
        raise typer.BadParameter(str(exc)) from None
    text = json.dumps(data, indent=2, default=str)
    if out:
        out.write_text(text)
        typer.echo(f"wrote {out}")
    else:
        typer.echo(text)


@app.command()
def backup(out: Path = typer.Option(Path("."), "--out", help="folder for the backup"),
           database_url: str | None = DB_OPT) -> None:
    """Back up the database (SQLite online backup, or pg_dump) and the uploaded PDFs."""
    import sqlite3
    import subprocess

    s = _settings(database_url)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    target = out / f"icml25-review-{stamp}"
    target.mkdir(parents=True, exist_ok=False)
    url = s.database_url
    if url.startswith("sqlite"):
        src = sqlite3.connect(url.split("///", 1)[-1])
        dst = sqlite3.connect(target / "review.sqlite3")
        with dst:
            src.backup(dst)
        src.close()
        dst.close()
    else:
        pg = shutil.which("pg_dump")
        if pg is None:
            raise typer.BadParameter("pg_dump is needed to back up PostgreSQL")
        plain = url.replace("postgresql+psycopg://", "postgresql://")
        with open(target / "review.sql", "wb") as fh:
            subprocess.run([pg, "--no-owner", plain], stdout=fh, check=True)
    if Path(s.upload_dir).exists():
        shutil.copytree(s.upload_dir, target / "uploads")
    typer.echo(f"backup written to {target}")


@app.command()
def tick(now: str | None = typer.Option(None, help="ISO time to act as (default: now)"),
         database_url: str | None = DB_OPT) -> None:
    """Advance venues whose phase deadline has passed (the server also does this every
    $ICML25_TICK_SECONDS); prints one JSON line per venue that was due."""
    from datetime import UTC, datetime

    from icml25.review.service import ReviewService

    s = _settings(database_url)
    when = None
    if now:
        when = datetime.fromisoformat(now)
        when = when if when.tzinfo else when.replace(tzinfo=UTC)
    for row in ReviewService(_session(s), s).advance_due(when):
        typer.echo(json.dumps(row))


@app.command()
def worker(once: bool = typer.Option(False, "--once", help="run the jobs due now, then stop"),
           database_url: str | None = DB_OPT) -> None:
    """Run background jobs (every e-mail, imports, conflict computation, bulk mail): any
    number of workers on any number of machines against one database. SIGTERM or Ctrl-C
    stops after the job in progress; a worker killed outright leaves its job to run again."""
    import logging
    import signal

    from icml25.review.db import make_engine, make_sessionmaker
    from icml25.review.jobs import Worker
    from icml25.review.services.mailing import daily_scheduler

    s = _settings(database_url)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    from sqlalchemy import inspect

    engine = make_engine(s.database_url, s)
    if not inspect(engine).has_table("jobs"):
        typer.echo("error: the database has no job table; run `icml25 review init` first",
                   err=True)
        raise typer.Exit(1)
    maker = make_sessionmaker(engine)
    w = Worker(maker, s)
    if once:
        typer.echo(f"ran {w.run_until_idle()} job(s)")
        return
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: w.stop.set())
    typer.echo(f"worker {w.name} on {_redact(s.database_url)}", err=True)
    w.run_forever(idle=daily_scheduler(maker, s))


@app.command("send-mail")
def send_mail(database_url: str | None = DB_OPT) -> None:
    """Send queued notification e-mails over SMTP ($ICML25_SMTP_HOST)."""
    from icml25.review.service import ReviewService

    s = _settings(database_url)
    n = ReviewService(_session(s), s).send_outbox()
    typer.echo(f"sent {n} e-mail(s)" if s.smtp_host else "ICML25_SMTP_HOST is not set")


@app.command()
def verify(credential: Path = typer.Argument(..., exists=True, dir_okay=False,
                                            help="a badge credential (JSON)"),
           public_key: str | None = typer.Option(None, "--public-key", help="the venue's "
                                                 "published Ed25519 key (hex); without it the "
                                                 "key is looked up in the database"),
           database_url: str | None = DB_OPT) -> None:
    """Verify a badge credential; exit status 1 when it does not verify."""
    from icml25.core import require_extra

    require_extra("cryptography", "review")
    from icml25.review.credentials import CredentialError
    from icml25.review.credentials import verify as check

    text = credential.read_text()
    if public_key:
        try:
            ok = check(text, public_key.strip())
        except CredentialError as exc:
            typer.echo(f"INVALID: {exc}")
            raise typer.Exit(1) from None
        c = ok.claims
        typer.echo(f"valid: {c.get('badge')} for {c.get('reviewer', {}).get('name')} at "
                   f"{c.get('venue', {}).get('slug')} (key {ok.key_id})")
        return
    from icml25.review.service import ReviewService

    s = _settings(database_url)
    res = ReviewService(_session(s), s).verify_credential(text)
    if not res["valid"]:
        typer.echo(f"INVALID: {res['reason']}")
        raise typer.Exit(1)
    typer.echo(f"valid: {res['badge']} for {res['reviewer'].get('name')} at {res['venue']} "
               f"(key {res['key_id']})")


@app.command("public-key")
def public_key_cmd(venue: str, database_url: str | None = DB_OPT) -> None:
    """Print a venue's credential verification key (Ed25519, hex)."""
    from icml25.review.service import NotFound, ReviewService

    s = _settings(database_url)
    svc = ReviewService(_session(s), s)
    try:
        typer.echo(json.dumps(svc.venue_public_key(svc.venue(venue)), indent=2))
    except NotFound as exc:
        raise typer.BadParameter(str(exc)) from None


@app.command()
def simulate(n_papers: int = typer.Option(600, "--papers"),
             n_reviewers: int = typer.Option(300, "--reviewers"),
             seed: int = typer.Option(0, "--seed"),
             out: Path | None = typer.Option(None, "--out", help="write the JSON here")) -> None:
    """Simulated conference: two-stage vs one-stage author feedback (pure, seconds)."""
    from icml25.review.simulation import SimConfig, run

    res = run(SimConfig(n_papers=n_papers, n_reviewers=n_reviewers), seed=seed)
    text = json.dumps(res, indent=2)
    if out:
        out.write_text(text)
        typer.echo(f"wrote {out}")
    else:
        typer.echo(text)


def _redact(url: str) -> str:
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        return f"{scheme}://***@{rest.split('@', 1)[1]}"
    return url
