"""SQLAlchemy 2 models of the review platform (schema managed by Alembic migrations)."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from icml25.review.decisions import DEFAULT_JSON as DECISIONS_DEFAULT

# Stable constraint names so that migrations upgrade and downgrade on SQLite and PostgreSQL alike.
NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def utcnow() -> datetime:
    """Timezone-aware current time (UTC)."""
    return datetime.now(UTC)


class Base(DeclarativeBase):
    """Declarative base with the naming convention."""

    metadata = MetaData(naming_convention=NAMING)


def _fk(target: str, nullable: bool = False, ondelete: str = "CASCADE") -> Mapped:
    return mapped_column(ForeignKey(target, ondelete=ondelete), nullable=nullable, index=True)


class User(Base):
    __tablename__ = "users"
    id: Mapped[int] = mapped_column(primary_key=True)
    email: Mapped[str] = mapped_column(String(254), unique=True)
    name: Mapped[str] = mapped_column(String(200))
    affiliation: Mapped[str] = mapped_column(String(200), default="")
    password_hash: Mapped[str] = mapped_column(String(255))
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    # None until the owner follows the link sent to the address (self-registered accounts);
    # an unverified account is linked to no submission and sees none
    email_verified_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True),
                                                               nullable=True)
    profile_public: Mapped[bool] = mapped_column(Boolean, default=False)  # opted in
    # non-essential mail: immediate | digest | off (revision 0011)
    mail_preference: Mapped[str] = mapped_column(String(16), default="immediate",
                                                 server_default="immediate")


class EmailToken(Base):
    """A single-use, expiring secret sent by e-mail (only its SHA-256 is stored)."""

    __tablename__ = "email_tokens"
    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = _fk("users.id")
    purpose: Mapped[str] = mapped_column(String(16), default="verify")
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    # the address a token proves (a second address of the account; revision 0011)
    target: Mapped[str] = mapped_column(String(254), default="", server_default="")


class Venue(Base):
    __tablename__ = "venues"
    id: Mapped[int] = mapped_column(primary_key=True)
    slug: Mapped[str] = mapped_column(String(64), unique=True)
    name: Mapped[str] = mapped_column(String(200))
    phase: Mapped[str] = mapped_column(String(32), default="submission")
    bidding_enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    reviews_per_paper: Mapped[int] = mapped_column(Integer, default=3)
    max_load: Mapped[int] = mapped_column(Integer, default=6)
    max_pdf_bytes: Mapped[int] = mapped_column(Integer, default=10 * 1024 * 1024)
    # JSON text: {phase: ISO deadline} -- the venue's configurable timeline
    timeline: Mapped[str] = mapped_column(Text, default="{}")
    # JSON text: [{key, label, accepted}] -- the venue's decision types (revision 0005)
    decision_types: Mapped[str] = mapped_column(Text, default=DECISIONS_DEFAULT,
                                                server_default=DECISIONS_DEFAULT)
    # the e-mail authors get at notification ({number}, {title}, {venue}, {decision});
    # empty: decisions.DEFAULT_MAIL; revision 0007
    decision_mail: Mapped[str] = mapped_column(Text, default="", server_default="")
    # the most characters of one rebuttal (one response to one review); revision 0006
    max_rebuttal_chars: Mapped[int] = mapped_column(Integer, default=5000, server_default="5000")
    # the newest version of the venue's review form (0: the built-in form); revision 0008
    review_form_version: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # the camera-ready deadline ('YYYY-MM-DD' or an ISO time; empty: none); revision 0009
    camera_ready_deadline: Mapped[str] = mapped_column(String(40), default="", server_default="")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Membership(Base):
    __tablename__ = "memberships"
    __table_args__ = (UniqueConstraint("venue_id", "user_id", "role"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    venue_id: Mapped[int] = _fk("venues.id")
    user_id: Mapped[int] = _fk("users.id")
    role: Mapped[str] = mapped_column(String(16))
    # the most papers the member takes, declared by themselves (None: the venue's max_load)
    quota: Mapped[int | None] = mapped_column(Integer, nullable=True)  # revision 0011


class Submission(Base):
    __tablename__ = "submissions"
    __table_args__ = (UniqueConstraint("venue_id", "number"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    venue_id: Mapped[int] = _fk("venues.id")
    number: Mapped[int] = mapped_column(Integer)
    title: Mapped[str] = mapped_column(String(300))
    abstract: Mapped[str] = mapped_column(Text)
    keywords: Mapped[str] = mapped_column(String(500), default="")
    declared_conflicts: Mapped[str] = mapped_column(Text, default="")
    submitter_id: Mapped[int] = _fk("users.id")
    status: Mapped[str] = mapped_column(String(16), default="active")
    pdf_path: Mapped[str | None] = mapped_column(String(500), nullable=True)
    pdf_sha256: Mapped[str | None] = mapped_column(String(64), nullable=True)
    pdf_size: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # the camera-ready PDF and the supplementary material (a zip); revision 0009
    camera_path: Mapped[str | None] = mapped_column(String(500), nullable=True)
    camera_sha256: Mapped[str | None] = mapped_column(String(64), nullable=True)
    camera_size: Mapped[int | None] = mapped_column(Integer, nullable=True)
    camera_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    supp_path: Mapped[str | None] = mapped_column(String(500), nullable=True)
    supp_sha256: Mapped[str | None] = mapped_column(String(64), nullable=True)
    supp_size: Mapped[int | None] = mapped_column(Integer, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    # bumped with every change to the submission or its rows (icml25/review/cache.py)
    version: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    authors: Mapped[list[SubmissionAuthor]] = relationship(
        order_by="SubmissionAuthor.position", cascade="all, delete-orphan")


class SubmissionAuthor(Base):
    __tablename__ = "submission_authors"
    __table_args__ = (UniqueConstraint("submission_id", "position"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    submission_id: Mapped[int] = _fk("submissions.id")
    position: Mapped[int] = mapped_column(Integer)
    name: Mapped[str] = mapped_column(String(200))
    email: Mapped[str] = mapped_column(String(254))
    affiliation: Mapped[str] = mapped_column(String(200), default="")
    user_id: Mapped[int | None] = _fk("users.id", nullable=True, ondelete="SET NULL")
    # the name as a comparison key (icml25/review/people.py:name_key), for co-authorship
    # conflicts found by an index lookup; revision 0011
    name_key: Mapped[str] = mapped_column(String(200), default="", server_default="",
                                          index=True)


class Conflict(Base):
    __tablename__ = "conflicts"
    __table_args__ = (UniqueConstraint("submission_id", "user_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    submission_id: Mapped[int] = _fk("submissions.id")
    user_id: Mapped[int] = _fk("users.id")
    reason: Mapped[str] = mapped_column(String(200))


class Bid(Base):
    __tablename__ = "bids"
    __table_args__ = (UniqueConstraint("submission_id", "user_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    submission_id: Mapped[int] = _fk("submissions.id")
    user_id: Mapped[int] = _fk("users.id")
    value: Mapped[int] = mapped_column(Integer)  # -2 (no) .. 2 (eager)


class Assignment(Base):
    __tablename__ = "assignments"
    __table_args__ = (UniqueConstraint("submission_id", "user_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    submission_id: Mapped[int] = _fk("submissions.id")
    user_id: Mapped[int] = _fk("users.id")
    role: Mapped[str] = mapped_column(String(16))  # reviewer | ac
    pseudonym: Mapped[str] = mapped_column(String(32), default="")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Review(Base):
    __tablename__ = "reviews"
    __table_args__ = (UniqueConstraint("submission_id", "reviewer_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    submission_id: Mapped[int] = _fk("submissions.id")
    reviewer_id: Mapped[int] = _fk("users.id")
    # stage 1 (released first)
    summary: Mapped[str] = mapped_column(Text, default="")
    strengths: Mapped[str] = mapped_column(Text, default="")
    questions: Mapped[str] = mapped_column(Text, default="")
    # stage 2 (released after the authors rated)
    weaknesses: Mapped[str] = mapped_column(Text, default="")
    score: Mapped[int | None] = mapped_column(Integer, nullable=True)
    confidence: Mapped[int | None] = mapped_column(Integer, nullable=True)
    submitted: Mapped[bool] = mapped_column(Boolean, default=False)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    # when the review was first submitted (timeliness for rewards); added in revision 0002
    submitted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    # the venue's review-form version it is written with (0: the built-in form) and its
    # answers to that form's added fields (JSON); revision 0008
    form_version: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    answers: Mapped[str] = mapped_column(Text, default="{}", server_default="{}")


class Feedback(Base):
    """An author's rating of one review (visible individually to program chairs only)."""

    __tablename__ = "feedback"
    id: Mapped[int] = mapped_column(primary_key=True)
    review_id: Mapped[int] = mapped_column(
        ForeignKey("reviews.id", ondelete="CASCADE"), unique=True)
    author_id: Mapped[int] = _fk("users.id")
    comprehension: Mapped[int] = mapped_column(Integer)
    constructiveness: Mapped[int] = mapped_column(Integer)
    llm_suspected: Mapped[bool] = mapped_column(Boolean, default=False)
    llm_comment: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Rebuttal(Base):
    __tablename__ = "rebuttals"
    id: Mapped[int] = mapped_column(primary_key=True)
    review_id: Mapped[int] = mapped_column(
        ForeignKey("reviews.id", ondelete="CASCADE"), unique=True)
    author_id: Mapped[int] = _fk("users.id")
    text: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class DiscussionPost(Base):
    __tablename__ = "discussion_posts"
    id: Mapped[int] = mapped_column(primary_key=True)
    submission_id: Mapped[int] = _fk("submissions.id")
    user_id: Mapped[int] = _fk("users.id")
    text: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class MetaReview(Base):
    __tablename__ = "meta_reviews"
    id: Mapped[int] = mapped_column(primary_key=True)
    submission_id: Mapped[int] = mapped_column(
        ForeignKey("submissions.id", ondelete="CASCADE"), unique=True)
    ac_id: Mapped[int] = _fk("users.id")
    text: Mapped[str] = mapped_column(Text)
    recommendation: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Decision(Base):
    __tablename__ = "decisions"
    id: Mapped[int] = mapped_column(primary_key=True)
    submission_id: Mapped[int] = mapped_column(
        ForeignKey("submissions.id", ondelete="CASCADE"), unique=True)
    decided_by: Mapped[int] = _fk("users.id")
    outcome: Mapped[str] = mapped_column(String(16))  # accept | reject
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Email(Base):
    """Outbox of notification e-mails (sent by ``send_outbox`` when SMTP is configured)."""

    __tablename__ = "emails"
    id: Mapped[int] = mapped_column(primary_key=True)
    venue_id: Mapped[int | None] = _fk("venues.id", nullable=True)
    # the submission an e-mail is about (hidden from chairs conflicted with it)
    submission_id: Mapped[int | None] = _fk("submissions.id", nullable=True)
    to_addr: Mapped[str] = mapped_column(String(254))
    subject: Mapped[str] = mapped_column(String(300))
    body: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    sent_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    # revision 0011: every e-mail is delivered by a job (icml25/review/jobs.py) under a
    # Message-ID fixed when it is queued, so a resend after a crash is recognisably the same
    message_id: Mapped[str | None] = mapped_column(String(200), nullable=True, unique=True)
    # queued | sent | unsent (no SMTP server configured: readable in the mail log) | failed
    status: Mapped[str] = mapped_column(String(16), default="queued", server_default="queued")
    attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    last_error: Mapped[str] = mapped_column(Text, default="", server_default="")


