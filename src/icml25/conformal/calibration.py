"""Choosing lambda: the paper's rule (bq), conformal risk control (crc), RCPS and split conformal.

A family of predictors is indexed by lambda and every calibration point's loss is monotone in
lambda. A lambda is *admissible* when

* ``bq``    Pr(L+(lambda) <= alpha) >= beta      (Snell & Griffiths, Eq. 31)
* ``crc``   E[L+(lambda)] = (sum_i l_i + B)/(n+1) <= alpha   (Angelopoulos et al.)
* ``rcps``  an upper confidence bound at level beta on the risk is <= alpha
            (Hoeffding, or Hoeffding–Bentkus as in Bates et al.)
* ``split`` 0/1 losses only: (#misses + 1)/(n + 1) <= alpha (split conformal prediction)

and the chosen lambda is the least conservative admissible one: the smallest when the risk
decreases in lambda, the largest when it increases. Monotone losses make admissibility monotone in
lambda (for bq via common random numbers), so the search is a bisection — on a grid (exact) or on
a continuous range — and it runs for many loss vectors (trials) at once.

When nothing is admissible the trivial predictor is returned (lambda = +inf for a decreasing risk,
-inf for an increasing one: infinite intervals, full sets) with an ``InfeasibleRiskWarning`` that
names the minimum calibration size.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np

from icml25.conformal._validation import DIRECTIONS, check_losses
from icml25.conformal.posterior import NotTwoValuedError, RiskPosterior
from icml25.conformal.rules import (
    RuleSpec,
    crc_bound,
    hoeffding_bentkus_pvalue,
    rcps_upper_bound,
)

__all__ = [
    "BatchCalibration",
    "CalibrationResult",
    "RuleSpec",
    "calibrate",
    "calibrate_many",
    "calibrate_scores",
    "calibrate_scores_spec",
    "calibrate_spec",
    "crc_bound",
    "hoeffding_bentkus_pvalue",
    "rcps_upper_bound",
]

# --------------------------------------------------------------------------- search engine
def _search_grid(ok: Callable[[np.ndarray, np.ndarray], np.ndarray], n_rows: int, n_grid: int,
                 decreasing: bool) -> np.ndarray:
    """Per row, the least conservative admissible grid index (-1 when none).

    ``ok(rows, idx)`` says whether grid index ``idx[j]`` is admissible for row ``rows[j]``.
    Admissibility is monotone: non-decreasing in the index for a decreasing risk.
    """
    def ok_std(rows, j):  # in "standard" coordinates admissibility grows with j
        return ok(rows, j if decreasing else n_grid - 1 - j)

    rows = np.arange(n_rows)
    last = ok_std(rows, np.full(n_rows, n_grid - 1))
    lo = np.full(n_rows, -1)  # known inadmissible (or before the grid)
    hi = np.full(n_rows, n_grid - 1)  # known admissible where `last`
    active = np.flatnonzero(last & (hi - lo > 1))
    while active.size:
        mid = (lo[active] + hi[active]) // 2
        good = ok_std(active, mid)
        hi[active[good]] = mid[good]
        lo[active[~good]] = mid[~good]
        active = active[hi[active] - lo[active] > 1]
    idx = np.where(last, hi, -1)
    if not decreasing:
        idx = np.where(idx >= 0, n_grid - 1 - idx, -1)
    return idx


def _search_continuous(ok: Callable[[np.ndarray, np.ndarray], np.ndarray], lo: np.ndarray,
                       hi: np.ndarray, decreasing: bool, tol: float,
                       max_iter: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """Bisection on [lo, hi] per row; returns (lambda on the admissible side, feasible)."""
    n_rows = lo.size
    rows = np.arange(n_rows)
    good_end, bad_end = (hi.copy(), lo.copy()) if decreasing else (lo.copy(), hi.copy())
    feasible = ok(rows, good_end)
    at_edge = ok(rows, bad_end) & feasible
    good_end[at_edge] = bad_end[at_edge]
    active = np.flatnonzero(feasible & ~at_edge)
    for _ in range(max_iter):
        active = active[np.abs(good_end[active] - bad_end[active]) > tol]
        if not active.size:
            break
        mid = 0.5 * (good_end[active] + bad_end[active])
        g = ok(active, mid)
        good_end[active[g]] = mid[g]
        bad_end[active[~g]] = mid[~g]
    return good_end, feasible


# --------------------------------------------------------------------------- public API
@dataclasses.dataclass
class CalibrationResult:
    """Outcome of :func:`calibrate`.

    Attributes
    ----------
    lambda_ : float
        The chosen lambda; ``+inf`` / ``-inf`` (the trivial predictor) when infeasible.
    feasible : bool
    posterior : RiskPosterior
        L+ at ``lambda_`` (at the most conservative lambda searched when infeasible).
    method, alpha, beta, bound, n, direction : the request and what was detected.
    statistic : float
        What the rule compared with alpha at ``lambda_`` (beta-quantile of L+, posterior mean,
        or the RCPS upper confidence bound).
    index : int or None
        Grid index of ``lambda_`` (None for a continuous search or when infeasible).
    min_n : int
        Smallest calibration size for which this request can succeed at all.

    Parameters
    ----------
    lambda_, feasible, posterior, method, alpha, beta, bound, n, direction, statistic, index, \
