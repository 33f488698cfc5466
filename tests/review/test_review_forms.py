"""Configurable, versioned review forms per venue: the definitions are
checked in one place; the authority decides every added field by its stage and audience (the
two-stage rule holds for them: a stage-2 field never reaches authors before they rated); a
review keeps the form version it was written with; the default form is today's fixed form;
the pages and the API."""

from __future__ import annotations

import itertools

import pytest
from review_helpers import csrf_of, service_as, web_login
from sqlalchemy import select

from icml25.review import models as m
from icml25.review.authority import Action, Facts, may
from icml25.review.demo import DEMO_PASSWORD, Cast, populate_venue
from icml25.review.errors import NotAllowed, ServiceError
from icml25.review.forms import (
    CORE_FIELDS,
    Audience,
    FormError,
    clean_answers,
    clean_fields,
    rows_from_form,
)
from icml25.review.workflow import PHASE_ORDER, Phase, Role

CAST = Cast()
P = Phase
# one field of every kind, stage and audience the tests read back (answers are markers)
FIELDS = [
    {"key": "novelty", "label": "Novelty", "kind": "score", "stage": 1, "required": True,
     "options": ["none", "some", "a lot"], "low": 0},
    {"key": "ethics", "label": "Ethics concerns", "kind": "text", "stage": 2,
     "required": True},
    {"key": "area", "label": "Best area", "kind": "choice", "stage": 1,
     "options": ["theory", "applications"]},
    {"key": "to_committee", "label": "Note to the committee", "kind": "text", "stage": 1,
     "audience": "committee"},
    {"key": "to_chairs", "label": "Confidential to the chairs", "kind": "text", "stage": 2,
     "audience": "chairs"},
    {"key": "code_ok", "label": "Code checked", "kind": "checkbox", "stage": 2},
]
CORE = dict(summary="S", strengths="St", questions="Q", weaknesses="W", score=6, confidence=3)


def _answers(tag: str) -> dict:
    return {"novelty": 2, "ethics": f"STAGE2-ETHICS-{tag}", "area": "theory",
            "to_committee": f"COMMITTEE-NOTE-{tag}", "to_chairs": f"CHAIRS-NOTE-{tag}",
            "code_ok": True}


# ---------------------------------------------------------------------- definitions (pure)
@pytest.mark.parametrize("row, why", [
    ({"key": "Bad Key", "label": "x", "kind": "text"}, "the key"),
    ({"key": "score", "label": "x", "kind": "text"}, "every form already"),
    ({"key": "a", "label": "", "kind": "text"}, "label"),
    ({"key": "a", "label": "x", "kind": "slider"}, "kind is one of"),
    ({"key": "a", "label": "x", "kind": "text", "stage": 3}, "stage is 1 or 2"),
    ({"key": "a", "label": "x", "kind": "text", "audience": "everyone"}, "visible to"),
    ({"key": "a", "label": "x", "kind": "score", "options": ["only"]}, "2-10 labels"),
    ({"key": "a", "label": "x", "kind": "choice", "options": ["y", "y"]}, "distinct"),
    ({"key": "a", "label": "x", "kind": "text", "options": ["y", "z"]}, "no options"),
    ({"key": "a", "label": "x", "kind": "text", "required": "yes"}, "true or false"),
    ({"key": "a", "label": "x", "kind": "choice", "options": "y | z"}, "a list"),
    ({"key": "a", "label": "x", "kind": "score", "options": ["p", "q"], "low": 99}, "-10"),
])
def test_a_field_definition_is_checked_in_one_place(row, why):
    with pytest.raises(FormError, match=why):
        clean_fields([row])


def test_keys_are_unique_and_forms_are_bounded():
    with pytest.raises(FormError, match="used twice"):
        clean_fields([FIELDS[0], FIELDS[0]])
    with pytest.raises(FormError, match="at most 20"):
        clean_fields([{"key": f"k{i}", "label": "x", "kind": "text"} for i in range(21)])
    fields = clean_fields(FIELDS)
    assert [f.key for f in fields] == [r["key"] for r in FIELDS]
    assert fields[0].scale.show(2) == "2 / 2 (a lot)" and fields[0].scale.low == 0


