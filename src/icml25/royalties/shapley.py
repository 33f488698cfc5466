"""Shapley values of rights holders: exact over all 2^n coalitions, or permutation sampling.

Exact: every coalition is evaluated once (one batch call of the utility), then
phi_i = sum_{S not containing i} |S|! (n-|S|-1)! / n! * (v(S + i) - v(S)).

Sampled: the Shapley value is the mean marginal contribution over uniformly random orderings.
With ``antithetic=True`` each ordering is paired with its reverse (a player early in one is late
in the other, so the two marginals are negatively correlated) and the pair average is one
sample. Sampling stops once every player's standard error is at most the target, and the
standard errors are reported with the estimate.

Ownership groups (the mitigation against splitting into shell holders): with ``groups`` the
value is the Owen value — orderings keep each group's members together, so a group's total is
the Shapley value of the game between groups, whatever number of members it declares.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from icml25.core import JsonRecord, make_rng
from icml25.royalties.errors import RoyaltyInputError
from icml25.royalties.utility import CachedUtility, CoalitionUtility

MAX_EXACT_PLAYERS = 20  # 2^20 coalitions; beyond that the exact path is refused
DEFAULT_EXACT_LIMIT = 15  # method="auto" switches to sampling above this


@dataclasses.dataclass
class ShapleyResult(JsonRecord):
    """Shapley (or Owen) values with their standard errors and how they were obtained.

    ``values`` and ``std_errors`` are float arrays of shape (n_players,), like ``shares()``;
    lists given to the constructor are converted (``.tolist()`` gives the old list form).

    Parameters
    ----------
    players : list of str
        Holder names, in the order of ``values``.
    values : array-like of shape (n_players,)
        Shapley (or Owen) values.
    std_errors : array-like of shape (n_players,)
        Standard errors of ``values`` (all 0 when exact).
    method : str
        ``"exact"``, ``"antithetic"`` or ``"permutation"``.
    grand_value : float
        v(all) - v(none), which the values sum to (efficiency).
    n_evaluations : int
        Coalitions evaluated by the utility.
    n_permutations : int, default=0
        Orderings sampled (0 when exact).
    converged : bool, default=True
        False when sampling stopped at ``max_permutations`` before reaching the target.
    se_target : float, default=0.0
        The standard-error target of the sampler.
    groups : list of list of str or None, default=None
        The ownership groups used (Owen values), or None.

    Examples
    --------
    >>> res = ShapleyResult(players=["a", "b"], values=[3.0, 1.0], std_errors=[0.0, 0.0],
    ...                     method="exact", grand_value=4.0, n_evaluations=4)
    >>> res.shares().tolist(), res.as_dict()
    ([0.75, 0.25], {'a': 3.0, 'b': 1.0})
    """

    players: list[str]
    values: np.ndarray
    std_errors: np.ndarray
    method: str  # "exact", "antithetic" or "permutation"
    grand_value: float  # v(all) - v(none) = sum of values (efficiency)
    n_evaluations: int  # coalitions evaluated by the utility
    n_permutations: int = 0
    converged: bool = True
    se_target: float = 0.0
    groups: list[list[str]] | None = None

    def __post_init__(self):
        self.values = np.asarray(self.values, dtype=np.float64).reshape(-1)
        self.std_errors = np.asarray(self.std_errors, dtype=np.float64).reshape(-1)

    @property
    def phi(self) -> np.ndarray:
        """The values (the same array as ``values``)."""
        return self.values

    def shares(self) -> np.ndarray:
        """Royalty shares max(phi_i, 0) / sum_j max(phi_j, 0) (zeros if none is positive)."""
        return royalty_shares(self.phi)[0]

    def as_dict(self) -> dict[str, float]:
        return dict(zip(self.players, self.values.tolist(), strict=True))


def royalty_shares(values) -> tuple[np.ndarray, bool]:
    """``(shares, allocated)``: clipped, normalised Shapley values.

    Negative values (holders whose data made the artifact *less* likely) are clipped to zero,
    as in the Shapley Royalty Share. If no value is positive nothing can be allocated: the
    shares are all zero and ``allocated`` is False (the caller decides where that money goes).

    Parameters
    ----------
    values : array-like of shape (n,)
        Shapley values of the n holders (finite).

    Returns
    -------
    shares : ndarray of shape (n,)
        Non-negative shares summing to 1 (all 0 when nothing is allocated).
    allocated : bool
        False when no holder has a positive value.

    Raises
    ------
    RoyaltyInputError
        If ``values`` is not a finite 1-d array.

    Examples
    --------
    >>> shares, allocated = royalty_shares([2.0, -1.0, 1.0])
    >>> shares.round(3).tolist(), allocated
    ([0.667, 0.0, 0.333], True)
    >>> royalty_shares([-1.0, -0.5])[1]
    False
    """
    phi = np.asarray(values, dtype=np.float64)
    if phi.ndim != 1 or not np.isfinite(phi).all():
        raise RoyaltyInputError("Shapley values must be a finite 1-d array")
    clipped = np.maximum(phi, 0.0)
    total = clipped.sum()
    if total <= 0.0:
        return np.zeros_like(phi), False
    return clipped / total, True


# --------------------------------------------------------------------------------- exact
def coalition_matrix(n: int) -> np.ndarray:
    """All 2^n coalitions as a boolean matrix; row r contains player i iff bit i of r is set.

    Parameters
    ----------
    n : int
        Number of players.

    Returns
    -------
    numpy.ndarray of bool, shape (2**n, n)
        Row ``r`` is the coalition whose bitmask is ``r`` (row 0 empty, last row everyone).

    Examples
    --------
    >>> coalition_matrix(2).astype(int).tolist()
    [[0, 0], [1, 0], [0, 1], [1, 1]]
    """
    rows = np.arange(2**n, dtype=np.int64)
    return ((rows[:, None] >> np.arange(n, dtype=np.int64)) & 1).astype(bool)


def _size_weights(n: int) -> np.ndarray:
    """w[s] = s! (n-1-s)! / n!, the probability weight of a predecessor set of size s."""
    return np.array([1.0 / (n * math.comb(n - 1, s)) for s in range(n)])


def shapley_from_table(values: np.ndarray) -> np.ndarray:
    """Exact Shapley values from v over all 2^n coalitions (indexed by bitmask).

    Parameters
    ----------
    values : array-like of shape (2**n,)
        ``values[r]`` is v of the coalition with bitmask ``r`` (the order of
        :func:`coalition_matrix`).

    Returns
    -------
    numpy.ndarray of shape (n,)
        The Shapley value of each player.

    Raises
    ------
    RoyaltyInputError
        If the length of ``values`` is not a power of two of at least 2.

    Examples
    --------
    >>> shapley_from_table([0.0, 2.0, 1.0, 4.0]).tolist()
    [2.5, 1.5]
    """
    values = np.asarray(values, dtype=np.float64)
    n = int(round(math.log2(len(values)))) if len(values) else -1
    if n < 1 or len(values) != 2**n:
        raise RoyaltyInputError("a coalition table must have 2^n entries, n >= 1")
    idx = np.arange(2**n, dtype=np.int64)
    sizes = coalition_matrix(n).sum(axis=1)
    w = _size_weights(n)
    phi = np.empty(n)
    for i in range(n):
        without = idx[(idx >> i) & 1 == 0]
        phi[i] = np.dot(w[sizes[without]], values[without | (1 << i)] - values[without])
    return phi


def _unions(masks: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Bitwise unions of every subset of ``masks`` and the subset sizes."""
    unions, sizes = np.zeros(1, np.int64), np.zeros(1, np.int64)
    for m in masks:
        unions = np.concatenate([unions, unions | m])
        sizes = np.concatenate([sizes, sizes + 1])
    return unions, sizes


