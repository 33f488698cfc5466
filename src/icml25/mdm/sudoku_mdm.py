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
    """The Sudoku model's configuration: 0.8M parameters, the smallest size that should still
    show the ordering effect.

    A bidirectional ``icml25.nn.Transformer`` over the 81 cells (vocabulary 0 = MASK, 1-9),
    ``d_model=128``, 4 layers, 4 heads, learned absolute positions.

    Parameters
    ----------
    cell_embeddings : bool, default=False
        Add learned row, column and box embeddings to the learned absolute positions, a
        deviation that tells a small model which cells constrain each other.
    **overrides
        Any ``TransformerConfig`` field, replacing the default (e.g. ``n_layers=2``).

    Returns
    -------
    icml25.nn.TransformerConfig
        The configuration (build the model with ``Transformer(cfg)``).

    Raises
    ------
    TypeError
        For an override that is not a ``TransformerConfig`` field.

    Examples
    --------
    >>> from icml25.mdm import default_model_config
    >>> cfg = default_model_config()
    >>> cfg.seq_len, cfg.vocab_size, cfg.d_model, cfg.n_layers, cfg.causal
    (81, 10, 128, 4, False)
    >>> default_model_config(n_layers=2, cell_embeddings=True).n_layers
    2
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
    """Train (or resume, when ``cfg.out_dir`` holds a checkpoint) a Sudoku masked diffusion model.

    Each batch masks a random fraction t of the puzzle's blank cells (clues stay visible) and
    scores the model by the masked-diffusion loss (:func:`icml25.mdm.mdm_loss`).

    Parameters
    ----------
    puzzles : numpy.ndarray
        ``(n, 81)`` int puzzles, 0 for a blank.
    solutions : numpy.ndarray
        ``(n, 81)`` int solutions (digits 1-9).
    cfg : icml25.nn.TrainConfig
        Steps, batch size, learning rate, seed, device, output folder.
    model_cfg : icml25.nn.TransformerConfig or None, default=None
        The model to build; None for :func:`default_model_config`.
    weighting : {"elbo", "none"}, default="elbo"
        The loss weighting, as in :func:`icml25.mdm.mdm_loss`.
    on_log : callable or None, default=None
        Called with each log record.
    init : icml25.nn.Transformer or None, default=None
        Start from this model's weights instead of a fresh one (a warm restart with a new
        schedule).

    Returns
    -------
    model : icml25.nn.Transformer
        The trained model.
    log : list of dict
        The training log records.

    Examples
    --------
    Two steps of a tiny model on one puzzle (a real run is ``icml25 mdm train``):

    >>> import numpy as np
    >>> from icml25.mdm import default_model_config, train_sudoku
    >>> from icml25.nn import TrainConfig
    >>> grid = "534678912672195348198342567859761423426853791713924856961537284287419635345286179"
    >>> solutions = np.array([[int(c) for c in grid]] * 4)
    >>> puzzles = np.where(np.arange(81) % 3 == 0, 0, solutions)  # every third cell blank
    >>> cfg = TrainConfig(steps=2, batch_size=4, log_every=1, device="cpu")
    >>> model, log = train_sudoku(puzzles, solutions, cfg,
    ...                           default_model_config(d_model=16, n_layers=1, n_heads=2))
    >>> len(log), "loss" in log[0]
    (2, True)
    """
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

    Parameters
    ----------
    solution : str or None
        81 digits, or None for a rejected line.
    valid : bool
        Whether ``solution`` is a valid completion of the clues.
    error : str or None, default=None
        Why the line was rejected.
    steps : int or None, default=None
        Forward passes spent.
    seconds : float or None, default=None
        Share of the batch's wall time.

    Examples
    --------
    >>> from icml25.mdm import SolveResult
    >>> SolveResult(None, False, error="wrong length").line()
    'error: wrong length'
    >>> SolveResult("1" * 81, False).line().startswith("unsolved: ")
    True
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
    """Fill the blanks of Sudoku grids with a model; a thin caller of
    :func:`icml25.mdm.generate` (the blanks are infilled, the clues kept).

    Random draws are made on the device, so a GPU's results differ from the CPU's within
    sampling error. A causal model is the autoregressive baseline: it fills cells in row-major
    order and ignores ``planner``, ``steps``, ``noise``, ``remask`` and ``threshold``.

    Parameters
    ----------
    model : icml25.nn.Transformer
        A Sudoku model (e.g. :func:`load_model`).
    puzzles : numpy.ndarray
        ``(n, 81)`` int puzzles, 0 for a blank.
    planner : str, default="top_margin"
        Which blank to reveal next (a name of ``icml25.mdm.PLANNERS``).
    steps : int, default=50
        Forward passes per puzzle (at most).
    batch_size : int or None, default=None
        Puzzles per pass; None for what suits the device (:data:`SOLVE_BATCH` on the CPU).
    seed : int, default=0
        Seeds the random draws.
    noise : float, default=0.0
        Gumbel coefficient on the planner's certainty.
    remask : str, object or None, default=None
        A ReMDM schedule (see :mod:`icml25.mdm.remask`).
    threshold : float or None, default=None
        Also reveal every blank predicted with at least this probability.
    k_schedule : str, default="linear"
        How many blanks each step reveals (a name of ``icml25.mdm.K_SCHEDULES``).
    device : str or None, default=None
        Move the model there first (None: where it is).
    return_info : bool, default=False
        Also return the forward passes and the seconds each puzzle used.

    Returns
    -------
    grids : numpy.ndarray
        ``(n, 81)`` int8 filled grids.
    steps : numpy.ndarray
        ``(n,)`` forward passes per puzzle; only with ``return_info``.
    seconds : numpy.ndarray
        ``(n,)`` each puzzle's share of its batch's wall time; only with ``return_info``.

    Raises
    ------
    ValueError
        For an unknown planner, K schedule or remasking schedule.

    Examples
    --------
    >>> import numpy as np
    >>> from icml25.mdm import load_model, solve_grids
    >>> grid = "534678912672195348198342567859761423426853791713924856961537284287419635345286179"
    >>> solutions = np.array([[int(c) for c in grid]])
    >>> puzzles = np.where(np.arange(81) % 3 == 0, 0, solutions)  # 27 blanks
    >>> grids = solve_grids(load_model(), puzzles, steps=10)
    >>> grids.shape, grids.dtype
    ((1, 81), dtype('int8'))
    >>> bool((grids[puzzles > 0] == puzzles[puzzles > 0]).all())  # the clues are kept
    True
    """
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

    Malformed puzzles get a result with ``error`` set; the others are still solved.

    Parameters
    ----------
    puzzles : str or iterable of str
        One puzzle or several, 81 characters each in row-major order.
    planner : str, default="top_margin"
        Which blank to reveal next (a name of ``icml25.mdm.PLANNERS``).
    steps : int, default=50
        Forward passes per puzzle (at most).
    model : icml25.nn.Transformer or None, default=None
        The model; None for the shipped checkpoint (:func:`load_model`).
    batch_size : int or None, default=None
        Puzzles per pass, as in :func:`solve_grids`.
    seed : int, default=0
        Seeds the random draws.
    noise : float, default=0.0
        Gumbel coefficient on the planner's certainty.
    remask : str, object or None, default=None
        A ReMDM schedule, as in :func:`icml25.mdm.generate`.
    threshold : float or None, default=None
        Parallel-decoding threshold, as in :func:`icml25.mdm.generate`.
    device : str or None, default=None
        Where the model runs (``cpu``, ``cuda``, ``auto``, ...; None: where it is).

    Returns
    -------
    list of SolveResult
        One per input line, in order.

    Raises
    ------
    FileNotFoundError
        When ``model`` is None and the shipped checkpoint is missing.

    Examples
    --------
    >>> from icml25.mdm import solve_sudoku
    >>> puzzle = ("53..7....6..195....98....6.8...6...34..8.3..17...2...6"
    ...           ".6....28....419..5....8..79")
    >>> good, bad = solve_sudoku([puzzle, "123"], steps=20)
    >>> good.valid, good.solution[:9]
    (True, '534678912')
    >>> bad.error
    'wrong length: expected 81 characters, got 3'
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
    """Fully-solved rate (valid grid matching the clues) with its 95% Clopper-Pearson CI, and
    cell accuracy on the blanks, for each planner.

    For a causal (autoregressive) model the report has one entry, ``autoregressive``.

    Parameters
    ----------
    model : icml25.nn.Transformer
        A Sudoku model.
    puzzles : numpy.ndarray
        ``(n, 81)`` int puzzles, 0 for a blank.
    solutions : numpy.ndarray
        ``(n, 81)`` int reference solutions (for the cell accuracy).
    planners : sequence of str, default=("random", "top_prob", "top_margin")
        The planners to compare.
    steps : int, default=50
        Forward passes per puzzle (at most).
    seed : int, default=0
        Seeds the random draws.
    noise : float, default=0.0
        Gumbel coefficient on the planner's certainty.
    device : str or None, default=None
        As in :func:`solve_grids`.
    batch_size : int or None, default=None
        As in :func:`solve_grids`.

    Returns
    -------
    dict of str to dict
        Per planner: ``solved`` (rate), ``ci_low``, ``ci_high``, ``n`` and ``cell_acc``.

    Examples
    --------
    >>> import numpy as np
    >>> from icml25.mdm import evaluate, load_model
    >>> grid = "534678912672195348198342567859761423426853791713924856961537284287419635345286179"
    >>> solutions = np.array([[int(c) for c in grid]])
    >>> puzzles = np.where(np.arange(81) % 3 == 0, 0, solutions)  # 27 blanks
    >>> report = evaluate(load_model(), puzzles, solutions, planners=("top_margin",), steps=10)
    >>> report["top_margin"]["solved"], report["top_margin"]["n"]
    (1.0, 1)
    """
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