def test_answers_fit_their_form():
    fields = clean_fields(FIELDS)
    ok = clean_answers(fields, {"novelty": "1", "ethics": " e ", "area": "theory",
                                "code_ok": "1"}, submit=True)
    assert ok == {"novelty": 1, "ethics": "e", "area": "theory", "to_committee": "",
                  "to_chairs": "", "code_ok": True}
    for bad, why in [({"novelty": 3}, "from 0 to 2"), ({"novelty": "x"}, "whole number"),
                     ({"area": "biology"}, "one of: theory, applications"),
                     ({"code_ok": "maybe"}, "checked or not"), ({"nope": "x"}, "no field")]:
        with pytest.raises(FormError, match=why):
            clean_answers(fields, bad, submit=False)
    with pytest.raises(FormError, match="Ethics concerns is required"):
        clean_answers(fields, {"novelty": 1}, submit=True)
    # 0 is a value of novelty's scale (0..2), not a missing answer
    assert clean_answers(fields, {"novelty": 0, "ethics": "e"}, submit=True)["novelty"] == 0
    draft = clean_answers(fields, {"novelty": 1}, submit=False)  # a draft may be partial
    assert draft["ethics"] == "" and draft["novelty"] == 1 and draft["code_ok"] is False


def test_the_pages_rows_parse_into_fields():
    form = {"csrf_token": "t", "f1_key": "novelty", "f1_label": "Novelty", "f1_kind": "score",
            "f1_stage": "2", "f1_options": "low | mid | high", "f1_low": "1",
            "f1_required": "1", "f1_audience": "authors", "f2_key": "", "f2_label": "",
            "f3_key": "gone", "f3_label": "Gone", "f3_kind": "text", "f3_remove": "1"}
    (row,) = rows_from_form(form)
    (f,) = clean_fields([row])
    assert (f.key, f.stage, f.required, f.options, f.low) == (
        "novelty", 2, True, ("low", "mid", "high"), 1)
    with pytest.raises(FormError, match="whole number"):
        rows_from_form(form | {"f1_low": "one"})


def test_the_fixed_fields_are_the_papers_form():
    assert [(f.key, f.stage, f.kind, f.required) for f in CORE_FIELDS] == [
        ("summary", 1, "text", True), ("strengths", 1, "text", True),
        ("questions", 1, "text", True), ("weaknesses", 2, "text", True),
        ("score", 2, "score", True), ("confidence", 2, "score", True)]


# ---------------------------------------------------------------------- the authority (pure)
PERSONAS = {
    "chair": dict(venue_roles=frozenset({Role.CHAIR})),
    "chair_conflicted": dict(venue_roles=frozenset({Role.CHAIR}), conflicted=True),
    "ac_assigned": dict(venue_roles=frozenset({Role.AC}), is_assigned_ac=True),
    "reviewer_peer": dict(venue_roles=frozenset({Role.REVIEWER}), is_assigned_reviewer=True,
                          own_review_submitted=True),
    "reviewer_peer_nodone": dict(venue_roles=frozenset({Role.REVIEWER}),
                                 is_assigned_reviewer=True),
    "writer": dict(venue_roles=frozenset({Role.REVIEWER}), is_assigned_reviewer=True,
                   own_review_submitted=True, own_review=True),
    "reviewer_other": dict(venue_roles=frozenset({Role.REVIEWER})),
    "author": dict(is_author=True, conflicted=True, authored_in_venue=True),
    "outsider": dict(),
}


def expected_field(persona: str, stage: int, audience: str, phase: Phase,
                   released: bool) -> bool:
    """Who reads an added field, stated from the issue (independently of authority.py)."""
    if persona == "writer":
        return True
    sees_reviews = persona in ("chair", "ac_assigned", "reviewer_peer")
    if audience == "chairs":
        return persona in ("chair", "ac_assigned")
    if sees_reviews:
        return True
    if persona != "author" or audience != "authors":
        return False
    after_feedback = PHASE_ORDER.index(phase) >= PHASE_ORDER.index(P.FEEDBACK)
    return after_feedback and (stage == 1 or released)


