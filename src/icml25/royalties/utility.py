"""Coalition utilities: the plug-in interface, a cache, and the n-gram log-ratio utility.

A utility is anything with ``players`` (a list of names) and a batch call
``utility(coalitions) -> values`` where ``coalitions`` is a boolean matrix with one row per
coalition and one column per player. Batching lets a vectorised model score many coalitions
at once; a user who has only a per-coalition function wraps it in :class:`FunctionUtility`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from icml25.royalties.errors import RoyaltyInputError
from icml25.royalties.ngram import KneserNeyCoalitionLM


@runtime_checkable
class CoalitionUtility(Protocol):
    """What the Shapley routines need: player names and a batch value function.

    Any object with a ``players`` list and a ``__call__`` that maps a boolean coalition
    matrix to one value per row satisfies this protocol (it is ``runtime_checkable``).

    Parameters
    ----------
    coalitions : numpy.ndarray of bool, shape (k, n_players)
        Argument of ``__call__``: one row per coalition, ``True`` where the player is in it.

    Attributes
    ----------
    players : list of str
        Player (holder) names, one per column of ``coalitions``.

    Returns
    -------
    numpy.ndarray of float, shape (k,)
        What ``__call__`` returns: the value v(S) of each coalition.

    Examples
    --------
    >>> import numpy as np
    >>> class Size:
    ...     players = ["a", "b"]
    ...     def __call__(self, coalitions):
    ...         return np.asarray(coalitions).sum(axis=1).astype(float)
    >>> isinstance(Size(), CoalitionUtility)
    True
    >>> Size()(np.array([[True, True]])).tolist()
    [2.0]
    """

    players: list[str]

    def __call__(self, coalitions: np.ndarray) -> np.ndarray:  # (k, n) bool -> (k,) float
        ...


def check_coalitions(coalitions, n_players: int) -> np.ndarray:
    """A boolean (k, n_players) matrix, or a clear error."""
    arr = np.asarray(coalitions)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[1] != n_players:
        raise RoyaltyInputError(
            f"coalitions must be a boolean matrix with {n_players} columns, got shape {arr.shape}")
    if arr.dtype != bool:
        if not np.isin(arr, (0, 1)).all():
            raise RoyaltyInputError("coalition entries must be 0/1 or booleans")
        arr = arr.astype(bool)
    return arr


class FunctionUtility:
    """Wrap ``fn(members: frozenset[str]) -> float`` (e.g. fine-tune on S, score the artifact).

    ``fn`` is called once per row of each batch it is asked about; pair it with
    :class:`CachedUtility` so no coalition is ever evaluated twice.

    Parameters
    ----------
    players : sequence of str
        Unique player names, one per coalition column.
    fn : callable
        ``fn(members) -> float`` where ``members`` is the frozenset of player names in the
        coalition; it must return a finite number.

    Attributes
    ----------
    players : list of str
        The player names, as strings.
    fn : callable
        The wrapped function.

    Returns
    -------
    numpy.ndarray of float, shape (k,)
        Calling the instance on a (k, n_players) boolean matrix gives one value per row.

    Raises
    ------
    RoyaltyInputError
        If ``players`` is empty or has duplicates, if the coalition matrix has the wrong
        shape or non-0/1 entries, or if ``fn`` returns a non-finite value.

    Examples
    --------
    >>> u = FunctionUtility(["a", "b"], lambda s: float(len(s)))
    >>> u(np.array([[True, True], [False, True]])).tolist()
    [2.0, 1.0]
    """

    def __init__(self, players: Sequence[str], fn: Callable[[frozenset[str]], float]):
        self.players = _check_players(players)
        self.fn = fn

    def __call__(self, coalitions: np.ndarray) -> np.ndarray:
        coalitions = check_coalitions(coalitions, len(self.players))
        out = np.empty(len(coalitions))
        for r, row in enumerate(coalitions):
            members = frozenset(p for p, m in zip(self.players, row, strict=True) if m)
            value = float(self.fn(members))
            if not np.isfinite(value):
                raise RoyaltyInputError(
                    f"the utility returned {value} for coalition {sorted(members)}")
            out[r] = value
        return out


class CachedUtility:
    """Memoise a utility by coalition: each distinct coalition is evaluated once.

    ``n_evaluations`` counts coalitions handed to the wrapped utility; ``n_requests`` counts
    coalitions asked for. Within one call, unseen coalitions are evaluated in a single batch.

    Parameters
    ----------
    utility : CoalitionUtility
        The utility to memoise; a :class:`CachedUtility` is unwrapped, not nested.

    Attributes
    ----------
    utility : CoalitionUtility
        The wrapped utility.
    players : list of str
        The wrapped utility's player names.
    n_evaluations : int
        Coalitions actually evaluated by the wrapped utility.
    n_requests : int
        Coalitions asked for, cached or not.

    Returns
    -------
    numpy.ndarray of float, shape (k,)
        Calling the instance on a (k, n_players) boolean matrix gives one value per row.

    Raises
    ------
    RoyaltyInputError
        If the coalition matrix is malformed, or the wrapped utility returns the wrong number
        of values or a non-finite one.

    Examples
    --------
    >>> import numpy as np
    >>> u = CachedUtility(FunctionUtility(["a", "b"], lambda s: float(len(s))))
    >>> u(np.array([[1, 0], [1, 0], [1, 1]])).tolist()
    [1.0, 1.0, 2.0]
    >>> u.n_requests, u.n_evaluations, len(u)
    (3, 2, 2)
    """

    def __init__(self, utility: CoalitionUtility):
        if isinstance(utility, CachedUtility):
            utility = utility.utility
        self.utility = utility
        self.players = list(utility.players)
        self._cache: dict[bytes, float] = {}
        self.n_evaluations = 0
        self.n_requests = 0

    def __call__(self, coalitions: np.ndarray) -> np.ndarray:
        coalitions = check_coalitions(coalitions, len(self.players))
        keys = [k.tobytes() for k in np.packbits(coalitions, axis=1)]
        self.n_requests += len(keys)
        missing: dict[bytes, int] = {}
        for r, key in enumerate(keys):
            if key not in self._cache and key not in missing:
                missing[key] = r
        if missing:
            rows = coalitions[list(missing.values())]
            values = np.asarray(self.utility(rows), dtype=np.float64).reshape(-1)
            if values.shape != (len(rows),):
                raise RoyaltyInputError(
                    f"the utility returned {values.shape[0]} values for {len(rows)} coalitions")
            if not np.isfinite(values).all():
                raise RoyaltyInputError("the utility returned a non-finite value")
            self.n_evaluations += len(rows)
            self._cache.update(zip(missing, values.tolist(), strict=True))
        return np.array([self._cache[k] for k in keys])

    def __len__(self) -> int:
        return len(self._cache)


class NgramLogRatioUtility:
    """v(S) = log p_S(x) − log p_∅(x) for one artifact x under a fitted coalition LM.

    p_S is the Kneser–Ney model of the baseline plus S's summed counts; v(∅) = 0. Several
    artifacts give the sum of their log-ratios (the utility of a batch of artifacts).

    Parameters
    ----------
    lm : KneserNeyCoalitionLM
        A fitted coalition language model; its holders are the players.
    artifacts : str or sequence of str
        The artifact text(s) whose likelihood gain is measured.

    Attributes
    ----------
    players : list of str
        The holders of ``lm``, in order.

    Returns
    -------
    numpy.ndarray of float, shape (k,)
        Calling the instance on a (k, n_players) boolean matrix gives v(S) per row (nats).

    Raises
    ------
    RoyaltyInputError
        If ``artifacts`` is empty or the coalition matrix is malformed.

    Examples
    --------
    >>> import numpy as np
    >>> lm = KneserNeyCoalitionLM(order=2).fit({"ann": "the cat sat", "bob": "a dog ran"},
    ...                                        baseline="the end")
    >>> u = NgramLogRatioUtility(lm, "the cat sat")
    >>> u.players
    ['ann', 'bob']
    >>> v = u(np.array([[False, False], [True, False]]))
    >>> float(v[0]), bool(v[1] > 0)
    (0.0, True)
    """

    def __init__(self, lm: KneserNeyCoalitionLM, artifacts: str | Sequence[str]):
        texts = [artifacts] if isinstance(artifacts, str) else list(artifacts)
        if not texts:
            raise RoyaltyInputError("at least one artifact is needed")
        self.players = list(lm.holders_)
        self._plans = [lm.plan(t) for t in texts]
        empty = np.zeros((1, len(self.players)), dtype=bool)
        self._empty = [float(p.log_prob(empty)[0]) for p in self._plans]

    def __call__(self, coalitions: np.ndarray) -> np.ndarray:
        coalitions = check_coalitions(coalitions, len(self.players))
        total = np.zeros(len(coalitions))
        for plan, base in zip(self._plans, self._empty, strict=True):
            total += plan.log_prob(coalitions) - base
        return total


def _check_players(players: Sequence[str]) -> list[str]:
    names = list(players)
    if not names:
        raise RoyaltyInputError("a utility needs at least one player")
    if len(set(names)) != len(names):
        raise RoyaltyInputError(f"player names must be unique, got {names}")
    return [str(p) for p in names]
