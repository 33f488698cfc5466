"""Checks at the boundary: every public entry point funnels its inputs through these.

A leaf module (numpy only): the posterior, the rules and the estimators import it, never the
reverse.
"""

from __future__ import annotations

import math

import numpy as np

CONCENTRATIONS = ("hb", "hoeffding")
DIRECTIONS = ("auto", "decreasing", "increasing")


class InfeasibleRiskWarning(UserWarning):
    """No lambda can certify the request; the trivial predictor is returned instead.

    Parameters
    ----------
    *args
        The warning message, as for any ``UserWarning``.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from icml25.conformal import InfeasibleRiskWarning, calibrate
    >>> grid = np.linspace(0, 1, 11)
    >>> losses = np.zeros((10, 11))                     # 10 points: too few for bq at 0.1
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     res = calibrate(losses, grid, alpha=0.1)
    >>> res.feasible, caught[0].category is InfeasibleRiskWarning
    (False, True)
    """


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
