"""Optimal reviewer assignment at conference scale (pure: numpy, scipy, optional OR-Tools).

The problem works on a **sparse candidate list** of (paper, reviewer, score) triples -- never on
a dense papers x reviewers table -- so a NeurIPS-size venue (30,000 x 20,000) stays in memory.

Constraints
    * every paper gets exactly ``k`` reviewers (per paper, may differ);
    * every reviewer gets between ``min_load`` and ``max_load`` papers;
    * at most one reviewer per institution per paper;
    * conflicts and forbidden pairs are never candidates; pinned pairs are always assigned.

Solvers
    * ``solve(..., objective="total")``: maximise the total score. The problem is a min-cost
      flow (source -> paper -> (paper, institution) -> reviewer -> sink), solved exactly with
      OR-Tools' network simplex when OR-Tools is installed, otherwise as the same linear programme
      with SciPy's HiGHS (the constraint matrix is two laminar families, hence totally unimodular,
      so the LP optimum is integral).
    * ``solve(..., objective="fair")``: first maximise the worst paper's total score (a MILP,
      HiGHS), then, holding that minimum, maximise the total. Exact but meant for up to a few
      thousand papers (``time_limit`` bounds it; the best feasible solution is returned).

Scores are floats; the flow solver works in integers (scores x 10,000), so its optimum is
exact up to 0.5e-4 per assigned pair.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, linprog, milp
from scipy.sparse import coo_matrix, csr_matrix, vstack

from icml25.review.affinity import BID_SCORE as BID_AFFINITY  # bid -> score, one map
from icml25.review.errors import AssignmentError

__all__ = ["BID_AFFINITY", "AssignmentError", "Problem", "Result", "assign_dense", "quality",
           "solve", "verify"]


SCALE = 10_000  # integer cost units per unit of score (flow solver)


@dataclass
class Problem:
    """A sparse assignment instance. Pair arrays are aligned: pair ``e`` is
    (``paper[e]``, ``reviewer[e]``) with combined score ``score[e]``.

    Build one with :meth:`build`, which validates the input, drops conflicted and forbidden
    pairs and adds pins.

    Parameters
    ----------
    n_papers, n_reviewers : int
        Sizes of the venue.
    paper, reviewer : numpy.ndarray
        ``(E,)`` int indices of the candidate pairs.
    score : numpy.ndarray
        ``(E,)`` float score of each pair.
    k : numpy.ndarray
        ``(n_papers,)`` reviewers wanted per paper.
    min_load, max_load : numpy.ndarray
        ``(n_reviewers,)`` bounds on each reviewer's papers.
    institution : numpy.ndarray
        ``(n_reviewers,)`` institution id (-1: no institution constraint).
    pinned : numpy.ndarray, default=empty
        ``(E,)`` bool, pairs that must be assigned.

    Raises
    ------
    AssignmentError
        (from :meth:`build`) for misaligned or out-of-range arrays, duplicate pairs,
        non-finite scores or a pinned pair that is conflicted or forbidden.

    Examples
    --------
    >>> from icml25.review import AssignmentProblem, solve_assignment
    >>> p = AssignmentProblem.build(2, 3, paper=[0, 0, 0, 1, 1, 1], reviewer=[0, 1, 2, 0, 1, 2],
    ...                             score=[0.9, 0.5, 0.1, 0.8, 0.2, 0.7], k=1, max_load=1)
    >>> p.k.tolist(), p.max_load.tolist(), len(p.score)
    ([1, 1], [1, 1, 1], 6)
    """

    n_papers: int
    n_reviewers: int
    paper: np.ndarray
    reviewer: np.ndarray
    score: np.ndarray
    k: np.ndarray  # reviewers wanted per paper
    min_load: np.ndarray
    max_load: np.ndarray
    institution: np.ndarray  # per reviewer; -1 = no institution constraint
    pinned: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))  # per pair

    @classmethod
    def build(cls, n_papers: int, n_reviewers: int, paper, reviewer, score, *, k: int | np.ndarray,
              min_load: int | np.ndarray = 0, max_load: int | np.ndarray,
              institution: np.ndarray | None = None, pinned: np.ndarray | None = None,
              conflicts: set[tuple[int, int]] | None = None,
              forbidden: set[tuple[int, int]] | None = None,
              pins: set[tuple[int, int]] | None = None) -> Problem:
        """Validate and normalise an instance; drops conflicted/forbidden pairs, adds pins.

        A pin on a pair that is not a candidate is added with score 0; a pin on a conflicted or
        forbidden pair is an error (the chair must resolve it).
        """
        paper = np.asarray(paper, dtype=np.int64).ravel()
        reviewer = np.asarray(reviewer, dtype=np.int64).ravel()
        score = np.asarray(score, dtype=float).ravel()
        if not (len(paper) == len(reviewer) == len(score)):
            raise AssignmentError("paper, reviewer and score arrays must have the same length")
        if len(paper) and (paper.min() < 0 or paper.max() >= n_papers
                           or reviewer.min() < 0 or reviewer.max() >= n_reviewers):
            raise AssignmentError("pair indices out of range")
        if not np.isfinite(score).all():
            raise AssignmentError("scores must be finite")
        pin = (np.zeros(len(paper), bool) if pinned is None
               else np.asarray(pinned, bool).ravel().copy())
        blocked = (conflicts or set()) | (forbidden or set())
        bad_pins = sorted(p for p in (pins or set()) if p in blocked)
        if bad_pins:
            raise AssignmentError(f"pinned pairs are conflicted or forbidden: {bad_pins[:5]}")
        keys = paper * n_reviewers + reviewer
        if len(np.unique(keys)) != len(keys):
            raise AssignmentError("duplicate (paper, reviewer) candidate pairs")
        if blocked:
            bk = np.array([p * n_reviewers + r for p, r in blocked], dtype=np.int64)
            keep = ~np.isin(keys, bk)
            paper, reviewer, score, pin, keys = (x[keep] for x in (paper, reviewer, score, pin,
                                                                    keys))
        if pins:
            want = np.array([p * n_reviewers + r for p, r in pins], dtype=np.int64)
            present = np.isin(want, keys)
            pin |= np.isin(keys, want)
            extra = want[~present]
            paper = np.concatenate([paper, extra // n_reviewers])
            reviewer = np.concatenate([reviewer, extra % n_reviewers])
            score = np.concatenate([score, np.zeros(len(extra))])
            pin = np.concatenate([pin, np.ones(len(extra), bool)])
        inst = (np.full(n_reviewers, -1, np.int64) if institution is None
                else np.asarray(institution, np.int64).ravel())
        if len(inst) != n_reviewers:
            raise AssignmentError("one institution per reviewer is needed")
        return cls(n_papers, n_reviewers, paper, reviewer, score,
                   _per(k, n_papers, "k"), _per(min_load, n_reviewers, "min_load"),
                   _per(max_load, n_reviewers, "max_load"), inst, pin)

    def check(self) -> None:
        """Raise :class:`AssignmentError` on instances that are infeasible on their face."""
        if (self.min_load > self.max_load).any():
            raise AssignmentError("min_load exceeds max_load for some reviewer")
        need = int(self.k.sum())
        if need > int(self.max_load.sum()):
            raise AssignmentError(f"{need} reviews needed but reviewers can take at most "
                                  f"{int(self.max_load.sum())} (raise max_load or add reviewers)")
        if need < int(self.min_load.sum()):
            raise AssignmentError(f"only {need} reviews to hand out but minimum loads add up "
                                  f"to {int(self.min_load.sum())}")
        # a paper cannot get more reviewers than distinct institutions among its candidates
        inst = self.institution[self.reviewer]
        uniq = np.where(inst < 0, -1 - self.reviewer, inst)  # no institution = its own group
        groups = np.unique(np.stack([self.paper, uniq]), axis=1)
        avail = np.bincount(groups[0], minlength=self.n_papers)
        short = np.flatnonzero(avail < self.k)
        if len(short):
            raise AssignmentError(
                f"{len(short)} paper(s) have fewer eligible reviewers (from distinct "
                f"institutions) than required, e.g. paper {int(short[0])}: "
                f"{int(avail[short[0]])} < {int(self.k[short[0]])}; widen the candidate lists")
        pins_p = np.bincount(self.paper[self.pinned], minlength=self.n_papers)
        if (pins_p > self.k).any():
            raise AssignmentError("a paper has more pinned reviewers than it needs")
        g, n_g = _groups(self)
        if (np.bincount(g[self.pinned], minlength=n_g) > 1).any():
            raise AssignmentError("two pinned reviewers of one institution on the same paper")
        pins_r = np.bincount(self.reviewer[self.pinned], minlength=self.n_reviewers)
        if (pins_r > self.max_load).any():
            raise AssignmentError("a reviewer has more pinned papers than their max_load")


def _per(value: int | np.ndarray, n: int, name: str) -> np.ndarray:
    arr = np.asarray(value, dtype=np.int64)
    arr = np.full(n, int(arr)) if arr.ndim == 0 else arr.ravel()
    if len(arr) != n:
        raise AssignmentError(f"{name} needs one value per item ({n})")
    if (arr < 0).any():
        raise AssignmentError(f"{name} must be non-negative")
    return arr


@dataclass
class Result:
    """Chosen pairs (indices into the problem's pair arrays) and how they were found."""

    chosen: np.ndarray  # bool per candidate pair
    objective: str
    solver: str
    total_score: float
    min_paper_score: float
    optimal: bool

    def pairs(self, problem: Problem) -> list[tuple[int, int]]:
        """(paper, reviewer) pairs of the assignment."""
        idx = np.flatnonzero(self.chosen)
        return list(zip(problem.paper[idx].tolist(), problem.reviewer[idx].tolist(),
                        strict=True))


def _groups(p: Problem) -> tuple[np.ndarray, int]:
    """Index of the (paper, institution) group of each pair; reviewers without an institution
    get a group of their own (no constraint)."""
    inst = p.institution[p.reviewer]
    key_inst = np.where(inst < 0, -1 - p.reviewer, inst)
    _, g = np.unique(np.stack([p.paper, key_inst]), axis=1, return_inverse=True)
    g = g.ravel()
    return g, int(g.max()) + 1 if len(g) else 0


def _paper_totals(p: Problem, chosen: np.ndarray) -> np.ndarray:
    return np.bincount(p.paper[chosen], weights=p.score[chosen], minlength=p.n_papers)


def _result(p: Problem, chosen: np.ndarray, objective: str, solver: str,
            optimal: bool) -> Result:
    totals = _paper_totals(p, chosen)
    return Result(chosen, objective, solver, float(p.score[chosen].sum()),
                  float(totals.min()) if p.n_papers else 0.0, optimal)


def solve(p: Problem, objective: str = "total", backend: str = "auto",
          time_limit: float = 600.0) -> Result:
    """Solve an assignment problem exactly.

    Parameters
    ----------
    p : AssignmentProblem
        The instance.
    objective : {"total", "fair"}, default="total"
        ``"total"`` maximises the total score (a min-cost flow); ``"fair"`` maximises the worst
        paper's total score, then the total (a MILP, for up to a few thousand papers).
    backend : {"auto", "ortools", "highs"}, default="auto"
        Solver for ``"total"``: OR-Tools' network simplex, SciPy's HiGHS LP, or OR-Tools when
        installed.
    time_limit : float, default=600.0
        Seconds for the ``"fair"`` MILP (the best feasible solution is returned).

    Returns
    -------
    Result
        ``chosen`` (bool per candidate pair), ``objective``, ``solver``, ``total_score``,
        ``min_paper_score`` and ``optimal``; ``result.pairs(p)`` lists (paper, reviewer).

    Raises
    ------
    AssignmentError
        When the constraints cannot be met, or for an unknown objective or backend.

    Examples
    --------
    >>> from icml25.review import AssignmentProblem, solve_assignment
    >>> p = AssignmentProblem.build(2, 3, paper=[0, 0, 0, 1, 1, 1], reviewer=[0, 1, 2, 0, 1, 2],
    ...                             score=[0.9, 0.5, 0.1, 0.8, 0.2, 0.7], k=1, max_load=1)
    >>> result = solve_assignment(p)
    >>> result.pairs(p), result.total_score, result.min_paper_score
    ([(0, 0), (1, 2)], 1.6, 0.7)
    >>> solve_assignment(p, objective="fair").pairs(p)
    [(0, 0), (1, 2)]
    """
    p.check()
    if objective == "fair":
        return _solve_fair(p, time_limit)
    if objective != "total":
        raise AssignmentError("objective is 'total' or 'fair'")
    if backend == "auto":
        try:
            import ortools  # noqa: F401
            backend = "ortools"
        except ImportError:
            backend = "highs"
    if backend == "ortools":
        return _solve_flow(p)
    if backend == "highs":
        return _solve_lp(p)
    raise AssignmentError("backend is 'ortools', 'highs' or 'auto'")


def _solve_flow(p: Problem) -> Result:
    """Min-cost flow with OR-Tools. Nodes: papers, (paper, institution) groups, reviewers, sink.

    Lower bounds are handled by supplies: a paper supplies its ``k``; a reviewer absorbs its
    ``min_load`` and forwards at most ``max_load - min_load`` to the sink, which absorbs the rest.
    Pins are taken out beforehand (they use up demand, load and their institution slot).
    """
    from ortools.graph.python import min_cost_flow

    pin = p.pinned
    g, n_groups = _groups(p)
    used_groups = np.zeros(n_groups, bool)
    used_groups[g[pin]] = True
    k = p.k - np.bincount(p.paper[pin], minlength=p.n_papers)
    load_pin = np.bincount(p.reviewer[pin], minlength=p.n_reviewers)
    max_l = p.max_load - load_pin
    min_l = np.maximum(p.min_load - load_pin, 0)
    free = ~pin & ~used_groups[g]
    idx = np.flatnonzero(free)
    n_p, n_r = p.n_papers, p.n_reviewers
    g_free = g[idx]
    gid, g_local = np.unique(g_free, return_inverse=True)
    n_g = len(gid)
    off_g, off_r, sink = n_p, n_p + n_g, n_p + n_g + n_r
    # paper -> group (capacity 1: one reviewer per institution per paper)
    g_paper = np.zeros(n_g, np.int64)
    g_paper[g_local] = p.paper[idx]
    tails = [g_paper, off_g + g_local, off_r + np.arange(n_r)]
    heads = [off_g + np.arange(n_g), off_r + p.reviewer[idx], np.full(n_r, sink)]
    caps = [np.ones(n_g, np.int64), np.ones(len(idx), np.int64), max_l - min_l]
    costs = [np.zeros(n_g, np.int64), -np.rint(p.score[idx] * SCALE).astype(np.int64),
             np.zeros(n_r, np.int64)]
    smcf = min_cost_flow.SimpleMinCostFlow()
    arcs = smcf.add_arcs_with_capacity_and_unit_cost(
        np.concatenate(tails), np.concatenate(heads), np.concatenate(caps),
        np.concatenate(costs))
    supplies = np.concatenate([k, np.zeros(n_g, np.int64), -min_l,
                               [-(int(k.sum()) - int(min_l.sum()))]])
    smcf.set_nodes_supplies(np.arange(len(supplies)), supplies.astype(np.int64))
    status = smcf.solve()
    if status != smcf.OPTIMAL:
        raise AssignmentError("no assignment satisfies every constraint (min-cost flow is "
                              "infeasible: check loads, conflicts and candidate lists)")
    pair_arcs = arcs[n_g:n_g + len(idx)]
    flows = smcf.flows(pair_arcs)
    chosen = pin.copy()
    chosen[idx[flows > 0]] = True
    return _result(p, chosen, "total", "ortools-min-cost-flow", True)


def _constraints(p: Problem) -> tuple[list[LinearConstraint], csr_matrix]:
    """Row blocks over the pair variables: per paper (= k), per reviewer (loads), per
    (paper, institution) group (<= 1). Returns the constraints and the paper block."""
    n = len(p.paper)
    cols = np.arange(n)
    ones = np.ones(n)
    a_p = coo_matrix((ones, (p.paper, cols)), shape=(p.n_papers, n)).tocsr()
    a_r = coo_matrix((ones, (p.reviewer, cols)), shape=(p.n_reviewers, n)).tocsr()
    g, n_g = _groups(p)
    a_g = coo_matrix((ones, (g, cols)), shape=(n_g, n)).tocsr()
    cons = [LinearConstraint(a_p, p.k, p.k),
            LinearConstraint(a_r, p.min_load, p.max_load),
            LinearConstraint(a_g, 0, 1)]
    return cons, a_p


def _solve_lp(p: Problem) -> Result:
    """The same model as a linear programme (HiGHS); integral because the matrix is TU."""
    cons, _ = _constraints(p)
    a_eq, b_eq = cons[0].A, cons[0].lb
    a_ub = vstack([cons[1].A, -cons[1].A, cons[2].A]).tocsr()
    b_ub = np.concatenate([cons[1].ub, -cons[1].lb, np.ones(cons[2].A.shape[0])])
    lb = p.pinned.astype(float)
    res = linprog(-p.score, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=b_eq,
                  bounds=np.stack([lb, np.ones(len(lb))], axis=1), method="highs")
    if res.status != 0:
        raise AssignmentError(f"no assignment satisfies every constraint: {res.message}")
    chosen = res.x > 0.5
    return _result(p, chosen, "total", "highs-lp", True)


def _solve_fair(p: Problem, time_limit: float) -> Result:
    """Stage 1: maximise t subject to every paper's total score >= t (MILP). Stage 2: keep the
    minimum and maximise the total score."""
    n = len(p.paper)
    cons, a_p = _constraints(p)
    a_t = a_p.multiply(p.score[None, :]).tocsr()
    # variables: x (n pairs) then t
    def with_t(c: LinearConstraint, t_coef: float = 0.0) -> LinearConstraint:
        extra = csr_matrix(np.full((c.A.shape[0], 1), t_coef))
        from scipy.sparse import hstack

        return LinearConstraint(hstack([c.A, extra]).tocsr(), c.lb, c.ub)

    fair_rows = with_t(LinearConstraint(a_t, 0, np.inf), -1.0)  # sum score*x - t >= 0
    all_cons = [with_t(c) for c in cons] + [fair_rows]
    lo = np.concatenate([p.pinned.astype(float), [p.score.min(initial=0) * p.k.max() - 1]])
    hi = np.concatenate([np.ones(n), [np.inf]])
    integ = np.concatenate([np.ones(n), [0]])
    c1 = np.zeros(n + 1)
    c1[-1] = -1.0
    opts = {"time_limit": time_limit / 2, "mip_rel_gap": 1e-9}
    r1 = milp(c1, constraints=all_cons, integrality=integ, bounds=Bounds(lo, hi), options=opts)
    if r1.x is None:
        raise AssignmentError(f"no assignment satisfies every constraint: {r1.message}")
    t_star = float(_paper_totals(p, r1.x[:n] > 0.5).min())
    lo2 = lo.copy()
    lo2[-1] = t_star - 1e-7
    c2 = np.concatenate([-p.score, [0.0]])
    r2 = milp(c2, constraints=all_cons, integrality=integ, bounds=Bounds(lo2, hi), options=opts)
    x = (r2.x if r2.x is not None else r1.x)[:n] > 0.5
    optimal = r1.status == 0 and r2.status == 0
    return _result(p, x, "fair", "highs-milp", optimal)


def quality(p: Problem, result: Result, affinity: np.ndarray | None = None,
            bid: np.ndarray | None = None) -> dict:
    """What a chair sees before committing: per-pair affinity (text similarity) and bid
    statistics over the chosen pairs, the worst-off papers, and reviewer loads.

    Parameters
    ----------
    p : AssignmentProblem
        The instance.
    result : Result
        Its solution (:func:`solve_assignment`).
    affinity : numpy.ndarray or None, default=None
        ``(E,)`` text affinity per candidate pair (None: the pair scores).
    bid : numpy.ndarray or None, default=None
        ``(E,)`` bid per candidate pair; adds the bid statistics.

    Returns
    -------
    dict
        ``objective``, ``solver``, ``optimal``, ``n_pairs``, ``total_score``,
        ``mean_affinity``, ``min_pair_affinity``, ``min_paper_affinity``,
        ``mean_paper_affinity``, ``worst_papers`` (up to 5), ``load_min``, ``load_max``,
        ``n_pinned`` and, with ``bid``, ``bids_positive_assigned``, ``bids_positive_total``,
        ``bids_honoured`` and ``negative_bid_pairs``.

    Examples
    --------
    >>> from icml25.review import assignment_quality
    >>> from icml25.review import AssignmentProblem, solve_assignment
    >>> p = AssignmentProblem.build(2, 3, paper=[0, 0, 0, 1, 1, 1], reviewer=[0, 1, 2, 0, 1, 2],
    ...                             score=[0.9, 0.5, 0.1, 0.8, 0.2, 0.7], k=1, max_load=1)
    >>> q = assignment_quality(p, solve_assignment(p))
    >>> q["n_pairs"], q["mean_affinity"], q["worst_papers"], q["load_max"]
    (2, 0.8, [1, 0], 1)
    """
    ch = result.chosen
    aff = p.score if affinity is None else np.asarray(affinity, float)
    per_paper = np.bincount(p.paper[ch], weights=aff[ch], minlength=p.n_papers)
    loads = np.bincount(p.reviewer[ch], minlength=p.n_reviewers)
    out = {
        "objective": result.objective, "solver": result.solver, "optimal": result.optimal,
        "n_pairs": int(ch.sum()), "total_score": round(result.total_score, 4),
        "mean_affinity": round(float(aff[ch].mean()), 4) if ch.any() else 0.0,
        "min_pair_affinity": round(float(aff[ch].min()), 4) if ch.any() else 0.0,
        "min_paper_affinity": round(float(per_paper.min()), 4) if p.n_papers else 0.0,
        "mean_paper_affinity": round(float(per_paper.mean()), 4) if p.n_papers else 0.0,
        "worst_papers": [int(i) for i in np.argsort(per_paper, kind="stable")[:5]],
        "load_min": int(loads.min()) if p.n_reviewers else 0,
        "load_max": int(loads.max()) if p.n_reviewers else 0,
        "n_pinned": int(p.pinned.sum()),
    }
    if bid is not None:
        b = np.asarray(bid, float)
        out["bids_positive_assigned"] = int((b[ch] > 0).sum())
        out["bids_positive_total"] = int((b > 0).sum())
        out["bids_honoured"] = round(out["bids_positive_assigned"]
                                     / max(out["bids_positive_total"], 1), 4)
        out["negative_bid_pairs"] = int((b[ch] < 0).sum())
    return out


def verify(p: Problem, result: Result) -> list[str]:
    """Every broken constraint of an assignment (empty when it is valid)."""
    ch = result.chosen
    errs = []
    per_p = np.bincount(p.paper[ch], minlength=p.n_papers)
    if (per_p != p.k).any():
        errs.append(f"{int((per_p != p.k).sum())} paper(s) without exactly k reviewers")
    loads = np.bincount(p.reviewer[ch], minlength=p.n_reviewers)
    if ((loads < p.min_load) | (loads > p.max_load)).any():
        errs.append("reviewer load outside [min_load, max_load]")
    g, n_g = _groups(p)
    if (np.bincount(g[ch], minlength=n_g) > 1).any():
        errs.append("two reviewers of one institution on a paper")
    if (p.pinned & ~ch).any():
        errs.append("a pinned pair is not assigned")
    return errs


def assign_dense(affinity: np.ndarray, conflicts: np.ndarray, k: int,
                 max_load: int | np.ndarray, existing: np.ndarray | None = None,
                 backend: str = "auto") -> np.ndarray:
    """The optimal assignment of a small venue given dense (papers x reviewers) tables.

    Each paper gets ``k`` reviewers (or every non-conflicted one when fewer exist), each
    reviewer at most ``max_load`` (one number, or one per reviewer: their quotas);
    ``existing`` pairs are kept (pinned). Returns a boolean table. Raises
    :class:`AssignmentError` when the loads cannot be met.
    """
    affinity = np.asarray(affinity, dtype=float)
    conflicts = np.asarray(conflicts, dtype=bool)
    n_p, n_r = affinity.shape
    fixed = (np.zeros((n_p, n_r), bool) if existing is None
             else np.asarray(existing, dtype=bool))
    if n_p == 0:
        return np.zeros((0, n_r), dtype=bool)
    if (fixed & conflicts).any():
        raise AssignmentError("an existing assignment is conflicted")
    need = np.minimum(k, (~conflicts).sum(axis=1))
    capacity = int(np.broadcast_to(np.asarray(max_load), (n_r,)).sum())
    if need.sum() > capacity:
        raise AssignmentError(
            f"{int(need.sum())} reviews needed but the {n_r} reviewers' loads allow "
            f"{capacity}")
    paper, reviewer = np.nonzero(~conflicts)
    problem = Problem.build(n_p, n_r, paper, reviewer, affinity[paper, reviewer], k=need,
                            max_load=max_load, pinned=fixed[paper, reviewer])
    result = solve(problem, backend=backend)
    out = np.zeros((n_p, n_r), dtype=bool)
    out[problem.paper[result.chosen], problem.reviewer[result.chosen]] = True
    return out
