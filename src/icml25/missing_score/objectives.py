"""Score-matching objectives for data with missing entries (MCAR).

Rows are passed as a zero-filled tensor ``x0`` (N, d) and a 0/1 float mask ``obs`` (1 = observed).
Each objective returns per-row tensors ``(surrogate, value)``: ``value`` is the loss estimate (for
monitoring and tests) and ``surrogate`` is a differentiable quantity whose parameter gradient is
the gradient of the loss estimate. The training loss is the mean of ``surrogate`` over rows.

Marginal score matching (Givens, Liu & Reeve, 2025) needs, per observed coordinate j and under
the model conditional of the missing block given the observed one (E', Var'),

    L_M(x_obs) = sum_j  -(E' s_j)^2 + 2 E'[s_j^2] + 2 E'[d_j s_j]
               (truncated: g_j * (...) + 2 d_j g_j * E' s_j).

Marg-IW estimates E' by self-normalised importance sampling from a fixed proposal; Marg-Var
samples a learned Gaussian. The gradient of an expectation under the model conditional is
E'[grad h] + Cov'(h, grad log q) (Lemma 4.8), which the surrogate reproduces with detached
weights: E_w[h] + Cov_w(h.detach(), log q).
"""

from __future__ import annotations

import torch

from icml25.missing_score.domains import Domain

__all__ = [
    "draw_proposal",
    "em_loss",
    "iw_loss",
    "marginal_terms",
    "score_matching_loss",
    "zeroed_loss",
]

_WHOLE = Domain()


def _sm_integrand(s, h, g, dg):
    return g * (s * s + 2.0 * h) + 2.0 * dg * s


def score_matching_loss(model, x: torch.Tensor, obs: torch.Tensor | None = None,
                        domain: Domain | None = None):
    """Ordinary (truncated) score matching on rows ``x``; with ``obs`` only those coordinates
    are summed. Returns per-row (surrogate, value) (identical here).

    Parameters
    ----------
    model : DensityModel
        The model (its ``score_and_hess_diag`` is used).
    x : torch.Tensor of shape (N, d)
        The rows.
    obs : torch.Tensor of shape (N, d) or None, default=None
        0/1 mask of the coordinates to sum (None: all).
    domain : Domain or None, default=None
        Truncation domain (None: the whole space).

    Returns
    -------
    surrogate : torch.Tensor of shape (N,)
        Differentiable per-row loss.
    value : torch.Tensor of shape (N,)
        The same, detached.

    Examples
    --------
    >>> import torch
    >>> from icml25.missing_score import GaussianModel
    >>> model = GaussianModel(2)                     # N(0, I)
    >>> surr, val = score_matching_loss(model, torch.tensor([[1.0, 0.0]], dtype=torch.float64))
    >>> val.tolist()                                 # sum_j s_j^2 + 2 ds_j/dx_j
    [-3.0]
    """
    domain = domain or _WHOLE
    if obs is None:
        obs = torch.ones_like(x)
    _, s, h = model.score_and_hess_diag(x)
    g, dg = domain.weights(x, obs)
    val = (obs * _sm_integrand(s, h, g, dg)).sum(-1)
    return val, val.detach()


def zeroed_loss(model, x0, obs, domain: Domain | None = None):
    """The biased "zeroed" baseline: missing entries set to 0, score matching on the observed
    coordinates only (MissDiff carried over to explicit models).

    Parameters
    ----------
    model : DensityModel
        The model.
    x0 : torch.Tensor of shape (N, d)
        Zero-filled rows.
    obs : torch.Tensor of shape (N, d)
        0/1 float mask (1 = observed).
    domain : Domain or None, default=None
        Truncation domain.

    Returns
    -------
    surrogate, value : torch.Tensor of shape (N,)
        Per-row loss (differentiable) and its detached copy.

    Examples
    --------
    >>> import torch
    >>> from icml25.missing_score import GaussianModel
    >>> model = GaussianModel(2)                     # N(0, I)
    >>> x0 = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    >>> obs = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    >>> zeroed_loss(model, x0, obs)[1].tolist()     # only coordinate 0: 1 - 2
    [-1.0]
    """
    return score_matching_loss(model, x0 * obs, obs, domain)


