"""Reviewer rewards (pure): a documented review-quality score and badges at venue close.

Review-quality score of a reviewer in one venue, on a 0-100 scale::

    Q = 100 * (w_A * A + w_C * C + w_T * T) / (sum of the weights of the parts present)

    A = mean author rating of the reviewer's reviews, (comprehension + constructiveness) / 2,
        rescaled from 1..5 to 0..1                                   (w_A = 0.5)
    C = mean area-chair rating of the reviewer's reviews, 1..5 rescaled to 0..1  (w_C = 0.3)
    T = share of the reviewer's reviews submitted by the reviewing deadline      (w_T = 0.2)

A part with no data (e.g. no AC rated any review) is left out and the weights of the others are
renormalised, so a missing rating neither helps nor hurts. Authors rate a review before they see
its score (two-stage release), which is what makes ``A`` usable for rewards.

Badges at venue close: ``top-10`` and ``top-30`` go to reviewers whose Q is within the top 10% /
30% of the venue's reviewers (by rank: the best ceil(10% x n) reviewers, ties at the cut
included; a top-10 reviewer holds both), counting only reviewers with at least
``min_reviews`` submitted reviews AND enough author ratings for their score to be shown to
them at all (the authority's ``ratings_disclosable``: 3; a public rank must not reveal what the
reviewer's own page withholds to protect the raters); ``on-time`` goes to every reviewer whose
reviews were all submitted by the deadline.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

WEIGHTS = {"author": 0.5, "ac": 0.3, "timeliness": 0.2}
TIERS = (("top-10", 0.10), ("top-30", 0.30))

FORMULA = ("Q = 100 x (0.5 A + 0.3 C + 0.2 T) / (sum of weights present); "
           "A = mean author rating ((comprehension + constructiveness)/2, 1-5 -> 0-1), "
           "C = mean area-chair rating (1-5 -> 0-1), T = share of reviews submitted on time. "
           "Parts without data are left out.")


@dataclass(frozen=True)
class ReviewFacts:
    """What counts about one submitted review."""

    reviewer: int
    author_rating: float | None = None  # 1..5 (mean of the author's two scales)
    ac_rating: float | None = None  # 1..5
    on_time: bool = True


@dataclass
class QualityScore:
    """A reviewer's score and its parts (all shown to the reviewer)."""

    reviewer: int
    n_reviews: int
    author: float | None
    ac: float | None
    timeliness: float
    quality: float
    formula: str = field(default=FORMULA)
    n_author_ratings: int = 0  # reviews with an author rating (what disclosure depends on)

    def as_dict(self) -> dict:
        return {"n_reviews": self.n_reviews, "n_author_ratings": self.n_author_ratings,
                "author_part": _r(self.author),
                "ac_part": _r(self.ac), "timeliness_part": _r(self.timeliness),
                "quality": _r(self.quality), "weights": WEIGHTS, "formula": self.formula}


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def _unit(rating: float) -> float:
    """1..5 -> 0..1."""
    return (rating - 1.0) / 4.0


def quality_score(reviews: Iterable[ReviewFacts]) -> QualityScore:
    """The quality score Q (0-100) of one reviewer from their reviews.

    ``Q = 100 (0.5 A + 0.3 C + 0.2 T) / (sum of the weights present)``, with A the mean author
    rating and C the mean area-chair rating (1-5 rescaled to 0-1) and T the share of reviews
    submitted on time; a part without data is left out.

    Parameters
    ----------
    reviews : iterable of ReviewFacts
        The reviewer's submitted reviews (``icml25.review.rewards.ReviewFacts``).

    Returns
    -------
    QualityScore
        ``quality`` and its parts ``author``, ``ac``, ``timeliness``, with ``n_reviews`` and
        ``n_author_ratings``.

    Raises
    ------
    ValueError
        For no reviews, or reviews of more than one reviewer.

    Examples
    --------
    >>> from icml25.review import quality_score
    >>> from icml25.review.rewards import ReviewFacts
    >>> q = quality_score([ReviewFacts(7, author_rating=5, ac_rating=3),
    ...                    ReviewFacts(7, author_rating=3, on_time=False)])
    >>> q.author, q.ac, q.timeliness, q.quality
    (0.75, 0.5, 0.5, 62.5)
    """
    rows = list(reviews)
    if not rows:
        raise ValueError("a quality score needs at least one review")
    who = {r.reviewer for r in rows}
    if len(who) != 1:
        raise ValueError("reviews of one reviewer only")
    a = [_unit(r.author_rating) for r in rows if r.author_rating is not None]
    c = [_unit(r.ac_rating) for r in rows if r.ac_rating is not None]
    t = sum(r.on_time for r in rows) / len(rows)
    parts = {"author": sum(a) / len(a) if a else None, "ac": sum(c) / len(c) if c else None,
             "timeliness": t}
    present = {k: v for k, v in parts.items() if v is not None}
    wsum = sum(WEIGHTS[k] for k in present)
    q = 100.0 * sum(WEIGHTS[k] * v for k, v in present.items()) / wsum
    return QualityScore(who.pop(), len(rows), parts["author"], parts["ac"], t, q,
                        n_author_ratings=len(a))


