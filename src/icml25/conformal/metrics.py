"""Coverage and size of conformal predictions: overall, by group, stratified by set size / width.

Names follow MAPIE's ``mapie.metrics`` where a function exists there
(``regression_coverage_score``, ``regression_mean_width_score``, ``classification_coverage_score``,
``classification_mean_width_score``, ``regression_ssc``, ``regression_ssc_score``,
``classification_ssc``, ``classification_ssc_score``); :func:`coverage_by_group` is ours.

Every function takes one prediction per level — intervals (n, 2), sets (n, n_classes) — or
several stacked on a last axis, as the estimators return for a sequence of alphas:
(n, 2, n_alpha) and (n, n_classes, n_alpha). A single level gives a float (or a 1-D array for
the stratified scores); several give one value per level on the first axis.

Class labels: ``y_true`` holds column indices 0..n_classes-1 unless ``classes`` (the
estimator's ``classes_``) is given to map labels onto columns.

Examples
--------
>>> import numpy as np
>>> y = np.array([1.0, 2.0, 3.0, 10.0])
>>> iv = np.array([[0, 2], [1, 3], [2, 4], [0, 5]], dtype=float)
>>> regression_coverage_score(y, iv), regression_mean_width_score(iv)
(0.75, 2.75)
>>> sets = np.array([[1, 0, 0], [1, 1, 0], [0, 0, 1]], dtype=bool)
>>> classification_coverage_score(np.array([0, 2, 2]), sets)
0.6666666666666666
>>> classification_ssc(np.array([0, 2, 2]), sets)     # coverage for sets of size 0, 1, 2, 3
array([nan,  1.,  0., nan])
"""

from __future__ import annotations

import numpy as np

__all__ = ["classification_coverage_score", "classification_mean_width_score",
           "classification_ssc", "classification_ssc_score", "coverage_by_group",
           "regression_coverage_score", "regression_mean_width_score", "regression_ssc",
           "regression_ssc_score"]


def _intervals(y_intervals) -> tuple[np.ndarray, bool]:
    iv = np.asarray(y_intervals, dtype=float)
    if iv.ndim == 2 and iv.shape[1] == 2:
        return iv[:, :, None], False
    if iv.ndim == 3 and iv.shape[1] == 2:
        return iv, True
    raise ValueError(f"intervals must have shape (n, 2) or (n, 2, n_alpha), got {iv.shape}")


def _sets(y_pred_set) -> tuple[np.ndarray, bool]:
    s = np.asarray(y_pred_set)
    if s.ndim == 2:
        return s.astype(bool)[:, :, None], False
    if s.ndim == 3:
        return s.astype(bool), True
    raise ValueError(f"prediction sets must have shape (n, n_classes) or "
                     f"(n, n_classes, n_alpha), got {s.shape}")


def _y(y_true, n: int) -> np.ndarray:
    y = np.asarray(y_true).reshape(-1)
    if y.size != n:
        raise ValueError(f"y_true has {y.size} values for {n} predictions")
    return y


def _label_columns(y_true, n: int, n_classes: int, classes) -> np.ndarray:
    y = _y(y_true, n)
    if classes is not None:
        classes = np.asarray(classes)
        if classes.size != n_classes:
            raise ValueError(f"classes has {classes.size} labels for {n_classes} set columns")
        order = np.argsort(classes)
        pos = np.searchsorted(classes, y, sorter=order)
        pos = order[np.clip(pos, 0, n_classes - 1)]
        if (classes[pos] != y).any():
            raise ValueError(f"y_true holds labels not in classes: "
                             f"{np.unique(y[classes[pos] != y])[:5].tolist()}")
        return pos
    if y.dtype.kind not in "iub" and (y.dtype.kind != "f" or np.any(np.mod(y, 1) != 0)):
        raise ValueError("y_true must hold column indices 0..n_classes-1; pass classes= to map "
                         "other labels")
    pos = y.astype(int)
    if (pos < 0).any() or (pos >= n_classes).any():
        raise ValueError(f"y_true must hold column indices 0..{n_classes - 1}; pass classes= "
                         "to map other labels")
    return pos


