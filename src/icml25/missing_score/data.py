"""Generated data for tests and reproductions (the paper's real data sets are not downloadable
here): star and dense Gaussian graphs, the strongly-connected truncated Gaussian, MCAR masks."""

from __future__ import annotations

import numpy as np
from scipy.stats import special_ortho_group

__all__ = [
    "dense_precision",
    "mcar_mask",
    "sample_gaussian",
    "star_precision",
    "strong_connection_covariance",
]


def star_precision(d: int, rng: np.random.Generator, p_edge: float = 0.9, n_centres: int = 1):
    """The paper's star graph: node(s) 0..k-1 link to every other node with probability
    p_edge / k; off-diagonal values U[0.7, 1] * sqrt(1 / (d - 1)), unit diagonal.

    Parameters
    ----------
    d : int
        Variables (>= 2).
    rng : numpy.random.Generator
        Draws the edges and their values.
    p_edge : float, default=0.9
        Probability that a leaf links to a centre.
    n_centres : int, default=1
        Hub nodes.

    Returns
    -------
    precision : ndarray of shape (d, d)
    adjacency : ndarray of shape (d, d), bool

    Raises
    ------
    ValueError
        If ``d < 2``.

    Examples
    --------
    >>> import numpy as np
    >>> P, adj = star_precision(5, np.random.default_rng(0))
    >>> P.shape, int(adj[0].sum())          # node 0 is the hub
    ((5, 5), 4)
    """
    if d < 2:
        raise ValueError("a star graph needs d >= 2")
    P = np.eye(d)
    adj = np.zeros((d, d), bool)
    for c in range(n_centres):
        for j in range(d):
            if j != c and not adj[c, j] and rng.random() < p_edge / n_centres:
                v = rng.uniform(0.7, 1.0) * np.sqrt(1.0 / (d - 1))
                P[c, j] = P[j, c] = v
                adj[c, j] = adj[j, c] = True
    lam = np.linalg.eigvalsh(P).min()
    if lam <= 0.05:  # several centres can break positive definiteness: lift the diagonal
        P += (0.1 - lam) * np.eye(d)
    return P, adj


def dense_precision(d: int, rng: np.random.Generator, p_edge: float = 0.5):
    """Unstructured graph: each edge w.p. p_edge, values U[0.5, 1], diagonal set so that the
    minimum eigenvalue is 0.1.

    Parameters
    ----------
    d : int
        Variables.
    rng : numpy.random.Generator
        Draws the edges and their values.
    p_edge : float, default=0.5
        Probability of each edge.

    Returns
    -------
    precision : ndarray of shape (d, d)
        Positive-definite precision with smallest eigenvalue 0.1.
    adjacency : ndarray of shape (d, d), bool
        The edges (no self-loops).

    Examples
    --------
    >>> import numpy as np
    >>> P, adj = dense_precision(4, np.random.default_rng(0))
    >>> round(float(np.linalg.eigvalsh(P).min()), 6), bool((adj == adj.T).all())
    (0.1, True)
    """
    A = np.triu(rng.random((d, d)) < p_edge, 1)
    W = np.where(A, rng.uniform(0.5, 1.0, (d, d)), 0.0)
    P = W + W.T
    P += (0.1 - np.linalg.eigvalsh(P).min()) * np.eye(d)
    return P, (P != 0) & ~np.eye(d, dtype=bool)


def strong_connection_covariance(d: int, rng: np.random.Generator):
    """The paper's truncated-Gaussian covariance: random eigenvalues U[0.5, 1.5] with Haar
    eigenvectors on the first d-1 coordinates, then X_d = (X_1 + Z) / 2 with Var Z = Var X_1.

    Parameters
    ----------
    d : int
        Variables (>= 3).
    rng : numpy.random.Generator
        Draws the eigenvalues and eigenvectors.

    Returns
    -------
    ndarray of shape (d, d)
        The covariance; the last variable is correlated with the first only through X_1.

    Raises
    ------
    ValueError
        If ``d < 3``.

    Examples
    --------
    >>> import numpy as np
    >>> S = strong_connection_covariance(4, np.random.default_rng(0))
    >>> S.shape, bool(np.isclose(S[3, 0], S[0, 0] / 2))
    ((4, 4), True)
    """
    if d < 3:
        raise ValueError("needs d >= 3")
    Q = special_ortho_group.rvs(d - 1, random_state=rng)
    C = Q @ np.diag(rng.uniform(0.5, 1.5, d - 1)) @ Q.T
    S = np.zeros((d, d))
    S[: d - 1, : d - 1] = C
    S[d - 1, : d - 1] = S[: d - 1, d - 1] = 0.5 * C[0]
    S[d - 1, d - 1] = 0.25 * C[0, 0] + 0.25 * C[0, 0]
    return S


def sample_gaussian(n: int, mean, precision, rng: np.random.Generator, domain=None,
                    max_tries: int = 1000):
    """n draws from N(mean, P^{-1}), restricted to ``domain`` by rejection if given.

    Parameters
    ----------
    n : int
        Number of draws.
    mean : array-like of shape (d,)
        The mean.
    precision : array-like of shape (d, d)
        The precision matrix P.
    rng : numpy.random.Generator
        The random source.
    domain : Domain or None, default=None
        Keep only draws inside it (rejection sampling); None: all of R^d.
    max_tries : int, default=1000
        Rejection rounds before giving up.

    Returns
    -------
    ndarray of shape (n, d)
        The draws.

    Raises
    ------
    RuntimeError
        If the domain holds too little mass for rejection sampling.

    Examples
    --------
    >>> import numpy as np
    >>> from icml25.missing_score import Box
    >>> rng = np.random.default_rng(0)
    >>> X = sample_gaussian(500, [0.0, 0.0], np.eye(2), rng, domain=Box([0.0, 0.0]))
    >>> X.shape, bool((X > 0).all())
    ((500, 2), True)
    """
    S = np.linalg.inv(precision)
    mean = np.asarray(mean, float)
    if domain is None:
        return rng.multivariate_normal(mean, S, size=n, method="cholesky")
    out, got = [], 0
    for _ in range(max_tries):
        Z = rng.multivariate_normal(mean, S, size=max(2 * (n - got), 100), method="cholesky")
        Z = Z[domain.contains_numpy(Z)]
        out.append(Z)
        got += len(Z)
        if got >= n:
            return np.concatenate(out)[:n]
    raise RuntimeError("rejection sampling failed: the domain holds too little mass")


def mcar_mask(shape, p_missing: float, rng: np.random.Generator, keep_one: bool = True):
    """Boolean MCAR mask (True = missing), each entry independently w.p. p_missing. With
    keep_one, a row drawn fully missing keeps one random coordinate observed.

    Parameters
    ----------
    shape : tuple of int
        ``(n, d)``.
    p_missing : float
        Probability that an entry is missing, in [0, 1).
    rng : numpy.random.Generator
    keep_one : bool, default=True
        Keep one coordinate of every row observed.

    Returns
    -------
    ndarray of bool

    Raises
    ------
    ValueError
        If ``p_missing`` is outside [0, 1).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.ones((1000, 4))
    >>> X[mcar_mask(X.shape, 0.3, np.random.default_rng(0))] = np.nan
    >>> round(float(np.isnan(X).mean()), 2)
    0.3
    """
    if not 0.0 <= p_missing < 1.0:
        raise ValueError("p_missing must be in [0, 1)")
    M = rng.random(shape) < p_missing
    if keep_one:
        empty = np.flatnonzero(M.all(1))
        M[empty, rng.integers(0, shape[1], empty.size)] = False
    return M
