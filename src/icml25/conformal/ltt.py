"""Learn-then-test (Angelopoulos, Bates, Candes, Jordan & Lei 2021): risks need not be monotone.

The threshold rules of :mod:`~icml25.conformal.rules` need every loss to be monotone in lambda.
Precision at a score threshold is not: raising the threshold can lower precision. LTT drops the
assumption. For each candidate lambda_j it tests H0_j: R(lambda_j) > alpha with a valid p-value
from the calibration data, and controls the family-wise error over all candidates with a
multiple-testing procedure; every rejected lambda is certified, jointly:

    Pr( some certified lambda has R(lambda) > alpha ) <= delta.

p-values: ``"binomial"`` (exact, for 0/1 losses: Pr(Binomial(n_j, alpha) <= errors_j)),
``"hb"`` (Hoeffding-Bentkus, any loss in [0, B]), ``"auto"`` (binomial where the losses are 0/1).
A loss may be NaN where it does not apply at that lambda (precision: a point not predicted
positive); the test of lambda_j then uses the n_j points where it applies, which is valid
conditionally on which points those are (given the scores, their labels stay i.i.d.).

Procedures: ``"bonferroni"`` (reject p_j <= delta / m), ``"holm"`` (step-down), and
``"fixed_sequence"`` (test in a fixed order chosen before seeing the data, each at level delta,
stop at the first failure: no penalty for many candidates when the order is good).

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> s = rng.uniform(size=2_000)
>>> y = rng.uniform(size=2_000) < 0.3 + 0.6 * s            # precision rises with the threshold
>>> ctl = PrecisionController(alpha=0.2, delta=0.1).fit(s, y)
>>> bool(2 / 3 <= ctl.lambda_ < 0.9)      # the true precision reaches 0.8 at lambda = 2/3
True
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from icml25.conformal._validation import check_bound, check_level
from icml25.conformal.rules import hoeffding_bentkus_pvalue

__all__ = ["PROCEDURES", "LearnThenTest", "PrecisionController", "fwer_control",
           "ltt_pvalues"]

PROCEDURES = ("fixed_sequence", "bonferroni", "holm")
PVALUES = ("auto", "binomial", "hb")


def ltt_pvalues(losses, alpha: float, bound: float = 1.0, pvalue: str = "auto") -> np.ndarray:
    """p-value of H0_j: R(lambda_j) > alpha for each column j of ``losses`` (n, m).

    NaN entries are left out of that column's test; a column with no applicable point gets 1.

    Parameters
    ----------
    losses : array-like of shape (n, m) or (n,)
        Loss of each calibration point (rows) at each candidate lambda (columns), in [0, B];
        NaN: not applicable.
    alpha : float in (0, 1)
        Risk level of the nulls R(lambda_j) > alpha.
    bound : float, default=1.0
        B, the upper bound of the losses.
    pvalue : {"auto", "binomial", "hb"}, default="auto"
        ``binomial``: exact, for 0/B losses; ``hb``: Hoeffding-Bentkus, any loss in [0, B];
        ``auto``: binomial where the losses are 0/B, else hb.

    Returns
    -------
    ndarray of shape (m,)
        One p-value per candidate (small: the risk is certainly <= alpha).

    Raises
    ------
    ValueError
        For losses outside [0, B], an empty or non-2-D array, an unknown ``pvalue``, or
        ``binomial`` with losses that are not 0/B.

    Examples
    --------
    >>> import numpy as np
    >>> from icml25.conformal import ltt_pvalues
    >>> losses = np.array([[0, 0, 1], [0, 1, 1], [0, 0, 1], [0, 0, 0]] * 50, dtype=float)
    >>> ltt_pvalues(losses, alpha=0.3).round(3)        # risks 0, 0.25, 0.75
    array([0.  , 0.07, 1.  ])
    """
    alpha = check_level(alpha, "alpha")
    bound = check_bound(bound)
    if pvalue not in PVALUES:
        raise ValueError(f"pvalue must be one of {PVALUES}, got {pvalue!r}")
    arr = np.asarray(losses, dtype=float)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] == 0:
        raise ValueError(f"losses must be a non-empty (n, m) array, got shape {arr.shape}")
    ok = ~np.isnan(arr)
    if np.any((arr[ok] < 0) | (arr[ok] > bound)):
        raise ValueError(f"losses must lie in [0, B] = [0, {bound:g}] (NaN: not applicable)")
    n_j = ok.sum(axis=0)
    total = np.where(ok, arr, 0.0).sum(axis=0)
    zero_one = bool(np.all((arr[ok] == 0) | (arr[ok] == bound)))
    use_binomial = pvalue == "binomial" or (pvalue == "auto" and zero_one)
    if pvalue == "binomial" and not zero_one:
        raise ValueError("pvalue='binomial' needs 0/B losses; use 'hb' for general losses")
    p = np.ones(arr.shape[1])
    has = n_j > 0
    if use_binomial:
        k = np.round(total / bound).astype(int)
        p[has] = stats.binom.cdf(k[has], n_j[has], alpha / bound)
    else:
        mean = total[has] / n_j[has] / bound
        p[has] = np.array([float(hoeffding_bentkus_pvalue(m, alpha / bound, int(n)))
                           for m, n in zip(mean, n_j[has], strict=True)])
    return np.minimum(p, 1.0)


def fwer_control(p_values, delta: float, procedure: str = "fixed_sequence",
                 order=None) -> np.ndarray:
    """Boolean mask of rejected nulls (certified candidates) at family-wise error ``delta``.

    Parameters
    ----------
    p_values : array-like of shape (m,)
        One p-value per candidate.
    delta : float in (0, 1)
        Family-wise error level.
    procedure : {"fixed_sequence", "bonferroni", "holm"}, default="fixed_sequence"
        The multiple-testing procedure.
    order : array-like of int or None, default=None
        Fixed sequence only: a permutation of the indices in testing order, fixed before
        seeing the data (None: the given order of the candidates).

    Returns
    -------
    ndarray of bool, shape (m,)
        True where the null is rejected (the candidate is certified).

    Raises
    ------
    ValueError
        For an unknown procedure, ``delta`` outside (0, 1), or an ``order`` that is not a
        permutation.

    Examples
    --------
    >>> from icml25.conformal import fwer_control
    >>> fwer_control([0.01, 0.2, 0.03], delta=0.05)               # stops at the 2nd test
    array([ True, False, False])
    >>> fwer_control([0.01, 0.2, 0.03], delta=0.05, order=[0, 2, 1])
    array([ True, False,  True])
    >>> fwer_control([0.01, 0.2, 0.03], delta=0.05, procedure="holm")
    array([ True, False, False])
    """
    delta = check_level(delta, "delta")
    if procedure not in PROCEDURES:
        raise ValueError(f"procedure must be one of {PROCEDURES}, got {procedure!r}")
    p = np.asarray(p_values, dtype=float).reshape(-1)
    m = p.size
    out = np.zeros(m, dtype=bool)
    if m == 0:
        return out
    if procedure == "bonferroni":
        return p <= delta / m
    if procedure == "holm":
        srt = np.argsort(p, kind="stable")
        ok = p[srt] <= delta / (m - np.arange(m))
        stop = m if ok.all() else int(np.argmin(ok))
        out[srt[:stop]] = True
        return out
    seq = np.arange(m) if order is None else np.asarray(order, dtype=int).reshape(-1)
    if seq.size != m or np.unique(seq).size != m or seq.min() < 0 or seq.max() >= m:
        raise ValueError("order must be a permutation of the candidate indices")
    ok = p[seq] <= delta
    stop = m if ok.all() else int(np.argmin(ok))
    out[seq[:stop]] = True
    return out


class LearnThenTest:
    """Certify the lambdas whose risk is <= alpha, jointly with probability >= 1 - delta.

    ``fit(losses, lambdas)``: ``losses`` is (n calibration points, m candidates) in [0, B]
    (NaN: not applicable). After fitting: ``p_values_``, ``valid_`` (mask), ``valid_lambdas_``,
    and ``lambda_``, the certified candidate picked by ``select`` ("min", "max", or "first" in
    testing order); ``lambda_`` is None when nothing is certified (with a warning).

    Parameters
    ----------
    alpha : float in (0, 1), default=0.1
        Risk level to certify.
    delta : float in (0, 1), default=0.1
        Family-wise error level.
    procedure : {"fixed_sequence", "bonferroni", "holm"}, default="fixed_sequence"
        Multiple-testing procedure (see :func:`fwer_control`).
    pvalue : {"auto", "binomial", "hb"}, default="auto"
        p-value of each candidate (see :func:`ltt_pvalues`).
    bound : float, default=1.0
        Upper bound B of the losses.
    select : {"first", "min", "max"}, default="first"
        Which certified lambda becomes ``lambda_``.

    Attributes
    ----------
    lambdas_ : ndarray of shape (m,)
        The candidates.
    p_values_ : ndarray of shape (m,)
        One p-value per candidate.
    valid_ : ndarray of bool, shape (m,)
        The certified candidates.
    valid_lambdas_ : ndarray
        ``lambdas_[valid_]``.
    lambda_ : float or None
        The selected certified lambda (None when none is certified).

    Raises
    ------
    ValueError
        From ``fit``: an unknown ``select``, or ``losses`` not of shape (n, len(lambdas)).

    Warns
    -----
    InfeasibleRiskWarning
        From ``fit``, when no lambda is certified.

    Examples
    --------
    >>> import numpy as np
    >>> from icml25.conformal import LearnThenTest
    >>> losses = np.array([[0, 0, 1], [0, 1, 1], [0, 0, 1], [0, 0, 0]] * 50, dtype=float)
    >>> ltt = LearnThenTest(alpha=0.3, delta=0.1).fit(losses, [0.1, 0.2, 0.3])
    >>> ltt.valid_, ltt.lambda_
    (array([ True,  True, False]), 0.1)
    """

    def __init__(self, alpha: float = 0.1, delta: float = 0.1, *,
                 procedure: str = "fixed_sequence", pvalue: str = "auto", bound: float = 1.0,
                 select: str = "first"):
        self.alpha = alpha
        self.delta = delta
        self.procedure = procedure
        self.pvalue = pvalue
        self.bound = bound
        self.select = select

    def fit(self, losses, lambdas, order=None) -> LearnThenTest:
        from icml25.conformal._validation import InfeasibleRiskWarning

        if self.select not in ("first", "min", "max"):
            raise ValueError(f"select must be 'first', 'min' or 'max', got {self.select!r}")
        lam = np.asarray(lambdas, dtype=float).reshape(-1)
        arr = np.asarray(losses, dtype=float)
        if arr.ndim != 2 or arr.shape[1] != lam.size:
            raise ValueError(f"losses must be (n, m) with one column per lambda ({lam.size}), "
                             f"got shape {arr.shape}")
        self.lambdas_ = lam
        self.p_values_ = ltt_pvalues(arr, self.alpha, self.bound, self.pvalue)
        self.valid_ = fwer_control(self.p_values_, self.delta, self.procedure, order)
        self.valid_lambdas_ = lam[self.valid_]
        if not self.valid_.any():
            import warnings

            warnings.warn(f"learn-then-test certified no lambda at risk <= alpha={self.alpha:g} "
                          f"with delta={self.delta:g} ({self.procedure}); collect more "
                          "calibration data or relax alpha / delta", InfeasibleRiskWarning,
                          stacklevel=2)
            self.lambda_ = None
            return self
        if self.select == "min":
            self.lambda_ = float(self.valid_lambdas_.min())
        elif self.select == "max":
            self.lambda_ = float(self.valid_lambdas_.max())
        else:
            seq = np.arange(lam.size) if order is None else np.asarray(order, dtype=int)
            self.lambda_ = float(lam[seq[self.valid_[seq]][0]])
        return self


class PrecisionController:
    """A score threshold whose precision is >= 1 - alpha, with probability >= 1 - delta.

    Predict positive when ``score >= lambda``. Precision is not monotone in the threshold, so
    the threshold comes from learn-then-test on the candidate grid (default: ``n_lambdas``
    quantiles of the calibration scores), testing from the highest threshold down
    (fixed sequence) or with Bonferroni / Holm, and keeping the lowest certified threshold (the
    most positives). The loss of a calibration point at lambda is 1{y = 0} if it is predicted
    positive, not applicable otherwise.

    Parameters
    ----------
    alpha : float in (0, 1), default=0.1
        Tolerated false-discovery share: precision >= 1 - alpha.
    delta : float in (0, 1), default=0.1
        Family-wise error level.
    procedure : {"bonferroni", "holm", "fixed_sequence"}, default="bonferroni"
        Multiple-testing procedure (fixed sequence tests from the highest threshold down).
    lambdas : array-like or None, default=None
        Candidate thresholds (None: ``n_lambdas`` quantiles of the calibration scores).
    n_lambdas : int, default=50
        Size of the default grid.

    Attributes
    ----------
    lambda_ : float
        The lowest certified threshold (+inf when none is certified).
    lambdas_ : ndarray
        The candidate grid.
    ltt_ : LearnThenTest
        The fitted test (p-values, certified mask).

    Raises
    ------
    ValueError
        From ``fit``: scores and labels of different lengths or empty, NaN scores, or labels
        that are not binary.

    Examples
    --------
    >>> import numpy as np
    >>> from icml25.conformal import PrecisionController
    >>> rng = np.random.default_rng(0)
    >>> s = rng.uniform(size=2_000)
    >>> y = rng.uniform(size=2_000) < 0.3 + 0.6 * s
    >>> ctl = PrecisionController(alpha=0.2, delta=0.1).fit(s, y)
    >>> bool(2 / 3 <= ctl.lambda_ < 0.9)      # the true precision reaches 0.8 at lambda = 2/3
    True
    >>> ctl.predict([0.5, 0.95]).tolist()
    [False, True]
    """

    def __init__(self, alpha: float = 0.1, delta: float = 0.1, *,
                 procedure: str = "bonferroni", lambdas=None, n_lambdas: int = 50):
        self.alpha = alpha
        self.delta = delta
        self.procedure = procedure
        self.lambdas = lambdas
        self.n_lambdas = n_lambdas

    def fit(self, scores, labels) -> PrecisionController:
        s = np.asarray(scores, dtype=float).reshape(-1)
        y = np.asarray(labels).reshape(-1)
        if s.size != y.size or s.size == 0:
            raise ValueError(f"scores and labels must be non-empty and of equal length, got "
                             f"{s.size} and {y.size}")
        if np.isnan(s).any():
            raise ValueError("scores contain NaN")
        if not np.isin(y, (0, 1, True, False)).all():
            raise ValueError("labels must be binary (0/1 or bool)")
        y = y.astype(bool)
        if self.lambdas is None:
            lam = np.unique(np.quantile(s, np.linspace(0, 1, int(self.n_lambdas) + 1)[:-1]))
        else:
            lam = np.unique(np.asarray(self.lambdas, dtype=float))
        predicted = s[:, None] >= lam[None, :]
        losses = np.where(predicted, (~y)[:, None].astype(float), np.nan)
        order = np.arange(lam.size)[::-1]  # from the strictest threshold down
        self.ltt_ = LearnThenTest(self.alpha, self.delta, procedure=self.procedure,
                                  select="min").fit(losses, lam, order=order)
        self.lambdas_ = lam
        self.lambda_ = math.inf if self.ltt_.lambda_ is None else self.ltt_.lambda_
        return self

    def predict(self, scores) -> np.ndarray:
        """True where the score clears the certified threshold (never, if none was)."""
        return np.asarray(scores, dtype=float) >= self.lambda_
