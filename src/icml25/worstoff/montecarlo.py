"""Monte Carlo check of the closed form: simulate (Y, Yhat), screen the lowest alpha, count."""

from __future__ import annotations

import numpy as np

from icml25.worstoff._validation import check_fraction, check_r2
from icml25.worstoff.empirical import empirical_value

__all__ = ["simulate_gaussian", "monte_carlo_value"]


def simulate_gaussian(n: int, r2: float, rng: np.random.Generator, *, mean: float = 0.0,
                      sd: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """``(y, yhat)`` from the paper's model: ``Yhat ~ N(mean, R^2 sd^2)`` and an independent
    residual ``N(0, (1 - R^2) sd^2)``, so ``Yhat = E[Y | Yhat]`` and ``corr(Y, Yhat)^2 = R^2``.

    Parameters
    ----------
    n : int
        Population size, at least 2.
    r2 : float
        R^2 of the predictions, in [0, 1].
    rng : numpy.random.Generator
        Source of the draws.
    mean : float, default=0.0
        Mean of the outcome.
    sd : float, default=1.0
        Standard deviation of the outcome.

    Returns
    -------
    y, yhat : ndarray of shape (n,)
        Outcomes and predictions.

    Raises
    ------
    ValueError
        If ``n < 2`` or ``r2`` is outside [0, 1].

    Examples
    --------
    >>> import numpy as np
    >>> from icml25.worstoff import r2_score, simulate_gaussian
    >>> y, yhat = simulate_gaussian(1000, 0.3, np.random.default_rng(0))
    >>> y.shape, round(r2_score(y, yhat), 3)
    ((1000,), 0.317)
    """
    r2 = float(check_r2("r2", r2))
    if n < 2:
        raise ValueError("n must be at least 2")
    yhat = mean + sd * np.sqrt(r2) * rng.standard_normal(n)
    y = yhat + sd * np.sqrt(1.0 - r2) * rng.standard_normal(n)
    return y, yhat


def monte_carlo_value(alpha, beta, r2, *, n: int = 100_000, reps: int = 20,
                      rng: np.random.Generator | int | None = 0) -> tuple[np.ndarray, np.ndarray]:
    """Mean empirical recall over ``reps`` simulated populations of size ``n``, and its standard
    error (from the spread across replicates); vectorised over ``alpha``.

    Parameters
    ----------
    alpha : float or array-like
        Screening capacity, in (0, 1).
    beta : float
        Target fraction, in (0, 1).
    r2 : float
        R^2 of the simulated predictor, in [0, 1].
    n : int, default=100000
        Population size of each replicate.
    reps : int, default=20
        Number of replicates, at least 2.
    rng : numpy.random.Generator, int or None, default=0
        Generator or seed.

    Returns
    -------
    mean, se : float or ndarray
        Mean recall and its standard error, shaped like ``alpha``.

    Raises
    ------
    ValueError
        If ``reps < 2`` or a fraction is outside its range.

    Examples
    --------
    >>> from icml25.worstoff import monte_carlo_value, value
    >>> mean, se = monte_carlo_value(0.2, 0.2, 0.25, n=20_000, reps=5, rng=0)
    >>> bool(abs(mean - value(0.2, 0.2, 0.25)) < 4 * se)      # agrees with the closed form
    True
    """
    from icml25.core import make_rng

    alpha = check_fraction("alpha", alpha)
    beta = float(check_fraction("beta", beta))
    if reps < 2:
        raise ValueError("reps must be at least 2 to estimate a standard error")
    gen = make_rng(rng)
    draws = np.array([empirical_value(*simulate_gaussian(n, r2, gen), alpha, beta)
                      for _ in range(reps)])
    return draws.mean(axis=0), draws.std(axis=0, ddof=1) / np.sqrt(reps)
