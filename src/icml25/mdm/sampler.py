"""A batched masked-diffusion sampler with swappable planners (see ``planners``).

Start from the given tokens with every maskable position masked; for ``steps`` steps run the model
once, pick positions with the planner and fill them with the model's most probable value (or a
sample at ``temperature > 0``). Revealed tokens stay fixed unless ``remask=True``: then every
step ranks the still-masked positions by the certainty of their new prediction together with the
revealed ones by the certainty they had when they were revealed, keeps the schedule's number of
most certain positions, and masks the rest again (confidence-based remasking, as in RDM and
ReMDM's "conf" schedule). A revealed value is never re-predicted in place: the model was trained
to predict masked positions only, so its output at a visible position means nothing.
"""

from __future__ import annotations

import torch
from torch import nn

from icml25.mdm.planners import PLANNERS, certainty, reveal_counts, select_top_k
from icml25.nn.device import device_of


def _predict(model: nn.Module, x: torch.Tensor, mask_id: int, temperature: float,
             generator: torch.Generator | None) -> tuple[torch.Tensor, torch.Tensor]:
    logits = model(x).float()
    logits[..., mask_id] = float("-inf")  # the model never predicts the mask token
    probs = logits.softmax(-1)
    if temperature > 0:
        flat = (logits / temperature).softmax(-1).flatten(0, 1)
        where = generator.device if generator is not None else flat.device
        values = torch.multinomial(flat.to(where), 1, generator=generator)
        values = values.view(x.shape).to(x.device)
    else:
        values = probs.argmax(-1)
    return probs, values


@torch.no_grad()
def sample(
    model: nn.Module,
    tokens: torch.Tensor,
    maskable: torch.Tensor,
    *,
    steps: int = 50,
    planner: str = "top_margin",
    noise: float = 0.0,
    k_mode: str | None = None,
    temperature: float = 0.0,
    remask: bool = False,
    mask_id: int = 0,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Fill the ``maskable`` positions of ``tokens`` (B, L); returns new tokens.

    ``noise``: Gumbel coefficient on the certainty (unused by ``random``). The paper adds
    0.5 x Gumbel to its puzzle runs; on margins, which lie in [0, 1], that much noise reorders
    the reveals almost at random and costs most of the gain (measured in ``docs/mdm.md``),
    so the default is none. ``k_mode``: "expected" or "binomial"
    reveal counts (default binomial for ``random`` = the vanilla sampler, expected otherwise).

    The model runs where its weights are; ``tokens`` go there and the result comes back beside
    the ``tokens`` given. Random draws happen where ``generator`` lives (make it on the model's
    device to keep them there).
    """
    if planner not in PLANNERS:
        raise ValueError(f"unknown planner {planner!r}; choose one of {PLANNERS}")
    if steps < 1:
        raise ValueError("steps must be >= 1")
    if tokens.shape != maskable.shape or tokens.dim() != 2:
        raise ValueError("tokens and maskable must both have shape (batch, length)")
    k_mode = k_mode or ("binomial" if planner == "random" else "expected")
    was_training = model.training
    model.eval()
    home, device = tokens.device, device_of(model)
    tokens, maskable = tokens.to(device), maskable.to(device).bool()
    x = tokens.masked_fill(maskable, mask_id)
    masked = maskable.clone()
    n_target = maskable.sum(1)
    kept_score = torch.full(tokens.shape, float("-inf"), device=device)  # certainty when revealed
    for step in range(steps):
        steps_left = steps - step
        if not remask and not masked.any():
            break
        probs, values = _predict(model, x, mask_id, temperature, generator)
        scores = certainty(probs, planner, generator)
        if remask:
            # masked positions compete with their new certainty, revealed ones with the
            # certainty they were revealed with; the schedule's most certain stay, others remask
            keep = n_target - torch.div(n_target * (steps_left - 1), steps, rounding_mode="floor")
            competing = torch.where(masked, scores, kept_score)
            chosen = select_top_k(competing, maskable, keep, noise, generator)
            new = chosen & masked
            x = torch.where(new, values, x)
            kept_score = torch.where(new, scores, kept_score)
            dropped = maskable & ~chosen
            x = x.masked_fill(dropped, mask_id)
            kept_score = kept_score.masked_fill(dropped, float("-inf"))
            masked = dropped
            continue
        k = reveal_counts(masked.sum(1), steps_left, k_mode, generator)
        chosen = select_top_k(scores, masked, k, noise, generator)
        x = torch.where(chosen, values, x)
        masked &= ~chosen
    if masked.any():  # binomial counts can leave a few: fill them in one last pass
        _, values = _predict(model, x, mask_id, temperature, generator)
        x = torch.where(masked, values, x)
    model.train(was_training)
    return x.to(home)
