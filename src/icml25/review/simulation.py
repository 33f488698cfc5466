"""A simulated conference (pure numpy): two-stage vs one-stage author feedback.

Papers have a latent merit; reviewers are of four kinds with a latent review quality, a score
bias and a score noise; authors rate each review 1-5 from the quality they perceive and -- when
the process lets them see the score before rating (one stage) -- an outcome bias towards reviews
that score their paper high (the bias the paper cites from the NeurIPS 2022 review-of-reviews
experiment). The same draws are used under both processes, so differences come from the process.

What it reports
    * how author ratings relate to review quality and to the score (correlations and a
      least-squares fit rating ~ quality + score, whose score coefficient is the outcome bias
      that reached the ratings);
    * badge precision: the share of top-10% / top-30% badge holders (computed with the
      platform's own :mod:`~icml25.review.rewards`) who are diligent reviewers;
    * LLM-review detection from author flags: authors flag a review when it reads generic
      (perceived specificity below a threshold); LLM-generated reviews are generic on average.

Every kind's parameters are assumptions of the simulation (not numbers from the paper); they
are in :class:`SimConfig` and in the output.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from icml25.review.rewards import ReviewFacts, award_badges, venue_scores

# kind: (share, quality mean, score bias, score noise sd, on-time prob, specificity mean)
DEFAULT_KINDS: dict[str, tuple[float, float, float, float, float, float]] = {
    "diligent": (0.40, 1.0, 0.0, 0.8, 0.95, 0.5),
    "careless": (0.30, -0.8, 0.0, 2.0, 0.60, -0.3),
    "llm": (0.15, -0.3, 0.5, 1.5, 0.95, -1.8),
    "harsh": (0.15, 0.4, -2.0, 1.0, 0.85, 0.3),
}


@dataclass(frozen=True)
class SimConfig:
    """Size of the venue and the behavioural assumptions."""

    n_papers: int = 600
    n_reviewers: int = 300
    k: int = 3
    outcome_bias: float = 1.0  # rating points per 2 score points above the midpoint
    rating_noise: float = 0.5
    perception_noise: float = 0.3
    flag_threshold: float = -1.2  # authors flag a review reading more generic than this
    kinds: dict[str, tuple[float, float, float, float, float, float]] = field(
        default_factory=lambda: dict(DEFAULT_KINDS))


def _corr(x: np.ndarray, y: np.ndarray) -> float:
    return float(np.corrcoef(x, y)[0, 1])


def _fit(rating: np.ndarray, quality: np.ndarray, score: np.ndarray) -> tuple[float, float,
                                                                              float]:
    """Least squares rating ~ 1 + quality + score; returns (b_quality, b_score, se_score)."""
    x = np.column_stack([np.ones_like(quality), quality, score])
    beta, *_ = np.linalg.lstsq(x, rating, rcond=None)
    resid = rating - x @ beta
    sigma2 = resid @ resid / max(len(rating) - 3, 1)
    cov = sigma2 * np.linalg.inv(x.T @ x)
    return float(beta[1]), float(beta[2]), float(np.sqrt(cov[2, 2]))


def _assign(n_p: int, n_r: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """Balanced random assignment: (n_p, k) reviewer indices, no reviewer twice on a paper."""
    slots = np.concatenate([rng.permutation(n_r) for _ in range(int(np.ceil(n_p * k / n_r)))])
    out = np.empty((n_p, k), dtype=np.int64)
    pos = 0
    for p in range(n_p):
        chosen: list[int] = []
        while len(chosen) < k:
            r = int(slots[pos % len(slots)])
            pos += 1
            if r not in chosen:
                chosen.append(r)
        out[p] = chosen
    return out


def run(cfg: SimConfig = SimConfig(), seed: int = 0) -> dict:
    """Simulate one venue under both processes; returns JSON-able results."""
    rng = np.random.default_rng(seed)
    names = list(cfg.kinds)
    par = np.array([cfg.kinds[n] for n in names])
    share = par[:, 0] / par[:, 0].sum()
    kind = rng.choice(len(names), size=cfg.n_reviewers, p=share)
    rq = rng.normal(par[kind, 1], 0.3)  # reviewer's latent review quality
    merit = rng.normal(size=cfg.n_papers)
    asg = _assign(cfg.n_papers, cfg.n_reviewers, cfg.k, rng)
    paper = np.repeat(np.arange(cfg.n_papers), cfg.k)
    rev = asg.ravel()
    n = len(rev)
    kk = kind[rev]
    q = rq[rev] + rng.normal(scale=0.2, size=n)  # this review's quality
    score = np.clip(np.rint(5.5 + 2.0 * merit[paper] + par[kk, 2]
                            + rng.normal(scale=par[kk, 3])), 1, 10)
    seen_q = q + rng.normal(scale=cfg.perception_noise, size=n)
    noise = rng.normal(scale=cfg.rating_noise, size=n)
    base = 3.0 + 0.8 * seen_q + noise
    rating = {"two_stage": np.clip(np.rint(base), 1, 5),
              "one_stage": np.clip(np.rint(base + cfg.outcome_bias * (score - 5.5) / 2), 1, 5)}
    ac = np.clip(np.rint(3.0 + 0.8 * q + rng.normal(scale=0.7, size=n)), 1, 5)
    on_time = rng.random(n) < par[kk, 4]
    specificity = rng.normal(par[kk, 5], 0.8)
    flagged = specificity < cfg.flag_threshold
    is_llm = kk == names.index("llm")
    diligent = kind == names.index("diligent")
    out: dict = {"config": asdict(cfg), "seed": seed, "n_reviews": n,
                 "kind_counts": {nm: int((kind == i).sum()) for i, nm in enumerate(names)}}
    for proc, r in rating.items():
        b_q, b_s, se_s = _fit(r, q, score)
        facts = [ReviewFacts(int(rev[e]), author_rating=float(r[e]), ac_rating=float(ac[e]),
                             on_time=bool(on_time[e])) for e in range(n)]
        scores = venue_scores(facts)
        badges = award_badges(scores)
        users = np.array(sorted(scores))
        qs = np.array([scores[u].quality for u in users])
        harsh = kind == names.index("harsh")
        prec = {}
        for tier in ("top-10", "top-30"):
            holders = [u for u, b in badges.items() if tier in b]
            prec[tier] = float(np.mean(diligent[holders])) if holders else float("nan")
        out[proc] = {"corr_rating_quality": _corr(r, q), "corr_rating_score": _corr(r, score),
                     "fit_quality_coef": b_q, "fit_score_coef": b_s, "fit_score_se": se_s,
                     "badge_precision_top10_diligent": prec["top-10"],
                     "badge_precision_top30_diligent": prec["top-30"],
                     # does the venue's quality score rank reviewers by their latent quality?
                     "corr_quality_score_latent": _corr(qs, rq[users]),
                     "harsh_share_of_top30": float(np.mean(harsh[[u for u, b in badges.items()
                                                                  if "top-30" in b]]))}
    out["diligent_share"] = float(diligent.mean())
    out["llm_detection_rate"] = float(flagged[is_llm].mean()) if is_llm.any() else float("nan")
    out["llm_flag_precision"] = float(is_llm[flagged].mean()) if flagged.any() else float("nan")
    out["false_flag_rate"] = float(flagged[~is_llm].mean())
    return out
