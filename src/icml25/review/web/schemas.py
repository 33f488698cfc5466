"""Typed request and response models of the web forms and the JSON API.

Form models validate what a browser posts (FastAPI turns a bad field into a 400 page, never a
500); API models are the OpenAPI schema. Views of submissions and venues are returned as the
authority renders them (plain dicts), so their shape is documented in docs/review.md.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

View = dict[str, Any]  # a dict rendered by icml25.review.authority / visibility


class _Form(BaseModel):
    # every form carries the CSRF token (checked by the dependency before the route runs)
    model_config = ConfigDict(extra="ignore")
    csrf_token: str = ""


# ---------------------------------------------------------------------- forms
class LoginForm(_Form):
    email: str
    password: str


class RegisterForm(_Form):
    email: str
    name: str
    password: str
    affiliation: str = ""


class VenueForm(_Form):
    slug: str
    name: str
    reviews_per_paper: int = Field(default=3, ge=1, le=20)
    bidding: str = ""


class MemberForm(_Form):
    email: str
    role: Literal["chair", "sac", "ac", "reviewer"]


class AssignForm(_Form):
    user_id: int
    role: Literal["reviewer", "ac"] = "reviewer"


class UserForm(_Form):
    user_id: int


class BidForm(_Form):
    value: int = Field(ge=-2, le=2)


class ReviewForm(_Form):
    summary: str = ""
    strengths: str = ""
    questions: str = ""
    weaknesses: str = ""
    score: str = ""  # empty allowed for drafts; the service checks the range
    confidence: str = ""
    action: str = "submit"

    def review_fields(self) -> dict:
        """What ``save_review`` takes from the form (the buttons: draft or submit)."""
        return {"summary": self.summary, "strengths": self.strengths,
                "questions": self.questions, "weaknesses": self.weaknesses, "score": self.score,
                "confidence": self.confidence, "submit": self.action != "draft"}


class TextForm(_Form):
    text: str = ""


class MetaReviewForm(_Form):
    text: str = ""
    recommendation: str = ""


class DecisionForm(_Form):
    outcome: str = ""


class FeedbackForm(_Form):
    comprehension: int = Field(ge=1, le=5)
    constructiveness: int = Field(ge=1, le=5)
    llm_suspected: str = ""
    llm_comment: str = ""


class AdvanceForm(_Form):
    force: str = ""


class ProposalForm(_Form):
    objective: Literal["total", "fair"] = "total"
    affinity: Literal["tfidf", "embedding"] = "tfidf"
    bid_weight: float = Field(default=0.5, ge=0, le=10)
    top_k: int = Field(default=50, ge=1, le=10_000)


class PairForm(_Form):
    submission_id: int
    user_id: int
    kind: Literal["pin", "forbid", "none"]


class DecisionTypesForm(_Form):
    lines: str = Field(min_length=1, max_length=5000)


class DecisionMailForm(_Form):
    template: str = Field(min_length=1, max_length=5000)


class DecisionMailIn(BaseModel):
    template: str


class RebuttalLimitForm(_Form):
    max_chars: int


class RebuttalLimitIn(BaseModel):
    max_chars: int


class DecisionTypeIn(BaseModel):
    key: str
    label: str
    accepted: bool


class DecisionTypesIn(BaseModel):
    types: list[DecisionTypeIn]


class VerifyForm(_Form):
    credential: str = Field(min_length=1, max_length=100_000)


class ProfileForm(_Form):
    public: str = ""


class CommitForm(_Form):
    pairs: str = Field(default="", pattern=r"^(\d+:\d+(,\d+:\d+)*)?$")  # "sid:uid,..."

    def pair_list(self) -> list[tuple[int, int]]:
        return [(int(a), int(b)) for a, b in (p.split(":") for p in self.pairs.split(",") if p)]


class TokenForm(_Form):
    name: str


# ---------------------------------------------------------------------- API requests
class AuthorIn(BaseModel):
    name: str
    email: str
    affiliation: str = ""


class SubmissionIn(BaseModel):
    title: str
    abstract: str
    keywords: str = ""
    authors: list[AuthorIn]
    declared_conflicts: str = ""


class SubmissionEdit(BaseModel):
    title: str | None = None
    abstract: str | None = None
    keywords: str | None = None
    authors: list[AuthorIn] | None = None


class MemberIn(BaseModel):
    email: str
    role: Literal["chair", "sac", "ac", "reviewer"]


class ReviewIn(BaseModel):
    summary: str
    strengths: str
    questions: str
    weaknesses: str
    score: int = Field(ge=1, le=10)
    confidence: int = Field(ge=1, le=5)
    submit: bool = True
    # answers to the venue form's added fields, by key (checked against the form's version)
    answers: dict[str, str | int | bool | None] = Field(default_factory=dict)


class FormFieldIn(BaseModel):
    """One added field of a review form (checked once, by icml25/review/forms.py)."""

    key: str
    label: str
    kind: str = Field(description="text | score | choice | checkbox")
    stage: int = Field(1, description="1: released to authors first; 2: after they rated")
    required: bool = False
    audience: str = Field("authors", description="authors | committee | chairs")
    help: str = ""
    options: list[str] = Field(default_factory=list,
                               description="a score's labels from `low` up, or the choices")
    low: int = 1


class ReviewFormIn(BaseModel):
    fields: list[FormFieldIn]


class FormFieldOut(FormFieldIn):
    core: bool
    audience_label: str


class FormVersionOut(BaseModel):
    version: int
    added_fields: int
    created_at: str | None
    reviews: int


class ReviewFormOut(BaseModel):
    venue: str
    version: int
    current_version: int
    fields: list[FormFieldOut]
    can_edit: bool
    versions: list[FormVersionOut] | None = None


class FeedbackIn(BaseModel):
    comprehension: int = Field(ge=1, le=5)
    constructiveness: int = Field(ge=1, le=5)
    llm_suspected: bool = False
    llm_comment: str = ""


class TextIn(BaseModel):
    text: str


class MetaIn(BaseModel):
    text: str
    recommendation: str


class DecisionIn(BaseModel):
    outcome: str


class BidIn(BaseModel):
    value: int = Field(ge=-2, le=2)


class AssignIn(BaseModel):
    user_id: int
    role: Literal["reviewer", "ac"] = "reviewer"


class AdvanceIn(BaseModel):
    force: bool = False


class ProposalIn(BaseModel):
    objective: Literal["total", "fair"] = "total"
    top_k: int = Field(default=50, ge=1, le=10_000)
    bid_weight: float = 0.5
    min_load: int = Field(default=0, ge=0)
    affinity: Literal["tfidf", "embedding"] = "tfidf"


class BidsIn(BaseModel):
    bids: dict[int, int]  # submission id -> bid (-2..2; the service checks each)


class ChangedOut(BaseModel):
    changed: int


class CommitIn(BaseModel):
    pairs: list[tuple[int, int]]  # (submission id, user id)


class PairIn(BaseModel):
    kind: Literal["pin", "forbid", "none"]


class RatingIn(BaseModel):
    rating: int = Field(ge=1, le=5)


class PaperIn(BaseModel):
    title: str
    abstract: str


class ProfileIn(BaseModel):
    public: bool


# ---------------------------------------------------------------------- API responses
class Ok(BaseModel):
    ok: bool = True


class MeOut(BaseModel):
    id: int
    email: str
    name: str
    email_verified: bool
    profile_public: bool


class PhaseOut(BaseModel):
    phase: str


class MemberOut(BaseModel):
    user_id: int
    role: str


class TimelineOut(BaseModel):
    timeline: dict[str, str]


class NewAssignmentsOut(BaseModel):
    new_assignments: int


class CreatedOut(BaseModel):
    id: int
    number: int


class IdOut(BaseModel):
    id: int


class AssignmentOut(BaseModel):
    id: int
    pseudonym: str


class ReviewOut(BaseModel):
    id: int
    submitted: bool
    form_version: int = 0


class BadgesOut(BaseModel):
    badges: dict[str, int]


class RowsOut(BaseModel):
    rows: int


class PublicKeyOut(BaseModel):
    venue: str
    algorithm: str
    public_key: str
    key_id: str


class ProfileBadge(BaseModel):
    venue: str
    venue_name: str
    badge: str
    issued_at: str


class ProfileOut(BaseModel):
    reviewer_id: int
    name: str
    badges: list[ProfileBadge]


class VerifyOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    valid: bool
    reason: str | None = None


# ----------------------------------------------------------------------- camera-ready and roles
class DeadlineForm(_Form):
    deadline: str = Field(default="", max_length=40)


class SeniorAcForm(_Form):
    user_id: int  # the area chair
    sac_id: str = Field(default="", pattern=r"^\d*$")  # empty: under nobody


class InviteForm(_Form):
    email: str = Field(max_length=254)


class DeadlineIn(BaseModel):
    deadline: str = Field(default="", max_length=40, description="YYYY-MM-DD (end of that day, "
                          "UTC) or an ISO time; empty: no deadline")


class SeniorAcIn(BaseModel):
    sac_id: int | None = Field(default=None,
                               description="the senior area chair's user id; null: none")


class InviteIn(BaseModel):
    email: str = Field(max_length=254)


class UploadOut(BaseModel):
    sha256: str
    size: str
    files: int | None = None  # files in a zip


class SubreviewerOut(BaseModel):
    id: int
    user_id: int


class SubreviewerRow(BaseModel):
    id: int
    label: str  # "Sub-reviewer for Reviewer B"
    active: bool
    name: str | None = None  # program chairs and the inviter only
    email: str | None = None


class SeniorAcRow(BaseModel):
    user_id: int | None
    name: str
    email: str
    area_chairs: list[dict[str, Any]]
