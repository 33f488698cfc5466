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
the masked positions; ``binomial`` draws vanilla's own random count.
"""

from __future__ import annotations

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
    """The scoring function of ``planner``, or a ValueError naming the choices."""
    try:
        return PLANNERS[planner]
    except (KeyError, TypeError):
        raise ValueError(f"unknown planner {planner!r}; choose one of {tuple(PLANNERS)}") from None


def certainty(probs: torch.Tensor, planner: str, generator: torch.Generator | None = None):
    """Score (B, L) from probabilities (B, L, V); larger = reveal sooner."""
    return check_planner(planner)(probs, generator)


def _linear(n_masked: torch.Tensor, steps_left: int, generator) -> torch.Tensor:
    remaining = torch.div(n_masked * (steps_left - 1), steps_left, rounding_mode="floor")
    return n_masked - remaining  # = ceil(n / steps_left): at least one while any is masked


def _binomial(n_masked: torch.Tensor, steps_left: int, generator) -> torch.Tensor:
    where = generator.device if generator is not None else n_masked.device
    p = torch.full(n_masked.shape, 1.0 / steps_left, device=where)
    counts = torch.binomial(n_masked.float().to(where), p, generator=generator)
    return counts.long().to(n_masked.device)


K_SCHEDULES = {"linear": _linear, "binomial": _binomial}


def check_k_schedule(name: str):
    try:
        return K_SCHEDULES[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown K schedule {name!r}; choose one of {tuple(K_SCHEDULES)}") from None


def reveal_counts(n_masked: torch.Tensor, steps_left: int, mode: str = "linear",
                  generator: torch.Generator | None = None) -> torch.Tensor:
    """How many positions each row reveals this step (``mode``: a :data:`K_SCHEDULES` name;
    ``expected`` is an old name of ``linear``)."""
    if steps_left < 1:
        raise ValueError("steps_left must be >= 1")
    return check_k_schedule("linear" if mode == "expected" else mode)(
        n_masked, steps_left, generator)


def gumbel(shape, generator: torch.Generator | None = None,
           like: torch.Tensor | None = None) -> torch.Tensor:
    """Standard Gumbel noise of ``shape`` (beside ``like`` when given)."""
    like = like if like is not None else torch.empty(0)
    u = _rand(shape, generator, like).clamp(1e-10, 1 - 1e-10)
    return -torch.log(-torch.log(u))


def select_top_k(scores: torch.Tensor, eligible: torch.Tensor, k: torch.Tensor,
                 noise: float = 0.0, generator: torch.Generator | None = None) -> torch.Tensor:
    """Boolean (B, L): the ``k[b]`` highest ``scores`` among ``eligible`` positions of row b.

    Ineligible positions get -inf (never +inf: that would quietly turn Top-K into random order).
    """
    if noise:
        scores = scores + noise * gumbel(scores.shape, generator, scores)
    scores = scores.masked_fill(~eligible, float("-inf"))
    order = scores.argsort(dim=1, descending=True, stable=True)
    rank = torch.empty_like(order)
    rank.scatter_(1, order, torch.arange(scores.shape[1], device=scores.device).expand_as(order))
    return (rank < k[:, None]) & eligible
