"""One decoder for any masked-diffusion denoiser: :func:`generate` (and :func:`generate_stream`).

The model is anything that maps token ids ``(B, L)`` to logits ``(B, L, V)``: an
``icml25.nn.Transformer``, or a Hugging Face masked LM (``AutoModelForMaskedLM``: BERT,
RoBERTa, ModernBERT, ...; LLaDA/Dream-style models loaded with ``trust_remote_code``), whose
output is recognised by its ``.logits``. A model whose ``forward`` takes ``attention_mask`` is
given one (zero on padding).

The canvas of a row is its prompt followed by ``gen_length`` mask tokens. Every ``mask_id`` on
the canvas is generated, so masks inside the prompt are infilled (``gen_length=0`` is pure
infilling); every other token is returned unchanged. The loop, per block and per step, is the
reverse process of Kim et al. (Sec. 4, "adaptive MDM inference"):

1. :func:`denoise` -- one forward pass (through the block cache when asked), with
   classifier-free guidance when ``cfg_scale > 0``; ``on_step`` may then edit the logits;
2. :func:`propose_tokens` -- a value for every position: the argmax, or a draw at
   ``temperature`` from the ``top_k``/``top_p``-filtered distribution;
3. :func:`reveal_count` -- how many to reveal (the K schedule, raised by ``threshold``, and
   the remasking plan);
4. :func:`choose_reveals` -- which: the K best planner scores among the block's masked
   positions (the analogue of Fast-dLLM's ``get_transfer_index``), and :func:`choose_remasks`
   which revealed tokens go back to mask;
5. :func:`stop_at_eos` -- a row whose answer has ended (``eos_id``) is finished.

Options:

- ``block_length``: LLaDA's semi-autoregressive blocks. The generated span is cut into blocks of
  this many tokens, decoded left to right with ``steps`` split evenly over them; only the current
  block's positions may be revealed (masks inside the prompt belong to the first block).
- ``cache``: Fast-dLLM's block KV cache (``"prefix"``: the keys and values left of the block are
  computed once per block; ``"dual"``: those right of it too), for ``icml25.nn`` models and, the
  prefix only, Hugging Face models that return ``past_key_values``; other models decode without.
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
from collections.abc import Callable, Iterator, Sequence

import torch
from torch import nn

from icml25.mdm.planners import check_k_schedule, check_planner, gumbel, select_top_k
from icml25.mdm.remask import check_remask

PADDING_SIDES = ("left", "right")
CACHES = (None, "prefix", "dual")


@dataclasses.dataclass
class Generation:
    """What :func:`generate` returns with ``return_info=True`` or ``return_history=True``.

    Attributes
    ----------
    ids : torch.Tensor or list of list of int
        The decoded canvas, as :func:`generate` returns it.
    steps_used : torch.Tensor
        ``(B,)``: forward passes in which the row still had masked positions.
    forward_passes : int
        Forward passes of the whole batch (a guided pass counts once).
    history : list of torch.Tensor or None
        With ``return_history``: the ``(B, L)`` canvas after every forward pass (padded, mask
        tokens where still masked); ``len(history) == forward_passes``.
    lengths : torch.Tensor
        ``(B,)``: each row's generated tokens before its first ``eos_id`` (EOS excluded);
        ``gen_length`` for a row without one, or when ``eos_id`` is None.
    cache : str or None
        The block cache the decode used (None when asked for none or the model cannot cache).

    Parameters
    ----------
    ids : torch.Tensor or list of list of int
        The decoded canvas.
    steps_used : torch.Tensor
        ``(B,)`` forward passes per row.
    forward_passes : int
        Forward passes of the batch.
    history : list of torch.Tensor or None, default=None
        The canvas after every pass.
    lengths : torch.Tensor or None, default=None
        ``(B,)`` generated lengths before EOS.
    cache : str or None, default=None
        The block cache used.

    Examples
    --------
    >>> import torch
    >>> from icml25.nn import Transformer, TransformerConfig
    >>> _ = torch.manual_seed(0)
    >>> net = Transformer(TransformerConfig(vocab_size=10, seq_len=8, d_model=16, n_layers=1,
    ...                                     n_heads=2, causal=False)).eval()
    >>> from icml25.mdm import generate
    >>> info = generate(net, torch.tensor([[1, 2, 3]]), mask_id=0, gen_length=4, steps=2,
    ...                 return_info=True)
    >>> info.ids.shape, info.forward_passes, info.lengths.tolist()
    (torch.Size([1, 7]), 2, [4])
    """

    ids: torch.Tensor | list[list[int]]
    steps_used: torch.Tensor
    forward_passes: int
    history: list[torch.Tensor] | None = None
    lengths: torch.Tensor | None = None
    cache: str | None = None


def _takes(model: nn.Module, name: str) -> bool:
    try:
        return name in inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return False


def _as_logits(out, shape) -> torch.Tensor:
    if hasattr(out, "logits"):  # a transformers ModelOutput
        out = out.logits
    elif isinstance(out, (tuple, list)):
        out = out[0]
    if not isinstance(out, torch.Tensor) or out.shape[:2] != shape:
        raise ValueError(f"the model must map ids {tuple(shape)} to logits (B, L, V); got "
                         f"{getattr(out, 'shape', type(out))}")
    return out


def _device(model: nn.Module) -> torch.device:
    return next((p.device for p in model.parameters()), torch.device("cpu"))


# --- the model's side: one forward pass, with or without a block cache -----------------------

class _Forward:
    """Logits of the columns ``[lo, hi)`` of the canvas from a full pass (no cache)."""

    kind: str | None = None

    def __init__(self, model: nn.Module, attention: torch.Tensor | None) -> None:
        self.model = model
        self.attention = attention

    def _full(self, x: torch.Tensor, attention: torch.Tensor | None, **kwargs):
        if attention is not None:
            return self.model(x, attention_mask=attention, **kwargs)
        return self.model(x, **kwargs)

    def __call__(self, x: torch.Tensor, attention, lo: int, hi: int, fresh: bool):
        return _as_logits(self._full(x, attention), x.shape)[:, lo:hi]


class _NNCache(_Forward):
    """Fast-dLLM's block cache for an ``icml25.nn.Transformer``: the block's first step is a
    full pass that stores every layer's keys and values; later steps of the block recompute
    only the block and what lies right of it (``prefix``), or the block alone (``dual``)."""

    def __init__(self, model, attention, kind: str) -> None:
        from icml25.nn import KVCache

        super().__init__(model, attention)
        self.kind, self.kv = kind, KVCache()

    def __call__(self, x, attention, lo, hi, fresh):
        if fresh:
            self.kv.clear()
            return self.model(x, kv_cache=self.kv)[:, lo:hi]
        stop = x.shape[1] if self.kind == "prefix" else hi
        return self.model(x[:, lo:stop], kv_cache=self.kv, start=lo)[:, :hi - lo]


class _HFPrefixCache(_Forward):
    """The prefix cache through a Hugging Face model's ``past_key_values``: the block's first
    step caches the keys and values, cut back to the columns left of the block, and every later
    step runs the model on the block and the rest after that prefix (the cache is cut back to
    the prefix after each step). A model that returns no croppable cache decodes without."""

    kind = "prefix"

    def __init__(self, model, attention, argument: str) -> None:
        super().__init__(model, attention)
        self.past, self.argument = None, argument  # past_key_values (named cache in 5.x)

    def __call__(self, x, attention, lo, hi, fresh):
        if self.kind is None:
            return super().__call__(x, attention, lo, hi, fresh)
        if fresh or self.past is None:
            out = self._full(x, attention, use_cache=True)
            self.past = getattr(out, "past_key_values", None) or getattr(out, "cache", None)
            if self.past is None or not hasattr(self.past, "crop"):
                self.kind = None  # this model cannot cache: decode as without
            else:
                self._cut(lo)
            return _as_logits(out, x.shape)[:, lo:hi]
        kwargs = {self.argument: self.past, "use_cache": True}
        out = self._full(x[:, lo:], attention, **kwargs)
        self._cut(lo)
        return _as_logits(out, x[:, lo:].shape)[:, :hi - lo]


    def _cut(self, lo: int) -> None:
        """Keep the first ``lo`` positions (a negative ``crop`` removes from the end, in every
        transformers version that has ``crop``)."""
        extra = self.past.get_seq_length() - lo
        if extra > 0:
            self.past.crop(-extra)


def _forward_for(model: nn.Module, cache: str | None, attention) -> _Forward:
    """The forward pass ``cache`` asks for, or a plain one when the model cannot cache."""
    if cache is not None:
        if getattr(model, "supports_kv_cache", False) and _takes(model, "kv_cache"):
            return _NNCache(model, attention, cache)
        if cache == "prefix" and _takes(model, "use_cache"):
            for argument in ("past_key_values", "cache"):
                if _takes(model, argument):
                    return _HFPrefixCache(model, attention, argument)
    return _Forward(model, attention)


# --- one step of the reverse process, each a named function ----------------------------------

def denoise(forward: Callable, x: torch.Tensor, attention: torch.Tensor | None, *,
            unconditional: torch.Tensor | None, cfg_scale: float, lo: int, hi: int,
            fresh: bool) -> torch.Tensor:
    """The model's logits ``(B, hi - lo, V)`` for the canvas columns ``[lo, hi)``, guided.

    With ``cfg_scale`` w > 0, LLaDA's unsupervised classifier-free guidance (Nie et al. 2025,
    App. B): ``l = l_u + (w + 1) (l_c - l_u)``, i.e. ``p ∝ p_c^(1+w) / p_u^w``, where ``l_u`` are
    the logits of the ``unconditional`` canvas (its prompt masked); both run in one batched
    pass. ``w = 0`` is one plain pass.

    Parameters
    ----------
    forward : callable
        ``forward(x, attention, lo, hi, fresh)``: the (cached) forward pass.
    x : torch.Tensor
        ``(B, L)`` canvas.
    attention : torch.Tensor or None
        ``(B, L)`` attention mask, or None for a model that takes none.
    unconditional : torch.Tensor or None
        ``(B, L)``: ``x`` with the prompt masked (used only when ``cfg_scale > 0``).
    cfg_scale : float
        The guidance weight w.
    lo, hi : int
        The columns wanted (the current block).
    fresh : bool
        Whether this is the block's first pass (a cache is refilled).

    Returns
    -------
    torch.Tensor
        ``(B, hi - lo, V)`` float32 logits (a fresh tensor, safe to edit).
    """
    if cfg_scale > 0:
        both = torch.cat([x, unconditional])
        att = torch.cat([attention, attention]) if attention is not None else None
        cond, uncond = forward(both, att, lo, hi, fresh).float().chunk(2)
        return uncond + (cfg_scale + 1) * (cond - uncond)
    return forward(x, attention, lo, hi, fresh).to(torch.float32, copy=True)


def filter_logits(logits: torch.Tensor, top_k: int | None = None,
                  top_p: float | None = None) -> torch.Tensor:
    """Nucleus (``top_p``: the fewest most probable values whose probability reaches ``top_p``)
    then top-k filtering, as Dream's ``sample_tokens``; dropped values get -inf.

    Parameters
    ----------
    logits : torch.Tensor
        ``(..., V)`` logits.
    top_k : int or None, default=None
        Keep the ``top_k`` largest (ties at the k-th kept).
    top_p : float or None, default=None
        Keep the smallest set of most probable values with total probability >= ``top_p``
        (always the most probable one).

    Returns
    -------
    torch.Tensor
        The filtered logits (a new tensor).

    Examples
    --------
    >>> filter_logits(torch.tensor([2.0, 1.0, 0.0]), top_k=2)
    tensor([2., 1., -inf])
    >>> filter_logits(torch.tensor([2.0, 1.0, 0.0]), top_p=0.5)
    tensor([2., -inf, -inf])
    """
    if top_p is not None and top_p < 1:
        sorted_logits, order = logits.sort(-1, descending=True)
        before = sorted_logits.softmax(-1).cumsum(-1) - sorted_logits.softmax(-1)
        drop = torch.zeros_like(before, dtype=torch.bool).scatter(-1, order, before >= top_p)
        logits = logits.masked_fill(drop, float("-inf"))
    if top_k is not None and top_k < logits.shape[-1]:
        kth = logits.topk(top_k, -1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    return logits


def propose_tokens(logits: torch.Tensor, *, temperature: float, top_k: int | None,
                   top_p: float | None, generator: torch.Generator | None):
    """``(probs, values)``: the model's probabilities ``softmax(l)`` (which the planner scores)
    and a proposed value ``x_0`` for every position -- ``argmax l`` at temperature 0 (filtering
    keeps the argmax, so ``top_k=1`` is greedy), else a draw from
    ``softmax(filter(l) / temperature)`` (Dream's order: temperature, then top-p, then top-k).

    Parameters
    ----------
    logits : torch.Tensor
        ``(B, W, V)`` float logits.
    temperature : float
        0 for greedy.
    top_k, top_p : int, float or None
        See :func:`filter_logits`.
    generator : torch.Generator or None
        Where the random draws come from.

    Returns
    -------
    tuple of torch.Tensor
        ``probs`` ``(B, W, V)`` and ``values`` ``(B, W)``.
    """
    probs = logits.softmax(-1)
    if temperature <= 0:
        return probs, probs.argmax(-1)
    scaled = logits / temperature
    if top_k is not None or top_p is not None:
        scaled = filter_logits(scaled, top_k, top_p)
    flat = scaled.softmax(-1).flatten(0, 1)
    where = generator.device if generator is not None else flat.device
    values = torch.multinomial(flat.to(where), 1, generator=generator)
    return probs, values.view(logits.shape[:2]).to(logits.device)


def reveal_count(k_fn, n_masked: torch.Tensor, step: int, steps: int, *,
                 above: torch.Tensor | None, generator) -> torch.Tensor:
    """K per row: the K schedule's count for step ``step`` of ``steps`` (Kim et al. App.
    D.1.2: ``K = n (alpha_s - alpha_t) / (1 - alpha_t)``, = ``n / steps_left`` for the linear
    schedule), at most the ``n_masked`` left, and at least the number ``above`` the threshold
    (Fast-dLLM's parallel decoding)."""
    k = k_fn(n_masked, step, steps, generator).clamp(max=n_masked)
    return torch.maximum(k, above.sum(1)) if above is not None else k


def choose_reveals(scores: torch.Tensor, eligible: torch.Tensor, k: torch.Tensor,
                   above: torch.Tensor | None) -> torch.Tensor:
    """Boolean ``(B, W)``: the positions to reveal -- the ``k`` highest planner ``scores``
    among the ``eligible`` (still masked, in the block) ones, Top-K of Kim et al. Sec. 4 (the
    analogue of Fast-dLLM's ``get_transfer_index``), plus every position ``above`` the threshold
    (so ties at the threshold are all in)."""
    chosen = select_top_k(scores, eligible, k)
    return chosen | above if above is not None else chosen


def choose_remasks(schedule, k, n_masked, revealed, confidence, steps_left, pace, generator):
    """``(k, again)``: ReMDM (Wang et al. 2025) -- how many masked positions the step reveals,
    paid for by the revealed tokens ``again`` sent back to mask (boolean ``(B, W)`` or None);
    see :mod:`icml25.mdm.remask` for the counts ``sigma_max = min(1, m / u)``."""
    k, r = schedule.plan(k, n_masked, revealed.sum(1), steps_left, pace, generator)
    if not bool(r.any()):
        return k, None
    return k + r, schedule.pick(revealed, confidence, r, generator)


def stop_at_eos(x: torch.Tensor, masked: torch.Tensor, span: torch.Tensor, eos_id: int,
                done: torch.Tensor) -> torch.Tensor:
    """Rows whose answer has ended: a revealed ``eos_id`` in the generated ``span`` with no
    masked position left of it. The rest of such a row's span becomes ``eos_id`` (as LLaDA
    pads its answers) and is no longer masked; ``x``, ``masked`` and ``done`` are updated in
    place. Returns the rows finished now."""
    cols = torch.arange(x.shape[1], device=x.device)[None]
    ended = (x == eos_id) & span & ~masked
    first = torch.where(ended, cols, x.shape[1]).min(1).values[:, None]
    now = (first[:, 0] < x.shape[1]) & ~(masked & (cols < first)).any(1) & ~done
    after = span & (cols > first) & now[:, None]
    x.masked_fill_(after, eos_id)
    masked &= ~after
    done |= now
    return now


# --- the canvas ------------------------------------------------------------------------------

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


def _check(steps, gen_length, temperature, noise, threshold, block_length, cache, eos_id,
           mask_id, cfg_scale, top_k, top_p, on_step) -> int:
    """Refuse bad options at the boundary; returns the number of blocks."""
    if not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive integer, got {steps!r}")
    if not isinstance(gen_length, int) or gen_length < 0:
        raise ValueError(f"gen_length must be a non-negative integer, got {gen_length!r}")
    if temperature < 0 or noise < 0:
        raise ValueError("temperature and noise must be >= 0")
    if threshold is not None and not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be in [0, 1], got {threshold}")
    if cache not in CACHES:
        raise ValueError(f"cache must be one of {CACHES}, got {cache!r}")
    if eos_id is not None and (not isinstance(eos_id, int) or eos_id == mask_id):
        raise ValueError(f"eos_id must be a token id other than mask_id, got {eos_id!r}")
    if not cfg_scale >= 0:
        raise ValueError(f"cfg_scale must be >= 0, got {cfg_scale}")
    if top_k is not None and (not isinstance(top_k, int) or top_k < 1):
        raise ValueError(f"top_k must be a positive integer or None, got {top_k!r}")
    if top_p is not None and not 0.0 < top_p <= 1.0:
        raise ValueError(f"top_p must be in (0, 1] or None, got {top_p!r}")
    if on_step is not None and not callable(on_step):
        raise ValueError("on_step must be callable: on_step(step, logits, ids)")
    n_blocks = 1
    if block_length is not None:
        if block_length < 1:
            raise ValueError(f"block_length must be >= 1, got {block_length}")
        n_blocks = max(1, -(-gen_length // block_length))
    if steps < n_blocks:
        raise ValueError(f"steps ({steps}) must be at least the number of blocks ({n_blocks})")
    return n_blocks


# --- the loop --------------------------------------------------------------------------------

def _decode(model, prompt_ids, *, mask_id, gen_length, steps, block_length, planner,
            temperature, threshold, remask, noise, k_schedule, pad_id, padding_side, generator,
            cache, eos_id, cfg_scale, top_k, top_p, return_history, on_step) -> Iterator:
    """The reverse process; yields ``(row_tokens_of_the_block)`` after every block and returns
    the :class:`Generation`."""
    score_fn = check_planner(planner)
    k_fn = check_k_schedule(k_schedule)
    schedule = check_remask(remask)
    n_blocks = _check(steps, gen_length, temperature, noise, threshold, block_length, cache,
                      eos_id, mask_id, cfg_scale, top_k, top_p, on_step)

    x, real, gen_start, as_list = _canvas(prompt_ids, gen_length, mask_id, pad_id, padding_side)
    home, device = x.device, _device(model)
    x, real, gen_start = x.to(device), real.to(device), gen_start.to(device)
    cols = torch.arange(x.shape[1], device=device)
    target = (x == mask_id) & real  # every position to generate
    span = real & (cols[None] >= gen_start[:, None])  # the generated span
    if block_length is not None:
        offset = cols[None] - gen_start[:, None]
        block = (offset.clamp_min(0) // block_length).masked_fill(~target, -1)
    else:
        block = torch.where(target, 0, -1)
    attention = real.long() if _takes(model, "attention_mask") else None
    if attention is not None and pad_id is not None:
        x = x.masked_fill(~real, pad_id)
    prompt = real & ~target  # what the unconditional pass of CFG masks
    forward = _forward_for(model, cache, attention)

    masked = target.clone()
    done = torch.zeros(x.shape[0], dtype=torch.bool, device=device)
    confidence = torch.zeros(x.shape, device=device)  # probability when revealed (for remask)
    steps_used = torch.zeros(x.shape[0], dtype=torch.long, device=device)
    history = [] if return_history else None
    passes = 0
    per_block = [steps // n_blocks + (b < steps % n_blocks) for b in range(n_blocks)]

    def step_logits(lo: int, hi: int, fresh: bool) -> torch.Tensor:
        """Steps 1 (denoise) and the hook: float logits of columns [lo, hi), mask excluded."""
        nonlocal passes
        uncond = x.masked_fill(prompt, mask_id) if cfg_scale > 0 else None
        logits = denoise(forward, x, attention, unconditional=uncond, cfg_scale=cfg_scale,
                         lo=lo, hi=hi, fresh=fresh)
        logits[..., mask_id] = float("-inf")  # never predict the mask token
        if on_step is not None:
            full = logits.new_full((x.shape[0], x.shape[1], logits.shape[-1]), float("nan"))
            full[:, lo:hi] = logits
            edited = on_step(passes, full, x.clone())
            if edited is not None:
                logits = edited[:, lo:hi].float()
                logits[..., mask_id] = float("-inf")
        passes += 1
        return logits

    def record() -> None:
        if history is not None:
            history.append(x.to(home, copy=True))

    # every step's work after the forward pass is confined to the block's columns, unless a
    # random draw (sampled values, noise, the random planner, a remask pick) or the hook would
    # see the whole canvas without the cache
    narrow = forward.kind is not None or (
        temperature <= 0 and not noise and planner != "random" and schedule is None
        and on_step is None)
    for b, block_steps in enumerate(per_block):
        in_block = block == b
        where = in_block.any(0).nonzero()
        if not len(where):
            continue
        block_cols = int(where[0]), int(where[-1]) + 1  # the block's columns (all rows)
        for step in range(block_steps):
            # a cached pass computes the block's columns only; a full one keeps the whole
            # canvas when random draws or the hook see it (so they do not depend on where the
            # block lies), else it too takes the block's columns of the logits
            lo, hi = block_cols if narrow else (0, x.shape[1])
            win = slice(lo, hi)
            eligible = (masked & in_block)[:, win]
            active = eligible.any(1)
            if not bool(active.any()):
                break
            steps_used += active
            logits = step_logits(lo, hi, fresh=step == 0)
            probs, values = propose_tokens(logits, temperature=temperature, top_k=top_k,
                                           top_p=top_p, generator=generator)
            scores = score_fn(probs, generator)
            if noise:
                scores = scores + noise * gumbel(scores.shape, generator, scores)
            n_masked = eligible.sum(1)
            if step == 0:  # the block's pace: its average reveals per pass, rounded up
                pace = -(-n_masked // block_steps)
            conf = None
            if threshold is not None or schedule is not None:
                conf = probs.gather(-1, values[..., None]).squeeze(-1)
            above = (conf >= threshold) & eligible if threshold is not None else None
            k = reveal_count(k_fn, n_masked, step, block_steps, above=above,
                             generator=generator)
            again = None
            if schedule is not None and schedule.active(step, block_steps):
                revealed = (in_block & target & ~masked)[:, win]
                k, again = choose_remasks(schedule, k, n_masked, revealed,
                                          confidence[:, win], block_steps - step, pace,
                                          generator)
            chosen = choose_reveals(scores, eligible, k, above)
            x[:, win] = torch.where(chosen, values, x[:, win])
            masked[:, win] &= ~chosen
            if conf is not None:
                confidence[:, win] = torch.where(chosen, conf, confidence[:, win])
            if again is not None:
                x[:, win] = x[:, win].masked_fill(again, mask_id)
                masked[:, win] |= again
            if eos_id is not None:
                stop_at_eos(x, masked, span, eos_id, done)
            record()
        yield [row[keep].tolist() for row, keep in zip(x.to(home), in_block.to(home),
                                                       strict=True)]
        if eos_id is not None and bool(done.all()):
            break  # every answer has ended: the later blocks are skipped
    used = forward.kind
    if bool(masked.any()):  # a binomial schedule can leave a few: fill them in one pass
        steps_used += masked.any(1)
        forward = _Forward(model, attention)
        _, values = propose_tokens(step_logits(0, x.shape[1], fresh=True),
                                   temperature=temperature, top_k=top_k, top_p=top_p,
                                   generator=generator)
        x = torch.where(masked, values, x)
        record()

    lengths = span.sum(1)
    if eos_id is not None:
        ended = (x == eos_id) & span
        first = torch.where(ended, cols[None], x.shape[1]).min(1).values
        lengths = torch.where(ended.any(1), (span & (cols[None] < first[:, None])).sum(1),
                              lengths)
    x = x.to(home)
    ids = [row[keep].tolist() for row, keep in zip(x, real.to(home), strict=True)] if as_list else x
    return Generation(ids, steps_used.to(home), passes, history, lengths.to(home), used)


def _run(model, prompt_ids, options: dict):
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            it = _decode(model, prompt_ids, **options)
            while True:
                try:
                    next(it)
                except StopIteration as stop:
                    return stop.value
    finally:
        model.train(was_training)


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
    cache: str | None = None,
    eos_id: int | None = None,
    cfg_scale: float = 0.0,
    top_k: int | None = None,
    top_p: float | None = None,
    return_history: bool = False,
    on_step: Callable | None = None,
):
    """Fill every mask of ``prompt_ids`` plus ``gen_length`` new positions; returns the ids.

    Parameters
    ----------
    model : torch.nn.Module
        Maps ids ``(B, L)`` to logits ``(B, L, V)`` (a tensor, a tuple, or an output with
        ``.logits``). Runs where its weights are and is left in the mode it came in.
    prompt_ids : torch.Tensor or list of list of int
        A ``(B, P)`` integer tensor, or rows of any lengths padded with ``pad_id`` on
        ``padding_side`` (an attention mask hides the padding from models that take one).
    mask_id : int
        The mask token; the model never predicts it.
    gen_length : int
        New positions after each prompt (0: infill the prompt's masks only).
    steps : int
        Forward passes (an upper bound with ``threshold`` or ``eos_id``).
    block_length : int or None, default=None
        Semi-autoregressive blocks of this many tokens, ``steps`` split evenly over them.
    planner : str, default="top_margin"
        A :data:`~icml25.mdm.planners.PLANNERS` name: which masked positions go first.
    temperature : float, default=0.0
        0 takes the argmax; > 0 samples the values.
    threshold : float or None, default=None
        Also reveal every block position whose value has at least this probability.
    remask : str, schedule or None, default=None
        A ReMDM schedule (:mod:`icml25.mdm.remask`).
    noise : float, default=0.0
        Gumbel coefficient on the planner's scores.
    k_schedule : str, default="linear"
        A :data:`~icml25.mdm.planners.K_SCHEDULES` name: how many to reveal per step.
    pad_id : int or None, default=None
        Padding for rows of different lengths.
    padding_side : {"left", "right"}, default="left"
    generator : torch.Generator or None, default=None
        Makes the random draws reproducible (they happen where it lives).
    return_info : bool, default=False
        Return a :class:`Generation` instead of the ids.
    cache : {None, "prefix", "dual"}, default=None
        Fast-dLLM's block KV cache. The keys and values are computed at each block's first pass
        and reused for the columns left of the block (``prefix``) or both sides (``dual``) until
        the block ends. Exact for a causal model; for a bidirectional one an approximation (the
        cached keys do not see the tokens revealed within the block), measured in
        ``benchmarks/mdm_decode_speed.py``. A model that cannot cache decodes without
        (``Generation.cache`` says which was used).
    eos_id : int or None, default=None
        End of sequence: once a row reveals it with nothing masked before it, the rest of its
        span becomes ``eos_id``, the row stops, and when all rows have, the later blocks are
        skipped. ``Generation.lengths`` counts each row's tokens before it.
    cfg_scale : float, default=0.0
        Classifier-free guidance weight (LLaDA's unsupervised CFG, the prompt masked in the
        unconditional pass); 0 is none.
    top_k : int or None, default=None
        With ``temperature > 0``, sample among the ``top_k`` most probable values.
    top_p : float or None, default=None
        With ``temperature > 0``, nucleus sampling.
    return_history : bool, default=False
        Return a :class:`Generation` whose ``history`` holds the canvas after every pass.
    on_step : callable or None, default=None
        ``on_step(step, logits, ids)`` before each pass's choice: ``step`` the pass (0-based),
        ``logits`` ``(B, L, V)`` float (NaN where a cached pass computed none: outside the current
        block's columns), ``ids`` a copy
        of the canvas. Returns new logits (e.g. all but one token at -inf to force it) or None.

    Returns
    -------
    torch.Tensor, list of list of int, or Generation
        ``(B, P + gen_length)`` beside the tensor given; for a list, rows (prompt and
        generation, no padding); a :class:`Generation` with ``return_info`` or
        ``return_history``.

    Raises
    ------
    ValueError
        For an unknown planner, K schedule, remask schedule or cache, or an option out of range.

    Examples
    --------
    >>> from icml25.nn import Transformer, TransformerConfig
    >>> _ = torch.manual_seed(0)
    >>> net = Transformer(TransformerConfig(vocab_size=12, seq_len=16, d_model=16, n_layers=1,
    ...                                     n_heads=2))
    >>> out = generate(net, torch.tensor([[3, 4, 5]]), mask_id=0, gen_length=8, steps=4,
    ...                block_length=4, cache="dual", return_info=True)
    >>> out.ids.shape, out.forward_passes, out.cache
    (torch.Size([1, 11]), 4, 'dual')
    """
    info = _run(model, prompt_ids, dict(
        mask_id=mask_id, gen_length=gen_length, steps=steps, block_length=block_length,
        planner=planner, temperature=temperature, threshold=threshold, remask=remask,
        noise=noise, k_schedule=k_schedule, pad_id=pad_id, padding_side=padding_side,
        generator=generator, cache=cache, eos_id=eos_id, cfg_scale=cfg_scale, top_k=top_k,
        top_p=top_p, return_history=return_history, on_step=on_step))
    return info if return_info or return_history else info.ids


def generate_stream(model: nn.Module, prompt_ids, **options) -> Iterator[list[list[int]]]:
    """:func:`generate`, yielding each block's tokens as soon as the block is decided.

    Takes the same arguments as :func:`generate` (``return_info`` and ``return_history`` are
    ignored). Each item holds, per row, the tokens of that block in order, cut at the row's
    ``eos_id`` (EOS excluded; empty after it), so the items of a row joined are its answer.
    Masks inside the prompt belong to the first block. Without ``block_length`` there is one
    block. Blocks after every row has ended are not decoded.

    Parameters
    ----------
    model : torch.nn.Module
        As for :func:`generate`.
    prompt_ids : torch.Tensor or list of list of int
        As for :func:`generate`.
    **options
        :func:`generate`'s keyword arguments.

    Yields
    ------
    list of list of int
        One list of tokens per row, for each block in order.

    Examples
    --------
    >>> from icml25.nn import Transformer, TransformerConfig
    >>> net = Transformer(TransformerConfig(vocab_size=12, seq_len=16, d_model=16, n_layers=1,
    ...                                     n_heads=2))
    >>> blocks = list(generate_stream(net, [[3, 4]], mask_id=0, gen_length=8, steps=4,
    ...                               block_length=4))
    >>> [len(b[0]) for b in blocks]
    [4, 4]
    """
    options = {k: v for k, v in options.items() if k not in ("return_info", "return_history")}
    merged = dict(inspect.signature(generate).bind(model, prompt_ids, **options).arguments)
    defaults = {k: p.default for k, p in inspect.signature(generate).parameters.items()
                if p.default is not inspect.Parameter.empty}
    merged = defaults | {k: v for k, v in merged.items() if k not in ("model", "prompt_ids")}
    merged.pop("return_info")
    eos_id = merged["eos_id"]
    was_training = model.training
    model.eval()
    ended = None
    try:
        it = _decode(model, prompt_ids, **merged)
        while True:
            with torch.no_grad():
                try:
                    rows = next(it)
                except StopIteration:
                    return
            if eos_id is not None:
                ended = ended or [False] * len(rows)
                out = []
                for i, row in enumerate(rows):
                    cut = [] if ended[i] else row
                    if not ended[i] and eos_id in row:
                        cut, ended[i] = row[:row.index(eos_id)], True
                    out.append(cut)
                rows = out
            yield rows
    finally:
        model.train(was_training)