class AuditEvent(Base):
    __tablename__ = "audit_events"
    id: Mapped[int] = mapped_column(primary_key=True)
    venue_id: Mapped[int | None] = _fk("venues.id", nullable=True)
    actor_id: Mapped[int | None] = _fk("users.id", nullable=True, ondelete="SET NULL")
    submission_id: Mapped[int | None] = _fk("submissions.id", nullable=True)
    action: Mapped[str] = mapped_column(String(64))
    target: Mapped[str] = mapped_column(String(128), default="")
    detail: Mapped[str] = mapped_column(Text, default="")
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class WebSession(Base):
    __tablename__ = "web_sessions"
    id: Mapped[int] = mapped_column(primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    user_id: Mapped[int] = _fk("users.id")
    csrf_token: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class ApiToken(Base):
    """Personal access token (only a SHA-256 of the secret is stored)."""

    __tablename__ = "api_tokens"
    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = _fk("users.id")
    name: Mapped[str] = mapped_column(String(100))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    prefix: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class LoginAttempt(Base):
    __tablename__ = "login_attempts"
    id: Mapped[int] = mapped_column(primary_key=True)
    email: Mapped[str] = mapped_column(String(254), index=True)
    ip: Mapped[str] = mapped_column(String(64), index=True)
    success: Mapped[bool] = mapped_column(Boolean)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)


