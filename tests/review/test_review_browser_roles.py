"""Camera-ready, senior area chairs and sub-reviewers driven in a real browser (Playwright with
Debian's Chromium):
upload camera-ready (and supplementary material), a chair putting an area chair under a senior
area chair who then manages that paper, and a reviewer inviting a sub-reviewer who writes the
review. Screenshots go to ``$ICML25_ARTIFACTS_DIR/review-browser`` (``roles-*.png``)."""

from __future__ import annotations

import zipfile
from datetime import UTC, datetime, timedelta

import pytest
from browser_helpers import Browser, live_server, require_browser, screenshot_dir, sqlite_site
from review_helpers import service_as
from sqlalchemy import select

from icml25.review import models as m
from icml25.review.demo import DEMO_PASSWORD, Cast, populate_venue
from icml25.review.security import minimal_pdf
from icml25.review.service import ReviewService
from icml25.review.workflow import Phase, Role

CAST = Cast()
TYPES = [{"key": "oral", "label": "Accept (oral)", "accepted": True},
         {"key": "poster", "label": "Accept (poster)", "accepted": True},
         {"key": "reject", "label": "Reject", "accepted": False}]


@pytest.fixture
def site(tmp_path):
    with sqlite_site(tmp_path, "roles") as site:
        yield site


def _subs(db, venue) -> list[m.Submission]:
    return db.scalars(select(m.Submission).where(m.Submission.venue_id == venue.id)
                      .order_by(m.Submission.number)).all()


def test_upload_camera_ready(site, tmp_path):
    sync_api = require_browser()
    settings, engine, db = site

    def on_phase(phase: Phase) -> None:
        if phase is Phase.SUBMISSION:
            v = db.scalar(select(m.Venue).where(m.Venue.slug == "final"))
            service_as(db, settings, CAST.chair).set_decision_types(v, TYPES)

    venue = populate_venue(db, settings, "final", Phase.META_REVIEW, on_phase=on_phase)
    chair = service_as(db, settings, CAST.chair)
    chair.advance_phase(venue)  # decision
    accepted, rejected = _subs(db, venue)
    chair.decide(accepted.id, "oral")
    chair.decide(rejected.id, "reject")
    chair.advance_phase(venue)  # notification
    pdf = tmp_path / "final.pdf"
    pdf.write_bytes(minimal_pdf("camera ready"))
    archive = tmp_path / "code.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("train.py", "print('reproduce')\n")
    not_zip = tmp_path / "notes.zip"
    not_zip.write_bytes(b"plain text pretending to be a zip")
    deadline = (datetime.now(UTC) + timedelta(days=10)).date().isoformat()
    expect = sync_api.expect
    with live_server(settings, engine) as base, sync_api.sync_playwright() as p:
        browser = Browser(p, base, DEMO_PASSWORD)
        # the chair sets the camera-ready deadline from the admin pages
        cp = browser.page_for(CAST.chair)
        cp.goto(base + "/v/final/admin")
        cp.get_by_role("link", name="Senior area chairs and the camera-ready deadline").click()
        cp.get_by_label("Authors of accepted papers upload").fill(deadline)
        cp.get_by_role("button", name="Save camera-ready deadline").click()
        expect(cp.get_by_role("status")).to_contain_text(f"Camera-ready deadline: {deadline}")
        # the author of the accepted paper uploads; the rejected paper offers nothing
        page = browser.page_for(CAST.authors[0])
        page.goto(base + f"/s/{rejected.id}")
        expect(page.get_by_role("button", name="Upload camera-ready")).to_have_count(0)
        page.goto(base + f"/s/{accepted.id}")
        expect(page.get_by_text("Decision: Accept (oral)")).to_be_visible()
        expect(page.get_by_text(f"due {deadline}")).to_be_visible()
        page.get_by_label("Camera-ready PDF").set_input_files(str(pdf))
        page.get_by_role("button", name="Upload camera-ready").click()
        expect(page.get_by_role("status")).to_contain_text("Camera-ready version uploaded")
        page.get_by_label("Supplementary material (one zip").set_input_files(str(not_zip))
        page.get_by_role("button", name="Upload supplementary material").click()
        expect(page.get_by_text("not a zip archive")).to_be_visible()  # the 400 page
        page.goto(base + f"/s/{accepted.id}")
        page.get_by_label("Supplementary material (one zip").set_input_files(str(archive))
        page.get_by_role("button", name="Upload supplementary material").click()
        expect(page.get_by_role("status")).to_contain_text("1 files")
        page.screenshot(path=str(screenshot_dir() / "roles-camera-ready.png"), full_page=True)
        # a reviewer of the paper downloads both
        reviewer = next(a for a in ReviewService(db, settings).bundle(accepted.id).assignments
                        if a.role == "reviewer")
        rp = browser.page_for(db.get(m.User, reviewer.user_id).email)
        rp.goto(base + f"/s/{accepted.id}")
        with rp.expect_download() as dl:
            rp.get_by_role("link", name="Download the camera-ready PDF").click()
        assert open(dl.value.path(), "rb").read() == pdf.read_bytes()
        with rp.expect_download() as dl:
            rp.get_by_role("link", name="Download the supplementary material").click()
        assert open(dl.value.path(), "rb").read() == archive.read_bytes()
        expect(rp.get_by_role("button", name="Upload camera-ready")).to_have_count(0)
        browser.close()
    stored = ReviewService(db, settings).bundle(accepted.id).submission
    db.refresh(stored)
    assert stored.camera_size == len(pdf.read_bytes()) and stored.supp_size > 0