def venue_scores(reviews: Iterable[ReviewFacts]) -> dict[int, QualityScore]:
    """Quality score of every reviewer with at least one submitted review."""
    by: dict[int, list[ReviewFacts]] = {}
    for r in reviews:
        by.setdefault(r.reviewer, []).append(r)
    return {u: quality_score(rs) for u, rs in by.items()}


def award_badges(scores: dict[int, QualityScore], min_reviews: int = 1) -> dict[int, list[str]]:
    """Badges per reviewer at venue close: ``top-10``, ``top-30`` and ``on-time``.

    The top tiers go by Q among reviewers with at least ``min_reviews`` reviews whose score may
    be disclosed (enough author ratings, 3); ties at the cut share the badge; a top-10 reviewer
    holds both. ``on-time`` goes to every reviewer whose reviews were all on time.

    Parameters
    ----------
    scores : dict of int to QualityScore
        Reviewer id -> score (``icml25.review.rewards.venue_scores``).
    min_reviews : int, default=1
        Fewest submitted reviews for a top tier.

    Returns
    -------
    dict of int to list of str
        Reviewer id -> badges (possibly none).

    Examples
    --------
    >>> from icml25.review import award_badges
    >>> from icml25.review.rewards import ReviewFacts, venue_scores
    >>> reviews = [ReviewFacts(u, author_rating=r) for u, r in
    ...            [(1, 5), (1, 5), (1, 5), (2, 3), (2, 3), (2, 3), (3, 1), (3, 1), (3, 1)]]
    >>> award_badges(venue_scores(reviews))
    {1: ['top-10', 'top-30', 'on-time'], 2: ['on-time'], 3: ['on-time']}
    """
    from icml25.review.authority import ratings_disclosable

    eligible = sorted((s for s in scores.values() if s.n_reviews >= min_reviews
                       and ratings_disclosable(s.n_author_ratings)), key=lambda s: -s.quality)
    out: dict[int, list[str]] = {u: [] for u in scores}
    n = len(eligible)
    for tier, share in TIERS:
        if n == 0:
            break
        cut = eligible[max(math.ceil(share * n), 1) - 1].quality
        for s in eligible:
            if s.quality >= cut - 1e-9:
                out[s.reviewer].append(tier)
    for u, s in scores.items():
        if s.timeliness == 1.0:
            out[u].append("on-time")
    return out


IMPACT_FORMULA = ("I = mean over the papers a reviewer reviewed of log(1 + citations), divided "
                  "by the same mean over all the venue's papers with imported counts "
                  "(1.0 = average; papers without a count are skipped).")


def impact_scores(reviewed: dict[int, list[int]], citations: dict[int, int]) -> dict[int, dict]:
    """Reviewer impact: credit for the later impact of the papers one reviewed.

    ``I`` = the mean of ``log(1 + citations)`` over the papers a reviewer reviewed, divided by
    the same mean over all papers with a count (1.0 = average; papers without one are skipped).

    Parameters
    ----------
    reviewed : dict of int to list of int
        Reviewer id -> the submission ids they reviewed.
    citations : dict of int to int
        Submission id -> citation count imported by a chair.

    Returns
    -------
    dict of int to dict
        Reviewer id -> ``{"impact", "n_papers", "formula"}``, for reviewers with at least one
        counted paper.

    Raises
    ------
    ValueError
        For a negative citation count.

    Examples
    --------
    >>> from icml25.review import impact_scores
    >>> out = impact_scores({1: [10, 11], 2: [12]}, {10: 9, 11: 0, 12: 3})
    >>> out[1]["impact"], out[2]["impact"], out[2]["n_papers"]
    (0.9363, 1.1274, 1)
    """
    if any(c < 0 for c in citations.values()):
        raise ValueError("citation counts must be non-negative")
    if not citations:
        return {}
    logc = {p: math.log1p(c) for p, c in citations.items()}
    venue_mean = sum(logc.values()) / len(logc)
    out = {}
    for r, papers in reviewed.items():
        known = [logc[p] for p in papers if p in logc]
        if not known:
            continue
        mean = sum(known) / len(known)
        out[r] = {"impact": round(mean / venue_mean, 4) if venue_mean > 0 else 0.0,
                  "n_papers": len(known), "formula": IMPACT_FORMULA}
    return out
