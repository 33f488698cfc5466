"""Reviewing and feedback: reviews, author ratings of reviews (the two-stage release),
rebuttals, discussion, meta-reviews and decisions."""

from __future__ import annotations

import json
from collections.abc import Mapping

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from icml25.review import models as m
from icml25.review.authority import Action, authorize, facts_for
from icml25.review.decisions import types_of
from icml25.review.errors import ServiceError
from icml25.review.forms import FormError, clean_answers
from icml25.review.scales import CONFIDENCE, SCORE
from icml25.review.services.base import Service, clean_int, clean_text, utcnow
from icml25.review.visibility import feedback_summary
from icml25.review.workflow import Phase, Role


class Reviewing(Service):
    """Reviewing and feedback."""

    def save_review(self, sub_id: int, *, summary: str, strengths: str, questions: str,
                    weaknesses: str, score: int | str | None, confidence: int | str | None,
                    submit: bool = True, answers: Mapping[str, object] | None = None,
                    ) -> m.Review:
        """Write (draft or submit) both stages of one's review during the reviewing phase.
        ``answers``: to the added fields of the venue's review form -- the current version,
        or for a review already submitted the version it was written with (it keeps it)."""
        b = self.read_bundle(sub_id)  # read only: the review to change is loaded below
        authorize(Action.WRITE_REVIEW, facts_for(self.viewer(b.venue), b))
        own = next((r for r in b.reviews if r.reviewer_id == self.actor.id), None)
        r = self.db.get(m.Review, own.id) if own is not None else None
        if r is None:
            r = m.Review(submission_id=sub_id, reviewer_id=self.actor.id)
            self.db.add(r)
        req = submit
        r.summary = clean_text(summary, "summary", required=req)
        r.strengths = clean_text(strengths, "strengths", required=req)
        r.questions = clean_text(questions, "questions", required=req)
        r.weaknesses = clean_text(weaknesses, "weaknesses", required=req)
        r.score = (clean_int(score, "score", SCORE.low, SCORE.high)
                   if (req or score not in (None, "")) else None)
        r.confidence = (clean_int(confidence, "confidence", CONFIDENCE.low, CONFIDENCE.high)
                        if (req or confidence not in (None, "")) else None)
        version = self.svc.forms.version_to_write(b.venue, own)
        try:
            cleaned = clean_answers(self.svc.forms.form_fields(b.venue, version), answers or {},
                                    submit=submit)
        except FormError as exc:
            raise ServiceError(str(exc)) from None
        r.form_version, r.answers = version, json.dumps(cleaned)
        first_submit = submit and not r.submitted
        if first_submit:
            r.submitted_at = utcnow()
        r.submitted = r.submitted or submit
        r.updated_at = utcnow()
        try:
            self.db.flush()
        except IntegrityError:
            # a concurrent first save of this review won the insert: update that row instead
            self.db.rollback()
            return self.save_review(sub_id, summary=summary, strengths=strengths,
                                    questions=questions, weaknesses=weaknesses, score=score,
                                    confidence=confidence, submit=submit, answers=answers)
        self._audit(b.venue.id, "review.submit" if submit else "review.draft",
                    f"review:{r.id}", of_submission=sub_id)
        if first_submit:  # those who may read it now: the AC, reviewers done with theirs
            done = {x.reviewer_id for x in b.reviews if x.submitted}
            self._notify(b.venue, sub_id, {a.user_id for a in b.assignments
                                           if a.role == Role.AC or a.user_id in done},
                         f"A new review of submission #{b.submission.number}",
                         f"A review of submission #{b.submission.number} was submitted.")
        self._commit()
        return r

    def give_feedback(self, review_id: int, *, comprehension: int | str,
                      constructiveness: int | str, llm_suspected: bool = False,
                      llm_comment: str = "") -> m.Feedback:
        """An author rates one review (stage 1 only seen so far). Ratings are final once stage 2
        is released for the submission."""
        r, b = self.read_review_bundle(review_id)  # read only: the rating is loaded below
        authorize(Action.GIVE_FEEDBACK, facts_for(self.viewer(b.venue), b, review=r))
        fb = (self.db.scalar(select(m.Feedback).where(m.Feedback.review_id == r.id))
              if r.id in b.feedback else None)
        if fb is None:
            fb = m.Feedback(review_id=r.id, author_id=self.actor.id, comprehension=1,
                            constructiveness=1)
            self.db.add(fb)
        fb.comprehension = clean_int(comprehension, "comprehension", 1, 5)
        fb.constructiveness = clean_int(constructiveness, "constructiveness", 1, 5)
        fb.llm_suspected = bool(llm_suspected)
        fb.llm_comment = clean_text(llm_comment, "comment", required=False)
        try:
            self.db.flush()
        except IntegrityError:
            # a concurrent first rating of this review won the insert: update that row instead
            self.db.rollback()
            return self.give_feedback(review_id, comprehension=comprehension,
                                      constructiveness=constructiveness,
                                      llm_suspected=llm_suspected, llm_comment=llm_comment)
        self._audit(b.venue.id, "feedback", f"review:{r.id}", of_submission=b.submission.id)
        self._commit()
        return fb

    def write_rebuttal(self, review_id: int, text: str) -> m.Rebuttal:
        """The authors' reply to one review during the rebuttal phase."""
        r, b = self._review_bundle(review_id)
        authorize(Action.WRITE_REBUTTAL, facts_for(self.viewer(b.venue), b, review=r))
        reb = b.rebuttals.get(r.id)
        if reb is None:
            reb = m.Rebuttal(review_id=r.id, author_id=self.actor.id, text="")
            self.db.add(reb)
        text = clean_text(text, "rebuttal")
        if len(text) > b.venue.max_rebuttal_chars:
            raise ServiceError(f"the response has {len(text)} characters; this venue allows "
                               f"at most {b.venue.max_rebuttal_chars} per review")
        reb.text = text
        self._audit(b.venue.id, "rebuttal", f"review:{r.id}")
        self._notify(b.venue, b.submission.id, {r.reviewer_id} | {
            a.user_id for a in b.assignments if a.role == Role.AC},
            f"The authors replied to a review of submission #{b.submission.number}",
            f"The authors of submission #{b.submission.number} replied to a review.")
        self._commit()
        return reb

    def post_discussion(self, sub_id: int, text: str) -> m.DiscussionPost:
        """A pseudonymous discussion post (reviewers, area chair, chairs)."""
        b = self.bundle(sub_id)
        authorize(Action.POST_DISCUSSION, facts_for(self.viewer(b.venue), b))
        p = m.DiscussionPost(submission_id=sub_id, user_id=self.actor.id,
                             text=clean_text(text, "post"))
        self.db.add(p)
        self.db.flush()
        self._audit(b.venue.id, "discussion.post", f"submission:{sub_id}")
        done = {x.reviewer_id for x in b.reviews if x.submitted}
        self._notify(b.venue, sub_id, {a.user_id for a in b.assignments if a.role == Role.AC
                                       or a.user_id in done} | {x.user_id for x in b.posts},
                     f"A new discussion post on submission #{b.submission.number}",
                     f"Someone posted in the discussion of submission #{b.submission.number}.")
        self._commit()
        return p

    def write_metareview(self, sub_id: int, text: str, recommendation: str) -> m.MetaReview:
        """The area chair's meta-review."""
        b = self.bundle(sub_id)
        authorize(Action.WRITE_METAREVIEW, facts_for(self.viewer(b.venue), b))
        if recommendation not in ("accept", "reject"):
            raise ServiceError("recommendation is accept or reject")
        mr = b.meta_review or m.MetaReview(submission_id=sub_id, ac_id=self.actor.id, text="",
                                          recommendation=recommendation)
        mr.text, mr.recommendation = clean_text(text, "meta-review"), recommendation
        self.db.add(mr)
        self._audit(b.venue.id, "metareview", f"submission:{sub_id}")
        self._commit()
        return mr

    def decide(self, sub_id: int, outcome: str) -> m.Decision:
        """Record a decision (non-conflicted program chairs)."""
        b = self.bundle(sub_id)
        authorize(Action.DECIDE, facts_for(self.viewer(b.venue), b))
        keys = [t.key for t in types_of(b.venue.decision_types)]
        if outcome not in keys:
            raise ServiceError(f"the decision is one of: {', '.join(keys)}")
        d = b.decision or m.Decision(submission_id=sub_id, decided_by=self.actor.id,
                                     outcome=outcome)
        d.outcome = outcome
        self.db.add(d)
        self._audit(b.venue.id, "decision", f"submission:{sub_id}", outcome=outcome)
        self._commit()
        return d

    def my_feedback(self, venue: m.Venue) -> dict:
        """The actor's aggregate author feedback (only when safe to show)."""
        user = self._require_login()
        rows = self.db.scalars(select(m.Feedback).join(
            m.Review, m.Review.id == m.Feedback.review_id).join(
            m.Submission, m.Submission.id == m.Review.submission_id).where(
            m.Submission.venue_id == venue.id, m.Review.reviewer_id == user.id)).all()
        return feedback_summary(self.viewer(venue), Phase(venue.phase), rows)

    def submission_of_review(self, review_id: int) -> int:
        """The id of the submission a review belongs to (for those who may see it)."""
        r, b = self.read_review_bundle(review_id)
        authorize(Action.VIEW_SUBMISSION, facts_for(self.viewer(b.venue), b, review=r))
        return b.submission.id
