"""A masked diffusion model for Sudoku: data, training, solving and evaluation.

Encoding (the lean 81-token format of the notes): one token per cell in row-major order, 0 = MASK,
1-9 = digits. Clues are always visible; only the puzzle's blank cells are ever masked (training)
or generated (solving). The model is a bidirectional ``icml25.nn.Transformer`` with learned
absolute positions, as in the paper's GPT-2-without-causal-mask model, at a size a 2-core CPU can
train (see ``docs/mdm.md`` for the scale and the gap to the paper).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Sequence

import numpy as np
import torch

from icml25.core.stats import clopper_pearson
from icml25.mdm import sudoku
from icml25.mdm.model_io import export_checkpoint, load_model, write_training_card
from icml25.mdm.objective import masked_diffusion_loss
from icml25.mdm.sampler import sample
from icml25.mdm.sudoku_data import SudokuBoards, sudoku_batch
from icml25.nn import TrainConfig, Transformer, TransformerConfig, train
from icml25.nn.device import inference_batch_size, place, resolve_device

__all__ = ["MASK", "SOLVE_BATCH", "SolveResult", "default_model_config", "evaluate",
           "export_checkpoint", "load_model", "solve_grids", "solve_sudoku", "solved_report",
           "sudoku_batch", "sudoku_loss", "train_sudoku", "write_training_card"]

MASK = 0
# Puzzles per forward pass when solving on the CPU: 100 was 1.36x faster than 500 on 2 cores
# (1,000 puzzles x 50 steps, benchmarks/mdm_solve_speed.py; larger activations cost page
# faults), 50 no faster. On a GPU, what fits its memory (``nn.inference_batch_size``).
SOLVE_BATCH = 100



def cell_groups() -> list[list[int]]:
    """Row, column and box of each of the 81 cells (row-major)."""
    cells = range(81)
    return [[c // 9 for c in cells], [c % 9 for c in cells],
            [(c // 27) * 3 + (c % 9) // 3 for c in cells]]


def default_model_config(*, cell_embeddings: bool = False, **overrides) -> TransformerConfig:
    """0.8M parameters: the notes' smallest size that should still show the ordering effect.

    ``cell_embeddings`` adds learned row, column and box embeddings to the paper's learned
    absolute positions, a deviation that tells a small model which cells constrain each other.
    """
    base = dict(vocab_size=10, seq_len=81, d_model=128, n_layers=4, n_heads=4, dropout=0.0,
                causal=False, positions="learned",
                position_groups=cell_groups() if cell_embeddings else None)
    return TransformerConfig(**(base | overrides))


def sudoku_loss(model, batch, generator: torch.Generator | None = None, weighting="elbo"):
    tokens, maskable = batch
    return masked_diffusion_loss(model, tokens, maskable, generator, mask_id=MASK,
                                 weighting=weighting)


def train_sudoku(
    puzzles: np.ndarray,
    solutions: np.ndarray,
    cfg: TrainConfig,
    model_cfg: TransformerConfig | None = None,
    *,
    weighting: str = "elbo",
    on_log=None,
    init: Transformer | None = None,
) -> tuple[Transformer, list[dict]]:
    """Train (or resume, when ``cfg.out_dir`` holds a checkpoint) a Sudoku MDM; ``init`` starts
    from that model's weights instead of a fresh one (a warm restart with a new schedule)."""
    torch.manual_seed(cfg.seed)
    model = init or Transformer(model_cfg or default_model_config())
    # The boards live on the training device and batches are built there (on the CPU the
    # same values as sudoku_batch, from the same draws).
    boards = SudokuBoards(puzzles, solutions, resolve_device(cfg.device))

    def batch_fn(step, gen, rank):
        return boards.batch(cfg.batch_size, gen) + (gen,)

    def loss_fn(net, batch):
        tokens, maskable, gen = batch
        return sudoku_loss(net, (tokens, maskable), gen, weighting)

    state = train(model, loss_fn, batch_fn, cfg, on_log=on_log)
    return model, state.log


@dataclasses.dataclass
class SolveResult:
    """One solved (or rejected) Sudoku line, as :func:`solve_grids` returns it.

    Attributes
    ----------
    solution : str or None
        81 digits, or None when the input line was rejected.
    valid : bool
        A complete grid consistent with every clue and the Sudoku rules.
    error : str or None
        Why the input line was rejected.
    steps : int or None
        Forward passes spent on this puzzle.
    seconds : float or None
        Its share of its batch's wall time.
    """

    solution: str | None  # 81 digits, or None when the input line was rejected
    valid: bool  # a complete grid consistent with every clue and the Sudoku rules
    error: str | None = None
    steps: int | None = None  # forward passes spent on this puzzle
    seconds: float | None = None  # its share of its batch's wall time

    def line(self) -> str:
        """One output line: the solution, ``unsolved: <grid>`` for an answer that breaks the
        rules or a clue (so a script cannot take it for a solution), or ``error: <reason>``."""
        if self.error is not None:
            return f"error: {self.error}"
        return self.solution if self.valid else f"unsolved: {self.solution}"

    def record(self) -> dict:
        """The ``--json`` record of this puzzle."""
        return {"solution": self.solution, "valid": self.valid, "error": self.error,
                "steps": self.steps, "seconds": self.seconds}


