"""Torch training batches of Sudoku boards, shared by the masked-diffusion model and the
autoregressive baseline (so neither imports the other).

:func:`sudoku_batch` builds a batch with numpy on the CPU; :class:`SudokuBoards` keeps the
boards on the training device and builds the same batch there (the same draws from the same
generator, the two gathers on the device), so a GPU is not held up by the CPU."""

from __future__ import annotations

import numpy as np
import torch

from icml25.mdm import sudoku


def sudoku_batch(puzzles: np.ndarray, solutions: np.ndarray, batch_size: int,
                 generator: torch.Generator, augment: bool = True):
    """A training batch ``(tokens, maskable)``: random base puzzles under random symmetries."""
    idx = torch.randint(0, len(puzzles), (batch_size,), generator=generator).numpy()
    p, s = puzzles[idx], solutions[idx]
    if augment:
        rng = np.random.default_rng(int(torch.randint(0, 2**62, (1,), generator=generator)))
        p, s = sudoku.augment(p, s, rng)
    return torch.from_numpy(s.astype(np.int64)), torch.from_numpy(p == 0)


class SudokuBoards:
    """Puzzles and solutions on ``device``, from which :meth:`batch` builds training batches
    there: the batch :func:`sudoku_batch` builds from the same generator, value for value.

    Parameters
    ----------
    puzzles, solutions : np.ndarray
        ``(N, 81)`` boards (0 = blank in a puzzle).
    device : torch.device or str, default="cpu"
        Where the boards live and the batches are built.

    Examples
    --------
    >>> p, s = sudoku.generate_dataset(3, seed=0)
    >>> boards = SudokuBoards(p, s)
    >>> a = boards.batch(4, torch.Generator().manual_seed(1))
    >>> b = sudoku_batch(p, s, 4, torch.Generator().manual_seed(1))
    >>> all(bool((x == y).all()) for x, y in zip(a, b))
    True
    """

    def __init__(self, puzzles: np.ndarray, solutions: np.ndarray,
                 device: torch.device | str = "cpu") -> None:
        if np.shape(puzzles) != np.shape(solutions) or np.ndim(puzzles) != 2 \
                or np.shape(puzzles)[1] != 81:
            raise sudoku.SudokuError("puzzles and solutions must both be (N, 81)")
        self.device = torch.device(device)
        self.puzzles = torch.as_tensor(np.asarray(puzzles, dtype=np.int64), device=self.device)
        self.solutions = torch.as_tensor(np.asarray(solutions, dtype=np.int64),
                                         device=self.device)

    def batch(self, batch_size: int, generator: torch.Generator, augment: bool = True):
        """``(tokens, maskable)`` on the boards' device (see :func:`sudoku_batch`)."""
        idx = torch.randint(0, len(self.puzzles), (batch_size,), generator=generator)
        idx = idx.to(self.device, non_blocking=True)
        p, s = self.puzzles[idx], self.solutions[idx]
        if augment:
            rng = np.random.default_rng(int(torch.randint(0, 2**62, (1,), generator=generator)))
            src, relabel = sudoku.augment_maps(rng, batch_size)
            src = torch.from_numpy(src).to(self.device, non_blocking=True)
            relabel = torch.from_numpy(relabel.astype(np.int64)).to(self.device,
                                                                    non_blocking=True)
            p = relabel.gather(1, p.gather(1, src))
            s = relabel.gather(1, s.gather(1, src))
        return s, p == 0
