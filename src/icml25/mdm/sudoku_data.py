"""Torch training batches of Sudoku boards, shared by the masked-diffusion model and the
autoregressive baseline (so neither imports the other)."""

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
