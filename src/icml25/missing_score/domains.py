"""Truncated domains and their boundary-vanishing weight functions (truncated score matching).

A domain gives, for each row and observed coordinate j, a weight g_j >= 0 that vanishes on the
boundary and its derivative d g_j / d x_j. The truncated (marginal) score-matching term for
coordinate j is g_j (s_j^2 + 2 d_j s_j) + 2 (d_j g_j) s_j (the paper's eq. 5).
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["Box", "Domain", "HalfSpace"]


class Domain:
    """Base: the whole space, g = 1.

    Subclasses define ``contains`` (membership of rows), ``weights`` (the boundary-vanishing
    weight g and its derivative per coordinate) and ``standardised`` (the same set after the
    estimators' standardisation). The base class takes no parameters.

    Examples
    --------
    >>> import torch
    >>> x = torch.zeros(2, 3, dtype=torch.float64)
    >>> g, dg = Domain().weights(x, torch.ones_like(x))
    >>> Domain().contains(x).tolist(), g.sum().item(), dg.sum().item()
    ([True, True], 6.0, 0.0)
    """

    def contains(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ones(x.shape[:-1], dtype=torch.bool)

    def weights(self, x: torch.Tensor, observed: torch.Tensor):
        """(g, dg) of shape (N, d) for rows x (missing entries arbitrary) and a 0/1 mask."""
        return torch.ones_like(x), torch.zeros_like(x)

    def contains_numpy(self, X: np.ndarray) -> np.ndarray:
        return self.contains(torch.as_tensor(X, dtype=torch.float64)).numpy()

    def standardised(self, loc, scale) -> Domain:
        """The same set in coordinates z = (x - loc) / scale (estimators standardise data)."""
        return self


class Box(Domain):
    """Axis-aligned box lower <= x <= upper (use -inf/inf for open sides).

    g_j = min(x_j - lower_j, upper_j - x_j, cap) on truncated coordinates and 1 on coordinates
    with no finite bound (the paper's choice, cap = 0.5). The marginal of a box is a box, so the
    weight of an observed coordinate depends on that coordinate only.

    Parameters
    ----------
    lower : array-like of shape (d,)
        Lower bounds (``-inf`` for none).
    upper : array-like of shape (d,) or None, default=None
        Upper bounds (None: ``+inf`` everywhere).
    cap : float, default=0.5
        Largest value of the weight g.

    Attributes
    ----------
    lower, upper : torch.Tensor of shape (d,)
        The bounds (float64).
    cap : float
        The weight cap.
    truncated : torch.Tensor of shape (d,), bool
        Coordinates with a finite bound.

    Raises
    ------
    ValueError
        If the bounds are not 1-d of the same length, a lower bound is not below its upper
        bound, or ``cap`` is not positive.

    Examples
    --------
    >>> import torch
    >>> box = Box([0.0, -float("inf")])          # x_0 >= 0, x_1 free
    >>> x = torch.tensor([[0.2, 5.0], [-1.0, 0.0]], dtype=torch.float64)
    >>> box.contains(x).tolist()
    [True, False]
    >>> g, dg = box.weights(x[:1], torch.ones(1, 2))
    >>> g.tolist(), dg.tolist()
    ([[0.2, 1.0]], [[1.0, 0.0]])
    """

    def __init__(self, lower, upper=None, cap: float = 0.5):
        lo = np.asarray(lower, dtype=float)
        hi = np.full_like(lo, np.inf) if upper is None else np.asarray(upper, dtype=float)
        if lo.ndim != 1 or lo.shape != hi.shape:
            raise ValueError("lower and upper must be 1-D arrays of the same length")
        if np.any(lo >= hi):
            raise ValueError("every lower bound must be below its upper bound")
        if not cap > 0:
            raise ValueError("cap must be positive")
        self.lower = torch.as_tensor(lo, dtype=torch.float64)
        self.upper = torch.as_tensor(hi, dtype=torch.float64)
        self.cap = float(cap)
        self.truncated = torch.as_tensor(np.isfinite(lo) | np.isfinite(hi))

    def standardised(self, loc, scale):
        lo, hi = self.lower.numpy(), self.upper.numpy()
        return Box((lo - loc) / scale, (hi - loc) / scale, cap=self.cap)

    def contains(self, x):
        return ((x >= self.lower) & (x <= self.upper)).all(-1)

    def weights(self, x, observed):
        lo_gap, hi_gap = x - self.lower, self.upper - x
        dist = torch.minimum(lo_gap, hi_gap)
        g = torch.clamp(dist, max=self.cap)
        # derivative of min(x - l, u - x, cap): +1 near the lower side, -1 near the upper side
        dg = torch.where(lo_gap <= hi_gap, 1.0, -1.0).to(x.dtype) * (dist < self.cap)
        g = torch.where(self.truncated, g, torch.ones_like(g))
        dg = torch.where(self.truncated, dg, torch.zeros_like(dg))
        return g.clamp(min=0.0), dg


class HalfSpace(Domain):
    """Half-space {x : a . x <= b}.

    For a fully observed row, g_j = min(distance to the hyperplane, cap) for every j. A row with
    missing entries gets g = 1: the marginal of a half-space on a strict subset of coordinates is
    the whole space (the paper's implementation choice).

    Parameters
    ----------
    normal : array-like of shape (d,)
        The normal vector a (finite, non-zero; stored normalised).
    offset : float
        The offset b (stored divided by ``|a|``).
    cap : float, default=0.5
        Largest value of the weight g.

    Attributes
    ----------
    normal : torch.Tensor of shape (d,)
        The unit normal.
    offset : float
        The offset for the unit normal.
    cap : float
        The weight cap.

    Raises
    ------
    ValueError
        If ``normal`` is not a finite, non-zero 1-d vector.

    Examples
    --------
    >>> import torch
    >>> h = HalfSpace([1.0, 1.0], 1.0)           # x_0 + x_1 <= 1
    >>> x = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=torch.float64)
    >>> h.contains(x).tolist()
    [True, False]
    >>> g, _ = h.weights(x[:1], torch.tensor([[1.0, 0.0]]))   # a missing entry: g = 1
    >>> g.tolist()
    [[1.0, 1.0]]
    """

    def __init__(self, normal, offset: float, cap: float = 0.5):
        a = np.asarray(normal, dtype=float)
        if a.ndim != 1 or not np.all(np.isfinite(a)) or np.linalg.norm(a) == 0:
            raise ValueError("normal must be a finite, non-zero 1-D vector")
        self.normal = torch.as_tensor(a / np.linalg.norm(a), dtype=torch.float64)
        self.offset = float(offset) / float(np.linalg.norm(a))
        self.cap = float(cap)

    def standardised(self, loc, scale):
        # a.(loc + scale z) <= b  <=>  (a * scale).z <= b - a.loc
        a = self.normal.numpy()
        return HalfSpace(a * scale, self.offset - float(a @ loc), cap=self.cap)

    def contains(self, x):
        return x @ self.normal <= self.offset + 1e-12

    def weights(self, x, observed):
        dist = (self.offset - x @ self.normal).unsqueeze(-1)  # (N, 1)
        full = (observed > 0).all(-1, keepdim=True)
        g = torch.clamp(dist, min=0.0, max=self.cap).expand_as(x)
        dg = (-self.normal * (dist < self.cap)).expand_as(x)
        g = torch.where(full, g, torch.ones_like(g))
        dg = torch.where(full, dg, torch.zeros_like(dg))
        return g, dg
