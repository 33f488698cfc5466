"""Drop-in adapters with LLaDA's and Dream's argument names and defaults, mapped onto
:func:`icml25.mdm.generate`.

- :func:`llada_generate` takes the arguments of ``generate`` in ML-GSAI/LLaDA's ``generate.py``;
  ``remasking="low_confidence"`` is the ``top_prob`` planner, ``"random"`` the ``random`` one;
  LLaDA's per-block counts (``get_num_transfer_tokens``) are the ``linear`` K schedule.
- :func:`dream_generate` takes the arguments of Dream's ``diffusion_generate``; ``alg`` maps to
  a planner (``origin`` -> ``random`` with the ``binomial`` count, ``maskgit_plus`` -> ``top_prob``,
  ``topk_margin`` -> ``top_margin``, ``entropy`` -> ``entropy``, all with Dream's own count, the
  ``dream`` K schedule), ``alg_temp`` to Gumbel ``noise`` on the planner's scores (a draw without
  replacement from ``softmax(confidence / alg_temp)`` is the Gumbel-top-k of the confidence), and
  Dream's shifted logits (position i reads the output at i - 1) are applied by a wrapper.

Both also pass any other :func:`~icml25.mdm.generate` option through (``cache``, ``threshold``,
``eos_id``, ...). Where the libraries and ``generate`` differ: at ``temperature > 0`` the planner
scores the model's own probabilities, where LLaDA scores the sampled token's probability and
Dream the filtered, tempered distribution; Gumbel draws and padding are ``generate``'s.
"""

from __future__ import annotations

import dataclasses
import inspect

import torch
from torch import nn

from icml25.mdm.decoding import generate
from icml25.mdm.planners import DREAM_EPS

LLADA_MASK_ID = 126336
LLADA_EOS_ID = 126081
LLADA_REMASKING = {"low_confidence": "top_prob", "random": "random"}
DREAM_ALGS = {"origin": "random", "maskgit_plus": "top_prob", "topk_margin": "top_margin",
              "entropy": "entropy"}


def _rows_and_pad(prompt: torch.Tensor, attention_mask: torch.Tensor | None):
    """``(prompt, pad_id)``: the tensor itself when nothing is padded, else its rows without
    the padding and the pad token found in it (the libraries pad on the left)."""
    if prompt.dim() == 1:
        prompt = prompt[None]
    if attention_mask is None or bool(attention_mask.bool().all()):
        return prompt, None
    if attention_mask.shape != prompt.shape:
        raise ValueError(f"attention_mask {tuple(attention_mask.shape)} must match the prompt "
                         f"{tuple(prompt.shape)}")
    keep = attention_mask.bool()
    pads = prompt[~keep].unique()
    if len(pads) != 1:
        raise ValueError("the padded positions must hold one pad token")
    return [row[k].tolist() for row, k in zip(prompt, keep, strict=True)], int(pads[0])


def _as_tensor(ids, width: int, pad_id: int, like: torch.Tensor) -> torch.Tensor:
    """Left-pad a list of rows back into a ``(B, width)`` tensor."""
    if isinstance(ids, torch.Tensor):
        return ids
    out = torch.full((len(ids), width), pad_id, dtype=torch.long, device=like.device)
    for i, row in enumerate(ids):
        out[i, width - len(row):] = torch.tensor(row, dtype=torch.long)
    return out