def test_the_authority_decides_every_added_field():
    checked = 0
    for (persona, kw), stage, audience, phase, released in itertools.product(
            PERSONAS.items(), (1, 2), list(Audience), PHASE_ORDER, (False, True)):
        f = Facts(phase=phase, has_submission=True, review_submitted=True, verified=True,
                  stage2_released=released, field_stage=stage, field_audience=audience, **kw)
        assert may(Action.VIEW_REVIEW_FIELD, f) == expected_field(
            persona, stage, audience.value, phase, released), (
            persona, stage, audience.value, phase.value, released)
        checked += 1
    assert checked == len(PERSONAS) * 2 * 3 * len(PHASE_ORDER) * 2
    # an author-visible stage-2 field follows the core stage-2 rule exactly
    for phase, released in itertools.product(PHASE_ORDER, (False, True)):
        f = Facts(phase=phase, review_submitted=True, verified=True, is_author=True,
                  conflicted=True, stage2_released=released, field_stage=2)
        assert may(Action.VIEW_REVIEW_FIELD, f) == may(Action.VIEW_REVIEW_STAGE2, f)
    # drafts stay with their writer; anonymous and unverified accounts see nothing
    draft = dict(phase=P.REVIEWING, verified=True, venue_roles=frozenset({Role.CHAIR}))
    assert not may(Action.VIEW_REVIEW_FIELD, Facts(**draft))
    assert not may(Action.VIEW_REVIEW_FIELD, Facts(P.REBUTTAL, logged_in=False,
                                                   review_submitted=True))
    assert not may(Action.VIEW_REVIEW_FIELD, Facts(P.REBUTTAL, is_author=True,
                                                   review_submitted=True))


def test_chairs_manage_the_form_until_reviews_reach_the_authors():
    for phase in PHASE_ORDER:
        early = PHASE_ORDER.index(phase) < PHASE_ORDER.index(P.FEEDBACK)
        for role in Role:
            f = Facts(phase=phase, venue_roles=frozenset({role}), verified=True)
            assert may(Action.MANAGE_REVIEW_FORM, f) == (role is Role.CHAIR and early)
            assert may(Action.VIEW_REVIEW_FORM, f)
        assert not may(Action.VIEW_REVIEW_FORM, Facts(phase=phase, verified=True,
                                                      authored_in_venue=True))


# ---------------------------------------------------------------------- on the database
def _reviewing_venue(db, settings, slug: str):
    venue = populate_venue(db, settings, slug, P.ASSIGNMENT)
    chair = service_as(db, settings, CAST.chair)
    chair.advance_phase(venue)  # reviewing
    sub = db.scalar(select(m.Submission).where(m.Submission.venue_id == venue.id,
                                               m.Submission.number == 1))
    reviewers = [db.get(m.User, a.user_id).email for a in chair.bundle(sub.id).assignments
                 if a.role == Role.REVIEWER]
    return venue, chair, sub, reviewers


def _texts(view: dict) -> str:
    return repr(view)


def test_added_fields_reach_each_reader_as_the_authority_says(client, db, settings):
    venue, chair, sub, reviewers = _reviewing_venue(db, settings, "forms")
    form = chair.save_review_form(venue, FIELDS)
    assert form["version"] == 1 and [f["key"] for f in form["fields"]][6:] == [
        r["key"] for r in FIELDS]
    for i, email in enumerate(reviewers):
        rev = service_as(db, settings, email)
        with pytest.raises(ServiceError, match="Ethics concerns is required"):
            rev.save_review(sub.id, **CORE, answers={"novelty": 1})
        r = rev.save_review(sub.id, **CORE, answers=_answers(str(i)))
        assert r.form_version == 1
    ac = service_as(db, settings, CAST.ac)
    author_email = db.get(m.User, sub.submitter_id).email
    author = service_as(db, settings, author_email)
    peer = service_as(db, settings, reviewers[1])
    # reviewing: the peer (own review submitted) reads committee notes but never the chairs'
    seen = _texts(peer.submission_page(sub.id))
    assert "COMMITTEE-NOTE-0" in seen and "STAGE2-ETHICS-0" in seen
    assert "CHAIRS-NOTE-0" not in seen and "CHAIRS-NOTE-1" in seen  # their own
    for staff in (ac, chair):
        seen = _texts(staff.submission_page(sub.id))
        assert all(f"CHAIRS-NOTE-{i}" in seen for i in range(len(reviewers)))
    assert "NOTE" not in _texts(author.submission_page(sub.id))
    # feedback: authors read stage 1 of the author-visible fields only
    chair.advance_phase(venue, force=True)  # paper 2's reviews are not written
    web_login(client, author_email, DEMO_PASSWORD)
    token = author.create_api_token("t")
    auth = {"Authorization": f"Bearer {token}"}

    def author_sees() -> str:
        db.expire_all()
        return (_texts(author.submission_page(sub.id)) + client.get(f"/s/{sub.id}").text
                + client.get(f"/api/v1/submissions/{sub.id}", headers=auth).text
                + client.get("/v/forms/export.json").text)

    seen = author_sees()
    assert "Novelty" in seen and "2 / 2 (a lot)" in seen and "theory" in seen
    for hidden in ("STAGE2-ETHICS", "COMMITTEE-NOTE", "CHAIRS-NOTE", "Code checked"):
        assert hidden not in seen, hidden
    reviews = sorted(chair.bundle(sub.id).submitted_reviews(), key=lambda r: r.id)
    for r in reviews[:-1]:
        author.give_feedback(r.id, comprehension=4, constructiveness=4)
    assert "STAGE2-ETHICS" not in author_sees()  # one review still unrated
    author.give_feedback(reviews[-1].id, comprehension=4, constructiveness=4)
    seen = author_sees()
    assert all(f"STAGE2-ETHICS-{i}" in seen for i in range(len(reviewers)))
    assert "Code checked" in seen
    assert "COMMITTEE-NOTE" not in seen and "CHAIRS-NOTE" not in seen


