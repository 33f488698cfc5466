"""Cells: seeding that does not depend on the executor, the cache key, resume after SIGKILL,
a failing cell, local processes (with a worker that dies) and a Dask cluster on loopback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from icml25.core.cells import (
    Cell,
    CellCache,
    CellRunner,
    CellsFailed,
    InlineExecutor,
    ProcessExecutor,
    cache_key,
    cell_seed,
)

SRC = str(Path(__file__).resolve().parents[2] / "src")
HERE = str(Path(__file__).resolve().parent)


# Cell functions: module level, so worker processes import them by name.
def draw(n: int, rng: np.random.Generator) -> list[float]:
    """Seeded from (seed, key): the Generator and NumPy's global state."""
    return rng.normal(size=n).tolist() + np.random.random(2).tolist()  # noqa: NPY002


def fail_on(x: int, bad: int) -> int:
    if x == bad:
        raise ZeroDivisionError(f"cell {x} divides by zero")
    return x * x


def die_once(x: int, marker: str) -> tuple[int, int]:
    """Kill this worker the first time it runs (a worker lost mid-run)."""
    path = Path(marker)
    if not path.exists():
        path.write_text("killed")
        os.kill(os.getpid(), signal.SIGKILL)
    return x, os.getpid()


def slow_square(x: int, seconds: float) -> tuple[int, float]:
    time.sleep(seconds)
    return x * x, float(np.random.random())  # noqa: NPY002 - seeded per cell


def _cells(n: int = 6) -> list[Cell]:
    return [Cell(("draw", i), (3,)) for i in range(n)]


def test_cell_seed_is_a_function_of_seed_and_key_only():
    assert cell_seed(0, ("a", 1)) == cell_seed(0, ("a", 1))
    seeds = {cell_seed(s, k) for s in (0, 1) for k in (("a", 1), ("a", 2), "a")}
    assert len(seeds) == 6 and all(0 <= s < 2**63 for s in seeds)


def test_cache_key_changes_with_each_part_and_a_torn_file_is_a_miss(tmp_path):
    base = dict(experiment="e", settings={"n": 1}, seed=0, key=("c", 1), version="v1")
    k0 = cache_key(**base)
    variants = [dict(base, experiment="f"), dict(base, settings={"n": 2}), dict(base, seed=1),
                dict(base, key=("c", 2)), dict(base, version="v2")]
    cache = CellCache(tmp_path)
    paths = {cache.path(k0)} | {cache.path(cache_key(**v)) for v in variants}
    assert len(paths) == 6  # every part of the key separates cells
    assert cache_key(**dict(base, settings={"n": 1})) == k0  # equal settings, equal key
    cache.put(k0, {"x": 1})
    assert cache.get(k0) == (True, {"x": 1})
    cache.path(k0).write_bytes(b"\x80torn")  # a write cut short by a crash
    assert cache.get(k0) == (False, None)
    assert not list(tmp_path.glob("*.tmp"))


def test_local_processes_give_the_numbers_of_one_process(tmp_path):
    one = CellRunner(InlineExecutor()).map("e", {}, 7, draw, _cells())
    with ProcessExecutor(2) as ex:
        two = CellRunner(ex).map("e", {}, 7, draw, list(reversed(_cells())))
    assert one == two and list(two) == [c.key for c in reversed(_cells())]
    other = CellRunner().map("e", {}, 8, draw, _cells())
    assert other != one  # the run's seed matters


def test_failing_cell_is_reported_with_key_and_traceback_and_others_are_kept(tmp_path):
    runner = CellRunner(cache_root=tmp_path)
    cells = [Cell(i, (i, 2)) for i in range(4)]
    with pytest.raises(CellsFailed) as info:
        runner.map("e", {}, 0, fail_on, cells)
    assert [f.key for f in info.value.failures] == [2]
    assert "ZeroDivisionError: cell 2 divides by zero" in str(info.value)
    assert runner.stats["e"].failed == 1 and runner.stats["e"].done == 4
    again = CellRunner(cache_root=tmp_path)
    got = again.map("e", {}, 0, fail_on, cells, allow_failures=True)
    assert got == {0: 0, 1: 1, 3: 9} and again.stats["e"].cached == 3


def test_a_worker_that_dies_has_its_cell_rerun(tmp_path):
    marker = tmp_path / "killed"
    with ProcessExecutor(2) as ex:
        got = CellRunner(ex).map("e", {}, 0, die_once,
                                 [Cell(i, (i, str(marker))) for i in range(4)])
        assert ex.restarts >= 1
    assert marker.exists() and sorted(v[0] for v in got.values()) == [0, 1, 2, 3]


RESUME = textwrap.dedent("""
    import sys, time
    sys.path[:0] = [{src!r}, {here!r}]
    from icml25.core.cells import Cell, CellRunner
    from test_core_cells import slow_square
    runner = CellRunner(cache_root={cache!r})
    got = runner.map("e", {{}}, 0, slow_square, [Cell(i, (i, {sec})) for i in range(8)])
    print(runner.stats["e"].cached, sorted(got.items()))
""")