def draw_proposal(x0, obs, n_draws: int, scale: torch.Tensor, mean: torch.Tensor | None = None,
                  generator: torch.Generator | None = None):
    """r imputations per row from an independent Gaussian N(mean, diag(scale^2)) on the missing
    coordinates. Returns (xk (N, r, d), log proposal density up to a per-row constant (N, r))."""
    N, d = x0.shape
    mean = torch.zeros(d, dtype=x0.dtype) if mean is None else mean
    # float32 normals are ~6x cheaper to draw on CPU; the precision is ample for imputations
    eps = torch.randn((N, n_draws, d), generator=generator).to(x0.dtype)
    miss = (1.0 - obs).unsqueeze(1)
    xk = x0.unsqueeze(1) * obs.unsqueeze(1) + miss * (mean + scale * eps)
    logp = -0.5 * (miss * eps * eps).sum(-1)  # the normaliser is the same for all r draws
    return xk, logp


def _weighted(w, a):
    """sum_k w_k a_k over the draw axis: (N, r) x (N, r, d) -> (N, d)."""
    return torch.einsum("nr,nrd->nd", w, a)


def marginal_terms(model, xk, obs, weights=None, domain: Domain | None = None,
                   log_q=None, s=None, h=None):
    """Marginal score-matching loss from r imputations per row.

    xk: (N, r, d) imputed rows (observed entries identical across draws); weights: (N, r)
    self-normalised, detached (None = uniform, the variational estimator).
    Returns per-row (surrogate, value).

    Parameters
    ----------
    model : DensityModel
        The model.
    xk : torch.Tensor of shape (N, r, d)
        Imputed rows.
    obs : torch.Tensor of shape (N, d)
        0/1 float mask (1 = observed).
    weights : torch.Tensor of shape (N, r) or None, default=None
        Self-normalised weights (detached); None: uniform.
    domain : Domain or None, default=None
        Truncation domain.
    log_q, s, h : torch.Tensor or None, default=None
        Precomputed log q (N, r), score and Hessian diagonal (N, r, d) of ``xk``.

    Returns
    -------
    surrogate : torch.Tensor of shape (N,)
        Differentiable, with the gradient of the loss estimate.
    value : torch.Tensor of shape (N,)
        The loss estimate (detached).

    Examples
    --------
    >>> import torch
    >>> from icml25.missing_score import GaussianModel
    >>> model = GaussianModel(2)                     # N(0, I)
    >>> xk = torch.tensor([[[1.0, 0.0], [1.0, 2.0]]], dtype=torch.float64)  # 2 draws
    >>> obs = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    >>> marginal_terms(model, xk, obs)[1].tolist()  # the score of x_0 does not depend on x_1
    [-1.0]
    """
    domain = domain or _WHOLE
    N, r, d = xk.shape
    if s is None:
        lq, s, h = model.score_and_hess_diag(xk.reshape(N * r, d))
        log_q, s, h = lq.reshape(N, r), s.reshape(N, r, d), h.reshape(N, r, d)
    w = torch.full((N, r), 1.0 / r, dtype=xk.dtype) if weights is None else weights.detach()
    g, dg = domain.weights(xk[:, 0, :], obs)  # observed part only: same for every draw
    # one stacked pass over (s, s^2, d_j s_j): E_w[.] and Cov_w(.detached, log q). A model whose
    # Hessian diagonal does not depend on x (Gaussian) skips the third block: Cov_w is 0 there.
    const_h = getattr(model, "hess_diag_constant", False)
    H = torch.cat([s, s * s] if const_h else [s, s * s, h], dim=-1)
    mean = _weighted(w, H)
    lq_c = log_q - (w * log_q).sum(-1, keepdim=True).detach()
    cov = _weighted(w * lq_c, (H - mean.unsqueeze(1)).detach())
    m, Es2, Cs, Cs2 = mean[:, :d], mean[:, d:2 * d], cov[:, :d], cov[:, d:2 * d]
    if const_h:
        Eh, Ch = h[:, 0, :], torch.zeros_like(m)
    else:
        Eh, Ch = mean[:, 2 * d:], cov[:, 2 * d:]
    val = obs * (g * (-m * m + 2.0 * Es2 + 2.0 * Eh) + 2.0 * dg * m)
    surr = obs * (g * (-2.0 * m.detach() * (m + Cs) + 2.0 * (Es2 + Cs2) + 2.0 * (Eh + Ch))
                  + 2.0 * dg * (m + Cs))
    return surr.sum(-1), val.sum(-1).detach()


def _iw_weights(model, xk, logp, domain):
    N, r, d = xk.shape
    lq, s, h = model.score_and_hess_diag(xk.reshape(N * r, d))
    lq, s, h = lq.reshape(N, r), s.reshape(N, r, d), h.reshape(N, r, d)
    inside = domain.contains(xk.reshape(N * r, d)).reshape(N, r)
    logw = torch.where(inside, lq - logp, torch.full_like(lq, -torch.inf)).detach()
    valid = torch.isfinite(logw).any(-1)  # rows whose draws all left the domain are dropped
    w = torch.softmax(torch.where(valid.unsqueeze(-1), logw, torch.zeros_like(logw)), dim=-1)
    return lq, s, h, w, valid