def test_a_review_keeps_the_form_version_it_was_written_with(db, settings):
    """Regression (versioning): changing the form never changes a submitted review."""
    venue, chair, sub, reviewers = _reviewing_venue(db, settings, "versions")
    v1 = [{"key": "novelty", "label": "Novelty", "kind": "score", "stage": 1,
           "options": ["low", "high"], "required": True}]
    chair.save_review_form(venue, v1)
    first = service_as(db, settings, reviewers[0])
    first.save_review(sub.id, **CORE, answers={"novelty": 2})
    drafter = service_as(db, settings, reviewers[1])
    drafter.save_review(sub.id, **CORE, answers={"novelty": 1}, submit=False)
    # version 2 relabels and moves novelty, re-scales it and adds a required field
    v2 = [{"key": "novelty", "label": "Originality", "kind": "score", "stage": 2,
           "options": ["a", "b", "c", "d", "e"], "required": True},
          {"key": "reproducible", "label": "Reproducible", "kind": "checkbox", "stage": 2,
           "required": True}]
    assert chair.save_review_form(venue, v2)["version"] == 2
    assert chair.save_review_form(venue, v2)["version"] == 2  # unchanged: no new version
    page = chair.submission_page(sub.id)
    old = next(r for r in page["reviews"] if r["submitted"])
    assert old["form_version"] == 1
    assert [(a["label"], a["stage"], a["shown"]) for a in old["answers"]] == [
        ("Novelty", 1, "2 / 2 (high)")]
    # the submitted review is edited with its own version: the new field is not asked
    again = first.save_review(sub.id, **CORE | {"summary": "S2"}, answers={"novelty": 1})
    assert again.form_version == 1
    with pytest.raises(ServiceError, match="no field 'reproducible'"):
        first.save_review(sub.id, **CORE, answers={"novelty": 1, "reproducible": True})
    assert first.submission_page(sub.id)["can"]["review_form"]["version"] == 1
    # a draft moves to the newest version (and must now answer its fields)
    assert drafter.submission_page(sub.id)["can"]["review_form"]["version"] == 2
    with pytest.raises(ServiceError, match="Reproducible is required"):
        drafter.save_review(sub.id, **CORE, answers={"novelty": 5})
    r = drafter.save_review(sub.id, **CORE, answers={"novelty": 5, "reproducible": True})
    assert r.form_version == 2
    views = {v["form_version"]: v for v in chair.submission_page(sub.id)["reviews"]}
    assert [a["shown"] for a in views[2]["answers"]] == ["5 / 5 (e)", "yes"]
    assert [a["shown"] for a in views[1]["answers"]] == ["1 / 2 (low)"]
    versions = chair.review_form(venue)["versions"]
    assert [(x["version"], x["added_fields"], x["reviews"]) for x in versions] == [
        (0, 0, 0), (1, 1, 1), (2, 2, 1)]
    assert chair.review_form(venue, 1)["fields"][6]["label"] == "Novelty"
    stored = db.scalars(select(m.ReviewFormVersion.fields).where(
        m.ReviewFormVersion.venue_id == venue.id).order_by(m.ReviewFormVersion.version)).all()
    assert len(stored) == 2 and '"Novelty"' in stored[0]  # version 1 untouched


