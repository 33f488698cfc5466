"""Automatic choice of the L1 penalty: ``MissingScoreGGMCV``, K-fold cross-validation of the
held-out score-matching loss of the observed coordinates along the penalty path (the
score-matching analogue of scikit-learn's ``GraphicalLassoCV``), its one-standard-error variant,
or the extended BIC of the observed-data Gaussian likelihood (Foygel & Drton 2010)."""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.model_selection import KFold
from sklearn.utils.validation import check_is_fitted

from icml25.missing_score._validation import check_missing_array
from icml25.missing_score.baselines import pairwise_covariance
from icml25.missing_score.estimator import MissingScoreGGM, _covariance, _project_pd
from icml25.missing_score.gaussian import exact_marginal_loss, marginal_precision

__all__ = ["DensestPenaltyWarning", "MissingScoreGGMCV", "ebic_path", "extended_bic",
           "gaussian_support_refit", "held_out_loss", "lift_pd", "observed_loglik",
           "one_se_index", "stars_index", "support_refit"]

SELECTIONS = ("ebic", "stars", "cv", "cv-1se")


class DensestPenaltyWarning(UserWarning):
    """The selection chose the smallest penalty of the path (its densest graph): the best
    point may lie beyond the path, or the rule cannot tell the graphs apart.

    A :class:`UserWarning`; silence it with the ``warnings`` module when the densest graph is
    expected.

    Parameters
    ----------
    *args : object
        The message (as for any warning).

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warnings.warn("densest", DensestPenaltyWarning)
    >>> caught[0].category.__name__, issubclass(DensestPenaltyWarning, UserWarning)
    ('DensestPenaltyWarning', True)
    """


def stars_index(instability, beta: float = 0.05) -> int:
    """StARS choice (Liu, Roeder & Wasserman 2010) on a path ordered from the largest penalty
    (sparsest) down.

    Parameters
    ----------
    instability : array-like of shape (n_alphas,)
        Mean edge instability 2 theta (1 - theta) over all pairs at each penalty, theta the
        fraction of subsamples in which the edge is present.
    beta : float, default=0.05
        Largest acceptable (monotonised) instability.

    Returns
    -------
    int
        The index of the smallest penalty whose running maximum of the instability, taken
        from the sparse end, is at most ``beta`` (0 when even the first point exceeds it).

    Examples
    --------
    >>> stars_index([0.0, 0.01, 0.04, 0.03, 0.08, 0.02], beta=0.05)
    3
    """
    d = np.maximum.accumulate(np.asarray(instability, dtype=float))
    ok = np.flatnonzero(d <= beta)
    return int(ok[-1]) if ok.size else 0
REFITS = ("gaussian", "support", None)
CANDIDATES = ("path", "fold")
PRECONDITIONERS = ("covariance", "identity")
SCHEMES = ("shao", "kfold")


def lift_pd(S, ridge: float = 1e-6) -> np.ndarray:
    """Symmetric ``S`` with its smallest eigenvalue lifted to ``ridge`` x its mean diagonal when
    below (a pairwise-complete covariance can be indefinite)."""
    S = 0.5 * (np.asarray(S, dtype=float) + np.asarray(S, dtype=float).T)
    floor = ridge * float(np.mean(np.diag(S)))
    w = np.linalg.eigvalsh(S).min()
    return S + (floor - w) * np.eye(S.shape[0]) if w < floor else S


def support_refit(S, support) -> np.ndarray:
    """Unpenalised score-matching precision with off-diagonal ``support`` (bool (d, d)) for
    covariance ``S``: column j is ``S_AA^{-1} e_j`` on A = {j} + neighbours of j (the exact
    minimiser of ``tr(P S P) - 2 tr P`` column by column), then symmetrised. NaN where a
    block of ``S`` is singular.

    Parameters
    ----------
    S : array-like of shape (d, d)
        A covariance matrix.
    support : array-like of bool of shape (d, d)
        The allowed off-diagonal entries (the diagonal is always in).

    Returns
    -------
    ndarray of shape (d, d)
        The symmetrised precision, zero outside the support (all NaN when a block is singular).

    Examples
    --------
    >>> import numpy as np
    >>> S = np.array([[1.0, 0.5], [0.5, 1.0]])
    >>> support_refit(S, np.zeros((2, 2), bool)).tolist()          # no edge: 1 / S_jj
    [[1.0, 0.0], [0.0, 1.0]]
    >>> bool(np.allclose(support_refit(S, ~np.eye(2, dtype=bool)), np.linalg.inv(S)))
    True
    """
    S = np.asarray(S, dtype=float)
    d = S.shape[0]
    P = np.zeros((d, d))
    for j in range(d):
        A = np.flatnonzero(np.asarray(support)[:, j] | (np.arange(d) == j))
        try:
            P[A, j] = np.linalg.solve(S[np.ix_(A, A)], (A == j).astype(float))
        except np.linalg.LinAlgError:
            return np.full((d, d), np.nan)
    return 0.5 * (P + P.T)


