"""Senior area chairs and sub-reviewers on a real database, through the
services and the API: a SAC sees and manages the papers of the ACs they oversee and no more
(conflicts still apply); a sub-reviewer invited by a reviewer sees that one paper and writes
the inviter's review; the chair sees who they are, everyone else a pseudonym."""

from __future__ import annotations

import json

import pytest
from review_helpers import service_as
from sqlalchemy import select

from icml25.review import models as m
from icml25.review.demo import DEMO_PASSWORD, Cast, populate_venue
from icml25.review.errors import NotAllowed, NotFound, ServiceError
from icml25.review.service import ReviewService
from icml25.review.workflow import Phase, Role

CAST = Cast()
SAC, SAC_CONFLICTED, AC2 = "sac@sac-inst.example", "sac2@uni-a.example", "ac2@ac2-inst.example"
SUB, SUB_CONFLICTED = "sub@sub-lab.example", "colleague@uni-b.example"
SUB_OK = "second-sub@sub2-lab.example"


def _user(db, email: str) -> m.User:
    return db.scalar(select(m.User).where(m.User.email == email))


def _subs(db, venue) -> list[m.Submission]:
    return db.scalars(select(m.Submission).where(m.Submission.venue_id == venue.id)
                      .order_by(m.Submission.number)).all()


@pytest.fixture
def venue(db, settings):
    """Three papers in reviewing: papers 1 and 3 under the cast's AC (overseen by SAC), paper 2
    under AC2 (overseen by nobody); SAC is conflicted with paper 3 (declared by its authors)."""
    base = ReviewService(db, settings)
    for email, name in ((SAC, "Senior Person"), (SAC_CONFLICTED, "Senior Colleague"),
                        (AC2, "Second AC"), (SUB, "Sub Person"),
                        (SUB_CONFLICTED, "Author Colleague"), (SUB_OK, "Second Sub")):
        base.create_user(email, name, DEMO_PASSWORD)
    v = populate_venue(db, settings, "roles", Phase.REVIEWING, n_papers=3)
    chair = service_as(db, settings, CAST.chair)
    for email, role in ((SAC, Role.SAC), (SAC_CONFLICTED, Role.SAC), (AC2, Role.AC)):
        chair.add_member(v, email, role)
    subs = _subs(db, v)
    ac, ac2 = _user(db, CAST.ac), _user(db, AC2)
    chair.unassign(subs[1].id, ac.id)
    chair.assign(subs[1].id, ac2.id, Role.AC)
    chair.set_senior_ac(v, ac.id, _user(db, SAC).id)
    chair.set_senior_ac(v, ac2.id, _user(db, SAC_CONFLICTED).id)
    db.add(m.Conflict(submission_id=subs[2].id, user_id=_user(db, SAC).id,
                      reason="declared by authors"))
    db.commit()
    return v


def test_a_senior_ac_sees_and_manages_the_papers_of_their_area_chairs_only(db, settings, venue):
    s1, s2, s3 = _subs(db, venue)
    sac = service_as(db, settings, SAC)
    listed = {x["number"] for x in sac.venue_page(venue)["submissions"]}
    assert listed == {1}  # paper 2: another AC's; paper 3: conflicted
    page = sac.submission_page(s1.id)
    assert "senior area chair" in page["my_roles"]
    assert page["reviews"] and all(r["reviewer_name"] for r in page["reviews"])  # staff view
    assert {a["name"] for a in page["assignments"]} >= {"Area Chair Person"}
    assert "authors" not in page  # double blind holds for senior area chairs
    assert "conflicts" not in page and "bids" not in page  # chair notes
    assert all("feedback" not in r for r in page["reviews"])  # individual ratings: chairs
    for sid in (s2.id, s3.id):
        with pytest.raises(NotAllowed):
            sac.submission_page(sid)
        with pytest.raises(NotAllowed):
            sac.pdf(sid)
    # manage: assign and unassign a reviewer on their paper, never an area chair or elsewhere
    spare = next(u for u in (_user(db, e) for e in CAST.reviewers)
                 if u.id not in {a["user_id"] for a in page["assignments"]})
    assert spare.id in {p["user_id"] for p in sac.assignable_people(s1.id)}
    assert all(p["role"] == "reviewer" for p in sac.assignable_people(s1.id))
    sac.assign(s1.id, spare.id)
    assert spare.id in {a.user_id for a in base_bundle(db, settings, s1.id).assignments}
    sac.unassign(s1.id, spare.id)
    with pytest.raises(NotAllowed):
        sac.assign(s1.id, _user(db, AC2).id, Role.AC)
    with pytest.raises(NotAllowed):
        sac.assign(s2.id, spare.id)
    with pytest.raises(NotAllowed):
        sac.assign(s3.id, spare.id)
    for chair_only in (lambda: sac.admin_page(venue), lambda: sac.auto_assign(venue),
                       lambda: sac.set_senior_ac(venue, _user(db, CAST.ac).id, None)):
        with pytest.raises(NotAllowed):
            chair_only()
    console = sac.senior_ac_console(venue)
    assert [(g["name"], [p["number"] for p in g["papers"]]) for g in console["area_chairs"]] \
        == [("Area Chair Person", [1])]


