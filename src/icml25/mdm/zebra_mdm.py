"""A masked diffusion model for Zebra (Einstein) puzzles: layout, training, solving, evaluation.

Layout: the 36 answer tokens come first (fixed positions, one per item (attribute, value) of the
6 x 6 item grid, holding the item's house; PAD where the puzzle is smaller), then the clue tokens
of ``zebra.encode``, right-padded to the batch's longest prompt. Only the puzzle's own answer cells
are ever masked (training) or generated (solving); the clues and the PAD cells stay visible. The
model is the same bidirectional ``icml25.nn.Transformer`` as the Sudoku model, with rotary
positions and a larger query/key init.

Training draws one size class (houses x attributes) per batch, so rows of a batch have similar
lengths, and applies a random symmetry (attribute and value relabelling, mirror, clue order; as
``zebra.augment``) to every example. The puzzles are encoded once as arrays
(:class:`ZebraTable`) and a batch is built by :func:`augmented_batch` with numpy over the whole
batch, at the pace of a GPU step (``benchmarks/gpu_data_path.py``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import torch

from icml25.core.stats import clopper_pearson
from icml25.mdm import zebra
from icml25.mdm.objective import masked_diffusion_loss
from icml25.mdm.sampler import sample
from icml25.nn import TrainConfig, Transformer, TransformerConfig, train
from icml25.nn.device import inference_batch_size, place

MAX_PROMPT = 220  # clue tokens a model has room for (the generator's 6 x 6 puzzles: ~140-180)
SOLVE_BATCH = 256  # puzzles per forward pass on the CPU (on a GPU: what fits)
QK_INIT_STD = 0.088  # ~1/sqrt(d_model): attention logits of order one at the start


def cell_groups(max_prompt: int = MAX_PROMPT) -> list[list[int]]:
    """Attribute and value of each answer position (item-major); the clue positions get the
    extra id ``MAX_SIZE``."""
    n = zebra.MAX_SIZE
    rest = [n] * max_prompt
    return [[c // n for c in range(zebra.ANSWER_LEN)] + rest,
            [c % n for c in range(zebra.ANSWER_LEN)] + rest]


def default_model_config(*, cell_embeddings: bool = False, **overrides) -> TransformerConfig:
    """0.8M parameters with rotary positions; ``cell_embeddings`` adds learned attribute and
    value embeddings to the answer cells, so the model need not discover from 36 position
    vectors which cells belong to one item (a deviation from plain positions).

    Rotary, not learned, positions: reading a clue means combining tokens at fixed offsets from
    each other (``at A2 V1 P0``) wherever the clue starts, which rotary attention expresses
    directly; with learned absolute positions the model never left chance even on puzzles whose
    clues are all direct lookups. A query/key init of :data:`QK_INIT_STD` instead of 0.02 lets
    an answer cell find the clue that names it within a few hundred steps rather than ~1,000+
    (``benchmarks/mdm_zebra_lookup.py``, docs/mdm.md)."""
    seq_len = overrides.get("seq_len", zebra.ANSWER_LEN + MAX_PROMPT)
    groups = cell_groups(seq_len - zebra.ANSWER_LEN) if cell_embeddings else None
    base = dict(vocab_size=zebra.VOCAB_SIZE, seq_len=seq_len, d_model=128, n_layers=4, n_heads=4,
                dropout=0.0, causal=False, positions="rotary", position_groups=groups,
                qk_init_std=QK_INIT_STD)
    return TransformerConfig(**(base | overrides))


def encode_batch(puzzles: Sequence[zebra.ZebraPuzzle],
                 max_prompt: int = MAX_PROMPT) -> tuple[torch.Tensor, torch.Tensor]:
    """``(tokens, maskable)``, both ``(B, 36 + longest prompt)``: answer first, then clues."""
    enc = [zebra.encode(p) for p in puzzles]
    longest = max(len(prompt) for prompt, _ in enc)
    if longest > max_prompt:
        raise zebra.ZebraError(f"a puzzle has {longest} clue tokens; the model has room for "
                               f"{max_prompt}")
    tokens = np.full((len(enc), zebra.ANSWER_LEN + longest), zebra.PAD, dtype=np.int64)
    maskable = np.zeros(tokens.shape, dtype=bool)
    for i, ((prompt, answer), pz) in enumerate(zip(enc, puzzles, strict=True)):
        tokens[i, :zebra.ANSWER_LEN] = answer
        tokens[i, zebra.ANSWER_LEN:zebra.ANSWER_LEN + len(prompt)] = prompt
        maskable[i, :zebra.ANSWER_LEN] = zebra.answer_mask(pz.n_houses, pz.n_attrs)
    return torch.from_numpy(tokens), torch.from_numpy(maskable)


_KINDS = {kind: i for i, kind in enumerate(zebra.CLUE_KINDS)}
_LEFT, _RIGHT = _KINDS["left_of"], _KINDS["right_of"]
_UNARY = min(_KINDS["at"], _KINDS["not_at"])  # kinds from here on name a house, not an item


@dataclasses.dataclass(frozen=True)
class ZebraTable:
    """Puzzles as arrays, encoded once, from which :func:`augmented_batch` builds batches.

    Attributes
    ----------
    n_houses, n_attrs : np.ndarray
        ``(N,)`` sizes.
    clues : np.ndarray
        ``(N, K, 5)``: kind index (``zebra.CLUE_KINDS``), x's attribute and value, then y's
        attribute and value (binary kinds) or the house and -1 (``at`` / ``not_at``); rows past
        a puzzle's ``n_clues`` are -1.
    n_clues : np.ndarray
        ``(N,)`` clues per puzzle.
    where : np.ndarray
        ``(N, 6, 6)``: the house of item (attribute, value) in the solution; -1 outside the
        puzzle's size.
    """

    n_houses: np.ndarray
    n_attrs: np.ndarray
    clues: np.ndarray
    n_clues: np.ndarray
    where: np.ndarray

    @classmethod
    def from_puzzles(cls, puzzles: Sequence[zebra.ZebraPuzzle]) -> ZebraTable:
        """Encode ``puzzles`` (one pass in Python; batches are then built without one).

        Examples
        --------
        >>> pz = zebra.generate_dataset(3, seed=0, n_houses=4, n_attrs=3)
        >>> table = ZebraTable.from_puzzles(pz)
        >>> table.where.shape, int(table.n_houses[0])
        ((3, 6, 6), 4)
        """
        if not puzzles:
            raise ValueError("no puzzles to encode")
        k = max(len(p.clues) for p in puzzles)
        clues = np.full((len(puzzles), k, 5), -1, dtype=np.int64)
        where = np.full((len(puzzles), zebra.MAX_SIZE, zebra.MAX_SIZE), -1, dtype=np.int64)
        for i, p in enumerate(puzzles):
            for j, c in enumerate(p.clues):
                clues[i, j] = ((_KINDS[c.kind], *c.x, *c.y) if c.y is not None
                               else (_KINDS[c.kind], *c.x, c.house, -1))
            sol = np.asarray(p.solution)
            where[i, :p.n_attrs, :p.n_houses] = zebra._where(sol)
        return cls(np.array([p.n_houses for p in puzzles]), np.array([p.n_attrs for p in puzzles]),
                   clues, np.array([len(p.clues) for p in puzzles]), where)


def augmented_batch(table: ZebraTable, idx: np.ndarray, rng: np.random.Generator,
                    max_prompt: int = MAX_PROMPT, *,
                    augment: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """``(tokens, maskable)`` of the puzzles ``idx`` of ``table``, each under its own random
    symmetry (``augment``; the distribution of ``zebra.augment``), laid out as
    :func:`encode_batch` lays them out; built with numpy over the whole batch.

    Parameters
    ----------
    table : ZebraTable
        The encoded puzzles.
    idx : np.ndarray
        ``(B,)`` rows of ``table``, all of one size (houses x attributes): a training batch is
        one size class.
    rng : np.random.Generator
        The symmetries' randomness.
    max_prompt : int, default=MAX_PROMPT
        Clue tokens the model has room for.
    augment : bool, default=True
        False: the puzzles as they are (then equal to :func:`encode_batch`'s).

    Returns
    -------
    tokens, maskable : torch.Tensor
        ``(B, 36 + longest prompt)`` token ids and the answer cells a model may fill.

    Raises
    ------
    ValueError
        Puzzles of several sizes in ``idx``; zebra.ZebraError for a prompt over ``max_prompt``.

    Examples
    --------
    >>> pz = zebra.generate_dataset(4, seed=0, n_houses=3, n_attrs=3)
    >>> table = ZebraTable.from_puzzles(pz)
    >>> plain = augmented_batch(table, np.arange(4), np.random.default_rng(0), augment=False)
    >>> all(bool((a == b).all()) for a, b in zip(plain, encode_batch(pz)))
    True
    """
    idx = np.asarray(idx)
    houses, attrs = table.n_houses[idx], table.n_attrs[idx]
    if len(idx) and (houses.min() != houses.max() or attrs.min() != attrs.max()):
        sizes = sorted({(int(a), int(b)) for a, b in zip(houses, attrs, strict=True)})
        raise ValueError(f"a batch is one size class (houses x attributes), got {sizes}")
    n, m = int(houses[0]), int(attrs[0])
    b = len(idx)
    n_clues = table.n_clues[idx]
    k = int(n_clues.max())
    clues = table.clues[idx, :k]  # (B, K, 5)
    rows = np.arange(b)[:, None]
    if augment:
        attr = np.argsort(rng.random((b, m)), axis=1)  # attribute a becomes attr[:, a]
        value = np.argsort(rng.random((b, m, n)), axis=2)  # its value v becomes value[:, a, v]
        mirror = rng.random(b) < 0.5
        keys = rng.random((b, k))
    else:
        attr = np.broadcast_to(np.arange(m), (b, m))
        value = np.broadcast_to(np.arange(n), (b, m, n))
        mirror = np.zeros(b, dtype=bool)
        keys = np.broadcast_to(np.arange(k, dtype=float), (b, k))
    keys = np.where(np.arange(k) < n_clues[:, None], keys, np.inf)  # missing clues go last
    order = np.argsort(keys, axis=1, kind="stable")
    clues = np.take_along_axis(clues, order[:, :, None], axis=1)
    present = np.take_along_axis(np.arange(k) < n_clues[:, None], order, axis=1)
    kind, xa, xv, third, yv = (clues[..., j] for j in range(5))
    unary = kind >= _UNARY
    safe = np.where(present, 1, 0)  # index 0 for the missing clues (masked out below)
    xa_, xv_ = xa * safe, xv * safe
    ya_, yv_ = np.where(unary, 0, third) * safe, np.where(unary, 0, yv) * safe
    new_xa, new_ya = attr[rows, xa_], attr[rows, ya_]
    new_xv, new_yv = value[rows, xa_, xv_], value[rows, ya_, yv_]
    flip = mirror[:, None]
    kind = np.where(flip & (kind == _LEFT), _RIGHT, np.where(flip & (kind == _RIGHT), _LEFT, kind))
    house = np.where(flip, n - 1 - third, third)
    slots = np.stack([
        zebra._KIND0 + kind, zebra._ATTR0 + new_xa, zebra._VALUE0 + new_xv,
        np.where(unary, zebra._POS0 + house, zebra._ATTR0 + new_ya),
        np.where(unary, zebra.SEP, zebra._VALUE0 + new_yv),
        np.full_like(kind, zebra.SEP)], axis=-1)  # (B, K, 6)
    valid = present[..., None] & ~(unary[..., None] & (np.arange(6) == 5))
    slots, valid = slots.reshape(b, -1), valid.reshape(b, -1)
    # Each valid token goes to the next free place of its row's prompt, in order.
    place = np.cumsum(valid, axis=1) - 1 + zebra.ANSWER_LEN + 3
    longest = 3 + int(valid.sum(1).max())
    if longest > max_prompt:
        raise zebra.ZebraError(f"a puzzle has {longest} clue tokens; the model has room for "
                               f"{max_prompt}")
    tokens = np.full((b, zebra.ANSWER_LEN + longest), zebra.PAD, dtype=np.int64)
    tokens[:, zebra.ANSWER_LEN:zebra.ANSWER_LEN + 3] = (zebra._HOUSES0 + n, zebra._ATTRS0 + m,
                                                         zebra.SEP)
    tokens[np.broadcast_to(rows, valid.shape)[valid], place[valid]] = slots[valid]
    # The answer: item (a, v) in house h becomes item (attr[a], value[a, v]) in house h or,
    # mirrored, n - 1 - h.
    h = table.where[idx, :m, :n]  # (B, m, n)
    h = np.where(mirror[:, None, None], n - 1 - h, h)
    cell = attr[:, :, None] * zebra.MAX_SIZE + value  # (B, m, n)
    tokens[rows[:, :, None], cell] = zebra._POS0 + h
    maskable = np.zeros(tokens.shape, dtype=bool)
    maskable[:, :zebra.ANSWER_LEN] = zebra.answer_mask(n, m)
    return torch.from_numpy(tokens), torch.from_numpy(maskable)


def zebra_loss(model, batch, generator: torch.Generator | None = None, weighting="elbo",
               min_mask_rate: float = 0.0):
    tokens, maskable = batch
    return masked_diffusion_loss(model, tokens, maskable, generator, mask_id=zebra.MASK,
                                 weighting=weighting, min_rate=min_mask_rate)


def _size_classes(puzzles: Sequence[zebra.ZebraPuzzle]) -> list[np.ndarray]:
    sizes = np.array([(p.n_houses, p.n_attrs) for p in puzzles])
    return [np.flatnonzero((sizes == s).all(1)) for s in np.unique(sizes, axis=0)]


def train_zebra(puzzles: Sequence[zebra.ZebraPuzzle], cfg: TrainConfig,
                model_cfg: TransformerConfig | None = None, *, weighting: str = "elbo",
                min_mask_rate: float = 0.0, on_log=None,
                init: Transformer | None = None) -> tuple[Transformer, list[dict]]:
    """Train (or resume, when ``cfg.out_dir`` holds a checkpoint) a Zebra MDM; ``init`` starts
    from that model's weights instead of a fresh one (a warm restart with a new schedule);
    ``min_mask_rate`` (see ``objective.mask_tokens``) keeps the masking rate high."""
    model_cfg = init.cfg if init is not None else model_cfg or default_model_config()
    max_prompt = model_cfg.seq_len - zebra.ANSWER_LEN
    puzzles = [p for p in puzzles if len(zebra.encode(p)[0]) <= max_prompt]
    if not puzzles:
        raise ValueError(f"no training puzzle fits in {max_prompt} clue tokens")
    classes = _size_classes(puzzles)
    weights = np.array([len(c) for c in classes], dtype=float)
    table = ZebraTable.from_puzzles(puzzles)
    torch.manual_seed(cfg.seed)
    model = init or Transformer(model_cfg)

    def batch_fn(step, gen, rank):
        rng = np.random.default_rng(int(torch.randint(0, 2**62, (1,), generator=gen)))
        members = classes[rng.choice(len(classes), p=weights / weights.sum())]
        idx = rng.choice(members, cfg.batch_size)
        return augmented_batch(table, idx, rng, max_prompt) + (gen,)

    def loss_fn(net, batch):
        tokens, maskable, gen = batch
        return zebra_loss(net, (tokens, maskable), gen, weighting, min_mask_rate)

    state = train(model, loss_fn, batch_fn, cfg, on_log=on_log)
    return model, state.log


def _fill_answers(model: Transformer, puzzles: Sequence[zebra.ZebraPuzzle], *, planner: str,
                  steps: int | None, batch_size: int | None, seed: int, noise: float,
                  device: str | None) -> np.ndarray:
    """The sampled 36 answer tokens per puzzle ``(N, 36)``, batching puzzles by size."""
    where = place(model, device)
    batch_size = batch_size or inference_batch_size(model, where, SOLVE_BATCH)
    gen = torch.Generator(device=where).manual_seed(seed)
    max_prompt = model.cfg.seq_len - zebra.ANSWER_LEN
    answers = np.full((len(puzzles), zebra.ANSWER_LEN), zebra.PAD, dtype=np.int64)
    for members in _size_classes(puzzles) if puzzles else []:
        for start in range(0, len(members), batch_size):
            idx = members[start:start + batch_size]
            tokens, maskable = encode_batch([puzzles[i] for i in idx], max_prompt)
            filled = sample(model, tokens.to(where), maskable.to(where),
                            steps=steps or zebra.ANSWER_LEN, planner=planner, noise=noise,
                            mask_id=zebra.MASK, generator=gen)
            answers[idx] = filled[:, :zebra.ANSWER_LEN].cpu().numpy()
    return answers


def solve_zebra(model: Transformer, puzzles: Sequence[zebra.ZebraPuzzle], *,
                planner: str = "top_margin", steps: int | None = None,
                batch_size: int | None = None, seed: int = 0, noise: float = 0.0,
                device: str | None = None) -> list[np.ndarray]:
    """One ``(n_houses, n_attrs)`` grid per puzzle (-1 where the model's items do not form a
    placement, see ``zebra.decode_answer``).

    ``steps`` defaults to one step per answer cell of the largest puzzle (36). Puzzles are
    batched by size so rows of a batch have similar lengths. ``device`` moves the model there
    first (default: where it is); ``batch_size`` defaults to what suits it (256 on the CPU).
    """
    answers = _fill_answers(model, puzzles, planner=planner, steps=steps,
                            batch_size=batch_size, seed=seed, noise=noise, device=device)
    return [zebra.decode_answer(a, p.n_houses, p.n_attrs)
            for a, p in zip(answers, puzzles, strict=True)]


def evaluate_zebra(model: Transformer, puzzles: Sequence[zebra.ZebraPuzzle],
                   planners: Sequence[str] = ("random", "top_prob", "top_margin"), *,
                   steps: int | None = None, seed: int = 0, noise: float = 0.0,
                   device: str | None = None,
                   batch_size: int | None = None) -> dict[str, dict[str, float]]:
    """Fully-solved rate (a grid satisfying every clue, by :func:`zebra.check`), cell accuracy
    (the share of items placed in their house of the unique solution) and a 95% CI, per
    planner; ``by_size`` and ``cell_acc_by_size`` split the solved rate and the cell accuracy by
    puzzle size (``"4x3"``: 4 houses, 3 attributes); ``device`` and ``batch_size`` as in
    :func:`solve_zebra`."""
    report = {}
    truth = np.stack([zebra.encode(p)[1] for p in puzzles]) if puzzles else None
    sizes = [f"{p.n_houses}x{p.n_attrs}" for p in puzzles]
    for planner in planners:
        answers = _fill_answers(model, puzzles, planner=planner, steps=steps,
                                batch_size=batch_size, seed=seed, noise=noise, device=device)
        ok = [zebra.check(p, zebra.decode_answer(a, p.n_houses, p.n_attrs))
              for a, p in zip(answers, puzzles, strict=True)]
        cell_acc = float((answers == truth)[truth != zebra.PAD].mean()) if puzzles else 0.0
        lo, hi = clopper_pearson(sum(ok), len(puzzles))
        by_size, cell_acc_by_size = {}, {}
        for size in sorted(set(sizes)):
            rows = np.array([s == size for s in sizes])
            by_size[size] = float(np.mean(np.array(ok)[rows]))
            right = (answers[rows] == truth[rows])[truth[rows] != zebra.PAD]
            cell_acc_by_size[size] = float(right.mean())
        report[planner] = {"solved": sum(ok) / max(len(puzzles), 1), "ci_low": lo, "ci_high": hi,
                           "n": len(puzzles), "cell_acc": cell_acc, "by_size": by_size,
                           "cell_acc_by_size": cell_acc_by_size}
    return report
