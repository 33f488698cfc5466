"""Budget allocation across the levers the paper compares, and welfare beyond recall.

The paper weighs two levers one step at a time (the PAR): screening more people (capacity
``alpha``) or predicting better (R^2). A planner with a budget asks a different question: how
much to spend on each lever, and what a lever would have to cost to be worth its place. This
module answers it on the user's own outcomes and predictions.

Levers (a registry, :data:`LEVERS`), each moved by an amount ``theta`` at ``unit_cost`` per
unit of ``theta``:

* ``"capacity"`` - wider screening: ``alpha + theta`` (``theta`` a fraction of the population;
  the unit cost is the cost of screening the whole population once more, i.e. ``n`` times the
  cost per person);
* ``"prediction"`` - a better model: the residuals shrink so that R^2 rises by ``theta``
  (:func:`~icml25.worstoff.empirical.improve_predictions`, the paper's "slightly better
  model");
* ``"subgroup"`` - a better model for one subgroup only (e.g. better data for one region):
  only the subgroup's residuals shrink, raising the overall R^2 by ``theta``.

Objectives (:data:`OBJECTIVES`): ``"recall"`` (the paper's value: the share of the worst
``beta`` fraction that is screened) and ``"crra"`` (the mean welfare gain of giving each
screened person a transfer ``benefit``, valued by a CRRA utility
``u(c) = c^(1 - rho) / (1 - rho)``, ``log c`` at ``rho = 1``: ``sum_screened [u(y + b) - u(y)] /
n``; the outcome must be positive, like income or consumption). CRRA values a transfer more
the poorer the person, so it rewards screening the very poorest first, not only catching the
bottom ``beta``.

Predictions are recalibrated onto the outcome's scale first (least squares of ``y`` on
``yhat``), as everywhere in this room, and screening breaks ties at random (expected welfare).
This follows the lever/budget framing of the authors' follow-up toolkit ``rvp`` (relative value
of prediction); the code is ours.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Mapping

import numpy as np

from icml25.worstoff._validation import check_fraction, check_outcomes, check_positive

__all__ = ["LEVERS", "OBJECTIVES", "BudgetAllocation", "allocate_budget", "crra_gain",
           "screening_welfare"]

LEVERS = ("capacity", "prediction", "subgroup")


def crra_gain(y, benefit: float, rho: float) -> np.ndarray:
    """Per-person CRRA welfare gain ``u(y + benefit) - u(y)`` of a transfer.

    Parameters
    ----------
    y : array-like of shape (n,)
        Positive outcomes (income, consumption).
    benefit : float
        The transfer, in the outcome's units (> 0).
    rho : float
        Relative risk aversion (>= 0; 0 is linear, so every screened person gains
        ``benefit``; 1 is log utility).

    Returns
    -------
    numpy.ndarray of shape (n,)

    Raises
    ------
    ValueError
        If an outcome is not positive, or ``benefit`` / ``rho`` are out of range.

    Examples
    --------
    >>> [round(float(g), 4) for g in crra_gain([1.0, 10.0], benefit=1.0, rho=1.0)]
    [0.6931, 0.0953]
    """
    y = np.asarray(y, dtype=float)
    b = float(check_positive("benefit", benefit))
    rho = float(rho)
    if not (np.isfinite(rho) and rho >= 0):
        raise ValueError(f"rho must be a finite number >= 0, got {rho!r}")
    if not np.all(y > 0):
        raise ValueError("the CRRA objective needs positive outcomes (income, consumption); "
                         f"the smallest is {float(y.min()):g}")
    if abs(rho - 1.0) < 1e-12:
        return np.log1p(b / y)
    e = 1.0 - rho
    return ((y + b) ** e - y ** e) / e


def _membership(keys: np.ndarray, fraction: float) -> np.ndarray:
    from icml25.worstoff.empirical import _bottom_weights

    return _bottom_weights(keys, min(max(fraction, 0.0), 1.0))


def _recall_gain(y: np.ndarray, beta: float) -> np.ndarray:
    """Per-person gain whose screened sum is the recall: 1 / (beta n) for the worst-off."""
    return _membership(y, beta) / (beta * y.size)


OBJECTIVES: dict[str, Callable[..., np.ndarray]] = {
    "recall": lambda y, *, beta, **_: _recall_gain(y, beta),
    "crra": lambda y, *, benefit, rho, **_: crra_gain(y, benefit, rho) / y.size,
}


def screening_welfare(y, yhat, alpha, *, objective: str = "recall", beta: float = 0.2,
                      benefit: float = 1.0, rho: float = 2.0) -> float:
    """Expected welfare of screening the ``alpha`` fraction with the lowest predictions.

    Parameters
    ----------
    y, yhat : array-like of shape (n,)
        Outcomes (lower is worse) and predictions.
    alpha : float
        Capacity, in [0, 1].
    objective : {"recall", "crra"}, default="recall"
        The paper's recall on the worst ``beta`` fraction, or the mean CRRA gain of a
        ``benefit`` transfer to everyone screened.
    beta : float, default=0.2
        The worst-off fraction (``"recall"``).
    benefit, rho : float
        Transfer and risk aversion (``"crra"``).

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> y = np.arange(1.0, 11.0)
    >>> screening_welfare(y, y, 0.2, beta=0.2)
    1.0
    """
    y, yhat = check_outcomes(y, yhat)
    gain = _objective(objective)(y, beta=beta, benefit=benefit, rho=rho)
    a = float(check_fraction("alpha", alpha, low_open=False, high_open=False))
    return float(np.dot(_membership(yhat, a), gain))


def _objective(name: str):
    if name not in OBJECTIVES:
        raise ValueError(f"objective must be one of {tuple(OBJECTIVES)}, got {name!r}")
    return OBJECTIVES[name]


@dataclasses.dataclass
class BudgetAllocation:
    """The best split of a budget over the levers, and what each lever is worth.

    Attributes
    ----------
    levers : list of str
        The levers considered (those with a cost).
    unit_costs : dict
        Cost per unit of each lever's ``theta``.
    budget : float
    spend, theta : dict
        The best split: money and the lever amount it buys, per lever.
    welfare, baseline_welfare : float
        Welfare with the best split and with no spending.
    single_lever_welfare : dict
        Welfare when the whole budget goes to one lever.
    equivalent_cost : dict
        Per lever, what it alone must be given to reach ``welfare`` (``inf`` when it cannot,
        e.g. a model already at its best): the cost at which it matches the best split. A
        lever whose equivalent cost is far above the budget is a poor buy at its price.
    objective : str
    alpha : float
    """

    levers: list[str]
    unit_costs: dict
    budget: float
    spend: dict
    theta: dict
    welfare: float
    baseline_welfare: float
    single_lever_welfare: dict
    equivalent_cost: dict
    objective: str
    alpha: float
    recalibration: dict

    def to_dict(self) -> dict:
        """JSON-ready dict (``inf`` becomes None)."""
        def clean(v):
            if isinstance(v, dict):
                return {k: clean(x) for k, x in v.items()}
            if isinstance(v, float) and not np.isfinite(v):
                return None
            return v

        return {f.name: clean(getattr(self, f.name)) for f in dataclasses.fields(self)}


class _Levers:
    """Welfare as a function of the amounts spent on each lever (cached pieces)."""

    def __init__(self, y, yhat, alpha, subgroup, gain):
        from icml25.worstoff.empirical import r2_score

        self.y, self.yhat, self.alpha, self.gain = y, yhat, alpha, gain
        self.sub = subgroup
        sst = float(np.sum((y - y.mean()) ** 2))
        self.room = {"capacity": 1.0 - alpha,
                     "prediction": max(0.0, 1.0 - r2_score(y, yhat)),
                     "subgroup": (float(np.sum((y[subgroup] - yhat[subgroup]) ** 2)) / sst
                                  if subgroup is not None else 0.0)}

    def welfare(self, theta: Mapping[str, float]) -> float:
        from icml25.worstoff.empirical import improve_predictions

        p = self.yhat
        t = min(theta.get("prediction", 0.0), self.room["prediction"])
        if t > 0:
            p = improve_predictions(self.y, p, t * (1 - 1e-12))
        ts = theta.get("subgroup", 0.0)
        if ts > 0 and self.sub is not None:
            sst = float(np.sum((self.y - self.y.mean()) ** 2))
            room = float(np.sum((self.y[self.sub] - p[self.sub]) ** 2)) / sst
            ts = min(ts, room)
            if ts > 0:
                p = improve_predictions(self.y, p, ts * (1 - 1e-12), mask=self.sub)
        a = min(self.alpha + theta.get("capacity", 0.0), 1.0)
        return float(np.dot(_membership(p, a), self.gain))


def allocate_budget(y, yhat, alpha, budget, unit_costs: Mapping[str, float], *,
                    subgroup=None, objective: str = "recall", beta: float = 0.2,
                    benefit: float = 1.0, rho: float = 2.0, steps: int = 20,
                    recalibrate: bool = True, lower_is_worse: bool = True) -> BudgetAllocation:
    """The split of ``budget`` over the levers that maximises welfare, by exhaustive search.

    Every split of the budget into ``steps`` equal parts over the levers is evaluated (for
    three levers and 20 steps, 231 splits; each is one sort of the predictions), and each
    lever's equivalent cost is found by bisection on its own amount.

    Parameters
    ----------
    y, yhat : array-like of shape (n,)
        Outcomes and predictions.
    alpha : float
        Current capacity (fraction screened), in [0, 1).
    budget : float
        Money to spend (> 0).
    unit_costs : mapping
        Cost per unit of ``theta`` for the levers to consider (keys from :data:`LEVERS`):
        ``"capacity"`` per whole population screened (n x cost per person), ``"prediction"``
        and ``"subgroup"`` per unit of overall R^2 (a 0.05 gain costs 0.05 x the unit cost).
    subgroup : array-like of bool of shape (n,) or None
        The people whose predictions the ``"subgroup"`` lever improves (required with it).
    objective : {"recall", "crra"}, default="recall"
        See :func:`screening_welfare`.
    beta, benefit, rho : float
        Objective parameters.
    steps : int, default=20
        Budget resolution of the search.
    recalibrate : bool, default=True
        Put the predictions on the outcome's scale first (ranking unchanged).
    lower_is_worse : bool, default=True
        False when higher outcomes are worse (recall only: CRRA needs a welfare-like
        outcome).

    Returns
    -------
    BudgetAllocation

    Raises
    ------
    ValueError
        For an unknown lever or objective, a non-positive cost or budget, a missing or
        malformed ``subgroup``, or CRRA with non-positive outcomes.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0); yhat = rng.normal(size=2000)
    >>> y = yhat + rng.normal(size=2000)
    >>> res = allocate_budget(y, yhat, 0.1, 100.0, {"capacity": 1000.0, "prediction": 500.0})
    >>> res.welfare >= max(res.single_lever_welfare.values()) - 1e-12
    True
    """
    from icml25.worstoff.empirical import recalibration

    y, yhat = check_outcomes(y, yhat)
    alpha = float(check_fraction("alpha", alpha, low_open=False, high_open=True))
    budget = float(check_positive("budget", budget))
    if not isinstance(unit_costs, Mapping) or not unit_costs:
        raise ValueError(f"unit_costs must map at least one of {LEVERS} to a cost")
    costs = {}
    for k, v in unit_costs.items():
        if k not in LEVERS:
            raise ValueError(f"unknown lever {k!r}; choose from {LEVERS}")
        costs[k] = float(check_positive(f"unit cost of {k}", v))
    if int(steps) < 1:
        raise ValueError(f"steps must be >= 1, got {steps!r}")
    if objective == "crra" and not lower_is_worse:
        raise ValueError("the CRRA objective values a transfer by the outcome, which must be "
                         "welfare-like (higher is better): lower_is_worse must be True")
    if not lower_is_worse:
        y, yhat = -y, -yhat
    sub = None
    if "subgroup" in costs:
        if subgroup is None:
            raise ValueError("the subgroup lever needs subgroup= (a boolean mask)")
        sub = np.asarray(subgroup)
        if sub.shape != y.shape or sub.dtype.kind not in "biuf" or not np.isin(sub, [0, 1]).all():
            raise ValueError(f"subgroup must be a 0/1 or boolean mask of shape {y.shape}")
        sub = sub.astype(bool)
        if not sub.any():
            raise ValueError("subgroup is empty")
    a0, b0, applied = recalibration(y, yhat) if recalibrate else (0.0, 1.0, False)
    yhat = a0 + b0 * yhat
    gain = _objective(objective)(y, beta=float(check_fraction("beta", beta)),
                                 benefit=benefit, rho=rho)
    model = _Levers(y, yhat, alpha, sub, gain)
    names = list(costs)

    def theta_of(spend: Mapping[str, float]) -> dict:
        return {k: min(spend.get(k, 0.0) / costs[k], model.room[k]) for k in names}

    best, best_w = None, -np.inf
    k = int(steps)
    for split in itertools.product(range(k + 1), repeat=len(names)):
        if sum(split) != k:
            continue
        spend = {n: budget * s / k for n, s in zip(names, split, strict=True)}
        w = model.welfare(theta_of(spend))
        if w > best_w + 1e-15:
            best, best_w = spend, w
    single = {n: model.welfare(theta_of({n: budget})) for n in names}
    base_w = model.welfare({})
    equivalent = {n: _equivalent_cost(model, n, costs[n], best_w) for n in names}
    return BudgetAllocation(
        levers=names, unit_costs=costs, budget=budget, spend=best, theta=theta_of(best),
        welfare=best_w, baseline_welfare=base_w, single_lever_welfare=single,
        equivalent_cost=equivalent, objective=objective, alpha=alpha,
        recalibration={"applied": applied, "intercept": a0, "slope": b0})


def _equivalent_cost(model: _Levers, name: str, unit_cost: float, target: float) -> float:
    """Smallest spend on ``name`` alone whose welfare reaches ``target`` (bisection on its
    amount; welfare is non-decreasing in it up to sampling ties); inf if out of reach."""
    room = model.room[name]
    if model.welfare({name: room}) < target - 1e-12:
        return float("inf")
    lo, hi = 0.0, room
    if model.welfare({}) >= target - 1e-12:
        return 0.0
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        if model.welfare({name: mid}) >= target - 1e-12:
            hi = mid
        else:
            lo = mid
    return hi * unit_cost
