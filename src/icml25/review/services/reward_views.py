"""What a reviewer sees of their rewards: per venue they review for, their quality score and
its parts (or why it is withheld), their badges, each with its signed credential to download;
and the page anyone may use to verify a pasted credential (``Rewards.verify_credential``)."""

from __future__ import annotations

import json

from sqlalchemy import select

from icml25.review import models as m
from icml25.review.authority import Action, authorize
from icml25.review.errors import NotFound
from icml25.review.services.base import Service
from icml25.review.workflow import PHASE_LABELS, Phase, Role

# what each badge tier means, in words (the tiers are rewards.TIERS plus on-time)
BADGE_LABELS = {"top-10": "Top 10% reviewer", "top-30": "Top 30% reviewer",
                "on-time": "Every review on time"}


class RewardViews(Service):
    """The reviewer's rewards page and credential downloads."""

    def my_rewards(self) -> dict:
        """Per venue where the actor is a reviewer: quality score (``Rewards.my_quality``,
        which asks the authority) and badges; plus the public-profile setting."""
        user = self._require_login()
        authorize(Action.USE_ACCOUNT, self.ctx.account_facts())
        badges: dict[int, list[dict]] = {}
        for b in self.db.scalars(select(m.Badge).where(m.Badge.user_id == user.id)
                                 .order_by(m.Badge.id)):
            badges.setdefault(b.venue_id, []).append(
                {"id": b.id, "tier": b.tier, "label": BADGE_LABELS.get(b.tier, b.tier),
                 "quality": b.quality, "issued_at": b.issued_at.isoformat(timespec="seconds")})
        venues = []
        for v in self.db.scalars(select(m.Venue).order_by(m.Venue.id)):
            if Role.REVIEWER not in self.roles(v.id) and v.id not in badges:
                continue
            venues.append({"slug": v.slug, "name": v.name,
                           "phase_label": PHASE_LABELS[Phase(v.phase)],
                           "quality": self.svc.rewards.my_quality(v),
                           "badges": badges.get(v.id, [])})
        return {"reviewer_id": user.id, "profile_public": bool(user.profile_public),
                "venues": venues, "n_badges": sum(len(b) for b in badges.values())}

    def badge_credential(self, badge_id: int) -> tuple[str, str]:
        """(file name, JSON text) of one of the actor's own signed credentials; another
        person's badge is "no such badge" like an unknown id."""
        user = self._require_login()
        authorize(Action.USE_ACCOUNT, self.ctx.account_facts())
        row = self.db.scalar(select(m.Badge).where(m.Badge.id == int(badge_id),
                                                   m.Badge.user_id == user.id))
        if row is None:
            raise NotFound("no such badge")
        venue = self.db.get(m.Venue, row.venue_id)
        doc = json.dumps(json.loads(row.credential), indent=2, sort_keys=True)
        return f"{venue.slug}-{row.tier}-credential.json", doc
