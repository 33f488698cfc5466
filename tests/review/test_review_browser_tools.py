"""The chair, reviewer and author tools driven in a real browser (Playwright with
Debian's Chromium): one flow per test, each on a venue seeded through the service layer.
Screenshots go to ``$ICML25_ARTIFACTS_DIR/review-browser`` (named ``tools-*.png``)."""

from __future__ import annotations

import pytest
from browser_helpers import Browser, live_server, require_browser, screenshot_dir, sqlite_site
from review_helpers import service_as
from sqlalchemy import select

from icml25.review import models as m
from icml25.review.demo import (
    DEMO_PASSWORD,
    Cast,
    default_text,
    populate_rewards_venue,
    populate_venue,
)
from icml25.review.workflow import Phase

CAST = Cast()
TOPICS = ["graph neural networks for molecules", "protein folding with diffusion",
          "reinforcement learning for robots", "conformal prediction and calibration"]


def _topic_text(kind: str, **ctx: object) -> str:
    if kind in ("title", "abstract"):
        return f"{kind.title()}: {TOPICS[int(ctx['paper']) - 1]} (paper {ctx['paper']})"
    return default_text(kind, **ctx)


@pytest.fixture
def site(tmp_path):
    """A SQLite database, its settings and a session (the browser tests' seed)."""
    with sqlite_site(tmp_path, "tools") as site:
        yield site


def test_a_reviewer_bids_from_the_console(site):
    sync_api = require_browser()
    settings, engine, db = site
    venue = populate_venue(db, settings, "console", Phase.SUBMISSION, n_papers=4,
                           text=_topic_text)
    service_as(db, settings, CAST.chair).advance_phase(venue)  # bidding
    rev = service_as(db, settings, CAST.reviewers[0])
    rev.add_reviewer_paper("Calibrated conformal prediction", "Conformal calibration.")
    expect = sync_api.expect
    with live_server(settings, engine) as base, sync_api.sync_playwright() as p:
        browser = Browser(p, base, DEMO_PASSWORD)
        page = browser.page_for(CAST.reviewers[0])
        page.goto(base + "/v/console")
        page.get_by_role("link", name="Bid on papers").click()
        rows = page.locator("tbody tr")
        expect(rows).to_have_count(4)
        expect(rows.first).to_contain_text("conformal prediction")  # most similar first
        expect(page.get_by_text("4 not yet bid")).to_be_visible()
        abstract = rows.first.locator("details p")
        expect(abstract).to_be_hidden()
        rows.first.locator("summary").click()  # the abstract on expand
        expect(abstract).to_be_visible()
        page.screenshot(path=str(screenshot_dir() / "tools-bidding-console.png"),
                        full_page=True)
        page.get_by_label("Search titles, keywords and abstracts").fill("robots")
        page.get_by_role("button", name="Filter").click()
        expect(rows).to_have_count(1)
        page.get_by_label("Bid on #3").select_option("2")
        page.get_by_role("button", name="Save bids").click()
        expect(page.get_by_role("status")).to_contain_text("1 bid(s) saved")
        expect(page.get_by_label("Search titles, keywords and abstracts")).to_have_value(
            "robots")  # the filter stays after saving
        page.get_by_label("Search titles, keywords and abstracts").fill("")
        page.get_by_label("Only papers I have not bid on yet").check()
        page.get_by_label("Sort by").select_option("number")
        page.get_by_role("button", name="Filter").click()
        expect(rows).to_have_count(3)
        expect(page.get_by_text("3 not yet bid")).to_be_visible()
        assert [t.split()[0] for t in rows.locator("td:first-child").all_inner_texts()] == [
            "1", "2", "4"]
        browser.close()
    sub3 = db.scalar(select(m.Submission).where(m.Submission.venue_id == venue.id,
                                                m.Submission.number == 3))
    db.expire_all()
    bids = {b.submission_id: b.value for b in db.scalars(select(m.Bid).where(
        m.Bid.user_id == rev.actor.id))}
    assert bids == {sub3.id: 2}


