"""The ONE authority for who may see and do what (HotCRP's rule).

Every decision "may this viewer see / do X" is made here, from plain facts:

* :class:`Principal` -- the account behind a request (id, site admin, verified e-mail, its roles
  in every venue), computed once per request;
* :class:`Viewer` -- the principal as seen from one venue;
* :class:`Facts` -- the viewer and one submission (author? assigned? conflicted? "non-conflicted
  chair"?), from :func:`facts_for`;
* :class:`Action` and :func:`authorize` / :func:`may` -- one rule per action.

Services call :func:`authorize` before they change anything; :mod:`~icml25.review.visibility`
calls :func:`may` for every field it renders; routes that show no data (the login page, the API
schema) ask for :attr:`Action.VIEW_PUBLIC`. Each decision is noted on the current request's
trail (:func:`trail`), which is how the route-table test proves that every route asks here.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING

from icml25.review.errors import NotAllowed
from icml25.review.forms import Audience
from icml25.review.workflow import Phase, Role, at_least, stage1_released

if TYPE_CHECKING:
    from icml25.review.visibility import Bundle


class Action(StrEnum):
    """Everything a user can see or do; each is checked by :func:`authorize` (a ``str``
    enum: each member equals its value).

    Parameters
    ----------
    value : str
        The action's name, e.g. ``"write_review"``, ``"view_authors"``, ``"advance_phase"``.

    Raises
    ------
    ValueError
        For an unknown name.

    Examples
    --------
    >>> from icml25.review import Action
    >>> Action("write_review") is Action.WRITE_REVIEW, Action.BID == "bid"
    (True, True)
    """

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
    # what parts of a submission a viewer sees (asked by visibility.py)
    VIEW_REVIEW = "view_review"  # a whole review, as staff, its writer or a peer reviewer
    VIEW_REVIEW_STAGE1 = "view_review_stage1"  # summary, strengths, questions, as an author
    VIEW_REVIEW_STAGE2 = "view_review_stage2"  # weaknesses and scores, as an author
    VIEW_REVIEWER_IDENTITY = "view_reviewer_identity"
    VIEW_CHAIR_NOTES = "view_chair_notes"  # declared and computed conflicts, bids
    VIEW_ASSIGNMENTS = "view_assignments"
    VIEW_META_REVIEW = "view_meta_review"
    VIEW_DECISION = "view_decision"
    # one added field of a review form (its stage and audience are in the facts)
    VIEW_REVIEW_FIELD = "view_review_field"
    # venue and account level
    VIEW_VENUE_DETAILS = "view_venue_details"  # timeline, submission list: members only
    VIEW_FEEDBACK_PANEL = "view_feedback_panel"  # a reviewer's own feedback section
    VIEW_FEEDBACK_AGGREGATE = "view_feedback_aggregate"  # the numbers in it
    VIEW_REVIEW_FORM = "view_review_form"  # the venue's form definition: its committee
    MANAGE_REVIEW_FORM = "manage_review_form"  # save a new version: chairs, until reviewing ends
    CREATE_VENUE = "create_venue"
    USE_ACCOUNT = "use_account"  # one's own tokens, badges, papers, profile settings
    VIEW_PROFILE = "view_profile"  # someone's public reviewer profile
    VIEW_PUBLIC = "view_public"  # pages that show no data: login, register, API schema
    PUBLISH_PROFILE = "publish_profile"  # make one's reviewer profile public (or private)
    # after the decision
    UPLOAD_CAMERA_READY = "upload_camera_ready"
    UPLOAD_SUPPLEMENTARY = "upload_supplementary"
    DOWNLOAD_SUPPLEMENTARY = "download_supplementary"
    # roles
    ASSIGN_AREA_CHAIR = "assign_area_chair"  # assign or unassign a paper's area chair
    INVITE_SUBREVIEWER = "invite_subreviewer"
    WRITE_DELEGATED_REVIEW = "write_delegated_review"  # a sub-reviewer writes the inviter's
    VIEW_SUBREVIEWER = "view_subreviewer"  # that one sub-reviewer exists (pseudonymously)
    VIEW_SUBREVIEWER_IDENTITY = "view_subreviewer_identity"  # their name and e-mail
    # people, conflicts and mail
    VIEW_JOB = "view_job"  # a background job's status: who started it, the venue's chairs
    VIEW_MAIL_LOG = "view_mail_log"  # every e-mail of the platform in full: site admins
    ANSWER_INVITATION = "answer_invitation"  # accept or decline: whoever holds the link
    OVERRIDE_CONFLICT = "override_conflict"  # set or lift a conflict with a reason: chairs
    DECLARE_CONFLICT = "declare_conflict"  # a committee member declares their own conflict
    SEND_BULK_MAIL = "send_bulk_mail"  # mail a filtered group of the venue: chairs
    RESET_PASSWORD = "reset_password"  # ask for or follow a reset link: no login needed


# actions an account may take before its e-mail address is verified
UNVERIFIED_OK = frozenset({Action.VIEW_PUBLIC, Action.USE_ACCOUNT, Action.VIEW_PROFILE,
                           Action.ANSWER_INVITATION, Action.RESET_PASSWORD})
# actions taken without logging in: what proves the right is a link sent to an address
NO_LOGIN = frozenset({Action.VIEW_PUBLIC, Action.ANSWER_INVITATION, Action.RESET_PASSWORD})
MIN_RATINGS_FOR_AGGREGATE = 3


@dataclass
class Principal:
    """The account behind one request (None id = anonymous), loaded once per request."""

    user_id: int | None = None
    is_admin: bool = False
    verified: bool = False
    roles: dict[int, frozenset[Role]] = field(default_factory=dict)  # venue id -> roles
    # venue id -> the area chairs this senior area chair oversees there
    oversees: dict[int, frozenset[int]] = field(default_factory=dict)

    def at(self, venue_id: int) -> Viewer:
        """This principal as a viewer of one venue."""
        return Viewer(self.user_id, self.roles.get(venue_id, frozenset()),
                      verified=self.verified, is_admin=self.is_admin,
                      oversees=self.oversees.get(venue_id, frozenset()))


@dataclass(frozen=True)
class Viewer:
    """Who is looking at one venue: user id (None = anonymous), roles there, account facts."""

    user_id: int | None
    venue_roles: frozenset[Role] = frozenset()
    verified: bool = False
    is_admin: bool = False
    oversees: frozenset[int] = frozenset()  # area chairs overseen (as a senior area chair)

    @property
    def is_chair(self) -> bool:
        return Role.CHAIR in self.venue_roles


@dataclass(frozen=True)
class Facts:
    """Plain facts about an actor, a venue and (optionally) one submission and one review:
    what :func:`authorize` decides from (the service layer builds them with ``facts_for``).

    Parameters
    ----------
    phase : Phase
        The venue's phase.
    venue_roles : frozenset of Role, default=frozenset()
        The actor's roles in the venue.
    logged_in : bool, default=True
        Whether the request has an account behind it.
    verified : bool, default=False
        Whether the account's e-mail address is verified.
    is_admin : bool, default=False
        A site administrator.
    is_author : bool, default=False
        An author of the submission (a verified co-author or the submitter).
    authored_in_venue : bool, default=False
        An author of some submission of the venue.
    is_assigned_reviewer, is_assigned_ac : bool, default=False
        Assigned to the submission as reviewer / area chair.
    conflicted : bool, default=False
        In conflict with the submission.
    own_review_submitted : bool, default=False
        The actor has submitted their review of the submission.
    submission_active : bool, default=True
        The submission is not withdrawn.
    has_submission : bool, default=False
        Whether the action concerns one submission.
    review_submitted : bool, default=False
        The target review is submitted.
    own_review : bool, default=False
        The target review is the actor's own.
    stage2_released : bool, default=False
        Stage 2 is already released to the submission's authors.
    n_author_ratings : int, default=0
        Ratings of the actor's reviews (for the feedback aggregate).
    field_stage : int, default=1
        Stage of the added review-form field asked about.
    field_audience : str, default="authors"
        Audience of that field.
    is_senior_ac : bool, default=False
        A senior area chair over the paper's area chair.
    is_subreviewer : bool, default=False
        Invited for this paper by a reviewer still assigned to it.
    delegated_review : bool, default=False
        The target review is that of the actor's inviter.
    own_invitation : bool, default=False
        The target sub-reviewer was invited by the actor.
    accepted : bool, default=False
        The paper's decision accepts it.
    camera_ready_closed : bool, default=False
        The camera-ready deadline has passed.
    own_job : bool, default=False
        The background job asked about was started by the actor.

    Examples
    --------
    >>> from icml25.review import Facts, Phase, Role, may
    >>> chair = Facts(Phase.REVIEWING, venue_roles=frozenset({Role.CHAIR}), verified=True)
    >>> chair.chair, may("advance_phase", chair)
    (True, True)
    >>> may("advance_phase", Facts(Phase.REVIEWING, verified=True))
    False
    """

    phase: Phase
    venue_roles: frozenset[Role] = field(default_factory=frozenset)
    logged_in: bool = True
    verified: bool = False
    is_admin: bool = False
    is_author: bool = False  # of the submission (a verified co-author or the submitter)
    authored_in_venue: bool = False  # author of some submission of the venue
    is_assigned_reviewer: bool = False
    is_assigned_ac: bool = False
    conflicted: bool = False
    own_review_submitted: bool = False
    submission_active: bool = True
    has_submission: bool = False  # whether the action concerns one submission
    review_submitted: bool = False  # the target review is submitted
    own_review: bool = False  # the target review is the viewer's own
    stage2_released: bool = False  # stage 2 already released to the submission's authors
    n_author_ratings: int = 0  # for the feedback aggregate: ratings of the viewer's reviews
    # the added review-form field asked about (VIEW_REVIEW_FIELD): its stage and audience
    field_stage: int = 1
    field_audience: str = Audience.AUTHORS.value
    # roles
    is_senior_ac: bool = False  # a senior area chair overseeing the paper's area chair
    is_subreviewer: bool = False  # invited for this paper by a reviewer still assigned to it
    delegated_review: bool = False  # the target review is that of the viewer's inviter
    own_invitation: bool = False  # the target sub-reviewer was invited by the viewer
    # after the decision
    accepted: bool = False  # the paper's decision is of a type that accepts it
    camera_ready_closed: bool = False  # the venue's camera-ready deadline has passed
    own_job: bool = False  # the background job asked about was started by the viewer

    @property
    def chair(self) -> bool:
        """A program chair of the venue who is not conflicted with this submission."""
        return Role.CHAIR in self.venue_roles and not self.conflicted

    @property
    def senior_ac(self) -> bool:
        """A senior area chair over the paper's area chair, not conflicted with the paper."""
        return self.is_senior_ac and not self.conflicted

    @property
    def subreviewer(self) -> bool:
        """An invited sub-reviewer of the paper who is not conflicted with it."""
        return self.is_subreviewer and not self.conflicted

    @property
    def staff(self) -> bool:
        """Those who see reviews with their writers: non-conflicted chairs, the paper's AC and
        the senior area chair over that AC."""
        return self.chair or self.is_assigned_ac or self.senior_ac


