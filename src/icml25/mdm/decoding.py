"""One decoder for any masked-diffusion denoiser: :func:`generate`.

The model is anything that maps token ids ``(B, L)`` to logits ``(B, L, V)``: an
``icml25.nn.Transformer``, or a Hugging Face masked LM (``AutoModelForMaskedLM``: BERT,
RoBERTa, ModernBERT, ...; LLaDA/Dream-style models loaded with ``trust_remote_code``), whose
output is recognised by its ``.logits``. A model whose ``forward`` takes ``attention_mask`` is
given one (zero on padding).

The canvas of a row is its prompt followed by ``gen_length`` mask tokens. Every ``mask_id`` on
the canvas is generated, so masks inside the prompt are infilled (``gen_length=0`` is pure
infilling); every other token is returned unchanged. Each step runs the model once, scores the
masked positions with the planner (:data:`~icml25.mdm.planners.PLANNERS`, plus ``noise`` x
Gumbel), and reveals the K best of them with the most probable token (or a sample at
``temperature > 0``); K follows ``k_schedule``. Options:

- ``block_length``: LLaDA's semi-autoregressive blocks. The generated span is cut into blocks of
  this many tokens, decoded left to right with ``steps`` split evenly over them; only the current
  block's positions may be revealed (masks inside the prompt belong to the first block).
- ``threshold``: Fast-dLLM's parallel decoding. Each step also reveals every masked position of
  the block whose predicted token has probability >= ``threshold`` -- at least the schedule's K
  (so at least one) per step, hence ``steps`` is an upper bound on the forward passes.
- ``remask``: a ReMDM schedule (``"cap"``, ``"rescale"``, ``"conf"``, ``"name:eta"`` or an object
  from :mod:`icml25.mdm.remask`). Paced by default: no pass reveals more new tokens than the K
  schedule's busiest pass, and spare passes (more steps than masks) hold the masked count.

Example (a randomly initialised BERT; any ``AutoModelForMaskedLM`` works the same)::

    from transformers import BertConfig, BertForMaskedLM
    from icml25.mdm import generate
    bert = BertForMaskedLM(BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2,
                                      num_attention_heads=2, intermediate_size=64))
    ids = generate(bert, [[2, 7, 9], [2, 5]], mask_id=4, pad_id=0, gen_length=6, steps=3)
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Sequence

import torch
from torch import nn

from icml25.mdm.planners import check_k_schedule, check_planner, gumbel, select_top_k
from icml25.mdm.remask import check_remask

PADDING_SIDES = ("left", "right")


@dataclasses.dataclass
class Generation:
    """What :func:`generate` returns with ``return_info=True``."""

    ids: torch.Tensor | list[list[int]]
    steps_used: torch.Tensor  # (B,) forward passes in which the row still had masked positions
    forward_passes: int  # forward passes of the whole batch


def _takes_attention_mask(model: nn.Module) -> bool:
    try:
        return "attention_mask" in inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return False


def _logits(model: nn.Module, x: torch.Tensor, attention: torch.Tensor | None) -> torch.Tensor:
    out = model(x, attention_mask=attention) if attention is not None else model(x)
    if hasattr(out, "logits"):  # a transformers ModelOutput
        out = out.logits
    elif isinstance(out, (tuple, list)):
        out = out[0]
    if not isinstance(out, torch.Tensor) or out.shape[:2] != x.shape:
        raise ValueError(f"the model must map ids {tuple(x.shape)} to logits (B, L, V); got "
                         f"{getattr(out, 'shape', type(out))}")
    return out


def _device(model: nn.Module) -> torch.device:
    return next((p.device for p in model.parameters()), torch.device("cpu"))


def _canvas(prompt_ids, gen_length: int, mask_id: int, pad_id: int | None, padding_side: str):
    """``(x, real, gen_start, as_list)``: the padded canvas, its non-pad positions, the column
    where each row's generated span starts, and whether the prompt came as a list of rows."""
    if isinstance(prompt_ids, torch.Tensor):
        if prompt_ids.dim() == 1:
            prompt_ids = prompt_ids[None]
        if prompt_ids.dim() != 2:
            raise ValueError(f"prompt_ids must be (batch, length); got {tuple(prompt_ids.shape)}")
        if prompt_ids.dtype in (torch.bool,) or prompt_ids.is_floating_point():
            raise ValueError("prompt_ids must be integer token ids")
        b, p = prompt_ids.shape
        x = torch.cat([prompt_ids.long(),
                       torch.full((b, gen_length), mask_id, dtype=torch.long,
                                  device=prompt_ids.device)], 1)
        real = torch.ones_like(x, dtype=torch.bool)
        return x, real, torch.full((b,), p, dtype=torch.long, device=x.device), False
    rows = [list(map(int, r)) for r in prompt_ids]
    if not rows:
        raise ValueError("prompt_ids is empty")
    if padding_side not in PADDING_SIDES:
        raise ValueError(f"padding_side must be one of {PADDING_SIDES}, got {padding_side!r}")
    width = max(len(r) for r in rows) + gen_length
    if any(len(r) + gen_length != width for r in rows) and pad_id is None:
        raise ValueError("prompts of different lengths need a pad_id")
    if pad_id is not None and pad_id == mask_id:
        raise ValueError("pad_id must differ from mask_id")
    x = torch.full((len(rows), width), pad_id if pad_id is not None else mask_id,
                   dtype=torch.long)
    real = torch.zeros_like(x, dtype=torch.bool)
    start = torch.zeros(len(rows), dtype=torch.long)
    for i, r in enumerate(rows):
        row = r + [mask_id] * gen_length
        lo = width - len(row) if padding_side == "left" else 0
        x[i, lo:lo + len(row)] = torch.tensor(row, dtype=torch.long)
        real[i, lo:lo + len(row)] = True
        start[i] = lo + len(r)
    return x, real, start, True


