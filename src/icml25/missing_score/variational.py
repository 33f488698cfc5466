"""Marg-Var's variational family: p'_phi(x_miss | x_obs) = N(mu_phi(x0), diag(sigma^2)).

mu_phi is one d -> d MLP on the zero-filled row x0 (only its missing outputs are used, as in
the paper); sigma is a learned constant per coordinate (input-dependent sigma made training
unstable in the paper) with a lower bound.
"""

from __future__ import annotations

import contextlib

import torch
from torch import nn

__all__ = ["VariationalImputer"]


class VariationalImputer(nn.Module):
    """Gaussian variational conditional with an MLP mean on zero-filled input.

    Parameters
    ----------
    dim : int
        Number of variables d.
    hidden : tuple of int, default=(64, 64)
        Hidden widths of the d -> d mean network (SiLU activations, float64).
    std_init : float, default=1.0
        Initial value of ``exp(log_std)``.
    std_lb : float, default=0.05
        Lower bound added to the standard deviation.

    Attributes
    ----------
    net : torch.nn.Sequential
        The mean network.
    log_std : torch.nn.Parameter of shape (d,)
        Log of the learned part of the standard deviation.

    Examples
    --------
    >>> import torch
    >>> imp = VariationalImputer(2, hidden=(8,))
    >>> x0 = torch.tensor([[1.5, 0.0]], dtype=torch.float64)
    >>> obs = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    >>> xk, eps = imp.rsample(x0, obs, 3, torch.Generator().manual_seed(0))
    >>> xk.shape, xk[0, :, 0].tolist(), imp.std().tolist()
    (torch.Size([1, 3, 2]), [1.5, 1.5, 1.5], [1.05, 1.05])
    """

    def __init__(self, dim: int, hidden=(64, 64), std_init: float = 1.0, std_lb: float = 0.05):
        super().__init__()
        layers, width = [], dim
        for h in hidden:
            layers += [nn.Linear(width, int(h)), nn.SiLU()]
            width = int(h)
        layers.append(nn.Linear(width, dim))
        self.net = nn.Sequential(*layers).double()
        self.std_lb = float(std_lb)
        self.log_std = nn.Parameter(torch.full((dim,), float(torch.log(torch.tensor(std_init))),
                                               dtype=torch.float64))

    def std(self) -> torch.Tensor:
        return self.std_lb + torch.exp(self.log_std)

    def rsample(self, x0, obs, r: int, generator=None):
        """Reparameterised draws (N, r, d) with observed entries kept; also returns eps."""
        mu = self.net(x0 * obs)
        eps = torch.randn((x0.shape[0], r, x0.shape[1]), generator=generator).to(x0.dtype)
        miss = (1.0 - obs).unsqueeze(1)
        xk = (x0 * obs).unsqueeze(1) + miss * (mu.unsqueeze(1) + self.std() * eps)
        return xk, eps

    def inner_loss(self, model, x0, obs, kind: str = "fisher", r: int = 1, generator=None):
        """phi's objective on rows with a missing entry, the model held fixed.

        ``fisher``: || grad_{x_miss} (log p'_phi - log q_theta) ||^2 (pathwise);
        ``kl``: E[log p'_phi - log q_theta] (reverse KL up to a constant)."""
        rows = (obs < 1).any(-1)
        if not rows.any():
            return None
        x0, obs = x0[rows], obs[rows]
        xk, eps = self.rsample(x0, obs, r, generator)
        miss = (1.0 - obs).unsqueeze(1)
        N, _, d = xk.shape
        with _frozen(model):
            if kind == "kl":
                lq = model.log_q(xk.reshape(N * r, d)).reshape(N, r)
                ent = (miss * torch.log(self.std())).sum(-1)
                return (-ent - lq).mean()
            s = model.score(xk.reshape(N * r, d)).reshape(N, r, d)
        resid = miss * (-eps / self.std() - s)
        return (resid * resid).sum(-1).mean()


@contextlib.contextmanager
def _frozen(module: nn.Module):
    """Turn off parameter gradients while phi is updated (and restore them)."""
    flags = [(p, p.requires_grad) for p in module.parameters()]
    for p, _ in flags:
        p.requires_grad_(False)
    try:
        yield
    finally:
        for p, f in flags:
            p.requires_grad_(f)