def facts_for(viewer: Viewer, b: Bundle | None, phase: Phase | None = None, *,
              review=None, authored_in_venue: bool = False,  # noqa: ANN001
              n_author_ratings: int = 0, subreviewer=None) -> Facts:  # noqa: ANN001
    """The facts of ``viewer`` on bundle ``b`` (or on the venue in ``phase`` when None);
    ``review`` / ``subreviewer``: the review or sub-reviewer row the action concerns."""
    account = dict(venue_roles=viewer.venue_roles, logged_in=viewer.user_id is not None,
                   verified=viewer.verified, is_admin=viewer.is_admin,
                   authored_in_venue=authored_in_venue, n_author_ratings=n_author_ratings)
    if b is None:
        return Facts(phase=Phase(phase), **account)
    uid = viewer.user_id
    a = b.assignment_of(uid)
    own = next((r for r in b.reviews if r.reviewer_id == uid), None)
    authors = b.author_user_ids()
    return Facts(
        phase=b.phase, **account | {"authored_in_venue": authored_in_venue or uid in authors},
        is_author=uid is not None and uid in authors,
        is_assigned_reviewer=a is not None and a.role == Role.REVIEWER,
        is_assigned_ac=a is not None and a.role == Role.AC,
        conflicted=(uid in b.conflict_user_ids) or (uid in authors),
        own_review_submitted=bool(own and own.submitted),
        submission_active=b.submission.status == "active",
        has_submission=True,
        review_submitted=bool(review is not None and review.submitted),
        own_review=review is not None and uid is not None and review.reviewer_id == uid,
        stage2_released=b.stage2_for_authors(),
        **_role_facts(viewer, b, review, subreviewer),
        **_decision_facts(b),
    )


