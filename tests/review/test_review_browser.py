"""One paper through the whole process in a real browser (Playwright driving Debian's Chromium),
as program chair, author, three reviewers and the area chair. Screenshots of each step go to
``$ICML25_ARTIFACTS_DIR/review-browser`` (default: ``artifacts/review-browser`` in the checkout).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from browser_helpers import ARGS, CHROMIUM, live_server, require_browser, sqlite_site

PW = "browser-pass-123"


@pytest.fixture
def server(tmp_path):
    from icml25.review.service import ReviewService

    with sqlite_site(tmp_path, "browser") as (settings, engine, db):
        svc = ReviewService(db, settings)
        svc.create_user("chair@conf.example", "Paula Chair", PW, is_admin=True)
        svc.create_user("ac@ac.example", "Arthur AreaChair", PW)
        for i in (1, 2, 3):
            svc.create_user(f"rev{i}@lab{i}.example", f"Rita Reviewer{i}", PW)
        svc.create_user("author@uni.example", "Ada Author", PW)
        with live_server(settings, engine) as base:
            yield base, tmp_path


def test_one_paper_through_the_whole_process(server):
    sync_api = require_browser()
    base, tmp = server
    shots = Path(os.environ.get("ICML25_ARTIFACTS_DIR", Path(__file__).parents[2] / "artifacts"))
    shots = shots / "review-browser"
    shots.mkdir(parents=True, exist_ok=True)
    pdf = tmp / "paper.pdf"
    from icml25.review.security import minimal_pdf

    pdf.write_bytes(minimal_pdf("A browser-tested paper"))
    step = {"n": 0}

    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        pages = {}

        def as_user(email: str):
            if email not in pages:
                ctx = browser.new_context(viewport={"width": 1100, "height": 900})
                page = ctx.new_page()
                page.set_default_timeout(15000)
                page.goto(base + "/login")
                page.get_by_label("E-mail").fill(email)
                page.get_by_label("Password").fill(PW)
                page.get_by_role("button", name="Log in").click()
                page.wait_for_url(base + "/")
                pages[email] = page
            return pages[email]

        def shot(page, name: str) -> None:
            step["n"] += 1
            page.screenshot(path=str(shots / f"{step['n']:02d}-{name}.png"), full_page=True)

        def advance(expect: str) -> None:
            chair = as_user("chair@conf.example")
            chair.goto(base + "/v/icml-demo")
            chair.get_by_role("button", name="Advance to").click()
            sync_api.expect(chair.get_by_role("status")).to_contain_text(expect)

        # program chair: create the venue and add the committee
        chair = as_user("chair@conf.example")
        chair.goto(base + "/venues/new")
        chair.get_by_label("Short name").fill("icml-demo")
        chair.get_by_label("Full name").fill("ICML Demo 2025")
        chair.get_by_role("button", name="Create").click()
        chair.goto(base + "/v/icml-demo/admin")
        for email, role in [("ac@ac.example", "ac"), ("rev1@lab1.example", "reviewer"),
                            ("rev2@lab2.example", "reviewer"),
                            ("rev3@lab3.example", "reviewer")]:
            chair.get_by_label("E-mail of an existing account").fill(email)
            chair.get_by_label("Role").select_option(role)
            chair.get_by_role("button", name="Add member").click()
            sync_api.expect(chair.get_by_role("status")).to_contain_text("Member added")
        shot(chair, "chair-committee")

        # author: submit with a PDF
        author = as_user("author@uni.example")
        author.goto(base + "/v/icml-demo/submit")
        author.get_by_label("Title").fill("Two-stage reviews work")
        author.get_by_label("Abstract").fill("We show that rating reviews before scores helps.")
        author.get_by_label("Keywords").fill("peer review")
        author.get_by_label("PDF").set_input_files(str(pdf))
        shot(author, "author-submit-form")
        author.get_by_role("button", name="Submit").click()
        sync_api.expect(author.get_by_role("status")).to_contain_text("received")
        sub_url = author.url.split("?")[0]
        shot(author, "author-submission")

        # chair: bidding -> assignment, auto-assign, AC by hand -> reviewing
        advance("Bidding")
        advance("Assignment")
        chair.get_by_role("button", name="Quick auto-assign from bids only (no preview)").click()
        sync_api.expect(chair.get_by_role("status")).to_contain_text("3 reviewer assignment")
        chair.goto(sub_url)
        chair.get_by_label("Person to assign").select_option(label="Arthur AreaChair (ac)")
        chair.get_by_label("Assign as").select_option("ac")
        chair.get_by_role("button", name="Assign", exact=True).click()
        sync_api.expect(chair.get_by_role("status")).to_contain_text("Assigned")
        shot(chair, "chair-assignments")
        advance("Reviewing")

        # reviewers: write both stages
        for i in (1, 2, 3):
            rv = as_user(f"rev{i}@lab{i}.example")
            rv.goto(sub_url)
            sync_api.expect(rv.get_by_text("Ada Author")).to_have_count(0)  # double blind
            rv.get_by_label("Summary").fill(f"Summary by reviewer {i}.")
            rv.get_by_label("Strengths").fill("Clear and useful.")
            rv.get_by_label("Questions for the authors").fill("Does it scale?")
            rv.get_by_label("Weaknesses").fill(f"HIDDEN-WEAKNESS-{i}")
            if i == 1:  # nothing preselected: the browser refuses to submit without a score
                rv.get_by_role("button", name="Submit review").click()
                assert rv.locator("select[name=score]").evaluate("e => e.validity.valueMissing")
                assert "Review saved" not in rv.content()
            rv.get_by_label("Overall score").select_option(str(4 + i))
            rv.get_by_label("Confidence").select_option("4")
            if i == 1:
                shot(rv, "reviewer-form")
            rv.get_by_role("button", name="Submit review").click()
            sync_api.expect(rv.get_by_role("status")).to_contain_text("Review saved")
        advance("Author feedback")

        # author: stage 1 only, rate every review, then stage 2 appears
        author.goto(sub_url)
        assert "HIDDEN-WEAKNESS" not in author.content()
        shot(author, "author-stage1-only")
        first = author.locator("form[action$='/feedback']").first
        first.get_by_role("button", name="Submit rating").click()  # nothing chosen: refused
        assert first.locator("select[name=comprehension]").evaluate(
            "e => e.validity.valueMissing")
        assert "rating is recorded" not in author.content()
        for _ in range(3):
            form = author.locator("form[action$='/feedback']").first
            form.locator("select[name=comprehension]").select_option("4")
            form.locator("select[name=constructiveness]").select_option("5")
            form.get_by_role("button", name="Submit rating").click()
            sync_api.expect(author.get_by_role("status")).to_contain_text("rating is recorded")
        content = author.content()
        assert all(f"HIDDEN-WEAKNESS-{i}" in content for i in (1, 2, 3))
        assert "Rita Reviewer" not in content and "lab1.example" not in content
        shot(author, "author-stage2-released")

        advance("Rebuttal")
        author.goto(sub_url)
        author.get_by_label("Your response to Reviewer A").fill("We added a scaling study.")
        author.locator("form[action$='/rebuttal']").first.get_by_role(
            "button", name="Save response").click()
        sync_api.expect(author.get_by_role("status")).to_contain_text("Rebuttal saved")

        advance("Discussion")
        rv1 = as_user("rev1@lab1.example")
        rv1.goto(sub_url)
        rv1.get_by_label("Your post").fill("The rebuttal convinces me.")
        rv1.get_by_role("button", name="Post").click()
        sync_api.expect(rv1.get_by_role("status")).to_contain_text("Posted")
        assert "Rita Reviewer2" not in rv1.content()  # others appear by pseudonym only
        shot(rv1, "reviewer-discussion")

        advance("Meta-review")
        ac = as_user("ac@ac.example")
        ac.goto(sub_url)
        ac.get_by_label("Meta-review", exact=True).fill("Accept: sound and useful.")
        ac.get_by_label("Recommendation").select_option("accept")
        ac.get_by_role("button", name="Save meta-review").click()
        sync_api.expect(ac.get_by_role("status")).to_contain_text("Meta-review saved")
        shot(ac, "ac-metareview")

        advance("Decision")
        chair.goto(sub_url)
        chair.get_by_label("Outcome").select_option("accept")
        chair.get_by_role("button", name="Record decision").click()
        sync_api.expect(chair.get_by_role("status")).to_contain_text("Decision recorded")
        advance("Notification")
        chair.goto(base + "/v/icml-demo/admin")
        shot(chair, "chair-admin-ratings")

        author.goto(sub_url)
        sync_api.expect(author.get_by_text("Decision: accept")).to_be_visible()
        sync_api.expect(author.get_by_text("Accept: sound and useful.")).to_be_visible()
        shot(author, "author-decision")
        rv1.goto(base + "/v/icml-demo")
        sync_api.expect(rv1.get_by_text("fewer than 3 ratings")).to_be_visible()
        shot(rv1, "reviewer-feedback-withheld")
        browser.close()
    assert len(list(shots.glob("*.png"))) >= 12
