"""Monte Carlo check of the closed form: simulate (Y, Yhat), screen the lowest alpha, count."""

from __future__ import annotations

import numpy as np

from icml25.worstoff._validation import check_fraction, check_r2
from icml25.worstoff.empirical import empirical_value

__all__ = ["simulate_gaussian", "monte_carlo_value"]


def simulate_gaussian(n: int, r2: float, rng: np.random.Generator, *, mean: float = 0.0,
                      sd: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """``(y, yhat)`` from the paper's model: ``Yhat ~ N(mean, R^2 sd^2)`` and an independent
    residual ``N(0, (1 - R^2) sd^2)``, so ``Yhat = E[Y | Yhat]`` and ``corr(Y, Yhat)^2 = R^2``."""
    r2 = float(check_r2("r2", r2))
    if n < 2:
        raise ValueError("n must be at least 2")
    yhat = mean + sd * np.sqrt(r2) * rng.standard_normal(n)
    y = yhat + sd * np.sqrt(1.0 - r2) * rng.standard_normal(n)
    return y, yhat


def monte_carlo_value(alpha, beta, r2, *, n: int = 100_000, reps: int = 20,
                      rng: np.random.Generator | int | None = 0) -> tuple[np.ndarray, np.ndarray]:
    """Mean empirical recall over ``reps`` simulated populations of size ``n``, and its standard
    error (from the spread across replicates); vectorised over ``alpha``."""
    from icml25.core import make_rng

    alpha = check_fraction("alpha", alpha)
    beta = float(check_fraction("beta", beta))
    if reps < 2:
        raise ValueError("reps must be at least 2 to estimate a standard error")
    gen = make_rng(rng)
    draws = np.array([empirical_value(*simulate_gaussian(n, r2, gen), alpha, beta)
                      for _ in range(reps)])
    return draws.mean(axis=0), draws.std(axis=0, ddof=1) / np.sqrt(reps)
