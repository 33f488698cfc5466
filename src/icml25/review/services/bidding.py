"""Bidding: single bids, the bidding console (a table of the papers one may bid on, with
affinity to one's past papers, search, sort and a not-yet-bid filter) and saving many bids."""

from __future__ import annotations

import numpy as np
from sqlalchemy import select

from icml25.review import models as m
from icml25.review.authority import Action, authorize, facts_for
from icml25.review.errors import NotFound, ServiceError
from icml25.review.services.base import Service, clean_int
from icml25.review.visibility import Bundle, can
from icml25.review.workflow import Phase

# how the bidding console may be sorted (validated once, in bidding_table)
BID_SORTS = {
    "affinity": lambda r: (-r["affinity"], r["number"]),
    "number": lambda r: r["number"],
    "title": lambda r: (r["title"].lower(), r["number"]),
}


class Bidding(Service):
    """Bids and the bidding console."""

    def bid(self, sub_id: int, value: int) -> None:
        """Record a bid (-2 no .. 2 eager) during bidding."""
        b = self.bundle(sub_id)
        authorize(Action.BID, facts_for(self.viewer(b.venue), b))
        value = clean_int(value, "bid", -2, 2)
        row = self.db.scalar(select(m.Bid).where(m.Bid.submission_id == sub_id,
                                                 m.Bid.user_id == self.actor.id))
        if row:
            row.value = value
        else:
            self.db.add(m.Bid(submission_id=sub_id, user_id=self.actor.id, value=value))
        self._audit(b.venue.id, "bid", f"submission:{sub_id}", value=value)
        self._commit()

    def bidding_table(self, venue: m.Venue, query: str = "", only_unbid: bool = False,
                      sort: str = "affinity") -> dict:
        """The bidding console: the papers the actor may bid on (number, title, keywords,
        abstract, their bid, the TF-IDF affinity to their past papers: 0 when they listed
        none), filtered by ``query`` (every word in title, keywords or abstract) and
        ``only_unbid``, sorted by ``sort`` (a key of :data:`BID_SORTS`); with counts."""
        if sort not in BID_SORTS:
            raise ServiceError(f"sort is one of: {', '.join(BID_SORTS)}")
        user = self._require_login()
        viewer = self.viewer(venue)
        biddable = [b for b in self.visible_candidates(venue) if can(viewer, Action.BID, b)]
        n_unbid = sum(1 for b in biddable if user.id not in b.bids)
        words = query.lower().split()
        rows = [b for b in biddable if (not only_unbid or user.id not in b.bids)
                and all(w in f"{b.submission.title} {b.submission.keywords} "
                             f"{b.submission.abstract}".lower() for w in words)]
        affinity = self._my_affinity(user.id, rows)
        out = [{"id": b.submission.id, "number": b.submission.number,
                "title": b.submission.title, "keywords": b.submission.keywords,
                "abstract": b.submission.abstract, "my_bid": b.bids.get(user.id),
                "affinity": round(float(a), 3)} for b, a in zip(rows, affinity, strict=True)]
        return {"rows": sorted(out, key=BID_SORTS[sort]), "sort": sort,
                "n_biddable": len(biddable), "n_unbid": n_unbid}

    def _my_affinity(self, user_id: int, rows: list[Bundle]) -> np.ndarray:
        """TF-IDF similarity of each submission to the user's past papers (0 without any)."""
        from icml25.review.affinity import tfidf_profiles

        papers = [f"{r.title}. {r.abstract}" for r in self.db.scalars(
            select(m.ReviewerPaper).where(m.ReviewerPaper.user_id == user_id))]
        if not rows or not papers:
            return np.zeros(len(rows))
        texts = [f"{b.submission.title}. {b.submission.abstract} {b.submission.keywords}"
                 for b in rows]
        x_sub, x_rev = tfidf_profiles(texts, [papers])
        return np.asarray((x_sub @ x_rev.T).todense()).ravel()

    def has_reviewer_papers(self) -> bool:
        """Whether the actor listed past papers (they feed the affinity)."""
        user = self._require_login()
        return self.db.scalar(select(m.ReviewerPaper.id).where(
            m.ReviewerPaper.user_id == user.id).limit(1)) is not None

    def save_bids(self, venue: m.Venue, bids: dict[int, int]) -> int:
        """Record several bids at once (one transaction); returns how many changed."""
        user = self._require_login()
        viewer = self.viewer(venue)
        authorize(Action.BID, facts_for(viewer, None, Phase(venue.phase)))  # may bid here now
        current = {r.submission_id: r for r in self.db.scalars(select(m.Bid).where(
            m.Bid.user_id == user.id))}
        changed = 0
        found = self.bundles(venue, bids)
        unknown = sorted(set(bids) - {b.submission.id for b in found})
        if unknown:
            raise NotFound(f"no submission with id {unknown[0]} in this venue")
        for b in found:
            authorize(Action.BID, facts_for(viewer, b))
            value = clean_int(bids[b.submission.id], "bid", -2, 2)
            row = current.get(b.submission.id)
            if row is not None and row.value == value:
                continue
            if row is None:
                self.db.add(m.Bid(submission_id=b.submission.id, user_id=user.id, value=value))
            else:
                row.value = value
            self._audit(venue.id, "bid", f"submission:{b.submission.id}", value=value)
            changed += 1
        self._commit()
        return changed
