"""Closed forms for Gaussian models: marginal precisions (Schur complements), the exact marginal
score-matching loss (a deterministic oracle), the exact conditional sampler, the zeroed
objective's bias, and the Gaussian Fisher divergence."""

from __future__ import annotations

import numpy as np
import torch

__all__ = [
    "exact_conditional_sampler",
    "exact_marginal_loss",
    "fisher_divergence",
    "marginal_precision",
    "zeroed_population_minimiser",
]


def marginal_precision(precision, observed) -> np.ndarray:
    """Precision of the marginal on the ``observed`` coordinates (bool mask or indices):
    the Schur complement P_oo - P_om P_mm^{-1} P_mo.

    Parameters
    ----------
    precision : array-like of shape (d, d)
        The joint precision P.
    observed : array-like of bool of shape (d,), or of int
        The observed coordinates, as a mask or indices.

    Returns
    -------
    ndarray of shape (k, k)
        The marginal precision of the k observed coordinates.

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[2.0, 1.0], [1.0, 2.0]])
    >>> marginal_precision(P, [0]).tolist()
    [[1.5]]
    >>> bool(np.allclose(marginal_precision(P, [0]), 1 / np.linalg.inv(P)[0, 0]))
    True
    """
    P = np.asarray(precision, dtype=float)
    o = np.zeros(P.shape[0], bool)
    o[observed] = True
    m = ~o
    if not m.any():
        return P.copy()
    return P[np.ix_(o, o)] - P[np.ix_(o, m)] @ np.linalg.solve(P[np.ix_(m, m)], P[np.ix_(m, o)])


def exact_marginal_loss(precision, mean, X, metric=None) -> float:
    """Mean over rows of the exact marginal score-matching loss of the model N(mean, P^{-1}):
    ||K_o (x_o - mu_o)||^2 - 2 tr K_o with K_o the marginal precision of the row's observed set
    (NaN marks missing). This equals Marg-IW's objective as r -> infinity.

    ``metric`` (a fixed positive-definite (d, d) matrix A, default the identity) gives the
    preconditioned loss (K_o r)' A_oo (K_o r) - 2 tr(A_oo K_o), r = x_o - mu_o: Hyvarinen's
    loss after the change of variables x -> A^{-1/2} x, still minimised at the true density.
    Its population excess for a centred Gaussian is tr(A_oo D S_oo D), D = K_o - S_oo^{-1};
    with A = S that is tr((S D)^2), four times KL(truth || model) to second order and
    invariant under linear changes of coordinates.

    Parameters
    ----------
    precision : array-like of shape (d, d)
        The model precision P.
    mean : array-like of shape (d,)
        The model mean.
    X : array-like of shape (n, d)
        Data with NaN for missing entries.
    metric : array-like of shape (d, d) or None, default=None
        Positive-definite preconditioner A (None: the identity).

    Returns
    -------
    float
        The mean loss over rows (rows with nothing observed count as 0).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, np.nan], [0.0, 2.0]])
    >>> exact_marginal_loss(np.eye(2), np.zeros(2), X)
    -0.5
    """
    X = np.asarray(X, dtype=float)
    mu = np.asarray(mean, dtype=float)
    A = None if metric is None else np.asarray(metric, dtype=float)
    obs = ~np.isnan(X)
    total = 0.0
    patterns, inverse = np.unique(obs, axis=0, return_inverse=True)
    for k, pat in enumerate(patterns):
        rows = X[inverse.ravel() == k][:, pat] - mu[pat]
        if not pat.any():
            continue
        K = marginal_precision(precision, pat)
        g = rows @ K
        if A is None:
            total += float((g**2).sum() - 2.0 * np.trace(K) * rows.shape[0])
        else:
            Ao = A[np.ix_(pat, pat)]
            total += float(np.einsum("ij,jk,ik->", g, Ao, g)
                           - 2.0 * np.trace(Ao @ K) * rows.shape[0])
    return total / X.shape[0]