def owen_from_table(values: np.ndarray, groups: Sequence[Sequence[int]]) -> np.ndarray:
    """Exact Owen values (Shapley between groups, then within each group) from a 2^n table.

    Parameters
    ----------
    values : array-like of shape (2**n,)
        v of every coalition, indexed by bitmask as in :func:`shapley_from_table`.
    groups : sequence of sequences of int
        A partition of the player indices ``0..n-1`` into ownership groups.

    Returns
    -------
    numpy.ndarray of shape (n,)
        The Owen value of each player; each group's total is the Shapley value of the game
        between groups.

    Examples
    --------
    >>> table = [0.0, 1.0, 1.0, 2.0, 1.0, 2.0, 2.0, 3.0]  # v(S) = |S|, three players
    >>> owen_from_table(table, [[0, 1], [2]]).tolist()
    [1.0, 1.0, 1.0]
    """
    values = np.asarray(values, dtype=np.float64)
    n = int(round(math.log2(len(values))))
    group_masks = [sum(1 << i for i in g) for g in groups]
    m = len(groups)
    phi = np.zeros(n)
    for k, members in enumerate(groups):
        t_unions, t_sizes = _unions([gm for j, gm in enumerate(group_masks) if j != k])
        w_t = _size_weights(m)[t_sizes]
        b = len(members)
        for i in members:
            s_unions, s_sizes = _unions([1 << j for j in members if j != i])
            w_s = _size_weights(b)[s_sizes]
            base = t_unions[:, None] | s_unions[None, :]
            gain = values[base | (1 << i)] - values[base]
            phi[i] = np.sum(w_t[:, None] * w_s[None, :] * gain)
    return phi


