"""The paper's three experiments as vectorised simulations (pure functions, no I/O).

Every trial draws a calibration set from a fixed pool, chooses lambda with each rule, and measures
the realised risk on the rest of the pool. All trials are searched at once (``calibrate_many``):
each bisection step evaluates one lambda per undecided trial, and the grid of each trial is the
set of points where its losses jump, so the result is the exact continuous-range answer.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np

from icml25.conformal.calibration import calibrate_many
from icml25.conformal.data import random_subsets
from icml25.conformal.exact import (
    histogram_pmf,
    histograms,
    max_allowed_misses,
    order_statistic_failure,
    order_statistic_pmf,
    rank_threshold,
)
from icml25.conformal.rules import RuleSpec
from icml25.core.stats import clopper_pearson

__all__ = ["MethodSpec", "TrialSummary", "clopper_pearson", "run_binomial",
           "run_heteroskedastic", "run_multilabel", "summarise"]


@dataclasses.dataclass(frozen=True)
class MethodSpec:
    """One row of a results table: a rule plus its settings."""

    label: str
    method: str
    concentration: str = "hoeffding"  # the paper's RCPS baseline
    n_draws: int = 10_000
    exact: bool | None = None  # None: closed form where possible (only for 0/1 families)
    variant: str = "paper"
    random_state: int | None = None  # Monte Carlo seed; None: the run's random_state

    def spec(self, alpha: float, beta: float, random_state: int, exact=None):
        """The validated request of this row (its own Monte Carlo seed if it has one)."""
        seed = random_state if self.random_state is None else self.random_state
        return RuleSpec.make(self.method, alpha, beta, 1.0, self.concentration, self.n_draws,
                             seed, self.exact if exact is None else exact, self.variant)


_MAX_HISTOGRAMS = 20_000

PAPER_METHODS = (
    MethodSpec("CRC", "crc"),
    MethodSpec("RCPS", "rcps"),
    MethodSpec("BQ", "bq"),
)


@dataclasses.dataclass
class TrialSummary:
    label: str
    failures: int
    trials: int
    failure_rate: float
    ci_low: float
    ci_high: float
    mean_lambda: float
    mean_risk: float
    mean_size: float  # interval length or set size (nan where not meaningful)
    infeasible: int

    def row(self) -> dict:
        return dataclasses.asdict(self)


def summarise(label: str, lam: np.ndarray, risk: np.ndarray, alpha: float,
              size: np.ndarray | None = None, feasible: np.ndarray | None = None) -> TrialSummary:
    fails = int((risk > alpha).sum())
    lo, hi = clopper_pearson(fails, risk.size)
    finite = np.isfinite(lam)
    return TrialSummary(
        label, fails, int(risk.size), fails / risk.size, lo, hi,
        float(lam[finite].mean()) if finite.any() else math.nan, float(risk.mean()),
        float(np.mean(size)) if size is not None else math.nan,
        int((~feasible).sum()) if feasible is not None else 0)


# --------------------------------------------------------------------------- binomial (5.1)
def run_binomial(pool: np.ndarray, n_cal: int, n_trials: int, alpha: float, beta: float,
                 methods=PAPER_METHODS, rng=None, random_state: int = 0,
                 cal_idx: np.ndarray | None = None, exact_path: bool = True) -> dict:
    """Section 5.1: loss(lambda) = share of a row's K uniforms above lambda; true risk 1-lambda.

    A loss vector here is fixed by its histogram (how many of the n rows have 0..K values above
    lambda), and there are only C(n+K, K) histograms (1,001 for n = 10, K = 4). The fast path
    decides every histogram once per rule and walks each trial's jump points through that
    table: the same lambda as the bisection (``exact_path=False``, kept for checking), with the
    Monte Carlo done 1,001 times instead of once per trial and step. Each rule's entry carries
    ``exact``: the failure rate over all calibration sets of this pool (given the rule's Monte
    Carlo draws), exact or bracketed (:func:`binomial_exact_failure`).
    """
    rng = np.random.default_rng(rng)
    n_pool, k = pool.shape
    if cal_idx is None:
        cal_idx = random_subsets(n_pool, n_cal, n_trials, rng)
    cal = pool[cal_idx]  # (T, n, K)
    flat = cal.reshape(n_trials, -1)
    order = np.argsort(flat, axis=1)
    # Each trial's losses jump only at its own values: the grid is those values plus 0 and 1.
    grid = np.concatenate([np.zeros((n_trials, 1)), np.take_along_axis(flat, order, axis=1),
                           np.ones((n_trials, 1))], axis=1)
    rows_all = np.arange(n_trials)
    untied = bool(np.all(np.diff(np.sort(pool.ravel())) > 0) and (pool > 0).all()
                  and (pool < 1).all())
    pool_sorted = np.sort(pool.ravel())
    n_val = n_pool - n_cal
    codes = above = None
    # The table has C(n + K, K) rows; past a few tens of thousands the bisection is cheaper.
    if exact_path and untied and math.comb(n_cal + k, k) <= _MAX_HISTOGRAMS:
        codes, above = _binomial_histogram_codes(order, n_cal, k)
    out = {}
    for m in methods:
        spec = m.spec(alpha, beta, random_state, exact=False)
        # The official indexing depends on which row comes first: no histogram table.
        table_ok = codes is not None and spec.variant == "paper"
        if table_ok:
            table, hists = _histogram_table(spec, n_cal, k)
            ok = table[codes]  # (T, G): is each grid point admissible?
            feasible = ok.any(axis=1)
            index = np.where(feasible, np.argmax(ok, axis=1), -1)
            lam = np.where(feasible, grid[rows_all, np.maximum(index, 0)], np.inf)
            above_cal = np.where(feasible, above[rows_all, np.maximum(index, 0)], 0)
        else:
            def loss_fn(rows, idx):
                lam = grid[rows, idx]
                return (cal[rows] > lam[:, None, None]).mean(axis=2)

            # The binomial loss is not 0/1: Monte Carlo for every row (see calibrate_many).
            res = calibrate_many(loss_fn, grid, n_trials, alpha, beta, m.method, 1.0,
                                 direction="decreasing", concentration=m.concentration,
                                 n_draws=m.n_draws, random_state=spec.random_state,
                                 exact=False, variant=m.variant)
            lam, feasible, index = res.lambdas, res.feasible, res.index
            above_cal = loss_fn(rows_all, np.maximum(index, 0)).sum(axis=1) * k
            above_cal = np.where(feasible, above_cal, 0)
        above_pool = pool_sorted.size - np.searchsorted(pool_sorted, lam, side="right")
        risk = (above_pool - above_cal) / (n_val * k)
        exact = binomial_exact_failure(pool, n_cal, alpha, spec) if table_ok else None
        out[m.label] = {"lambda": lam, "risk": risk, "feasible": feasible, "exact": exact,
                        "summary": summarise(m.label, lam, risk, alpha, feasible=feasible)}
    out["_calibration"] = cal
    out["_cal_idx"] = cal_idx
    return out


def _binomial_histogram_codes(order: np.ndarray, n: int, k: int):
    """Per trial and grid point: the histogram code of the loss vector, and the count above.

    Grid point 0 is lambda = 0 (every value above), point j the j-th smallest value, the last
    point lambda = 1 (none above).
    """
    t, nk = order.shape
    row_of = order // k  # which calibration row each sorted value belongs to
    at_or_below = np.zeros((t, nk + 2, n), dtype=np.int8)
    np.put_along_axis(at_or_below[:, 1:nk + 1], row_of[:, :, None], 1, axis=2)
    np.cumsum(at_or_below, axis=1, out=at_or_below)
    at_or_below[:, nk + 1] = k
    above = k - at_or_below  # (T, G, n) values above lambda per row
    hist = np.zeros((t, nk + 2, k + 1), dtype=np.int16)
    for c in range(k + 1):
        hist[..., c] = (above == c).sum(axis=2)
    base = (n + 1) ** np.arange(k + 1)
    codes = hist.astype(np.int64) @ base
    all_hists = histograms(n, k + 1)
    all_codes = all_hists @ base
    srt = np.argsort(all_codes)
    pos = srt[np.searchsorted(all_codes[srt], codes)]
    total = above.sum(axis=2)
    return pos, total


@functools.lru_cache(maxsize=64)
def _histogram_table(spec: RuleSpec, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Admissibility of every histogram (rows ordered as :func:`exact.histograms`)."""
    hists = histograms(n, k + 1)
    values = np.arange(k + 1) / k
    losses = np.stack([np.repeat(values, h) for h in hists])
    ok = spec.admissible(losses)
    ok.setflags(write=False)
    return ok, hists


