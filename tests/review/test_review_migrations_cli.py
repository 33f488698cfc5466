"""Alembic migrations (empty database -> head matches the models -> base) on both backends, and
the command line (init, create-user, demo data, export, backup)."""

from __future__ import annotations

import json

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from review_helpers import fast_settings
from sqlalchemy import inspect
from typer.testing import CliRunner

from icml25.review.db import downgrade, make_engine, upgrade
from icml25.review.models import Base


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'migrate.sqlite3'}"
    return request.getfixturevalue("pg_server").new_database("mig")


def test_migrations_upgrade_an_empty_database_and_downgrade_again(empty_url):
    engine = make_engine(empty_url)
    assert inspect(engine).get_table_names() == []
    upgrade(empty_url)
    tables = set(inspect(engine).get_table_names())
    assert {t.name for t in Base.metadata.sorted_tables} | {"alembic_version"} == tables
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert diff == [], f"models and migrations differ: {diff}"
    downgrade(empty_url)
    assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
    upgrade(empty_url)  # and up again
    assert "reviews" in inspect(engine).get_table_names()
    engine.dispose()


def test_cli_init_create_user_export_backup(tmp_path, monkeypatch):
    from icml25.review import cli as review_cli
    from icml25.review.demo import Cast, populate_venue
    from icml25.review.workflow import Phase

    url = f"sqlite:///{tmp_path / 'cli.sqlite3'}"
    monkeypatch.setenv("ICML25_DATABASE_URL", url)
    monkeypatch.setenv("ICML25_UPLOAD_DIR", str(tmp_path / "uploads"))
    runner = CliRunner()
    r = runner.invoke(review_cli.app, ["init"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(review_cli.app, ["create-user", "admin@site.example", "--name", "Admin",
                                       "--password", "long-password", "--admin"])
    assert r.exit_code == 0 and "(admin)" in r.output, r.output
    r = runner.invoke(review_cli.app, ["create-user", "admin@site.example", "--name", "Admin",
                                       "--password", "long-password"])
    assert r.exit_code != 0 and "already exists" in r.output
    # a venue in the feedback phase, then export it as an author and as the chair
    from icml25.review.db import make_sessionmaker

    engine = make_engine(url)
    settings = fast_settings(url, tmp_path)
    db = make_sessionmaker(engine)()
    populate_venue(db, settings, "clivenue", Phase.FEEDBACK)
    out = tmp_path / "author.json"
    r = runner.invoke(review_cli.app, ["export", "clivenue", "--as", Cast().authors[0],
                                       "--out", str(out)])
    assert r.exit_code == 0, r.output
    data = json.loads(out.read_text())
    assert "ratings" not in data and data["submissions"]
    text = out.read_text()
    assert all(e not in text for e in Cast().reviewers)
    r = runner.invoke(review_cli.app, ["export", "clivenue", "--as", Cast().chair])
    assert r.exit_code == 0 and json.loads(r.output)["ratings"]
    r = runner.invoke(review_cli.app, ["export", "nope", "--as", Cast().chair])
    assert r.exit_code != 0
    r = runner.invoke(review_cli.app, ["backup", "--out", str(tmp_path / "bk")])
    assert r.exit_code == 0, r.output
    (folder,) = (tmp_path / "bk").iterdir()
    copy = make_engine(f"sqlite:///{folder / 'review.sqlite3'}")
    assert "reviews" in inspect(copy).get_table_names()
    assert list((folder / "uploads").rglob("*.pdf"))
    db.close()
    engine.dispose()
    copy.dispose()
