"""A simple optimal reviewer assignment (pure; the scale issue replaces it with a faster one).

Maximise the total affinity sum over assigned (paper, reviewer) pairs subject to: each paper gets
exactly ``k`` reviewers (or as many non-conflicted reviewers as exist), each reviewer at most
``max_load`` papers, and no conflicted pair. Solved exactly as a 0/1 integer programme with
SciPy's HiGHS (the constraint matrix is totally unimodular, so the LP optimum is integral).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import lil_matrix

# bid value (-2..2) -> affinity, in the spirit of OpenReview's translate map
BID_AFFINITY = {-2: -1.0, -1: -0.5, 0: 0.0, 1: 0.75, 2: 1.0}


class AssignmentError(ValueError):
    """The constraints cannot be met (message says which)."""


def auto_assign(n_papers: int, n_reviewers: int, affinity: np.ndarray, conflicts: np.ndarray,
                k: int, max_load: int, existing: np.ndarray | None = None) -> np.ndarray:
    """Return a boolean (papers x reviewers) assignment maximising total affinity.

    ``existing`` pairs are kept (they count towards ``k`` and the loads).
    """
    affinity = np.asarray(affinity, dtype=float).reshape(n_papers, n_reviewers)
    conflicts = np.asarray(conflicts, dtype=bool).reshape(n_papers, n_reviewers)
    fixed = (np.zeros_like(conflicts) if existing is None
             else np.asarray(existing, dtype=bool).reshape(n_papers, n_reviewers))
    if n_papers == 0:
        return np.zeros((0, n_reviewers), dtype=bool)
    if (fixed & conflicts).any():
        raise AssignmentError("an existing assignment is conflicted")
    need = np.minimum(k, (~conflicts).sum(axis=1))
    if need.sum() > n_reviewers * max_load:
        raise AssignmentError(
            f"{int(need.sum())} reviews needed but {n_reviewers} reviewers x load {max_load} "
            f"= {n_reviewers * max_load} available")
    nv = n_papers * n_reviewers
    a = lil_matrix((n_papers + n_reviewers, nv))
    for p in range(n_papers):
        a[p, p * n_reviewers:(p + 1) * n_reviewers] = 1
    for r in range(n_reviewers):
        a[n_papers + r, r::n_reviewers] = 1
    lo = np.concatenate([need, np.zeros(n_reviewers)])
    hi = np.concatenate([need, np.full(n_reviewers, max_load)])
    ub = (~conflicts).astype(float).ravel()
    lb = fixed.astype(float).ravel()
    # small reviewer-specific jitter-free tie break: prefer lightly loaded reviewers is implicit
    res = milp(c=-affinity.ravel(), constraints=LinearConstraint(a.tocsr(), lo, hi),
               integrality=np.ones(nv), bounds=Bounds(lb, ub))
    if res.status != 0 or res.x is None:
        raise AssignmentError(f"no feasible assignment: {res.message}")
    return res.x.reshape(n_papers, n_reviewers) > 0.5