def exact_shapley(utility: CoalitionUtility, *,
                  groups: Sequence[Sequence[str]] | None = None) -> ShapleyResult:
    """Exact Shapley (or, with ``groups``, Owen) values: 2^n coalitions, one batch call.

    Parameters
    ----------
    utility : CoalitionUtility
        Anything with ``players`` and a batch call ``utility(bool[k, n]) -> float[k]``.
    groups : sequence of sequences of str or None, default=None
        Ownership groups: holders under one owner are valued as one player first and split
        inside the group (Owen values), so splitting into shell holders gains nothing.

    Returns
    -------
    ShapleyResult
        ``players``, ``values`` (efficient: they sum to v(all) - v(none)), ``std_errors``
        (all 0), ``n_evaluations`` (2^n).

    Raises
    ------
    RoyaltyInputError
        Above 20 holders (use :func:`sampled_shapley`), or for groups naming unknown holders.

    Examples
    --------
    >>> from icml25.royalties import FunctionUtility
    >>> u = FunctionUtility(["ann", "bob"],
    ...                     lambda s: 2.0 * ("ann" in s) + ("bob" in s) + (len(s) == 2))
    >>> res = exact_shapley(u)
    >>> res.players, res.values.tolist(), res.n_evaluations
    (['ann', 'bob'], [2.5, 1.5], 4)
    """
    players = list(utility.players)
    n = len(players)
    if n > MAX_EXACT_PLAYERS:
        raise RoyaltyInputError(
            f"exact Shapley values for {n} holders need 2^{n} coalition values; the exact path "
            f"stops at {MAX_EXACT_PLAYERS} holders — use method='sampled'")
    values = np.asarray(utility(coalition_matrix(n)), dtype=np.float64)
    group_idx = _group_indices(groups, players)
    phi = shapley_from_table(values) if group_idx is None else owen_from_table(values, group_idx)
    return ShapleyResult(
        players=players, values=phi.tolist(), std_errors=[0.0] * n, method="exact",
        grand_value=float(values[-1] - values[0]), n_evaluations=2**n,
        groups=_group_names(group_idx, players))