def gaussian_support_refit(S, support, *, max_iter: int = 200, tol: float = 1e-8,
                           ridge: float = 1e-6) -> np.ndarray:
    """Gaussian maximum-likelihood precision with zeros outside the off-diagonal ``support``
    (bool (d, d)) for covariance ``S``: the covariance-selection problem, solved by the
    regression sweep of Hastie, Tibshirani & Friedman (ESL, Algorithm 17.1). Positive definite
    whenever ``S`` is; an indefinite ``S`` (possible for a pairwise-complete covariance) is
    first lifted to minimum eigenvalue ``ridge`` x its mean diagonal. Nested supports give
    non-decreasing likelihood, which the extended BIC relies on."""
    S = lift_pd(S, ridge)
    d = S.shape[0]
    sup = np.asarray(support, bool) & ~np.eye(d, dtype=bool)
    sup = sup | sup.T
    W = S.copy()
    for _ in range(int(max_iter)):
        W_old = W.copy()
        for j in range(d):
            rest = np.arange(d) != j
            A = np.flatnonzero(sup[rest, j])
            W11 = W[np.ix_(rest, rest)]
            beta = np.zeros(d - 1)
            if A.size:
                beta[A] = np.linalg.solve(W11[np.ix_(A, A)], S[rest, j][A])
            w12 = W11 @ beta
            W[rest, j] = w12
            W[j, rest] = w12
        if np.max(np.abs(W - W_old)) < tol * float(np.mean(np.abs(np.diag(S)))):
            break
    P = np.linalg.inv(W)
    P = 0.5 * (P + P.T)
    P[~(sup | np.eye(d, dtype=bool))] = 0.0  # exact zeros (round-off only)
    return P


def held_out_loss(precision, mean, X, metric=None) -> float:
    """Score-matching loss of held-out rows ``X`` (NaN = missing) under N(mean, precision^-1),
    on each row's observed coordinates only: the mean of ||K_o (x_o - mu_o)||^2 - 2 tr K_o with
    K_o the marginal precision (Schur complement) of the observed set, or with a fixed
    preconditioner ``metric`` A the mean of (K_o r)' A_oo (K_o r) - 2 tr(A_oo K_o)
    (:func:`~icml25.missing_score.gaussian.exact_marginal_loss`). Lower is better; ``inf``
    when a marginal precision cannot be formed (a singular missing block).

    Parameters
    ----------
    precision : array-like of shape (d, d)
        The model precision.
    mean : array-like of shape (d,)
        The model mean.
    X : array-like of shape (n, d)
        Held-out rows with NaN for missing entries.
    metric : array-like of shape (d, d) or None, default=None
        Fixed positive-definite preconditioner A (None: the identity).

    Returns
    -------
    float
        The mean loss, or ``inf`` for a non-finite precision or a singular block.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, np.nan], [0.0, 2.0]])
    >>> held_out_loss(np.eye(2), np.zeros(2), X)
    -0.5
    >>> held_out_loss(np.full((2, 2), np.nan), np.zeros(2), X)
    inf
    """
    if not np.all(np.isfinite(precision)):
        return float("inf")
    try:
        out = exact_marginal_loss(precision, mean, X, metric)
    except np.linalg.LinAlgError:
        return float("inf")
    return out if np.isfinite(out) else float("inf")


def observed_loglik(precision, mean, X) -> float:
    """Gaussian log-likelihood of the rows ``X`` (NaN = missing) under N(mean, precision^-1),
    each row on its observed coordinates (the observed-data likelihood under MCAR): the sum of
    0.5 log det K_o - 0.5 (x_o - mu_o)' K_o (x_o - mu_o) - |o|/2 log 2 pi, K_o the marginal
    precision. ``-inf`` when a marginal precision is not positive definite.

    Parameters
    ----------
    precision : array-like of shape (d, d)
        The model precision.
    mean : array-like of shape (d,)
        The model mean.
    X : array-like of shape (n, d)
        Rows with NaN for missing entries (rows with nothing observed add 0).

    Returns
    -------
    float
        The total log-likelihood, ``-inf`` for a non-finite or non-PD marginal precision.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0, np.nan]])
    >>> round(float(observed_loglik(np.eye(2), np.zeros(2), X)), 6)   # -log(2 pi) / 2
    -0.918939
    """
    P = np.asarray(precision, dtype=float)
    if not np.all(np.isfinite(P)):
        return -np.inf
    X = np.asarray(X, dtype=float)
    mu = np.asarray(mean, dtype=float)
    obs = ~np.isnan(X)
    patterns, inverse = np.unique(obs, axis=0, return_inverse=True)
    total = 0.0
    for k, pat in enumerate(patterns):
        if not pat.any():
            continue
        rows = X[inverse.ravel() == k][:, pat] - mu[pat]
        try:
            K = marginal_precision(P, pat)
            L = np.linalg.cholesky(0.5 * (K + K.T))
        except np.linalg.LinAlgError:
            return -np.inf
        logdet = 2.0 * float(np.log(np.diag(L)).sum())
        quad = float((((rows @ L)) ** 2).sum())  # L L' = K: ||L' r||^2 = r' K r
        total += 0.5 * rows.shape[0] * (logdet - pat.sum() * np.log(2 * np.pi)) - 0.5 * quad
    return total