def _role_facts(viewer: Viewer, b: Bundle, review, subreviewer) -> dict:  # noqa: ANN001
    """Senior area chair and sub-reviewer facts."""
    uid = viewer.user_id
    out: dict = {}
    if viewer.oversees and Role.SAC in viewer.venue_roles:
        out["is_senior_ac"] = any(a.role == Role.AC and a.user_id in viewer.oversees
                                  for a in b.assignments)
    if b.subreviewers and uid is not None:
        reviewers = {a.user_id for a in b.assignments if a.role == Role.REVIEWER}
        inviters = {s.inviter_id for s in b.subreviewers
                    if s.user_id == uid and s.inviter_id in reviewers}
        out["is_subreviewer"] = bool(inviters)
        out["delegated_review"] = review is not None and review.reviewer_id in inviters
    if subreviewer is not None:
        out["own_invitation"] = uid is not None and subreviewer.inviter_id == uid
    return out


def _decision_facts(b: Bundle) -> dict:
    """Whether the paper is accepted, and whether its camera-ready deadline has passed."""
    if b.decision is None:
        return {}
    from icml25.review.decisions import accepted_keys
    from icml25.review.workflow import deadline_end

    deadline = b.venue.camera_ready_deadline
    closed = bool(deadline) and datetime.now(UTC) >= deadline_end(deadline)
    return {"accepted": b.decision.outcome in accepted_keys(b.venue.decision_types),
            "camera_ready_closed": closed}


