"""Training: one ``Objective`` per method and a plain fitting loop for any density model."""

from __future__ import annotations

import numpy as np
import torch

from icml25.missing_score._validation import check_complete_rows, check_missing_array
from icml25.missing_score.domains import Domain
from icml25.missing_score.objectives import (
    em_loss,
    iw_loss,
    marginal_terms,
    score_matching_loss,
    zeroed_loss,
)
from icml25.missing_score.variational import VariationalImputer

__all__ = ["METHODS", "Objective", "fit_density", "to_tensors"]

METHODS = ("iw", "variational", "em", "zeroed", "complete", "exact")


def to_tensors(X: np.ndarray, obs: np.ndarray):
    """(zero-filled float64 tensor, 0/1 float mask tensor) from an array with NaN."""
    x0 = torch.as_tensor(np.where(obs, X, 0.0), dtype=torch.float64)
    return x0, torch.as_tensor(obs, dtype=torch.float64)


class Objective:
    """The per-batch training loss of one method.

    method: ``iw`` (Marg-IW), ``variational`` (Marg-Var), ``em`` (EM baseline), ``zeroed``
    (biased baseline), ``complete`` (score matching on fully observed rows only) or ``exact``
    (the variational estimator with an exact conditional sampler; Gaussian models only).
    ``proposal_scale``: per-coordinate std of the fixed IW/EM proposal (scalar or (d,)).
    Calling it returns (training loss, mean loss estimate) for a batch.

    Parameters
    ----------
    method : {"iw", "variational", "em", "zeroed", "complete", "exact"}
        The estimator.
    dim : int
        Number of variables.
    n_draws : int, default=10
        Imputation draws per row (``iw``, ``em``, ``variational``, ``exact``).
    proposal_scale : float or array-like of shape (d,), default=1.0
        Per-coordinate std of the fixed IW/EM proposal (positive).
    proposal_mean : array-like of shape (d,) or None, default=None
        Mean of the IW/EM proposal (None: the model's own).
    domain : Domain or None, default=None
        Truncation domain (None: the whole space).
    var_hidden : tuple of int, default=(64, 64)
        Hidden widths of the variational imputer.
    var_steps : int, default=5
        Inner Adam steps on the imputer per batch.
    var_lr : float, default=0.01
        Learning rate of the imputer.
    var_objective : {"fisher", "kl"}, default="fisher"
        Inner objective of the imputer.
    var_clip : float, default=0.5
        Gradient-norm clip of the imputer.
    sampler : callable or None, default=None
        Conditional sampler for ``exact`` (None: the model's exact Gaussian conditional).
    generator : torch.Generator or None, default=None
        Random source of the draws.

    Returns
    -------
    loss : torch.Tensor or None
        What calling it gives first: the scalar training loss (None when every row was dropped).
    value : float
        Then the mean loss estimate over the kept rows (NaN when none).

    Raises
    ------
    ValueError
        For an unknown ``method`` or ``var_objective``, ``n_draws < 1`` or a non-positive
        ``proposal_scale``.

    Examples
    --------
    >>> import torch
    >>> from icml25.missing_score import GaussianModel
    >>> obj = Objective("zeroed", 2)
    >>> x0 = torch.tensor([[0.5, 0.0], [1.0, -1.0]], dtype=torch.float64)
    >>> obs = torch.tensor([[1.0, 0.0], [1.0, 1.0]], dtype=torch.float64)
    >>> loss, value = obj(GaussianModel(2), x0, obs)
    >>> loss.shape, isinstance(value, float)
    (torch.Size([]), True)
    """

    def __init__(self, method: str, dim: int, *, n_draws: int = 10, proposal_scale=1.0,
                 proposal_mean=None, domain: Domain | None = None, var_hidden=(64, 64),
                 var_steps: int = 5, var_lr: float = 0.01, var_objective: str = "fisher",
                 var_clip: float = 0.5, sampler=None, generator: torch.Generator | None = None):
        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {method!r}")
        if int(n_draws) < 1:
            raise ValueError(f"n_draws must be >= 1, got {n_draws}")
        if var_objective not in ("fisher", "kl"):
            raise ValueError("var_objective must be 'fisher' or 'kl'")
        self.method, self.dim, self.n_draws = method, int(dim), int(n_draws)
        scale = torch.as_tensor(proposal_scale, dtype=torch.float64)
        self.scale = scale.expand(self.dim).clone()
        if not torch.all(self.scale > 0):
            raise ValueError("proposal_scale must be positive")
        self.pmean = None if proposal_mean is None else torch.as_tensor(proposal_mean,
                                                                          dtype=torch.float64)
        self.domain = domain or Domain()
        self.gen = generator
        self.var_steps, self.var_objective, self.var_clip = int(var_steps), var_objective, var_clip
        self.sampler = sampler
        self.imputer = None
        if method == "variational":
            self.imputer = VariationalImputer(self.dim, var_hidden)
            self.phi_opt = torch.optim.Adam(self.imputer.parameters(), lr=var_lr)

    def phi_step(self, model, x0, obs):
        """L inner Adam steps on the variational parameters (model fixed)."""
        for _ in range(self.var_steps):
            loss = self.imputer.inner_loss(model, x0, obs, self.var_objective, 1, self.gen)
            if loss is None or not torch.isfinite(loss):
                return
            self.phi_opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.imputer.parameters(), self.var_clip)
            self.phi_opt.step()

    def rows(self, model, x0, obs):
        """Per-row (surrogate, value); value is NaN for rows dropped by the estimator."""
        m, d = self.method, self.domain
        if m == "iw":
            return iw_loss(model, x0, obs, self.n_draws, self.scale, self.pmean, d, self.gen)
        if m == "em":
            return em_loss(model, x0, obs, self.n_draws, self.scale, self.pmean, d, self.gen)
        if m == "zeroed":
            return zeroed_loss(model, x0, obs, d)
        if m == "complete":
            full = (obs > 0).all(-1)
            surr, val = score_matching_loss(model, x0, None, d)
            nan = torch.full_like(val, torch.nan)
            return torch.where(full, surr, torch.zeros_like(surr)), torch.where(full, val, nan)
        if m == "variational":
            self.phi_step(model, x0, obs)
            with torch.no_grad():
                xk, _ = self.imputer.rsample(x0, obs, self.n_draws, self.gen)
        else:  # exact
            sampler = self.sampler
            if sampler is None:
                from icml25.missing_score.gaussian import exact_conditional_sampler

                sampler = exact_conditional_sampler(model)
            xk = sampler(x0, obs, self.n_draws, self.gen)
        return marginal_terms(model, xk.detach(), obs, None, d)

    def __call__(self, model, x0, obs):
        surr, val = self.rows(model, x0, obs)
        ok = torch.isfinite(val)
        if not ok.any():
            return None, float("nan")
        return surr[ok].mean(), float(val[ok].detach().mean())