def test_the_default_form_is_the_fixed_form(db, settings):
    venue, chair, sub, reviewers = _reviewing_venue(db, settings, "plain")
    form = chair.review_form(venue)
    assert form["version"] == 0 and [f["key"] for f in form["fields"]] == [
        f.key for f in CORE_FIELDS]
    service_as(db, settings, reviewers[0]).save_review(sub.id, **CORE)
    (view,) = [r for r in chair.submission_page(sub.id)["reviews"]]
    assert view["form_version"] == 0 and view["answers"] == []
    assert {k: view[k] for k in CORE} == CORE
    with pytest.raises(ServiceError, match="no field"):
        service_as(db, settings, reviewers[0]).save_review(sub.id, **CORE, answers={"x": 1})


def test_only_chairs_change_the_form_and_only_before_feedback(db, settings):
    venue, chair, sub, reviewers = _reviewing_venue(db, settings, "who")
    with pytest.raises(NotAllowed):
        service_as(db, settings, reviewers[0]).save_review_form(venue, FIELDS)
    with pytest.raises(NotAllowed):
        service_as(db, settings, CAST.authors[0]).review_form(venue)
    assert service_as(db, settings, reviewers[0]).review_form(venue)["can_edit"] is False
    assert "versions" not in service_as(db, settings, reviewers[0]).review_form(venue)
    with pytest.raises(ServiceError, match="kind is one of"):
        chair.save_review_form(venue, [{"key": "a", "label": "A", "kind": "x"}])
    for email in reviewers:
        service_as(db, settings, email).save_review(sub.id, **CORE)
    other = db.scalar(select(m.Submission).where(m.Submission.venue_id == venue.id,
                                                 m.Submission.number == 2))
    for a in chair.bundle(other.id).assignments:
        if a.role == Role.REVIEWER:
            service_as(db, settings, db.get(m.User, a.user_id).email).save_review(
                other.id, **CORE)
    chair.advance_phase(venue)  # feedback
    with pytest.raises(NotAllowed, match="fixed once reviews go to the authors"):
        chair.save_review_form(venue, FIELDS)


# ---------------------------------------------------------------------- API and pages
def test_the_review_form_api(client, db, settings):
    venue, chair, sub, reviewers = _reviewing_venue(db, settings, "fapi")
    chair_auth = {"Authorization": f"Bearer {chair.create_api_token('t')}"}
    rev_auth = {"Authorization": "Bearer "
                + service_as(db, settings, reviewers[0]).create_api_token("t")}
    author_auth = {"Authorization": "Bearer "
                   + service_as(db, settings, CAST.authors[0]).create_api_token("t")}
    url = "/api/v1/venues/fapi/review-form"
    got = client.get(url, headers=chair_auth).json()
    assert got["version"] == 0 and len(got["fields"]) == 6 and got["can_edit"] is True
    put = client.put(url, headers=chair_auth, json={"fields": FIELDS})
    assert put.status_code == 200 and put.json()["version"] == 1
    assert [f["key"] for f in put.json()["fields"] if not f["core"]] == [
        r["key"] for r in FIELDS]
    assert [v["version"] for v in put.json()["versions"]] == [0, 1]
    assert client.put(url, headers=chair_auth, json={"fields": [
        {"key": "a", "label": "A", "kind": "slider"}]}).status_code == 400
    assert client.put(url, headers=chair_auth, json={"fields": [{"key": "a"}]}).status_code \
        == 422
    assert client.put(url, headers=rev_auth, json={"fields": []}).status_code == 403
    seen = client.get(url, headers=rev_auth).json()
    assert seen["version"] == 1 and seen["can_edit"] is False and seen["versions"] is None
    assert client.get(url, headers=author_auth).status_code == 403
    assert client.get(url + "?version=0", headers=rev_auth).json()["version"] == 0
    assert client.get(url + "?version=7", headers=rev_auth).status_code == 404
    # writing a review with answers through the API
    review_url = f"/api/v1/submissions/{sub.id}/review"
    body = CORE | {"answers": _answers("api")}
    r = client.post(review_url, headers=rev_auth, json=body)
    assert r.status_code == 200 and r.json()["form_version"] == 1
    bad = client.post(review_url, headers=rev_auth, json=CORE | {"answers": {"novelty": 9}})
    assert bad.status_code == 400 and "from 0 to 2" in bad.json()["detail"]
    view = client.get(f"/api/v1/submissions/{sub.id}", headers=chair_auth).json()
    (mine,) = view["reviews"]
    assert {a["key"]: a["value"] for a in mine["answers"]} == _answers("api")