def base_bundle(db, settings, sid):
    return ReviewService(db, settings).bundle(sid)


def test_the_conflicted_senior_ac_of_every_paper_sees_none(db, settings, venue):
    # SAC_CONFLICTED (uni-a.example, the authors' institution) oversees AC2 of paper 2
    other = service_as(db, settings, SAC_CONFLICTED)
    assert other.venue_page(venue)["submissions"] == []
    for s in _subs(db, venue):
        with pytest.raises(NotAllowed):
            other.submission_page(s.id)
    assert other.senior_ac_console(venue)["area_chairs"] == []


def test_senior_acs_post_and_rate_later_but_never_decide(db, settings):
    base = ReviewService(db, settings)
    base.create_user(SAC, "Senior Person", DEMO_PASSWORD)
    seen = {}

    def on_phase(phase: Phase) -> None:
        v = db.scalar(select(m.Venue).where(m.Venue.slug == "sacflow"))
        chair = service_as(db, settings, CAST.chair)
        if phase is Phase.SUBMISSION:
            chair.add_member(v, SAC, Role.SAC)
            chair.set_senior_ac(v, _user(db, CAST.ac).id, _user(db, SAC).id)
        sac = service_as(db, settings, SAC)
        s1 = _subs(db, v)[0]
        if phase is Phase.DISCUSSION:
            sac.post_discussion(s1.id, "Senior view: please converge.")
            labels = [p["author"] for p in service_as(db, settings, CAST.ac)
                      .submission_page(s1.id)["discussion"]]
            seen["label"] = labels[-1]
        if phase is Phase.DECISION:
            review = base.bundle(s1.id).submitted_reviews()[0]
            sac.rate_review(review.id, 4)
            with pytest.raises(NotAllowed):
                sac.decide(s1.id, "accept")
            db.rollback()

    populate_venue(db, settings, "sacflow", Phase.DECISION, on_phase=on_phase)
    assert seen["label"] == "Senior Area Chair"