# ------------------------------------------------------------------------------- sampled
def sampled_shapley(utility: CoalitionUtility, *, seed: int | np.random.Generator | None = 0,
                    antithetic: bool = True, groups: Sequence[Sequence[str]] | None = None,
                    se_tol: float | None = None, rel_se_tol: float = 0.01,
                    min_permutations: int = 40, max_permutations: int = 4000,
                    batch_permutations: int = 20) -> ShapleyResult:
    """Permutation-sampling Shapley values with a standard-error stopping rule.

    Stops when every player's standard error is at most ``se_tol`` (default
    ``rel_se_tol * |v(all) - v(none)|``) after at least ``min_permutations`` orderings, or at
    ``max_permutations`` (then ``converged`` is False). Orderings are evaluated in batches of
    ``batch_permutations`` (even numbers when antithetic, so a count may round up by one);
    coalitions are cached, so repeats cost nothing.

    Parameters
    ----------
    utility : CoalitionUtility
        The coalition utility v(S); wrapped in a :class:`CachedUtility` unless it is one.
    seed : int, Generator or None, default=0
        Seeds the orderings.
    antithetic : bool, default=True
        Pair each ordering with its reverse (one sample is the pair average).
    groups : sequence of sequences of str or None, default=None
        Ownership groups: orderings keep each group together (Owen values).
    se_tol : float or None, default=None
        Absolute standard-error target; None uses ``rel_se_tol * |v(all) - v(none)|``.
    rel_se_tol : float, default=0.01
        Relative standard-error target when ``se_tol`` is None.
    min_permutations : int, default=40
        Orderings drawn before the stopping rule is checked.
    max_permutations : int, default=4000
        Orderings drawn at most.
    batch_permutations : int, default=20
        Orderings evaluated per batch call.

    Returns
    -------
    ShapleyResult
        Mean marginal contributions, their standard errors, ``n_permutations``,
        ``converged`` and ``se_target``.

    Raises
    ------
    RoyaltyInputError
        If a permutation count is not an integer >= 2, ``max_permutations`` is below
        ``min_permutations``, a tolerance is not positive, or groups name unknown holders.

    Examples
    --------
    >>> from icml25.royalties import FunctionUtility
    >>> u = FunctionUtility(["ann", "bob", "cy"], lambda s: float(len(s)))
    >>> res = sampled_shapley(u, seed=0)
    >>> res.values.tolist(), res.converged, res.method
    ([1.0, 1.0, 1.0], True, 'antithetic')
    """
    players = list(utility.players)
    n = len(players)
    for name, val in (("min_permutations", min_permutations),
                      ("max_permutations", max_permutations),
                      ("batch_permutations", batch_permutations)):
        if not isinstance(val, int) or val < 2:
            raise RoyaltyInputError(f"{name} must be an integer >= 2, got {val!r}")
    if max_permutations < min_permutations:
        raise RoyaltyInputError("max_permutations must be >= min_permutations")
    if se_tol is not None and not se_tol > 0:
        raise RoyaltyInputError(f"se_tol must be positive, got {se_tol!r}")
    if not rel_se_tol > 0:
        raise RoyaltyInputError(f"rel_se_tol must be positive, got {rel_se_tol!r}")
    rng = make_rng(seed)
    cached = utility if isinstance(utility, CachedUtility) else CachedUtility(utility)
    start_evals = cached.n_evaluations
    ends = cached(np.array([[False] * n, [True] * n]))
    grand = float(ends[1] - ends[0])
    target = se_tol if se_tol is not None else rel_se_tol * max(abs(grand), 1e-12)
    group_idx = _group_indices(groups, players)

    samples: list[np.ndarray] = []
    n_perm, converged = 0, False
    while n_perm < max_permutations:
        k = min(batch_permutations, max_permutations - n_perm)
        if antithetic:
            k = max(2, k - k % 2)
        half = k // 2 if antithetic else k
        perms = np.array([_draw_order(rng, n, group_idx) for _ in range(half)])
        if antithetic:
            perms = np.stack([perms, perms[:, ::-1]], axis=1).reshape(-1, n)
        marg = _marginals(cached, perms)
        samples.append(marg.reshape(half, 2, n).mean(axis=1) if antithetic else marg)
        n_perm += len(perms)
        se = _standard_errors(np.concatenate(samples))
        if n_perm >= min_permutations and se.max() <= target:
            converged = True
            break
    draws = np.concatenate(samples)
    se = _standard_errors(draws)
    return ShapleyResult(
        players=players, values=draws.mean(axis=0).tolist(), std_errors=se.tolist(),
        method="antithetic" if antithetic else "permutation", grand_value=grand,
        n_evaluations=cached.n_evaluations - start_evals, n_permutations=n_perm,
        converged=converged, se_target=float(target), groups=_group_names(group_idx, players))


def _standard_errors(draws: np.ndarray) -> np.ndarray:
    """Standard error of the mean per player; infinite until there are two samples."""
    if len(draws) < 2:
        return np.full(draws.shape[1], np.inf)
    return draws.std(axis=0, ddof=1) / np.sqrt(len(draws))


