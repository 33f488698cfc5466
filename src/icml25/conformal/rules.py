"""Threshold rules as strategy objects: admissibility, statistic and minimum n in one place.

A rule answers three questions about a loss vector (one row of losses for one lambda):

* ``statistic(losses, spec)``: the number it compares with alpha (posterior quantile, mean, UCB);
* ``admissible(losses, spec)``: does this lambda certify risk <= alpha?
* ``minimum_n(alpha, beta, bound, concentration)``: the smallest calibration size for which the
  rule can succeed at all (every loss 0).

The four rules are registered by name in :data:`RULES`; :func:`get_rule` turns a name or an
instance into a rule (validated once, at the boundary), and :func:`register_rule` adds one.
:class:`RuleSpec` is a validated request (rule, alpha, beta, bound, Monte Carlo settings), built
once per public call with :meth:`RuleSpec.make` and passed down unchanged.

Examples
--------
>>> spec = RuleSpec.make("bq", alpha=0.1, beta=0.95)
>>> spec.method, spec.min_n
('bq', 29)
>>> bool(spec.admissible(np.zeros((1, 40)))[0])
True
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import warnings

import numpy as np
from scipy import special, stats

from icml25.conformal._validation import (
    InfeasibleRiskWarning,
    check_bound,
    check_concentration,
    check_level,
)
from icml25.conformal.posterior import (
    VARIANTS,
    RiskPosterior,
    mc_prob_below,
    min_n_bq,
    support_values,
    uniform_order_statistics,
)

__all__ = ["RULES", "BQRule", "CRCRule", "RCPSRule", "Rule", "RuleSpec", "SplitRule",
           "crc_bound", "get_rule", "hoeffding_bentkus_pvalue", "minimum_calibration_size",
           "rcps_upper_bound", "register_rule"]

_TOL = 1e-12  # slack for float comparisons of exact rational quantities such as (k+1)/(n+1)


# --------------------------------------------------------------------------- statistics
def crc_bound(losses, bound: float = 1.0) -> np.ndarray:
    """The CRC statistic (n/(n+1)) * mean + B/(n+1), i.e. the posterior mean of L+, per row.

    Parameters
    ----------
    losses : array-like of shape (n,) or (k, n)
        Calibration losses in [0, bound]; one row per loss vector.
    bound : float, default=1.0
        Upper bound B of the loss.

    Returns
    -------
    ndarray of shape (k,)
        The statistic of each row (``k = 1`` for a 1-D input).

    Examples
    --------
    >>> crc_bound([0, 0, 1, 0])
    array([0.4])
    >>> crc_bound([[0, 0, 1, 0], [1, 1, 1, 1]])
    array([0.4, 1. ])
    """
    losses = np.atleast_2d(losses)
    n = losses.shape[1]
    return (losses.sum(axis=1) + bound) / (n + 1)


def _h1(a, b):
    # KL divergence between Bernoulli(a) and Bernoulli(b), with 0 log 0 = 0.
    return special.xlogy(a, a / b) + special.xlogy(1 - a, (1 - a) / (1 - b))


def hoeffding_bentkus_pvalue(mean, alpha: float, n: int) -> np.ndarray:
    """p-value of H0: risk > alpha for losses in [0, 1] (Bates et al. 2021, Prop. 3).

    min( exp(-n h1(min(mean, alpha), alpha)), e * Pr(Binomial(n, alpha) <= ceil(n * mean)) ).

    Parameters
    ----------
    mean : float or array-like
        Mean loss(es) of n points, in [0, 1].
    alpha : float in (0, 1)
        Risk level of the null.
    n : int
        Number of points behind each mean.

    Returns
    -------
    ndarray of the shape of ``mean``
        p-values (small: the risk is certainly <= alpha).

    Examples
    --------
    >>> from icml25.conformal import hoeffding_bentkus_pvalue
    >>> hoeffding_bentkus_pvalue([0.0, 0.05, 0.2], alpha=0.1, n=100).round(4)
    array([0.    , 0.1565, 1.    ])
    """
    mean = np.asarray(mean, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        hoeff = np.exp(-n * _h1(np.minimum(mean, alpha), alpha))
    bentkus = math.e * stats.binom.cdf(np.ceil(n * mean - 1e-9), n, alpha)
    return np.minimum(hoeff, bentkus)


def rcps_upper_bound(losses, beta: float = 0.95, bound: float = 1.0,
                     concentration: str = "hb") -> np.ndarray:
    """Upper confidence bound at level beta on the risk, per row of ``losses`` (RCPS).

    Parameters
    ----------
    losses : array-like of shape (n,) or (k, n)
        Calibration losses in [0, bound].
    beta : float, default=0.95
        Confidence level of the bound.
    bound : float, default=1.0
        Upper bound B of the loss.
    concentration : {"hb", "hoeffding"}, default="hb"
        Hoeffding–Bentkus (tighter) or plain Hoeffding (the paper's baseline).

    Returns
    -------
    ndarray of shape (k,)
        The upper bound of each row.

    Examples
    --------
    >>> rcps_upper_bound([0, 0, 1, 0, 0, 0, 0, 0, 0, 0]).round(3)
    array([0.455])
    >>> rcps_upper_bound([0, 0, 1, 0, 0, 0, 0, 0, 0, 0], concentration="hoeffding").round(3)
    array([0.487])
    """
    losses = np.atleast_2d(np.asarray(losses, dtype=float))
    n = losses.shape[1]
    mean = losses.mean(axis=1) / bound
    delta = 1 - beta
    if concentration == "hoeffding":
        return bound * (mean + math.sqrt(math.log(1 / delta) / (2 * n)))
    # Largest R with p-value(mean; R) > delta, by vectorised bisection on R in [mean, 1].
    lo, hi = mean.copy(), np.ones_like(mean)
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        reject = hoeffding_bentkus_pvalue(mean, mid, n)
        hi = np.where(reject <= delta, mid, hi)
        lo = np.where(reject <= delta, lo, mid)
    return bound * hi


# --------------------------------------------------------------------------- rules
class Rule:
    """Base class of a threshold rule. Subclass, set ``name``, implement the three methods.

    ``uses_beta`` says whether the guarantee involves the credibility/confidence ``beta``
    (it appears in messages). ``threshold_scores`` may give a closed-form threshold on
    nonconformity scores (``None``: the generic exact search over the scores is used).

    Methods to implement: ``statistic(losses, spec)`` (the number compared with alpha, one per
    row of ``losses`` (r, n)), ``admissible(losses, spec)`` (bool per row; default: statistic
    <= alpha) and ``minimum_n(alpha, beta, bound, concentration)`` (the smallest n that can
    certify anything). Register an instance with :func:`register_rule` to use it by name.

    Examples
    --------
    >>> import numpy as np
    >>> from icml25.conformal import Rule, RuleSpec
    >>> class MeanRule(Rule):          # the empirical mean <= alpha (no guarantee)
    ...     name = "mean"
    ...     uses_beta = False
    ...     def statistic(self, losses, spec):
    ...         return losses.mean(axis=1)
    ...     def minimum_n(self, alpha, beta, bound, concentration):
    ...         return 1
    >>> RuleSpec.make(MeanRule(), alpha=0.1).admissible(np.array([[0.0, 0.4], [0.0, 0.1]]))
    array([False,  True])
    """

    name: str = ""
    uses_beta: bool = True

    def statistic(self, losses: np.ndarray, spec: RuleSpec) -> np.ndarray:
        raise NotImplementedError

    def admissible(self, losses: np.ndarray, spec: RuleSpec) -> np.ndarray:
        return self.statistic(losses, spec) <= spec.alpha + _TOL

    def minimum_n(self, alpha: float, beta: float, bound: float, concentration: str) -> int:
        raise NotImplementedError

    def threshold_scores(self, sorted_scores: np.ndarray, spec: RuleSpec):
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and vars(self) == vars(other)

    def __hash__(self) -> int:
        return hash((type(self), tuple(sorted(vars(self).items()))))


class CRCRule(Rule):
    """Conformal risk control: the posterior mean (sum_i l_i + B)/(n+1) <= alpha.

    Examples
    --------
    >>> import numpy as np
    >>> from icml25.conformal import CRCRule, RuleSpec
    >>> spec = RuleSpec.make(CRCRule(), alpha=0.1)
    >>> spec.statistic(np.zeros((1, 50))).round(4), spec.min_n       # 1 / 51
    (array([0.0196]), 9)
    """

    name = "crc"
    uses_beta = False

    def statistic(self, losses, spec):
        return crc_bound(losses, spec.bound)

    def minimum_n(self, alpha, beta, bound, concentration):
        return max(1, math.ceil(bound / alpha - 1 - 1e-9))


class SplitRule(CRCRule):
    """Split conformal prediction: 0/1 losses only; the ceil((n+1)(1-alpha))-th smallest score.

    Raises
    ------
    ValueError
        From ``statistic``: losses that are not 0/1.

    Examples
    --------
    >>> import numpy as np
    >>> from icml25.conformal import RuleSpec, SplitRule
    >>> spec = RuleSpec.make("split", alpha=0.1)
    >>> SplitRule().threshold_scores(np.arange(1.0, 20.0), spec)    # rank ceil(20 * 0.9) = 18
    (18.0, 17)
    """

    name = "split"

    def statistic(self, losses, spec):
        if not np.isin(losses, (0.0, 1.0)).all():
            raise ValueError("method='split' needs 0/1 (miscoverage) losses; "
                             "use 'crc' for general bounded losses")
        return crc_bound(losses, spec.bound)

    def threshold_scores(self, sorted_scores, spec):
        n = sorted_scores.size
        rank = math.ceil((n + 1) * (1 - spec.alpha) - 1e-9)
        if rank > n:
            return math.inf, None
        return float(sorted_scores[rank - 1]), rank - 1


class RCPSRule(Rule):
    """Risk-controlling prediction sets: a level-beta upper confidence bound <= alpha.

    Examples
    --------
    >>> import numpy as np
    >>> from icml25.conformal import RuleSpec
    >>> spec = RuleSpec.make("rcps", alpha=0.1, beta=0.95)
    >>> spec.admissible(np.zeros((1, 50))), spec.admissible(np.zeros((1, 20)))
    (array([ True]), array([False]))
    """

    name = "rcps"

    def statistic(self, losses, spec):
        return rcps_upper_bound(losses, spec.beta, spec.bound, spec.concentration)

    def admissible(self, losses, spec):
        n = losses.shape[1]
        mean = losses.mean(axis=1)
        if spec.concentration == "hoeffding":
            ucb = mean + spec.bound * math.sqrt(math.log(1 / (1 - spec.beta)) / (2 * n))
            return ucb <= spec.alpha + _TOL
        p = hoeffding_bentkus_pvalue(mean / spec.bound, spec.alpha / spec.bound, n)
        return p <= 1 - spec.beta

    def minimum_n(self, alpha, beta, bound, concentration):
        if concentration == "hoeffding":
            return max(1, math.ceil(bound**2 * math.log(1 / (1 - beta)) / (2 * alpha**2) - 1e-9))
        return min_n_bq(alpha, beta, bound)


class BQRule(Rule):
    """The paper's rule (Snell & Griffiths, Eq. 31): Pr(L+ <= alpha) >= beta.

    Examples
    --------
    >>> import numpy as np
    >>> from icml25.conformal import BQRule, RuleSpec
    >>> spec = RuleSpec.make(BQRule(), alpha=0.1, beta=0.95)
    >>> spec.min_n                      # the smallest n that certifies anything
    29
    >>> spec.admissible(np.zeros((2, 50))).tolist()
    [True, True]
    """

    name = "bq"

    def statistic(self, losses, spec):
        return np.atleast_1d(spec.posterior(losses).quantile(spec.beta))

    def admissible(self, losses, spec):
        return spec.prob_below(losses) >= spec.beta - _TOL

    def minimum_n(self, alpha, beta, bound, concentration):
        return min_n_bq(alpha, beta, bound)


RULES: dict[str, Rule] = {}


def register_rule(rule: Rule) -> Rule:
    """Add a rule to :data:`RULES` under ``rule.name`` (returns it, so it works as a helper).

    Parameters
    ----------
    rule : Rule
        An instance with a non-empty ``name`` and the methods ``statistic``, ``admissible`` and
        ``minimum_n``; it replaces any rule of the same name.

    Returns
    -------
    Rule
        ``rule`` itself.

    Raises
    ------
    TypeError
        When ``rule`` lacks a name or one of the methods.

    Examples
    --------
    >>> from icml25.conformal import RULES, CRCRule, get_rule, register_rule
    >>> class MyCRC(CRCRule):
    ...     name = "my_crc"
    >>> rule = register_rule(MyCRC())
    >>> get_rule("my_crc") is rule
    True
    >>> del RULES["my_crc"]             # leave the registry as it was
    """
    _check_rule(rule)
    RULES[rule.name] = rule
    return rule


def _check_rule(rule) -> Rule:
    missing = [m for m in ("statistic", "admissible", "minimum_n") if not callable(
        getattr(rule, m, None))]
    if missing or not isinstance(getattr(rule, "name", None), str) or not rule.name:
        raise TypeError(f"a rule needs a non-empty str `name` and methods statistic, admissible "
                        f"and minimum_n (subclass icml25.conformal.Rule); {rule!r} lacks "
                        f"{missing or ['name']}")
    return rule


for _r in (SplitRule(), CRCRule(), RCPSRule(), BQRule()):
    register_rule(_r)


def get_rule(method) -> Rule:
    """A registered rule by name, or a rule instance checked and returned as is.

    Parameters
    ----------
    method : str or Rule
        ``"bq"``, ``"crc"``, ``"rcps"``, ``"split"`` (or another registered name), or an
        instance.

    Returns
    -------
    Rule

    Raises
    ------
    ValueError
        For an unknown name, a Rule class instead of an instance, or an object that is not a
        rule.

    Examples
    --------
    >>> from icml25.conformal import CRCRule, get_rule
    >>> get_rule("crc")
    CRCRule()
    >>> get_rule(CRCRule()).name
    'crc'
    """
    if isinstance(method, str):
        try:
            return RULES[method]
        except KeyError:
            raise ValueError(f"method must be one of {tuple(sorted(RULES))} or a Rule "
                             f"instance, got {method!r}") from None
    if isinstance(method, type) and issubclass(method, Rule):
        raise ValueError(f"method must be a rule instance, got the class {method.__name__}; "
                         f"pass {method.__name__}()")
    try:
        return _check_rule(method)
    except TypeError as err:
        raise ValueError(f"method must be one of {tuple(sorted(RULES))} or a Rule instance, "
                         f"got {method!r}: {err}") from None


def resolve_seed(random_state) -> int:
    """One integer seed for the common random numbers, whatever the user passed.

    An int is used as is; a Generator / RandomState gives one draw; None a fresh entropy seed.
    Resolved once per call so that every lambda of a search shares the same draws.
    """
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"random_state must be non-negative, got {random_state}")
        return int(random_state)
    if random_state is None:
        return int(np.random.default_rng().integers(2**63))
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(2**63))
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(2**31 - 1))
    raise ValueError(f"random_state must be an int, a numpy Generator/RandomState or None, "
                     f"got {random_state!r}")


def _unique_rows(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of a 2-D float array and the inverse map (``a == uniq[inv]``).

    Rows are grouped by a 1-D key (a projection on fixed weights), which sorts much faster than
    ``np.unique(axis=0)``; the grouping is then checked exactly, with ``np.unique`` as fallback.
    """
    w = np.random.default_rng(12345).random(a.shape[1]) + 0.5
    _, first, inv = np.unique(a @ w, return_index=True, return_inverse=True)
    inv = inv.reshape(-1)
    uniq = a[first]
    if not np.array_equal(uniq[inv], a):
        uniq, inv = np.unique(a, axis=0, return_inverse=True)
        inv = inv.reshape(-1)
    return uniq, inv


# --------------------------------------------------------------------------- request
@dataclasses.dataclass(frozen=True)
class RuleSpec:
    """A validated request: which rule, at what levels, with which loss bound.

    Build it with :meth:`make` (which validates every field once); the calibration engine and
    the estimators pass it down unchanged. ``random_state`` is always a resolved int here.

    Parameters
    ----------
    rule : Rule, default=BQRule()
        The threshold rule (``make`` takes its name as ``method``).
    alpha : float, default=0.1
        Risk level.
    beta : float, default=0.95
        Credibility / confidence of the rules that use it.
    bound : float, default=1.0
        Upper bound B of the losses.
    concentration : str, default="hb"
        Concentration bound of RCPS (``"hb"`` or ``"hoeffding"``).
    n_draws : int, default=10000
        Monte Carlo draws of the posterior where it is not exact.
    random_state : int, default=0
        Seed of those draws.
    exact : bool or None, default=None
        Force (True) or forbid (False) the exact posterior; None: exact where possible.
    variant : str, default="paper"
        Indexing of the loss bound (``"paper"`` or ``"official"``).

    Raises
    ------
    ValueError
        From ``make``: any invalid field.

    Examples
    --------
    >>> import numpy as np
    >>> from icml25.conformal import RuleSpec
    >>> spec = RuleSpec.make("crc", alpha=0.1)
    >>> spec.method, spec.min_n
    ('crc', 9)
    >>> spec.admissible(np.array([[0.0] * 19, [1.0] * 19])).tolist()
    [True, False]
    """

    rule: Rule = dataclasses.field(default_factory=BQRule)
    alpha: float = 0.1
    beta: float = 0.95
    bound: float = 1.0
    concentration: str = "hb"
    n_draws: int = 10_000
    random_state: int = 0
    exact: bool | None = None
    variant: str = "paper"

    @classmethod
    def make(cls, method="bq", alpha=0.1, beta=0.95, bound=1.0, concentration="hb",
             n_draws=10_000, random_state=0, exact=None, variant="paper") -> RuleSpec:
        if not isinstance(n_draws, int | np.integer) or isinstance(n_draws, bool) or n_draws < 1:
            raise ValueError(f"n_draws must be a positive integer, got {n_draws!r}")
        if exact not in (None, True, False):
            raise ValueError(f"exact must be None, True or False, got {exact!r}")
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
        return cls(get_rule(method), check_level(alpha, "alpha"), check_level(beta, "beta"),
                   check_bound(bound), check_concentration(concentration), int(n_draws),
                   resolve_seed(random_state), exact, variant)

    @property
    def method(self) -> str:
        return self.rule.name

    @property
    def min_n(self) -> int:
        return self.rule.minimum_n(self.alpha, self.beta, self.bound, self.concentration)

    def admissible(self, losses: np.ndarray) -> np.ndarray:
        """Bool per row of ``losses`` (r, n): does this loss vector certify risk <= alpha?"""
        return np.asarray(self.rule.admissible(losses, self), dtype=bool)

    def statistic(self, losses: np.ndarray) -> np.ndarray:
        """The number the rule compares with alpha (quantile, mean or UCB), per row."""
        return np.asarray(self.rule.statistic(losses, self), dtype=float)

    def posterior(self, losses: np.ndarray) -> RiskPosterior:
        return RiskPosterior(losses, self.bound, n_draws=self.n_draws,
                             random_state=self.random_state, exact=self.exact,
                             variant=self.variant)

    def prob_below(self, losses: np.ndarray) -> np.ndarray:
        """Pr(L+ <= alpha) per row, exact where the row allows, common random numbers otherwise.

        L+ depends on a loss vector only through its sorted values, so rows that are equal once
        sorted are evaluated once (a simulation's trials repeat few distinct loss vectors: the
        binomial loss with n = 10 has at most 1,001, a 0/1 loss at most n + 1). The answer is
        identical to evaluating every row. (The ``official`` indexing adds B to the first loss,
        so there the first loss is kept apart.)
        """
        losses = np.asarray(losses, dtype=float)
        if losses.ndim == 2 and losses.shape[0] > 64:
            # The official indexing adds B to the first loss: keep it first, sort the rest.
            key = (np.sort(losses, axis=1) if self.variant == "paper" else
                   np.concatenate([losses[:, :1], np.sort(losses[:, 1:], axis=1)], axis=1))
            uniq, inv = _unique_rows(key)
            if uniq.shape[0] * 2 <= losses.shape[0]:
                return self._prob_below(uniq)[inv]
        return self._prob_below(losses)

    def _prob_below(self, losses: np.ndarray) -> np.ndarray:
        post = self.posterior(losses)
        out = np.empty(losses.shape[0])
        ex = post._exact
        if ex.any():
            out[ex] = post._exact_cdf(np.full((int(ex.sum()), 1), self.alpha), ex)[:, 0]
        rows = np.flatnonzero(~ex)
        if rows.size:
            t = uniform_order_statistics(losses.shape[1], self.n_draws, self.random_state)
            x = support_values(losses[rows], self.bound, self.variant)
            out[rows] = mc_prob_below(x, t, self.alpha)
        return out

    def warn_infeasible(self, n: int, trivial: str, stacklevel: int = 3,
                        where: str = "") -> int:
        """Issue the documented warning; return the minimum n."""
        n_min = self.min_n
        level = f" with credibility beta={self.beta:g}" if self.rule.uses_beta else ""
        if n < n_min:
            msg = (f"calibration set{where} too small: method {self.method!r} needs at least "
                   f"n={n_min} calibration points to certify risk <= alpha={self.alpha:g}{level} "
                   f"(bound B={self.bound:g}) even if every loss were 0; got n={n}. Returning "
                   f"the trivial predictor ({trivial}).")
        else:
            msg = (f"no lambda in the search range certifies risk <= alpha={self.alpha:g}{level} "
                   f"with method {self.method!r} on these n={n} losses{where} (the minimum n "
                   f"for this request is {n_min}); returning the trivial predictor ({trivial}).")
        warnings.warn(msg, InfeasibleRiskWarning, stacklevel=stacklevel)
        return n_min


def minimum_calibration_size(alpha: float, beta: float = 0.95, method="bq",
                             bound: float = 1.0, concentration: str = "hb") -> int:
    """The smallest n for which the rule can succeed at all (every calibration loss 0).

    * bq, and rcps with the Hoeffding–Bentkus bound: 1 - (1 - alpha/B)^n >= beta.
    * crc and split: B / (n + 1) <= alpha.
    * rcps with Hoeffding: B * sqrt(log(1/(1-beta)) / (2n)) <= alpha.

    Parameters
    ----------
    alpha : float
        Target risk, in (0, 1).
    beta : float, default=0.95
        Credibility or confidence of the guarantee, in (0, 1).
    method : str or Rule, default="bq"
        A registered rule name or a :class:`Rule` instance.
    bound : float, default=1.0
        Upper bound B of the loss.
    concentration : {"hb", "hoeffding"}, default="hb"
        The RCPS bound.

    Returns
    -------
    int
        The minimum calibration size n.

    Raises
    ------
    ValueError
        If ``alpha`` or ``beta`` is outside (0, 1) or ``method`` is unknown.

    Examples
    --------
    >>> minimum_calibration_size(0.1), minimum_calibration_size(0.05)
    (29, 59)
    >>> minimum_calibration_size(0.1, method="crc")
    9
    """
    return get_rule(method).minimum_n(check_level(alpha, "alpha"), check_level(beta, "beta"),
                                      check_bound(bound), check_concentration(concentration))