def extended_bic(loglik: float, n_edges: int, n_samples: int, n_features: int,
                 gamma: float = 0.5) -> float:
    """Extended BIC of a Gaussian graphical model (Foygel & Drton 2010):
    -2 loglik + |E| log n + 4 gamma |E| log d. gamma = 0 is the ordinary BIC; larger gamma
    favours sparser graphs (gamma = 0.5 is their recommended default for d comparable to n).

    Parameters
    ----------
    loglik : float
        Log-likelihood of the fitted graph.
    n_edges : int
        Number of edges |E|.
    n_samples : int
        Number of rows n.
    n_features : int
        Number of variables d.
    gamma : float, default=0.5
        The extended-BIC parameter.

    Returns
    -------
    float
        The criterion (lower is better); ``inf`` when ``loglik`` is not finite.

    Examples
    --------
    >>> import numpy as np
    >>> bool(np.isclose(extended_bic(-10.0, 2, 100, 5, gamma=0.0), 20 + 2 * np.log(100)))
    True
    >>> extended_bic(-np.inf, 0, 100, 5)
    inf
    """
    if not np.isfinite(loglik):
        return float("inf")
    e = int(n_edges)
    return float(-2.0 * loglik + e * np.log(n_samples) + 4.0 * gamma * e * np.log(n_features))


def ebic_path(est: MissingScoreGGM, X, gamma: float = 0.5) -> dict:
    """Extended BIC of every point of a fitted :class:`MissingScoreGGM` path on its data
    ``X``: each point's edge set (|P_ij| > threshold, standardised units) is refitted without
    penalty by Gaussian maximum likelihood (:func:`gaussian_support_refit` on the
    pairwise-complete covariance) and scored by the observed-data Gaussian log-likelihood.
    Returns ``alphas``, ``ebic``, ``loglik``, ``n_edges``, ``gamma`` and ``supports`` (per
    point, the edge list as flat upper-triangle indices).

    The score-matching refit (:func:`support_refit`) is not used here: it is not the
    likelihood maximiser, is not always positive definite (log-likelihood -inf: measured on
    one random sparse graph, d = 20, n = 500, every path point but the empty one), and its
    likelihood can fall as edges are added, which breaks the criterion.

    Parameters
    ----------
    est : MissingScoreGGM
        A fitted estimator (its ``path_``, ``alphas_``, ``location_``, ``scale_``).
    X : array-like of shape (n, d)
        The data it was fitted on (NaN = missing).
    gamma : float, default=0.5
        The extended-BIC parameter (see :func:`extended_bic`).

    Returns
    -------
    dict
        ``alphas`` (n_alphas,), ``ebic`` (n_alphas,), ``loglik`` (n_alphas,), ``n_edges``
        (n_alphas,), ``gamma`` (float) and ``supports`` (list of lists of int).

    Examples
    --------
    >>> import numpy as np
    >>> from icml25.missing_score import MissingScoreGGM
    >>> X = np.random.default_rng(0).normal(size=(200, 4)); X[::4, 0] = np.nan
    >>> est = MissingScoreGGM(alpha=0.01, n_alphas=5, random_state=0).fit(X)
    >>> res = ebic_path(est, X)
    >>> sorted(res), len(res["ebic"])
    (['alphas', 'ebic', 'gamma', 'loglik', 'n_edges', 'supports'], 5)
    """
    Z = (np.asarray(X, dtype=float) - est.location_) / est.scale_
    S = pairwise_covariance(Z)
    n, d = Z.shape
    iu = np.triu_indices(d, 1)
    k = len(est.alphas_)
    edges, ll, crit = np.empty(k, int), np.empty(k), np.empty(k)
    supports: list[list[int]] = []
    for j in range(k):
        Pz = est.path_[j] * np.outer(est.scale_, est.scale_)
        support = np.abs(Pz) > est.threshold
        edges[j] = int(support[iu].sum())
        supports.append(np.flatnonzero(support[iu]).tolist())
        ll[j] = observed_loglik(gaussian_support_refit(S, support), np.zeros(d), Z)
        crit[j] = extended_bic(ll[j], edges[j], n, d, gamma)
    return {"alphas": np.asarray(est.alphas_), "ebic": crit, "loglik": ll, "n_edges": edges,
            "gamma": float(gamma), "supports": supports}


