"""The authority's rules for the later roles and files, stated independently of the code
(pure: Facts in, allowed or not out): senior area chairs over area chairs, sub-reviewers, the
camera-ready version and the supplementary material, and who may publish a profile. Each
persona is checked for what it must do AND for what it must NOT see or do."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from icml25.review import models as m
from icml25.review.authority import (
    Action,
    Facts,
    Viewer,
    facts_for,
    may,
    ratings_disclosable,
)
from icml25.review.visibility import Bundle
from icml25.review.workflow import Phase, Role

A = Action
P = Phase
ALL_PHASES = tuple(Phase)

BASE = dict(verified=True, submission_active=True, has_submission=True, review_submitted=True)
PERSONAS = {
    "sac": Facts(phase=P.REVIEWING, venue_roles=frozenset({Role.SAC}), is_senior_ac=True, **BASE),
    "sac_conflicted": Facts(phase=P.REVIEWING, venue_roles=frozenset({Role.SAC}),
                            is_senior_ac=True, conflicted=True, **BASE),
    "sac_other_ac": Facts(phase=P.REVIEWING, venue_roles=frozenset({Role.SAC}), **BASE),
    "subreviewer": Facts(phase=P.REVIEWING, is_subreviewer=True, delegated_review=True, **BASE),
    "subreviewer_other_review": Facts(phase=P.REVIEWING, is_subreviewer=True, **BASE),
    "ac": Facts(phase=P.REVIEWING, venue_roles=frozenset({Role.AC}), is_assigned_ac=True, **BASE),
    "chair": Facts(phase=P.REVIEWING, venue_roles=frozenset({Role.CHAIR}), **BASE),
    "reviewer": Facts(phase=P.REVIEWING, venue_roles=frozenset({Role.REVIEWER}),
                      is_assigned_reviewer=True, **BASE),
    "author": Facts(phase=P.REVIEWING, is_author=True, authored_in_venue=True, **BASE),
}


def expected(persona: str, action: Action, phase: Phase) -> bool:
    """What the issue asks, written out per persona (not derived from the rules)."""
    staff = persona in ("sac", "ac", "chair")
    sub = persona.startswith("subreviewer")
    rules = {
        A.VIEW_SUBMISSION: staff or sub or persona in ("reviewer", "author"),
        A.DOWNLOAD_PDF: staff or sub or persona in ("reviewer", "author"),
        A.DOWNLOAD_SUPPLEMENTARY: staff or sub or persona in ("reviewer", "author"),
        A.VIEW_AUTHORS: persona in ("chair", "author"),
        A.VIEW_REVIEW: staff or persona in ("subreviewer", "reviewer"),
        A.VIEW_REVIEWER_IDENTITY: staff,
        A.VIEW_ASSIGNMENTS: staff,
        A.VIEW_CHAIR_NOTES: persona == "chair",
        A.VIEW_RATINGS: persona == "chair",
        A.VIEW_DISCUSSION: staff or persona == "reviewer",
        A.ASSIGN: persona in ("sac", "chair") and phase in (P.BIDDING, P.ASSIGNMENT,
                                                           P.REVIEWING),
        A.ASSIGN_AREA_CHAIR: persona == "chair" and phase in (P.BIDDING, P.ASSIGNMENT,
                                                              P.REVIEWING),
        A.RATE_REVIEW: staff and phase in (P.FEEDBACK, P.REBUTTAL, P.DISCUSSION,
                                           P.META_REVIEW, P.DECISION),
        A.WRITE_METAREVIEW: persona == "ac" and phase is P.META_REVIEW,
        A.DECIDE: persona == "chair" and phase is P.DECISION,
        A.WRITE_REVIEW: persona == "reviewer" and phase is P.REVIEWING,
        A.WRITE_DELEGATED_REVIEW: sub and phase is P.REVIEWING,
        A.INVITE_SUBREVIEWER: persona == "reviewer" and phase is P.REVIEWING,
        A.VIEW_SUBREVIEWER: staff,  # their inviter: see test_the_inviter_sees_their_own
        A.VIEW_SUBREVIEWER_IDENTITY: persona == "chair",
        A.VIEW_VENUE_DETAILS: not sub,
        A.BID: persona == "reviewer" and phase is P.BIDDING and False,  # assigned: no bid rule
    }
    return rules[action]


CHECKED = [a for a in (
    A.VIEW_SUBMISSION, A.DOWNLOAD_PDF, A.DOWNLOAD_SUPPLEMENTARY, A.VIEW_AUTHORS, A.VIEW_REVIEW,
    A.VIEW_REVIEWER_IDENTITY, A.VIEW_ASSIGNMENTS, A.VIEW_CHAIR_NOTES, A.VIEW_RATINGS,
    A.VIEW_DISCUSSION, A.ASSIGN, A.ASSIGN_AREA_CHAIR, A.RATE_REVIEW, A.WRITE_METAREVIEW,
    A.DECIDE, A.WRITE_REVIEW, A.WRITE_DELEGATED_REVIEW, A.INVITE_SUBREVIEWER,
    A.VIEW_SUBREVIEWER, A.VIEW_SUBREVIEWER_IDENTITY, A.VIEW_VENUE_DETAILS)]


@pytest.mark.parametrize("persona", [p for p in PERSONAS if p not in ("sac_conflicted",
                                                                      "sac_other_ac",
                                                                      "subreviewer_other_review")])
def test_each_role_may_exactly_what_the_issue_says_in_every_phase(persona):
    for phase in ALL_PHASES:
        f = replace(PERSONAS[persona], phase=phase,
                    own_review_submitted=persona == "reviewer")
        for action in CHECKED:
            assert may(action, f) == expected(persona, action, phase), (persona, action, phase)


@pytest.mark.parametrize("persona", ["sac_conflicted", "sac_other_ac"])
def test_a_senior_ac_sees_nothing_of_a_paper_outside_their_area_chairs_or_conflicted(persona):
    for phase in ALL_PHASES:
        f = replace(PERSONAS[persona], phase=phase)
        # account and venue level actions, and the fields released to every reader of a
        # paper at notification (meta-review, decision: behind VIEW_SUBMISSION, denied here)
        # (the review form is the venue's, shown to its whole committee)
        # (so is declaring one's own conflict with any paper, and the actions a link
        # sent to an address proves: answering an invitation, resetting the password)
        open_to_all = (A.VIEW_PUBLIC, A.USE_ACCOUNT, A.VIEW_PROFILE, A.PUBLISH_PROFILE,
                       A.VIEW_VENUE_DETAILS, A.SUBMIT, A.VIEW_FEEDBACK_PANEL,
                       A.VIEW_REVIEW_FORM, A.ANSWER_INVITATION, A.RESET_PASSWORD,
                       A.DECLARE_CONFLICT)
        released = (A.VIEW_META_REVIEW, A.VIEW_DECISION) if phase is P.NOTIFICATION else ()
        allowed = [a for a in Action if a not in open_to_all + released and may(a, f)]
        assert allowed == [], (persona, phase, allowed)
        assert not may(A.VIEW_SUBMISSION, f)


def test_a_subreviewer_sees_only_the_review_they_write_and_never_identities():
    f = PERSONAS["subreviewer_other_review"]
    assert may(A.VIEW_SUBMISSION, f) and may(A.DOWNLOAD_PDF, f)
    assert not may(A.VIEW_REVIEW, f)  # another reviewer's review of the same paper
    draft = replace(PERSONAS["subreviewer"], review_submitted=False)
    assert may(A.VIEW_REVIEW, draft)  # the inviter's draft they are writing
    for action in (A.VIEW_REVIEWER_IDENTITY, A.VIEW_AUTHORS, A.VIEW_DISCUSSION, A.VIEW_RATINGS,
                   A.VIEW_ASSIGNMENTS, A.INVITE_SUBREVIEWER, A.WRITE_REVIEW, A.BID):
        assert not may(action, PERSONAS["subreviewer"]), action
    # conflicted (e.g. a co-author added as sub-reviewer): nothing at all
    conflicted = replace(PERSONAS["subreviewer"], conflicted=True)
    assert not any(may(a, conflicted) for a in CHECKED if a is not A.VIEW_VENUE_DETAILS)


def test_the_inviter_sees_their_own_subreviewer_by_name_and_no_one_elses():
    mine = replace(PERSONAS["reviewer"], own_invitation=True)
    assert may(A.VIEW_SUBREVIEWER, mine) and may(A.VIEW_SUBREVIEWER_IDENTITY, mine)
    other = PERSONAS["reviewer"]
    assert not may(A.VIEW_SUBREVIEWER, other) and not may(A.VIEW_SUBREVIEWER_IDENTITY, other)
    # the paper's area chair and senior area chair: pseudonymous only
    for persona in ("ac", "sac"):
        assert may(A.VIEW_SUBREVIEWER, PERSONAS[persona])
        assert not may(A.VIEW_SUBREVIEWER_IDENTITY, PERSONAS[persona])


AUTHOR = Facts(phase=P.NOTIFICATION, is_author=True, authored_in_venue=True, accepted=True,
               **BASE)


@pytest.mark.parametrize("change, allowed", [
    ({}, True),
    ({"accepted": False}, False),  # rejected papers have no camera-ready version
    ({"camera_ready_closed": True}, False),  # after the deadline
    ({"phase": P.DECISION}, False),  # decisions not released yet
    ({"is_author": False, "venue_roles": frozenset({Role.CHAIR})}, False),
    ({"is_author": False, "is_assigned_reviewer": True}, False),
    ({"submission_active": False}, False),
])
def test_camera_ready_is_for_the_authors_of_accepted_papers_before_the_deadline(change, allowed):
    f = replace(AUTHOR, **change)
    assert may(A.UPLOAD_CAMERA_READY, f) is allowed
    assert may(A.UPLOAD_SUPPLEMENTARY, f) is allowed  # with the camera-ready, same rule


def test_supplementary_material_goes_with_the_submission_too():
    f = replace(AUTHOR, phase=P.SUBMISSION, accepted=False)
    assert may(A.UPLOAD_SUPPLEMENTARY, f) and not may(A.UPLOAD_CAMERA_READY, f)
    for phase in (P.BIDDING, P.REVIEWING, P.DECISION):
        assert not may(A.UPLOAD_SUPPLEMENTARY, replace(f, phase=phase)), phase
    assert not may(A.UPLOAD_SUPPLEMENTARY, replace(f, is_author=False))


def test_an_unverified_account_cannot_publish_its_profile():
    assert may(A.PUBLISH_PROFILE, Facts(phase=P.SUBMISSION, verified=True))
    assert not may(A.PUBLISH_PROFILE, Facts(phase=P.SUBMISSION, verified=False))
    assert not may(A.PUBLISH_PROFILE, Facts(phase=P.SUBMISSION, logged_in=False))


def test_ratings_are_disclosable_from_three_on():
    assert [ratings_disclosable(n) for n in range(5)] == [False, False, False, True, True]


# ---------------------------------------------------------------------- facts from rows
def _bundle(phase=P.REVIEWING, decision=None, deadline="", subs=()):  # noqa: ANN001, ANN202
    venue = m.Venue(id=1, slug="v", name="V", phase=phase.value, camera_ready_deadline=deadline,
                    decision_types='[{"key": "oral", "label": "Oral", "accepted": true}, '
                                   '{"key": "reject", "label": "Reject", "accepted": false}]')
    sub = m.Submission(id=10, venue_id=1, number=1, title="T", abstract="A", submitter_id=50,
                       status="active")
    assignments = [m.Assignment(submission_id=10, user_id=20, role="ac", pseudonym=""),
                   m.Assignment(submission_id=10, user_id=30, role="reviewer",
                                pseudonym="Reviewer A")]
    reviews = [m.Review(id=100, submission_id=10, reviewer_id=30, submitted=False)]
    return Bundle(venue=venue, submission=sub, authors=[], conflict_user_ids={41},
                  assignments=assignments, reviews=reviews, feedback={}, rebuttals={}, posts=[],
                  meta_review=None, decision=decision, subreviewers=list(subs))


def test_facts_for_finds_the_senior_ac_of_the_papers_area_chair():
    b = _bundle()
    over_20 = Viewer(40, frozenset({Role.SAC}), verified=True, oversees=frozenset({20}))
    over_21 = Viewer(40, frozenset({Role.SAC}), verified=True, oversees=frozenset({21}))
    conflicted = Viewer(41, frozenset({Role.SAC}), verified=True, oversees=frozenset({20}))
    assert facts_for(over_20, b).senior_ac
    assert not facts_for(over_21, b).senior_ac
    assert facts_for(conflicted, b).is_senior_ac and not facts_for(conflicted, b).senior_ac
    # without the role, an oversight row grants nothing
    assert not facts_for(Viewer(40, frozenset(), verified=True,
                                oversees=frozenset({20})), b).senior_ac


def test_facts_for_a_subreviewer_lapse_when_their_inviter_is_unassigned():
    row = m.Subreviewer(id=1, submission_id=10, inviter_id=30, user_id=60)
    b = _bundle(subs=[row])
    sub = Viewer(60, verified=True)
    f = facts_for(sub, b, review=b.reviews[0])
    assert f.subreviewer and f.delegated_review and may(A.VIEW_REVIEW, f)
    assert facts_for(Viewer(30, frozenset({Role.REVIEWER}), verified=True), b,
                     subreviewer=row).own_invitation
    b.assignments = b.assignments[:1]  # the inviting reviewer was unassigned
    assert not facts_for(sub, b).subreviewer
    assert not may(A.VIEW_SUBMISSION, facts_for(sub, b))


def test_facts_for_camera_ready_read_the_venues_types_and_deadline():
    author = Viewer(50, verified=True)
    oral = SimpleNamespace(outcome="oral")
    assert facts_for(author, _bundle(P.NOTIFICATION, decision=oral)).accepted
    assert not facts_for(author, _bundle(P.NOTIFICATION,
                                         decision=SimpleNamespace(outcome="reject"))).accepted
    past = (datetime.now(UTC) - timedelta(days=2)).date().isoformat()
    future = (datetime.now(UTC) + timedelta(days=2)).date().isoformat()
    assert facts_for(author, _bundle(P.NOTIFICATION, oral, past)).camera_ready_closed
    assert not facts_for(author, _bundle(P.NOTIFICATION, oral, future)).camera_ready_closed
    assert may(A.UPLOAD_CAMERA_READY, facts_for(author, _bundle(P.NOTIFICATION, oral, future)))
    assert not may(A.UPLOAD_CAMERA_READY, facts_for(author, _bundle(P.NOTIFICATION, oral, past)))