def test_resume_after_sigkill_computes_only_missing_cells(tmp_path):
    cache = tmp_path / "cache"
    script = RESUME.format(src=SRC, here=HERE, cache=str(cache), sec=0.4)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while len(list(cache.glob("*/*.pkl"))) < 3 and time.time() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    kept = len(list(cache.glob("*/*.pkl")))
    assert 3 <= kept < 8
    resumed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                             check=True).stdout
    fresh = subprocess.run([sys.executable, "-c", RESUME.format(
        src=SRC, here=HERE, cache=str(tmp_path / "other"), sec=0.0)],
        capture_output=True, text=True, check=True).stdout
    cached, _, values = resumed.partition(" ")
    assert int(cached) == kept  # only the missing cells ran
    assert values == fresh.partition(" ")[2]  # and the numbers are those of one clean run


# ---------------------------------------------------------------- Dask on loopback

def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture()
def dask_cluster(tmp_path):
    """A scheduler and two single-thread workers, each its own process, on 127.0.0.1."""
    pytest.importorskip("distributed")
    bindir = Path(sys.executable).parent
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([SRC, HERE]), OMP_NUM_THREADS="1",
               DASK_DISTRIBUTED__WORKER__DAEMON="False")
    log = (tmp_path / "dask.log").open("w")
    procs = [subprocess.Popen([str(bindir / "dask"), "scheduler", "--host", "127.0.0.1",
                               "--port", str(port), "--no-dashboard"], env=env, stdout=log,
                              stderr=subprocess.STDOUT)]
    for i in range(2):
        procs.append(subprocess.Popen(
            [str(bindir / "dask"), "worker", address, "--nthreads", "1", "--no-nanny",
             "--no-dashboard", "--name", f"w{i}", "--local-directory", str(tmp_path / f"w{i}")],
            env=env, stdout=log, stderr=subprocess.STDOUT))
    from distributed import Client

    try:
        with Client(address, timeout=60) as client:
            client.wait_for_workers(2, timeout=60)
        yield address, procs[1:]
    finally:
        for p in reversed(procs):  # nothing to keep: no graceful shutdown to wait for
            if p.poll() is None:
                p.kill()
            p.wait(timeout=20)
        log.close()


def test_dask_cluster_survives_a_killed_worker_and_matches_local(dask_cluster, tmp_path):
    from icml25.core.cells import DaskExecutor

    address, workers = dask_cluster
    cells = [Cell(i, (i, 0.5)) for i in range(8)]
    local = CellRunner().map("e", {}, 3, slow_square, cells)
    with DaskExecutor(address) as ex:
        runner = CellRunner(ex, cache_root=tmp_path / "cache")
        killer_done = []

        def kill_one(name, stats):
            if stats.done - stats.cached >= 1 and not killer_done:
                killer_done.append(True)
                workers[0].send_signal(signal.SIGKILL)  # a worker lost mid-run

        runner.on_change = kill_one
        remote = runner.map("e", {}, 3, slow_square, cells)
        assert killer_done and workers[0].wait(timeout=10) == -signal.SIGKILL
        assert remote == local and runner.stats["e"].failed == 0
        again = CellRunner(ex, cache_root=tmp_path / "cache")
        assert again.map("e", {}, 3, slow_square, cells) == local
        assert again.stats["e"].cached == 8


@pytest.mark.slow
def test_reproduce_through_dask_equals_local_and_resumes(dask_cluster, tmp_path):
    """The CLI end to end: two quick experiments on the cluster (one worker killed mid-run)
    give the local result JSON; a second run reports every cell cached."""
    address, workers = dask_cluster
    names = ["conformal-binomial", "worstoff-figure1"]
    env = dict(os.environ, PYTHONPATH=SRC, ICML25_NO_PROGRESS="1")
    cmd = [sys.executable, "-m", "icml25.cli", "reproduce", *names]
    subprocess.run(cmd + ["--jobs", "1", "--out", str(tmp_path / "local")], env=env,
                   check=True, capture_output=True)
    proc = subprocess.Popen(cmd + ["--executor", address, "--out", str(tmp_path / "dask")],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    time.sleep(4)
    workers[0].send_signal(signal.SIGKILL)
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, out
    for name in names:
        assert _numbers(tmp_path / "local", name) == _numbers(tmp_path / "dask", name)
    again = subprocess.run(cmd + ["--executor", address, "--out", str(tmp_path / "dask")],
                           env=env, capture_output=True, text=True, check=True)
    summary = json.loads((tmp_path / "dask" / "summary.json").read_text())
    assert all(e["cells_cached"] == e["cells_total"] for e in summary["experiments"].values())
    assert "2 cached" in again.stdout


def _numbers(root: Path, name: str) -> dict:
    data = json.loads((root / name / "result.json").read_text())
    for volatile in ("wall_time_s", "started_at"):
        data.pop(volatile)
    return data
