"""A venue's review form: its committee reads it, its chairs save new
versions (until reviews go to the authors); a review is written with the current version and
keeps it once submitted (``Reviewing.save_review``)."""

from __future__ import annotations

from sqlalchemy import func, select

from icml25.review import models as m
from icml25.review.authority import Action, authorize, facts_for, may
from icml25.review.errors import NotFound, ServiceError
from icml25.review.forms import (
    AUDIENCE_LABELS,
    CORE_FIELDS,
    DEFAULT_VERSION,
    FormError,
    FormField,
    answers_of,
    clean_fields,
    from_json,
    to_json,
)
from icml25.review.services.base import Service
from icml25.review.workflow import Phase


def review_draft(review: m.Review | None) -> dict | None:
    """A review as its writer edits it (the reviewer, or their sub-reviewer): every field,
    the added fields' answers and the form version it was written with."""
    if review is None:
        return None
    return {k: getattr(review, k) for k in (
        "summary", "strengths", "questions", "weaknesses", "score", "confidence",
        "submitted", "form_version")} | {"answers": answers_of(review.answers)}


class ReviewForms(Service):
    """Review forms per venue, versioned."""

    def review_form(self, venue: m.Venue, version: int | None = None) -> dict:
        """The venue's form (``version``: an earlier one) as its committee sees it: the fixed
        fields, the added ones, and for chairs every version with the reviews using it."""
        facts = facts_for(self.viewer(venue), None, Phase(venue.phase))
        authorize(Action.VIEW_REVIEW_FORM, facts)
        current = self.current_form_version(venue)
        version = current if version is None else int(version)
        out = {"venue": venue.slug, "version": version, "current_version": current,
               "fields": form_view(self.form_fields(venue, version)),
               "can_edit": may(Action.MANAGE_REVIEW_FORM, facts)}
        if may(Action.VIEW_ADMIN, facts):
            out["versions"] = self._versions(venue)
        return out

    def save_review_form(self, venue: m.Venue, rows: list[dict]) -> dict:
        """Save the added fields as the venue's next form version (chairs, until reviews go to
        the authors). Reviews already submitted keep the version they were written with; an
        unchanged form writes no version."""
        authorize(Action.MANAGE_REVIEW_FORM, facts_for(self.viewer(venue), None,
                                                       Phase(venue.phase)))
        try:
            fields = clean_fields(rows)
        except FormError as exc:
            raise ServiceError(str(exc)) from None
        current = self.current_form_version(venue)
        if fields != self.form_fields(venue, current):
            self.db.add(m.ReviewFormVersion(venue_id=venue.id, version=current + 1,
                                            fields=to_json(fields), created_by=self.actor.id))
            venue.review_form_version = current + 1  # a venue change: a new cache epoch
            self._audit(venue.id, "venue.review_form", f"venue:{venue.id}",
                        version=current + 1, keys=[f.key for f in fields])
            self._commit()
        return self.review_form(venue)

    # ------------------------------------------------------------------ for the services
    def current_form_version(self, venue: m.Venue) -> int:
        """The venue's newest form version (0: the built-in form)."""
        return venue.review_form_version

    def version_to_write(self, venue: m.Venue, review: m.Review | None) -> int:
        """The form version a review is (re)written with: a submitted review keeps its own;
        a new review or a draft takes the current one."""
        if review is not None and review.submitted:
            return review.form_version
        return self.current_form_version(venue)

    def form_to_write(self, venue: m.Venue, review: m.Review | None) -> dict:
        """What the review's writer fills in: the form version and its added fields."""
        version = self.version_to_write(venue, review)
        return {"version": version, "fields": [
            f.as_dict() | {"audience_label": AUDIENCE_LABELS[f.audience]}
            for f in self.form_fields(venue, version)]}

    def form_fields(self, venue: m.Venue, version: int) -> tuple[FormField, ...]:
        """The added fields of one version of the venue's form."""
        if version == DEFAULT_VERSION:
            return ()

        def load() -> tuple[FormField, ...] | None:
            text = self.db.scalar(select(m.ReviewFormVersion.fields).where(
                m.ReviewFormVersion.venue_id == venue.id,
                m.ReviewFormVersion.version == version))
            return None if text is None else from_json(text)

        # a version never changes once written: cached like an account fact
        fields = self.ctx.cached_fact(("review_form", venue.id, int(version)), load)
        if fields is None:
            raise NotFound(f"this venue has no review form version {version}")
        return fields

    def _versions(self, venue: m.Venue) -> list[dict]:
        used = dict(self.db.execute(select(m.Review.form_version, func.count()).join(
            m.Submission, m.Submission.id == m.Review.submission_id).where(
            m.Submission.venue_id == venue.id).group_by(m.Review.form_version)).all())
        rows = self.db.execute(select(m.ReviewFormVersion.version, m.ReviewFormVersion.fields,
                                      m.ReviewFormVersion.created_at).where(
            m.ReviewFormVersion.venue_id == venue.id).order_by(
            m.ReviewFormVersion.version)).all()
        out = [{"version": DEFAULT_VERSION, "added_fields": 0, "created_at": None,
                "reviews": used.get(DEFAULT_VERSION, 0)}]
        return out + [{"version": v, "added_fields": len(from_json(text)),
                       "created_at": at.isoformat(timespec="seconds"),
                       "reviews": used.get(v, 0)} for v, text, at in rows]


def form_view(added: tuple[FormField, ...]) -> list[dict]:
    """Every field of a form version, fixed ones first, as pages and the API show them."""
    return [f.as_dict() | {"core": f in CORE_FIELDS,
                           "audience_label": AUDIENCE_LABELS[f.audience]}
            for f in CORE_FIELDS + added]