def llada_generate(model: nn.Module, prompt: torch.Tensor, attention_mask=None, steps=128,
                   gen_length=128, block_length=128, temperature=0.0, cfg_scale=0.0,
                   remasking="low_confidence", mask_id=LLADA_MASK_ID, logits_eos_inf=False,
                   confidence_eos_eot_inf=False, **options) -> torch.Tensor:
    """LLaDA's ``generate(model, prompt, ...)``, names and defaults included, on
    :func:`~icml25.mdm.generate`.

    Parameters
    ----------
    model : torch.nn.Module
        The mask predictor (ids to logits, or an output with ``.logits``).
    prompt : torch.Tensor
        ``(B, P)`` prompt ids, left-padded when ``attention_mask`` has zeros.
    attention_mask : torch.Tensor or None, default=None
        ``(B, P)``: 0 on padding.
    steps : int, default=128
        Sampling steps, a multiple of the number of blocks.
    gen_length : int, default=128
        Generated tokens, a multiple of ``block_length``.
    block_length : int, default=128
        Semi-autoregressive block length.
    temperature : float, default=0.0
    cfg_scale : float, default=0.0
        Unsupervised classifier-free guidance.
    remasking : {"low_confidence", "random"}, default="low_confidence"
    mask_id : int, default=126336
    logits_eos_inf : bool, default=False
        Never predict LLaDA's EOS (id 126081).
    confidence_eos_eot_inf : bool, default=False
        Not supported (raises).
    **options
        Any other :func:`~icml25.mdm.generate` option (``cache``, ``threshold``, ``eos_id``).

    Returns
    -------
    torch.Tensor
        ``(B, P + gen_length)``.

    Raises
    ------
    ValueError
        Where LLaDA asserts (lengths not multiples), for an unknown ``remasking``, or for
        ``confidence_eos_eot_inf``.

    Examples
    --------
    >>> from icml25.nn import Transformer, TransformerConfig
    >>> net = Transformer(TransformerConfig(vocab_size=12, seq_len=16, d_model=16, n_layers=1,
    ...                                     n_heads=2))
    >>> llada_generate(net, torch.tensor([[3, 4, 5, 6]]), steps=4, gen_length=8,
    ...                block_length=4, mask_id=0).shape
    torch.Size([1, 12])
    """
    if remasking not in LLADA_REMASKING:
        raise ValueError(f"remasking must be one of {tuple(LLADA_REMASKING)}, got {remasking!r}")
    if block_length < 1 or gen_length % block_length:
        raise ValueError(f"gen_length ({gen_length}) must be a multiple of block_length "
                         f"({block_length})")
    n_blocks = gen_length // block_length
    if n_blocks and steps % n_blocks:
        raise ValueError(f"steps ({steps}) must be a multiple of the number of blocks "
                         f"({n_blocks})")
    if confidence_eos_eot_inf:
        raise ValueError("confidence_eos_eot_inf is not supported; pass eos_id to stop at EOS")
    if logits_eos_inf:
        if "on_step" in options:
            raise ValueError("logits_eos_inf and on_step cannot be combined")

        def never_eos(step, logits, ids):
            logits[..., LLADA_EOS_ID] = float("-inf")
            return logits

        options["on_step"] = never_eos
    ids, pad_id = _rows_and_pad(prompt, attention_mask)
    out = generate(model, ids, mask_id=mask_id, gen_length=gen_length, steps=steps,
                   block_length=block_length, planner=LLADA_REMASKING[remasking],
                   temperature=temperature, cfg_scale=cfg_scale, pad_id=pad_id,
                   padding_side="left", k_schedule="linear", **options)
    if isinstance(out, torch.Tensor) or isinstance(out, list):
        return _as_tensor(out, prompt.shape[-1] + gen_length, pad_id, prompt)
    out.ids = _as_tensor(out.ids, prompt.shape[-1] + gen_length, pad_id, prompt)
    return out


class ShiftedLogits(nn.Module):
    """A model whose output at position i is read as the prediction for position i + 1 (Dream,
    adapted from an autoregressive model): the logits are moved one position right, the first
    repeated, as Dream's ``diffusion_generate`` does.

    Parameters
    ----------
    model : torch.nn.Module
        The wrapped model.

    Examples
    --------
    >>> class Echo(nn.Module):
    ...     def forward(self, x):
    ...         return torch.nn.functional.one_hot(x, 5).float()
    >>> ShiftedLogits(Echo())(torch.tensor([[1, 2, 3]])).argmax(-1)
    tensor([[1, 1, 2]])
    """

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model
        try:
            self._takes_mask = "attention_mask" in inspect.signature(model.forward).parameters
        except (TypeError, ValueError):
            self._takes_mask = False

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None):
        if self._takes_mask and attention_mask is not None:
            out = self.model(input_ids, attention_mask=attention_mask)
        else:
            out = self.model(input_ids)
        logits = out.logits if hasattr(out, "logits") else out
        return torch.cat([logits[:, :1], logits[:, :-1]], 1)


@dataclasses.dataclass
class DreamOutput:
    """What :func:`dream_generate` returns with ``return_dict_in_generate=True``."""

    sequences: torch.Tensor
    history: list[torch.Tensor] | None = None


