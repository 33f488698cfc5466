"""The autoregressive baseline of the paper's Table 2 ("ARM without ordering"): a causal
``icml25.nn.Transformer`` reads the puzzle (81 tokens, 0 = blank) and then writes the solution
cell by cell in row-major order.

Sequence: ``puzzle[0..80] solution[0..80]`` (162 tokens; the model sees the first 161). Training
is teacher-forced cross-entropy on the blank cells of the solution only (a clue's value is
copied, never predicted). Decoding is greedy, left to right, with the clues clamped, so the only
difference from the masked diffusion model is the fixed order in which cells are decided.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from icml25.mdm.sudoku_data import sudoku_batch
from icml25.nn import TrainConfig, Transformer, TransformerConfig, train
from icml25.nn.device import device_of

CELLS = 81
IGNORE = -100


def default_ar_config(**overrides) -> TransformerConfig:
    """The Sudoku MDM's size and learned positions, with a causal mask."""
    base = dict(vocab_size=10, seq_len=2 * CELLS - 1, d_model=128, n_layers=4, n_heads=4,
                dropout=0.0, causal=True, positions="learned")
    return TransformerConfig(**(base | overrides))


def ar_rows(solutions: torch.Tensor, blanks: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Teacher-forcing ``(inputs, targets)``, both ``(B, 161)``, from solved grids and their blank
    cells: targets are the solution's blank cells, ``-100`` elsewhere."""
    puzzles = solutions.masked_fill(blanks, 0)
    seq = torch.cat([puzzles, solutions], 1)
    targets = torch.full_like(seq, IGNORE)
    targets[:, CELLS:] = solutions.masked_fill(~blanks, IGNORE)
    return seq[:, :-1], targets[:, 1:]


def ar_loss(model, batch):
    inputs, targets = batch
    logits = model(inputs)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=IGNORE)
    with torch.no_grad():
        scored = targets != IGNORE
        acc = ((logits.argmax(-1) == targets) & scored).sum() / scored.sum().clamp(min=1)
    return loss, {"masked_cell_acc": acc}  # a tensor: the trainer reads it when it logs


def train_sudoku_ar(puzzles: np.ndarray, solutions: np.ndarray, cfg: TrainConfig,
                    model_cfg: TransformerConfig | None = None, *,
                    on_log=None, init: Transformer | None = None
                    ) -> tuple[Transformer, list[dict]]:
    """Train (or resume) the row-major autoregressive baseline on the same augmented batches as
    the MDM (from ``init``'s weights when given)."""
    torch.manual_seed(cfg.seed)
    model = init or Transformer(model_cfg or default_ar_config())

    def batch_fn(step, gen, rank):
        return ar_rows(*sudoku_batch(puzzles, solutions, cfg.batch_size, gen))

    state = train(model, ar_loss, batch_fn, cfg, on_log=on_log)
    return model, state.log


@torch.no_grad()
def solve_grids_ar(model: Transformer, puzzles: np.ndarray, *, batch_size: int = 500,
                   temperature: float = 0.0, seed: int = 0) -> np.ndarray:
    """Fill ``puzzles`` (n, 81) left to right, where the model is; clues are copied, blanks
    decoded greedily (or sampled at ``temperature``) from digits 1-9. Returns (n, 81) int8."""
    model.eval()
    device = device_of(model)
    gen = torch.Generator(device=device).manual_seed(seed)
    out = []
    for start in range(0, len(puzzles), batch_size):
        p = torch.from_numpy(np.asarray(puzzles[start:start + batch_size], dtype=np.int64))
        p = p.to(device)
        seq = p.clone()
        for cell in range(CELLS):
            given = p[:, cell]
            digit = given
            if not bool((given > 0).all()):
                logits = model(seq)[:, -1].float()
                logits[:, 0] = float("-inf")  # never write a blank
                if temperature > 0:
                    probs = (logits / temperature).softmax(-1)
                    choice = torch.multinomial(probs, 1, generator=gen).squeeze(1)
                else:
                    choice = logits.argmax(-1)
                digit = torch.where(given > 0, given, choice)
            seq = torch.cat([seq, digit[:, None]], 1)
        out.append(seq[:, CELLS:].cpu().numpy().astype(np.int8))
    return np.concatenate(out) if out else np.zeros((0, CELLS), np.int8)
