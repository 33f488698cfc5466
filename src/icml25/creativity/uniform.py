"""Uniform-noise discrete diffusion: SEDD's "uniform" graph (Lou, Meng & Ermon, ICML 2024), the
second diffusion kind of the paper's Fig. 4. Pure torch functions, no I/O.

States are the classes ``0..N-1`` of an alphabet (the caller maps its vocabulary onto them).

- **Forward process.** Every position jumps, at rate ``sigma(t)``, to a class drawn uniformly
  (rate matrix ``Q = 11^T/N - I``), so with ``sigma_bar(t) = int_0^t sigma``::

      p_{t|0}(j | i) = exp(-sigma_bar) [i == j] + (1 - exp(-sigma_bar)) / N

- **Noise schedule.** Geometric (SEDD's default for the uniform graph):
  ``sigma_bar(t) = sigma_min^(1-t) sigma_max^t``, ``sigma(t) = sigma_bar(t) log(sigma_max /
  sigma_min)``; at ``t = 1`` the data are mixed to uniform within ``exp(-sigma_max)``.

- **Score.** The network gives ``log s(x_t)[i, y] ~ log p_t(x_t with y at i) / p_t(x_t)`` for
  every ``y != x_t[i]`` (the entry at ``y = x_t[i]`` is ignored: the ratio is 1).

- **Denoising score entropy** (SEDD eq. 9), per position with ``x = x_t[i]`` and clean ``x0``::

      loss = sigma(t)/N * sum_{y != x} [ s_y - r_y log s_y + r_y (log r_y - 1) ],
      r_y  = p_{t|0}(y | x0) / p_{t|0}(x | x0)

  With ``e = exp(sigma_bar) - 1``: if ``x == x0`` every ``r_y = e / (e + N)``; otherwise
  ``r_{x0} = 1 + N / e`` and ``r_y = 1`` for the other ``y``. The bracket is a Bregman
  divergence, >= 0 and zero only at ``s = r``; its expectation over ``x0`` given ``x_t`` is
  minimised by the true ratio. With ``t ~ U(0, 1)`` the mean is the ELBO bound on the negative
  log-likelihood (per position here).

- **Sampler.** SEDD's analytic ("Tweedie tau-leaping") predictor: from ``t`` to ``s < t`` with
  ``d = sigma_bar(t) - sigma_bar(s)``, every position independently::

      p(x_s = y) ~ [exp(-d Q) s]_y * exp(d Q)[x, y]
      [exp(-d Q) s]_y = e^d s_y + (1 - e^d)/N sum_z s_z,
      exp(d Q)[x, y]  = e^-d [x == y] + (1 - e^-d)/N

  It is exact when positions are independent (the step is Bayes' rule for one token), so its
  only error on a factorised distribution is the score's. Start: uniform noise at ``t = 1``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import torch


@dataclasses.dataclass(frozen=True)
class GeometricNoise:
    """``sigma_bar(t) = sigma_min^(1-t) * sigma_max^t`` for ``t`` in [0, 1]."""

    sigma_min: float = 1e-4
    sigma_max: float = 20.0

    def __post_init__(self) -> None:
        if not 0 < self.sigma_min < self.sigma_max:
            raise ValueError("need 0 < sigma_min < sigma_max")

    def total(self, t: torch.Tensor) -> torch.Tensor:
        """``sigma_bar(t)``, the integrated rate."""
        return self.sigma_min ** (1 - t) * self.sigma_max ** t

    def rate(self, t: torch.Tensor) -> torch.Tensor:
        """``sigma(t) = d sigma_bar / dt``."""
        return self.total(t) * math.log(self.sigma_max / self.sigma_min)


def transition(x0: torch.Tensor, sigma_bar: torch.Tensor, n: int) -> torch.Tensor:
    """``p_{t|0}(. | x0)`` for each position: shape ``x0.shape + (n,)``; ``sigma_bar`` has
    shape ``(B,)`` (one time per sequence)."""
    stay = torch.exp(-sigma_bar).view(-1, *[1] * x0.dim())
    probs = (1 - stay) / n * torch.ones(*x0.shape, n, device=x0.device)
    return probs + stay * torch.nn.functional.one_hot(x0, n)


def perturb(x0: torch.Tensor, noised: torch.Tensor, sigma_bar: torch.Tensor, n: int,
            generator: torch.Generator | None = None) -> torch.Tensor:
    """Draw ``x_t ~ p_{t|0}(. | x0)`` at the ``noised`` positions (the others are kept):
    a position is resampled uniformly with probability ``1 - exp(-sigma_bar)``."""
    move = 1 - torch.exp(-sigma_bar).view(-1, *[1] * (x0.dim() - 1))
    where = generator.device if generator is not None else x0.device
    u = torch.rand(x0.shape, generator=generator, device=where).to(x0.device)
    draw = torch.randint(n, x0.shape, generator=generator, device=where).to(x0.device)
    return torch.where(noised & (u < move), draw, x0)


def _wide(x: torch.Tensor) -> torch.Tensor:
    """At least float32 (autocast may hand us half precision); float64 stays float64."""
    return x.to(torch.promote_types(x.dtype, torch.float32))


def score_entropy(log_score: torch.Tensor, xt: torch.Tensor, x0: torch.Tensor,
                  sigma_bar: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
    """Denoising score entropy per position, ``(B, L)``, for log-scores ``(B, L, N)``,
    noisy ``xt`` and clean ``x0`` ``(B, L)`` and per-sequence ``sigma_bar``, ``sigma`` ``(B,)``.
    Positions that were never noised (``xt == x0`` at ``sigma_bar -> 0``) still count: their
    term goes to zero with the noise."""
    n = log_score.shape[-1]
    own = torch.nn.functional.one_hot(xt, n).bool()
    ls = _wide(log_score).masked_fill(own, 0.0)  # the ratio to itself is 1: log 1 = 0
    pos = ls.exp().masked_fill(own, 0.0).sum(-1)
    sum_log = ls.sum(-1)
    e = torch.expm1(_wide(sigma_bar))[:, None]  # exp(sigma_bar) - 1, (B, 1)
    rho = e / (e + n)  # every ratio when the position did not move
    big = 1 + n / e  # the ratio back to x0 when it moved
    log_x0 = ls.gather(-1, x0[..., None]).squeeze(-1)
    same = xt == x0
    neg = torch.where(same, rho * sum_log, sum_log + (n / e) * log_x0)
    const = torch.where(same, (n - 1) * rho * (torch.log(rho) - 1),
                        big * (torch.log(big) - 1) - (n - 2))
    return _wide(sigma)[:, None] / n * (pos - neg + const)


def analytic_probs(log_score: torch.Tensor, xt: torch.Tensor, delta: torch.Tensor) -> torch.Tensor:
    """The analytic step's distribution of ``x_s`` per position, ``(B, L, N)``, for a step
    of ``delta = sigma_bar(t) - sigma_bar(s)`` (shape ``(B,)`` or a scalar)."""
    n = log_score.shape[-1]
    own = torch.nn.functional.one_hot(xt, n).bool()
    s = _wide(log_score).masked_fill(own, 0.0).exp()
    delta = torch.as_tensor(delta, dtype=s.dtype, device=s.device).reshape(-1, 1, 1)
    mean = s.sum(-1, keepdim=True) / n
    # e^d s + (1 - e^d) mean, written so that a large e^d does not cancel catastrophically
    back = (torch.exp(delta) * (s - mean) + mean).clamp_min(0.0)
    fwd = (1 - torch.exp(-delta)) / n + torch.exp(-delta) * own
    probs = back * fwd
    return probs / probs.sum(-1, keepdim=True).clamp_min(1e-30)


def sample(score_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], x: torch.Tensor,
           noised: torch.Tensor, n: int, *, steps: int, noise: GeometricNoise = GeometricNoise(),
           temperature: float = 1.0, generator: torch.Generator | None = None) -> torch.Tensor:
    """Reverse-sample the ``noised`` positions of ``x`` (the others are clamped: a prompt).

    ``score_fn(x_t, t)`` returns log-scores ``(B, L, N)`` for times ``t`` ``(B,)``. ``steps``
    analytic steps on the uniform grid ``t = 1, 1 - 1/steps, ..., 0``, starting from uniform
    noise. ``temperature`` 1 is the sampler above; other values sharpen (< 1) or flatten (> 1)
    each step's distribution as ``p^(1/T)``, and 0 takes its most likely class (our extension:
    SEDD defines no temperature). Returns class ids ``(B, L)``.
    """
    if steps < 1:
        raise ValueError("steps must be >= 1")
    if temperature < 0:
        raise ValueError("temperature must be >= 0")
    where = generator.device if generator is not None else x.device
    start = torch.randint(n, x.shape, generator=generator, device=where).to(x.device)
    xt = torch.where(noised, start, x)
    b = x.shape[0]
    grid = torch.linspace(1.0, 0.0, steps + 1, device=x.device)
    for k in range(steps):
        t, s = grid[k].expand(b), grid[k + 1].expand(b)
        probs = analytic_probs(score_fn(xt, t), xt, noise.total(t) - noise.total(s))
        if temperature == 0:
            draw = probs.argmax(-1)
        else:
            if temperature != 1:
                probs = probs.clamp_min(1e-30) ** (1 / temperature)
            flat = probs.reshape(-1, n).to(where)
            draw = torch.multinomial(flat, 1, generator=generator).view(x.shape).to(x.device)
        xt = torch.where(noised, draw, xt)
    return xt


def true_log_score(marginals: torch.Tensor, xt: torch.Tensor,
                   sigma_bar: torch.Tensor) -> torch.Tensor:
    """Exact log-scores of a *factorised* distribution (independent positions with the given
    clean ``marginals``, ``(L, N)``) at noisy ``xt`` ``(B, L)``: ``log p_t(y) - log p_t(x)``
    per position. A reference for tests and for checking a sampler against its oracle."""
    n = marginals.shape[-1]
    stay = torch.exp(-sigma_bar).view(-1, 1, 1)
    pt = stay * marginals[None] + (1 - stay) / n  # (B, L, N): p_t at each position
    log_pt = pt.log()
    return log_pt - log_pt.gather(-1, xt[..., None])


class UniformDiffusion:
    """A uniform-noise diffusion objective and sampler for a network that maps token ids
    ``(B, T)`` to logits over a vocabulary. The diffused classes are the vocabulary ids in
    ``alphabet``; position 0 of every sequence is reserved for a time token (``time_ids[k]``
    for ``t`` in bin ``k`` of ``len(time_ids)`` equal bins), which is how the network learns the
    noise level; the logits of the ``alphabet`` columns are its log-scores.
    """

    def __init__(self, alphabet, time_ids, noise: GeometricNoise | None = None) -> None:
        self.alphabet = torch.as_tensor(list(alphabet), dtype=torch.long)
        self.time_ids = torch.as_tensor(list(time_ids), dtype=torch.long)
        if len(self.alphabet) < 2 or len(set(self.alphabet.tolist())) != len(self.alphabet):
            raise ValueError("the alphabet needs at least 2 distinct token ids")
        if len(self.time_ids) < 1 or set(self.time_ids.tolist()) & set(self.alphabet.tolist()):
            raise ValueError("time tokens must be given and disjoint from the alphabet")
        self.noise = noise or GeometricNoise()
        size = int(max(self.alphabet.max(), self.time_ids.max())) + 1
        self.lut = torch.full((size,), -1, dtype=torch.long)  # vocabulary id -> class
        self.lut[self.alphabet] = torch.arange(len(self.alphabet))

    @property
    def n(self) -> int:
        return len(self.alphabet)

    def _classes(self, tokens: torch.Tensor, noised: torch.Tensor) -> torch.Tensor:
        lut = self.lut.to(tokens.device)
        inside = tokens < len(lut)
        classes = torch.where(inside, lut[tokens.clamp_max(len(lut) - 1)], -1)
        if bool((noised & (classes < 0)).any()):
            raise ValueError("a diffused position holds a token outside the alphabet")
        return classes.clamp_min(0)

    def log_scores(self, net, tokens: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """The network's log-scores ``(B, T, N)`` at time ``t`` ``(B,)``."""
        k = (t * len(self.time_ids)).long().clamp(0, len(self.time_ids) - 1)
        tokens = tokens.clone()
        tokens[:, 0] = self.time_ids.to(tokens.device)[k]
        return net(tokens)[..., self.alphabet.to(tokens.device)]

    def corrupt(self, tokens: torch.Tensor, noised: torch.Tensor,
                generator: torch.Generator | None = None):
        """One training draw: ``(noisy token ids, x_t classes, x_0 classes, t)`` with
        ``t ~ U(0, 1)`` per sequence."""
        x0 = self._classes(tokens, noised)
        where = generator.device if generator is not None else tokens.device
        t = torch.rand(tokens.shape[0], generator=generator, device=where).to(tokens.device)
        xt = perturb(x0, noised, self.noise.total(t), self.n, generator)
        noisy = torch.where(noised, self.alphabet.to(tokens.device)[xt], tokens)
        return noisy, xt, x0, t

    def loss_at(self, net, noisy: torch.Tensor, xt: torch.Tensor, x0: torch.Tensor,
                t: torch.Tensor, noised: torch.Tensor) -> torch.Tensor:
        """Score entropy per diffused position, averaged: with ``t ~ U(0, 1)`` an upper bound
        on the negative log-likelihood per position, in nats."""
        per = score_entropy(self.log_scores(net, noisy, t), xt, x0, self.noise.total(t),
                            self.noise.rate(t))
        return (per * noised).sum() / noised.sum().clamp_min(1)

    def loss(self, net, tokens: torch.Tensor, noised: torch.Tensor,
             generator: torch.Generator | None = None) -> torch.Tensor:
        """:meth:`corrupt` then :meth:`loss_at`."""
        return self.loss_at(net, *self.corrupt(tokens, noised, generator), noised)

    @torch.no_grad()
    def sample(self, net, tokens: torch.Tensor, noised: torch.Tensor, *, steps: int,
               temperature: float = 1.0,
               generator: torch.Generator | None = None) -> torch.Tensor:
        """Token ids with the ``noised`` positions sampled and the others (the prompt) kept."""
        alphabet = self.alphabet.to(tokens.device)

        def score_fn(xt: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
            return self.log_scores(net, torch.where(noised, alphabet[xt], tokens), t)

        x = self._classes(tokens, torch.zeros_like(noised))
        classes = sample(score_fn, x, noised, self.n, steps=steps, noise=self.noise,
                         temperature=temperature, generator=generator)
        return torch.where(noised, alphabet[classes], tokens)