# ---------------------------------------------------------------------- the decision trail
_trail: ContextVar[list[str] | None] = ContextVar("icml25_review_authority_trail", default=None)


@contextmanager
def trail() -> Iterator[list[str]]:
    """Collect the actions decided while the block runs (the same list is shared by the
    threads a request's route runs in, so a route's decisions all land here)."""
    token = _trail.set([])
    try:
        yield _trail.get()  # type: ignore[misc]
    finally:
        _trail.reset(token)


def _note(action: Action) -> None:
    seen = _trail.get()
    if seen is not None:
        seen.append(action.value)


# ---------------------------------------------------------------------- deciding
def authorize(action: Action | str, f: Facts) -> None:
    """Raise :class:`NotAllowed` (with the reason) unless the action is allowed.

    Every decision is also noted on the current request's trail.

    Parameters
    ----------
    action : Action or str
        What the actor wants to see or do.
    f : Facts
        What is true of the actor, the submission and the venue's phase.

    Raises
    ------
    NotAllowed
        When the action is not allowed (the message says why).
    ValueError
        For an unknown action.

    Examples
    --------
    >>> from icml25.review import Facts, NotAllowed, Phase, Role, authorize
    >>> reviewer = Facts(Phase.REVIEWING, venue_roles=frozenset({Role.REVIEWER}),
    ...                  verified=True, is_assigned_reviewer=True, has_submission=True)
    >>> authorize("write_review", reviewer)  # allowed: returns None
    >>> try:
    ...     authorize("write_review", Facts(Phase.REVIEWING))
    ... except NotAllowed as exc:
    ...     print(exc)
    please verify your e-mail address first (follow the link we sent you)
    """
    action = Action(action)
    _note(action)
    if action not in NO_LOGIN and not f.logged_in:
        _deny("please log in")
    if action not in UNVERIFIED_OK and f.logged_in and not f.verified:
        _deny("please verify your e-mail address first (follow the link we sent you)")
    _RULES[action](f, Phase(f.phase), f.chair)