def binomial_exact_failure(pool: np.ndarray, n: int, alpha: float, spec: RuleSpec) -> dict:
    """Failure rate of ``spec`` over every n-row calibration set of ``pool`` (binomial loss).

    A trial fails when lambda sits at or below pool rank R(c) = the rank at which the held-out
    risk exceeds alpha given c calibration values above lambda; ``lambda <= v_R`` holds exactly
    when the histogram of per-row counts above v_R is admissible, a multivariate hypergeometric
    event. When the rule depends on the total count only (CRC, RCPS) c is known and the answer
    exact; otherwise it is bracketed by c in [0, the largest admissible total].
    """
    n_pool, k = pool.shape
    ranks = np.empty(pool.size, dtype=np.int64)
    ranks[np.argsort(pool.ravel())] = np.arange(1, pool.size + 1)
    ranks = ranks.reshape(pool.shape)
    table, hists = _histogram_table(spec, n, k)
    totals = hists @ np.arange(k + 1)
    if not table.any():
        return {"failure_rate": 0.0, "low": 0.0, "high": 0.0, "exact": True}
    c_max = int(totals[table].max())
    by_total = bool(np.all(table == (totals <= c_max)))
    pmf_cache = {}

    def prob(c: int) -> float:
        r = rank_threshold(pool.size, n * k, c, alpha)
        if r not in pmf_cache:
            counts = (ranks > r).sum(axis=1)
            pmf_cache[r] = float(histogram_pmf(np.bincount(counts, minlength=k + 1),
                                               hists)[table].sum())
        return pmf_cache[r]

    if by_total:
        p = prob(c_max)
        return {"failure_rate": p, "low": p, "high": p, "exact": True}
    lo, hi = prob(c_max), prob(0)
    return {"failure_rate": 0.5 * (lo + hi), "low": lo, "high": hi, "exact": False}


