"""Remasking and threshold decoding on the shipped Sudoku MDM, against plain top margin.

``remask``: held-out easy and hard puzzles (seeds 2 and 3, as ``reproduce mdm-sudoku``), plain
top margin against each ReMDM schedule (same model, same steps, same puzzles), at 50 steps (the
paper's budget) and at fewer. ``threshold``: held-out easy puzzles, puzzles solved against the
forward passes spent -- fixed-K top margin at several step counts beside Fast-dLLM threshold
decoding (steps 81 is only an upper bound there; the passes are counted). Schedules are the
``--remask`` strings (paced, the default); ``cap:0.05/unpaced`` is the same schedule with
ReMDM's count rule alone, as measured before pacing.

Run (niced, one thread, in the background)::

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python benchmarks/mdm_decoding_study.py remask \\
        --n 300 --out data/mdm/remask.json
    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python benchmarks/mdm_decoding_study.py threshold \\
        --n 1000 --out data/mdm/threshold.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import numpy as np
import torch

from icml25.core.stats import clopper_pearson
from icml25.mdm import sudoku
from icml25.mdm.remask import check_remask
from icml25.mdm.sudoku_mdm import load_model, solve_grids

REMASKS = "none,cap,rescale,conf"
FIXED_STEPS = "10,20,50"
THRESHOLDS = "0.9,0.7"


def row(puzzles, grids, used, seconds, **fields):
    ok = sudoku.is_solution_of(puzzles, grids)
    lo, hi = clopper_pearson(int(ok.sum()), len(ok))
    return fields | {"solved": float(ok.mean()), "ci": [lo, hi], "n": len(ok),
                     "solved_ids": np.flatnonzero(ok).tolist(),
                     "forward_passes_mean": float(np.mean(used)), "seconds": seconds}


def schedule_of(spec: str):
    """``none``, a ``--remask`` string, or one with ``/unpaced`` appended (ReMDM's count rule
    alone, as every schedule was before pacing became the default)."""
    if spec == "none":
        return None
    name, _, flag = spec.partition("/")
    if flag not in ("", "unpaced"):
        raise SystemExit(f"unknown flag {flag!r} in {spec!r} (only /unpaced)")
    schedule = check_remask(name)
    return dataclasses.replace(schedule, paced=False) if flag else schedule


def run(model, puzzles, **kw):
    t0 = time.perf_counter()
    grids, used, _ = solve_grids(model, puzzles, return_info=True, **kw)
    return grids, used, round(time.perf_counter() - t0, 2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("study", choices=["remask", "threshold"])
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--steps", default="50,20", help="remask: step counts")
    ap.add_argument("--remasks", default=REMASKS,
                    help="remask: schedules (none = plain; 'cap:0.05/unpaced' = without pacing)")
    ap.add_argument("--fixed-steps", default=FIXED_STEPS, help="threshold: fixed-K step counts")
    ap.add_argument("--thresholds", default=THRESHOLDS)
    ap.add_argument("--easy-seed", type=int, default=2, help="held-out easy puzzles' seed")
    ap.add_argument("--hard-seed", type=int, default=3, help="held-out hard puzzles' seed")
    ap.add_argument("--levels", default="easy,hard", help="remask: puzzle levels")
    ap.add_argument("--out", type=Path, required=True, help="JSON, rewritten after every row")
    args = ap.parse_args()
    torch.set_num_threads(1)
    model = load_model()
    rows = []

    def add(r):
        rows.append(r)
        print(json.dumps({k: v for k, v in r.items() if k != "solved_ids"}), flush=True)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"study": args.study, "n": args.n, "rows": rows},
                                       indent=1))

    if args.study == "remask":
        seeds = {"easy": args.easy_seed, "hard": args.hard_seed}
        for level in args.levels.split(","):
            seed = seeds[level]
            puzzles, _ = sudoku.generate_dataset(args.n, seed=seed, difficulty=level)
            for steps in (int(s) for s in args.steps.split(",")):
                for remask in args.remasks.split(","):
                    schedule = schedule_of(remask)
                    add(row(puzzles, *run(model, puzzles, steps=steps, remask=schedule),
                            level=level, seed=seed, steps=steps, remask=remask))
    else:
        puzzles, _ = sudoku.generate_dataset(args.n, seed=args.easy_seed)
        fixed = [int(s) for s in args.fixed_steps.split(",") if s]
        thresholds = [float(t) for t in args.thresholds.split(",") if t]
        # interleaved, so that an interrupted run still has both kinds of row
        for i in range(max(len(fixed), len(thresholds))):
            if i < len(thresholds):
                add(row(puzzles, *run(model, puzzles, steps=81, threshold=thresholds[i]),
                        decoder="threshold", threshold=thresholds[i], steps=81))
            if i < len(fixed):
                add(row(puzzles, *run(model, puzzles, steps=fixed[i]), decoder="fixed K",
                        steps=fixed[i]))


if __name__ == "__main__":
    main()
