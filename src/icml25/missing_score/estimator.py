"""``MissingScoreGGM``: a sparse Gaussian graphical model fitted by (marginal) score matching
on data with NaN entries, with an L1 penalty on the off-diagonal of the precision (proximal
SGD) along a regularisation path."""

from __future__ import annotations

import warnings

import numpy as np
import torch
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from icml25.missing_score._validation import (
    TooFewCompleteRowsWarning,
    check_complete_rows,
    check_missing_array,
)
from icml25.missing_score.domains import Domain
from icml25.missing_score.fitting import Objective, to_tensors
from icml25.missing_score.models import GaussianModel

__all__ = ["MissingScoreGGM", "TooFewCompleteRowsWarning"]

_GGM_METHODS = ("iw", "variational", "em", "zeroed", "complete")
class MissingScoreGGM(BaseEstimator):
    """Sparse precision matrix from data with missing values (NaN), by score matching.

    Parameters
    ----------
    method : {"iw", "variational", "em", "zeroed", "complete"}
        Marg-IW (default), Marg-Var, the EM baseline, the biased zeroed baseline, or ordinary
        score matching on complete rows only.
    alpha : "auto" or float, default="auto"
        ``"auto"``: the penalty is chosen along a path scaled to the data, from ``alpha_max``
        (no edge) down to ``eps * alpha_max``, by ``selection`` (through
        :class:`~icml25.missing_score.MissingScoreGGMCV`, with its path polishing); the
        chosen value is ``alpha_``. A number fixes the final (smallest) L1 penalty on the
        off-diagonal precision entries; the path runs from ``alpha_max`` down to it. A fixed
        penalty is not comparable across data sets: the loss gradient that an edge must beat
        grows with the strength of the dependence and shrinks with n only as 1/sqrt(n), so
        a small number such as 0.01 is far below the noise level of the path's largest
        penalty and keeps every edge (docs/missing_score-practice.md).
    selection : {"ebic", "stars", "cv", "cv-1se"}, default="ebic"
        How ``alpha="auto"`` chooses: extended BIC of the observed-data Gaussian likelihood
        (one path fit), StARS stability selection on row subsamples that keep their missing
        entries, or cross-validation of the held-out score-matching loss (K path refits; the
        slowest). Ignored for a numeric ``alpha``.
    eps : float, default=0.03
        Smallest / largest penalty of the ``alpha="auto"`` path.
    marginal_transform : {None, "nonparanormal"}, default=None
        Marginal transform applied before fitting: ``"nonparanormal"`` replaces each
        column's observed values by their rank-based normal scores
        (:func:`~icml25.missing_score.transforms.nonparanormal`), for skewed or
        heavy-tailed variables; ``precision_`` is then that of the transformed data.
    selection_params : dict or None
        Further :class:`~icml25.missing_score.MissingScoreGGMCV` parameters for
        ``alpha="auto"`` (``ebic_gamma``, ``stars_beta``, ``stars_subsamples``, ``cv``, ...).
    n_alphas : int
        Number of penalties on the (log-spaced) path (default 30; with ``alpha="auto"``, 20
        unless set).
    alpha_max : float or None
        First penalty; None = the smallest one at which every edge is zero (from the loss
        gradient after the diagonal-only warm start).
    n_iter_start, n_iter_per_alpha : int
        Proximal SGD steps for the diagonal-only warm start and per path point.
    lr : float
        Proximal SGD step size; soft-thresholding by lr * alpha after each step.
    batch_size : int
        Rows per step.
    n_draws : int
        Imputations per row (IW/EM proposal draws, variational samples).
    proposal_scale : float
        Std of the fixed Gaussian IW/EM proposal in standardised units.
    threshold : float
        |P_ij| above which (standardised units) an edge counts as present.
    n_iter_polish : int
        Full-batch proximal gradient steps at ``alpha`` after the path, for ``precision_``:
        minibatch noise otherwise keeps lifting zero entries just above ``threshold``.
    n_iter_path_polish : int
        Full-batch proximal gradient steps at *every* penalty of the path, after its SGD steps
        (the path then continues from the polished point). 0 (default) = none. It makes each
        path point's edge set that of a converged fit at that penalty rather than of a noisy
        SGD iterate, which penalty selection needs (:class:`MissingScoreGGMCV`), at the cost of
        ``n_iter_path_polish`` passes over the data per penalty.
    standardize : bool
        Work with standardised columns (precision_ is mapped back to the data's units).
    var_hidden, var_steps, var_lr, var_objective :
        Marg-Var's MLP widths, inner steps per theta step, Adam rate, inner loss.
    domain : Box, HalfSpace or None
        Truncated support of the data (in data units): truncated score matching with the
        domain's boundary-vanishing weights.
    n_threads : int or None
        torch intra-op threads during ``fit`` (restored afterwards); None leaves torch's
        setting. The per-step operations are small, so 1 thread is fastest in practice and
        avoids a large slow-down from oversubscription on a shared machine (measured on a
        loaded 2-core box: 10 s with 1 thread vs 157 s with 2 for the d=100 path).
    positive_definite : {None, "shift", "eigen"}
        Optional projection of ``precision_`` onto the positive-definite cone: "shift" adds
        the smallest multiple of the identity that lifts the minimum eigenvalue to
        ``pd_floor`` times the mean diagonal (keeps every off-diagonal entry, so the graph is
        unchanged); "eigen" clips the eigenvalues at that floor (the nearest such matrix in
        Frobenius norm; may fill in zeros). None (default) leaves the estimate as fitted.
        ``pd_shift_`` records the shift / the eigenvalue mass added (0 when already PD).
    pd_floor : float
        Relative eigenvalue floor for ``positive_definite``.
    random_state : int, Generator or None
        Seed for batches, proposal draws and the variational network.

    Attributes
    ----------
    precision_, covariance_ : (d, d) arrays at ``alpha`` (data units).
    location_ : column means used for centring.
    alphas_ : (n_alphas,) the path's penalties, decreasing.
    path_ : (n_alphas, d, d) precision at each penalty (data units).
    edge_scores_ : (d, d) symmetric: the mean over the path of |P_ij| on standardised data
        (the area under the entry's lasso path): larger = more evidence of an edge. It ranks
        edges by both how early they enter and how strong they are, and, unlike the first
        entry time, is not fooled by SGD noise briefly lifting an entry above ``threshold``.
    edge_presence_ : (d, d) the fraction of the path's penalties at which |P_ij| > threshold.
    n_features_in_ : int
    alpha_ : float
        The penalty of ``precision_`` (the chosen one with ``alpha="auto"``).
    selection_ : MissingScoreGGMCV or None
        With ``alpha="auto"``, the fitted selector (its ``ebic_results_``,
        ``stars_results_`` or ``cv_results_`` hold the curve); None for a fixed ``alpha``.

    Warns
    -----
    DensestPenaltyWarning
        With ``alpha="auto"``, when the chosen penalty is the smallest of the path.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(200, 4)); X[::4, 0] = np.nan
    >>> est = MissingScoreGGM(alpha=0.01, n_alphas=5, random_state=0).fit(X)
    >>> est.precision_.shape, bool(np.isfinite(est.edge_scores_).all())
    ((4, 4), True)
    >>> auto = MissingScoreGGM(n_alphas=8, random_state=0).fit(X)  # EBIC along the path
    >>> bool(auto.alpha_ in auto.selection_.cv_alphas_), len(auto.edges()) < 6
    (True, True)
    """

    def __init__(self, method: str = "iw", alpha: float | str = "auto", *,
                 selection: str = "ebic", eps: float = 0.03,
                 marginal_transform: str | None = None,
                 selection_params: dict | None = None, n_alphas: int | None = None,
                 alpha_max: float | None = None, n_iter_start: int = 200,
                 n_iter_per_alpha: int = 10, lr: float = 0.025, batch_size: int = 100,
                 n_draws: int = 10, proposal_scale: float = 1.0, threshold: float = 0.002,
                 standardize: bool = True, var_hidden=(64, 64), var_steps: int = 5,
                 var_lr: float = 0.01, var_objective: str = "fisher", domain=None,
                 n_iter_polish: int = 30, n_iter_path_polish: int = 0,
                 n_threads: int | None = 1,
                 positive_definite: str | None = None, pd_floor: float = 1e-3,
                 random_state=None):
        self.method = method
        self.alpha = alpha
        self.selection = selection
        self.eps = eps
        self.marginal_transform = marginal_transform
        self.selection_params = selection_params
        self.n_alphas = n_alphas
        self.alpha_max = alpha_max
        self.n_iter_start = n_iter_start
        self.n_iter_per_alpha = n_iter_per_alpha
        self.lr = lr
        self.batch_size = batch_size
        self.n_draws = n_draws
        self.proposal_scale = proposal_scale
        self.threshold = threshold
        self.standardize = standardize
        self.var_hidden = var_hidden
        self.var_steps = var_steps
        self.var_lr = var_lr
        self.var_objective = var_objective
        self.domain = domain
        self.n_iter_polish = n_iter_polish
        self.n_iter_path_polish = n_iter_path_polish
        self.n_threads = n_threads
        self.positive_definite = positive_definite
        self.pd_floor = pd_floor
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags

    def _check_params(self):
        if self.method not in _GGM_METHODS:
            raise ValueError(f"method must be one of {_GGM_METHODS}, got {self.method!r}")
        if isinstance(self.alpha, str) and self.alpha != "auto":
            raise ValueError(f"alpha must be 'auto' or a finite number >= 0, got {self.alpha!r}")
        from icml25.missing_score.transforms import TRANSFORMS

        if self.marginal_transform not in TRANSFORMS:
            raise ValueError(f"marginal_transform must be one of {TRANSFORMS}, got "
                             f"{self.marginal_transform!r}")
        for name in (("threshold",) if self.alpha == "auto" else ("alpha", "threshold")):
            v = getattr(self, name)
            if not (isinstance(v, int | float) and np.isfinite(v) and v >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")
        for name in ("lr", "proposal_scale"):
            v = getattr(self, name)
            if not (isinstance(v, int | float) and np.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be a positive number, got {v!r}")
        if self.n_alphas is not None and int(self.n_alphas) < 1:
            raise ValueError(f"n_alphas must be >= 1, got {self.n_alphas!r}")
        for name in ("n_iter_per_alpha", "batch_size", "n_draws"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)!r}")
        if self.n_threads is not None and int(self.n_threads) < 1:
            raise ValueError("n_threads must be >= 1 or None")
        if int(self.n_iter_polish) < 0:
            raise ValueError("n_iter_polish must be >= 0")
        if int(self.n_iter_path_polish) < 0:
            raise ValueError("n_iter_path_polish must be >= 0")
        if int(self.n_iter_start) < 0:
            raise ValueError("n_iter_start must be >= 0")
        if self.domain is not None and not isinstance(self.domain, Domain):
            raise TypeError("domain must be a Box, a HalfSpace or None")
        if self.alpha_max is not None and not self.alpha_max > 0:
            raise ValueError("alpha_max must be positive or None")
        if self.positive_definite not in (None, "shift", "eigen"):
            raise ValueError("positive_definite must be None, 'shift' or 'eigen', got "
                             f"{self.positive_definite!r}")
        if not (isinstance(self.pd_floor, int | float) and 0 < self.pd_floor < 1):
            raise ValueError(f"pd_floor must lie in (0, 1), got {self.pd_floor!r}")

    def _seed(self) -> int:
        rs = self.random_state
        if isinstance(rs, np.random.Generator):
            return int(rs.integers(2**31))
        if isinstance(rs, np.random.RandomState):
            return int(rs.randint(2**31))
        return int(np.random.SeedSequence(rs).generate_state(1)[0])

    def fit(self, X, y=None):
        """Fit the path on X (n_samples, n_features); NaN marks a missing entry."""
        self._check_params()
        if self.alpha == "auto":
            return self._fit_auto(X)
        if self.n_threads is None:
            return self._fit(X)
        old = torch.get_num_threads()
        torch.set_num_threads(int(self.n_threads))
        try:
            return self._fit(X)
        finally:
            torch.set_num_threads(old)

    _SELECTOR_OWNED = ("method", "alpha", "selection", "eps", "marginal_transform",
                       "selection_params", "n_alphas", "alpha_max", "n_iter_path_polish",
                       "positive_definite", "pd_floor", "random_state")

    def _fit_auto(self, X):
        """alpha="auto": the penalty chosen by ``selection`` along a data-scaled path."""
        from icml25.missing_score.selection import MissingScoreGGMCV

        ggm = {k: v for k, v in self.get_params(deep=False).items()
               if k not in self._SELECTOR_OWNED}
        kw = dict(self.selection_params or {})
        bad = {"method", "alphas", "eps", "selection", "marginal_transform", "ggm_params",
               "positive_definite", "pd_floor", "random_state"} & set(kw)
        if bad:
            raise ValueError(f"selection_params may not set {sorted(bad)}: they are this "
                             "estimator's own parameters")
        sel = MissingScoreGGMCV(
            method=self.method, alphas=int(self.n_alphas or 20), eps=self.eps,
            selection=self.selection, marginal_transform=self.marginal_transform,
            positive_definite=self.positive_definite, pd_floor=self.pd_floor,
            ggm_params=ggm, random_state=self.random_state, **kw)
        sel.fit(X)
        best = sel.best_estimator_
        for name in ("precision_", "covariance_", "location_", "scale_", "alphas_", "path_",
                     "edge_scores_", "edge_presence_", "n_features_in_", "pd_shift_"):
            setattr(self, name, getattr(best, name))
        self.alpha_ = float(sel.alpha_)
        self.selection_ = sel
        return self

    def _fit(self, X):
        from icml25.missing_score.transforms import apply_transform

        Xc, obs, _ = check_missing_array(X)
        if self.marginal_transform is not None:
            Xc = apply_transform(np.where(obs, Xc, np.nan), self.marginal_transform)
        n, d = Xc.shape
        self.n_features_in_ = d
        loc = np.array([Xc[obs[:, j], j].mean() for j in range(d)])
        scale = np.ones(d)
        if self.standardize:
            scale = np.array([Xc[obs[:, j], j].std() for j in range(d)])
            scale[~(scale > 1e-12)] = 1.0
        Z = (Xc - loc) / scale
        seed = self._seed()
        gen = torch.Generator().manual_seed(seed)
        with torch.random.fork_rng():  # the variational network's initialisation
            torch.manual_seed(seed)
            objective = Objective(
                self.method, d, n_draws=self.n_draws, proposal_scale=float(self.proposal_scale),
                var_hidden=tuple(self.var_hidden), var_steps=self.var_steps, var_lr=self.var_lr,
                var_objective=self.var_objective, generator=gen,
                domain=None if self.domain is None else self.domain.standardised(loc, scale))
        model = GaussianModel(d, learn_mean=False, parametrization="symmetric")
        x0, ob = to_tensors(Z, obs)
        if self.method == "complete":
            check_complete_rows(obs)

        def batch():
            if self.batch_size >= n:
                return x0, ob
            idx = torch.randint(0, n, (int(self.batch_size),), generator=gen)
            return x0[idx], ob[idx]

        def step(alpha, full=False):
            model.zero_grad()
            if full:  # the full-data gradient, in chunks
                if not self._full_grad(objective, model, x0, ob):
                    return
            else:
                loss, _ = objective(model, *batch())
                if loss is None or not torch.isfinite(loss):
                    return
                loss.backward()
            with torch.no_grad():
                torch.nn.utils.clip_grad_norm_([model.diag_raw, model.off], 10.0)
                model.diag_raw -= self.lr * model.diag_raw.grad
                model.diag_raw.clamp_(min=1e-3)
                model.off -= self.lr * model.off.grad
                t = self.lr * alpha  # proximal step of the L1 penalty
                model.off.copy_(torch.sign(model.off) * torch.clamp(model.off.abs() - t, min=0.0))

        for _ in range(int(self.n_iter_start)):
            step(np.inf)
        alpha_max = self.alpha_max if self.alpha_max is not None else self._entry_alpha(
            objective, model, x0, ob)
        alpha_max = max(float(alpha_max), float(self.alpha))
        n_alphas = 30 if self.n_alphas is None else int(self.n_alphas)
        if n_alphas == 1 or alpha_max <= self.alpha:
            alphas = np.array([float(self.alpha)])
        else:
            lo = max(float(self.alpha), alpha_max * 1e-6)
            alphas = np.geomspace(alpha_max, lo, n_alphas)
            alphas[-1] = float(self.alpha)
        path = np.empty((len(alphas), d, d))
        scores, presence = np.zeros((d, d)), np.zeros((d, d))
        for k, a in enumerate(alphas):
            for _ in range(int(self.n_iter_per_alpha)):
                step(a)
            for _ in range(int(self.n_iter_path_polish)):
                step(a, full=True)
            P = model.precision().detach().numpy()
            presence += np.abs(P) > self.threshold
            scores += np.abs(P)
            path[k] = P / np.outer(scale, scale)
        scores /= len(alphas)
        presence /= len(alphas)
        for _ in range(int(self.n_iter_polish)):
            step(alphas[-1], full=True)
        final = model.precision().detach().numpy() / np.outer(scale, scale)
        np.fill_diagonal(scores, 0.0)
        np.fill_diagonal(presence, 0.0)
        if not np.all(np.isfinite(path)):
            raise FloatingPointError("the fit diverged (non-finite precision); lower lr")
        self.location_ = loc
        self.scale_ = scale
        self.alphas_ = alphas
        self.path_ = path
        self.edge_scores_ = 0.5 * (scores + scores.T)
        self.edge_presence_ = np.maximum(presence, presence.T)
        self.precision_, self.pd_shift_ = _project_pd(final, self.positive_definite,
                                                      float(self.pd_floor))
        self.covariance_ = _covariance(self.precision_)
        self.alpha_ = float(alphas[-1])
        self.selection_ = None
        return self

    @staticmethod
    def _full_grad(objective, model, x0, ob, chunk: int = 500) -> bool:
        """Accumulate the mean loss gradient over all rows into .grad (chunked)."""
        n, ok = x0.shape[0], False
        for lo in range(0, n, chunk):
            loss, _ = objective(model, x0[lo:lo + chunk], ob[lo:lo + chunk])
            if loss is None or not torch.isfinite(loss):
                continue
            (loss * (min(chunk, n - lo) / n)).backward()
            ok = True
        return ok

    @staticmethod
    def _entry_alpha(objective, model, x0, ob) -> float:
        """Largest |d loss / d P_ij| on the off-diagonal at the diagonal-only start: the penalty
        above which proximal SGD keeps every edge at zero."""
        if model.off.numel() == 0:
            return 0.0
        grads = []
        for lo in range(0, x0.shape[0], 500):
            loss, _ = objective(model, x0[lo:lo + 500], ob[lo:lo + 500])
            if loss is None or not torch.isfinite(loss):
                continue
            (g,) = torch.autograd.grad(loss, model.off)
            grads.append(g * min(500, x0.shape[0] - lo))
        if not grads:
            return 1.0
        return float((sum(grads) / x0.shape[0]).abs().max()) * 1.05

    def edges(self, threshold: float | None = None):
        """Edges (i, j, score) with i < j, sorted by decreasing score: by default those of
        ``precision_`` (|P_ij| > ``self.threshold`` in standardised units); with
        ``threshold``, those whose score exceeds it."""
        check_is_fitted(self)
        S = self.edge_scores_
        i, j = np.triu_indices_from(S, 1)
        if threshold is None:  # the graph of precision_: |P_ij| > self.threshold, standardised
            Pz = self.precision_ * np.outer(self.scale_, self.scale_)
            keep = np.abs(Pz[i, j]) > self.threshold
        else:
            keep = S[i, j] > float(threshold)
        out = sorted(zip(i[keep].tolist(), j[keep].tolist(), S[i, j][keep].tolist(),
                         strict=True), key=lambda e: -e[2])
        return out


def _project_pd(P: np.ndarray, how: str | None, floor: float) -> tuple[np.ndarray, float]:
    """(projected precision, amount added): see ``positive_definite``."""
    if how is None:
        return P, 0.0
    P = 0.5 * (P + P.T)
    w, V = np.linalg.eigh(P)
    eps = floor * float(np.mean(np.abs(np.diag(P)))) or floor
    if w.min() >= eps:
        return P, 0.0
    if how == "shift":
        shift = eps - float(w.min())
        return P + shift * np.eye(P.shape[0]), shift
    clipped = np.maximum(w, eps)
    return (V * clipped) @ V.T, float(np.sum(clipped - w))


def _covariance(P: np.ndarray) -> np.ndarray:
    """inverse of a symmetric precision; warns and uses the pseudo-inverse of its positive-
    definite part if score matching returned an indefinite matrix."""
    P = 0.5 * (P + P.T)
    w, V = np.linalg.eigh(P)
    if w.min() <= 0:
        warnings.warn("the estimated precision is not positive definite; covariance_ uses its "
                      "positive eigen-directions only", UserWarning, stacklevel=3)
        inv = np.where(w > 1e-12, 1.0 / np.where(w > 1e-12, w, 1.0), 0.0)
        return (V * inv) @ V.T
    return (V / w) @ V.T
