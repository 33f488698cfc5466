"""Boundary checks shared by the worstoff modules: one clear ``ValueError`` per bad input."""

from __future__ import annotations

import numpy as np


def as_float_array(name: str, x) -> np.ndarray:
    """``x`` as a float array, rejecting NaN and non-numeric input with a message naming it."""
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be numeric, got {x!r}") from None
    if np.isnan(arr).any():
        raise ValueError(f"{name} contains NaN")
    return arr


def check_fraction(name: str, x, *, low_open: bool = True, high_open: bool = True) -> np.ndarray:
    """A fraction in (0, 1) (or a half/fully closed interval when asked)."""
    arr = as_float_array(name, x)
    lo_bad = arr <= 0 if low_open else arr < 0
    hi_bad = arr >= 1 if high_open else arr > 1
    if (lo_bad | hi_bad).any():
        interval = ("(" if low_open else "[") + "0, 1" + (")" if high_open else "]")
        bad = float(arr[lo_bad | hi_bad].ravel()[0])
        raise ValueError(f"{name} must lie in {interval}, got {bad!r}")
    return arr


def check_r2(name: str, x) -> np.ndarray:
    """A coefficient of determination in [0, 1] (the Gaussian model's R^2 = rho^2)."""
    return check_fraction(name, x, low_open=False, high_open=False)


def check_positive(name: str, x) -> np.ndarray:
    arr = as_float_array(name, x)
    if (arr <= 0).any() or not np.isfinite(arr).all():
        raise ValueError(f"{name} must be positive and finite, got {float(arr.ravel()[0])!r}")
    return arr


def check_outcomes(y, yhat, *, names: tuple[str, str] = ("y", "yhat")) -> tuple[np.ndarray, ...]:
    """Two finite 1-D arrays of equal length (at least 2) with a non-constant outcome."""
    arrays = []
    for name, v in zip(names, (y, yhat), strict=True):
        arr = as_float_array(name, v)
        if arr.ndim != 1:
            raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
        if not np.isfinite(arr).all():
            raise ValueError(f"{name} contains infinite values")
        arrays.append(arr)
    if arrays[0].shape != arrays[1].shape:
        raise ValueError(f"{names[0]} and {names[1]} have different lengths "
                         f"({arrays[0].size} and {arrays[1].size})")
    if arrays[0].size < 2:
        raise ValueError("need at least two observations")
    if np.ptp(arrays[0]) == 0:
        raise ValueError(f"{names[0]} is constant; the worst-off are not defined")
    return tuple(arrays)


def scalar_or_array(x: np.ndarray):
    """A Python float for 0-d results, the array otherwise (NumPy ufunc convention)."""
    x = np.asarray(x)
    return float(x) if x.ndim == 0 else x