def test_a_subreviewer_writes_the_inviters_review_and_sees_that_paper_only(db, settings, venue):
    s1, s2, _ = _subs(db, venue)
    b = base_bundle(db, settings, s1.id)
    rev_assignment = next(a for a in b.assignments if a.role == "reviewer")
    inviter_email = db.get(m.User, rev_assignment.user_id).email
    inviter = service_as(db, settings, inviter_email)
    # refused with ONE message whatever the reason (else "conflicted" would reveal the
    # authors' institution and "already on this paper" a co-reviewer); chairs read the reason
    refusals = {}
    for email in ("nobody@nowhere.example", SUB_CONFLICTED, CAST.ac):
        with pytest.raises(ServiceError) as exc:
            inviter.invite_subreviewer(s1.id, email)
        refusals[email] = str(exc.value)
    assert len(set(refusals.values())) == 1 and "cannot be invited" in refusals[CAST.ac]
    reasons = [json.loads(d)["reason"] for d in db.scalars(select(m.AuditEvent.detail).where(
        m.AuditEvent.action == "subreviewer.refused").order_by(m.AuditEvent.id))]
    assert reasons == ["no verified account", "conflicted with the paper",
                       "already assigned to the paper"]
    # only an assigned reviewer invites
    for email in (CAST.ac, SAC, CAST.authors[0]):
        with pytest.raises(NotAllowed):
            service_as(db, settings, email).invite_subreviewer(s1.id, SUB)
    row = inviter.invite_subreviewer(s1.id, SUB)
    with pytest.raises(ServiceError, match="already have a sub-reviewer"):
        inviter.invite_subreviewer(s1.id, SUB_OK)
    sub = service_as(db, settings, SUB)
    [home] = [v for v in sub.dashboard() if v["slug"] == "roles"]  # their home page
    assert home["todo"] == ["Write the review of submission #1 (as a sub-reviewer)"]
    assert home["timeline"] == {}  # the venue's card only: not a member
    page = sub.submission_page(s1.id)
    assert page["my_roles"] == ["sub-reviewer"]
    assert page["subreviewer_for"] == [rev_assignment.pseudonym]
    assert page["can"]["write_delegated_review"] and not page["can"]["write_review"]
    assert "authors" not in page and "assignments" not in page and "subreviewers" not in page
    mine = [r for r in page["reviews"]]
    assert all(r["reviewer"] == rev_assignment.pseudonym for r in mine)  # only the inviter's
    assert all("reviewer_name" not in r for r in mine)
    assert [x["number"] for x in sub.venue_page(venue)["submissions"]] == [1]
    with pytest.raises(NotAllowed):
        sub.submission_page(s2.id)
    sub.pdf(s1.id)  # the paper itself
    # writing goes through the inviter's assignment: one review per assignment
    n_before = len(base_bundle(db, settings, s1.id).reviews)
    r = sub.save_delegated_review(s1.id, summary="Sub summary", strengths="S", questions="Q",
                                  weaknesses="W", score=7, confidence=3, submit=True)
    assert r.reviewer_id == rev_assignment.user_id and r.submitted
    assert len(base_bundle(db, settings, s1.id).reviews) == n_before
    assert inviter.submission_page(s1.id)["can"]["my_review"]["summary"] == "Sub summary"
    events = db.scalars(select(m.AuditEvent.action).where(
        m.AuditEvent.actor_id == _user(db, SUB).id)).all()
    assert "review.by_subreviewer" in events
    with pytest.raises(NotAllowed):  # they write only through the delegation
        sub.save_review(s1.id, summary="x", strengths="x", questions="x", weaknesses="x",
                        score=5, confidence=2)
    # named to the chair and the inviter, pseudonymous to the paper's AC and SAC
    label = f"Sub-reviewer for {rev_assignment.pseudonym}"
    for email, named in ((CAST.chair, True), (inviter_email, True), (CAST.ac, False),
                         (SAC, False)):
        rows = service_as(db, settings, email).subreviewers(s1.id)
        assert [x["label"] for x in rows] == [label], email
        assert ("name" in rows[0]) is named and (rows[0].get("email") == SUB) is named, email
    peer = next(a for a in b.assignments if a.role == "reviewer" and a.id != rev_assignment.id)
    peer_svc = service_as(db, settings, db.get(m.User, peer.user_id).email)
    assert "subreviewers" not in peer_svc.submission_page(s1.id)
    assert "subreviewers" not in service_as(db, settings, CAST.authors[0]).submission_page(s1.id)
    # the AC cannot revoke (they do not know who it is); the inviter can, and access ends
    with pytest.raises(NotAllowed):
        service_as(db, settings, CAST.ac).revoke_subreviewer(s1.id, row.id)
    inviter.revoke_subreviewer(s1.id, row.id)
    with pytest.raises(NotAllowed):
        sub.submission_page(s1.id)
    with pytest.raises(NotFound):
        inviter.revoke_subreviewer(s1.id, row.id)


def test_a_subreviewer_loses_access_with_the_inviter_and_writes_only_while_reviewing(
        db, settings, venue):
    s1 = _subs(db, venue)[0]
    b = base_bundle(db, settings, s1.id)
    chair = service_as(db, settings, CAST.chair)
    spare = next(u for u in (_user(db, e) for e in CAST.reviewers)
                 if b.assignment_of(u.id) is None)
    chair.assign(s1.id, spare.id)
    inviter = service_as(db, settings, spare.email)
    inviter.invite_subreviewer(s1.id, SUB)
    sub = service_as(db, settings, SUB)
    sub.save_delegated_review(s1.id, summary="draft", strengths="", questions="",
                              weaknesses="", score=None, confidence=None, submit=False)
    assert chair.subreviewers(s1.id)[0]["active"]
    chair.unassign(s1.id, spare.id)  # the draft goes with the assignment
    with pytest.raises(NotAllowed):
        sub.submission_page(s1.id)
    # another reviewer's sub-reviewer: writing only while the venue is reviewing
    other = next(a for a in b.assignments if a.role == "reviewer")
    service_as(db, settings, db.get(m.User, other.user_id).email).invite_subreviewer(
        s1.id, SUB_OK)
    late = service_as(db, settings, SUB_OK)
    chair.advance_phase(venue, force=True)  # feedback
    with pytest.raises(NotAllowed):
        late.save_delegated_review(s1.id, summary="late", strengths="s", questions="q",
                                   weaknesses="w", score=5, confidence=2)
    db.rollback()
    assert late.submission_page(s1.id)["my_roles"] == ["sub-reviewer"]  # still reads it