def test_a_senior_ac_manages_their_area_chairs_paper(site):
    sync_api = require_browser()
    settings, engine, db = site
    sac_email = "sac@sac-inst.example"
    ReviewService(db, settings).create_user(sac_email, "Senior Person", DEMO_PASSWORD)
    venue = populate_venue(db, settings, "senior", Phase.REVIEWING)
    chair = service_as(db, settings, CAST.chair)
    chair.add_member(venue, sac_email, Role.SAC)
    s1, s2 = _subs(db, venue)
    bundle = ReviewService(db, settings).bundle(s1.id)
    spare = next(db.get(m.User, u.id) for u in (db.scalar(select(m.User).where(
        m.User.email == e)) for e in CAST.reviewers) if bundle.assignment_of(u.id) is None)
    expect = sync_api.expect
    with live_server(settings, engine) as base, sync_api.sync_playwright() as p:
        browser = Browser(p, base, DEMO_PASSWORD)
        sp = browser.page_for(sac_email)
        sp.goto(base + "/v/senior/senior-ac")
        expect(sp.get_by_text("No papers")).to_be_visible()  # no area chair under them yet
        cp = browser.page_for(CAST.chair)
        cp.goto(base + "/v/senior/roles")
        cp.get_by_label("Area chair", exact=True).select_option(label="Area Chair Person")
        cp.get_by_label("Senior area chair", exact=True).select_option(label="Senior Person")
        cp.get_by_role("button", name="Save senior area chair").click()
        expect(cp.get_by_role("status")).to_contain_text("Senior area chair saved")
        expect(cp.locator("tbody tr").first).to_contain_text("Area Chair Person")
        sp.goto(base + "/v/senior")
        sp.get_by_role("link", name="Senior area chair console").click()
        expect(sp.get_by_role("heading", name="Area chair: Area Chair Person")).to_be_visible()
        expect(sp.locator("tbody tr")).to_have_count(2)
        sp.get_by_role("link", name=s1.title).click()
        expect(sp.get_by_text("You are: senior area chair")).to_be_visible()
        expect(sp.get_by_role("heading", name="Authors")).to_have_count(0)  # double blind
        # manage: assign a reviewer (no area-chair option for them, no unassigning the AC)
        expect(sp.get_by_label("Assign as").locator("option")).to_have_count(1)
        n_reviewers = len([a for a in bundle.assignments if a.role == "reviewer"])
        expect(sp.get_by_role("button", name="Unassign")).to_have_count(n_reviewers)
        sp.get_by_label("Person to assign").select_option(label=f"{spare.name} (reviewer)")
        sp.get_by_role("button", name="Assign", exact=True).click()
        expect(sp.get_by_role("status")).to_contain_text("Assigned.")
        expect(sp.get_by_text(spare.name).first).to_be_visible()
        sp.screenshot(path=str(screenshot_dir() / "roles-senior-ac.png"), full_page=True)
        browser.close()
    assert ReviewService(db, settings).bundle(s1.id).assignment_of(spare.id) is not None