def test_the_chairs_page_defines_the_form_and_reviewers_fill_it(client, db, settings):
    venue, chair, sub, reviewers = _reviewing_venue(db, settings, "fweb")
    web_login(client, CAST.chair, DEMO_PASSWORD)
    page = client.get("/v/fweb/review-form").text
    assert "Version <strong>0</strong>" in page and "Overall score" in page
    assert 'name="f3_key"' in page and 'name="f4_key"' not in page  # three blank rows
    data = {"csrf_token": csrf_of(page), "f1_key": "novelty", "f1_label": "Novelty",
            "f1_kind": "score", "f1_stage": "2", "f1_audience": "authors",
            "f1_options": "low | high", "f1_low": "1", "f1_required": "1"}
    bad = client.post("/v/fweb/review-form", data=data | {"f1_kind": "slider"})
    assert bad.status_code == 400 and "kind is one of" in bad.text
    ok = client.post("/v/fweb/review-form", data=data)
    assert ok.status_code == 200 and "Review form saved: version 1" in ok.text
    assert 'value="novelty"' in ok.text and "1 = low; 2 = high" in ok.text
    web_login(client, reviewers[0], DEMO_PASSWORD)
    page = client.get(f"/s/{sub.id}").text
    part2 = page[page.index("Part 2"):page.index('name="action"')]
    assert 'name="answer_novelty"' in part2 and "Novelty (required)" in part2
    form = {k: str(v) for k, v in CORE.items()} | {"csrf_token": csrf_of(page),
                                                   "action": "submit"}
    assert client.post(f"/s/{sub.id}/review", data=form).status_code == 400  # required
    assert client.post(f"/s/{sub.id}/review",
                       data=form | {"answer_novelty": "2"}).status_code == 200
    db.expire_all()
    stored = db.scalar(select(m.Review).where(m.Review.submission_id == sub.id))
    assert (stored.form_version, stored.answers) == (1, '{"novelty": 2}')
    assert "2 / 2 (high)" in client.get(f"/s/{sub.id}").text
    assert client.get("/v/fweb/review-form").status_code == 200
    assert client.post("/v/fweb/review-form", data=data | {
        "csrf_token": csrf_of(page)}).status_code == 403


def test_labels_and_answers_render_as_text(client, db, settings):
    venue, chair, sub, reviewers = _reviewing_venue(db, settings, "fxss")
    payload = "<script>alert(1)</script>"
    chair.save_review_form(venue, [
        {"key": "x", "label": payload, "kind": "choice", "options": [payload, "b"],
         "help": '<img src=x onerror="alert(2)">'},
        {"key": "t", "label": "T", "kind": "text"}])
    service_as(db, settings, reviewers[0]).save_review(
        sub.id, **CORE, answers={"x": payload, "t": payload})
    web_login(client, CAST.chair, DEMO_PASSWORD)
    for url in ("/v/fxss/review-form", f"/s/{sub.id}"):
        page = client.get(url).text
        assert "<script>alert" not in page and "<img src=x" not in page, url
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page, url


def test_the_demo_venues_use_a_form_with_a_stage2_and_a_confidential_field(db, settings):
    from icml25.review.demo import DEMO_FORM

    venue = populate_venue(db, settings, "dform", P.FEEDBACK, form=DEMO_FORM)
    subs = db.scalars(select(m.Submission).where(m.Submission.venue_id == venue.id)
                      .order_by(m.Submission.number)).all()
    author = service_as(db, settings, CAST.authors[0])
    rated = author.submission_page(subs[0].id)  # every review rated: stage 2 released
    assert [[a["label"] for a in r["answers"]] for r in rated["reviews"]] == [
        ["Reproducibility"]] * 3
    assert "A note on paper" not in repr(rated)
    # paper 2: one review of three rated, so stage 2 (and the field) stays withheld
    partly = service_as(db, settings, db.get(m.User, subs[1].submitter_id).email)
    assert all(r["answers"] == [] for r in partly.submission_page(subs[1].id)["reviews"])
    ac = service_as(db, settings, CAST.ac).submission_page(subs[0].id)
    assert [len(r["answers"]) for r in ac["reviews"]] == [2, 2, 2]
    assert "A note on paper 1 from Reviewer A." in repr(ac)
