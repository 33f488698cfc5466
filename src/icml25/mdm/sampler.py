"""``sample``: the puzzle form of :func:`icml25.mdm.generate` (fill given positions in place).

The puzzles know which positions to fill as a boolean ``maskable`` beside the tokens; this sets
them to the mask token and lets :func:`~icml25.mdm.decoding.generate` infill them
(``gen_length=0``). Everything else -- planners, K schedule, remasking, Gumbel noise,
temperature -- is the decoder's.
"""

from __future__ import annotations

import torch
from torch import nn

from icml25.mdm.decoding import generate


def sample(
    model: nn.Module,
    tokens: torch.Tensor,
    maskable: torch.Tensor,
    *,
    steps: int = 50,
    planner: str = "top_margin",
    noise: float = 0.0,
    k_schedule: str = "linear",
    temperature: float = 0.0,
    threshold: float | None = None,
    remask=None,
    mask_id: int = 0,
    generator: torch.Generator | None = None,
    return_info: bool = False,
):
    """Fill the ``maskable`` positions of ``tokens`` (B, L); returns new tokens (or a
    :class:`~icml25.mdm.decoding.Generation` with ``return_info``).

    ``noise``: Gumbel coefficient on the certainty. The paper adds 0.5 x Gumbel to its puzzle
    runs; on margins, which lie in [0, 1], that much noise reorders the reveals almost at random
    and costs most of the gain (measured in ``docs/mdm.md``), so the default is none.
    ``remask``: a ReMDM schedule (see :mod:`icml25.mdm.remask`); ``True`` means ``"conf"``.
    """
    if tokens.shape != maskable.shape or tokens.dim() != 2:
        raise ValueError("tokens and maskable must both have shape (batch, length)")
    maskable = maskable.to(tokens.device).bool()
    if bool(((tokens == mask_id) & ~maskable).any()):
        raise ValueError("a position outside maskable holds the mask token")
    if remask is True:
        remask = "conf"
    return generate(model, tokens.masked_fill(maskable, mask_id), mask_id=mask_id,
                    gen_length=0, steps=steps, planner=planner, temperature=temperature,
                    threshold=threshold, remask=remask or None, noise=noise,
                    k_schedule=k_schedule, generator=generator, return_info=return_info)