def test_a_chair_forbids_a_pair_previews_and_commits_an_assignment(site):
    sync_api = require_browser()
    settings, engine, db = site
    venue = populate_venue(db, settings, "bench", Phase.ASSIGNMENT)
    chair = service_as(db, settings, CAST.chair)
    for a in db.scalars(select(m.Assignment).where(m.Assignment.role == "reviewer")).all():
        chair.unassign(a.submission_id, a.user_id)  # the demo pre-assigns; start empty
    first = db.scalar(select(m.User).where(m.User.email == CAST.reviewers[0]))
    expect = sync_api.expect
    with live_server(settings, engine) as base, sync_api.sync_playwright() as p:
        browser = Browser(p, base, DEMO_PASSWORD)
        page = browser.page_for(CAST.chair)
        page.goto(base + "/v/bench")
        page.get_by_role("link", name="Propose an assignment").click()
        expect(page.get_by_text("none yet").first).to_be_visible()
        page.get_by_label("Paper", exact=True).select_option(label="#1 " + _title(db, venue, 1))
        page.get_by_label("Reviewer", exact=True).select_option(label=first.name)
        page.get_by_label("Rule").select_option("forbid")
        page.get_by_role("button", name="Save rule").click()
        expect(page.get_by_role("status")).to_contain_text("Forbidden")
        expect(page.get_by_text("never assign (forbid)")).to_be_visible()
        page.get_by_label("Objective").select_option("fair")
        page.get_by_role("button", name="Propose an assignment").click()
        report = page.get_by_role("list", name="Constraint report")
        expect(report).to_contain_text("✓ no forbidden pair")
        assert "✗" not in report.inner_text()
        row1 = page.locator("tr", has_text="#1 " + _title(db, venue, 1)).last
        expect(row1).not_to_contain_text(first.name)
        expect(page.get_by_role("heading", name="Per reviewer")).to_be_visible()
        page.screenshot(path=str(screenshot_dir() / "tools-assignment-preview.png"),
                        full_page=True)
        assert db.scalar(select(m.Assignment).where(m.Assignment.role == "reviewer")) is None
        page.get_by_role("button", name="Commit these 6 pairs").click()
        expect(page.get_by_role("status")).to_contain_text("6 reviewer assignment(s) made")
        browser.close()
    db.expire_all()
    pairs = {(a.submission_id, a.user_id) for a in db.scalars(
        select(m.Assignment).where(m.Assignment.role == "reviewer"))}
    sub1 = db.scalar(select(m.Submission.id).where(m.Submission.venue_id == venue.id,
                                                   m.Submission.number == 1))
    assert len(pairs) == 6 and (sub1, first.id) not in pairs


def _title(db, venue, number: int) -> str:
    return db.scalar(select(m.Submission.title).where(m.Submission.venue_id == venue.id,
                                                      m.Submission.number == number))


def test_a_chair_sorts_searches_and_downloads_the_submissions_table(site):
    sync_api = require_browser()
    settings, engine, db = site
    populate_venue(db, settings, "table", Phase.FEEDBACK, n_papers=3)
    expect = sync_api.expect
    with live_server(settings, engine) as base, sync_api.sync_playwright() as p:
        browser = Browser(p, base, DEMO_PASSWORD)
        page = browser.page_for(CAST.chair)
        page.goto(base + "/v/table")
        page.get_by_role("link", name="Submissions table").click()
        rows = page.locator("tbody tr")
        expect(rows).to_have_count(3)
        expect(rows.first).to_contain_text("3 of 3")
        expect(rows.first).to_contain_text("3 rated: comprehension")  # paper 1: all rated
        page.get_by_role("link", name="#").click()  # sorted by number already: reverse
        expect(page.locator("th[aria-sort=descending]")).to_have_count(1)
        assert rows.first.locator("td").first.inner_text() == "3"
        page.get_by_role("link", name="Mean score (1–10)").click()
        expect(page.locator("th[aria-sort=ascending]")).to_contain_text("Mean score")
        page.screenshot(path=str(screenshot_dir() / "tools-submissions-table.png"),
                        full_page=True)
        page.get_by_label("Search numbers, titles").fill("#2")
        page.get_by_role("button", name="Search").click()
        expect(rows).to_have_count(1)
        with page.expect_download() as info:
            page.get_by_role("link", name="Download this table (CSV)").click()
        text = open(info.value.path(), encoding="utf-8").read().splitlines()
        assert text[0].startswith("number,title") and len(text) == 2 and "paper 2" in text[1]
        browser.close()


