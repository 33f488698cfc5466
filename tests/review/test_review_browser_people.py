"""Invitations, password reset and bulk mail driven in a real browser (Playwright with Debian's
Chromium), the mail delivered by a real SMTP server on loopback and the links followed from
it. Screenshots go to ``$ICML25_ARTIFACTS_DIR/review-browser`` (``people-*.png``)."""

from __future__ import annotations

import re

import pytest
from browser_helpers import Browser, live_server, require_browser, screenshot_dir, sqlite_site
from smtp_sink import start_sink
from sqlalchemy import select

from icml25.review import models as m
from icml25.review.db import make_sessionmaker
from icml25.review.demo import DEMO_PASSWORD, Cast, populate_venue
from icml25.review.jobs import run_due_jobs
from icml25.review.workflow import Phase

CAST = Cast()


@pytest.fixture
def site(tmp_path):
    controller, sink = start_sink()
    with sqlite_site(tmp_path, "people") as (settings, engine, db):
        settings.smtp_host, settings.smtp_port = "127.0.0.1", controller.port
        yield settings, engine, db, sink
    controller.stop()


def test_invite_by_csv_accept_reset_password_and_mail_a_group(site, tmp_path):
    sync_api = require_browser()
    settings, engine, db, sink = site
    populate_venue(db, settings, "people", Phase.ASSIGNMENT, n_papers=2)
    maker = make_sessionmaker(engine)
    csv = tmp_path / "committee.csv"
    with sync_api.sync_playwright() as p, live_server(settings, engine) as base:
        settings.public_url = base  # the links in the mail point at this server
        browser = Browser(p, base, DEMO_PASSWORD)
        shots = screenshot_dir()
        try:
            chair = browser.page_for(CAST.chair)
            chair.goto(base + "/v/people/invitations")
            csv.write_text("email,name,role,affiliation,quota\nnew@x.example,New One,reviewer\n"
                           "bad-address,Bad,reviewer\n")
            chair.get_by_label("CSV file to upload").set_input_files(str(csv))
            chair.get_by_role("button", name="Import and send").click()
            assert "line 3: invalid e-mail address" in chair.content()
            csv.write_text("email,name,role,affiliation,quota\nnew@x.example,New One,reviewer"
                           ",Uni X,2\nother@y.example,Other Two,ac\n")
            chair.goto(base + "/v/people/invitations")
            chair.get_by_label("CSV file to upload").set_input_files(str(csv))
            chair.get_by_role("button", name="Import and send").click()
            assert "2 invitations are being sent" in chair.content()
            run_due_jobs(maker, settings)  # the import, then its two e-mails
            run_due_jobs(maker, settings)
            chair.goto(base + "/v/people/invitations")
            assert chair.get_by_role("cell", name="pending").count() == 2
            chair.screenshot(path=str(shots / "people-invitations.png"), full_page=True)
            links = sink.links(re.escape(base) + r"/invitations/[A-Za-z0-9_\-]+")
            # the invitee follows the link, creates the account from it, then logs in
            guest = browser.page_for(None)
            guest.goto(links["new@x.example"])
            guest.get_by_label("Password (at least 8 characters)").fill("new-one-password")
            guest.screenshot(path=str(shots / "people-invitee.png"), full_page=True)
            guest.get_by_role("button", name="Accept").click()
            assert "Your account is ready" in guest.content()
            guest.goto(links["new@x.example"])  # the link worked once
            assert "accepted already" in guest.content()
            guest.goto(links["other@y.example"])
            guest.get_by_label("Reason (optional)").fill("on sabbatical")
            guest.get_by_role("button", name="Decline").click()
            chair.goto(base + "/v/people/invitations")
            assert chair.get_by_role("cell", name="accepted").count() == 1
            assert chair.get_by_role("cell", name="on sabbatical").count() == 1
            # the new member forgets the password and resets it from the login page
            guest.goto(base + "/login")
            guest.get_by_role("link", name="Forgot your password?").click()
            guest.get_by_label("E-mail").fill("new@x.example")
            guest.get_by_role("button", name="Send the link").click()
            assert "If an account uses this address" in guest.content()
            run_due_jobs(maker, settings)
            reset = sink.links(re.escape(base) + r"/reset-password\?token=[A-Za-z0-9_\-]+")
            guest.goto(reset["new@x.example"])
            guest.get_by_label("New password (at least 8 characters)").fill("renewed-password")
            guest.get_by_role("button", name="Set the password").click()
            guest.get_by_label("E-mail").fill("new@x.example")
            guest.get_by_label("Password").fill("renewed-password")
            guest.get_by_role("button", name="Log in").click()
            guest.wait_for_url(base + "/")
            # the chair mails the reviewers whose reviews are missing, after the preview
            chair.goto(base + "/v/people/mail")
            chair.get_by_label("Role", exact=True).select_option("reviewer")
            chair.get_by_label("Status", exact=True).select_option("reviews_missing")
            chair.get_by_label("Subject", exact=True).fill("[{venue}] please review")
            chair.get_by_label(re.compile("^Body")).fill("Dear {name}: {missing_reviews} left.")
            chair.get_by_role("button", name="Preview").click()
            region = chair.get_by_role("region")
            assert "Dear " in region.inner_text() and "{name}" not in region.inner_text()
            chair.screenshot(path=str(shots / "people-bulk-mail.png"), full_page=True)
            n_before = sink.count()
            n = int(re.search(r"(\d+) recipient", region.inner_text()).group(1))
            chair.get_by_role("button", name=re.compile("^Send to these")).click()
            assert "Sending to" in chair.content()
            run_due_jobs(maker, settings)
            run_due_jobs(maker, settings)
            assert sink.count() - n_before == n > 0
        finally:
            browser.close()
    assert db.scalar(select(m.User).where(m.User.email == "new@x.example")) is not None