def one_se_index(mean, std, n_folds: int) -> int:
    """The one-standard-error rule on a path ordered from the largest penalty (sparsest) down:
    the first (sparsest) point whose mean CV loss is within one standard error
    (std / sqrt(n_folds)) of the minimum."""
    mean = np.where(np.isfinite(mean), mean, np.inf)
    best = int(np.argmin(mean))
    se = float(np.asarray(std)[best]) / np.sqrt(n_folds)
    return int(np.flatnonzero(mean <= mean[best] + se)[0])


class MissingScoreGGMCV(BaseEstimator):
    """:class:`MissingScoreGGM` with the penalty chosen along its path: by extended BIC
    (``selection="ebic"``, the default, as on the command line and for
    ``MissingScoreGGM(alpha="auto")``), by StARS stability selection (``"stars"``) or by
    K-fold cross-validation (``"cv"`` or ``"cv-1se"``; by default in Shao's leave-many-out
    form, see ``scheme``).

    The path's penalties come from a fit on all rows (``alpha_max`` down to
    ``alpha_max * eps``, ``alphas`` log-spaced points, or the given list). Every path point's
    edge set (|P_ij| > threshold) is refitted without penalty on each fold's training rows
    and scored by :func:`held_out_loss` on its held-out rows: the score-matching loss of their
    observed coordinates only (nothing is imputed). ``"cv"`` takes the minimum of the mean
    held-out loss, ``"cv-1se"`` the sparsest penalty within one standard error of it. The
    estimate is the all-rows path point at ``alpha_``.

    ``candidates="path"`` (default) scores the edge sets of the all-rows path, the estimator's
    possible answers: one path fit in all, and no mismatch between a fold's path and the
    all-rows path at the same penalty. Only the refits are fitted on training rows alone, so
    held-out rows inform which edge sets are candidates but never their weights.
    ``candidates="fold"`` refits the whole path on each fold's training rows (K x
    ``n_repeats`` + 1 path fits, the classical scheme).

    ``scheme="shao"`` (default) swaps the folds' roles: each edge set is refitted on ONE fold
    (n / K rows) and scored on the other K - 1, Shao's (1993) leave-many-out cross-validation.
    Ordinary K-fold CV (``scheme="kfold"``: refit on K - 1 folds, score on one) estimates
    prediction error and, like AIC, keeps superfluous edges with non-vanishing probability;
    Shao showed that choosing a model by CV is consistent only when the training share goes to
    0 (he recommends n^(3/4) training rows: 106 of 500, close to n / 5). On star graphs K-fold
    CV's minimum overshot the best penalty by one or two path points (docs/missing_score.md).
    Shao's scheme removes that bias at its source, so its plain minimum (``selection="cv"``)
    is the default rule; the one-standard-error rule, a heuristic against K-fold's
    over-selection, then over-shrinks.

    ``preconditioner="covariance"`` (default) scores with the score-matching loss preconditioned
    by the training rows' covariance S (fixed within a fold): (K_o r)' S_oo (K_o r) -
    2 tr(S_oo K_o), still a proper score-matching loss of the observed coordinates, whose excess
    over the truth is tr((S D)^2) (four times the KL divergence to second order, invariant to
    linear changes of coordinates). ``"identity"`` is the plain loss ||K_o r||^2 - 2 tr K_o,
    whose excess tr(D S D) weighs precision errors by the data's scale; on random sparse graphs
    its per-row losses grew heavy-tailed along the path and its minimum sat at 5-8 edges of
    15-22 (docs/missing_score.md, "Choosing the penalty").

    ``refit="gaussian"`` (default) refits an edge set by Gaussian maximum likelihood
    (:func:`gaussian_support_refit`, positive definite); ``"support"`` by the unpenalised
    score-matching minimiser ``tr(P S P) - 2 tr P`` (:func:`support_refit`), which can be
    indefinite: its held-out loss is then infinite (on one random sparse graph every
    non-empty point; the CV then chose the empty graph). ``refit=None`` (with
    ``candidates="fold"`` only) scores the penalised precisions, which measures prediction,
    not the graph: CV then picks a nearly full graph (F1 about 0.2). Measured choices are in
    docs/missing_score.md ("Choosing the penalty").

    With ``selection="ebic"`` the path is fitted once on all rows and each point's edge set is
    refitted by Gaussian likelihood (as above, on all rows) and scored by
    ``-2 loglik + |E| log n + 4 gamma |E| log d``, ``loglik`` the observed-data Gaussian
    log-likelihood (:func:`observed_loglik`, each row on its observed coordinates).

    ``path_polish`` full-batch steps at every penalty make each path point a converged fit at
    that penalty: without them, minibatch noise lifts spurious entries just above
    ``threshold`` and every rule scores noisy edge sets (on star graphs, d = 20, n = 500,
    30% MCAR, the best F1 on the path rose from 0.67 to 0.94 with 3 steps). The returned
    estimate is then exactly the path point at ``alpha_`` (no extra polish), the fit the rule
    scored.

    Parameters
    ----------
    method : str
        As :class:`MissingScoreGGM` (iw, variational, em, zeroed, complete).
    alphas : int or array-like
        Number of penalties on the path, or the penalties themselves (any order).
    eps : float
        Smallest penalty / largest penalty when ``alphas`` is an int.
    cv : int
        Number of folds (rows shuffled with ``random_state``).
    n_repeats : int
        Number of K-fold splits (each a fresh shuffle of the rows, the first the same as with
        ``n_repeats=1``) whose held-out losses are averaged: the choice then depends less on
        one split of the rows. With ``candidates="path"`` the path is still fitted once; only
        the refits repeat (5 repeats: about 4x the time of one split at d = 20, n = 500).
        Default 5: one split's choice moved by 0.030 F1 per star graph
        between splits (seeds 20-24), five splits' by 0.000, at the same mean F1
        (docs/missing_score.md, "Repeated splits"); ``n_repeats=1`` is the earlier default.
    refit : {"gaussian", "support", None}
        How a path point's edge set is refitted before it is scored (see above).
    candidates : {"path", "fold"}
        Score the all-rows path's edge sets (one path fit) or each fold's own path
        (K x ``n_repeats`` + 1).
    preconditioner : {"covariance", "identity"}
        The fixed metric of the held-out score-matching loss (see above).
    scheme : {"shao", "kfold"}
        Refit on one fold and score on the rest (Shao's CV), or the reverse (K-fold CV).
    selection : {"ebic", "stars", "cv", "cv-1se"}, default="ebic"
        The rule: the extended-BIC minimum (default: one path fit, the cheapest), StARS
        stability selection, the CV minimum, or the sparsest penalty within one standard
        error of it. The default was "cv" before; CV refits every path point on every
        split, several times the cost of EBIC (docs/missing_score-practice.md).
    ebic_gamma : float
        Extended-BIC gamma (0 = BIC; 0.5 is Foygel & Drton's default).
    stars_beta : float, default=0.05
        StARS bound on the (monotonised) mean edge instability 2 theta (1 - theta)
        (Liu, Roeder & Wasserman 2010): the densest penalty below it is chosen.
    stars_subsamples : int, default=20
        StARS row subsamples (drawn without replacement; each row keeps its missing entries,
        so a subsample has the data's missingness pattern). One path fit each.
    stars_subsample_size : int or None, default=None
        Rows per subsample; None = min(10 sqrt(n), 0.8 n), at least d + 1.
    marginal_transform : {None, "nonparanormal"}, default=None
        Marginal transform applied before everything else
        (:func:`~icml25.missing_score.transforms.nonparanormal`).
    path_polish : int
        Full-batch proximal steps at every penalty of every fit (``n_iter_path_polish``).
    positive_definite, pd_floor, random_state :
        As :class:`MissingScoreGGM`.
    ggm_params : dict or None
        Further :class:`MissingScoreGGM` parameters (``n_iter_per_alpha``, ``lr``, ...).

    Attributes
    ----------
    alpha_ : float, the chosen penalty.
    cv_alphas_ : (k,) the penalties tried, decreasing.
    cv_results_ : (CV rules) dict with ``alphas``, ``mean_test_loss``, ``std_test_loss`` and
        ``split{i}_test_loss`` arrays (``cv * n_repeats`` splits, repeat by repeat).
    ebic_results_ : (``selection="ebic"``) dict with ``alphas``, ``ebic``, ``loglik``,
        ``n_edges`` and ``gamma`` (:func:`ebic_path`).
    stars_results_ : (``selection="stars"``) dict with ``alphas``, ``instability``,
        ``monotone_instability``, ``beta``, ``subsample_size``, ``n_subsamples`` and
        ``edge_frequency`` (n_alphas, d, d).

    Warns
    -----
    DensestPenaltyWarning
        When the chosen penalty is the smallest of the path (its densest graph).
    best_estimator_ : the refitted :class:`MissingScoreGGM`; ``precision_``, ``covariance_``,
        ``location_``, ``scale_``, ``alphas_``, ``path_``, ``edge_scores_``,
        ``edge_presence_``, ``threshold``, ``n_features_in_`` are copied from it.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(200, 3)); X[::5, 1] = np.nan
    >>> est = MissingScoreGGMCV(alphas=4, cv=3, selection="cv",
    ...                         ggm_params={"n_iter_start": 50}, random_state=0).fit(X)
    >>> bool(est.alpha_ in est.cv_alphas_), est.precision_.shape
    (True, (3, 3))
    """

    def __init__(self, method: str = "iw", *, alphas=20, eps: float = 0.03, cv: int = 5,
                 n_repeats: int = 5, refit: str | None = "gaussian", selection: str = "ebic",
                 candidates: str = "path", preconditioner: str = "covariance",
                 scheme: str = "shao", path_polish: int = 3, ebic_gamma: float = 0.5,
                 stars_beta: float = 0.05, stars_subsamples: int = 20,
                 stars_subsample_size: int | None = None,
                 marginal_transform: str | None = None,
                 positive_definite: str | None = None, pd_floor: float = 1e-3,
                 ggm_params: dict | None = None, random_state=None):
        self.method = method
        self.stars_beta = stars_beta
        self.stars_subsamples = stars_subsamples
        self.stars_subsample_size = stars_subsample_size
        self.marginal_transform = marginal_transform
        self.selection = selection
        self.path_polish = path_polish
        self.ebic_gamma = ebic_gamma
        self.alphas = alphas
        self.eps = eps
        self.cv = cv
        self.n_repeats = n_repeats
        self.refit = refit
        self.candidates = candidates
        self.preconditioner = preconditioner
        self.scheme = scheme
        self.positive_definite = positive_definite
        self.pd_floor = pd_floor
        self.ggm_params = ggm_params
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags

    def _ggm(self, **kw) -> MissingScoreGGM:
        params = dict(self.ggm_params or {})
        bad = {"method", "alpha", "alpha_max", "n_alphas", "random_state",
               "n_iter_path_polish"} & set(params)
        if bad:
            raise ValueError(f"ggm_params may not set {sorted(bad)}: they are chosen by the CV")
        params.update(kw)
        params["n_iter_path_polish"] = int(self.path_polish)
        return MissingScoreGGM(method=self.method, random_state=self.random_state,
                               positive_definite=self.positive_definite,
                               pd_floor=self.pd_floor, **params)

    def fit(self, X, y=None):
        """Choose the penalty along the path on X (NaN = missing) by ``selection``; the
        estimate is the all-rows path point at the chosen penalty."""
        from icml25.missing_score.transforms import apply_transform

        Xc, obs, _ = check_missing_array(X)
        Xn = apply_transform(np.where(obs, Xc, np.nan), self.marginal_transform)
        n = Xn.shape[0]
        k = int(self.cv)
        if k < 2:
            raise ValueError(f"cv must be >= 2 folds, got {self.cv!r}")
        if n < 2 * k:
            raise ValueError(f"{k}-fold CV needs at least {2 * k} rows, got {n}")
        if not (isinstance(self.n_repeats, int | np.integer) and self.n_repeats >= 1):
            raise ValueError(f"n_repeats must be an integer >= 1, got {self.n_repeats!r}")
        if self.selection not in SELECTIONS:
            raise ValueError(f"selection must be one of {SELECTIONS}, got {self.selection!r}")
        if not (isinstance(self.ebic_gamma, int | float) and self.ebic_gamma >= 0):
            raise ValueError(f"ebic_gamma must be a number >= 0, got {self.ebic_gamma!r}")
        if not (isinstance(self.stars_beta, int | float) and 0 < self.stars_beta < 0.5):
            raise ValueError(f"stars_beta must lie in (0, 0.5), got {self.stars_beta!r}")
        if not (isinstance(self.stars_subsamples, int | np.integer)
                and self.stars_subsamples >= 2):
            raise ValueError("stars_subsamples must be an integer >= 2, got "
                             f"{self.stars_subsamples!r}")
        if self.stars_subsample_size is not None and not (
                isinstance(self.stars_subsample_size, int | np.integer)
                and 2 <= self.stars_subsample_size < n):
            raise ValueError(f"stars_subsample_size must be an integer in [2, n_samples = {n}) "
                             f"or None, got {self.stars_subsample_size!r}")
        if self.refit not in REFITS:
            raise ValueError(f"refit must be one of {REFITS}, got {self.refit!r}")
        if self.candidates not in CANDIDATES:
            raise ValueError(f"candidates must be one of {CANDIDATES}, got {self.candidates!r}")
        if self.preconditioner not in PRECONDITIONERS:
            raise ValueError(f"preconditioner must be one of {PRECONDITIONERS}, got "
                             f"{self.preconditioner!r}")
        if self.scheme not in SCHEMES:
            raise ValueError(f"scheme must be one of {SCHEMES}, got {self.scheme!r}")
        if self.selection in ("cv", "cv-1se") and self.scheme == "shao" and n // k <= Xn.shape[1]:
            raise ValueError(f"scheme='shao' refits on one fold of {n // k} rows, fewer than "
                             f"d + 1 = {Xn.shape[1] + 1}: use fewer folds (cv) or "
                             "scheme='kfold' (command line: --cv-scheme kfold)")
        if self.candidates == "path" and self.refit is None:
            raise ValueError("candidates='path' needs a refit ('gaussian' or 'support'): the "
                             "all-rows path has seen the held-out rows, only a refit on the "
                             "training rows can be scored on them")
        if not 0 < float(self.eps) < 1:
            raise ValueError(f"eps must lie in (0, 1), got {self.eps!r}")
        grid = self._grid(Xn)
        path_kw = {"alpha": float(grid[-1]), "alpha_max": float(grid[0]),
                   "n_alphas": grid.size, "n_iter_polish": 0}
        if int(self.path_polish) < 0:
            raise ValueError(f"path_polish must be >= 0, got {self.path_polish!r}")
        self.cv_alphas_ = grid
        self._shared = None
        if self.selection == "ebic":
            best = self._ebic(Xn, grid, path_kw)
        elif self.selection == "stars":
            best = self._stars(Xn, grid, path_kw)
        else:
            best = self._cv(Xn, grid, path_kw, k)
        self.alpha_ = float(grid[best])
        if best == grid.size - 1 and grid.size > 1:
            warnings.warn(
                f"selection={self.selection!r} chose the smallest penalty of the path "
                f"({self.alpha_:.3g}, its densest graph): the best point may lie below the "
                "path; lower eps (or pass smaller alphas) and check the selection's curve",
                DensestPenaltyWarning, stacklevel=2)
        shared, self._shared = self._shared, None
        if shared is not None and int(self.path_polish) > 0:
            # with path polishing the path points are converged fits: the estimate is the
            # point at alpha_ itself, the same fit the selection scored (the path fitted on
            # all rows, cut at alpha_, equals a fresh fit stopping there; no second fit)
            final = _cut_path(shared, best)
        else:
            extra = {"n_iter_polish": 0} if int(self.path_polish) > 0 else {}
            final = self._ggm(alpha=self.alpha_, alpha_max=float(grid[0]), n_alphas=best + 1,
                              **extra).fit(Xn)
        self.best_estimator_ = final
        for name in ("precision_", "covariance_", "location_", "scale_", "alphas_", "path_",
                     "edge_scores_", "edge_presence_", "n_features_in_", "pd_shift_"):
            setattr(self, name, getattr(final, name))
        return self

    def _grid(self, X) -> np.ndarray:
        """The penalties of the path, decreasing (from a cheap fit on X when ``alphas`` is an
        int)."""
        Xc, obs, _ = check_missing_array(X)
        Xn = np.where(obs, Xc, np.nan)
        if np.ndim(self.alphas) == 0:
            m = int(self.alphas)
            if m < 2:
                raise ValueError(f"alphas must be >= 2 penalties, got {self.alphas!r}")
            amax = self._alpha_max(Xn)
            grid = np.geomspace(amax, amax * float(self.eps), m)
        else:
            grid = np.sort(np.asarray(self.alphas, dtype=float))[::-1]
            if grid.size < 2 or not np.all(np.isfinite(grid)) or grid.min() <= 0:
                raise ValueError("alphas must hold at least two positive penalties")
            if not np.allclose(grid, np.geomspace(grid[0], grid[-1], grid.size), rtol=1e-6):
                raise ValueError("a list of alphas must be log-spaced (the path is followed "
                                 "with warm starts on that grid), e.g. np.geomspace(1, 1e-3, 20)")
        return grid

    def _splits(self, Xn, k):
        """The (train, test) index pairs of the ``n_repeats`` K-fold splits; repeat 0 is the
        split of ``n_repeats=1``, repeat r > 0 a shuffle seeded by (fold seed, r)."""
        seed = self._fold_seed()
        for r in range(int(self.n_repeats)):
            rs = seed if r == 0 else int(
                np.random.SeedSequence([seed, r]).generate_state(1)[0] % (2**31))
            yield from KFold(k, shuffle=True, random_state=rs).split(Xn)

    def _cv(self, Xn, grid, path_kw, k) -> int:
        losses = np.empty((k * int(self.n_repeats), grid.size))
        # candidates="path": the edge sets are the all-rows path's, the estimator's possible
        # answers (one path fit instead of K); only their refits see the training rows alone
        shared = self._ggm(**path_kw).fit(Xn) if self.candidates == "path" else None
        self._shared = shared
        for i, (tr, te) in enumerate(self._splits(Xn, k)):
            if self.scheme == "shao":  # train on one fold, score on the other K - 1
                tr, te = te, tr
            est = shared if shared is not None else self._ggm(**path_kw).fit(Xn[tr])
            Zte = (Xn[te] - est.location_) / est.scale_
            S = pairwise_covariance((Xn[tr] - est.location_) / est.scale_)
            # one fixed metric per fold (the training rows' covariance), the same for every
            # candidate: the loss's excess is then tr((S D)^2), likelihood-like and invariant
            # to linear changes of coordinates (see docs/missing_score.md)
            metric = lift_pd(S) if self.preconditioner == "covariance" else None
            refit = {"gaussian": gaussian_support_refit, "support": support_refit}.get(self.refit)
            for j in range(grid.size):
                Pz = est.path_[j] * np.outer(est.scale_, est.scale_)  # standardised units
                if refit is not None:
                    Pz = refit(S, np.abs(Pz) > est.threshold)
                losses[i, j] = held_out_loss(Pz, np.zeros(Pz.shape[0]), Zte, metric)
        mean, std = losses.mean(axis=0), losses.std(axis=0)
        self.cv_results_ = {"alphas": grid, "mean_test_loss": mean, "std_test_loss": std}
        for i in range(losses.shape[0]):
            self.cv_results_[f"split{i}_test_loss"] = losses[i]
        if self.selection == "cv-1se":
            # repeats re-use the same rows: their folds are not independent, so the standard
            # error counts K folds, not K x n_repeats (a repeat narrows nothing by itself)
            return one_se_index(mean, std, k)
        return int(np.argmin(np.where(np.isfinite(mean), mean, np.inf)))

    def _ebic(self, Xn, grid, path_kw) -> int:
        est = self._ggm(**path_kw).fit(Xn)
        self._shared = est
        self.ebic_results_ = ebic_path(est, Xn, float(self.ebic_gamma))
        return int(np.argmin(self.ebic_results_["ebic"]))

    def _stars(self, Xn, grid, path_kw) -> int:
        """StARS: the path on ``stars_subsamples`` row subsamples (without replacement, each
        row keeping its missing entries), edge frequencies per penalty, instability
        2 theta (1 - theta) averaged over all pairs, and :func:`stars_index`."""
        n, d = Xn.shape
        b = self.stars_subsample_size
        if b is None:  # Liu et al.'s b = 10 sqrt(n), at most 80% of the rows
            b = int(min(np.floor(10 * np.sqrt(n)), np.floor(0.8 * n)))
        b = max(int(b), d + 1) if n > d + 1 else int(b)
        rng = np.random.default_rng(self._fold_seed())
        freq = np.zeros((grid.size, d, d))
        for _ in range(int(self.stars_subsamples)):
            rows = np.sort(rng.choice(n, size=min(b, n - 1), replace=False))
            est = self._ggm(**path_kw).fit(Xn[rows])
            scale = np.outer(est.scale_, est.scale_)
            freq += np.abs(est.path_ * scale[None]) > est.threshold
        freq /= int(self.stars_subsamples)
        iu = np.triu_indices(d, 1)
        theta = freq[:, iu[0], iu[1]]
        instability = (2 * theta * (1 - theta)).mean(axis=1) if iu[0].size else \
            np.zeros(grid.size)
        best = stars_index(instability, float(self.stars_beta))
        self.stars_results_ = {
            "alphas": grid, "instability": instability,
            "monotone_instability": np.maximum.accumulate(instability),
            "beta": float(self.stars_beta), "subsample_size": int(min(b, n - 1)),
            "n_subsamples": int(self.stars_subsamples), "edge_frequency": freq}
        return best

    def _fold_seed(self) -> int:
        rs = self.random_state
        if isinstance(rs, np.random.Generator):
            return int(rs.integers(2**31))
        return int(np.random.SeedSequence(rs).generate_state(1)[0] % (2**31))

    def _alpha_max(self, Xn) -> float:
        """The penalty at which every edge is zero: the estimator's own rule (largest
        off-diagonal loss gradient after the diagonal-only start), from one cheap fit."""
        est = self._ggm(alpha=1e-12, n_alphas=2, n_iter_per_alpha=1, n_iter_polish=0)
        est.fit(Xn)
        return float(est.alphas_[0])

    def edges(self, threshold: float | None = None):
        """As :meth:`MissingScoreGGM.edges` for the refitted model."""
        check_is_fitted(self)
        return self.best_estimator_.edges(threshold)