def _draw_order(rng: np.random.Generator, n: int, groups: list[list[int]] | None) -> np.ndarray:
    if groups is None:
        return rng.permutation(n)
    order = rng.permutation(len(groups))
    return np.concatenate([rng.permutation(groups[g]) for g in order])


def _marginals(utility: CachedUtility, perms: np.ndarray) -> np.ndarray:
    """Marginal contribution of every player in every ordering (one cached batch call)."""
    k, n = perms.shape
    rank = np.argsort(perms, axis=1)  # rank[p, i] = position of player i in ordering p
    prefix = rank[:, None, :] < np.arange(n + 1)[None, :, None]  # (k, n+1, n)
    vals = utility(prefix.reshape(-1, n)).reshape(k, n + 1)
    steps = np.diff(vals, axis=1)  # step j adds player perms[p, j]
    marg = np.empty((k, n))
    np.put_along_axis(marg, perms, steps, axis=1)
    return marg


# ------------------------------------------------------------------------------- dispatch
def shapley_values(utility: CoalitionUtility, *, method: str = "auto",
                   exact_limit: int = DEFAULT_EXACT_LIMIT,
                   groups: Sequence[Sequence[str]] | None = None,
                   seed: int | np.random.Generator | None = 0, **sampling) -> ShapleyResult:
    """Exact values up to ``exact_limit`` holders (``method="auto"``), sampled above.

    Parameters
    ----------
    utility : CoalitionUtility
        The coalition utility v(S) (e.g. :class:`NgramLogRatioUtility`).
    method : {"auto", "exact", "sampled"}, default="auto"
        ``"auto"``: exact up to ``exact_limit`` holders, sampled above.
    exact_limit : int, default=15
        Largest number of holders valued exactly under ``"auto"``.
    groups : sequence of sequences of str or None, default=None
        Ownership groups (Owen values), as in :func:`exact_shapley`.
    seed : int, Generator or None, default=0
        Seeds the permutation sampler.
    **sampling
        Passed to :func:`sampled_shapley` (``rel_se_tol``, ``se_tol``, ``min_permutations``...).

    Returns
    -------
    ShapleyResult
        Values, standard errors (0 when exact), the method used and the evaluation count.

    Raises
    ------
    RoyaltyInputError
        For an unknown ``method``, ``method="exact"`` above 20 holders, or groups naming
        unknown holders.

    Examples
    --------
    >>> from icml25.royalties import FunctionUtility
    >>> u = FunctionUtility(["ann", "bob"],
    ...                     lambda s: 2.0 * ("ann" in s) + ("bob" in s) + (len(s) == 2))
    >>> shapley_values(u).values.tolist()
    [2.5, 1.5]
    >>> res = shapley_values(u, method="sampled", seed=0)
    >>> res.values.round(3).tolist(), res.method
    ([2.5, 1.5], 'antithetic')
    """
    if method not in ("auto", "exact", "sampled"):
        raise RoyaltyInputError(f"method must be 'auto', 'exact' or 'sampled', got {method!r}")
    if method == "exact" or (method == "auto" and len(utility.players) <= exact_limit):
        return exact_shapley(utility, groups=groups)
    return sampled_shapley(utility, seed=seed, groups=groups, **sampling)


def _group_indices(groups: Sequence[Sequence[str]] | None,
                   players: list[str]) -> list[list[int]] | None:
    """Validate that ``groups`` partitions the players; return them as index lists."""
    if groups is None:
        return None
    pos = {p: i for i, p in enumerate(players)}
    idx: list[list[int]] = []
    seen: set[str] = set()
    for g in groups:
        members = list(g)
        if not members:
            raise RoyaltyInputError("an ownership group cannot be empty")
        for p in members:
            if p not in pos:
                raise RoyaltyInputError(f"ownership group member {p!r} is not a holder")
            if p in seen:
                raise RoyaltyInputError(f"holder {p!r} is in more than one ownership group")
            seen.add(p)
        idx.append([pos[p] for p in members])
    missing = [p for p in players if p not in seen]
    idx += [[pos[p]] for p in missing]  # undeclared holders are their own group
    return idx


def _group_names(group_idx: list[list[int]] | None, players: list[str]) -> list[list[str]] | None:
    return None if group_idx is None else [[players[i] for i in g] for g in group_idx]