@torch.no_grad()
def generate(
    model: nn.Module,
    prompt_ids: torch.Tensor | Sequence[Sequence[int]],
    *,
    mask_id: int,
    gen_length: int,
    steps: int,
    block_length: int | None = None,
    planner: str = "top_margin",
    temperature: float = 0.0,
    threshold: float | None = None,
    remask=None,
    noise: float = 0.0,
    k_schedule: str = "linear",
    pad_id: int | None = None,
    padding_side: str = "left",
    generator: torch.Generator | None = None,
    return_info: bool = False,
):
    """Fill every mask of ``prompt_ids`` plus ``gen_length`` new positions; returns the ids.

    ``prompt_ids``: a ``(B, P)`` integer tensor (rows of equal length), or a list of rows of any
    lengths, padded with ``pad_id`` on ``padding_side`` (an attention mask hides the padding
    from models that take one). Returns a ``(B, P + gen_length)`` tensor beside the tensor
    given, or for a list, a list of rows (prompt and generation, no padding). With
    ``return_info`` a :class:`Generation` also carries the steps each row used.

    ``planner`` names a :data:`~icml25.mdm.planners.PLANNERS` entry, ``k_schedule`` a
    :data:`~icml25.mdm.planners.K_SCHEDULES` one; ``noise`` is the Gumbel coefficient on the
    planner's scores; ``generator`` makes the random draws reproducible (they happen where it
    lives). The model never predicts ``mask_id``. The model runs where its weights are and is
    left in the mode (train/eval) it came in.
    """
    score_fn = check_planner(planner)
    k_fn = check_k_schedule(k_schedule)
    schedule = check_remask(remask)
    if not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive integer, got {steps!r}")
    if not isinstance(gen_length, int) or gen_length < 0:
        raise ValueError(f"gen_length must be a non-negative integer, got {gen_length!r}")
    if temperature < 0 or noise < 0:
        raise ValueError("temperature and noise must be >= 0")
    if threshold is not None and not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be in [0, 1], got {threshold}")
    n_blocks = 1
    if block_length is not None:
        if block_length < 1:
            raise ValueError(f"block_length must be >= 1, got {block_length}")
        n_blocks = max(1, -(-gen_length // block_length))
    if steps < n_blocks:
        raise ValueError(f"steps ({steps}) must be at least the number of blocks ({n_blocks})")

    x, real, gen_start, as_list = _canvas(prompt_ids, gen_length, mask_id, pad_id, padding_side)
    home, device = x.device, _device(model)
    x, real, gen_start = x.to(device), real.to(device), gen_start.to(device)
    target = (x == mask_id) & real
    if block_length is not None:
        offset = torch.arange(x.shape[1], device=device)[None] - gen_start[:, None]
        block = (offset.clamp_min(0) // block_length).masked_fill(~target, -1)
    else:
        block = torch.where(target, 0, -1)
    attention = real.long() if _takes_attention_mask(model) else None
    if attention is not None and pad_id is not None:
        x = x.masked_fill(~real, pad_id)

    was_training = model.training
    model.eval()
    masked = target.clone()
    confidence = torch.zeros(x.shape, device=device)  # probability when revealed (for remask)
    steps_used = torch.zeros(x.shape[0], dtype=torch.long, device=device)
    passes = 0
    per_block = [steps // n_blocks + (b < steps % n_blocks) for b in range(n_blocks)]

    def predict():
        nonlocal passes
        passes += 1
        logits = _logits(model, x, attention).float()
        if not logits.is_contiguous():  # an expanded view: writing into it would alias
            logits = logits.contiguous()
        logits[..., mask_id] = float("-inf")  # never predict the mask token
        probs = logits.softmax(-1)
        if temperature > 0:
            flat = (logits / temperature).softmax(-1).flatten(0, 1)
            where = generator.device if generator is not None else flat.device
            values = torch.multinomial(flat.to(where), 1, generator=generator)
            values = values.view(x.shape).to(device)
        else:
            values = probs.argmax(-1)
        return probs, values

    try:
        for b, block_steps in enumerate(per_block):
            in_block = block == b
            for step in range(block_steps):
                eligible = masked & in_block
                active = eligible.any(1)
                if not bool(active.any()):
                    break
                steps_used += active
                probs, values = predict()
                scores = score_fn(probs, generator)
                if noise:
                    scores = scores + noise * gumbel(scores.shape, generator, scores)
                n_masked = eligible.sum(1)
                k = k_fn(n_masked, block_steps - step, generator).clamp(max=n_masked)
                if step == 0:  # the block's pace: its average reveals per pass, rounded up
                    pace = -(-n_masked // block_steps)
                conf = None
                if threshold is not None or schedule is not None:
                    conf = probs.gather(-1, values[..., None]).squeeze(-1)
                above = (conf >= threshold) & eligible if threshold is not None else None
                if above is not None:
                    k = torch.maximum(k, above.sum(1))
                again = None
                if schedule is not None and schedule.active(step, block_steps):
                    revealed = in_block & target & ~masked
                    k, r = schedule.plan(k, n_masked, revealed.sum(1), block_steps - step,
                                         pace, generator)
                    if bool(r.any()):
                        again = schedule.pick(revealed, confidence, r, generator)
                        k = k + r
                chosen = select_top_k(scores, eligible, k)
                if above is not None:  # ties at the threshold: every position above is in
                    chosen |= above
                x = torch.where(chosen, values, x)
                masked &= ~chosen
                if conf is not None:
                    confidence = torch.where(chosen, conf, confidence)
                if again is not None:
                    x = x.masked_fill(again, mask_id)
                    masked |= again
        if bool(masked.any()):  # a binomial schedule can leave a few: fill them in one pass
            steps_used += masked.any(1)
            _, values = predict()
            x = torch.where(masked, values, x)
    finally:
        model.train(was_training)
    x = x.to(home)
    ids = [row[keep].tolist() for row, keep in zip(x, real.to(home), strict=True)] if as_list else x
    if return_info:
        return Generation(ids, steps_used.to(home), passes)
    return ids
