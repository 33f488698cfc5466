"""Helpers shared by the review tests (a uniquely named module, importable from test files)."""

from __future__ import annotations

import re

from icml25.review.db import Settings


def fast_settings(url: str, tmp_path) -> Settings:
    """Settings with a cheap argon2 cost, no deadline loop and no job runner inside the app
    (tests run the jobs themselves, with ``run_due_jobs``) (tests only)."""
    return Settings(database_url=url, upload_dir=tmp_path / "uploads", argon2_time_cost=1,
                    argon2_memory_kib=8192, tick_seconds=0, job_runner="worker")


def csrf_of(html: str) -> str:
    """The CSRF token embedded in a page."""
    found = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert found, "page has no CSRF token"
    return found.group(1)


def web_login(client, email: str, password: str) -> None:
    """Log a TestClient in through the real login form."""
    page = client.get("/login")
    r = client.post("/login", data={"email": email, "password": password,
                                    "csrf_token": csrf_of(page.text)}, follow_redirects=False)
    assert r.status_code == 303, r.text


def service_as(db, settings, email: str | None = None):
    """The review service acting as the user with ``email`` (anonymous when None)."""
    from sqlalchemy import select

    from icml25.review import models as m
    from icml25.review.service import ReviewService

    base = ReviewService(db, settings)
    return base.as_user(db.scalar(select(m.User).where(m.User.email == email))) if email else base
