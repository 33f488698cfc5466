"""Turns loaded rows into what a viewer may see; every decision is asked of
:mod:`icml25.review.authority` (nothing here decides on its own, and nothing else in the
platform turns rows into output). The rules, stated by the authority:

* double blind: reviewers and area chairs never see author identities; authors never see
  reviewer identities; reviewers of one paper see each other as "Reviewer A/B/C";
* two-stage release: authors see summary, strengths and questions from the feedback phase on,
  and weaknesses, score and confidence only once every review of their submission is rated (or
  the venue reached rebuttal);
* individual author ratings are shown to (non-conflicted) program chairs only; a reviewer sees
  the aggregate over their reviews after notification and only over at least 3 ratings;
* discussion is for the paper's reviewers (after writing their own review), area chair and chairs;
* a venue's timeline and papers are for its members and authors; a reviewer profile is public
  only when its owner opted in or earned a badge.

Functions here are pure: they take loaded rows (a :class:`Bundle`) and return plain dicts.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from statistics import fmean

from icml25.review import models as m
from icml25.review.authority import (
    Action,
    Facts,
    Viewer,
    facts_for,
    may,
    profile_visible,
)
from icml25.review.decisions import label_of
from icml25.review.forms import FormField, answers_of
from icml25.review.security import format_size
from icml25.review.workflow import PHASE_LABELS, Phase, Role, stage1_released, stage2_released

STAGE1_FIELDS = ("summary", "strengths", "questions")
STAGE2_FIELDS = ("weaknesses", "score", "confidence")


@dataclass
class Bundle:
    """One submission with every row that may be shown about it (loaded by the service)."""

    venue: m.Venue
    submission: m.Submission
    authors: list[m.SubmissionAuthor]
    conflict_user_ids: set[int]
    assignments: list[m.Assignment]
    reviews: list[m.Review]
    feedback: dict[int, m.Feedback]  # review id -> feedback
    rebuttals: dict[int, m.Rebuttal]  # review id -> rebuttal
    posts: list[m.DiscussionPost]
    meta_review: m.MetaReview | None
    decision: m.Decision | None
    users: dict[int, m.User] = field(default_factory=dict)
    bids: dict[int, int] = field(default_factory=dict)  # user id -> bid value
    # the added fields of each review-form version its reviews use (0, the fixed form: none)
    forms: dict[int, tuple[FormField, ...]] = field(default_factory=dict)
    subreviewers: list[m.Subreviewer] = field(default_factory=list)  # from reviewing on
    # the senior area chairs over the paper's area chair (loaded with the discussion posts)
    senior_ac_ids: frozenset[int] = frozenset()

    @property
    def phase(self) -> Phase:
        return Phase(self.venue.phase)

    def author_user_ids(self) -> set[int]:
        ids = {a.user_id for a in self.authors if a.user_id is not None}
        ids.add(self.submission.submitter_id)
        return ids

    def assignment_of(self, user_id: int | None) -> m.Assignment | None:
        for a in self.assignments:
            if a.user_id == user_id:
                return a
        return None

    def submitted_reviews(self) -> list[m.Review]:
        return [r for r in self.reviews if r.submitted]

    def stage2_for_authors(self) -> bool:
        subs = self.submitted_reviews()
        rated = sum(1 for r in subs if r.id in self.feedback)
        return stage2_released(self.phase, len(subs), rated)


def can(viewer: Viewer, action: Action, b: Bundle | None, phase: Phase | None = None,
        review: m.Review | None = None) -> bool:
    """Whether ``viewer`` may do ``action`` (on bundle ``b``), as the authority decides."""
    return may(action, facts_for(viewer, b, phase, review=review))


def _pseudonyms(b: Bundle) -> dict[int, str]:
    return {a.user_id: a.pseudonym for a in b.assignments if a.role == Role.REVIEWER}


def review_view(viewer: Viewer, b: Bundle, review: m.Review) -> dict | None:
    """What ``viewer`` may see of one review (None: nothing at all)."""
    f = facts_for(viewer, b, review=review)
    label = _pseudonyms(b).get(review.reviewer_id, "Reviewer")
    reb = b.rebuttals.get(review.id)
    if may(Action.VIEW_REVIEW, f):
        out = {"id": review.id, "reviewer": label, "submitted": review.submitted,
               **{k: getattr(review, k) for k in STAGE1_FIELDS + STAGE2_FIELDS}}
        if may(Action.VIEW_REVIEWER_IDENTITY, f):
            u = b.users.get(review.reviewer_id)
            out["reviewer_name"] = u.name if u else ""
            out["reviewer_email"] = u.email if u else ""
        if may(Action.VIEW_RATINGS, f):
            fb = b.feedback.get(review.id)
            out["feedback"] = _feedback_dict(fb) if fb else None
        if may(Action.VIEW_ASSIGNMENTS, f):  # the paper's progress: rated or not, no numbers
            out["rated"] = review.id in b.feedback
        return out | _answers(f, b, review) | {"rebuttal": reb.text if reb else None}
    if not may(Action.VIEW_REVIEW_STAGE1, f):
        return None
    out = {"id": review.id, "reviewer": label, "submitted": True,
           **{k: getattr(review, k) for k in STAGE1_FIELDS},
           "rated": review.id in b.feedback, "stage2_released": f.stage2_released}
    if may(Action.VIEW_REVIEW_STAGE2, f):
        out.update({k: getattr(review, k) for k in STAGE2_FIELDS})
    return out | _answers(f, b, review) | {"rebuttal": reb.text if reb else None}


def _answers(f: Facts, b: Bundle, review: m.Review) -> dict:
    """The review's form version and the answers to its added fields that the authority
    shows this viewer (each field asked with its stage and audience)."""
    fields = b.forms.get(review.form_version, ())
    values = answers_of(review.answers) if fields else {}
    shown = []
    for fld in fields:
        if may(Action.VIEW_REVIEW_FIELD, replace(f, field_stage=fld.stage,
                                                 field_audience=fld.audience)):
            value = values.get(fld.key)
            shown.append({"key": fld.key, "label": fld.label, "kind": fld.kind,
                          "stage": fld.stage, "audience": fld.audience, "value": value,
                          "shown": fld.show(value)})
    return {"form_version": review.form_version, "answers": shown}


def _feedback_dict(fb: m.Feedback) -> dict:
    return {"comprehension": fb.comprehension, "constructiveness": fb.constructiveness,
            "llm_suspected": fb.llm_suspected, "llm_comment": fb.llm_comment}


def _poster_label(b: Bundle, user_id: int) -> str:
    a = b.assignment_of(user_id)
    if a is not None and a.role == Role.REVIEWER:
        return a.pseudonym
    if a is not None and a.role == Role.AC:
        return "Area Chair"
    if user_id in b.senior_ac_ids:
        return "Senior Area Chair"
    return "Program Chair"


def submission_view(viewer: Viewer, b: Bundle) -> dict | None:
    """Everything ``viewer`` may see about one submission (None: no access at all)."""
    f = facts_for(viewer, b)
    if not may(Action.VIEW_SUBMISSION, f):
        return None
    s = b.submission
    out: dict = {
        "id": s.id, "number": s.number, "venue": b.venue.slug, "title": s.title,
        "abstract": s.abstract, "keywords": s.keywords, "status": s.status,
        "has_pdf": bool(s.pdf_path) and may(Action.DOWNLOAD_PDF, f),
        "my_roles": _my_roles(f),
    }
    if may(Action.VIEW_AUTHORS, f):
        out["authors"] = [{"name": a.name, "email": a.email, "affiliation": a.affiliation}
                          for a in b.authors]
    notes = may(Action.VIEW_CHAIR_NOTES, f)
    if notes:
        out["declared_conflicts"] = s.declared_conflicts
        out["conflicts"] = sorted(
            (b.users[u].name if u in b.users else str(u)) for u in b.conflict_user_ids)
        out["bids"] = {(b.users[u].name if u in b.users else str(u)): v
                       for u, v in b.bids.items()}
    if may(Action.VIEW_ASSIGNMENTS, f):
        out["assignments"] = [
            {"user_id": a.user_id, "role": a.role, "pseudonym": a.pseudonym,
             "name": b.users[a.user_id].name if a.user_id in b.users else ""}
            for a in b.assignments]
    if f.is_assigned_reviewer:
        me = b.assignment_of(viewer.user_id)
        out["my_pseudonym"] = me.pseudonym if me else None
    reviews = [review_view(viewer, b, r) for r in b.reviews]
    out["reviews"] = [r for r in reviews if r is not None]
    if f.is_author:
        out["stage1_released"] = stage1_released(b.phase)
        out["stage2_released"] = f.stage2_released
    if may(Action.VIEW_DISCUSSION, f):
        out["discussion"] = [
            {"author": _poster_label(b, p.user_id)
             + (f" ({b.users[p.user_id].name})" if notes and p.user_id in b.users else ""),
             "text": p.text, "at": p.created_at.isoformat()} for p in b.posts]
    if b.meta_review and may(Action.VIEW_META_REVIEW, f):
        out["meta_review"] = {"text": b.meta_review.text,
                              "recommendation": b.meta_review.recommendation}
    if b.decision and may(Action.VIEW_DECISION, f):
        out["decision"] = b.decision.outcome
        out["decision_label"] = label_of(b.venue.decision_types, b.decision.outcome)
    out |= _files_view(f, b)
    if b.subreviewers:
        out |= _subreviewers_view(viewer, f, b)
    return out


def _files_view(f: Facts, b: Bundle) -> dict:
    """The camera-ready PDF and the supplementary zip, for those who may read the paper."""
    s, out = b.submission, {}
    if s.camera_path and may(Action.DOWNLOAD_PDF, f):
        out["camera_ready"] = {"size": format_size(s.camera_size or 0), "sha256": s.camera_sha256,
                               "uploaded_at": s.camera_at.isoformat(timespec="seconds")
                               if s.camera_at else None}
    if s.supp_path and may(Action.DOWNLOAD_SUPPLEMENTARY, f):
        out["supplementary"] = {"size": format_size(s.supp_size or 0), "sha256": s.supp_sha256}
    return out


def _subreviewers_view(viewer: Viewer, f: Facts, b: Bundle) -> dict:
    """Sub-reviewers: pseudonymous ("Sub-reviewer for Reviewer B") to the paper's staff, named
    to program chairs and to the reviewer who invited them; a sub-reviewer learns whose review
    they write."""
    pseud = _pseudonyms(b)
    rows = []
    for x in b.subreviewers:
        fx = facts_for(viewer, b, subreviewer=x)
        if not may(Action.VIEW_SUBREVIEWER, fx):
            continue
        row = {"id": x.id, "for": pseud.get(x.inviter_id, ""),
               "label": f"Sub-reviewer for {pseud.get(x.inviter_id, 'a former reviewer')}",
               "active": x.inviter_id in pseud}
        if may(Action.VIEW_SUBREVIEWER_IDENTITY, fx):
            u = b.users.get(x.user_id)
            row |= {"user_id": x.user_id, "name": u.name if u else "",
                    "email": u.email if u else ""}
        rows.append(row)
    out: dict = {"subreviewers": rows} if rows else {}
    if f.subreviewer:
        out["subreviewer_for"] = sorted(pseud[x.inviter_id] for x in b.subreviewers
                                        if x.user_id == viewer.user_id and x.inviter_id in pseud)
    return out


def _my_roles(f: Facts) -> list[str]:
    roles = []
    if f.is_author:
        roles.append("author")
    if f.is_assigned_reviewer:
        roles.append("reviewer")
    if f.is_assigned_ac:
        roles.append("area chair")
    if f.senior_ac:
        roles.append("senior area chair")
    if f.subreviewer:
        roles.append("sub-reviewer")
    if f.chair:
        roles.append("program chair")
    return roles


def listing_item(view: dict) -> dict:
    """The short form of a submission view used in lists (derived from the full view)."""
    keys = ("id", "number", "title", "status", "my_roles", "decision", "authors", "keywords")
    item = {k: view[k] for k in keys if k in view}
    item["n_reviews_visible"] = len(view.get("reviews", []))
    if "assignments" in view:  # staff: the paper's progress, from what the view already shows
        reviews = [r for r in view.get("reviews", []) if r.get("submitted")]
        scores = [r["score"] for r in reviews if r.get("score") is not None]
        assigned = [a for a in view["assignments"] if a["role"] == Role.REVIEWER]
        item["progress"] = {
            "reviewers": len(assigned), "submitted": len(reviews),
            "missing": max(0, len(assigned) - len(reviews)),
            "mean_score": round(sum(scores) / len(scores), 2) if scores else None,
            "rated": sum(1 for r in reviews if r.get("rated")),
            "area_chair": next((a["name"] for a in view["assignments"]
                                if a["role"] == Role.AC), None)}
    return item


def venue_view(viewer: Viewer, venue: m.Venue, *, authored: bool = False) -> dict:
    """A venue as ``viewer`` may see it: its public card (name, phase; while submission is
    open, the call for papers' deadline and PDF limit) for anyone logged in; the timeline and
    settings for its members and authors only."""
    try:
        timeline = json.loads(venue.timeline or "{}")
    except ValueError:
        timeline = {}
    out = {"id": venue.id, "slug": venue.slug, "name": venue.name, "phase": venue.phase,
           "phase_label": PHASE_LABELS[Phase(venue.phase)],
           "my_roles": sorted(r.value for r in viewer.venue_roles), "timeline": {}}
    if Phase(venue.phase) is Phase.SUBMISSION:  # what the venue publishes
        deadline = timeline.get(Phase.SUBMISSION.value)
        out["timeline"] = {Phase.SUBMISSION.value: deadline} if deadline else {}
        out["max_pdf_size"] = format_size(venue.max_pdf_bytes)
    f = facts_for(viewer, None, Phase(venue.phase), authored_in_venue=authored)
    if may(Action.VIEW_VENUE_DETAILS, f):
        out |= {"bidding_enabled": venue.bidding_enabled,
                "camera_ready_deadline": venue.camera_ready_deadline or None,
                "max_rebuttal_chars": venue.max_rebuttal_chars,
                "reviews_per_paper": venue.reviews_per_paper, "timeline": timeline,
                "max_pdf_size": format_size(venue.max_pdf_bytes)}
    return out


def feedback_summary(viewer: Viewer, phase: Phase, ratings: Iterable[m.Feedback]) -> dict:
    """A reviewer's own aggregate: shown after notification over >= 3 ratings, else withheld."""
    rows = list(ratings)
    reason = _aggregate_withheld(viewer, phase, len(rows))
    if reason:
        return {"available": False, "reason": reason}
    return {"available": True, "n_ratings": len(rows),
            "mean_comprehension": round(fmean(r.comprehension for r in rows), 2),
            "mean_constructiveness": round(fmean(r.constructiveness for r in rows), 2),
            "n_llm_flags": sum(1 for r in rows if r.llm_suspected)}


def _aggregate_withheld(viewer: Viewer, phase: Phase, n: int) -> str | None:
    """Why the authority withholds a reviewer's own aggregate (None: it is shown)."""
    from icml25.review.authority import authorize
    from icml25.review.errors import NotAllowed

    try:
        authorize(Action.VIEW_FEEDBACK_AGGREGATE, facts_for(viewer, None, phase,
                                                            n_author_ratings=n))
    except NotAllowed as exc:
        return str(exc)
    return None


def ratings_table(viewer: Viewer, bundles: Iterable[Bundle]) -> list[dict]:
    """Individual ratings for program chairs (skipping papers they are conflicted with)."""
    out = []
    for b in bundles:
        f = facts_for(viewer, b)
        if not may(Action.VIEW_RATINGS, f):
            continue
        pseud = _pseudonyms(b)
        for r in b.reviews:
            fb = b.feedback.get(r.id)
            if fb is None:
                continue
            u = b.users.get(r.reviewer_id)
            out.append({"submission": b.submission.number, "review_id": r.id,
                        "reviewer": pseud.get(r.reviewer_id, ""),
                        "reviewer_name": u.name if u else "", **_feedback_dict(fb)})
    return out


def quality_view(viewer: Viewer, phase: Phase, score, n_author_ratings: int) -> dict:  # noqa: ANN001
    """A reviewer's own review-quality score: the formula is always shown; the numbers only
    after notification and over at least 3 author ratings (like the feedback aggregate)."""
    from icml25.review.rewards import FORMULA, WEIGHTS

    out: dict = {"formula": FORMULA, "weights": WEIGHTS}
    if score is None:
        return out | {"available": False, "reason": "no submitted reviews"}
    reason = _aggregate_withheld(viewer, phase, n_author_ratings)
    if reason:
        return out | {"available": False, "reason": reason}
    return out | {"available": True, **score.as_dict()}


def profile_view(user: m.User | None, badges: Iterable[tuple[m.Badge, m.Venue]]) -> dict | None:
    """The public reviewer profile: name and badges across venues (tier, venue, date) -- no
    e-mail, no scores, no papers reviewed. None unless the authority makes it public (and
    for an unknown user, so that ids cannot be probed)."""
    rows = list(badges)
    if not profile_visible(bool(user and user.profile_public), len(rows)) or user is None:
        return None
    return {"reviewer_id": user.id, "name": user.name,
            "badges": [{"venue": v.slug, "venue_name": v.name, "badge": b.tier,
                        "issued_at": b.issued_at.isoformat(timespec="seconds")}
                       for b, v in rows]}