def _cut_path(est: MissingScoreGGM, best: int) -> MissingScoreGGM:
    """``est`` (a fitted path with polished points) as if its path had stopped at point
    ``best``: the estimate is that point, the scores and presences its path's averages."""
    out = MissingScoreGGM(**{**est.get_params(), "alpha": float(est.alphas_[best]),
                             "n_alphas": best + 1, "n_iter_polish": 0})
    scale = np.outer(est.scale_, est.scale_)
    Pz = est.path_[: best + 1] * scale[None]
    scores = np.abs(Pz).mean(axis=0)
    presence = (np.abs(Pz) > est.threshold).mean(axis=0)
    np.fill_diagonal(scores, 0.0)
    np.fill_diagonal(presence, 0.0)
    out.location_, out.scale_ = est.location_, est.scale_
    out.alphas_, out.path_ = est.alphas_[: best + 1].copy(), est.path_[: best + 1].copy()
    out.edge_scores_ = 0.5 * (scores + scores.T)
    out.edge_presence_ = np.maximum(presence, presence.T)
    out.n_features_in_ = est.n_features_in_
    out.precision_, out.pd_shift_ = _project_pd(est.path_[best], est.positive_definite,
                                                float(est.pd_floor))
    out.covariance_ = _covariance(out.precision_)
    return out
