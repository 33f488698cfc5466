"""A pre-norm transformer, causal or bidirectional, with learned or rotary positions.

``position_groups`` adds structure a task knows about its positions: each entry maps every
position to a group id (e.g. a Sudoku cell's row, column and box) and gets a learned embedding
table, summed into the input like the position embedding.

``qk_init_std`` sets the initial scale of the query and key projections (default: GPT-2's 0.02
like every other weight). At 0.02 the attention logits start near zero and the gradient of
each of the two factors is proportional to the other, so a task whose first need is to *match*
tokens (a Zebra cell finding the clue that names it) can sit at uniform attention for a long
time; ~1/sqrt(d_model) starts the logits at order one.

``token_shift`` adds a learned embedding of the *previous* token to each position's input (a
"smeared key" / token shift): position t starts out knowing the pair (x_{t-1}, x_t). A lookup
that must match one token and read its neighbour (the edge ``x y`` that enters ``y``) then needs
one attention layer instead of a previous-token head plus a matching head, which form only
after a long plateau (creativity's Line and Circle; ``docs/creativity.md``).

``layer_shift`` goes further (a "canon"-style previous-position mix in every block): each
block's attention input is ``h_t + W h_{t-1}`` with ``h = ln1(x)`` and ``W`` a learned matrix
that starts at zero, so a block can read what the block below computed at the position to the
left (a lookup's result carried onto the next token) without a previous-token head. Zero at the
start, it can be added to a trained model without changing its function (``init_from``).

``kv_cache`` (a :class:`KVCache`) lets a decoder run the model on a slice of the sequence while
the keys and values of the other positions come from an earlier full pass (the block cache of
masked-diffusion decoding, Fast-dLLM). Models with ``token_shift`` or ``layer_shift`` read the
position to the left of the slice and cannot (``supports_kv_cache``).

Saved as ``model.safetensors`` + ``config.json`` (``save`` / ``Transformer.load``).
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn


@dataclasses.dataclass
class TransformerConfig:
    """Shape and options of a :class:`Transformer` (saved as ``config.json`` beside the weights).

    Parameters
    ----------
    vocab_size : int
        Input vocabulary size.
    seq_len : int
        Longest sequence (positions).
    d_model : int, default=128
        Width.
    n_layers : int, default=4
        Transformer blocks.
    n_heads : int, default=4
        Attention heads.
    d_ff : int or None, default=None
        MLP width (None: ``4 * d_model``).
    dropout : float, default=0.0
        Dropout rate.
    causal : bool, default=False
        Causal attention (next-token models) instead of bidirectional (diffusion).
    positions : {"learned", "rotary"}, default="learned"
        Position encoding.
    out_size : int or None, default=None
        Output classes (None: ``vocab_size``).
    tie_embeddings : bool, default=False
        Share input and output embeddings.
    position_groups : list of list of int or None, default=None
        Extra position tables: per table, a group id for each position (e.g. Sudoku rows,
        columns and boxes).
    qk_init_std : float or None, default=None
        Init std of the query/key weights (None: 0.02).
    token_shift : bool, default=False
        Add a learned embedding of the previous token to the input.
    layer_shift : bool, default=False
        Each block's attention input also gets a projection of its left neighbour's.

    Examples
    --------
    >>> TransformerConfig(vocab_size=12, seq_len=81, n_layers=2).d_model
    128
    """

    vocab_size: int
    seq_len: int
    d_model: int = 128
    n_layers: int = 4
    n_heads: int = 4
    d_ff: int | None = None  # default 4 * d_model
    dropout: float = 0.0
    causal: bool = False
    positions: str = "learned"  # learned | rotary
    out_size: int | None = None  # output classes; default vocab_size
    tie_embeddings: bool = False
    position_groups: list[list[int]] | None = None  # per table: a group id for each position
    qk_init_std: float | None = None  # init std of query/key weights; default 0.02
    token_shift: bool = False  # add a learned embedding of the previous token to the input
    layer_shift: bool = False  # each block's attention input also gets W @ its left neighbour's

    def __post_init__(self) -> None:
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} must be a multiple of n_heads={self.n_heads}")
        if self.positions not in ("learned", "rotary"):
            raise ValueError(f"positions must be 'learned' or 'rotary', got {self.positions!r}")
        if self.positions == "rotary" and (self.d_model // self.n_heads) % 2:
            raise ValueError("rotary positions need an even head dimension")
        if self.tie_embeddings and self.out_size not in (None, self.vocab_size):
            raise ValueError("tied embeddings need out_size == vocab_size")
        if self.qk_init_std is not None and not self.qk_init_std > 0:
            raise ValueError(f"qk_init_std must be positive, got {self.qk_init_std}")
        for name in ("vocab_size", "seq_len", "d_model", "n_layers", "n_heads"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive")
        for ids in self.position_groups or []:
            if len(ids) != self.seq_len or min(ids) < 0:
                raise ValueError("each position group needs a non-negative id per position "
                                 f"({self.seq_len}), got {len(ids)} ids")


def _rotary_tables(seq_len: int, head_dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    inv_freq = 1.0 / (10000 ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    angles = torch.outer(torch.arange(seq_len, dtype=torch.float32), inv_freq)
    return angles.cos(), angles.sin()


def _apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate pairs (x[2i], x[2i+1]) of the head dimension by position-dependent angles."""
    x1, x2 = x[..., 0::2], x[..., 1::2]
    out = torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)
    return out.flatten(-2)