# --------------------------------------------------------------------------- heteroskedastic (5.2)
def run_heteroskedastic(y: np.ndarray, n_cal: int, n_trials: int, alpha: float, beta: float,
                        methods=PAPER_METHODS, rng=None, random_state: int = 0,
                        cal_idx: np.ndarray | None = None, exact_path: bool = True) -> dict:
    """Section 5.2: interval [-lambda, lambda] around a zero prediction, miscoverage loss.

    The loss is 0/1, so every rule's decision depends only on the number k of calibration
    scores above lambda: the largest admissible k* is found once per rule (n + 1 loss vectors)
    and each trial's lambda is its (n - k*)-th smallest score — the same answer as the bisection
    (``exact_path=False``, kept for checking), without it. Each rule's entry also carries the
    exact failure rate and mean interval length over all calibration sets of this pool
    (:mod:`~icml25.conformal.exact`).
    """
    rng = np.random.default_rng(rng)
    scores = np.abs(np.asarray(y, dtype=float))
    n_pool = scores.size
    if cal_idx is None:
        cal_idx = random_subsets(n_pool, n_cal, n_trials, rng)
    cal = np.sort(scores[cal_idx], axis=1)  # (T, n), sorted: the jump points
    pool_sorted = np.sort(scores)
    n_val = n_pool - n_cal
    # Ties would make the count above an order statistic smaller than n - rank.
    untied = bool(np.all(np.diff(pool_sorted) > 0) and np.all(pool_sorted > 0))
    grid = None
    out = {}
    for m in methods:
        spec = m.spec(alpha, beta, random_state)
        if exact_path and untied:
            k_star = max_allowed_misses(spec.admissible, n_cal)
            feasible = np.full(n_trials, k_star >= 0)
            if k_star < 0:
                lam = np.full(n_trials, np.inf)
            elif k_star == n_cal:
                lam = np.zeros(n_trials)
            else:
                lam = cal[:, n_cal - k_star - 1].copy()
            miss_cal = np.full(n_trials, max(k_star, 0)) if k_star >= 0 else np.zeros(n_trials)
            exact = _hetero_exact(pool_sorted, n_cal, k_star, alpha)
        else:
            if grid is None:
                grid = np.concatenate([np.zeros((n_trials, 1)), cal], axis=1)

            def loss_fn(rows, idx, grid=grid):
                lam = grid[rows, idx]
                return (cal[rows] > lam[:, None]).astype(float)

            res = calibrate_many(loss_fn, grid, n_trials, alpha, beta, m.method, 1.0,
                                 direction="decreasing", concentration=m.concentration,
                                 n_draws=m.n_draws, random_state=spec.random_state,
                                 exact=m.exact, variant=m.variant)
            lam, feasible = res.lambdas, res.feasible
            miss_cal = _count_above(cal, lam)
            exact = None
        miss_pool = n_pool - np.searchsorted(pool_sorted, lam, side="right")
        risk = (miss_pool - miss_cal) / n_val
        out[m.label] = {"lambda": lam, "risk": risk, "feasible": feasible, "exact": exact,
                        "summary": summarise(m.label, lam, risk, alpha, size=2 * lam,
                                             feasible=feasible)}
    out["_calibration"] = cal
    out["_cal_idx"] = cal_idx
    return out


