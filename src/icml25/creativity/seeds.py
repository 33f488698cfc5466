"""Aggregating a rate (creativity, coherence, ...) over training seeds. Pure Python + SciPy.

Each training seed ``i`` gives a rate ``p_i`` measured on ``n_i`` generations. Over ``k``
seeds:

- ``mean``        = (1/k) sum p_i
- ``se``          = sd(p_1..p_k) / sqrt(k) (sample sd, ddof 1): the standard error of the mean
                    over seeds; it contains both the training-seed spread and the sampling noise
- ``sampling_se`` = sqrt(sum p_i (1 - p_i) / n_i) / k: the part the finite number of
                    generations alone would give (binomial), reported beside it so a reader sees
                    whether more generations or more seeds would narrow the interval

Two methods are compared by the difference of their means with a Welch t interval (seeds of
the two methods are independent runs).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from scipy import stats


@dataclasses.dataclass(frozen=True)
class SeedSummary:
    mean: float
    se: float
    sampling_se: float
    k: int
    values: tuple[float, ...]

    def text(self, digits: int = 3) -> str:
        """``mean ± se (sampling ± s; k seeds)``."""
        return (f"{self.mean:.{digits}f} ± {self.se:.{digits}f} "
                f"(sampling ± {self.sampling_se:.{digits}f}; {self.k} seeds)")


def summarize(rates: Sequence[float], ns: Sequence[int] | int) -> SeedSummary:
    """Mean over seeds with its two standard errors (module docstring). ``ns``: generations
    per seed (one number for all). At least 2 seeds (a single seed has no spread)."""
    rates = [float(p) for p in rates]
    k = len(rates)
    ns = [int(ns)] * k if isinstance(ns, int) else [int(n) for n in ns]
    if k < 2:
        raise ValueError(f"need at least 2 seeds for a standard error, got {k}")
    if len(ns) != k:
        raise ValueError(f"{k} rates but {len(ns)} sample sizes")
    if any(not 0 <= p <= 1 or math.isnan(p) for p in rates):
        raise ValueError("rates must lie in [0, 1]")
    if any(n < 1 for n in ns):
        raise ValueError("every seed needs at least one generation")
    mean = sum(rates) / k
    sd = math.sqrt(sum((p - mean) ** 2 for p in rates) / (k - 1))
    sampling = math.sqrt(sum(p * (1 - p) / n for p, n in zip(rates, ns, strict=True))) / k
    return SeedSummary(mean, sd / math.sqrt(k), sampling, k, tuple(rates))


@dataclasses.dataclass(frozen=True)
class SeedDifference:
    diff: float
    se: float
    ci: tuple[float, float]
    df: float


def difference(a: SeedSummary, b: SeedSummary, level: float = 0.95) -> SeedDifference:
    """``a.mean - b.mean`` with a Welch t interval at ``level``. When both seed spreads are
    zero the interval falls back to the sampling standard errors (normal quantile)."""
    if not 0 < level < 1:
        raise ValueError("level must be in (0, 1)")
    va, vb = a.se ** 2, b.se ** 2
    d = a.mean - b.mean
    if va + vb == 0:
        se = math.hypot(a.sampling_se, b.sampling_se)
        half = stats.norm.ppf(0.5 + level / 2) * se
        return SeedDifference(d, se, (d - half, d + half), math.inf)
    df = (va + vb) ** 2 / (va ** 2 / (a.k - 1) + vb ** 2 / (b.k - 1))
    se = math.sqrt(va + vb)
    half = stats.t.ppf(0.5 + level / 2, df) * se
    return SeedDifference(d, se, (d - half, d + half), df)