def iw_loss(model, x0, obs, n_draws: int, scale, mean=None, domain: Domain | None = None,
            generator: torch.Generator | None = None):
    """Marg-IW: r proposal draws, self-normalised detached weights, gradient-correct surrogate.

    Rows with no missing entry reduce exactly to ordinary score matching. Rows whose every draw
    falls outside a truncated domain get zero loss (and should be excluded from the mean: the
    returned value is NaN for them).

    Parameters
    ----------
    model : DensityModel
        The model.
    x0 : torch.Tensor of shape (N, d)
        Zero-filled rows.
    obs : torch.Tensor of shape (N, d)
        0/1 float mask (1 = observed).
    n_draws : int
        Proposal draws r per row.
    scale : torch.Tensor of shape (d,)
        Per-coordinate std of the Gaussian proposal.
    mean : torch.Tensor of shape (d,) or None, default=None
        Mean of the proposal (None: zeros).
    domain : Domain or None, default=None
        Truncation domain.
    generator : torch.Generator or None, default=None
        Random source of the draws.

    Returns
    -------
    surrogate : torch.Tensor of shape (N,)
        Differentiable per-row loss (0 for dropped rows).
    value : torch.Tensor of shape (N,)
        Per-row loss estimate (NaN for dropped rows).

    Examples
    --------
    >>> import torch
    >>> from icml25.missing_score import GaussianModel
    >>> model = GaussianModel(2)                     # N(0, I)
    >>> x0 = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    >>> full = torch.ones(1, 2, dtype=torch.float64)
    >>> iw_loss(model, x0, full, 5, torch.ones(2))[1].tolist()   # complete row: plain SM
    [-3.0]
    """
    domain = domain or _WHOLE
    xk, logp = draw_proposal(x0, obs, n_draws, scale, mean, generator)
    lq, s, h, w, valid = _iw_weights(model, xk, logp, domain)
    surr, val = marginal_terms(model, xk, obs, w, domain, log_q=lq, s=s, h=h)
    nan = torch.full_like(val, torch.nan)
    return torch.where(valid, surr, torch.zeros_like(surr)), torch.where(valid, val, nan)


def em_loss(model, x0, obs, n_draws: int, scale, mean=None, domain: Domain | None = None,
            generator: torch.Generator | None = None):
    """EM / fractional-imputation baseline (Uehara et al. 2020): the IW-weighted average of the
    ordinary score-matching integrand on observed coordinates, weights detached and no
    covariance correction (so the weights' dependence on theta is ignored).

    Parameters
    ----------
    model : DensityModel
        The model.
    x0 : torch.Tensor of shape (N, d)
        Zero-filled rows.
    obs : torch.Tensor of shape (N, d)
        0/1 float mask (1 = observed).
    n_draws : int
        Proposal draws r per row.
    scale : torch.Tensor of shape (d,)
        Per-coordinate std of the Gaussian proposal.
    mean : torch.Tensor of shape (d,) or None, default=None
        Mean of the proposal (None: zeros).
    domain : Domain or None, default=None
        Truncation domain.
    generator : torch.Generator or None, default=None
        Random source of the draws.

    Returns
    -------
    surrogate : torch.Tensor of shape (N,)
        Per-row loss (0 for dropped rows).
    value : torch.Tensor of shape (N,)
        Detached per-row loss (NaN for dropped rows).

    Examples
    --------
    >>> import torch
    >>> from icml25.missing_score import GaussianModel
    >>> model = GaussianModel(2)                     # N(0, I)
    >>> x0 = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    >>> obs = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    >>> g = torch.Generator().manual_seed(0)
    >>> em_loss(model, x0, obs, 8, torch.ones(2), generator=g)[1].tolist()
    [-1.0]
    """
    domain = domain or _WHOLE
    xk, logp = draw_proposal(x0, obs, n_draws, scale, mean, generator)
    lq, s, h, w, valid = _iw_weights(model, xk, logp, domain)
    g, dg = domain.weights(xk[:, 0, :], obs)
    per_draw = (obs.unsqueeze(1) * _sm_integrand(s, h, g.unsqueeze(1), dg.unsqueeze(1))).sum(-1)
    val = (w * per_draw).sum(-1)
    nan = torch.full_like(val, torch.nan)
    return torch.where(valid, val, torch.zeros_like(val)), torch.where(valid, val.detach(), nan)
