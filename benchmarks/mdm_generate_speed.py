"""``generate``-based Sudoku solving against the sampler it replaced, side by side in one run.

The old sampler and planners are read from git (``--base``, default d5a7074, the commit before
``icml25.mdm.generate``) into a private module, so both decoders run in this process on the same
shipped model, the same held-out easy puzzles, the same batch size and the same thread count,
interleaved over ``--repeats``. Reports each one's solve rate and seconds, and the speed ratio
(old seconds / new seconds; >= 0.9 is the target).

Run: ``OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python benchmarks/mdm_generate_speed.py --n 300``
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import types
from pathlib import Path

import numpy as np
import torch

from icml25.mdm import sudoku
from icml25.mdm.sampler import sample
from icml25.mdm.sudoku_mdm import MASK, SOLVE_BATCH, load_model

ROOT = Path(__file__).resolve().parents[1]


def old_sampler(base: str):
    """The ``sample`` of commit ``base``, importing that commit's planners."""
    mods = {}
    for name in ("planners", "sampler"):
        src = subprocess.run(["git", "-C", str(ROOT), "show", f"{base}:src/icml25/mdm/{name}.py"],
                             check=True, capture_output=True, text=True).stdout
        src = src.replace("from icml25.mdm.planners import", "from _old_planners import")
        mod = types.ModuleType(f"_old_{name}")
        sys.modules[f"_old_{name}"] = mod
        exec(compile(src, f"{base}:{name}.py", "exec"), mod.__dict__)
        mods[name] = mod
    return mods["sampler"].sample


def solve(fn, model, puzzles, batch, steps, planner):
    gen = torch.Generator().manual_seed(0)
    out = []
    for start in range(0, len(puzzles), batch):
        p = torch.from_numpy(puzzles[start:start + batch].astype(np.int64))
        out.append(fn(model, p, p == 0, steps=steps, planner=planner, mask_id=MASK,
                      generator=gen).numpy())
    return np.concatenate(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--base", default="d5a7074")
    ap.add_argument("--planner", default="top_margin")
    args = ap.parse_args()
    model = load_model()
    puzzles, _ = sudoku.generate_dataset(args.n, seed=2)  # the held-out easy seed
    fns = {"old": old_sampler(args.base), "new": sample}
    times = {k: [] for k in fns}
    solved = {}
    for _ in range(args.repeats):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            grids = solve(fn, model, puzzles, SOLVE_BATCH, args.steps, args.planner)
            times[name].append(time.perf_counter() - t0)
            solved[name] = float(np.mean(sudoku.is_solution_of(puzzles, grids)))
    best = {k: min(v) for k, v in times.items()}
    for name in fns:
        print(f"{name}: {args.planner} solves {100 * solved[name]:.1f}% of {args.n} puzzles; "
              f"best of {args.repeats}: {best[name]:.2f} s ({args.steps} steps, batch "
              f"{SOLVE_BATCH}, {torch.get_num_threads()} thread(s))")
    print(f"speed ratio old/new: {best['old'] / best['new']:.3f} (target >= 0.9)")


if __name__ == "__main__":
    main()
