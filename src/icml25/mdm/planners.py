"""Planners: which still-masked positions a masked-diffusion sampler reveals next.

A planner turns the model's per-position distribution into a certainty score; the sampler reveals
the K highest-scoring masked positions (optionally after adding ``noise * Gumbel``). K follows the
vanilla sampler's expected count, so every planner spends the same number of steps.

- ``random``     vanilla MDM: positions in random order (each masked one revealed w.p. 1/steps_left)
- ``top_prob``   largest max-probability (Zheng et al. 2023; LLaDA's "low confidence remasking")
- ``top_margin`` largest gap between the two most probable values (Kim et al. 2025)
- ``entropy``    lowest entropy
"""

from __future__ import annotations

import torch

PLANNERS = ("random", "top_prob", "top_margin", "entropy")


def _rand(shape, generator: torch.Generator | None, like: torch.Tensor) -> torch.Tensor:
    """Uniforms drawn where ``generator`` lives (else beside ``like``), placed beside ``like``."""
    where = generator.device if generator is not None else like.device
    return torch.rand(shape, generator=generator, device=where).to(like.device)


def certainty(probs: torch.Tensor, planner: str, generator: torch.Generator | None = None):
    """Score (B, L) from probabilities (B, L, V); larger = reveal sooner."""
    if planner == "top_prob":
        return probs.max(-1).values
    if planner == "top_margin":
        top2 = probs.topk(2, dim=-1).values
        return top2[..., 0] - top2[..., 1]
    if planner == "entropy":
        return (probs * probs.clamp_min(1e-12).log()).sum(-1)
    if planner == "random":
        return _rand(probs.shape[:-1], generator, probs)
    raise ValueError(f"unknown planner {planner!r}; choose one of {PLANNERS}")


def reveal_counts(n_masked: torch.Tensor, steps_left: int, mode: str = "expected",
                  generator: torch.Generator | None = None) -> torch.Tensor:
    """How many positions each row reveals this step.

    ``expected``: the vanilla sampler's expected count, rounded so the remaining masked count
    follows the linear schedule exactly and the counts over all steps sum to the blanks.
    ``binomial``: Binomial(n_masked, 1/steps_left), vanilla's own random count.
    """
    if steps_left < 1:
        raise ValueError("steps_left must be >= 1")
    if mode == "expected":
        remaining = torch.div(n_masked * (steps_left - 1), steps_left, rounding_mode="floor")
        return n_masked - remaining
    if mode == "binomial":
        where = generator.device if generator is not None else n_masked.device
        p = torch.full(n_masked.shape, 1.0 / steps_left, device=where)
        counts = torch.binomial(n_masked.float().to(where), p, generator=generator)
        return counts.long().to(n_masked.device)
    raise ValueError(f"mode must be 'expected' or 'binomial', got {mode!r}")


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