def may(action: Action | str, f: Facts) -> bool:
    """Boolean form of :func:`authorize`.

    Parameters
    ----------
    action : Action or str
        What the user wants to do (``"write_review"``, ``"view_authors"``...).
    f : Facts
        What is true of the user, the submission and the venue's phase.

    Returns
    -------
    bool

    Raises
    ------
    ValueError
        For an unknown action.

    Examples
    --------
    >>> from icml25.review import Facts, Phase, Role
    >>> reviewer = Facts(phase=Phase.REVIEWING, venue_roles=frozenset({Role.REVIEWER}),
    ...                  verified=True, is_assigned_reviewer=True)
    >>> may("write_review", reviewer), may("view_authors", reviewer)   # double blind
    (True, False)
    """
    try:
        authorize(action, f)
    except NotAllowed:
        return False
    return True


allowed = may  # the older name


def _deny(reason: str) -> None:
    raise NotAllowed(reason)


def _passes(rule, f: Facts, phase: Phase, chair: bool) -> bool:  # noqa: ANN001
    try:
        rule(f, phase, chair)
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
    if f.staff or f.is_author or f.is_assigned_reviewer or f.subreviewer:
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
    if f.staff or f.is_author or f.is_assigned_reviewer or f.subreviewer:
        return
    _deny("you have no access to this PDF")


def _r_bid(f: Facts, phase: Phase, chair: bool) -> None:
    if not f.venue_roles & {Role.REVIEWER, Role.AC}:
        _deny("only reviewers and area chairs bid")
    if f.conflicted or f.is_author:
        _deny("you are conflicted with this submission")
    _need_phase(phase, Phase.BIDDING)


def _r_assign(f: Facts, phase: Phase, chair: bool) -> None:
    if not (chair or f.senior_ac):
        _deny("only a non-conflicted program chair (or the paper's senior area chair) "
              "assigns reviewers")
    _need_phase(phase, Phase.BIDDING, Phase.ASSIGNMENT, Phase.REVIEWING)


def _r_assign_ac(f: Facts, phase: Phase, chair: bool) -> None:
    if not chair:
        _deny("only a non-conflicted program chair assigns area chairs")
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
    if f.staff or (f.is_assigned_reviewer and f.own_review_submitted):
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
    if not f.staff:
        _deny("only the paper's area chair, its senior area chair or a non-conflicted chair "
              "rates its reviews")
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


def _r_view_review(f: Facts, phase: Phase, chair: bool) -> None:
    writer = f.own_review or (f.subreviewer and f.delegated_review)  # a sub-reviewer writes
    if not f.review_submitted and not writer:                       # their inviter's review
        _deny("drafts are private to their writer")
    if f.staff or writer or (f.is_assigned_reviewer and f.own_review_submitted):
        return
    _deny("reviews are shown to the paper's staff, and to its reviewers after their own")


def _r_stage1(f: Facts, phase: Phase, chair: bool) -> None:
    if not (f.is_author and f.review_submitted and stage1_released(phase)):
        _deny("reviews are released to authors in the feedback phase")


def _r_stage2(f: Facts, phase: Phase, chair: bool) -> None:
    _r_stage1(f, phase, chair)
    if not f.stage2_released:
        _deny("weaknesses and scores follow once every review is rated (or at rebuttal)")


def _r_view_field(f: Facts, phase: Phase, chair: bool) -> None:
    """One added field of a review: its writer always; the paper's staff (and its other
    reviewers, after their own) by audience; authors only for author-visible fields, and a
    stage-2 field only once stage 2 is released to them -- the paper's rule, as for the core
    fields."""
    audience = Audience(f.field_audience)
    if f.field_stage not in (1, 2):
        _deny("a review field is in stage 1 or 2")
    if f.own_review:
        return
    if _passes(_r_view_review, f, phase, chair):
        if audience is Audience.CHAIRS and not f.staff:
            _deny("this field is for the area chair and program chairs only")
        return
    if audience is not Audience.AUTHORS:
        _deny("this field is not shown to authors")
    (_r_stage2 if f.field_stage == 2 else _r_stage1)(f, phase, chair)


def _r_identity(f: Facts, phase: Phase, chair: bool) -> None:
    if not f.staff:
        _deny("reviewer identities are hidden (double-blind)")


def _r_chair_only(f: Facts, phase: Phase, chair: bool) -> None:
    if not chair:
        _deny("only a non-conflicted program chair sees this")


def _r_staff(f: Facts, phase: Phase, chair: bool) -> None:
    if not f.staff:
        _deny("only the paper's area chair and chairs see this")