def _hetero_exact(pool_sorted: np.ndarray, n: int, k_star: int, alpha: float) -> dict:
    """Failure rate and mean length over every calibration set of this pool (ranks only)."""
    n_pool = pool_sorted.size
    if k_star < 0:
        return {"k_star": -1, "failure_rate": 0.0, "mean_length": math.inf}
    if k_star >= n:
        miss = n_pool - n
        return {"k_star": k_star, "failure_rate": float(miss / (n_pool - n) > alpha),
                "mean_length": 0.0}
    r = n - k_star
    j_fail = rank_threshold(n_pool, n, k_star, alpha)
    pmf = order_statistic_pmf(n_pool, n, r)
    return {"k_star": k_star, "rank": r,
            "failure_rate": order_statistic_failure(n_pool, n, r, j_fail),
            "mean_length": float(2 * pmf @ pool_sorted)}


def _count_above(sorted_rows: np.ndarray, values: np.ndarray) -> np.ndarray:
    return (sorted_rows > values[:, None]).sum(axis=1)


# --------------------------------------------------------------------------- multilabel FNR (5.3)
def run_multilabel(scores: np.ndarray, labels: np.ndarray, n_cal: int, n_trials: int,
                   alpha: float, beta: float, methods=PAPER_METHODS, rng=None,
                   random_state: int = 0) -> dict:
    """Section 5.3: set = classes with score >= lambda; loss = false-negative rate (rises
    with lambda, so the least conservative admissible lambda is the largest)."""
    rng = np.random.default_rng(rng)
    scores = np.asarray(scores, dtype=float)
    labels = np.asarray(labels).astype(bool)
    n_pool, _ = scores.shape
    n_true = labels.sum(axis=1)
    keep = n_true > 0
    if not keep.all():  # FNR is undefined without true labels; the paper drops such images
        scores, labels, n_true = scores[keep], labels[keep], n_true[keep]
        n_pool = scores.shape[0]
    width = int(n_true.max())
    true_scores = np.full((n_pool, width), np.inf)  # +inf padding never counts as a miss
    r, c = np.nonzero(labels)
    rank = np.cumsum(labels, axis=1)[r, c] - 1
    true_scores[r, rank] = scores[r, c]
    grid = np.concatenate([[0.0], np.unique(true_scores[np.isfinite(true_scores)])])
    cal_idx = random_subsets(n_pool, n_cal, n_trials, rng)

    def fnr(images: np.ndarray, lam: np.ndarray) -> np.ndarray:
        out = np.empty(images.shape)
        step = max(1, 2_000_000 // (images.shape[1] * width))
        for s in range(0, images.shape[0], step):
            im = images[s:s + step]
            miss = (true_scores[im] < lam[s:s + step, None, None]).sum(axis=2)
            out[s:s + step] = miss / n_true[im]
        return out

    def loss_fn(rows, idx):
        return fnr(cal_idx[rows], grid[idx])

    all_scores = np.sort(scores.ravel())
    n_test = n_pool - n_cal
    out = {}
    for m in methods:
        res = calibrate_many(loss_fn, grid, n_trials, alpha, beta, m.method, 1.0,
                             direction="increasing", concentration=m.concentration,
                             n_draws=m.n_draws, random_state=random_state, exact=False,
                             variant=m.variant)
        lam = np.where(res.feasible, res.lambdas, 0.0)  # trivial predictor: every class
        pool_fnr = _pool_fnr(true_scores, n_true, lam)
        cal_fnr = fnr(cal_idx, lam).sum(axis=1)
        risk = (pool_fnr - cal_fnr) / n_test
        size_pool = all_scores.size - np.searchsorted(all_scores, lam, side="left")
        size_cal = _set_size_sum(scores, cal_idx, lam)
        size = (size_pool - size_cal) / n_test
        out[m.label] = {"lambda": lam, "risk": risk, "feasible": res.feasible,
                        "summary": summarise(m.label, lam, risk, alpha, size=size,
                                             feasible=res.feasible)}
    out["_calibration"] = cal_idx
    out["_grid"] = grid
    return out


def _pool_fnr(true_scores: np.ndarray, n_true: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """Sum over the whole pool of per-image FNR at each lambda in ``lam``."""
    # The pool sum is a step function of lambda: sum of 1/n_true over true scores < lambda.
    flat = true_scores[np.isfinite(true_scores)]
    weight = np.broadcast_to((1.0 / n_true)[:, None], true_scores.shape)[np.isfinite(true_scores)]
    order = np.argsort(flat)
    cum = np.concatenate([[0.0], np.cumsum(weight[order])])
    return cum[np.searchsorted(flat[order], lam, side="left")]


def _set_size_sum(scores: np.ndarray, cal_idx: np.ndarray, lam: np.ndarray) -> np.ndarray:
    out = np.empty(cal_idx.shape[0])
    step = max(1, 4_000_000 // (cal_idx.shape[1] * scores.shape[1]))
    for s in range(0, cal_idx.shape[0], step):
        block = scores[cal_idx[s:s + step]]
        out[s:s + step] = (block >= lam[s:s + step, None, None]).sum(axis=(1, 2))
    return out