class KVCache:
    """Every layer's attention keys and values ``(B, heads, T, head_dim)`` for a whole sequence.

    Filled by a full pass ``model(ids, kv_cache=cache)`` on an empty cache; a later
    ``model(ids[:, start:stop], kv_cache=cache, start=start)`` computes the slice afresh and takes
    the keys and values of every other position from the cache. Under ``torch.no_grad`` the
    slice's fresh keys and values are written into the cache in place (so it holds the latest
    of every position); with gradients on, the cache is left unchanged.

    Attributes
    ----------
    layers : list of (keys, values) tensors
        One pair per layer, each ``(B, heads, T, head_dim)``; empty until filled.

    Examples
    --------
    >>> import torch
    >>> from icml25.nn import KVCache, Transformer, TransformerConfig
    >>> m = Transformer(TransformerConfig(vocab_size=10, seq_len=8, d_model=16, n_layers=2,
    ...                                   n_heads=2, causal=True))
    >>> ids = torch.randint(0, 10, (1, 8))
    >>> cache = KVCache()
    >>> full = m(ids, kv_cache=cache)
    >>> len(cache)
    8
    >>> torch.allclose(m(ids[:, 5:], kv_cache=cache, start=5), full[:, 5:], atol=1e-5)
    True
    """

    def __init__(self) -> None:
        self.layers: list[tuple[torch.Tensor, torch.Tensor]] = []

    def __len__(self) -> int:
        """Positions held (0 when empty)."""
        return self.layers[0][0].shape[2] if self.layers else 0

    def clear(self) -> None:
        self.layers = []

    def select(self, rows: torch.Tensor) -> None:
        """Keep only the batch rows ``rows`` (an index or boolean tensor)."""
        self.layers = [(k[rows], v[rows]) for k, v in self.layers]


class Block(nn.Module):
    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.shift = nn.Linear(cfg.d_model, cfg.d_model, bias=False) if cfg.layer_shift else None
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        d_ff = cfg.d_ff or 4 * cfg.d_model
        self.mlp = nn.Sequential(
            nn.Linear(cfg.d_model, d_ff), nn.GELU(), nn.Linear(d_ff, cfg.d_model))
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor, rotary: tuple[torch.Tensor, torch.Tensor] | None,
                past: tuple[torch.Tensor, torch.Tensor] | None = None, start: int = 0,
                record: list | None = None):
        """``past``: this layer's cached keys and values of the whole sequence, of which ``x``
        is the slice ``[start, start + t)``; ``record`` collects this layer's fresh ones."""
        b, t, d = x.shape
        h = self.cfg.n_heads
        hidden = self.ln1(x)
        if self.shift is not None:  # position 0 has no previous position
            hidden = hidden + self.shift(F.pad(hidden[:, :-1], (0, 0, 1, 0)))
        qkv = self.qkv(hidden).view(b, t, 3, h, d // h).permute(2, 0, 3, 1, 4)
        v = qkv[2]
        if rotary is not None:  # queries and keys rotated in one go
            cos, sin = rotary
            q, k = _apply_rotary(qkv[:2], cos[start:start + t], sin[start:start + t]).unbind(0)
        else:
            q, k = qkv[0], qkv[1]
        if record is not None:
            record.append((k.contiguous(), v.contiguous()))
        p = self.cfg.dropout if self.training else 0.0
        if past is None:
            att = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=self.cfg.causal)
        else:  # keys/values (b, h, T, hd): cached outside the slice, fresh inside
            if torch.is_grad_enabled():
                k = torch.cat([past[0][:, :, :start], k, past[0][:, :, start + t:]], 2)
                v = torch.cat([past[1][:, :, :start], v, past[1][:, :, start + t:]], 2)
            else:  # inference: written into the cache in place (no new (b, h, T, hd) tensors)
                past[0][:, :, start:start + t] = k
                past[1][:, :, start:start + t] = v
                k, v = past
            mask = None
            if self.cfg.causal:  # query start+i sees keys 0..start+i
                mask = (torch.arange(k.shape[2], device=x.device)[None]
                        <= torch.arange(start, start + t, device=x.device)[:, None])
            att = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
        x = x + self.drop(self.proj(att.transpose(1, 2).reshape(b, t, d)))
        return x + self.drop(self.mlp(self.ln2(x)))


