"""One gate for user data with missing entries: dtype, shape, all-NaN columns, empty rows."""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.utils import check_array

__all__ = ["COMPLETE_ROWS_PER_FEATURE", "TooFewCompleteRowsWarning", "check_complete_rows",
           "check_missing_array"]

# method="complete" warns below this many fully observed rows per variable
COMPLETE_ROWS_PER_FEATURE = 10


class TooFewCompleteRowsWarning(UserWarning):
    """A method that uses only fully observed rows has too few of them for the dimension.

    A :class:`UserWarning` issued by ``method="complete"`` (and the selectors using it) below
    ``max(COMPLETE_ROWS_PER_FEATURE * d, 2 d + 1)`` complete rows.

    Parameters
    ----------
    *args : object
        The message (as for any warning).

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> obs = np.ones((10, 3), bool); obs[2:, 0] = False   # 2 complete rows
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     check_complete_rows(obs)
    2
    >>> caught[0].category is TooFewCompleteRowsWarning
    True
    """


def check_complete_rows(obs: np.ndarray, method: str = "complete", stacklevel: int = 4) -> int:
    """The number of fully observed rows of the mask ``obs`` (n, d); raises when there is none
    and warns (:class:`TooFewCompleteRowsWarning`, with the counts) below
    max(COMPLETE_ROWS_PER_FEATURE * d, 2 d + 1)."""
    n, d = obs.shape
    n_complete = int(np.asarray(obs, bool).all(-1).sum())
    if n_complete == 0:
        raise ValueError(f"method={method!r} needs at least one fully observed row")
    need = max(COMPLETE_ROWS_PER_FEATURE * d, 2 * d + 1)
    if n_complete < need:
        warnings.warn(
            f"method={method!r} fits on the {n_complete} fully observed row(s) of {n} "
            f"({n_complete / n:.1%}) for {d} variables; fewer than "
            f"{COMPLETE_ROWS_PER_FEATURE} per variable ({need}) gives an unreliable "
            f"fit (it can rank edges worse than chance). Use method='iw' or 'em', "
            f"which use every observed entry", TooFewCompleteRowsWarning, stacklevel=stacklevel)
    return n_complete


def check_missing_array(X, *, min_rows: int = 2, name: str = "X"):
    """Validate a 2-D numeric array where NaN marks a missing entry.

    Returns (X float64 copy with empty rows removed, observed bool mask, kept row indices).
    Raises TypeError for non-numeric input, ValueError for wrong shapes, infinities, all-NaN
    columns or too few rows; rows with nothing observed are dropped with a warning.
    """
    if getattr(X, "dtype", None) is not None and np.dtype(X.dtype).kind in "OUS":
        try:
            X = np.asarray(X).astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{name} must be numeric (NaN marks a missing value); got dtype "
                            f"{X.dtype} with non-numeric entries: {exc}") from exc
    # sklearn's gate: sparse, complex, empty, infinite and wrong-rank input get its messages
    arr = check_array(X, dtype=np.float64, ensure_all_finite="allow-nan", input_name=name,
                      ensure_min_samples=1, copy=True)
    obs = ~np.isnan(arr)
    empty_cols = np.flatnonzero(~obs.any(0))
    if empty_cols.size:
        raise ValueError(f"{name} has column(s) with no observed value: {empty_cols.tolist()}; "
                         "drop them before fitting")
    keep = np.flatnonzero(obs.any(1))
    if keep.size < arr.shape[0]:
        warnings.warn(f"{arr.shape[0] - keep.size} row(s) of {name} have no observed value and "
                      "were dropped", UserWarning, stacklevel=3)
        arr, obs = arr[keep], obs[keep]
    if arr.shape[0] < min_rows:
        raise ValueError(f"{name} has {arr.shape[0]} sample(s) with an observed value "
                         f"(shape={arr.shape}); at least {min_rows} are required")
    return arr, obs, keep