def test_roles_through_the_api(client, db, settings, venue):
    s1, s2, _ = _subs(db, venue)
    tokens = {e: service_as(db, settings, e).create_api_token("t")
              for e in (CAST.chair, SAC, SUB)}

    def h(e):
        return {"Authorization": f"Bearer {tokens[e]}"}

    r = client.get("/api/v1/venues/roles/senior-acs", headers=h(CAST.chair))
    assert r.status_code == 200
    by_name = {row["name"]: [a["name"] for a in row["area_chairs"]] for row in r.json()}
    assert by_name["Senior Person"] == ["Area Chair Person"]
    assert client.get("/api/v1/venues/roles/senior-acs", headers=h(SAC)).status_code == 403
    ac2 = _user(db, AC2).id
    r = client.put(f"/api/v1/venues/roles/area-chairs/{ac2}/senior-ac", headers=h(CAST.chair),
                   json={"sac_id": _user(db, SAC).id})
    assert r.status_code == 200
    console = client.get("/api/v1/venues/roles/senior-ac-console", headers=h(SAC)).json()
    assert sorted(p["number"] for g in console["area_chairs"] for p in g["papers"]) == [1, 2]
    assert client.get(f"/api/v1/submissions/{s2.id}", headers=h(SAC)).status_code == 200
    # a sub-reviewer through the API
    b = base_bundle(db, settings, s1.id)
    inviter_email = db.get(m.User, next(a.user_id for a in b.assignments
                                        if a.role == "reviewer")).email
    tokens[inviter_email] = service_as(db, settings, inviter_email).create_api_token("t")
    r = client.post(f"/api/v1/submissions/{s1.id}/subreviewers", headers=h(inviter_email),
                    json={"email": SUB})
    assert r.status_code == 201, r.text
    r = client.post(f"/api/v1/submissions/{s1.id}/delegated-review", headers=h(SUB), json={
        "summary": "API sub", "strengths": "s", "questions": "q", "weaknesses": "w",
        "score": 6, "confidence": 2, "submit": False})
    # the inviter's review was submitted already: an edit keeps it submitted
    assert r.status_code == 200 and r.json()["submitted"] is True
    chair_view = client.get(f"/api/v1/submissions/{s1.id}", headers=h(CAST.chair)).json()
    assert "API sub" in {rv["summary"] for rv in chair_view["reviews"]}
    rows = client.get(f"/api/v1/submissions/{s1.id}/subreviewers", headers=h(SAC)).json()
    assert rows and "email" not in rows[0] or rows[0]["email"] is None
    rows = client.get(f"/api/v1/submissions/{s1.id}/subreviewers", headers=h(CAST.chair)).json()
    assert rows[0]["email"] == SUB
    assert client.get(f"/api/v1/submissions/{s2.id}", headers=h(SUB)).status_code == 403


def test_a_subreviewer_fills_the_venues_review_form_too(db, settings, venue):
    """The sub-reviewer writes with the inviter's form version and its added fields: a required
    field is asked for, and the answers are stored on the inviter's review."""
    s1 = _subs(db, venue)[0]
    chair = service_as(db, settings, CAST.chair)
    chair.save_review_form(venue, [{"key": "novelty", "label": "Novelty", "kind": "score",
                                    "stage": 1, "required": True,
                                    "options": ["none", "some", "a lot"], "low": 0}])
    b = base_bundle(db, settings, s1.id)
    inviter_id = next(a.user_id for a in b.assignments if a.role == "reviewer")
    # the inviter's review is still a draft, so it is written with the newest form
    for r in db.scalars(select(m.Review).where(m.Review.submission_id == s1.id,
                                               m.Review.reviewer_id == inviter_id)):
        r.submitted = False
    db.commit()
    service_as(db, settings, db.get(m.User, inviter_id).email).invite_subreviewer(s1.id, SUB)
    sub = service_as(db, settings, SUB)
    form = sub.submission_page(s1.id)["can"]["review_form"]
    assert form["version"] == 1 and [f["key"] for f in form["fields"]] == ["novelty"]
    core = dict(summary="S", strengths="St", questions="Q", weaknesses="W", score=6,
                confidence=3)
    with pytest.raises(ServiceError):  # the required added field is missing
        sub.save_delegated_review(s1.id, **core)
    r = sub.save_delegated_review(s1.id, **core, answers={"novelty": 2})
    assert r.reviewer_id == inviter_id and r.form_version == 1
    assert sub.submission_page(s1.id)["can"]["delegated_review"]["answers"] == {"novelty": 2}