def solve_grids(model: Transformer, puzzles: np.ndarray, *, planner: str = "top_margin",
                steps: int = 50, batch_size: int | None = None, seed: int = 0,
                noise: float = 0.0, remask=None, threshold: float | None = None,
                k_schedule: str = "linear", device: str | None = None,
                return_info: bool = False):
    """Fill the blanks of ``puzzles`` (n, 81) int; returns (n, 81) int8 grids, a thin caller
    of :func:`icml25.mdm.generate` (the blanks are infilled, the clues kept).

    ``remask`` (a ReMDM schedule), ``threshold`` and ``k_schedule`` are the decoder's.
    ``device`` moves the model there first (default: where it is); ``batch_size`` defaults to
    what suits that device (:data:`SOLVE_BATCH` on the CPU). Random draws are made on the
    device, so a GPU's results differ from the CPU's within sampling error. With
    ``return_info``: ``(grids, steps, seconds)``, the forward passes each puzzle used and its
    share of its batch's wall time.

    A causal model is the autoregressive baseline: it fills cells in row-major order and
    ignores ``planner``, ``steps``, ``noise``, ``remask`` and ``threshold``."""
    where = place(model, device)
    batch_size = batch_size or inference_batch_size(model, where, SOLVE_BATCH)
    if model.cfg.causal:
        from icml25.mdm.sudoku_ar import solve_grids_ar

        t0 = time.perf_counter()
        grids = solve_grids_ar(model, puzzles, batch_size=batch_size, seed=seed)
        if not return_info:
            return grids
        blanks = (np.asarray(puzzles) == 0).sum(1)  # one decision per blank, left to right
        return grids, blanks, np.full(len(grids), (time.perf_counter() - t0) / max(len(grids), 1))
    gen = torch.Generator(device=where).manual_seed(seed)
    out, used, secs = [], [], []
    for start in range(0, len(puzzles), batch_size):
        p = torch.from_numpy(np.asarray(puzzles[start:start + batch_size], dtype=np.int64))
        p = p.to(where)
        t0 = time.perf_counter()
        info = sample(model, p, p == 0, steps=steps, planner=planner, noise=noise,
                      remask=remask, threshold=threshold, k_schedule=k_schedule,
                      mask_id=MASK, generator=gen, return_info=True)
        out.append(info.ids.cpu().numpy().astype(np.int8))
        used.append(info.steps_used.cpu().numpy())
        secs.append(np.full(len(p), (time.perf_counter() - t0) / len(p)))
    grids = np.concatenate(out) if out else np.zeros((0, 81), np.int8)
    if not return_info:
        return grids
    return (grids, np.concatenate(used) if used else np.zeros(0, np.int64),
            np.concatenate(secs) if secs else np.zeros(0))


def solve_sudoku(puzzles: Iterable[str] | str, planner: str = "top_margin", steps: int = 50,
                 model: Transformer | None = None, *, batch_size: int | None = None,
                 seed: int = 0, noise: float = 0.0, remask=None,
                 threshold: float | None = None,
                 device: str | None = None) -> list[SolveResult]:
    """Solve puzzle strings (81 chars, ``0`` or ``.`` for blanks): one result per input.

    Malformed puzzles get a result with ``error`` set; the others are still solved. ``device``
    (``cpu``, ``cuda``, ``auto``, ...) is where the model runs (default: where it is);
    ``remask`` and ``threshold`` as in :func:`icml25.mdm.generate`.
    """
    lines = [puzzles] if isinstance(puzzles, str) else list(puzzles)
    grids, errors = sudoku.parse_puzzles(lines)
    model = model or load_model()
    solved, used, secs = solve_grids(model, grids, planner=planner, steps=steps,
                                     batch_size=batch_size, seed=seed, noise=noise,
                                     remask=remask, threshold=threshold, device=device,
                                     return_info=True)
    valid = sudoku.is_solution_of(grids, solved) if len(grids) else np.zeros(0, bool)
    results, k = [], 0
    for err in errors:
        if err is not None:
            results.append(SolveResult(None, False, err))
            continue
        results.append(SolveResult(sudoku.format_grid(solved[k]), bool(valid[k]),
                                   steps=int(used[k]), seconds=round(float(secs[k]), 6)))
        k += 1
    return results


def evaluate(model: Transformer, puzzles: np.ndarray, solutions: np.ndarray,
             planners: Sequence[str] = ("random", "top_prob", "top_margin"), *,
             steps: int = 50, seed: int = 0, noise: float = 0.0, device: str | None = None,
             batch_size: int | None = None) -> dict[str, dict[str, float]]:
    """Fully-solved rate (valid grid matching the clues), cell accuracy on blanks, 95% CI;
    ``device`` and ``batch_size`` as in :func:`solve_grids`.

    For a causal (autoregressive) model the report has one entry, ``autoregressive``."""
    if model.cfg.causal:
        planners = ("autoregressive",)
    return {planner: solved_report(puzzles, solutions, solve_grids(
        model, puzzles, planner=planner, steps=steps, seed=seed, noise=noise, device=device,
        batch_size=batch_size))
        for planner in planners}


def solved_report(puzzles: np.ndarray, solutions: np.ndarray,
                  grids: np.ndarray) -> dict[str, float]:
    """Fully-solved rate of ``grids`` with its 95% CI, and accuracy on the blank cells."""
    blanks = puzzles == 0
    ok = sudoku.is_solution_of(puzzles, grids)
    k, n = int(ok.sum()), len(ok)
    lo, hi = clopper_pearson(k, n)
    cell = float(((grids == solutions) & blanks).sum() / max(blanks.sum(), 1))
    return {"solved": k / max(n, 1), "ci_low": lo, "ci_high": hi, "n": n, "cell_acc": cell}
