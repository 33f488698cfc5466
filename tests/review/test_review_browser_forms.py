"""A configurable review form in a real browser (Playwright with Debian's Chromium;
point 3): a chair adds a stage-2 score field, a reviewer fills it, and the author sees it only
after rating every review. Screenshots go to ``$ICML25_ARTIFACTS_DIR/review-browser``."""

from __future__ import annotations

from browser_helpers import Browser, live_server, require_browser, screenshot_dir, sqlite_site
from review_helpers import service_as
from sqlalchemy import select

from icml25.review import models as m
from icml25.review.demo import DEMO_PASSWORD, Cast, populate_venue
from icml25.review.workflow import Phase, Role

CAST = Cast()
CORE = dict(summary="Sound.", strengths="Clear.", questions="Does it scale?",
            weaknesses="Small data.", score=6, confidence=3)


def test_a_stage2_field_reaches_the_author_only_after_rating(tmp_path):
    sync_api = require_browser()
    with sqlite_site(tmp_path, "forms") as (settings, engine, db):
        _chair_reviewer_author(sync_api, settings, engine, db)


def _chair_reviewer_author(sync_api, settings, engine, db) -> None:  # noqa: ANN001
    expect = sync_api.expect
    venue = populate_venue(db, settings, "bforms", Phase.ASSIGNMENT, n_papers=1)
    chair_svc = service_as(db, settings, CAST.chair)
    chair_svc.advance_phase(venue)  # reviewing
    sub = db.scalar(select(m.Submission).where(m.Submission.venue_id == venue.id))
    reviewers = [db.get(m.User, a.user_id).email for a in chair_svc.bundle(sub.id).assignments
                 if a.role == Role.REVIEWER]
    with live_server(settings, engine) as base, sync_api.sync_playwright() as p:
        browser = Browser(p, base, DEMO_PASSWORD)
        # the chair adds a required stage-2 score with a labelled scale, shown to authors
        chair = browser.page_for(CAST.chair)
        chair.goto(base + "/v/bforms")
        chair.get_by_role("link", name="Review form").click()
        expect(chair.get_by_text("(the built-in form)")).to_be_visible()
        chair.get_by_label("Key of field 1").fill("reproducibility")
        chair.get_by_label("Label of field 1").fill("Reproducibility")
        chair.get_by_label("Kind of field 1").select_option("score")
        chair.get_by_label("Stage of field 1").select_option("2")
        chair.get_by_label("Field 1 is visible to").select_option("authors")
        chair.get_by_label("Options of field 1").fill("not reproducible | partly | fully")
        chair.get_by_label("Field 1 is required").check()
        chair.get_by_role("button", name="Save the review form").click()
        expect(chair.get_by_role("status")).to_contain_text("Review form saved: version 1")
        expect(chair.get_by_role("cell", name="1 = not reproducible; 2 = partly; 3 = fully",
                                 exact=False)).to_be_visible()
        chair.screenshot(path=str(screenshot_dir() / "tools-review-form.png"), full_page=True)
        # a reviewer fills it in part 2 of the review (required: refused when empty)
        rv = browser.page_for(reviewers[0])
        rv.goto(f"{base}/s/{sub.id}")
        for label, value in (("Summary", "Sound."), ("Strengths", "Clear."),
                             ("Questions for the authors", "Does it scale?"),
                             ("Weaknesses", "Small data.")):
            rv.get_by_label(label).fill(value)
        rv.get_by_label("Overall score").select_option("6")
        rv.get_by_label("Confidence").select_option("3")
        field = rv.locator("select[name=answer_reproducibility]")
        expect(rv.locator("fieldset", has_text="Part 2").locator(
            "select[name=answer_reproducibility]")).to_have_count(1)
        rv.get_by_role("button", name="Submit review").click()
        assert field.evaluate("e => e.validity.valueMissing")
        field.select_option(label="3 — fully")
        rv.get_by_role("button", name="Submit review").click()
        expect(rv.get_by_role("status")).to_contain_text("Review saved")
        expect(rv.get_by_text("3 / 3 (fully)")).to_be_visible()
        for email in reviewers[1:]:
            service_as(db, settings, email).save_review(
                sub.id, **CORE, answers={"reproducibility": 2})
        chair_svc.advance_phase(venue)  # author feedback: stage 1 released
        # the author: stage 1 only, no trace of the stage-2 field until every review is rated
        author = browser.page_for(db.get(m.User, sub.submitter_id).email)
        author.goto(f"{base}/s/{sub.id}")
        expect(author.get_by_text("Does it scale?").first).to_be_visible()
        assert "Reproducibility" not in author.content()
        assert "fully" not in author.content() and "partly" not in author.content()
        author.screenshot(path=str(screenshot_dir() / "tools-form-withheld.png"),
                          full_page=True)
        for k in range(len(reviewers)):
            form = author.locator("form[action$='/feedback']").first
            form.locator("select[name=comprehension]").select_option("4")
            form.locator("select[name=constructiveness]").select_option("4")
            form.get_by_role("button", name="Submit rating").click()
            expect(author.get_by_role("status")).to_contain_text("rating is recorded")
            if k < len(reviewers) - 1:
                assert "Reproducibility" not in author.content()
        expect(author.get_by_role("heading", name="Reproducibility")).to_have_count(
            len(reviewers))
        expect(author.get_by_text("3 / 3 (fully)")).to_be_visible()
        expect(author.get_by_text("2 / 3 (partly)")).to_have_count(len(reviewers) - 1)
        author.screenshot(path=str(screenshot_dir() / "tools-form-released.png"),
                          full_page=True)
        browser.close()