def dream_generate(model: nn.Module, inputs: torch.Tensor, attention_mask=None, *,
                   max_length=20, max_new_tokens=None, steps=512, eps=DREAM_EPS, alg="origin",
                   alg_temp=None, temperature=0.0, top_p=None, top_k=None,
                   output_history=False, return_dict_in_generate=False, mask_token_id=None,
                   generation_logits_hook_func=None, shift_logits=True, **options):
    """Dream's ``model.diffusion_generate(inputs, ...)``, names and defaults included, on
    :func:`~icml25.mdm.generate` (one block over the whole answer, as Dream).

    Parameters
    ----------
    model : torch.nn.Module
        The denoiser; with ``shift_logits`` its output at i predicts position i + 1.
    inputs : torch.Tensor
        ``(B, P)`` prompt ids, left-padded when ``attention_mask`` has zeros.
    attention_mask : torch.Tensor or None, default=None
    max_length : int, default=20
        Prompt plus answer, unless ``max_new_tokens`` is given.
    max_new_tokens : int or None, default=None
    steps : int, default=512
    eps : float, default=1e-3
        The last time of Dream's ``linspace(1, eps, steps + 1)``.
    alg : {"origin", "maskgit_plus", "topk_margin", "entropy"}, default="origin"
    alg_temp : float or None, default=None
        Randomness of the confidence-based order.
    temperature : float, default=0.0
    top_p, top_k : float, int or None, default=None
    output_history : bool, default=False
        With ``return_dict_in_generate``, the canvas after every step.
    return_dict_in_generate : bool, default=False
        Return a :class:`DreamOutput` (``sequences``, ``history``).
    mask_token_id : int or None, default=None
        Default: ``model.generation_config.mask_token_id``.
    generation_logits_hook_func : callable or None, default=None
        ``f(step, x, logits) -> logits``, as Dream's.
    shift_logits : bool, default=True
        Dream's models predict the next position; False for a plain masked LM.
    **options
        Any other :func:`~icml25.mdm.generate` option.

    Returns
    -------
    torch.Tensor or DreamOutput
        ``(B, P + new tokens)``.

    Raises
    ------
    ValueError
        For an unknown ``alg``, no mask token, or no room to generate.

    Examples
    --------
    >>> from icml25.nn import Transformer, TransformerConfig
    >>> net = Transformer(TransformerConfig(vocab_size=12, seq_len=16, d_model=16, n_layers=1,
    ...                                     n_heads=2))
    >>> dream_generate(net, torch.tensor([[3, 4, 5]]), max_new_tokens=6, steps=6,
    ...                alg="entropy", mask_token_id=0).shape
    torch.Size([1, 9])
    """
    if alg not in DREAM_ALGS:
        raise ValueError(f"alg must be one of {tuple(DREAM_ALGS)}, got {alg!r}")
    if mask_token_id is None:
        mask_token_id = getattr(getattr(model, "generation_config", None), "mask_token_id", None)
        if mask_token_id is None:
            raise ValueError("give mask_token_id (the model's generation_config has none)")
    prompt = inputs if inputs.dim() == 2 else inputs[None]
    gen_length = max_new_tokens if max_new_tokens is not None else max_length - prompt.shape[1]
    if gen_length < 1:
        raise ValueError(f"nothing to generate: max_length {max_length} <= prompt length "
                         f"{prompt.shape[1]}")
    if generation_logits_hook_func is not None:
        if "on_step" in options:
            raise ValueError("generation_logits_hook_func and on_step cannot be combined")

        def on_step(step, logits, ids):
            return generation_logits_hook_func(step, ids, logits)

        options["on_step"] = on_step
    k_schedule = "binomial" if alg == "origin" else (
        "dream" if eps == DREAM_EPS else f"dream:{eps}")
    ids, pad_id = _rows_and_pad(prompt, attention_mask)
    out = generate(ShiftedLogits(model) if shift_logits else model, ids,
                   mask_id=mask_token_id, gen_length=gen_length, steps=steps,
                   planner=DREAM_ALGS[alg], noise=alg_temp or 0.0, k_schedule=k_schedule,
                   temperature=temperature, top_p=top_p, top_k=top_k, pad_id=pad_id,
                   padding_side="left", return_history=output_history and return_dict_in_generate,
                   **options)
    width = prompt.shape[1] + gen_length
    if isinstance(out, (torch.Tensor, list)):
        sequences, history = _as_tensor(out, width, pad_id, prompt), None
    else:
        sequences, history = _as_tensor(out.ids, width, pad_id, prompt), out.history
    return DreamOutput(sequences, history) if return_dict_in_generate else sequences
