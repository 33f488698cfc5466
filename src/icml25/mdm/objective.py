"""The masked-diffusion training objective (absorbing state, linear schedule alpha_t = 1 - t).

Each example draws its own masking rate t ~ U(eps, 1] (U(min_rate, 1] for a curriculum stage
that keeps the rate high); every maskable token is replaced by the
mask token with probability t; the model is scored by cross-entropy on the masked tokens only.
With ``weighting="elbo"`` each example's masked cross-entropy is weighted by 1/t (the
continuous-time ELBO of the linear schedule) and normalised by its number of maskable tokens,
so the loss is an unbiased estimate of the per-token negative ELBO; ``"none"`` is the plain
mean over masked tokens.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

WEIGHTINGS = ("elbo", "none")


def mask_tokens(
    tokens: torch.Tensor,
    maskable: torch.Tensor,
    generator: torch.Generator | None = None,
    *,
    mask_id: int = 0,
    eps: float = 1e-3,
    stratified: bool = True,
    min_one: bool = False,
    min_rate: float = 0.0,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Noise a batch for the masked-diffusion objective: each row draws a rate t in (eps, 1]
    and each of its maskable tokens becomes ``mask_id`` with probability t.

    Parameters
    ----------
    tokens : torch.Tensor
        ``(B, L)`` clean token ids.
    maskable : torch.Tensor
        ``(B, L)`` bool, the positions that may be masked.
    generator : torch.Generator or None, default=None
        Source of the random draws.
    mask_id : int, default=0
        The mask token.
    eps : float, default=1e-3
        The smallest rate.
    stratified : bool, default=True
        Spread the batch's t evenly over (eps, 1] from one random offset (MDLM's
        low-discrepancy sampler: same expectation, lower variance).
    min_one : bool, default=False
        Mask one token in rows that drew none; it suits ``weighting="none"`` but biases the
        ELBO, so it is off.
    min_rate : float, default=0.0
        When > 0, draw t from (min_rate, 1] instead (1.0 masks every maskable token): not the
        ELBO, a curriculum stage in which visible answers cannot stand in for reading the input.

    Returns
    -------
    noisy : torch.Tensor
        ``(B, L)`` tokens with the masked positions set to ``mask_id``.
    masked : torch.Tensor
        ``(B, L)`` bool, the positions masked.
    t : torch.Tensor
        ``(B,)`` each row's masking rate.

    Raises
    ------
    ValueError
        If ``min_rate`` is outside [0, 1] or ``tokens`` and ``maskable`` differ in shape.

    Examples
    --------
    >>> import torch
    >>> from icml25.mdm import mask_tokens
    >>> tokens = torch.tensor([[5, 6, 7, 8]])
    >>> maskable = torch.tensor([[True, True, True, False]])
    >>> noisy, masked, t = mask_tokens(tokens, maskable, mask_id=0, min_rate=1.0)
    >>> noisy, t
    (tensor([[0, 0, 0, 8]]), tensor([1.]))
    >>> noisy, masked, t = mask_tokens(tokens, maskable, torch.Generator().manual_seed(0))
    >>> bool((noisy[masked] == 0).all() and (noisy[~masked] == tokens[~masked]).all())
    True
    """
    if not 0.0 <= min_rate <= 1.0:
        raise ValueError(f"min_rate must be in [0, 1], got {min_rate}")
    if tokens.shape != maskable.shape:
        raise ValueError(
            f"tokens {tuple(tokens.shape)} and maskable {tuple(maskable.shape)} differ")
    b, _ = tokens.shape
    # Draw where the generator lives (a CPU generator gives the same noise on every device),
    # then move the draws next to the tokens once.
    dev = generator.device if generator is not None else tokens.device
    if stratified:
        u0 = torch.rand(1, generator=generator, device=dev)
        unit = (u0 + torch.arange(b, device=dev) / b) % 1.0
        unit = unit[torch.randperm(b, generator=generator, device=dev)]
    else:
        unit = torch.rand(b, generator=generator, device=dev)
    low = max(eps, min_rate)
    t = (low + (1 - low) * unit).to(tokens.device, non_blocking=True)
    u = torch.rand(tokens.shape, generator=generator, device=dev).to(tokens.device,
                                                                      non_blocking=True)
    masked = maskable & (u < t[:, None])
    empty = ~masked.any(1) & maskable.any(1)
    if min_one and empty.any():
        # Mask the maskable position with the smallest uniform: a uniformly random one.
        pick = torch.where(maskable, u, torch.full_like(u, 2.0)).argmin(1)
        masked[empty, pick[empty]] = True
    return torch.where(masked, torch.full_like(tokens, mask_id), tokens), masked, t


