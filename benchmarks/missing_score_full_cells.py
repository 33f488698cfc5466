"""Run the missing_score ``--full`` reproductions cell by cell, keeping every finished cell in
the repository (``data/missing_score/full_cells/<experiment>/level<i>_rep<r>.json``, its key
being the experiment's full settings, the seed and the job), and print the claims' verdicts
from the cells finished so far.

A cell is one data set (one level of the swept quantity, one repetition) with every method
fitted on it; cells are independent of each other, so the run stops and resumes anywhere.
The cells run on the core's executor (``--jobs N`` local processes, or ``--executor
tcp://HOST:PORT`` for a Dask cluster), exactly as ``icml25 reproduce missing_score --full
--jobs N`` runs them; that command reads the same cells when
``ICML25_MISSING_SCORE_CELLS=data/missing_score/full_cells`` is set. This script only adds
the partial runs (``--levels``, ``--budget-min``) and ``--summary``.

    nice -n 10 .venv/bin/python benchmarks/missing_score_full_cells.py --jobs 2 \\
        --experiment missing_score-truncated-gaussian --levels 0 --budget-min 60
    .venv/bin/python benchmarks/missing_score_full_cells.py --summary   # verdicts so far
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

NAMES = ("missing_score-truncated-gaussian", "missing_score-dimension-sweep",
         "missing_score-star-auc")


def run(name: str, cells: Path, *, seed: int, cached_only: bool, levels, deadline,
        runner=None):
    from icml25.core import load_experiments, seed_everything, select
    from icml25.core.registry import RunContext

    load_experiments()
    (exp,) = select([name])
    s = dict(exp.settings("full"), cells_dir=str(cells / name), cached_only=cached_only,
             levels=levels, deadline=deadline)
    out = Path(tempfile.mkdtemp(prefix="ms_full_"))
    return exp.func(RunContext(exp, "full", seed, s, out, seed_everything(seed), runner=runner))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--experiment", nargs="+", default=list(NAMES), choices=NAMES)
    ap.add_argument("--cells", default="data/missing_score/full_cells")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--levels", type=int, nargs="+", default=None,
                    help="compute only these level indices (n, missingness or d)")
    ap.add_argument("--budget-min", type=float, default=None,
                    help="start no new cell after this many minutes")
    ap.add_argument("--summary", action="store_true", help="finished cells only, compute none")
    ap.add_argument("--jobs", type=int, default=None,
                    help="local worker processes (default: the cores available)")
    ap.add_argument("--executor", default=None, help="a Dask scheduler address")
    a = ap.parse_args()
    import torch

    from icml25.core.cells import CellRunner, make_executor

    torch.set_num_threads(1)
    t0 = time.time()
    deadline = None if a.budget_min is None else t0 + 60 * a.budget_min
    with make_executor(a.jobs, a.executor) as executor:
        runner = CellRunner(executor)
        for name in a.experiment:
            _report(name, run(name, Path(a.cells), seed=a.seed, cached_only=a.summary,
                              levels=a.levels, deadline=deadline, runner=runner))


def _report(name, outcome) -> None:
    print(f"\n== {name} ==  {' '.join(outcome.notes[:1])}")
    for c in outcome.comparisons:
        print(f"  {c.quantity}: ours {c.ours} | paper {c.published} | {c.verdict}"
              + (f"  ({c.note})" if c.note else ""))
    print("  data:", json.dumps(dict(outcome.data))[:2000])


if __name__ == "__main__":
    main()