def _r_view_meta(f: Facts, phase: Phase, chair: bool) -> None:
    if not (f.staff or at_least(phase, Phase.NOTIFICATION)):
        _deny("meta-reviews are released at notification")


def _r_view_decision(f: Facts, phase: Phase, chair: bool) -> None:
    if not (chair or at_least(phase, Phase.NOTIFICATION)):
        _deny("decisions are released at notification")


def _r_venue_details(f: Facts, phase: Phase, chair: bool) -> None:
    if f.venue_roles or f.authored_in_venue or f.is_admin:
        return
    _deny("the venue's timeline and papers are shown to its members and authors")


def _r_feedback_panel(f: Facts, phase: Phase, chair: bool) -> None:
    if Role.REVIEWER not in f.venue_roles:
        _deny("only reviewers receive feedback on their reviews")


def _r_aggregate(f: Facts, phase: Phase, chair: bool) -> None:
    _r_feedback_panel(f, phase, chair)
    if not at_least(phase, Phase.NOTIFICATION):
        _deny("feedback is shown after notification")
    if not ratings_disclosable(f.n_author_ratings):
        _deny(f"fewer than {MIN_RATINGS_FOR_AGGREGATE} ratings; withheld to protect raters")


def _r_view_form(f: Facts, phase: Phase, chair: bool) -> None:
    if not f.venue_roles:
        _deny("the review form is shown to the venue's committee")


def _r_manage_form(f: Facts, phase: Phase, chair: bool) -> None:
    _r_chair(f, phase, chair)
    if at_least(phase, Phase.FEEDBACK):
        _deny("the review form is fixed once reviews go to the authors")
def ratings_disclosable(n_author_ratings: int) -> bool:
    """Whether anything derived from a reviewer's author ratings may be disclosed at all:
    their own aggregate and quality score, and a rank-based badge (rewards.award_badges)."""
    return n_author_ratings >= MIN_RATINGS_FOR_AGGREGATE


def _r_publish_profile(f: Facts, phase: Phase, chair: bool) -> None:
    return None  # logged in and verified (checked by authorize): no unproven name goes public


def _r_camera_ready(f: Facts, phase: Phase, chair: bool) -> None:
    if not f.is_author:
        _deny("only the authors upload the camera-ready version")
    if not f.submission_active:
        _deny("the submission is withdrawn")
    _need_phase(phase, Phase.NOTIFICATION)
    if not f.accepted:
        _deny("only accepted papers have a camera-ready version")
    if f.camera_ready_closed:
        _deny("the camera-ready deadline has passed")


def _r_supplementary(f: Facts, phase: Phase, chair: bool) -> None:
    # with the submission, or with the camera-ready version (same rule and deadline)
    if phase is Phase.SUBMISSION and f.is_author and f.submission_active:
        return
    if phase is Phase.SUBMISSION:
        _r_edit(f, phase, chair)
    _r_camera_ready(f, phase, chair)


def _r_invite_sub(f: Facts, phase: Phase, chair: bool) -> None:
    if not f.is_assigned_reviewer:
        _deny("only a reviewer assigned to this paper invites sub-reviewers")
    if not f.submission_active:
        _deny("the submission is withdrawn")
    _need_phase(phase, Phase.REVIEWING)


def _r_delegated(f: Facts, phase: Phase, chair: bool) -> None:
    if not f.subreviewer:
        _deny("you are not a sub-reviewer of this paper")
    if not f.submission_active:
        _deny("the submission is withdrawn")
    _need_phase(phase, Phase.REVIEWING)


def _r_view_sub(f: Facts, phase: Phase, chair: bool) -> None:
    if not (f.staff or f.own_invitation):
        _deny("sub-reviewers are shown to the paper's staff and to the reviewer who invited them")


def _r_sub_identity(f: Facts, phase: Phase, chair: bool) -> None:
    # pseudonymous to everyone else, the paper's area chairs included
    if not (chair or f.own_invitation):
        _deny("a sub-reviewer's identity is shown to program chairs and their inviter only")


def _r_create_venue(f: Facts, phase: Phase, chair: bool) -> None:
    if not f.is_admin:
        _deny("only site administrators create venues")


