"""Baselines a user would compare against: scikit-learn's graphical lasso on mean-imputed data,
on a pairwise-complete covariance, and after EM for a Gaussian with missing values
(missglasso-style: EM covariance, then glasso)."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
from sklearn.covariance import graphical_lasso

from icml25.missing_score._validation import check_missing_array

__all__ = [
    "GlassoPath",
    "em_gaussian",
    "em_glasso",
    "glasso_mean_impute",
    "glasso_pairwise",
    "glasso_path",
    "pairwise_covariance",
]


@dataclasses.dataclass
class GlassoPath:
    """A graphical-lasso path on a correlation-scale covariance.

    Parameters
    ----------
    precision : ndarray of shape (d, d)
        Precision at the smallest penalty that succeeded (correlation units).
    edge_scores : ndarray of shape (d, d)
        Largest penalty at which each edge is present (0 = never); rank edges by it.
    alphas : ndarray of shape (n_alphas,)
        The penalties, decreasing.
    failed : list of float
        Penalties at which glasso did not converge.

    Examples
    --------
    >>> import numpy as np
    >>> path = glasso_path(np.array([[1.0, 0.6], [0.6, 1.0]]), alphas=[0.9, 0.1])
    >>> path.alphas.tolist(), float(path.edge_scores[0, 1]), path.failed
    ([0.9, 0.1], 0.1, [])
    """

    precision: np.ndarray
    edge_scores: np.ndarray
    alphas: np.ndarray
    failed: list[float]


def _to_correlation(S: np.ndarray) -> np.ndarray:
    sd = np.sqrt(np.clip(np.diag(S), 1e-12, None))
    return S / np.outer(sd, sd)


def _nearest_pd(S: np.ndarray, floor: float = 1e-3) -> np.ndarray:
    """Clip eigenvalues: a pairwise-complete covariance can be indefinite."""
    w, V = np.linalg.eigh(0.5 * (S + S.T))
    return (V * np.maximum(w, floor)) @ V.T


def glasso_path(cov: np.ndarray, alphas=None, threshold: float = 1e-4) -> GlassoPath:
    """sklearn ``graphical_lasso`` along decreasing penalties on the correlation matrix.

    The covariance is scaled to a correlation matrix and projected to positive definite
    (eigenvalues at least 1e-3) first.

    Parameters
    ----------
    cov : array-like of shape (d, d)
        A covariance matrix.
    alphas : array-like or None, default=None
        Penalties (None: 20 from the largest absolute off-diagonal correlation down by 1000x).
    threshold : float, default=1e-4
        An edge is present where ``|precision| > threshold``.

    Returns
    -------
    GlassoPath
        Precision at the smallest penalty, edge scores, the penalties and the failures.

    Examples
    --------
    >>> import numpy as np
    >>> cov = np.array([[1.0, 0.5, 0.0], [0.5, 1.0, 0.0], [0.0, 0.0, 1.0]])
    >>> path = glasso_path(cov)
    >>> (path.edge_scores > 0).astype(int).tolist()
    [[0, 1, 0], [1, 0, 0], [0, 0, 0]]
    """
    C = _nearest_pd(_to_correlation(np.asarray(cov, float)))
    d = C.shape[0]
    if alphas is None:
        off = np.abs(C - np.diag(np.diag(C)))
        alphas = np.geomspace(max(off.max(), 1e-3), max(off.max(), 1e-3) * 1e-3, 20)
    alphas = np.sort(np.asarray(alphas, float))[::-1]
    scores, failed, prec = np.zeros((d, d)), [], np.eye(d)
    for a in alphas:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _, P = graphical_lasso(C, alpha=float(a), max_iter=200)
        except FloatingPointError:
            failed.append(float(a))
            continue
        present = np.abs(P) > threshold
        scores = np.where(present & (scores == 0), a, scores)
        prec = P
    np.fill_diagonal(scores, 0.0)
    return GlassoPath(prec, np.maximum(scores, scores.T), alphas, failed)


def pairwise_covariance(X) -> np.ndarray:
    """Covariance from pairwise-complete observations (each entry from the rows where both
    coordinates are observed), centred by pairwise means; 0 where fewer than 2 such rows.
    All pairs at once: with M the 0/1 mask and Z the zero-filled data, the pair counts are
    M'M, the cross sums Z'Z and each coordinate's sums over the pair's rows Z'M and M'Z.

    Parameters
    ----------
    X : array-like of shape (n, d)
        Data with NaN for missing entries.

    Returns
    -------
    ndarray of shape (d, d)
        Symmetric (possibly indefinite) covariance with divisor the pair count.

    Raises
    ------
    ValueError
        If ``X`` is not a 2-d numeric array (infinite values are rejected too).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 2.0], [3.0, np.nan], [5.0, 6.0]])
    >>> pairwise_covariance(X).tolist()
    [[2.6666666666666665, 4.0], [4.0, 4.0]]
    """
    Xc, obs, _ = check_missing_array(X)
    M = obs.astype(float)
    Z = np.where(obs, Xc, 0.0)
    N = M.T @ M
    ok = N >= 2
    Nz = np.where(ok, N, 1.0)
    S = (Z.T @ Z - (Z.T @ M) * (M.T @ Z) / Nz) / Nz
    S = np.where(ok, S, 0.0)
    return 0.5 * (S + S.T)


def glasso_mean_impute(X, alphas=None) -> GlassoPath:
    """Graphical lasso on column-mean-imputed data.

    Parameters
    ----------
    X : array-like of shape (n, d)
        Data with NaN for missing entries.
    alphas : array-like or None, default=None
        Penalties (see :func:`glasso_path`).

    Returns
    -------
    GlassoPath
        The path on the imputed data's correlation matrix.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.multivariate_normal([0, 0, 0], [[1, .6, 0], [.6, 1, 0], [0, 0, 1]], 300)
    >>> X[rng.random(X.shape) < 0.2] = np.nan
    >>> s = glasso_mean_impute(X).edge_scores
    >>> bool(s[0, 1] > max(s[0, 2], s[1, 2]))
    True
    """
    Xc, obs, _ = check_missing_array(X)
    mu = np.array([Xc[obs[:, j], j].mean() for j in range(Xc.shape[1])])
    Z = np.where(obs, Xc, mu)
    return glasso_path(np.cov(Z, rowvar=False, bias=True).reshape(Z.shape[1], -1), alphas)


def glasso_pairwise(X, alphas=None) -> GlassoPath:
    """Graphical lasso on the pairwise-complete covariance (projected to positive definite).

    Parameters
    ----------
    X : array-like of shape (n, d)
        Data with NaN for missing entries.
    alphas : array-like or None, default=None
        Penalties (see :func:`glasso_path`).

    Returns
    -------
    GlassoPath
        The path on the pairwise-complete correlation matrix.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.multivariate_normal([0, 0, 0], [[1, .6, 0], [.6, 1, 0], [0, 0, 1]], 300)
    >>> X[rng.random(X.shape) < 0.2] = np.nan
    >>> s = glasso_pairwise(X).edge_scores
    >>> bool(s[0, 1] > max(s[0, 2], s[1, 2]))
    True
    """
    return glasso_path(pairwise_covariance(X), alphas)


def em_gaussian(X, max_iter: int = 200, tol: float = 1e-6):
    """Maximum-likelihood mean and covariance of a Gaussian from data with NaN (EM).

    E-step with P = S^{-1}: each row's missing block m has conditional mean
    mu_m - P_mm^{-1} P_mo (x_o - mu_o) and covariance P_mm^{-1}; M-step: completed-data moments.
    Rows are batched by their number of missing entries k, so each batch inverts its own
    k x k blocks (at 50% missingness about 8x fewer flops than inverting d x d matrices).

    Parameters
    ----------
    X : array-like of shape (n, d)
        Data with NaN for missing entries.
    max_iter : int, default=200
        EM iterations at most.
    tol : float, default=1e-6
        Stop when mean and covariance change by less than this (max-abs).

    Returns
    -------
    mean : ndarray of shape (d,)
        The estimated mean.
    covariance : ndarray of shape (d, d)
        The estimated covariance (maximum likelihood, divisor n).
    n_iter : int
        Iterations run.

    Raises
    ------
    ValueError
        If ``X`` is not a 2-d numeric array.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.multivariate_normal([1.0, -1.0], [[1.0, 0.8], [0.8, 1.0]], 2000)
    >>> X[rng.random(2000) < 0.3, 1] = np.nan
    >>> mu, S, n_iter = em_gaussian(X)
    >>> mu.round(1).tolist(), S.round(1).tolist()
    ([1.0, -1.0], [[1.0, 0.8], [0.8, 1.0]])
    """
    Xc, obs, _ = check_missing_array(X)
    n, d = Xc.shape
    mu = np.array([Xc[obs[:, j], j].mean() for j in range(d)])
    S = np.diag([Xc[obs[:, j], j].var() + 1e-6 for j in range(d)])
    groups = _missing_groups(obs)
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007
        P = np.linalg.inv(S)
        Xhat = np.where(obs, Xc, 0.0)
        V = (np.where(obs, Xc - mu, 0.0)) @ P  # (P z)_m = P_mo z_o for zero-filled z
        C = np.zeros(d * d)
        for rows, mi, oi in groups:
            if mi.shape[1] <= oi.shape[1]:  # invert the k x k block P_mm
                cov = np.linalg.inv(P[mi[:, :, None], mi[:, None, :]])
                vm = np.take_along_axis(V[rows], mi, axis=1)
                Xhat[rows[:, None], mi] = mu[mi] - np.einsum("nij,nj->ni", cov, vm)
            else:  # the same conditional from S: invert the smaller observed block S_oo
                Smo = S[mi[:, :, None], oi[:, None, :]]
                B = np.linalg.solve(S[oi[:, :, None], oi[:, None, :]],
                                    np.swapaxes(Smo, 1, 2))  # S_oo^-1 S_om
                zo = np.take_along_axis(Xc[rows], oi, axis=1) - mu[oi]
                Xhat[rows[:, None], mi] = mu[mi] + np.einsum("noi,no->ni", B, zo)
                cov = S[mi[:, :, None], mi[:, None, :]] - Smo @ B
            flat = (mi[:, :, None] * d + mi[:, None, :]).ravel()
            C += np.bincount(flat, weights=cov.ravel(), minlength=d * d)
        mu_new = Xhat.mean(0)
        D = Xhat - mu_new
        S_new = (D.T @ D + C.reshape(d, d)) / n
        done = np.abs(S_new - S).max() < tol and np.abs(mu_new - mu).max() < tol
        mu, S = mu_new, 0.5 * (S_new + S_new.T)
        if done:
            break
    return mu, S, it


def _missing_groups(obs: np.ndarray, chunk: int = 512) -> list[tuple]:
    """Rows with missing entries, grouped by how many (in chunks): (row indices, (rows, k)
    missing-coordinate indices, (rows, d - k) observed ones) per group."""
    n_miss = (~obs).sum(1)
    order = np.argsort(obs, axis=1, kind="stable")  # missing (False) coordinates first
    out = []
    for k in np.unique(n_miss[n_miss > 0]):
        rows = np.flatnonzero(n_miss == k)
        for lo in range(0, rows.size, chunk):
            r = rows[lo:lo + chunk]
            out.append((r, order[r, :k], order[r, k:]))
    return out


def em_glasso(X, alphas=None, max_iter: int = 200) -> GlassoPath:
    """EM covariance of a Gaussian with missing values, then the graphical-lasso path.

    Parameters
    ----------
    X : array-like of shape (n, d)
        Data with NaN for missing entries.
    alphas : array-like or None, default=None
        Penalties (see :func:`glasso_path`).
    max_iter : int, default=200
        EM iterations at most (see :func:`em_gaussian`).

    Returns
    -------
    GlassoPath
        The path on the EM covariance's correlation matrix.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.multivariate_normal([0, 0, 0], [[1, .6, 0], [.6, 1, 0], [0, 0, 1]], 300)
    >>> X[rng.random(X.shape) < 0.2] = np.nan
    >>> s = em_glasso(X).edge_scores
    >>> bool(s[0, 1] > max(s[0, 2], s[1, 2]))
    True
    """
    _, S, _ = em_gaussian(X, max_iter=max_iter)
    return glasso_path(S, alphas)