class Transformer(nn.Module):
    """Token ids ``(B, T)`` -> logits ``(B, T, out_size)``.

    Also: ``hidden(idx)`` (the final hidden states ``(B, T, d_model)``), ``num_params()``,
    ``flops_per_token()``, ``save(directory)`` and ``Transformer.load(directory)``
    (``model.safetensors`` + ``config.json``).

    Parameters
    ----------
    cfg : TransformerConfig
        Shape and options (validated when the config is built).

    Attributes
    ----------
    cfg : TransformerConfig
        The configuration.
    supports_kv_cache : bool
        Whether :class:`KVCache` slices work (not with ``token_shift`` / ``layer_shift``).

    Raises
    ------
    ValueError
        From ``forward``: ids not of shape (batch, seq), a sequence longer than ``seq_len``, or a
        ``kv_cache`` / ``start`` that does not fit the cache.

    Examples
    --------
    >>> import torch
    >>> from icml25.nn import Transformer, TransformerConfig
    >>> m = Transformer(TransformerConfig(vocab_size=10, seq_len=81, d_model=32, n_layers=1))
    >>> m(torch.zeros(2, 81, dtype=torch.long)).shape
    torch.Size([2, 81, 10])
    >>> m.hidden(torch.zeros(2, 81, dtype=torch.long)).shape
    torch.Size([2, 81, 32])
    """

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.tok = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos = nn.Embedding(cfg.seq_len, cfg.d_model) if cfg.positions == "learned" else None
        self.prev_tok = nn.Embedding(cfg.vocab_size, cfg.d_model) if cfg.token_shift else None
        groups = cfg.position_groups or []
        self.groups = nn.ModuleList(nn.Embedding(max(ids) + 1, cfg.d_model) for ids in groups)
        for i, ids in enumerate(groups):
            self.register_buffer(f"group_ids_{i}", torch.tensor(ids), persistent=False)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.out_size or cfg.vocab_size, bias=False)
        if cfg.tie_embeddings:
            self.head.weight = self.tok.weight
        if cfg.positions == "rotary":
            cos, sin = _rotary_tables(cfg.seq_len, cfg.d_model // cfg.n_heads)
            self.register_buffer("rot_cos", cos, persistent=False)
            self.register_buffer("rot_sin", sin, persistent=False)
        self.apply(self._init)
        for block in self.blocks:  # GPT-2's scaled init of residual projections
            std = 0.02 / math.sqrt(2 * cfg.n_layers)
            nn.init.normal_(block.proj.weight, std=std)
            nn.init.normal_(block.mlp[2].weight, std=std)
            if block.shift is not None:  # starts as the model without it
                nn.init.zeros_(block.shift.weight)
            if cfg.qk_init_std is not None:
                with torch.no_grad():
                    block.qkv.weight[:2 * cfg.d_model].normal_(std=cfg.qk_init_std)

    @staticmethod
    def _init(module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=0.02)

    def forward(self, idx: torch.Tensor, *, kv_cache: KVCache | None = None,
                start: int = 0) -> torch.Tensor:
        """Logits ``(B, T, out_size)``. With an empty ``kv_cache``, also fill it with every
        layer's keys and values; with a filled one, ``idx`` is the slice ``[start, start + T)``
        of the cached sequence (see :class:`KVCache`)."""
        return self.head(self.hidden(idx, kv_cache=kv_cache, start=start))

    @property
    def supports_kv_cache(self) -> bool:
        """Whether :class:`KVCache` slices work (not with ``token_shift``/``layer_shift``)."""
        return not (self.cfg.token_shift or self.cfg.layer_shift)

    def hidden(self, idx: torch.Tensor, *, kv_cache: KVCache | None = None,
               start: int = 0) -> torch.Tensor:
        """The final normalised hidden states ``(B, T, d_model)`` that the head reads (an
        auxiliary head can read them too)."""
        if idx.dim() != 2:
            raise ValueError(f"expected token ids of shape (batch, seq), got {tuple(idx.shape)}")
        t = idx.shape[1]
        filling = kv_cache is not None and not kv_cache.layers
        if kv_cache is not None:
            if not self.supports_kv_cache:
                raise ValueError("a model with token_shift or layer_shift cannot use a KV cache")
            if filling and start:
                raise ValueError("an empty KV cache is filled from the whole sequence (start=0)")
            if not filling and not (0 <= start and start + t <= len(kv_cache)):
                raise ValueError(f"slice [{start}, {start + t}) lies outside the cached "
                                 f"{len(kv_cache)} positions")
        elif start:
            raise ValueError("start needs a filled kv_cache")
        if start + t > self.cfg.seq_len:
            raise ValueError(f"sequence length {start + t} exceeds the model's seq_len "
                             f"{self.cfg.seq_len}")
        x = self.tok(idx)
        if self.prev_tok is not None:  # position 0 has no previous token
            x = x + F.pad(self.prev_tok(idx[:, :-1]), (0, 0, 1, 0))
        if self.pos is not None:
            x = x + self.pos(torch.arange(start, start + t, device=idx.device))
        for i, table in enumerate(self.groups):
            x = x + table(getattr(self, f"group_ids_{i}")[start:start + t])
        x = self.drop(x)
        rotary = (self.rot_cos, self.rot_sin) if self.pos is None else None
        record = [] if filling else None
        for i, block in enumerate(self.blocks):
            past = kv_cache.layers[i] if kv_cache is not None and not filling else None
            x = block(x, rotary, past, start, record)
        if filling:
            kv_cache.layers = record
        return self.ln_f(x)

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def flops_per_token(self) -> float:
        """Training FLOPs per token (forward + backward ~ 3x forward; attention included)."""
        c = self.cfg
        d_ff = c.d_ff or 4 * c.d_model
        per_layer = 2 * ((4 + c.layer_shift) * c.d_model**2 + 2 * c.d_model * d_ff)
        attention = 2 * 2 * c.seq_len * c.d_model
        head = 2 * c.d_model * (c.out_size or c.vocab_size)
        return 3.0 * (c.n_layers * (per_layer + attention) + head)

    def save(self, directory: str | Path, extra: dict | None = None) -> Path:
        """Write ``model.safetensors`` and ``config.json`` (plus ``extra`` metadata)."""
        from safetensors.torch import save_file

        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        state = {k: v.detach().contiguous().cpu() for k, v in self.state_dict().items()}
        if self.cfg.tie_embeddings:
            state.pop("head.weight", None)
        save_file(state, str(directory / "model.safetensors"))
        meta = {"model": dataclasses.asdict(self.cfg), **(extra or {})}
        (directory / "config.json").write_text(json.dumps(meta, indent=2))
        return directory

    @classmethod
    def load(cls, directory: str | Path, map_location: str = "cpu") -> Transformer:
        from safetensors.torch import load_file

        directory = Path(directory)
        if not (directory / "config.json").exists():
            raise FileNotFoundError(f"no config.json in {directory}: not a saved icml25 model")
        meta = json.loads((directory / "config.json").read_text())
        model = cls(TransformerConfig(**meta["model"]))
        state = load_file(str(directory / "model.safetensors"), device=map_location)
        model.load_state_dict(state, strict=not model.cfg.tie_embeddings)
        return model