def _r_view_job(f: Facts, phase: Phase, chair: bool) -> None:
    if not (f.is_admin or f.own_job or Role.CHAIR in f.venue_roles):
        _deny("a job is shown to whoever started it, the venue's chairs and site admins")


def _r_site_admin(f: Facts, phase: Phase, chair: bool) -> None:
    if not f.is_admin:
        _deny("only site administrators read the mail log")


def _r_committee(f: Facts, phase: Phase, chair: bool) -> None:
    if not f.venue_roles & {Role.CHAIR, Role.SAC, Role.AC, Role.REVIEWER}:
        _deny("only committee members declare conflicts")


def _r_anyone(f: Facts, phase: Phase, chair: bool) -> None:
    return None  # logged in (checked by authorize) or, for VIEW_PUBLIC, anybody


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
    Action.VIEW_REVIEW: _r_view_review,
    Action.VIEW_REVIEW_STAGE1: _r_stage1,
    Action.VIEW_REVIEW_STAGE2: _r_stage2,
    Action.VIEW_REVIEWER_IDENTITY: _r_identity,
    Action.VIEW_CHAIR_NOTES: _r_chair_only,
    Action.VIEW_ASSIGNMENTS: _r_staff,
    Action.VIEW_META_REVIEW: _r_view_meta,
    Action.VIEW_DECISION: _r_view_decision,
    Action.VIEW_REVIEW_FIELD: _r_view_field,
    Action.VIEW_VENUE_DETAILS: _r_venue_details,
    Action.VIEW_FEEDBACK_PANEL: _r_feedback_panel,
    Action.VIEW_FEEDBACK_AGGREGATE: _r_aggregate,
    Action.VIEW_REVIEW_FORM: _r_view_form,
    Action.MANAGE_REVIEW_FORM: _r_manage_form,
    Action.CREATE_VENUE: _r_create_venue,
    Action.USE_ACCOUNT: _r_anyone,
    Action.VIEW_PROFILE: _r_anyone,
    Action.VIEW_PUBLIC: _r_anyone,
    Action.PUBLISH_PROFILE: _r_publish_profile,
    Action.UPLOAD_CAMERA_READY: _r_camera_ready,
    Action.UPLOAD_SUPPLEMENTARY: _r_supplementary,
    Action.DOWNLOAD_SUPPLEMENTARY: _r_pdf,
    Action.ASSIGN_AREA_CHAIR: _r_assign_ac,
    Action.INVITE_SUBREVIEWER: _r_invite_sub,
    Action.WRITE_DELEGATED_REVIEW: _r_delegated,
    Action.VIEW_SUBREVIEWER: _r_view_sub,
    Action.VIEW_SUBREVIEWER_IDENTITY: _r_sub_identity,
    Action.VIEW_JOB: _r_view_job,
    Action.VIEW_MAIL_LOG: _r_site_admin,
    Action.ANSWER_INVITATION: _r_anyone,
    Action.OVERRIDE_CONFLICT: _r_chair,
    Action.DECLARE_CONFLICT: _r_committee,
    Action.SEND_BULK_MAIL: _r_chair,
    Action.RESET_PASSWORD: _r_anyone,
}
assert set(_RULES) == set(Action), "every action needs exactly one rule"


def sees_every_submission(viewer: Viewer, phase: Phase) -> bool:
    """Whether ``viewer`` may see submissions of the venue they neither author nor are
    assigned to (chairs; reviewers and ACs while bidding). Lists load only what this allows;
    :attr:`Action.VIEW_SUBMISSION` still decides each one."""
    _note(Action.VIEW_SUBMISSION)
    bidder = bool(viewer.venue_roles & {Role.REVIEWER, Role.AC}) and phase is Phase.BIDDING
    return viewer.verified and (viewer.is_chair or bidder)


def public(phase: Phase = Phase.SUBMISSION) -> None:
    """Record that a route shows nothing but public information (login page, API schema)."""
    authorize(Action.VIEW_PUBLIC, Facts(phase=phase, logged_in=False))


def profile_visible(opted_in: bool, n_badges: int) -> bool:
    """A reviewer profile is public only if its owner opted in or earned a badge."""
    _note(Action.VIEW_PROFILE)
    return opted_in or n_badges > 0
