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
    """Fill the ``maskable`` positions of ``tokens`` with a masked diffusion model; the other
    positions are kept.

    Parameters
    ----------
    model : torch.nn.Module
        Maps token ids ``(B, L)`` to logits ``(B, L, V)``.
    tokens : torch.Tensor
        ``(B, L)`` token ids.
    maskable : torch.Tensor
        ``(B, L)`` bool, the positions to generate.
    steps : int, default=50
        Forward passes (at most).
    planner : str, default="top_margin"
        Which position to reveal next (a name of ``icml25.mdm.PLANNERS``).
    noise : float, default=0.0
        Gumbel coefficient on the certainty. The paper adds 0.5 x Gumbel to its puzzle runs; on
        margins, which lie in [0, 1], that much noise reorders the reveals almost at random and
        costs most of the gain, so the default is none.
    k_schedule : str, default="linear"
        How many positions each step reveals (a name of ``icml25.mdm.K_SCHEDULES``).
    temperature : float, default=0.0
        0 takes the argmax; above 0 draws at that temperature.
    threshold : float or None, default=None
        Also reveal every position predicted with at least this probability.
    remask : str, object, bool or None, default=None
        A ReMDM schedule (see :mod:`icml25.mdm.remask`); ``True`` means ``"conf"``.
    mask_id : int, default=0
        The mask token.
    generator : torch.Generator or None, default=None
        Source of the random draws.
    return_info : bool, default=False
        Return a :class:`~icml25.mdm.decoding.Generation` instead of the tokens.

    Returns
    -------
    torch.Tensor or Generation
        ``(B, L)`` tokens, or a ``Generation`` with ``return_info``.

    Raises
    ------
    ValueError
        If ``tokens`` and ``maskable`` are not both ``(B, L)``, a position outside
        ``maskable`` holds ``mask_id``, or an option is unknown.

    Examples
    --------
    >>> import torch
    >>> from icml25.mdm import sample
    >>> from icml25.nn import Transformer, TransformerConfig
    >>> _ = torch.manual_seed(0)
    >>> net = Transformer(TransformerConfig(vocab_size=10, seq_len=8, d_model=16, n_layers=1,
    ...                                     n_heads=2, causal=False)).eval()
    >>> tokens = torch.tensor([[1, 2, 3, 4]])
    >>> maskable = torch.tensor([[False, True, True, False]])
    >>> out = sample(net, tokens, maskable, steps=2)
    >>> out.shape, out[0, 0].item(), out[0, 3].item()
    (torch.Size([1, 4]), 1, 4)
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