def _hits_intervals(y_true, y_intervals):
    iv, multi = _intervals(y_intervals)
    y = _y(y_true, iv.shape[0]).astype(float)[:, None]
    return (iv[:, 0, :] <= y) & (y <= iv[:, 1, :]), iv[:, 1, :] - iv[:, 0, :], multi


def _hits_sets(y_true, y_pred_set, classes):
    s, multi = _sets(y_pred_set)
    pos = _label_columns(y_true, s.shape[0], s.shape[1], classes)
    return s[np.arange(s.shape[0]), pos, :], s.sum(axis=1), multi


def _out(values, multi):
    v = np.asarray(values, dtype=float)
    return v if multi else (float(v[0]) if v.ndim == 1 else v[0])


def regression_coverage_score(y_true, y_intervals):
    """Share of targets inside their interval.

    Parameters
    ----------
    y_true : array-like of shape (n,)
    y_intervals : array-like of shape (n, 2) or (n, 2, n_alpha)

    Returns
    -------
    float, or ndarray of shape (n_alpha,)
    """
    hit, _, multi = _hits_intervals(y_true, y_intervals)
    return _out(hit.mean(axis=0), multi)


def regression_mean_width_score(y_intervals):
    """Mean interval width (inf if any interval is infinite).

    Parameters
    ----------
    y_intervals : array-like of shape (n, 2) or (n, 2, n_alpha)

    Returns
    -------
    float, or ndarray of shape (n_alpha,)
    """
    iv, multi = _intervals(y_intervals)
    return _out((iv[:, 1, :] - iv[:, 0, :]).mean(axis=0), multi)


def classification_coverage_score(y_true, y_pred_set, classes=None):
    """Share of labels inside their prediction set.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Column indices, or labels when ``classes`` is given.
    y_pred_set : array-like of bool, shape (n, n_classes) or (n, n_classes, n_alpha)
    classes : array-like of shape (n_classes,), default=None
        The label of each column (an estimator's ``classes_``).

    Returns
    -------
    float, or ndarray of shape (n_alpha,)
    """
    hit, _, multi = _hits_sets(y_true, y_pred_set, classes)
    return _out(hit.mean(axis=0), multi)


def classification_mean_width_score(y_pred_set):
    """Mean prediction-set size.

    Parameters
    ----------
    y_pred_set : array-like of bool, shape (n, n_classes) or (n, n_classes, n_alpha)

    Returns
    -------
    float, or ndarray of shape (n_alpha,)
    """
    s, multi = _sets(y_pred_set)
    return _out(s.sum(axis=1).mean(axis=0), multi)


def classification_ssc(y_true, y_pred_set, num_bins: int | None = None, classes=None):
    """Size-stratified coverage: coverage among the points whose set has a given size.

    Parameters
    ----------
    y_true : array-like of shape (n,)
    y_pred_set : array-like of bool, shape (n, n_classes) or (n, n_classes, n_alpha)
    num_bins : int or None, default=None
        ``None``: one bin per size 0..n_classes. An int: that many bins of consecutive
        sizes of equal span over 0..n_classes.
    classes : array-like, default=None
        As in :func:`classification_coverage_score`.

    Returns
    -------
    ndarray of shape (n_bins,), or (n_alpha, n_bins)
        Coverage per bin, NaN for a bin no point falls in.
    """
    hit, size, multi = _hits_sets(y_true, y_pred_set, classes)
    n_classes = np.asarray(y_pred_set).shape[1]
    if num_bins is None:
        edges = np.arange(n_classes + 2) - 0.5
    else:
        if not isinstance(num_bins, int | np.integer) or num_bins < 1:
            raise ValueError(f"num_bins must be a positive int or None, got {num_bins!r}")
        edges = np.linspace(-0.5, n_classes + 0.5, int(num_bins) + 1)
    return _out(_binned(hit, size, edges), multi)


def _binned(hit: np.ndarray, key: np.ndarray, edges: np.ndarray) -> np.ndarray:
    out = np.full((hit.shape[1], edges.size - 1), np.nan)
    for a in range(hit.shape[1]):
        b = np.clip(np.searchsorted(edges, key[:, a], side="right") - 1, 0, edges.size - 2)
        for j in range(edges.size - 1):
            m = b == j
            if m.any():
                out[a, j] = hit[m, a].mean()
    return out


