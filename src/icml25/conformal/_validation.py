"""Checks at the boundary: every public entry point funnels its inputs through these."""

from __future__ import annotations

import math
import warnings

import numpy as np

METHODS = ("bq", "crc", "rcps", "split")
CONCENTRATIONS = ("hb", "hoeffding")
DIRECTIONS = ("auto", "decreasing", "increasing")


class InfeasibleRiskWarning(UserWarning):
    """No lambda can certify the request; the trivial predictor is returned instead."""


def check_bound(bound) -> float:
    try:
        b = float(bound)
    except (TypeError, ValueError):
        raise ValueError(f"bound must be a positive number, got {bound!r}") from None
    if not math.isfinite(b) or b <= 0:
        raise ValueError(f"bound (the largest possible loss B) must be positive and finite, "
                         f"got {bound!r}")
    return b


def check_level(value, name: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number in (0, 1), got {value!r}") from None
    if not (0.0 < v < 1.0):
        raise ValueError(f"{name} must lie strictly between 0 and 1, got {value!r}")
    return v


def check_method(method: str) -> str:
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    return method


def check_concentration(concentration: str) -> str:
    if concentration not in CONCENTRATIONS:
        raise ValueError(f"concentration must be one of {CONCENTRATIONS}, got {concentration!r}")
    return concentration


def check_losses(losses, bound: float, ndim=(1,), name: str = "losses") -> np.ndarray:
    """Float array of losses in [0, bound] with an allowed number of dimensions."""
    try:
        arr = np.asarray(losses, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be numeric") from None
    if arr.ndim not in ndim:
        raise ValueError(f"{name} must have {' or '.join(map(str, ndim))} dimension(s), "
                         f"got shape {arr.shape}")
    if arr.size == 0 or arr.shape[-1] == 0:
        raise ValueError(f"{name} is empty: at least one calibration loss is needed")
    if np.isnan(arr).any():
        raise ValueError(f"{name} contain NaN ({int(np.isnan(arr).sum())} values)")
    bad = (arr < 0) | (arr > bound)
    if bad.any():
        first = arr[bad].flat[0]
        raise ValueError(f"{name} must lie in [0, B] = [0, {bound:g}]; {int(bad.sum())} value(s) "
                         f"do not (e.g. {first:g}). Pass a larger bound or rescale the loss.")
    return arr


def minimum_calibration_size(alpha: float, beta: float = 0.95, method: str = "bq",
                             bound: float = 1.0, concentration: str = "hb") -> int:
    """The smallest n for which the rule can succeed at all (every calibration loss 0).

    * bq, and rcps with the Hoeffding–Bentkus bound: 1 - (1 - alpha/B)^n >= beta.
    * crc and split: B / (n + 1) <= alpha.
    * rcps with Hoeffding: B * sqrt(log(1/(1-beta)) / (2n)) <= alpha.
    """
    from icml25.conformal.posterior import min_n_bq

    alpha, beta = check_level(alpha, "alpha"), check_level(beta, "beta")
    bound = check_bound(bound)
    check_method(method)
    if method in ("crc", "split"):
        return max(1, math.ceil(bound / alpha - 1 - 1e-9))
    if method == "rcps" and check_concentration(concentration) == "hoeffding":
        return max(1, math.ceil(bound**2 * math.log(1 / (1 - beta)) / (2 * alpha**2) - 1e-9))
    return min_n_bq(alpha, beta, bound)


def warn_infeasible(n: int, alpha: float, beta: float, method: str, bound: float,
                    concentration: str, trivial: str, stacklevel: int = 3) -> int:
    """Issue the documented warning; return the minimum n."""
    n_min = minimum_calibration_size(alpha, beta, method, bound, concentration)
    level = f" with credibility beta={beta:g}" if method in ("bq", "rcps") else ""
    if n < n_min:
        msg = (f"calibration set too small: method {method!r} needs at least n={n_min} "
               f"calibration points to certify risk <= alpha={alpha:g}{level} (bound B={bound:g}) "
               f"even if every loss were 0; got n={n}. Returning the trivial predictor "
               f"({trivial}).")
    else:
        msg = (f"no lambda in the search range certifies risk <= alpha={alpha:g}{level} with "
               f"method {method!r} on these n={n} losses (the minimum n for this request is "
               f"{n_min}); returning the trivial predictor ({trivial}).")
    warnings.warn(msg, InfeasibleRiskWarning, stacklevel=stacklevel)
    return n_min