def fit_density(model, X, method: str = "iw", *, n_iter: int = 1000, lr: float = 0.01,
                batch_size: int | None = 100, clip: float | None = 0.5, seed: int | None = None,
                lr_decay: bool = False, **objective_kw):
    """Fit ``model`` to ``X`` (NaN = missing) with Adam; returns the per-step loss history.

    ``lr_decay`` decays the step size linearly to 5% (a less noisy final iterate);
    ``objective_kw`` go to :class:`Objective` (n_draws, proposal_scale, domain, var_*...).

    Parameters
    ----------
    model : DensityModel
        The model to fit (its parameters are updated in place).
    X : array-like of shape (n, d)
        Data with NaN for missing entries; ``d`` must equal ``model.dim``.
    method : str, default="iw"
        One of :data:`METHODS` (see :class:`Objective`).
    n_iter : int, default=1000
        Adam steps.
    lr : float, default=0.01
        Learning rate.
    batch_size : int or None, default=100
        Rows per step, drawn with replacement (None or >= n: all rows).
    clip : float or None, default=0.5
        Gradient-norm clip (None or 0: none).
    seed : int or None, default=None
        Seeds the batches and draws.
    lr_decay : bool, default=False
        Decay the learning rate linearly to 5 %.
    **objective_kw
        Passed to :class:`Objective`.

    Returns
    -------
    list of float
        The mean loss estimate of each step (NaN when a batch had no usable row).

    Raises
    ------
    ValueError
        If ``X`` is malformed or has the wrong width, or for a bad objective option.

    Examples
    --------
    >>> import numpy as np
    >>> from icml25.missing_score import GaussianModel
    >>> X = np.random.default_rng(0).normal(size=(200, 3)); X[::3, 1] = np.nan
    >>> hist = fit_density(GaussianModel(3), X, "iw", n_iter=50, seed=0)
    >>> len(hist)
    50
    """
    Xc, obs, _ = check_missing_array(X)
    if Xc.shape[1] != model.dim:
        raise ValueError(f"X has {Xc.shape[1]} features but the model has dim={model.dim}")
    if method == "complete":
        check_complete_rows(obs, stacklevel=3)
    gen = torch.Generator().manual_seed(int(np.random.SeedSequence(seed).generate_state(1)[0]))
    objective = Objective(method, model.dim, generator=gen, **objective_kw)
    x0, ob = to_tensors(Xc, obs)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=lr)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda t: 1.0 - 0.95 * t / max(int(n_iter), 1) if lr_decay else 1.0)
    n = x0.shape[0]
    history = []
    for _ in range(int(n_iter)):
        if batch_size is None or batch_size >= n:
            xb, ob_b = x0, ob
        else:
            idx = torch.randint(0, n, (batch_size,), generator=gen)
            xb, ob_b = x0[idx], ob[idx]
        loss, val = objective(model, xb, ob_b)
        history.append(val)
        if loss is None or not torch.isfinite(loss):
            continue
        opt.zero_grad()
        loss.backward()
        if clip:
            torch.nn.utils.clip_grad_norm_(params, clip)
        opt.step()
        sched.step()
    return history