def fisher_divergence(P_hat, mu_hat, P, mu) -> float:
    """E_p ||grad log p - grad log q||^2 for p = N(mu, P^{-1}), q = N(mu_hat, P_hat^{-1}):
    tr(P_hat S P_hat) - 2 tr(P_hat) + tr(P) + ||P_hat (mu - mu_hat)||^2 with S = P^{-1}.

    Parameters
    ----------
    P_hat : array-like of shape (d, d)
        Precision of the model q.
    mu_hat : array-like of shape (d,)
        Mean of the model q.
    P : array-like of shape (d, d)
        Precision of the truth p.
    mu : array-like of shape (d,)
        Mean of the truth p.

    Returns
    -------
    float
        The Fisher divergence (0 when q = p).

    Examples
    --------
    >>> import numpy as np
    >>> fisher_divergence(np.eye(2), np.zeros(2), np.eye(2), np.zeros(2))
    0.0
    >>> fisher_divergence(2 * np.eye(2), np.zeros(2), np.eye(2), np.ones(2))
    10.0
    """
    P_hat, P = np.asarray(P_hat, float), np.asarray(P, float)
    S = np.linalg.inv(P)
    diff = P_hat @ (np.asarray(mu, float) - np.asarray(mu_hat, float))
    return float(np.trace(P_hat @ S @ P_hat) - 2 * np.trace(P_hat) + np.trace(P) + diff @ diff)


def zeroed_population_minimiser(covariance, observed) -> np.ndarray:
    """Where zeroed score matching converges for a centred Gaussian when the coordinates in
    ``observed`` are always seen and the others never: its loss ||P_oo x_o||^2 - 2 tr P_oo is
    minimised at P_oo = (Sigma_oo)^{-1}, the Schur complement of the true precision, not the
    true P_oo (unless the observed block is independent of the rest).

    Parameters
    ----------
    covariance : array-like of shape (d, d)
        The true covariance Sigma.
    observed : array-like of bool of shape (d,), or of int
        The always-observed coordinates.

    Returns
    -------
    ndarray of shape (k, k)
        ``inv(Sigma_oo)``.

    Examples
    --------
    >>> import numpy as np
    >>> S = np.linalg.inv(np.array([[2.0, 1.0], [1.0, 2.0]]))
    >>> zeroed_population_minimiser(S, [0]).round(6).tolist()   # not P_00 = 2
    [[1.5]]
    """
    S = np.asarray(covariance, float)
    o = np.zeros(S.shape[0], bool)
    o[observed] = True
    return np.linalg.inv(S[np.ix_(o, o)])


def exact_conditional_sampler(model):
    """A sampler ``(x0, obs, r, generator) -> (N, r, d)`` drawing the missing block from the
    Gaussian model's own conditional N(mu_m - P_mm^{-1} P_mo (x_o - mu_o), P_mm^{-1})
    (the "oracle variational" estimator: no approximation error).

    Parameters
    ----------
    model : GaussianModel
        The model whose conditional is sampled (read at each call).

    Returns
    -------
    callable
        ``sample(x0, obs, r, generator=None)``: for zero-filled rows ``x0`` (N, d) and a 0/1
        mask ``obs`` (N, d), a tensor of shape (N, r, d) with observed entries kept and missing
        ones drawn.

    Examples
    --------
    >>> import torch
    >>> from icml25.missing_score import GaussianModel
    >>> sample = exact_conditional_sampler(GaussianModel(2))
    >>> x0 = torch.tensor([[1.5, 0.0]], dtype=torch.float64)
    >>> obs = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    >>> draws = sample(x0, obs, 4, torch.Generator().manual_seed(0))
    >>> draws.shape, draws[0, :, 0].tolist()
    (torch.Size([1, 4, 2]), [1.5, 1.5, 1.5, 1.5])
    """

    def sample(x0, obs, r, generator=None):
        with torch.no_grad():
            P, mu = model.precision(), model.mean
            miss = 1.0 - obs
            eye = torch.eye(P.shape[0], dtype=P.dtype)
            # A = block-diag(P_mm, I) in the row's own coordinate order
            A = miss.unsqueeze(-1) * P * miss.unsqueeze(-2) + torch.diag_embed(obs) * eye
            b = miss * ((obs * (x0 - mu)) @ P)  # P_mo (x_o - mu_o) on missing slots
            L = torch.linalg.cholesky(A)
            y = torch.cholesky_solve(b.unsqueeze(-1), L).squeeze(-1)
            cmean = mu - y
            z = torch.randn((x0.shape[0], x0.shape[1], r), generator=generator, dtype=x0.dtype)
            u = torch.linalg.solve_triangular(L.transpose(-1, -2), z, upper=True)  # ~N(0, A^-1)
            draws = cmean.unsqueeze(1) + u.transpose(-1, -2)
            return x0.unsqueeze(1) * obs.unsqueeze(1) + miss.unsqueeze(1) * draws

    return sample