def test_a_reviewer_views_a_badge_and_a_visitor_verifies_it(site):
    sync_api = require_browser()
    settings, engine, db = site
    venue = populate_rewards_venue(db, settings, "badges")  # the demo's closed venue
    badge = db.scalar(select(m.Badge).where(m.Badge.venue_id == venue.id,
                                            m.Badge.tier == "top-10"))
    holder = db.get(m.User, badge.user_id)
    expect = sync_api.expect
    with live_server(settings, engine) as base, sync_api.sync_playwright() as p:
        browser = Browser(p, base, DEMO_PASSWORD)
        page = browser.page_for(holder.email)
        page.get_by_role("link", name="My rewards").click()
        expect(page.get_by_text("Top 10% reviewer")).to_be_visible()
        page.screenshot(path=str(screenshot_dir() / "tools-rewards.png"), full_page=True)
        with page.expect_download() as info:
            page.get_by_role("link", name="Download the signed credential (top-10)").click()
        credential = open(info.value.path(), encoding="utf-8").read()
        visitor = browser.page_for(None)  # not logged in
        visitor.goto(base + "/verify")
        visitor.get_by_label("Credential (JSON)").fill(credential)
        visitor.get_by_role("button", name="Verify").click()
        expect(visitor.get_by_role("heading", name="✓ Valid credential")).to_be_visible()
        expect(visitor.get_by_role("region")).to_contain_text(holder.name)
        visitor.screenshot(path=str(screenshot_dir() / "tools-verify.png"), full_page=True)
        visitor.get_by_label("Credential (JSON)").fill(credential.replace("top-10", "top-1"))
        visitor.get_by_role("button", name="Verify").click()
        expect(visitor.get_by_role("heading", name="✗ Not valid")).to_be_visible()
        browser.close()


def test_a_chair_defines_decision_types_and_decides_with_one(site):
    sync_api = require_browser()
    settings, engine, db = site
    venue = populate_venue(db, settings, "decide", Phase.META_REVIEW)
    service_as(db, settings, CAST.chair).advance_phase(venue)  # decision
    expect = sync_api.expect
    with live_server(settings, engine) as base, sync_api.sync_playwright() as p:
        browser = Browser(p, base, DEMO_PASSWORD)
        chair = browser.page_for(CAST.chair)
        chair.goto(base + "/v/decide/admin")
        chair.get_by_label("One per line").fill(
            "oral | Accept (oral) | accept\nposter | Accept (poster) | accept\n"
            "reject | Reject | reject")
        chair.get_by_role("button", name="Save decision types").click()
        expect(chair.get_by_role("status")).to_contain_text("Accept (poster)")
        chair.goto(base + "/v/decide")
        chair.get_by_role("link", name=_title(db, venue, 1)).first.click()
        chair.get_by_label("Outcome").select_option(label="Accept (poster) (accepts)")
        chair.get_by_role("button", name="Record decision").click()
        expect(chair.get_by_role("status")).to_contain_text("Decision recorded")
        expect(chair.get_by_text("Decision: Accept (poster)")).to_be_visible()
        sub2 = chair.url.rsplit("/", 1)[0] + "/" + str(db.scalar(select(m.Submission.id).where(
            m.Submission.venue_id == venue.id, m.Submission.number == 2)))
        chair.goto(sub2)
        chair.get_by_label("Outcome").select_option("reject")
        chair.get_by_role("button", name="Record decision").click()
        chair.goto(base + "/v/decide")
        chair.get_by_role("button", name="Advance to").click()
        expect(chair.get_by_role("status")).to_contain_text("Notification")
        author = browser.page_for(CAST.authors[0])
        author.goto(base + "/v/decide")
        author.get_by_role("link", name=_title(db, venue, 1)).first.click()
        expect(author.get_by_text("Decision: Accept (poster)")).to_be_visible()
        author.screenshot(path=str(screenshot_dir() / "tools-custom-decision.png"),
                          full_page=True)
        browser.close()
