"""Helpers for the review platform's browser tests: a live server on a free port, and
Playwright pages logged in through the real login form (Debian's Chromium, never a download)."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from review_helpers import fast_settings

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update"]


def require_browser():  # noqa: ANN201
    """The Playwright sync API, or skip (fail with ICML25_REQUIRE_BROWSER=1) without Chromium."""
    if not Path(CHROMIUM).exists():
        why = f"{CHROMIUM} not installed (apt-get install chromium)"
        if os.environ.get("ICML25_REQUIRE_BROWSER") == "1":
            pytest.fail(why)
        pytest.skip(why)
    return pytest.importorskip("playwright.sync_api")


@contextmanager
def sqlite_site(tmp_path: Path, name: str) -> Iterator[tuple]:
    """A fresh SQLite database for a browser test: (settings, engine, session)."""
    from icml25.review.db import make_engine, make_sessionmaker
    from icml25.review.models import Base

    settings = fast_settings(f"sqlite:///{tmp_path / (name + '.sqlite3')}", tmp_path)
    engine = make_engine(settings.database_url)
    Base.metadata.create_all(engine)
    db = make_sessionmaker(engine)()
    try:
        yield settings, engine, db
    finally:
        db.close()
        engine.dispose()


@contextmanager
def live_server(settings, engine) -> Iterator[str]:  # noqa: ANN001
    """Serve the app on 127.0.0.1 (a thread) and yield its base URL."""
    import uvicorn

    from icml25.review.web import create_app

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    srv = uvicorn.Server(uvicorn.Config(create_app(settings, engine), host="127.0.0.1",
                                        port=port, log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.time() + 20
    while not srv.started and time.time() < deadline:
        time.sleep(0.05)
    assert srv.started, "server did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        srv.should_exit = True
        thread.join(timeout=10)


class Browser:
    """One Chromium; :meth:`page_for` gives a page logged in as an account (one context each)."""

    def __init__(self, playwright, base: str, password: str) -> None:  # noqa: ANN001
        self.base, self.password = base, password
        self.browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        self.pages: dict[str | None, object] = {}

    def page_for(self, email: str | None):  # noqa: ANN201
        if email not in self.pages:
            page = self.browser.new_context(viewport={"width": 1200, "height": 900},
                                            accept_downloads=True).new_page()
            page.set_default_timeout(15000)
            if email is not None:
                page.goto(self.base + "/login")
                page.get_by_label("E-mail").fill(email)
                page.get_by_label("Password").fill(self.password)
                page.get_by_role("button", name="Log in").click()
                page.wait_for_url(self.base + "/")
            self.pages[email] = page
        return self.pages[email]

    def close(self) -> None:
        self.browser.close()


def screenshot_dir() -> Path:
    """Where browser tests put their screenshots (``$ICML25_ARTIFACTS_DIR/review-browser``)."""
    root = Path(os.environ.get("ICML25_ARTIFACTS_DIR", Path(__file__).parents[2] / "artifacts"))
    out = root / "review-browser"
    out.mkdir(parents=True, exist_ok=True)
    return out
