"""The pure process state machine: every allowed and refused transition, the release rules,
the authorisation rules per role x action x phase, and the optimal assignment solver."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from icml25.review.authority import Action, Facts, allowed
from icml25.review.matching import AssignmentError, assign_dense
from icml25.review.workflow import (
    PHASE_ORDER,
    Phase,
    PhaseFacts,
    Role,
    TransitionError,
    check_transition,
    feedback_aggregate_visible,
    next_phase,
    pseudonym,
    stage1_released,
    stage2_released,
)

P = Phase
CHAIN = [P.SUBMISSION, P.BIDDING, P.ASSIGNMENT, P.REVIEWING, P.FEEDBACK, P.REBUTTAL,
         P.DISCUSSION, P.META_REVIEW, P.DECISION, P.NOTIFICATION]
OK_FACTS = PhaseFacts(bidding_enabled=True, n_active_submissions=3)


def test_phase_order_is_the_papers_process():
    assert list(PHASE_ORDER) == CHAIN


@pytest.mark.parametrize("bidding", [True, False])
def test_every_transition_pair(bidding):
    facts = PhaseFacts(bidding_enabled=bidding, n_active_submissions=3)
    chain = CHAIN if bidding else [p for p in CHAIN if p is not P.BIDDING]
    allowed_pairs = set(zip(chain, chain[1:], strict=False))
    if not bidding:
        # a venue already in bidding when bidding is switched off may still move on
        allowed_pairs.add((P.BIDDING, P.ASSIGNMENT))
    n_ok = 0
    for a, b in itertools.product(CHAIN, CHAIN):
        if (a, b) in allowed_pairs:
            check_transition(a, b, facts)
            n_ok += 1
        else:
            with pytest.raises(TransitionError):
                check_transition(a, b, facts)
    assert n_ok == len(allowed_pairs) == len(CHAIN) - 1
    if not bidding:
        with pytest.raises(TransitionError):
            check_transition(P.SUBMISSION, P.BIDDING, facts)


def test_last_phase_has_no_successor():
    assert next_phase(P.NOTIFICATION) is None
    with pytest.raises(TransitionError, match="last phase"):
        check_transition(P.NOTIFICATION, P.SUBMISSION, OK_FACTS)


def test_guards_refuse_with_reasons_and_force_only_covers_missing_reviews():
    with pytest.raises(TransitionError, match="no reviewer"):
        check_transition(P.ASSIGNMENT, P.REVIEWING, PhaseFacts(n_unassigned_submissions=1))
    with pytest.raises(TransitionError, match="not submitted"):
        check_transition(P.REVIEWING, P.FEEDBACK, PhaseFacts(n_missing_reviews=2))
    check_transition(P.REVIEWING, P.FEEDBACK, PhaseFacts(n_missing_reviews=2), force=True)
    with pytest.raises(TransitionError, match="no decision"):
        check_transition(P.DECISION, P.NOTIFICATION, PhaseFacts(n_undecided_submissions=1),
                         force=True)
    # the guards do not bite on other transitions
    check_transition(P.SUBMISSION, P.BIDDING, PhaseFacts(n_unassigned_submissions=5,
                                                         n_missing_reviews=5,
                                                         n_undecided_submissions=5))


def test_two_stage_release_rules():
    before = [p for p in CHAIN if CHAIN.index(p) < CHAIN.index(P.FEEDBACK)]
    for p in before:
        assert not stage1_released(p)
        assert not stage2_released(p, 3, 3)  # even if "rated", nothing before feedback
    assert stage1_released(P.FEEDBACK)
    assert not stage2_released(P.FEEDBACK, 3, 0)
    assert not stage2_released(P.FEEDBACK, 3, 2)
    assert stage2_released(P.FEEDBACK, 3, 3)
    assert not stage2_released(P.FEEDBACK, 0, 0)  # no reviews: nothing to release
    for p in CHAIN[CHAIN.index(P.REBUTTAL):]:
        assert stage2_released(p, 3, 0)  # released for everyone at the feedback deadline


def test_feedback_aggregate_needs_notification_and_three_ratings():
    for p in CHAIN:
        for n in range(6):
            assert feedback_aggregate_visible(p, n) == (p is P.NOTIFICATION and n >= 3)


def test_pseudonyms():
    assert [pseudonym(i) for i in (0, 1, 2, 25, 26, 27)] == [
        "Reviewer A", "Reviewer B", "Reviewer C", "Reviewer Z", "Reviewer AA", "Reviewer AB"]


# --- authorisation: an independent statement of the rules, checked for every combination ---
PERSONAS = {
    "chair": dict(venue_roles=frozenset({Role.CHAIR})),
    "chair_conflicted": dict(venue_roles=frozenset({Role.CHAIR}), conflicted=True),
    "ac_assigned": dict(venue_roles=frozenset({Role.AC}), is_assigned_ac=True),
    "ac_other": dict(venue_roles=frozenset({Role.AC})),
    "reviewer_assigned": dict(venue_roles=frozenset({Role.REVIEWER}),
                              is_assigned_reviewer=True, own_review_submitted=True),
    "reviewer_assigned_nodone": dict(venue_roles=frozenset({Role.REVIEWER}),
                                     is_assigned_reviewer=True),
    "reviewer_other": dict(venue_roles=frozenset({Role.REVIEWER})),
    "reviewer_conflicted": dict(venue_roles=frozenset({Role.REVIEWER}), conflicted=True),
    "author": dict(is_author=True, conflicted=True, authored_in_venue=True),
    "outsider": dict(),
    "site_admin": dict(is_admin=True),
    # the paper's area chair is under this senior area chair; a sub-reviewer
    # invited for this paper (the review in these facts is not the one they write)
    "sac": dict(venue_roles=frozenset({Role.SAC}), is_senior_ac=True),
    "sac_conflicted": dict(venue_roles=frozenset({Role.SAC}), is_senior_ac=True,
                           conflicted=True),
    "subreviewer": dict(is_subreviewer=True),
}
for _kw in PERSONAS.values():
    _kw["verified"] = True
# accounts that may do almost nothing: not logged in, or not yet proven to own their address
PERSONAS["unverified_author"] = dict(is_author=True, conflicted=True, verified=False)
PERSONAS["anonymous"] = dict(logged_in=False)
ACCOUNT_ACTIONS = {Action.VIEW_PUBLIC, Action.USE_ACCOUNT, Action.VIEW_PROFILE,
                   Action.ANSWER_INVITATION, Action.RESET_PASSWORD}
# taken through a link sent to an address: no login needed
LINK_ACTIONS = {Action.VIEW_PUBLIC, Action.ANSWER_INVITATION, Action.RESET_PASSWORD}

STAFF = {"chair", "ac_assigned", "reviewer_assigned", "reviewer_assigned_nodone", "author",
         "sac", "subreviewer"}  # who reads the paper


def expected(persona: str, action: Action, phase: Phase) -> bool:
    """The rules as the issue states them (written independently of workflow.py)."""
    i = CHAIN.index(phase)
    if persona == "anonymous":
        return action in LINK_ACTIONS
    if persona == "unverified_author" or action in ACCOUNT_ACTIONS:
        return action in ACCOUNT_ACTIONS
    if action is Action.SUBMIT:
        return phase is P.SUBMISSION
    if action in (Action.EDIT_SUBMISSION,):
        return persona == "author" and phase is P.SUBMISSION
    if action is Action.WITHDRAW:
        return persona == "author" and i < CHAIN.index(P.DECISION)
    if action is Action.VIEW_SUBMISSION:
        if persona in STAFF:
            return True
        return persona in ("ac_other", "reviewer_other") and phase is P.BIDDING
    if action is Action.VIEW_AUTHORS:
        return persona in ("chair", "author")
    if action is Action.DOWNLOAD_PDF:
        return persona in STAFF
    if action is Action.BID:
        return persona in ("ac_assigned", "ac_other", "reviewer_assigned",
                           "reviewer_assigned_nodone", "reviewer_other") and phase is P.BIDDING
    if action is Action.ASSIGN:
        return persona in ("chair", "sac") and phase in (P.BIDDING, P.ASSIGNMENT, P.REVIEWING)
    if action is Action.WRITE_REVIEW:
        return persona.startswith("reviewer_assigned") and phase is P.REVIEWING
    if action is Action.GIVE_FEEDBACK:
        return persona == "author" and phase is P.FEEDBACK
    if action is Action.VIEW_RATINGS:
        return persona == "chair"
    if action is Action.WRITE_REBUTTAL:
        return persona == "author" and phase is P.REBUTTAL
    if action is Action.VIEW_DISCUSSION:
        return persona in ("chair", "ac_assigned", "reviewer_assigned", "sac")
    if action is Action.POST_DISCUSSION:
        return persona in ("chair", "ac_assigned", "reviewer_assigned", "sac") and \
            phase is P.DISCUSSION
    if action is Action.WRITE_METAREVIEW:
        return persona == "ac_assigned" and phase is P.META_REVIEW
    if action is Action.DECIDE:
        return persona == "chair" and phase is P.DECISION
    if action in (Action.ADVANCE_PHASE, Action.MANAGE_MEMBERS, Action.VIEW_ADMIN):
        return persona in ("chair", "chair_conflicted")
    # rewards: AC rating of a submitted review from feedback until decision;
    # badges are awarded once, at notification
    if action is Action.RATE_REVIEW:
        return persona in ("chair", "ac_assigned", "sac") and \
            CHAIN.index(P.FEEDBACK) <= i <= CHAIN.index(P.DECISION)
    if action is Action.CLOSE_VENUE:
        return persona in ("chair", "chair_conflicted") and phase is P.NOTIFICATION
    # what of a (submitted, not their own) review and of a submission each persona sees
    if action is Action.VIEW_REVIEW:
        return persona in ("chair", "ac_assigned", "reviewer_assigned", "sac")
    if action is Action.VIEW_REVIEW_STAGE1:
        return persona == "author" and i >= CHAIN.index(P.FEEDBACK)
    if action is Action.VIEW_REVIEW_STAGE2:
        return False  # these facts say stage 2 is not released (tested on its own below)
    if action in (Action.VIEW_REVIEWER_IDENTITY, Action.VIEW_ASSIGNMENTS,
                  Action.VIEW_SUBREVIEWER):  # the paper's staff
        return persona in ("chair", "ac_assigned", "sac")
    if action is Action.VIEW_CHAIR_NOTES:
        return persona == "chair"
    if action is Action.VIEW_META_REVIEW:
        return persona in ("chair", "ac_assigned", "sac") or phase is P.NOTIFICATION
    if action is Action.VIEW_DECISION:
        return persona == "chair" or phase is P.NOTIFICATION
    if action is Action.VIEW_VENUE_DETAILS:
        return persona not in ("outsider", "subreviewer")  # a sub-reviewer sees one paper
    if action is Action.VIEW_FEEDBACK_PANEL:
        return persona.startswith("reviewer_")
    if action is Action.VIEW_FEEDBACK_AGGREGATE:
        return False  # no ratings in these facts (tested on its own below)
    if action is Action.CREATE_VENUE:
        return persona == "site_admin"
    # review forms: an added field with these facts' defaults (stage 1, shown to
    # authors) reads like stage 1; the form is read by the committee, changed by chairs
    # until reviews go to the authors (every field x stage x audience: test_review_forms.py)
    if action is Action.VIEW_REVIEW_FIELD:
        return expected(persona, Action.VIEW_REVIEW, phase) or \
            expected(persona, Action.VIEW_REVIEW_STAGE1, phase)
    if action is Action.VIEW_REVIEW_FORM:  # the committee (a sub-reviewer is not on it)
        return persona not in ("author", "outsider", "site_admin", "subreviewer")
    if action is Action.MANAGE_REVIEW_FORM:
        return persona in ("chair", "chair_conflicted") and i < CHAIN.index(P.FEEDBACK)
    # camera-ready and the later roles
    if action is Action.PUBLISH_PROFILE:
        return True  # any verified account
    if action is Action.UPLOAD_CAMERA_READY:
        return False  # no decision in these facts (tested in test_review_authority_roles)
    if action is Action.UPLOAD_SUPPLEMENTARY:
        return persona == "author" and phase is P.SUBMISSION
    if action is Action.DOWNLOAD_SUPPLEMENTARY:
        return persona in STAFF
    if action is Action.ASSIGN_AREA_CHAIR:
        return persona == "chair" and phase in (P.BIDDING, P.ASSIGNMENT, P.REVIEWING)
    if action is Action.INVITE_SUBREVIEWER:
        return persona.startswith("reviewer_assigned") and phase is P.REVIEWING
    if action is Action.WRITE_DELEGATED_REVIEW:
        return persona == "subreviewer" and phase is P.REVIEWING
    if action is Action.VIEW_SUBREVIEWER_IDENTITY:
        return persona == "chair"
    # people, conflicts and mail: a job is shown to chairs and site admins (and whoever
    # started it: own_job, not set here); the mail log to site admins; a conflict is
    # overridden by a chair and declared by a committee member; bulk mail by chairs
    if action is Action.VIEW_JOB:
        return persona in ("chair", "chair_conflicted", "site_admin")
    if action is Action.VIEW_MAIL_LOG:
        return persona == "site_admin"
    if action in (Action.OVERRIDE_CONFLICT, Action.SEND_BULK_MAIL):
        return persona in ("chair", "chair_conflicted")
    if action is Action.DECLARE_CONFLICT:
        return persona in ("chair", "chair_conflicted", "ac_assigned", "ac_other",
                           "reviewer_assigned", "reviewer_assigned_nodone", "reviewer_other",
                           "reviewer_conflicted", "sac", "sac_conflicted")
    raise AssertionError(action)


def test_authorisation_matrix_every_persona_action_phase():
    checked = 0
    for persona, kw in PERSONAS.items():
        for action in Action:
            for phase in CHAIN:
                f = Facts(phase=phase, has_submission=True, review_submitted=True, **kw)
                assert allowed(action, f) == expected(persona, action, phase), (
                    persona, action.value, phase.value)
                checked += 1
    assert checked == len(PERSONAS) * len(Action) * len(CHAIN)


def test_stage2_and_aggregate_follow_their_facts():
    author = dict(phase=P.FEEDBACK, is_author=True, review_submitted=True, verified=True)
    assert not allowed(Action.VIEW_REVIEW_STAGE2, Facts(**author))
    assert allowed(Action.VIEW_REVIEW_STAGE2, Facts(**author, stage2_released=True))
    assert not allowed(Action.VIEW_REVIEW_STAGE2, Facts(**author | {"phase": P.REVIEWING},
                                                        stage2_released=True))
    rev = dict(venue_roles=frozenset({Role.REVIEWER}), verified=True)
    assert allowed(Action.VIEW_FEEDBACK_AGGREGATE, Facts(P.NOTIFICATION, n_author_ratings=3,
                                                         **rev))
    assert not allowed(Action.VIEW_FEEDBACK_AGGREGATE, Facts(P.NOTIFICATION, n_author_ratings=2,
                                                             **rev))
    assert not allowed(Action.VIEW_FEEDBACK_AGGREGATE, Facts(P.DECISION, n_author_ratings=9,
                                                             **rev))


def test_feedback_refused_once_stage2_released_and_for_unsubmitted_reviews():
    f = Facts(phase=P.FEEDBACK, is_author=True, review_submitted=True, verified=True)
    assert allowed(Action.GIVE_FEEDBACK, f)
    assert not allowed(Action.GIVE_FEEDBACK, Facts(phase=P.FEEDBACK, is_author=True,
                                                   review_submitted=True, stage2_released=True,
                                                   verified=True))
    assert not allowed(Action.GIVE_FEEDBACK, Facts(phase=P.FEEDBACK, is_author=True,
                                                   verified=True))
    assert not allowed(Action.WRITE_REVIEW, Facts(phase=P.REVIEWING, is_assigned_reviewer=True,
                                                  verified=True,
                                                  submission_active=False))


# --- assignment solver ---
def _brute_force(aff, conf, k, load):
    n_p, n_r = aff.shape
    best = -np.inf
    options = [list(itertools.combinations([r for r in range(n_r) if not conf[p, r]],
                                           min(k, int((~conf[p]).sum())))) for p in range(n_p)]
    for choice in itertools.product(*options):
        loads = np.zeros(n_r, int)
        for rs in choice:
            loads[list(rs)] += 1
        if (loads > load).any():
            continue
        best = max(best, sum(aff[p, list(rs)].sum() for p, rs in enumerate(choice)))
    return best


@pytest.mark.parametrize("seed", range(6))
def test_auto_assign_is_optimal_and_respects_constraints(seed):
    rng = np.random.default_rng(seed)
    n_p, n_r, k, load = 4, 5, 2, 2
    aff = rng.normal(size=(n_p, n_r))
    conf = rng.random((n_p, n_r)) < 0.2
    x = assign_dense(aff, conf, k, load, backend="highs")
    assert not (x & conf).any()
    assert (x.sum(axis=0) <= load).all()
    assert (x.sum(axis=1) == np.minimum(k, (~conf).sum(axis=1))).all()
    assert aff[x].sum() == pytest.approx(_brute_force(aff, conf, k, load), abs=1e-9)


def test_auto_assign_keeps_existing_and_reports_infeasible():
    aff = np.zeros((2, 3))
    existing = np.array([[True, False, False], [False, False, False]])
    x = assign_dense(aff, np.zeros((2, 3), bool), 2, 2, existing)
    assert x[0, 0] and x.sum() == 4
    with pytest.raises(AssignmentError, match="reviews needed"):
        assign_dense(np.zeros((3, 2)), np.zeros((3, 2), bool), 2, 1)
