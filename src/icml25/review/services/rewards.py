"""Rewards and credentials: area-chair ratings, quality scores, badges at venue close, signed
credentials, public profiles and impact."""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import datetime

from sqlalchemy import delete, select

from icml25.review import models as m
from icml25.review.authority import Action, authorize, facts_for
from icml25.review.errors import NotFound, ServiceError
from icml25.review.services.base import Service, aware, clean_int, timeline_of, utcnow
from icml25.review.workflow import Phase, deadline_end


class Rewards(Service):
    """Rewards and credentials."""

    def rate_review(self, review_id: int, rating: int | str) -> m.ReviewRating:
        """The area chair's 1-5 rating of a review (feeds the reviewer's quality score)."""
        r, b = self._review_bundle(review_id)
        authorize(Action.RATE_REVIEW, facts_for(self.viewer(b.venue), b, review=r))
        row = self.db.scalar(select(m.ReviewRating).where(m.ReviewRating.review_id == r.id))
        if row is None:
            row = m.ReviewRating(review_id=r.id, rater_id=self.actor.id, rating=1)
            self.db.add(row)
        row.rating, row.rater_id = clean_int(rating, "rating", 1, 5), self.actor.id
        self._audit(b.venue.id, "review.rate", f"review:{r.id}")
        self._commit()
        return row

    def reviewing_deadline(self, venue: m.Venue) -> datetime | None:
        """End of the reviewing deadline day (timeline), else when the venue left reviewing."""
        day = timeline_of(venue).get(Phase.REVIEWING.value)
        if day:
            return deadline_end(day)
        for ev in self.db.scalars(select(m.AuditEvent).where(
                m.AuditEvent.venue_id == venue.id, m.AuditEvent.action == "phase.advance")
                .order_by(m.AuditEvent.id)):
            if json.loads(ev.detail or "{}").get("to") == Phase.FEEDBACK.value:
                return aware(ev.at)
        return None

    def _review_facts(self, venue: m.Venue):  # noqa: ANN202
        from icml25.review.rewards import ReviewFacts

        deadline = self.reviewing_deadline(venue)
        rows = self.db.execute(select(m.Review, m.Feedback, m.ReviewRating).join(
            m.Submission, m.Submission.id == m.Review.submission_id).outerjoin(
            m.Feedback, m.Feedback.review_id == m.Review.id).outerjoin(
            m.ReviewRating, m.ReviewRating.review_id == m.Review.id).where(
            m.Submission.venue_id == venue.id, m.Review.submitted.is_(True))).all()
        out = []
        for r, fb, rr in rows:
            when = aware(r.submitted_at or r.updated_at)
            out.append(ReviewFacts(
                reviewer=r.reviewer_id,
                author_rating=(fb.comprehension + fb.constructiveness) / 2 if fb else None,
                ac_rating=float(rr.rating) if rr else None,
                on_time=deadline is None or when <= deadline))
        return out

    def quality_scores(self, venue: m.Venue) -> list[dict]:
        """Every reviewer's quality score and its parts (chairs only)."""
        from icml25.review.rewards import venue_scores

        authorize(Action.VIEW_ADMIN, facts_for(self.viewer(venue), None, Phase(venue.phase)))
        scores = venue_scores(self._review_facts(venue))
        names = {u.id: u.name for u in self.db.scalars(select(m.User).where(
            m.User.id.in_(list(scores))))} if scores else {}
        return sorted(({"user_id": u, "name": names.get(u, ""), **s.as_dict()}
                       for u, s in scores.items()), key=lambda d: -d["quality"])

    def my_quality(self, venue: m.Venue) -> dict:
        """The actor's own quality score with the formula (see visibility.quality_view)."""
        from icml25.review.rewards import venue_scores
        from icml25.review.visibility import quality_view

        user = self._require_login()
        facts = [f for f in self._review_facts(venue) if f.reviewer == user.id]
        score = venue_scores(facts).get(user.id)
        n_author = sum(f.author_rating is not None for f in facts)
        return quality_view(self.viewer(venue), Phase(venue.phase), score, n_author)

    def _venue_key(self, venue: m.Venue) -> m.VenueKey:
        from icml25.review.credentials import new_keypair

        key = self.db.scalar(select(m.VenueKey).where(m.VenueKey.venue_id == venue.id))
        if key is None:
            priv, pub = new_keypair()
            key = m.VenueKey(venue_id=venue.id, public_key=pub, private_key=priv)
            self.db.add(key)
            self.db.flush()
        return key

    def venue_public_key(self, venue: m.Venue) -> dict:
        """The venue's published verification key (created on first use)."""
        from icml25.review.credentials import key_id

        key = self._venue_key(venue)
        self.db.commit()
        return {"venue": venue.slug, "algorithm": "Ed25519", "public_key": key.public_key,
                "key_id": key_id(key.public_key)}

    def close_venue(self, venue: m.Venue, min_reviews: int = 1) -> dict:
        """Award badges at venue close (chairs, notification phase) and sign a credential for
        each; running it again adds nothing new. Returns {tier: count}."""
        from icml25.review.credentials import sign
        from icml25.review.rewards import FORMULA, award_badges, venue_scores

        authorize(Action.CLOSE_VENUE, facts_for(self.viewer(venue), None, Phase(venue.phase)))
        scores = venue_scores(self._review_facts(venue))
        badges = award_badges(scores, min_reviews=min_reviews)
        key = self._venue_key(venue)
        have = {(b.user_id, b.tier) for b in self.db.scalars(select(m.Badge).where(
            m.Badge.venue_id == venue.id))}
        users = {u.id: u for u in self.db.scalars(select(m.User).where(
            m.User.id.in_(list(badges))))} if badges else {}
        counts: dict[str, int] = defaultdict(int)
        issued = utcnow().isoformat(timespec="seconds")
        for uid, tiers in badges.items():
            for tier in tiers:
                counts[tier] += 1
                if (uid, tier) in have:
                    continue
                q = round(scores[uid].quality, 2)
                claims = {"type": "ReviewerBadge", "badge": tier, "quality": q,
                          "formula": FORMULA, "issued_at": issued,
                          "venue": {"slug": venue.slug, "name": venue.name},
                          "reviewer": {"id": uid, "name": users[uid].name}}
                self.db.add(m.Badge(venue_id=venue.id, user_id=uid, tier=tier, quality=q,
                                    credential=json.dumps(sign(claims, key.private_key,
                                                               key.public_key))))
        self._audit(venue.id, "venue.close", f"venue:{venue.id}", **counts)
        self._commit()
        return dict(counts)

    def my_badges(self) -> list[dict]:
        """The actor's badges with their signed credentials (to export)."""
        user = self._require_login()
        rows = self.db.scalars(select(m.Badge).where(m.Badge.user_id == user.id)
                               .order_by(m.Badge.id)).all()
        return [json.loads(b.credential) for b in rows]

    def reviewer_profile(self, user_id: int) -> dict:
        """Public reviewer profile: name and badges across venues, for reviewers who opted in
        or earned a badge; anyone else (authors, chairs, unknown ids) is "no such reviewer"."""
        from icml25.review.visibility import profile_view

        u = self.db.get(m.User, int(user_id))
        rows = self.db.execute(select(m.Badge, m.Venue).join(
            m.Venue, m.Venue.id == m.Badge.venue_id).where(m.Badge.user_id == u.id)
            .order_by(m.Badge.id)).all() if u is not None else []
        view = profile_view(u, rows)
        if view is None:
            raise NotFound("no such reviewer")
        return view

    def import_citations(self, venue: m.Venue, csv_text: str) -> int:
        """Import citation counts (chairs): CSV with columns ``number,citations`` (submission
        number in this venue); replaces earlier counts. Returns the number of rows."""
        import csv
        import io

        authorize(Action.VIEW_ADMIN, facts_for(self.viewer(venue), None, Phase(venue.phase)))
        by_number = {s.number: s.id for s in self.db.scalars(select(m.Submission).where(
            m.Submission.venue_id == venue.id))}
        rows = {}
        reader = csv.DictReader(io.StringIO(csv_text))
        if not reader.fieldnames or {"number", "citations"} - set(reader.fieldnames):
            raise ServiceError("the CSV needs the columns number,citations")
        for line, row in enumerate(reader, start=2):
            try:
                number, count = int(row["number"]), int(row["citations"])
            except (TypeError, ValueError):
                raise ServiceError(f"line {line}: number and citations must be whole "
                                   "numbers") from None
            if number not in by_number or count < 0:
                raise ServiceError(f"line {line}: no submission #{number} or a negative count")
            rows[by_number[number]] = count
        self.db.execute(delete(m.PaperCitation).where(
            m.PaperCitation.submission_id.in_(list(by_number.values()))))
        for sid, count in rows.items():
            self.db.add(m.PaperCitation(submission_id=sid, count=count))
        self._audit(venue.id, "citations.import", f"venue:{venue.id}", rows=len(rows))
        self._commit()
        return len(rows)

    def reviewer_impact(self, venue: m.Venue) -> list[dict]:
        """Reviewer impact scores from imported citations (chairs only; formula included)."""
        from icml25.review.rewards import impact_scores

        authorize(Action.VIEW_ADMIN, facts_for(self.viewer(venue), None, Phase(venue.phase)))
        cites = {c.submission_id: c.count for c in self.db.scalars(select(m.PaperCitation).join(
            m.Submission, m.Submission.id == m.PaperCitation.submission_id).where(
            m.Submission.venue_id == venue.id))}
        reviewed: dict[int, list[int]] = defaultdict(list)
        for r in self.db.scalars(select(m.Review).join(
                m.Submission, m.Submission.id == m.Review.submission_id).where(
                m.Submission.venue_id == venue.id, m.Review.submitted.is_(True))):
            reviewed[r.reviewer_id].append(r.submission_id)
        scores = impact_scores(dict(reviewed), cites)
        return sorted(({"user_id": u, **v} for u, v in scores.items()),
                      key=lambda d: -d["impact"])

    def verify_credential(self, doc: dict | str) -> dict:
        """Verify a badge credential against its venue's published key."""
        from icml25.review.credentials import CredentialError, verify

        try:
            data = json.loads(doc) if isinstance(doc, str) else doc
            slug = data["credential"]["venue"]["slug"]
        except (ValueError, KeyError, TypeError):
            return {"valid": False, "reason": "not a badge credential"}
        key = self.db.scalar(select(m.VenueKey).join(
            m.Venue, m.Venue.id == m.VenueKey.venue_id).where(m.Venue.slug == str(slug)))
        if key is None:
            return {"valid": False, "reason": f"unknown venue {slug!r}"}
        try:
            ok = verify(data, key.public_key)
        except CredentialError as exc:
            return {"valid": False, "reason": str(exc)}
        return {"valid": True, "venue": slug, "badge": ok.claims.get("badge"),
                "reviewer": ok.claims.get("reviewer"), "key_id": ok.key_id}