def classification_ssc_score(y_true, y_pred_set, num_bins: int | None = None, classes=None):
    """Worst size-stratified coverage (the minimum over non-empty bins).

    Parameters
    ----------
    y_true, y_pred_set, num_bins, classes : as in :func:`classification_ssc`

    Returns
    -------
    float, or ndarray of shape (n_alpha,)
    """
    ssc = np.atleast_2d(classification_ssc(y_true, y_pred_set, num_bins, classes))
    _, multi = _sets(y_pred_set)
    return _out(np.nanmin(ssc, axis=1), multi)


def regression_ssc(y_true, y_intervals, num_bins: int = 3):
    """Width-stratified coverage: coverage within bins of equal counts of interval width.

    Parameters
    ----------
    y_true : array-like of shape (n,)
    y_intervals : array-like of shape (n, 2) or (n, 2, n_alpha)
    num_bins : int, default=3
        Quantile bins of the widths (narrowest first).

    Returns
    -------
    ndarray of shape (num_bins,), or (n_alpha, num_bins)
    """
    if not isinstance(num_bins, int | np.integer) or num_bins < 1:
        raise ValueError(f"num_bins must be a positive int, got {num_bins!r}")
    hit, width, multi = _hits_intervals(y_true, y_intervals)
    out = np.full((hit.shape[1], int(num_bins)), np.nan)
    for a in range(hit.shape[1]):
        order = np.argsort(width[:, a], kind="stable")
        for j, part in enumerate(np.array_split(order, int(num_bins))):
            if part.size:
                out[a, j] = hit[part, a].mean()
    return _out(out, multi)


def regression_ssc_score(y_true, y_intervals, num_bins: int = 3):
    """Worst width-stratified coverage (the minimum over the bins of :func:`regression_ssc`).

    Parameters
    ----------
    y_true, y_intervals, num_bins : as in :func:`regression_ssc`

    Returns
    -------
    float, or ndarray of shape (n_alpha,)
    """
    ssc = np.atleast_2d(regression_ssc(y_true, y_intervals, num_bins))
    _, multi = _intervals(y_intervals)
    return _out(np.nanmin(ssc, axis=1), multi)


def coverage_by_group(y_true, y_pred, groups, classes=None) -> dict:
    """Coverage, mean size (set size or interval width) and count within each group.

    Parameters
    ----------
    y_true : array-like of shape (n,)
    y_pred : intervals (float, (n, 2[, n_alpha])) or sets (bool, (n, n_classes[, n_alpha]))
        Intervals and sets are told apart by dtype: sets are boolean.
    groups : array-like of shape (n,)
        Any categorical value per row (site, subgroup, true class...).
    classes : array-like, default=None
        Labels of the set columns, as in :func:`classification_coverage_score`.

    Returns
    -------
    dict
        ``{group: {"n": int, "coverage": float | array, "size": float | array}}`` in sorted
        group order.

    Examples
    --------
    >>> import numpy as np
    >>> sets = np.array([[1, 0], [1, 1], [0, 1], [1, 0]], dtype=bool)
    >>> out = coverage_by_group(np.array([0, 1, 0, 0]), sets, groups=["a", "a", "b", "b"])
    >>> out["a"]["coverage"], out["b"]["coverage"], out["b"]["size"]
    (1.0, 0.5, 1.0)
    """
    pred = np.asarray(y_pred)
    g = np.asarray(groups).reshape(-1)
    if g.size != pred.shape[0]:
        raise ValueError(f"groups has {g.size} values for {pred.shape[0]} predictions")
    if pred.dtype == bool:
        hit, size, multi = _hits_sets(y_true, pred, classes)
    else:
        hit, size, multi = _hits_intervals(y_true, pred)
    out = {}
    for value in np.unique(g):
        m = g == value
        key = value.item() if isinstance(value, np.generic) else value
        out[key] = {"n": int(m.sum()), "coverage": _out(hit[m].mean(axis=0), multi),
                    "size": _out(size[m].mean(axis=0), multi)}
    return out