def test_a_reviewer_invites_a_subreviewer_who_writes_the_review(site):
    sync_api = require_browser()
    settings, engine, db = site
    sub_email = "student@sub-lab.example"
    ReviewService(db, settings).create_user(sub_email, "Student Person", DEMO_PASSWORD)
    venue = populate_venue(db, settings, "subrev", Phase.ASSIGNMENT)
    chair = service_as(db, settings, CAST.chair)
    chair.advance_phase(venue)  # reviewing, no review written yet
    s1, s2 = _subs(db, venue)
    a = next(a for a in ReviewService(db, settings).bundle(s1.id).assignments
             if a.role == "reviewer")
    inviter = db.get(m.User, a.user_id)
    expect = sync_api.expect
    with live_server(settings, engine) as base, sync_api.sync_playwright() as p:
        browser = Browser(p, base, DEMO_PASSWORD)
        ip = browser.page_for(inviter.email)
        ip.goto(base + f"/s/{s1.id}")
        ip.get_by_label("Invite a sub-reviewer").fill(sub_email)
        ip.get_by_role("button", name="Invite sub-reviewer").click()
        expect(ip.get_by_role("status")).to_contain_text("Sub-reviewer invited")
        expect(ip.get_by_text(f"Sub-reviewer for {a.pseudonym}: Student Person")).to_be_visible()
        # the sub-reviewer: this paper only, writing the inviter's review
        sp = browser.page_for(sub_email)
        sp.goto(base + "/v/subrev")
        expect(sp.locator("tbody tr")).to_have_count(1)
        sp.get_by_role("link", name=s1.title).click()
        expect(sp.get_by_role("heading", name=f"The review you write for {a.pseudonym}")) \
            .to_be_visible()
        sp.get_by_label("Summary").fill("Written by the sub-reviewer.")
        sp.get_by_label("Strengths").fill("Clear.")
        sp.get_by_label("Questions for the authors").fill("Why?")
        sp.get_by_label("Weaknesses").fill("Small data.")
        sp.get_by_label("Overall score").select_option("6")
        sp.get_by_label("Confidence").select_option("3")
        sp.get_by_role("button", name="Submit review").click()
        expect(sp.get_by_role("status")).to_contain_text("Review saved")
        sp.screenshot(path=str(screenshot_dir() / "roles-subreviewer.png"), full_page=True)
        assert sp.goto(base + f"/s/{s2.id}").status == 403
        # the chair sees who it is; the area chair only the pseudonym
        cp = browser.page_for(CAST.chair)
        cp.goto(base + f"/s/{s1.id}")
        expect(cp.get_by_text(f"Sub-reviewer for {a.pseudonym}: Student Person")).to_be_visible()
        acp = browser.page_for(CAST.ac)
        acp.goto(base + f"/s/{s1.id}")
        expect(acp.get_by_text(f"Sub-reviewer for {a.pseudonym}")).to_be_visible()
        expect(acp.get_by_text("Student Person")).to_have_count(0)
        expect(acp.get_by_text("Written by the sub-reviewer.")).to_be_visible()
        browser.close()
    review = ReviewService(db, settings).bundle(s1.id).reviews
    mine = next(r for r in review if r.reviewer_id == inviter.id)
    assert mine.submitted and mine.summary == "Written by the sub-reviewer."
