"""The review process as a pure state machine (no I/O, no database).

Two layers:

* the **venue phase** machine (:class:`Phase`, :func:`check_transition`), which moves a whole
  venue through submission -> (bidding) -> assignment -> reviewing -> feedback -> rebuttal ->
  discussion -> meta-review -> decision -> notification;
* the **authorisation** rules (:func:`authorize`): which role may do which action in which phase,
  given plain facts about the actor and the submission.

The two-stage release of Kim, Lee & Lee (ICML 2025) lives here too: :func:`stage2_released` says
when an author may see the weaknesses and scores of a review. The service layer gathers the facts
from the database and calls these functions; the web layer only calls the service layer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum


class Phase(StrEnum):
    """Venue phases, in process order."""

    SUBMISSION = "submission"
    BIDDING = "bidding"
    ASSIGNMENT = "assignment"
    REVIEWING = "reviewing"
    FEEDBACK = "feedback"  # stage-1 released; authors rate each review
    REBUTTAL = "rebuttal"  # stage-2 released for everyone; authors reply per review
    DISCUSSION = "discussion"
    META_REVIEW = "meta_review"
    DECISION = "decision"
    NOTIFICATION = "notification"  # decisions and meta-reviews released to authors


PHASE_ORDER: tuple[Phase, ...] = tuple(Phase)

PHASE_LABELS: dict[Phase, str] = {
    Phase.SUBMISSION: "Submission",
    Phase.BIDDING: "Bidding",
    Phase.ASSIGNMENT: "Assignment",
    Phase.REVIEWING: "Reviewing",
    Phase.FEEDBACK: "Author feedback (stage 1 released)",
    Phase.REBUTTAL: "Rebuttal (stage 2 released)",
    Phase.DISCUSSION: "Discussion",
    Phase.META_REVIEW: "Meta-review",
    Phase.DECISION: "Decision",
    Phase.NOTIFICATION: "Notification",
}


class Role(StrEnum):
    """Venue roles. ``author`` is per submission, the others per venue."""

    CHAIR = "chair"
    AC = "ac"
    REVIEWER = "reviewer"
    AUTHOR = "author"


VENUE_ROLES = (Role.CHAIR, Role.AC, Role.REVIEWER)


class TransitionError(ValueError):
    """A phase change the process does not allow (the message says why)."""


class NotAllowed(PermissionError):
    """An action the actor may not perform (the message says why)."""


def phase_index(phase: Phase | str) -> int:
    """Position of ``phase`` in the process (0 = submission)."""
    return PHASE_ORDER.index(Phase(phase))


def at_least(phase: Phase | str, other: Phase) -> bool:
    """True when ``phase`` is ``other`` or later."""
    return phase_index(phase) >= phase_index(other)


@dataclass(frozen=True)
class PhaseFacts:
    """What the phase guards need to know about a venue (gathered by the service layer)."""

    bidding_enabled: bool = True
    n_active_submissions: int = 0
    n_unassigned_submissions: int = 0  # active submissions with no reviewer
    n_missing_reviews: int = 0  # assigned reviews not yet submitted
    n_undecided_submissions: int = 0  # active submissions without a decision


def next_phase(current: Phase | str, bidding_enabled: bool = True) -> Phase | None:
    """The single phase that may follow ``current`` (None at the end)."""
    i = phase_index(current)
    if i + 1 >= len(PHASE_ORDER):
        return None
    nxt = PHASE_ORDER[i + 1]
    if nxt is Phase.BIDDING and not bidding_enabled:
        return Phase.ASSIGNMENT
    return nxt


def check_transition(current: Phase | str, target: Phase | str, facts: PhaseFacts,
                     force: bool = False) -> None:
    """Raise :class:`TransitionError` unless ``current -> target`` is allowed.

    Only forward moves to the next phase are allowed (bidding is skipped when disabled). Guards
    keep the process sound: reviewing needs every submission to have a reviewer; author feedback
    needs every assigned review written (``force`` lets a chair go on with missing reviews, as
    real venues must); notification needs a decision for every submission.
    """
    current, target = Phase(current), Phase(target)
    expected = next_phase(current, facts.bidding_enabled)
    if expected is None:
        raise TransitionError(f"'{current}' is the last phase")
    if target is not expected:
        raise TransitionError(
            f"cannot move from '{current}' to '{target}'; the next phase is '{expected}'")
    if target is Phase.REVIEWING and facts.n_unassigned_submissions:
        raise TransitionError(
            f"{facts.n_unassigned_submissions} submission(s) have no reviewer assigned")
    if target is Phase.FEEDBACK and facts.n_missing_reviews and not force:
        raise TransitionError(
            f"{facts.n_missing_reviews} assigned review(s) are not submitted "
            "(use force to release stage 1 anyway)")
    if target is Phase.NOTIFICATION and facts.n_undecided_submissions:
        raise TransitionError(
            f"{facts.n_undecided_submissions} submission(s) have no decision")


def deadline_end(value: str) -> datetime:
    """When a timeline deadline passes: the end of the day (UTC) for a date such as
    ``2025-03-01``, else the given time (a time without a zone is read as UTC)."""
    when = datetime.fromisoformat(value)
    when = when if when.tzinfo else when.replace(tzinfo=UTC)
    return when + timedelta(days=1) if len(value.strip()) <= 10 else when


def due_transition(phase: Phase | str, timeline: dict[str, str], now: datetime,
                   bidding_enabled: bool = True) -> Phase | None:
    """The phase a venue should move to because its current phase's deadline has passed.

    The timeline maps a phase to the deadline that ends it; phases without one move only when
    a chair advances them. At the feedback deadline this is what releases stage 2 for everyone.
    """
    value = timeline.get(Phase(phase).value)
    if not value or now < deadline_end(value):
        return None
    return next_phase(phase, bidding_enabled)


def stage2_released(phase: Phase | str, n_submitted_reviews: int, n_rated_reviews: int) -> bool:
    """Whether authors of one submission may see weaknesses, score and confidence.

    Per submission as soon as every submitted review has been rated during the feedback phase;
    for everyone when the venue moves on to rebuttal (the feedback deadline).
    """
    if at_least(phase, Phase.REBUTTAL):
        return True
    if Phase(phase) is Phase.FEEDBACK:
        return n_submitted_reviews > 0 and n_rated_reviews >= n_submitted_reviews
    return False


def stage1_released(phase: Phase | str) -> bool:
    """Whether authors may see summary, strengths and questions of submitted reviews."""
    return at_least(phase, Phase.FEEDBACK)


def feedback_aggregate_visible(phase: Phase | str, n_ratings: int, minimum: int = 3) -> bool:
    """A reviewer sees the aggregate of feedback on their reviews only after decisions are
    released and only over at least ``minimum`` ratings (so no single rater is identifiable)."""
    return at_least(phase, Phase.NOTIFICATION) and n_ratings >= minimum


class Action(StrEnum):
    """Everything a user can do; each is checked by :func:`authorize`."""

    SUBMIT = "submit"  # create a submission
    EDIT_SUBMISSION = "edit_submission"
    WITHDRAW = "withdraw"
    VIEW_SUBMISSION = "view_submission"
    VIEW_AUTHORS = "view_authors"
    DOWNLOAD_PDF = "download_pdf"
    BID = "bid"
    ASSIGN = "assign"
    WRITE_REVIEW = "write_review"
    GIVE_FEEDBACK = "give_feedback"
    VIEW_RATINGS = "view_ratings"  # individual author ratings of reviews
    WRITE_REBUTTAL = "write_rebuttal"
    POST_DISCUSSION = "post_discussion"
    VIEW_DISCUSSION = "view_discussion"
    WRITE_METAREVIEW = "write_metareview"
    DECIDE = "decide"
    ADVANCE_PHASE = "advance_phase"
    MANAGE_MEMBERS = "manage_members"
    VIEW_ADMIN = "view_admin"  # audit log, outbox, member list
    RATE_REVIEW = "rate_review"  # area chair rates a review (for rewards)
    CLOSE_VENUE = "close_venue"  # award badges at venue close


@dataclass(frozen=True)
class Facts:
    """Plain facts about an actor, a venue and (optionally) one submission."""

    phase: Phase
    venue_roles: frozenset[Role] = field(default_factory=frozenset)
    is_author: bool = False
    is_assigned_reviewer: bool = False
    is_assigned_ac: bool = False
    conflicted: bool = False
    own_review_submitted: bool = False
    submission_active: bool = True
    has_submission: bool = False  # whether the action concerns one submission
    review_submitted: bool = False  # for feedback/rebuttal: the target review is submitted
    stage2_released: bool = False  # for feedback: stage 2 already released for the submission


def _deny(reason: str) -> None:
    raise NotAllowed(reason)


def authorize(action: Action | str, f: Facts) -> None:
    """Raise :class:`NotAllowed` (with the reason) unless the action is allowed."""
    action = Action(action)
    chair = Role.CHAIR in f.venue_roles and not f.conflicted
    phase = Phase(f.phase)
    rule = _RULES[action]
    rule(f, phase, chair)


def allowed(action: Action | str, f: Facts) -> bool:
    """Boolean form of :func:`authorize`."""
    try:
        authorize(action, f)
    except NotAllowed:
        return False
    return True


def _need_phase(phase: Phase, *phases: Phase) -> None:
    if phase not in phases:
        names = ", ".join(p.value for p in phases)
        _deny(f"not possible in the '{phase.value}' phase (only in: {names})")


def _r_submit(f: Facts, phase: Phase, chair: bool) -> None:
    _need_phase(phase, Phase.SUBMISSION)


def _r_edit(f: Facts, phase: Phase, chair: bool) -> None:
    if not f.is_author:
        _deny("only the authors may edit a submission")
    if not f.submission_active:
        _deny("the submission is withdrawn")
    _need_phase(phase, Phase.SUBMISSION)


def _r_withdraw(f: Facts, phase: Phase, chair: bool) -> None:
    if not f.is_author:
        _deny("only the authors may withdraw a submission")
    if not f.submission_active:
        _deny("the submission is already withdrawn")
    if at_least(phase, Phase.DECISION):
        _deny("a submission cannot be withdrawn once decisions are being made")


def _r_view(f: Facts, phase: Phase, chair: bool) -> None:
    if chair or f.is_author or f.is_assigned_ac or f.is_assigned_reviewer:
        return
    bidder = bool(f.venue_roles & {Role.REVIEWER, Role.AC})
    if bidder and not f.conflicted and phase is Phase.BIDDING and f.submission_active:
        return
    _deny("you have no access to this submission")


def _r_view_authors(f: Facts, phase: Phase, chair: bool) -> None:
    # double blind: only the authors themselves and non-conflicted chairs
    if not (chair or f.is_author):
        _deny("author identities are hidden (double-blind)")


def _r_pdf(f: Facts, phase: Phase, chair: bool) -> None:
    if chair or f.is_author or f.is_assigned_ac or f.is_assigned_reviewer:
        return
    _deny("you have no access to this PDF")


def _r_bid(f: Facts, phase: Phase, chair: bool) -> None:
    if not f.venue_roles & {Role.REVIEWER, Role.AC}:
        _deny("only reviewers and area chairs bid")
    if f.conflicted or f.is_author:
        _deny("you are conflicted with this submission")
    _need_phase(phase, Phase.BIDDING)


def _r_assign(f: Facts, phase: Phase, chair: bool) -> None:
    if not chair:
        _deny("only a non-conflicted program chair assigns reviewers")
    _need_phase(phase, Phase.BIDDING, Phase.ASSIGNMENT, Phase.REVIEWING)


def _r_review(f: Facts, phase: Phase, chair: bool) -> None:
    if not f.is_assigned_reviewer:
        _deny("you are not assigned to review this submission")
    if not f.submission_active:
        _deny("the submission is withdrawn")
    _need_phase(phase, Phase.REVIEWING)


def _r_feedback(f: Facts, phase: Phase, chair: bool) -> None:
    if not f.is_author:
        _deny("only the authors rate the reviews of their submission")
    _need_phase(phase, Phase.FEEDBACK)
    if not f.review_submitted:
        _deny("the review is not submitted")
    if f.stage2_released:
        _deny("ratings are final once stage 2 of the reviews is released")


def _r_ratings(f: Facts, phase: Phase, chair: bool) -> None:
    if not chair:
        _deny("individual ratings are visible to program chairs only")


def _r_rebuttal(f: Facts, phase: Phase, chair: bool) -> None:
    if not f.is_author:
        _deny("only the authors write the rebuttal")
    if not f.review_submitted:
        _deny("the review is not submitted")
    _need_phase(phase, Phase.REBUTTAL)


def _r_view_discussion(f: Facts, phase: Phase, chair: bool) -> None:
    if chair or f.is_assigned_ac or (f.is_assigned_reviewer and f.own_review_submitted):
        return
    _deny("the discussion is open to the paper's reviewers, area chair and chairs only")


def _r_discuss(f: Facts, phase: Phase, chair: bool) -> None:
    _r_view_discussion(f, phase, chair)
    _need_phase(phase, Phase.DISCUSSION)


def _r_meta(f: Facts, phase: Phase, chair: bool) -> None:
    if not f.is_assigned_ac:
        _deny("only the paper's area chair writes the meta-review")
    _need_phase(phase, Phase.META_REVIEW)


def _r_decide(f: Facts, phase: Phase, chair: bool) -> None:
    if not chair:
        _deny("only a non-conflicted program chair decides")
    _need_phase(phase, Phase.DECISION)


def _r_rate_review(f: Facts, phase: Phase, chair: bool) -> None:
    if not (chair or f.is_assigned_ac):
        _deny("only the paper's area chair (or a non-conflicted chair) rates its reviews")
    if not f.review_submitted:
        _deny("the review is not submitted")
    _need_phase(phase, Phase.FEEDBACK, Phase.REBUTTAL, Phase.DISCUSSION, Phase.META_REVIEW,
                Phase.DECISION)


def _r_close(f: Facts, phase: Phase, chair: bool) -> None:
    _r_chair(f, phase, chair)
    _need_phase(phase, Phase.NOTIFICATION)


def _r_chair(f: Facts, phase: Phase, chair: bool) -> None:
    if Role.CHAIR not in f.venue_roles:
        _deny("only program chairs may do this")


_RULES = {
    Action.SUBMIT: _r_submit,
    Action.EDIT_SUBMISSION: _r_edit,
    Action.WITHDRAW: _r_withdraw,
    Action.VIEW_SUBMISSION: _r_view,
    Action.VIEW_AUTHORS: _r_view_authors,
    Action.DOWNLOAD_PDF: _r_pdf,
    Action.BID: _r_bid,
    Action.ASSIGN: _r_assign,
    Action.WRITE_REVIEW: _r_review,
    Action.GIVE_FEEDBACK: _r_feedback,
    Action.VIEW_RATINGS: _r_ratings,
    Action.WRITE_REBUTTAL: _r_rebuttal,
    Action.VIEW_DISCUSSION: _r_view_discussion,
    Action.POST_DISCUSSION: _r_discuss,
    Action.WRITE_METAREVIEW: _r_meta,
    Action.DECIDE: _r_decide,
    Action.ADVANCE_PHASE: _r_chair,
    Action.MANAGE_MEMBERS: _r_chair,
    Action.VIEW_ADMIN: _r_chair,
    Action.RATE_REVIEW: _r_rate_review,
    Action.CLOSE_VENUE: _r_close,
}


def pseudonym(index: int) -> str:
    """'Reviewer A', 'Reviewer B', ... 'Reviewer AA' for the index-th reviewer of a paper."""
    letters = ""
    n = index
    while True:
        letters = chr(ord("A") + n % 26) + letters
        n = n // 26 - 1
        if n < 0:
            break
    return f"Reviewer {letters}"