# ---------------------------------------------------------------- revision 0002: scale & rewards
class ReviewerPaper(Base):
    """A reviewer's past paper (title and abstract): the text their affinity is computed from."""

    __tablename__ = "reviewer_papers"
    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = _fk("users.id")
    title: Mapped[str] = mapped_column(String(300))
    abstract: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class PairConstraint(Base):
    """A chair's pin (always assign) or forbid (never assign) of one (submission, reviewer)."""

    __tablename__ = "pair_constraints"
    __table_args__ = (UniqueConstraint("submission_id", "user_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    submission_id: Mapped[int] = _fk("submissions.id")
    user_id: Mapped[int] = _fk("users.id")
    kind: Mapped[str] = mapped_column(String(8))  # pin | forbid


class ReviewRating(Base):
    """The area chair's rating (1-5) of one review (never shown to authors)."""

    __tablename__ = "review_ratings"
    id: Mapped[int] = mapped_column(primary_key=True)
    review_id: Mapped[int] = mapped_column(
        ForeignKey("reviews.id", ondelete="CASCADE"), unique=True)
    rater_id: Mapped[int] = _fk("users.id")
    rating: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class VenueKey(Base):
    """The venue's Ed25519 key pair (raw hex) that signs badge credentials."""

    __tablename__ = "venue_keys"
    id: Mapped[int] = mapped_column(primary_key=True)
    venue_id: Mapped[int] = mapped_column(
        ForeignKey("venues.id", ondelete="CASCADE"), unique=True)
    public_key: Mapped[str] = mapped_column(String(64))
    private_key: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Badge(Base):
    """A badge awarded at venue close, with its signed credential (JSON text)."""

    __tablename__ = "badges"
    __table_args__ = (UniqueConstraint("venue_id", "user_id", "tier"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    venue_id: Mapped[int] = _fk("venues.id")
    user_id: Mapped[int] = _fk("users.id")
    tier: Mapped[str] = mapped_column(String(16))  # top-10 | top-30 | on-time
    quality: Mapped[float] = mapped_column(Float)
    credential: Mapped[str] = mapped_column(Text)
    issued_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class PaperCitation(Base):
    """A citation count for a submission, imported by a chair (CSV) for reviewer impact."""

    __tablename__ = "paper_citations"
    id: Mapped[int] = mapped_column(primary_key=True)
    submission_id: Mapped[int] = mapped_column(
        ForeignKey("submissions.id", ondelete="CASCADE"), unique=True)
    count: Mapped[int] = mapped_column(Integer)
    imported_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


# ---------------------------------------------------------------- revision 0004: view cache
class ViewEpoch(Base):
    """One row: a value that changes with every change to accounts, memberships, venues,
    authors and assignments (icml25/review/cache.py; no row: nothing is cached)."""

    __tablename__ = "view_epoch"
    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    value: Mapped[int] = mapped_column(BigInteger)


# ---------------------------------------------------------------- revision 0008: review forms
class ReviewFormVersion(Base):
    """One version of a venue's review form: the fields its chairs added to the fixed ones
    (JSON, see icml25/review/forms.py). Written once, never changed: reviews name their
    version."""

    __tablename__ = "review_form_versions"
    __table_args__ = (UniqueConstraint("venue_id", "version"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    venue_id: Mapped[int] = _fk("venues.id")
    version: Mapped[int] = mapped_column(Integer)
    fields: Mapped[str] = mapped_column(Text)
    created_by: Mapped[int | None] = _fk("users.id", nullable=True, ondelete="SET NULL")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


# ---------------------------------------------------------------- revision 0010: roles
class SeniorAreaChair(Base):
    """A senior area chair's oversight of one area chair in a venue (one SAC per AC)."""

    __tablename__ = "senior_area_chairs"
    __table_args__ = (UniqueConstraint("venue_id", "ac_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    venue_id: Mapped[int] = _fk("venues.id")
    sac_id: Mapped[int] = _fk("users.id")
    ac_id: Mapped[int] = _fk("users.id")


class Subreviewer(Base):
    """A sub-reviewer invited by an assigned reviewer for one submission; they write the
    inviting reviewer's review (which stays one per assignment)."""

    __tablename__ = "subreviewers"
    __table_args__ = (UniqueConstraint("submission_id", "user_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    submission_id: Mapped[int] = _fk("submissions.id")
    inviter_id: Mapped[int] = _fk("users.id")
    user_id: Mapped[int] = _fk("users.id")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


# ---------------------------------------------------------------- revision 0011: people and jobs
class Job(Base):
    """One unit of background work on the database-backed queue (icml25/review/jobs.py).

    A worker claims a job by setting ``locked_by`` and a lease (``locked_until``) in one
    conditional update; a job whose lease ran out (its worker died) is claimed again, so every
    job runs at least once. ``idempotency_key`` makes enqueuing the same work twice a no-op."""

    __tablename__ = "jobs"
    id: Mapped[int] = mapped_column(primary_key=True)
    kind: Mapped[str] = mapped_column(String(40))
    payload: Mapped[str] = mapped_column(Text, default="{}")
    status: Mapped[str] = mapped_column(String(16), default="queued", index=True)
    progress: Mapped[float] = mapped_column(Float, default=0.0)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    max_attempts: Mapped[int] = mapped_column(Integer, default=5)
    run_after: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow,
                                                index=True)
    locked_by: Mapped[str] = mapped_column(String(80), default="")
    locked_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True),
                                                          nullable=True)
    last_error: Mapped[str] = mapped_column(Text, default="")
    result: Mapped[str] = mapped_column(Text, default="{}")
    idempotency_key: Mapped[str | None] = mapped_column(String(200), nullable=True, unique=True)
    venue_id: Mapped[int | None] = _fk("venues.id", nullable=True)
    created_by: Mapped[int | None] = _fk("users.id", nullable=True, ondelete="SET NULL")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class Invitation(Base):
    """An invitation to join a venue's committee, answered through a single-use link."""

    __tablename__ = "invitations"
    __table_args__ = (UniqueConstraint("venue_id", "email", "role"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    venue_id: Mapped[int] = _fk("venues.id")
    email: Mapped[str] = mapped_column(String(254))
    name: Mapped[str] = mapped_column(String(200))
    role: Mapped[str] = mapped_column(String(16))
    affiliation: Mapped[str] = mapped_column(String(200), default="")
    quota: Mapped[int | None] = mapped_column(Integer, nullable=True)
    status: Mapped[str] = mapped_column(String(16), default="pending")  # pending|accepted|declined
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    reason: Mapped[str] = mapped_column(Text, default="")  # the invitee's, on declining
    user_id: Mapped[int | None] = _fk("users.id", nullable=True, ondelete="SET NULL")
    invited_by: Mapped[int | None] = _fk("users.id", nullable=True, ondelete="SET NULL")
    sent_count: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    answered_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class UserEmail(Base):
    """A further address of an account (the primary one stays in ``users.email``)."""

    __tablename__ = "user_emails"
    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = _fk("users.id")
    email: Mapped[str] = mapped_column(String(254), unique=True)
    verified_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Affiliation(Base):
    """One entry of an account's affiliation history (``end_year`` None: current)."""

    __tablename__ = "affiliations"
    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = _fk("users.id")
    institution: Mapped[str] = mapped_column(String(200))
    domain: Mapped[str] = mapped_column(String(120), index=True)
    start_year: Mapped[int | None] = mapped_column(Integer, nullable=True)
    end_year: Mapped[int | None] = mapped_column(Integer, nullable=True)


class Publication(Base):
    """One paper of an account's uploaded publication list (conflicts and affinity)."""

    __tablename__ = "publications"
    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = _fk("users.id")
    title: Mapped[str] = mapped_column(String(500))
    year: Mapped[int | None] = mapped_column(Integer, nullable=True)
    abstract: Mapped[str] = mapped_column(Text, default="")
    authors: Mapped[str] = mapped_column(Text, default="[]")  # JSON list of names
    source: Mapped[str] = mapped_column(String(16), default="bibtex")


class Coauthor(Base):
    """One co-author of a publication, by normalised name (icml25/review/people.py)."""

    __tablename__ = "coauthors"
    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = _fk("users.id")
    publication_id: Mapped[int] = _fk("publications.id")
    name_key: Mapped[str] = mapped_column(String(200), index=True)


class ConflictDeclaration(Base):
    """A conflict declared by a reviewer, or a chair's override either way (with a reason)."""

    __tablename__ = "conflict_declarations"
    __table_args__ = (UniqueConstraint("submission_id", "user_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    submission_id: Mapped[int] = _fk("submissions.id")
    user_id: Mapped[int] = _fk("users.id")
    conflicted: Mapped[bool] = mapped_column(Boolean, default=True)
    by_chair: Mapped[bool] = mapped_column(Boolean, default=False)
    reason: Mapped[str] = mapped_column(String(300), default="")
    declared_by: Mapped[int | None] = _fk("users.id", nullable=True, ondelete="SET NULL")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class RateEvent(Base):
    """One throttled request (password resets), counted per key within a window."""

    __tablename__ = "rate_events"
    id: Mapped[int] = mapped_column(primary_key=True)
    key: Mapped[str] = mapped_column(String(300), index=True)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
