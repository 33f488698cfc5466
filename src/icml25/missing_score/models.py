"""Unnormalised density models q_theta(x) with their scores and Hessian diagonals.

Every model is a ``torch.nn.Module`` with ``log_q(x) -> (N,)``. ``score`` (the gradient of
``log_q`` in x) and ``hess_diag`` (d s_j / d x_j) default to autograd, so any energy a user writes
plugs in; the Gaussian and ICA-type models override them with closed forms so that no autograd
loop over the d dimensions is needed (the main cost of score matching in high dimension).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

__all__ = [
    "DensityModel",
    "EnergyModel",
    "GaussianModel",
    "ICAModel",
]


class DensityModel(nn.Module):
    """Base class: subclasses implement ``log_q``; scores come from autograd unless overridden.

    ``analytic=False`` forces the autograd path even where a closed form exists (benchmarks and
    tests compare the two).

    Parameters
    ----------
    dim : int
        Number of variables (>= 1).

    Attributes
    ----------
    dim : int
        Number of variables.

    Raises
    ------
    ValueError
        If ``dim < 1``.

    Examples
    --------
    >>> import torch
    >>> class Laplace(DensityModel):
    ...     def log_q(self, x):
    ...         return -x.abs().sum(-1)
    >>> Laplace(2).score(torch.tensor([[1.0, -2.0]])).tolist()
    [[-1.0, 1.0]]
    """

    analytic: bool = False

    def __init__(self, dim: int):
        super().__init__()
        if int(dim) < 1:
            raise ValueError(f"dim must be >= 1, got {dim}")
        self.dim = int(dim)

    def log_q(self, x: torch.Tensor) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    # -- autograd fallbacks ------------------------------------------------------------------
    def _autograd_score_hess(self, x: torch.Tensor, want_hess: bool):
        # create_graph keeps the result differentiable in theta (score matching needs it).
        with torch.enable_grad():
            # keep an existing graph in x (the variational inner step differentiates through it)
            xg = x if x.requires_grad else x.detach().requires_grad_(True)
            lq = self.log_q(xg)
            (s,) = torch.autograd.grad(lq.sum(), xg, create_graph=True)
            if not want_hess:
                return s, None
            cols = []
            for j in range(x.shape[-1]):  # the d-pass loop the analytic models avoid
                (g,) = torch.autograd.grad(s[..., j].sum(), xg, create_graph=True)
                cols.append(g[..., j])
            return s, torch.stack(cols, dim=-1)

    def score(self, x: torch.Tensor) -> torch.Tensor:
        """grad_x log q(x), shape (N, d)."""
        return self._autograd_score_hess(x, want_hess=False)[0]

    def hess_diag(self, x: torch.Tensor) -> torch.Tensor:
        """d s_j / d x_j, shape (N, d)."""
        return self._autograd_score_hess(x, want_hess=True)[1]

    def score_and_hess_diag(self, x: torch.Tensor):
        """(log q, score, Hessian diagonal) in one pass; all differentiable in the parameters."""
        if self.analytic:
            return self.log_q(x), self.score(x), self.hess_diag(x)
        s, h = self._autograd_score_hess(x, want_hess=True)
        return self.log_q(x), s, h


class EnergyModel(DensityModel):
    """Wrap any torch callable ``energy(x) -> (N,)`` returning log q(x) (up to a constant).

    Parameters of ``energy`` (if it is an ``nn.Module``) and any tensors passed in ``params``
    (for a plain function closing over them) are trained. Scores and Hessian diagonals come
    from autograd.

    Parameters
    ----------
    energy : callable
        ``energy(x)`` for x of shape (N, d) returns log q(x) of shape (N,).
    dim : int
        Number of variables.
    params : iterable of torch.Tensor, default=()
        Extra tensors to train (wrapped as ``nn.Parameter``).

    Raises
    ------
    TypeError
        If ``energy`` is not callable.
    ValueError
        If ``dim < 1``, or (when called) ``energy`` returns the wrong shape.

    Examples
    --------
    >>> import torch
    >>> m = EnergyModel(lambda x: -(x ** 4).sum(-1), dim=2)
    >>> m.score(torch.ones(1, 2)).tolist()
    [[-4.0, -4.0]]
    """

    def __init__(self, energy: Callable[[torch.Tensor], torch.Tensor], dim: int, params=()):
        super().__init__(dim)
        if not callable(energy):
            raise TypeError("energy must be callable: x (N, d) -> log q (N,)")
        self.energy = energy
        self.extra = nn.ParameterList(list(params))

    def log_q(self, x):
        out = self.energy(x)
        if out.shape != x.shape[:-1]:
            raise ValueError(f"energy must return shape {tuple(x.shape[:-1])}, "
                             f"got {tuple(out.shape)}")
        return out


def _inv_softplus(y: torch.Tensor) -> torch.Tensor:
    return y + torch.log(-torch.expm1(-y))


class GaussianModel(DensityModel):
    """Gaussian log q(x) = -1/2 (x - mu)^T P (x - mu) with analytic score and Hessian diagonal.

    parametrization:
      ``"cholesky"``: P = L L^T with a positive diagonal (always positive definite);
      ``"symmetric"``: free diagonal and off-diagonal entries (used for sparse graphs, where the
      L1 penalty acts directly on P's off-diagonal; positive definiteness is not enforced).
    ``learn_mean=False`` keeps mu fixed (at ``mean``, default 0).

    Parameters
    ----------
    dim : int
        Number of variables.
    precision : array-like of shape (d, d) or None, default=None
        Initial precision (None: the identity).
    mean : array-like of shape (d,) or None, default=None
        Initial mean (None: zeros).
    learn_mean : bool, default=True
        Train the mean.
    parametrization : {"cholesky", "symmetric"}, default="cholesky"
        How the precision is parametrised.
    analytic : bool, default=True
        Closed-form score and Hessian diagonal (False: autograd).

    Attributes
    ----------
    mean : torch.nn.Parameter of shape (d,)
        The mean.

    Raises
    ------
    ValueError
        For an unknown parametrization or shapes that do not match ``dim``.

    Examples
    --------
    >>> import torch
    >>> m = GaussianModel(2, precision=[[2.0, 0.5], [0.5, 1.0]])
    >>> m.precision().detach().round(decimals=6).tolist()
    [[2.0, 0.5], [0.5, 1.0]]
    >>> m.score(torch.tensor([[1.0, 0.0]], dtype=torch.float64)).detach().round(decimals=6)
    tensor([[-2.0000, -0.5000]], dtype=torch.float64)
    """

    analytic = True

    @property
    def hess_diag_constant(self) -> bool:
        """d s_j / d x_j = -P_jj does not depend on x (objectives use this shortcut)."""
        return self.analytic

    def __init__(self, dim: int, *, precision=None, mean=None, learn_mean: bool = True,
                 parametrization: str = "cholesky", analytic: bool = True):
        super().__init__(dim)
        if parametrization not in ("cholesky", "symmetric"):
            raise ValueError("parametrization must be 'cholesky' or 'symmetric'")
        self.parametrization = parametrization
        self.analytic = bool(analytic)
        d = self.dim
        P0 = torch.eye(d, dtype=torch.float64) if precision is None else torch.as_tensor(
            precision, dtype=torch.float64).clone()
        mu0 = torch.zeros(d, dtype=torch.float64) if mean is None else torch.as_tensor(
            mean, dtype=torch.float64).clone()
        if P0.shape != (d, d) or mu0.shape != (d,):
            raise ValueError("precision must be (d, d) and mean (d,)")
        self.mean = nn.Parameter(mu0, requires_grad=learn_mean)
        iu = torch.triu_indices(d, d, offset=1)
        self.register_buffer("_iu", iu)
        if parametrization == "cholesky":
            L = torch.linalg.cholesky(0.5 * (P0 + P0.T))
            self.diag_raw = nn.Parameter(_inv_softplus(torch.diagonal(L).clone()))
            self.off = nn.Parameter(L.T[iu[0], iu[1]].clone())  # strictly lower entries of L
        else:
            self.diag_raw = nn.Parameter(torch.diagonal(P0).clone())
            self.off = nn.Parameter(P0[iu[0], iu[1]].clone())

    def precision(self) -> torch.Tensor:
        d = self.dim
        if self.parametrization == "cholesky":
            L = torch.zeros(d, d, dtype=self.off.dtype)
            L = L.index_put((self._iu[1], self._iu[0]), self.off)
            L = L + torch.diag(nn.functional.softplus(self.diag_raw))
            return L @ L.T
        U = torch.zeros(d, d, dtype=self.off.dtype).index_put((self._iu[0], self._iu[1]), self.off)
        return U + U.T + torch.diag(self.diag_raw)

    def log_q(self, x):
        z = x - self.mean
        return -0.5 * ((z @ self.precision()) * z).sum(-1)

    def score(self, x):
        if not self.analytic:
            return super().score(x)
        return -(x - self.mean) @ self.precision()

    def hess_diag(self, x):
        if not self.analytic:
            return super().hess_diag(x)
        return (-torch.diagonal(self.precision())).expand(x.shape)

    def score_and_hess_diag(self, x):
        if not self.analytic:
            return super().score_and_hess_diag(x)
        P = self.precision()  # built once per batch
        z = x - self.mean
        zP = z @ P
        return -0.5 * (zP * z).sum(-1), -zP, (-torch.diagonal(P)).expand(x.shape)


class ICAModel(DensityModel):
    """The paper's ICA-type energy log q(x) = -1/2 sum_ij Theta_ij x_i^2 x_j^2, Theta = L L^T.

    score_k = -2 x_k (Theta x^2)_k and d score_k / d x_k = -2 (Theta x^2)_k - 4 Theta_kk x_k^2.

    Parameters
    ----------
    dim : int
        Number of variables.
    theta : array-like of shape (d, d) or None, default=None
        Initial positive-definite Theta (None: the identity).
    analytic : bool, default=True
        Closed-form score and Hessian diagonal (False: autograd).

    Raises
    ------
    ValueError
        If ``dim < 1``.

    Examples
    --------
    >>> import torch
    >>> m = ICAModel(2)
    >>> x = torch.tensor([[1.0, 2.0]], dtype=torch.float64)
    >>> m.log_q(x).item(), m.score(x).tolist()
    (-8.5, [[-2.0, -16.0]])
    """

    analytic = True

    def __init__(self, dim: int, *, theta=None, analytic: bool = True):
        super().__init__(dim)
        self.analytic = bool(analytic)
        d = self.dim
        T0 = torch.eye(d, dtype=torch.float64) if theta is None else torch.as_tensor(
            theta, dtype=torch.float64)
        L = torch.linalg.cholesky(0.5 * (T0 + T0.T))
        iu = torch.tril_indices(d, d, offset=-1)
        self.register_buffer("_il", iu)
        self.diag_raw = nn.Parameter(_inv_softplus(torch.diagonal(L).clone()))
        self.off = nn.Parameter(L[iu[0], iu[1]].clone())

    def theta(self) -> torch.Tensor:
        d = self.dim
        L = torch.zeros(d, d, dtype=self.off.dtype).index_put((self._il[0], self._il[1]), self.off)
        L = L + torch.diag(nn.functional.softplus(self.diag_raw))
        return L @ L.T

    def log_q(self, x):
        x2 = x * x
        return -0.5 * ((x2 @ self.theta()) * x2).sum(-1)

    def score_and_hess_diag(self, x):
        if not self.analytic:
            return super().score_and_hess_diag(x)
        T = self.theta()
        x2 = x * x
        Tx2 = x2 @ T
        lq = -0.5 * (Tx2 * x2).sum(-1)
        return lq, -2.0 * x * Tx2, -2.0 * Tx2 - 4.0 * torch.diagonal(T) * x2

    def score(self, x):
        if not self.analytic:
            return super().score(x)
        return self.score_and_hess_diag(x)[1]

    def hess_diag(self, x):
        if not self.analytic:
            return super().hess_diag(x)
        return self.score_and_hess_diag(x)[2]


def gaussian_log_normaliser(precision: torch.Tensor) -> torch.Tensor:
    """log of (2 pi)^{d/2} det(P)^{-1/2}: only for diagnostics (score matching never needs it)."""
    d = precision.shape[-1]
    return 0.5 * d * math.log(2 * math.pi) - 0.5 * torch.logdet(precision)
