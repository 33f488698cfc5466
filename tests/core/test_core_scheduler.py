"""Many experiments at once: --jobs 1 and --jobs 2 give the same result JSON, whole and
mapped experiments share one executor, a failing cell fails only its experiment, a second run
reports every cell cached, and the docstring examples of the cells modules run."""

from __future__ import annotations

import doctest
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from icml25.core import Outcome, experiment
from icml25.core.cells import Cell, InlineExecutor, ProcessExecutor
from icml25.core.registry import unregister

SRC = str(Path(__file__).resolve().parents[2] / "src")


def noisy_mean(n: int, rng: np.random.Generator) -> float:
    return float(rng.normal(size=n).mean())


def fragile(i: int) -> int:
    if i == 2:
        raise ValueError("cell two is broken")
    return i


def toy_cells(ctx):
    got = ctx.map(noisy_mean, [Cell(("n", i), (ctx.settings["n"] * (i + 1),))
                               for i in range(ctx.settings["cells"])])
    return Outcome(data={"means": list(got.values())})


def toy_whole(ctx):
    return Outcome(data={"draw": ctx.rng.normal(size=ctx.settings["n"]).tolist()})


def toy_fragile(ctx):
    return Outcome(data=ctx.map(fragile, [Cell(i, (i,)) for i in range(4)]))


@pytest.fixture()
def toys():
    """Registered for one test only (module-level functions: workers import them by name)."""
    experiment("toycells-map", subsystem="toycells", paper="Toy", reproduces="a mapped sweep",
               quick={"n": 50, "cells": 5}, cells=True)(toy_cells)
    experiment("toycells-whole", subsystem="toycells", paper="Toy", reproduces="one draw",
               quick={"n": 5})(toy_whole)
    experiment("toycells-fragile", subsystem="toycells", paper="Toy",
               reproduces="one broken cell", quick={}, cells=True)(toy_fragile)
    names = ["toycells-map", "toycells-whole", "toycells-fragile"]
    yield names
    for name in names:
        unregister(name)


def _numbers(root: Path, name: str) -> dict:
    data = json.loads((root / name / "result.json").read_text())
    for volatile in ("wall_time_s", "started_at"):
        data.pop(volatile)
    return data


def test_whole_and_mapped_experiments_share_the_executor(tmp_path, toys):
    from icml25.core.registry import _REGISTRY
    from icml25.core.scheduler import run_many

    exps = [_REGISTRY[n] for n in toys]
    one = run_many(exps, mode="quick", seed=1, out_root=tmp_path / "a",
                   executor=InlineExecutor())
    with ProcessExecutor(2) as ex:
        two = run_many(exps, mode="quick", seed=1, out_root=tmp_path / "b", executor=ex)
    for a, b in zip(one, two, strict=True):
        assert a.result.data == b.result.data and a.result.status == b.result.status
    cells, whole, broken = two
    assert (cells.cells_total, whole.cells_total, broken.cells_total) == (5, 1, 4)
    assert broken.result.status == "failed" and broken.cells_failed == 1
    assert "cell 2" in broken.result.error and "cell two is broken" in broken.result.error
    assert cells.result.status == whole.result.status == "ok"
    again = run_many(exps, mode="quick", seed=1, out_root=tmp_path / "b",
                     executor=InlineExecutor())
    assert [r.cells_cached for r in again] == [5, 1, 3]  # the broken cell runs again
    assert again[0].result.data == cells.result.data


def test_jobs_one_and_two_give_identical_result_json(tmp_path):
    """Every number of two quick reproductions, through the command line."""
    names = ["conformal-binomial", "worstoff-heatmaps"]
    env = dict(os.environ, PYTHONPATH=SRC, ICML25_NO_PROGRESS="1")
    for jobs in ("1", "2"):
        subprocess.run([sys.executable, "-m", "icml25.cli", "reproduce", *names, "--jobs", jobs,
                        "--out", str(tmp_path / jobs)], env=env, check=True,
                       capture_output=True)
    for name in names:
        assert _numbers(tmp_path / "1", name) == _numbers(tmp_path / "2", name)
    summary = json.loads((tmp_path / "2" / "summary.json").read_text())
    assert set(summary["experiments"]) == set(names)
    for row in summary["experiments"].values():
        assert {"cells_total", "cells_cached", "cells_failed", "wall_s"} <= set(row)
        assert row["cells_total"] == 1 and row["cells_cached"] == 0
    again = subprocess.run([sys.executable, "-m", "icml25.cli", "reproduce", *names, "--jobs",
                            "2", "--out", str(tmp_path / "2")], env=env, check=True,
                           capture_output=True, text=True)
    assert "cells: 2 (2 cached from an earlier run)" in again.stdout
    assert _numbers(tmp_path / "1", names[0]) == _numbers(tmp_path / "2", names[0])


@pytest.mark.parametrize("module", ["icml25.core.cells", "icml25.core.progress"])
def test_docstring_examples(module):
    import importlib

    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
