"""Solving speed of the shipped Sudoku MDM: 1,000 held-out easy puzzles x 50 steps against the
issue's 2-minute budget, and the effect of the batch size (puzzles per forward pass), side by side.

Run: ``.venv/bin/python benchmarks/mdm_solve_speed.py [--n 1000] [--batches 500,100,50]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from icml25.mdm import sudoku
from icml25.mdm.sudoku_mdm import SOLVE_BATCH, load_model, solve_grids


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--batches", default=f"500,{SOLVE_BATCH},50")
    args = ap.parse_args()
    model = load_model()
    puzzles, solutions = sudoku.generate_dataset(args.n, seed=2)  # the held-out easy seed
    for batch in (int(b) for b in args.batches.split(",")):
        t0 = time.perf_counter()
        grids = solve_grids(model, puzzles, planner="top_margin", steps=50, batch_size=batch)
        seconds = time.perf_counter() - t0
        solved = float(np.mean(sudoku.is_solution_of(puzzles, grids)))
        print(f"batch {batch:4d}: {seconds:6.1f} s for {args.n} puzzles x 50 steps "
              f"(budget 120 s), top margin solves {100 * solved:.1f}%")


if __name__ == "__main__":
    main()
