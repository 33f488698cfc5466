"""The review process as a pure state machine (no I/O, no database).

The **venue phase** machine (:class:`Phase`, :func:`check_transition`) moves a whole venue
through submission -> (bidding) -> assignment -> reviewing -> feedback -> rebuttal -> discussion
-> meta-review -> decision -> notification. Who may do what in which phase is decided by
:mod:`icml25.review.authority`, from the facts defined here.

The two-stage release of Kim, Lee & Lee (ICML 2025) lives here too: :func:`stage2_released` says
when an author may see the weaknesses and scores of a review.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from icml25.review.errors import NotAllowed, TransitionError  # noqa: F401 (re-exported)


class Phase(StrEnum):
    """Venue phases, in process order (a ``str`` enum: each member equals its value).

    Parameters
    ----------
    value : str
        The phase name: ``submission``, ``bidding``, ``assignment``, ``reviewing``,
        ``feedback``, ``rebuttal``, ``discussion``, ``meta_review``, ``decision`` or
        ``notification``.

    Raises
    ------
    ValueError
        For an unknown name.

    Examples
    --------
    >>> from icml25.review import Phase
    >>> Phase("feedback"), Phase.FEEDBACK == "feedback"
    (<Phase.FEEDBACK: 'feedback'>, True)
    >>> list(Phase)[:3]
    [<Phase.SUBMISSION: 'submission'>, <Phase.BIDDING: 'bidding'>, <Phase.ASSIGNMENT: 'assignment'>]
    """

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
    """Venue roles. ``author`` is per submission, the others per venue.

    Parameters
    ----------
    value : str
        ``chair``, ``sac`` (senior area chair), ``ac``, ``reviewer`` or ``author``.

    Raises
    ------
    ValueError
        For an unknown role.

    Examples
    --------
    >>> from icml25.review import Role
    >>> [r.value for r in Role]
    ['chair', 'sac', 'ac', 'reviewer', 'author']
    >>> Role("ac") is Role.AC
    True
    """

    CHAIR = "chair"
    SAC = "sac"  # senior area chair: oversees some area chairs and their papers
    AC = "ac"
    REVIEWER = "reviewer"
    AUTHOR = "author"


VENUE_ROLES = (Role.CHAIR, Role.SAC, Role.AC, Role.REVIEWER)


def phase_index(phase: Phase | str) -> int:
    """Position of ``phase`` in the process (0 = submission)."""
    return PHASE_ORDER.index(Phase(phase))


def at_least(phase: Phase | str, other: Phase) -> bool:
    """True when ``phase`` is ``other`` or later."""
    return phase_index(phase) >= phase_index(other)


@dataclass(frozen=True)
class PhaseFacts:
    """What the phase guards of :func:`check_transition` need to know about a venue
    (gathered by the service layer).

    Parameters
    ----------
    bidding_enabled : bool, default=True
        Whether the venue has a bidding phase.
    n_active_submissions : int, default=0
        Submissions not withdrawn or desk-rejected.
    n_unassigned_submissions : int, default=0
        Active submissions with no reviewer.
    n_missing_reviews : int, default=0
        Assigned reviews not yet submitted.
    n_undecided_submissions : int, default=0
        Active submissions without a decision.

    Examples
    --------
    >>> from icml25.review import PhaseFacts, check_transition
    >>> facts = PhaseFacts(n_active_submissions=3, n_unassigned_submissions=1)
    >>> check_transition("assignment", "reviewing", facts)
    Traceback (most recent call last):
    ...
    icml25.review.errors.TransitionError: 1 submission(s) have no reviewer assigned
    """

    bidding_enabled: bool = True
    n_active_submissions: int = 0
    n_unassigned_submissions: int = 0  # active submissions with no reviewer
    n_missing_reviews: int = 0  # assigned reviews not yet submitted
    n_undecided_submissions: int = 0  # active submissions without a decision


def next_phase(current: Phase | str, bidding_enabled: bool = True) -> Phase | None:
    """The single phase that may follow ``current`` (None at the end).

    Parameters
    ----------
    current : Phase or str
        The venue's phase.
    bidding_enabled : bool, default=True
        Without bidding, submission is followed by assignment.

    Returns
    -------
    Phase or None

    Raises
    ------
    ValueError
        For an unknown phase.

    Examples
    --------
    >>> next_phase("submission"), next_phase("submission", bidding_enabled=False)
    (<Phase.BIDDING: 'bidding'>, <Phase.ASSIGNMENT: 'assignment'>)
    """
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

    Parameters
    ----------
    current : Phase or str
        The venue's phase.
    target : Phase or str
        The phase asked for.
    facts : PhaseFacts
        The venue's counts the guards read.
    force : bool, default=False
        Release stage 1 (move to feedback) even with reviews missing.

    Raises
    ------
    TransitionError
        When ``target`` is not the next phase or a guard fails.
    ValueError
        For an unknown phase name.

    Examples
    --------
    >>> from icml25.review import PhaseFacts, TransitionError, check_transition
    >>> facts = PhaseFacts(n_active_submissions=3, n_missing_reviews=2)
    >>> try:
    ...     check_transition("reviewing", "feedback", facts)
    ... except TransitionError as exc:
    ...     print(exc)
    2 assigned review(s) are not submitted (use force to release stage 1 anyway)
    >>> check_transition("reviewing", "feedback", facts, force=True)  # allowed: returns None
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

    Parameters
    ----------
    phase : Phase or str
        The venue's phase.
    n_submitted_reviews : int
        Submitted reviews of the submission.
    n_rated_reviews : int
        How many of them its authors have rated.

    Returns
    -------
    bool

    Raises
    ------
    ValueError
        For an unknown phase name.

    Examples
    --------
    >>> from icml25.review import stage2_released
    >>> stage2_released("feedback", 3, 2), stage2_released("feedback", 3, 3)
    (False, True)
    >>> stage2_released("rebuttal", 3, 0)  # the feedback deadline releases it for everyone
    True
    """
    if at_least(phase, Phase.REBUTTAL):
        return True
    if Phase(phase) is Phase.FEEDBACK:
        return n_submitted_reviews > 0 and n_rated_reviews >= n_submitted_reviews
    return False


def stage1_released(phase: Phase | str) -> bool:
    """Whether authors may see summary, strengths and questions of submitted reviews (from
    the feedback phase on).

    Parameters
    ----------
    phase : Phase or str
        The venue's phase.

    Returns
    -------
    bool

    Raises
    ------
    ValueError
        For an unknown phase name.

    Examples
    --------
    >>> from icml25.review import stage1_released
    >>> stage1_released("reviewing"), stage1_released("feedback"), stage1_released("decision")
    (False, True, True)
    """
    return at_least(phase, Phase.FEEDBACK)


def feedback_aggregate_visible(phase: Phase | str, n_ratings: int, minimum: int = 3) -> bool:
    """A reviewer sees the aggregate of feedback on their reviews only after decisions are
    released and only over at least ``minimum`` ratings (so no single rater is identifiable)."""
    return at_least(phase, Phase.NOTIFICATION) and n_ratings >= minimum


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