def mdm_loss(
    logits: torch.Tensor,
    targets: torch.Tensor,
    masked: torch.Tensor,
    t: torch.Tensor,
    maskable: torch.Tensor | None = None,
    *,
    weighting: str = "elbo",
) -> torch.Tensor:
    """The masked-diffusion loss: cross-entropy on the masked positions only.

    Parameters
    ----------
    logits : torch.Tensor
        ``(B, L, V)`` model outputs.
    targets : torch.Tensor
        ``(B, L)`` clean token ids.
    masked : torch.Tensor
        ``(B, L)`` bool, the positions that were masked.
    t : torch.Tensor
        ``(B,)`` each row's masking rate (used by ``"elbo"``).
    maskable : torch.Tensor or None, default=None
        ``(B, L)`` bool, the positions that could be masked (None: all), for the ``"elbo"``
        normalisation.
    weighting : {"elbo", "none"}, default="elbo"
        ``"elbo"``: each row's masked cross-entropy weighted by 1/t and divided by its number
        of maskable tokens, averaged over rows (an unbiased estimate of the per-token negative
        ELBO of the linear schedule); ``"none"``: the mean over masked tokens.

    Returns
    -------
    torch.Tensor
        The scalar loss.

    Raises
    ------
    ValueError
        For an unknown ``weighting``.

    Examples
    --------
    >>> import torch
    >>> from icml25.mdm import mdm_loss
    >>> logits = torch.zeros(1, 2, 4)        # uniform over 4 tokens: CE = log 4
    >>> targets = torch.tensor([[1, 2]])
    >>> masked = torch.tensor([[True, False]])
    >>> round(mdm_loss(logits, targets, masked, torch.tensor([1.0]), weighting="none").item(), 4)
    1.3863
    >>> round(mdm_loss(logits, targets, masked, torch.tensor([0.5])).item(), 4)  # 2 log 4 / 2
    1.3863
    """
    if weighting not in WEIGHTINGS:
        raise ValueError(f"weighting must be one of {WEIGHTINGS}, got {weighting!r}")
    ce = F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten(), reduction="none")
    ce = ce.view_as(targets) * masked
    if weighting == "none":
        return ce.sum() / masked.sum().clamp(min=1)
    n_maskable = (maskable if maskable is not None else torch.ones_like(masked)).sum(1)
    per_example = ce.sum(1) / (t * n_maskable.clamp(min=1))
    return per_example.mean()


def masked_diffusion_loss(model, tokens: torch.Tensor, maskable: torch.Tensor,
                          generator: torch.Generator | None = None, *, mask_id: int,
                          weighting: str = "elbo",
                          min_rate: float = 0.0) -> tuple[torch.Tensor, dict[str, float]]:
    """One training step's loss for clean ``tokens`` whose ``maskable`` positions are noised:
    mask, predict (never the mask token), score; also the accuracy on the masked positions."""
    noisy, masked, t = mask_tokens(tokens, maskable, generator, mask_id=mask_id,
                                   min_rate=min_rate)
    logits = model(noisy)
    never = torch.arange(logits.shape[-1], device=logits.device) == mask_id
    logits = logits.masked_fill(never, float("-inf"))
    loss = mdm_loss(logits, tokens, masked, t, maskable, weighting=weighting)
    with torch.no_grad():
        hits = (logits.argmax(-1) == tokens) & masked
        acc = hits.sum() / masked.sum().clamp(min=1)
    return loss, {"masked_cell_acc": acc}  # a tensor: the trainer reads it when it logs
