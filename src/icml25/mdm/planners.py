"""Planners and reveal-count (K) schedules: which masked positions a decoder reveals next, and
how many.

A planner is one small function in :data:`PLANNERS` (name -> function of the model's
probabilities ``(B, L, V)`` returning a certainty score ``(B, L)``; larger = reveal sooner). The
decoder reveals the K highest-scoring masked positions, optionally after adding
``noise * Gumbel`` to the scores. Adding a planner touches this file only.

- ``random``     vanilla MDM: a uniform score, i.e. positions in random order
- ``top_prob``   largest max-probability (Zheng et al. 2023; LLaDA's "low confidence remasking")
- ``top_margin`` largest gap between the two most probable values (Kim et al. 2025)
- ``entropy``    lowest entropy (Dream's ``entropy``)

A K schedule (:data:`K_SCHEDULES`) is an explicit choice of the caller, never derived from the
planner: ``linear`` reveals the vanilla sampler's expected count, rounded so the counts sum to
the masked positions; ``binomial`` draws vanilla's own random count; ``dream`` is Dream's
``floor(n (1 - s/t))`` on its ``linspace(1, eps, steps + 1)`` times.

Planner scores with Gumbel noise, ``score + noise * G``, choose the top K as a draw without
replacement from ``softmax(score / noise)`` would (the Gumbel-top-k trick); that is how Dream's
``alg_temp`` maps onto ``noise``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch

Scorer = Callable[[torch.Tensor, "torch.Generator | None"], torch.Tensor]


def _rand(shape, generator: torch.Generator | None, like: torch.Tensor) -> torch.Tensor:
    """Uniforms drawn where ``generator`` lives (else beside ``like``), placed beside ``like``."""
    where = generator.device if generator is not None else like.device
    return torch.rand(shape, generator=generator, device=where).to(like.device)


def _random(probs: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    return _rand(probs.shape[:-1], generator, probs)


def _top_prob(probs: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    return probs.max(-1).values


def _top_margin(probs: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    top2 = probs.topk(2, dim=-1).values
    return top2[..., 0] - top2[..., 1]


def _entropy(probs: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    return (probs * probs.clamp_min(1e-12).log()).sum(-1)  # negative entropy


PLANNERS: dict[str, Scorer] = {
    "random": _random,
    "top_prob": _top_prob,
    "top_margin": _top_margin,
    "entropy": _entropy,
}


def check_planner(planner: str) -> Scorer:
    """The scoring function of ``planner``, or a ValueError naming the choices.

    Examples
    --------
    >>> probs = torch.tensor([[[0.5, 0.5], [0.9, 0.1]]])
    >>> check_planner("top_margin")(probs, None)
    tensor([[0.0000, 0.8000]])
    """
    try:
        return PLANNERS[planner]
    except (KeyError, TypeError):
        raise ValueError(f"unknown planner {planner!r}; choose one of {tuple(PLANNERS)}") from None


KSchedule = Callable[[torch.Tensor, int, int, "torch.Generator | None"], torch.Tensor]


def _linear(n_masked: torch.Tensor, step: int, steps: int, generator) -> torch.Tensor:
    """``ceil(n / steps_left)``: the vanilla sampler's expected count under the linear schedule
    (the paper's App. D.1.2, K = n (alpha_s - alpha_t) / (1 - alpha_t) = n / steps_left), rounded
    so the counts sum to ``n``; at least one while any is masked. Over a block it equals LLaDA's
    ``get_num_transfer_tokens`` (the remainder spread over the first steps)."""
    steps_left = steps - step
    remaining = torch.div(n_masked * (steps_left - 1), steps_left, rounding_mode="floor")
    return n_masked - remaining


def _binomial(n_masked: torch.Tensor, step: int, steps: int, generator) -> torch.Tensor:
    """``K ~ Binomial(n, 1 / steps_left)``: the vanilla sampler's own random count."""
    where = generator.device if generator is not None else n_masked.device
    p = torch.full(n_masked.shape, 1.0 / (steps - step), device=where)
    counts = torch.binomial(n_masked.float().to(where), p, generator=generator)
    return counts.long().to(n_masked.device)


DREAM_EPS = 1e-3


def _dream(n_masked: torch.Tensor, step: int, steps: int, generator,
           eps: float = DREAM_EPS) -> torch.Tensor:
    """Dream's count: times ``t_i = linspace(1, eps, steps + 1)``, ``K = floor(n (1 - t_{i+1} /
    t_i))`` (float32, as Dream computes it), everything left at the last step; may be 0."""
    if step == steps - 1:
        return n_masked.clone()
    t = torch.linspace(1, eps, steps + 1)
    ratio = (1 - t[step + 1] / t[step]).to(n_masked.device)
    return (n_masked.float() * ratio).long()


K_SCHEDULES: dict[str, KSchedule] = {"linear": _linear, "binomial": _binomial, "dream": _dream}


def check_k_schedule(name: str) -> KSchedule:
    """The K schedule ``name`` of :data:`K_SCHEDULES`: a function ``(n_masked, step, steps,
    generator)`` giving how many of the ``n_masked`` positions step ``step`` (0-based) of
    ``steps`` reveals; a ValueError names the choices.

    Examples
    --------
    >>> k = check_k_schedule("linear")
    >>> int(k(torch.tensor([32]), 0, 5, None)[0])  # 32 masks in 5 steps: 7, 7, 6, 6, 6
    7
    """
    if isinstance(name, str) and name.startswith("dream:"):  # Dream's count with another eps
        try:
            eps = float(name.split(":", 1)[1])
        except ValueError:
            eps = -1.0
        if not 0.0 < eps < 1.0:
            raise ValueError(f"K schedule {name!r}: eps must be in (0, 1)")
        return functools.partial(_dream, eps=eps)
    try:
        return K_SCHEDULES[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown K schedule {name!r}; choose one of {tuple(K_SCHEDULES)} "
                         "(or 'dream:EPS')") from None


def gumbel(shape, generator: torch.Generator | None = None,
           like: torch.Tensor | None = None) -> torch.Tensor:
    """Standard Gumbel noise of ``shape`` (beside ``like`` when given)."""
    like = like if like is not None else torch.empty(0)
    u = _rand(shape, generator, like).clamp(1e-10, 1 - 1e-10)
    return -torch.log(-torch.log(u))


def select_top_k(scores: torch.Tensor, eligible: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Boolean (B, L): the ``k[b]`` highest ``scores`` among ``eligible`` positions of row b
    (ties: the leftmost first).

    Ineligible positions get -inf (never +inf: that would quietly turn Top-K into random order).

    Parameters
    ----------
    scores : torch.Tensor
        ``(B, L)`` planner scores (higher is revealed first).
    eligible : torch.Tensor
        ``(B, L)`` bool, the positions that may be chosen.
    k : torch.Tensor
        ``(B,)`` int, how many to choose in each row (at most its eligible count).

    Returns
    -------
    torch.Tensor
        ``(B, L)`` bool, the chosen positions.

    Examples
    --------
    >>> select_top_k(torch.tensor([[0.1, 0.9, 0.5]]), torch.tensor([[True, False, True]]),
    ...              torch.tensor([1]))
    tensor([[False, False,  True]])
    """
    scores = scores.masked_fill(~eligible, float("-inf"))
    order = scores.argsort(dim=1, descending=True, stable=True)
    rank = torch.empty_like(order)
    rank.scatter_(1, order, torch.arange(scores.shape[1], device=scores.device).expand_as(order))
    return (rank < k[:, None]) & eligible