min_n
        The fields above, in that order; :func:`calibrate` builds the result.

    Examples
    --------
    >>> import numpy as np
    >>> from icml25.conformal import calibrate
    >>> s = np.random.default_rng(0).uniform(size=200)
    >>> grid = np.linspace(0, 1, 101)
    >>> res = calibrate(s[:, None] > grid[None, :], grid, alpha=0.1, method="crc")
    >>> round(res.lambda_, 2), res.feasible, res.n, res.direction, res.index
    (0.94, True, 200, 'decreasing', 94)
    """

    lambda_: float
    feasible: bool
    posterior: RiskPosterior
    method: str
    alpha: float
    beta: float
    bound: float
    n: int
    direction: str
    statistic: float
    index: int | None
    min_n: int

    def summary(self) -> dict:
        """JSON-able summary of the decision and the posterior at the chosen lambda."""
        post = self.posterior
        return {"method": self.method, "alpha": self.alpha, "beta": self.beta,
                "bound": self.bound, "n": self.n, "direction": self.direction,
                "lambda": self.lambda_, "feasible": self.feasible, "index": self.index,
                "statistic": self.statistic, "min_n": self.min_n,
                "posterior_mean": float(post.mean), "posterior_quantile": float(
                    post.quantile(self.beta)), "prob_below_alpha": float(post.cdf(self.alpha))}


def detect_direction(losses: np.ndarray, direction: str = "auto") -> str:
    """Check losses (n, L) are monotone along axis 1; return 'decreasing' or 'increasing'."""
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    d = np.diff(losses, axis=1)
    non_inc = bool((d <= 0).all())
    non_dec = bool((d >= 0).all())
    if direction == "auto":
        if non_inc:
            return "decreasing"
        if non_dec:
            return "increasing"
        up = np.argwhere(d > 0)[0]
        down = np.argwhere(d < 0)[0]
        raise ValueError(
            "losses are not monotone in lambda: point "
            f"{up[0]} rises between lambda index {up[1]} and {up[1] + 1} while point {down[0]} "
            f"falls between {down[1]} and {down[1] + 1}; the threshold rules need nested "
            "predictors (every loss non-increasing, or every loss non-decreasing, in lambda)")
    ok = non_inc if direction == "decreasing" else non_dec
    if not ok:
        bad = np.argwhere(d > 0 if direction == "decreasing" else d < 0)[0]
        raise ValueError(f"losses are declared {direction} in lambda but point {bad[0]} is not "
                         f"(between lambda index {bad[1]} and {bad[1] + 1})")
    return direction


def calibrate(losses, lambdas, alpha: float, beta: float = 0.95, method="bq",
              bound: float = 1.0, *, direction: str = "auto", concentration: str = "hb",
              n_draws: int = 10_000, random_state=0, exact: bool | None = None,
              tol: float = 1e-6, warn: bool = True) -> CalibrationResult:
    """Choose lambda from calibration losses.

    Parameters
    ----------
    losses : array (n, L) or callable
        ``losses[i, j]`` is calibration point i's loss at ``lambdas[j]``; or a function
        ``f(lam) -> (n,)`` losses, searched by bisection on the range ``lambdas = (lo, hi)``.
    lambdas : array (L,), strictly increasing, or a pair (lo, hi) for a callable
    alpha : float in (0, 1)
        Target risk.
    beta : float in (0, 1)
        Credibility (bq) or confidence (rcps); ignored by crc and split.
    method : {"bq", "crc", "rcps", "split"} or Rule
        A registered rule name or a :class:`~icml25.conformal.rules.Rule` instance.
    bound : float
        B, the largest possible loss.
    direction : {"auto", "decreasing", "increasing"}
        How the losses move with lambda (checked on a grid; detected at the ends otherwise).
    concentration : {"hb", "hoeffding"}
        Upper confidence bound used by rcps.
    n_draws, random_state, exact : Monte Carlo settings for bq (see :class:`RiskPosterior`).
    tol : float
        Bisection tolerance on lambda for a continuous range.
    warn : bool
        Emit ``InfeasibleRiskWarning`` when no lambda is admissible.

    Examples
    --------
    >>> import numpy as np
    >>> scores = np.random.default_rng(0).exponential(size=100)
    >>> grid = np.sort(scores)
    >>> res = calibrate(scores[:, None] > grid[None, :], grid, alpha=0.1)
    >>> res.feasible, res.method
    (True, 'bq')
    """
    spec = RuleSpec.make(method, alpha, beta, bound, concentration, n_draws, random_state, exact)
    return calibrate_spec(losses, lambdas, spec, direction=direction, tol=tol, warn=warn)


def calibrate_spec(losses, lambdas, spec: RuleSpec, *, direction: str = "auto",
                   tol: float = 1e-6, warn: bool = True) -> CalibrationResult:
    """:func:`calibrate` for an already validated request (no re-validation of the rule)."""
    if callable(losses):
        return _calibrate_continuous(losses, lambdas, spec, direction, tol, warn)
    arr = check_losses(losses, spec.bound, ndim=(2,))
    spec = _family_exactness(spec, arr)
    grid = np.asarray(lambdas, dtype=float)
    if grid.ndim != 1 or grid.size != arr.shape[1]:
        raise ValueError(f"lambdas must be 1-D with one value per column of losses "
                         f"({arr.shape[1]}), got shape {grid.shape}")
    if np.isnan(grid).any() or (np.diff(grid) <= 0).any():
        raise ValueError("lambdas must be strictly increasing and free of NaN")
    way = detect_direction(arr, direction)

    def ok(rows, idx):
        return spec.admissible(arr[:, idx].T)

    idx = int(_search_grid(ok, 1, grid.size, way == "decreasing")[0])
    return _result(spec, arr, idx, grid, way, warn)


def _family_exactness(spec: RuleSpec, arr: np.ndarray) -> RuleSpec:
    """Use the closed form only if *every* loss of the family is 0 or B.

    Mixing closed-form rows with Monte Carlo rows (e.g. an all-zero loss vector at the largest
    lambda of a general family) would break the monotonicity in lambda that common random numbers
    guarantee, so a family that is not 0/B throughout is handled by Monte Carlo everywhere.
    """
    if spec.exact is not None:
        return spec
    binary = bool(np.isin(arr, (0.0, spec.bound)).all())
    return dataclasses.replace(spec, exact=None if binary else False)


def _result(spec: RuleSpec, arr: np.ndarray, idx: int, grid: np.ndarray, way: str,
            warn: bool, on_grid: bool = True) -> CalibrationResult:
    n = arr.shape[0]
    feasible = idx >= 0
    if feasible:
        lam, col = float(grid[idx]), idx
    else:
        lam = math.inf if way == "decreasing" else -math.inf
        col = grid.size - 1 if way == "decreasing" else 0
        if warn:
            spec.warn_infeasible(n, _trivial_text(lam), stacklevel=4)
    at = arr[:, col][None, :]
    return CalibrationResult(
        lambda_=lam, feasible=feasible, posterior=spec.posterior(arr[:, col]),
        method=spec.method, alpha=spec.alpha, beta=spec.beta, bound=spec.bound, n=n,
        direction=way, statistic=float(spec.statistic(at)[0]),
        index=col if feasible and on_grid else None, min_n=spec.min_n)


def _trivial_text(lam: float) -> str:
    return f"lambda={lam}: infinite interval / full prediction set"


def _calibrate_continuous(fn, lambdas, spec: RuleSpec, direction: str, tol: float,
                          warn: bool) -> CalibrationResult:
    try:
        lo, hi = (float(v) for v in lambdas)
    except (TypeError, ValueError):
        raise ValueError("with a loss function, lambdas must be a pair (lo, hi)") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"need a finite range lo < hi, got ({lo}, {hi})")
    if not tol > 0:
        raise ValueError(f"tol must be positive, got {tol}")

    def losses_at(lam: float) -> np.ndarray:
        return check_losses(fn(lam), spec.bound, ndim=(1,), name=f"losses at lambda={lam:g}")

    ends = np.stack([losses_at(lo), losses_at(hi)], axis=1)
    way = detect_direction(ends, direction)
    if spec.exact is None:
        # A family that is 0/B at both ends is tried in closed form; if a loss vector inside the
        # range is not 0/B, the whole search is redone by Monte Carlo (never a mix of the two).
        binary = bool(np.isin(ends, (0.0, spec.bound)).all())
        if binary:
            try:
                return _search_range(dataclasses.replace(spec, exact=True), losses_at, lo, hi,
                                     way, tol, warn)
            except NotTwoValuedError:
                pass
        spec = dataclasses.replace(spec, exact=False)
    return _search_range(spec, losses_at, lo, hi, way, tol, warn)


def _search_range(spec: RuleSpec, losses_at, lo: float, hi: float, way: str, tol: float,
                  warn: bool) -> CalibrationResult:
    def ok(rows, lam):
        return spec.admissible(np.stack([losses_at(float(v)) for v in lam]))

    lam, feasible = _search_continuous(ok, np.array([lo]), np.array([hi]),
                                       way == "decreasing", tol)
    if feasible[0]:
        arr = losses_at(float(lam[0]))[:, None]
        return _result(spec, arr, 0, np.array([lam[0]]), way, warn, on_grid=False)
    edge = hi if way == "decreasing" else lo
    arr = losses_at(edge)[:, None]
    return _result(spec, arr, -1, np.array([edge]), way, warn, on_grid=False)


@dataclasses.dataclass
class BatchCalibration:
    """Outcome of :func:`calibrate_many`: one lambda per loss vector (trial).

    Parameters
    ----------
    lambdas : ndarray of shape (n_rows,)
        Chosen lambda per row (+-inf where infeasible).
    feasible : ndarray of bool, shape (n_rows,)
        Whether each row certified a lambda.
    index : ndarray of int, shape (n_rows,)
        Grid index per row (-1 where infeasible; absent for a continuous search).
    method : str
        The rule's name.
    direction : str
        ``"decreasing"`` or ``"increasing"``.

    Examples
    --------
    >>> import numpy as np
    >>> from icml25.conformal import BatchCalibration
    >>> b = BatchCalibration(np.array([0.9, np.inf]), np.array([True, False]),
    ...                      np.array([90, -1]), "crc", "decreasing")
    >>> int(b.feasible.sum()), b.method
    (1, 'crc')
    """

    lambdas: np.ndarray  # chosen lambda per row (+-inf where infeasible)
    feasible: np.ndarray
    index: np.ndarray  # grid index per row (-1 where infeasible; absent for continuous)
    method: str
    direction: str


def calibrate_many(loss_fn: Callable[[np.ndarray, np.ndarray], np.ndarray], lambdas,
                   n_rows: int, alpha: float, beta: float = 0.95, method="bq",
                   bound: float = 1.0, *, direction: str = "decreasing",
                   concentration: str = "hb", n_draws: int = 10_000, random_state=0,
                   exact: bool | None = None, variant: str = "paper",
                   tol: float | None = None) -> BatchCalibration:
    """Vectorised threshold search for many calibration sets at once (trials x lambdas).

    ``loss_fn(rows, idx)`` returns the (len(rows), n) losses of calibration sets ``rows`` at grid
    indices ``idx`` (one per row) when ``lambdas`` is a grid of shape (L,) or (n_rows, L); with
    ``tol`` set, ``lambdas`` is a range (lo, hi) (scalars or per-row arrays) and ``loss_fn``
    receives lambda *values*. Each bisection step evaluates one lambda per still-undecided row,
    so the cost is O(log L) vectorised evaluations, with the common random numbers shared by all
    rows. Direction must be declared (it cannot be checked on a function); no warnings are raised.
    ``exact=None`` decides per loss vector; pass ``exact=False`` unless every loss of the family
    is 0 or B (mixing closed-form and Monte Carlo rows breaks monotonicity in lambda).

    Parameters
    ----------
    loss_fn : callable
        ``loss_fn(rows, idx) -> (len(rows), n)`` losses in [0, bound] (``idx``: grid indices,
        or lambda values when ``tol`` is set).
    lambdas : array-like of shape (L,) or (n_rows, L), or a pair (lo, hi)
        Sorted grid of candidates, shared or per row; a range when ``tol`` is set.
    n_rows : int
        Number of calibration sets (trials).
    alpha : float in (0, 1)
        Risk level.
    beta : float in (0, 1), default=0.95
        Credibility / confidence of the rules that use it.
    method : str or Rule, default="bq"
        The threshold rule (see :func:`get_rule`).
    bound : float, default=1.0
        Upper bound B of the losses.
    direction : {"decreasing", "increasing"}, default="decreasing"
        How the losses move as lambda grows (declared, not checked).
    concentration : {"hb", "hoeffding"}, default="hb"
        Concentration bound of RCPS.
    n_draws : int, default=10000
        Monte Carlo draws of the posterior.
    random_state : int, default=0
        Seed of the common random numbers.
    exact : bool or None, default=None
        Exact posterior: forced, forbidden, or decided per loss vector.
    variant : {"paper", "official"}, default="paper"
        Indexing of the loss bound.
    tol : float or None, default=None
        Bisection tolerance on a continuous range (None: search the grid).

    Returns
    -------
    BatchCalibration
        One lambda per row.

    Raises
    ------
    ValueError
        For an invalid request (level, bound, method, direction, grid shape).

    Examples
    --------
    >>> import numpy as np
    >>> from icml25.conformal import calibrate_many
    >>> s = np.random.default_rng(0).uniform(size=(4, 200))       # 4 calibration sets
    >>> grid = np.linspace(0, 1, 101)
    >>> def loss(rows, idx):                                   # miss: score above lambda
    ...     return (s[rows] > grid[idx][:, None]).astype(float)
    >>> out = calibrate_many(loss, grid, 4, alpha=0.1, method="crc")
    >>> out.lambdas.round(2), out.index
    (array([0.94, 0.91, 0.9 , 0.92]), array([94, 91, 90, 92]))
    """
    spec = RuleSpec.make(method, alpha, beta, bound, concentration, n_draws, random_state,
                         exact, variant)
    if direction not in ("decreasing", "increasing"):
        raise ValueError("calibrate_many needs direction='decreasing' or 'increasing'")
    dec = direction == "decreasing"

    def ok(rows, arg):
        return spec.admissible(np.asarray(loss_fn(rows, arg), dtype=float))

    if tol is not None:
        lo, hi = (np.broadcast_to(np.asarray(v, dtype=float), (n_rows,)).copy()
                  for v in lambdas)
        lam, feasible = _search_continuous(ok, lo, hi, dec, tol)
        lam = np.where(feasible, lam, np.inf if dec else -np.inf)
        return BatchCalibration(lam, feasible, np.full(n_rows, -1), spec.method, direction)
    grid = np.asarray(lambdas, dtype=float)
    n_grid = grid.shape[-1]
    idx = _search_grid(ok, n_rows, n_grid, dec)
    feasible = idx >= 0
    safe = np.maximum(idx, 0)
    vals = grid[safe] if grid.ndim == 1 else grid[np.arange(n_rows), safe]
    lam = np.where(feasible, vals, np.inf if dec else -np.inf)
    return BatchCalibration(lam, feasible, idx, spec.method, direction)


def calibrate_scores(scores, alpha: float, beta: float = 0.95, method="bq",
                     bound: float = 1.0, *, concentration: str = "hb", n_draws: int = 10_000,
                     random_state=0, warn: bool = True) -> CalibrationResult:
    """Threshold on nonconformity scores: predict {y : score(x, y) <= lambda}.

    The loss is miscoverage, 1{s_i > lambda}, which falls as lambda grows; the search runs over
    the sorted distinct scores (where the losses jump), so it is exact. ``method="split"`` is the
    classical rule: lambda = the ceil((n+1)(1-alpha))-th smallest score (+inf if that exceeds n),
    which coincides with ``crc`` for these losses. ``method`` is a name or a :class:`Rule`.

    Parameters
    ----------
    scores : array-like of shape (n,)
        Nonconformity scores of the calibration points (e.g. ``|y - y_hat|``).
    alpha : float
        Target risk (miscoverage), in (0, 1).
    beta : float, default=0.95
        Credibility (``bq``) or confidence (``rcps``) of the guarantee.
    method : str or Rule, default="bq"
        ``"bq"``, ``"crc"``, ``"rcps"``, ``"split"`` or a registered :class:`Rule`.
    bound : float, default=1.0
        Upper bound B of the loss.
    concentration : {"hb", "hoeffding"}, default="hb"
        The RCPS bound (Hoeffding–Bentkus or Hoeffding).
    n_draws : int, default=10_000
        Monte Carlo draws where the posterior has no closed form.
    random_state : int, Generator or None, default=0
        Seeds the Monte Carlo draws.
    warn : bool, default=True
        Emit :class:`InfeasibleRiskWarning` when no finite threshold is admissible.

    Returns
    -------
    CalibrationResult
        ``lambda_`` (``inf`` when infeasible: the trivial predictor), ``feasible``,
        ``statistic`` and the risk ``posterior`` at the chosen threshold.

    Raises
    ------
    ValueError
        If ``alpha`` or ``beta`` is outside (0, 1), the scores are not finite, or ``method``
        is not a registered rule (the message lists them).

    Warns
    -----
    InfeasibleRiskWarning
        When the calibration set is too small for the request (it names the minimum n).

    Examples
    --------
    >>> import numpy as np
    >>> scores = np.abs(np.random.default_rng(0).normal(size=200))
    >>> res = calibrate_scores(scores, alpha=0.1, beta=0.95, method="bq")
    >>> round(res.lambda_, 3), res.feasible
    (1.802, True)
    >>> round(calibrate_scores(scores, alpha=0.1, method="split").lambda_, 3)  # narrower
    1.514
    """
    spec = RuleSpec.make(method, alpha, beta, bound, concentration, n_draws, random_state)
    return calibrate_scores_spec(scores, spec, warn=warn, stacklevel=5)


def calibrate_scores_spec(scores, spec: RuleSpec, *, warn: bool = True, where: str = "",
                          stacklevel: int = 5) -> CalibrationResult:
    """:func:`calibrate_scores` for an already validated request (no re-validation)."""
    s = np.asarray(scores, dtype=float)
    if s.ndim != 1 or s.size == 0:
        raise ValueError(f"scores must be a non-empty 1-D array, got shape {s.shape}")
    if np.isnan(s).any():
        raise ValueError("scores contain NaN")
    if spec.bound != 1.0:  # 0/1 losses are a 0/B family only when B = 1
        spec = dataclasses.replace(spec, exact=False)
    fast = spec.rule.threshold_scores(np.sort(s), spec)
    if fast is not None:
        lam, index = fast
        return _scores_result(spec, s, lam, index, warn, where, stacklevel)
    grid = np.unique(s)

    def ok(rows, idx):
        return spec.admissible((s[None, :] > grid[idx][:, None]).astype(float))

    idx = int(_search_grid(ok, 1, grid.size, True)[0])
    if idx < 0:
        return _scores_result(spec, s, math.inf, None, warn, where, stacklevel)
    return _scores_result(spec, s, float(grid[idx]), idx, warn, where, stacklevel)


def _scores_result(spec: RuleSpec, s: np.ndarray, lam: float, index: int | None,
                   warn: bool, where: str, stacklevel: int) -> CalibrationResult:
    n = s.size
    feasible = math.isfinite(lam)
    if not feasible and warn:
        spec.warn_infeasible(n, _trivial_text(lam), stacklevel=stacklevel, where=where)
    losses = (s > (lam if feasible else s.max())).astype(float)
    return CalibrationResult(
        lambda_=lam, feasible=feasible, posterior=spec.posterior(losses), method=spec.method,
        alpha=spec.alpha, beta=spec.beta, bound=spec.bound, n=n, direction="decreasing",
        statistic=float(spec.statistic(losses[None, :])[0]), index=index, min_n=spec.min_n)
