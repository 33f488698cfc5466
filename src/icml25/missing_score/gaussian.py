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
    the Schur complement P_oo - P_om P_mm^{-1} P_mo."""
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
    invariant under linear changes of coordinates."""
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
    tr(P_hat S P_hat) - 2 tr(P_hat) + tr(P) + ||P_hat (mu - mu_hat)||^2 with S = P^{-1}."""
    P_hat, P = np.asarray(P_hat, float), np.asarray(P, float)
    S = np.linalg.inv(P)
    diff = P_hat @ (np.asarray(mu, float) - np.asarray(mu_hat, float))
    return float(np.trace(P_hat @ S @ P_hat) - 2 * np.trace(P_hat) + np.trace(P) + diff @ diff)


def zeroed_population_minimiser(covariance, observed) -> np.ndarray:
    """Where zeroed score matching converges for a centred Gaussian when the coordinates in
    ``observed`` are always seen and the others never: its loss ||P_oo x_o||^2 - 2 tr P_oo is
    minimised at P_oo = (Sigma_oo)^{-1}, the Schur complement of the true precision, not the
    true P_oo (unless the observed block is independent of the rest)."""
    S = np.asarray(covariance, float)
    o = np.zeros(S.shape[0], bool)
    o[observed] = True
    return np.linalg.inv(S[np.ix_(o, o)])


def exact_conditional_sampler(model):
    """A sampler ``(x0, obs, r, generator) -> (N, r, d)`` drawing the missing block from the
    Gaussian model's own conditional N(mu_m - P_mm^{-1} P_mo (x_o - mu_o), P_mm^{-1})
    (the "oracle variational" estimator: no approximation error)."""

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
