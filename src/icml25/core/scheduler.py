"""Running many experiments at once: each experiment is a cell, or maps its own cells.

An experiment registered without ``cells=True`` runs whole, as one cell on the executor (its
result and figures come back to the output folder). One registered with ``cells=True`` runs
in a thread of this process and its :meth:`RunContext.map` sends its cells to the same
executor; the parts of those experiments that run here take turns (one at a time), so
plotting and torch's global settings are never touched by two threads at once.

Whole experiments are cached like cells (key: experiment, settings, seed, code version), so a
second run with the same arguments reports them cached and rewrites their files.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import pickle
import tempfile
import threading
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from icml25.core.cells import (
    CACHE_DIR,
    CellCache,
    CellRunner,
    CellStats,
    Done,
    Executor,
    InlineExecutor,
    Task,
    cache_key,
    function_version,
)
from icml25.core.records import ExperimentResult
from icml25.core.registry import Experiment, rerun_command, run_experiment

WHOLE = "__experiment__"  # the cell key of a whole experiment
PARK_S = 20.0  # how long whole experiments wait for the mapped ones to submit their cells
SUMMARY = "summary.json"


@dataclasses.dataclass
class RunRecord:
    """One experiment of a run: its result and its cells' counts and wall time."""

    result: ExperimentResult
    cells_total: int = 0
    cells_cached: int = 0
    cells_failed: int = 0
    wall_s: float = 0.0

    def summary(self) -> dict[str, Any]:
        return {"status": self.result.status, "cells_total": self.cells_total,
                "cells_cached": self.cells_cached, "cells_failed": self.cells_failed,
                "wall_s": round(self.wall_s, 3)}


def run_whole(exp: Experiment, mode: str, seed: int, out_root: str | None) -> dict[str, Any]:
    """Run one experiment in this process (a worker's task; ``exp`` travels by reference to
    its module-level function).

    With ``out_root`` None (a worker that may not share the file system) it runs into a
    temporary folder and returns its files' bytes; otherwise it writes ``out_root/<name>/``.

    Returns
    -------
    dict
        ``{"result": ExperimentResult as a dict, "files": {file name: bytes} or None}``.
    """
    name = exp.name
    with contextlib.ExitStack() as stack:
        root = Path(out_root) if out_root else Path(stack.enter_context(
            tempfile.TemporaryDirectory(prefix="icml25-")))
        result = run_experiment(exp, mode=mode, seed=seed, out_root=root)
        files = None if out_root else _read_files(root / name)
    return {"result": result.to_dict(), "files": files}


def _read_files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def _write_files(folder: Path, files: dict[str, bytes]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.png"):
        old.unlink()
    for fname, data in files.items():
        tmp = folder / f".{fname}.tmp"
        tmp.write_bytes(data)
        os.replace(tmp, folder / fname)


def expected_seconds(exp: Experiment, out_root: Path) -> float:
    """How long ``exp`` took last time in ``out_root`` (0 when unknown): the longest go first."""
    try:
        return float(json.loads((out_root / exp.name / "result.json").read_text())
                     .get("wall_time_s", 0.0))
    except (OSError, ValueError, AttributeError):
        return EXPECTED_QUICK_S.get(exp.name, 0.0) if exp.quick else 0.0


# Single-thread wall seconds of --quick experiments measured on the 2-core development machine
# (benchmarks/RESULTS.md); only the order in which a fresh output folder starts the whole
# experiments (longest first) depends on these. Unlisted ones follow, in registry order.
EXPECTED_QUICK_S: dict[str, float] = {
    "mdm-sudoku": 190.3, "creativity-discovery": 89.2, "creativity-construction": 53.3,
}


class RunView:
    """The interface the scheduler reports to (see :class:`icml25.core.progress.LiveView`)."""

    def start(self, names: list[str], executor: str) -> None: ...
    def started(self, name: str) -> None: ...
    def cells(self, name: str, stats: CellStats) -> None: ...
    def finished(self, name: str, record: RunRecord) -> None: ...
    def stop(self) -> None: ...


def run_many(exps: list[Experiment], *, mode: str, seed: int, out_root: str | Path,
             executor: Executor | None = None, fresh: bool = False,
             view: RunView | None = None) -> list[RunRecord]:
    """Run experiments on ``executor``: whole ones as cells, mapped ones' cells as cells.

    Parameters
    ----------
    exps : list of Experiment
        What to run (results are returned in this order).
    mode : {"quick", "full"}
    seed : int
    out_root : path
        The output folder; finished cells are kept in ``<out_root>/.cells``.
    executor : Executor, optional
        Default: this process, one after the other.
    fresh : bool, default=False
        Recompute cached cells.
    view : RunView, optional
        Progress reports.

    Returns
    -------
    list of RunRecord
    """
    out_root = Path(out_root)
    out_root.mkdir(parents=True, exist_ok=True)
    executor = executor or InlineExecutor()
    view = view or RunView()
    runner = CellRunner(executor, cache_root=out_root / CACHE_DIR, fresh=fresh,
                        on_change=view.cells)
    records: dict[str, RunRecord] = {}
    view.start([e.name for e in exps], executor.description)
    try:
        if isinstance(executor, InlineExecutor):
            for exp in exps:  # one after the other, in the order asked
                view.started(exp.name)
                rec = (_run_mapped(exp, mode, seed, out_root, runner) if exp.cells
                       else _run_whole_here(exp, mode, seed, out_root, fresh))
                records[exp.name] = rec
                view.finished(exp.name, rec)
        else:
            _run_parallel(exps, mode, seed, out_root, executor, runner, fresh, view, records)
    finally:
        view.stop()
    return [records[e.name] for e in exps if e.name in records]


def _whole_cache(exp: Experiment, mode: str, seed: int, out_root: Path) -> tuple[CellCache, dict]:
    key = cache_key(exp.name, dict(exp.settings(mode), mode=mode), seed, WHOLE,
                    function_version(exp.func))
    return CellCache(out_root / CACHE_DIR / exp.name), key


def _cached_whole(exp, mode, seed, out_root, fresh) -> RunRecord | None:
    cache, key = _whole_cache(exp, mode, seed, out_root)
    hit, value = (False, None) if fresh else cache.get(key)
    if not hit:
        return None
    _write_files(out_root / exp.name, value["files"])
    return RunRecord(ExperimentResult.from_dict(value["result"]), 1, 1, 0, 0.0)


def _settle_whole(exp, mode, seed, out_root, done: Done, shipped: bool) -> RunRecord:
    folder = out_root / exp.name
    if done.ok:
        if shipped:
            _write_files(folder, done.value["files"])
        result = ExperimentResult.from_dict(done.value["result"])
    else:  # the worker itself was lost (or the task could not be sent): record it as failed
        result = ExperimentResult(
            name=exp.name, subsystem=exp.subsystem, paper=exp.paper,
            reproduces=exp.reproduces, mode=mode, seed=seed, settings=exp.settings(mode),
            command=rerun_command(exp.name, mode, seed), status="failed", error=done.error,
            started_at=datetime.now(UTC).isoformat(timespec="seconds"))
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "result.json").write_text(result.to_json())
    if result.status == "ok":
        cache, key = _whole_cache(exp, mode, seed, out_root)
        cache.put(key, {"result": result.to_dict(), "files": _read_files(folder)},
                  wall_s=result.wall_time_s)
    return RunRecord(result, 1, 0, int(result.status != "ok"), result.wall_time_s)


def _whole_task(exp: Experiment, mode: str, seed: int, out_root: Path, ship: bool) -> Task:
    return Task(run_whole, (exp, mode, seed, None if ship else str(out_root)),
                seed=None, seed_torch="torch" in exp.requires)


def _portable(exp: Experiment) -> bool:
    """Whether a worker process can receive ``exp`` (its function importable by name)."""
    try:
        pickle.dumps(exp)
    except Exception:  # noqa: BLE001 - local functions, lambdas: pickling says which
        return False
    return True


def _run_whole_here(exp, mode, seed, out_root, fresh) -> RunRecord:
    from icml25.core.cells import execute

    rec = _cached_whole(exp, mode, seed, out_root, fresh)
    if rec is not None:
        return rec
    done = execute(_whole_task(exp, mode, seed, out_root, ship=False))
    return _settle_whole(exp, mode, seed, out_root, done, shipped=False)


def _run_mapped(exp, mode, seed, out_root, runner: CellRunner) -> RunRecord:
    t0 = time.perf_counter()
    result = run_experiment(exp, mode=mode, seed=seed, out_root=out_root, runner=runner)
    stats = runner.stats_for(exp.name)
    return RunRecord(result, stats.total, stats.cached, stats.failed, time.perf_counter() - t0)


def _run_parallel(exps, mode, seed, out_root, executor, runner, fresh, view, records) -> None:
    import concurrent.futures as cf

    ship = executor.remote
    threads, errors = [], []

    def mapped(exp: Experiment, parked: threading.Event) -> None:
        runner._local.parked = parked
        try:
            with runner.serial_section():
                view.started(exp.name)
                rec = _run_mapped(exp, mode, seed, out_root, runner)
            records[exp.name] = rec
            view.finished(exp.name, rec)
        except BaseException:  # noqa: BLE001 - run_experiment records its own errors
            errors.append(traceback.format_exc())
        finally:
            parked.set()

    # Mapped experiments first: their cells are usually the longest work, so they enter the
    # queue before the whole experiments (waiting at most PARK_S for them to get there).
    events = []
    for exp in (e for e in exps if e.cells):
        parked = threading.Event()
        th = threading.Thread(target=mapped, args=(exp, parked), daemon=True,
                              name=f"icml25-{exp.name}")
        th.start()
        threads.append(th)
        events.append(parked)
    until = time.monotonic() + PARK_S
    for ev in events:
        ev.wait(max(0.0, until - time.monotonic()))
    whole = sorted((e for e in exps if not e.cells),
                   key=lambda e: -expected_seconds(e, out_root))
    futures, here = {}, []
    for exp in whole:
        rec = _cached_whole(exp, mode, seed, out_root, fresh)
        if rec is not None:
            records[exp.name] = rec
            view.finished(exp.name, rec)
        elif _portable(exp):
            futures[exp.name] = executor.submit(_whole_task(exp, mode, seed, out_root, ship))
            view.started(exp.name)
        else:  # defined where a worker cannot import it (inside a function): run it here
            here.append(exp)
    for exp in here:
        with runner.serial_section():
            view.started(exp.name)
            records[exp.name] = _run_whole_here(exp, mode, seed, out_root, fresh)
            view.finished(exp.name, records[exp.name])
    by_future = {fut: name for name, fut in futures.items()}
    exp_of = {e.name: e for e in exps}
    for fut in cf.as_completed(by_future):
        name = by_future[fut]
        rec = _settle_whole(exp_of[name], mode, seed, out_root, fut.result(), shipped=ship)
        records[name] = rec
        view.finished(name, rec)
    for th in threads:
        while th.is_alive():
            th.join(0.2)  # short waits: Ctrl-C reaches the main thread
    if errors:
        raise RuntimeError("\n".join(errors))


def write_summary(out_root: str | Path, records: list[RunRecord], *, mode: str, seed: int,
                  executor: str, wall_s: float) -> Path:
    """Merge this run's experiments into ``<out_root>/summary.json`` and write it atomically.

    Per experiment: ``status``, ``cells_total``, ``cells_cached``, ``cells_failed``,
    ``wall_s`` (this run's seconds); ``last_run`` says how the latest run ran.
    """
    path = Path(out_root) / SUMMARY
    try:
        old = json.loads(path.read_text()).get("experiments", {})
    except (OSError, ValueError, AttributeError):
        old = {}
    experiments = dict(old)
    experiments.update({r.result.name: r.summary() for r in records})
    doc = {"experiments": dict(sorted(experiments.items())),
           "last_run": {"mode": mode, "seed": seed, "executor": executor,
                        "wall_s": round(wall_s, 3),
                        "experiments": [r.result.name for r in records],
                        "cells_total": sum(r.cells_total for r in records),
                        "cells_cached": sum(r.cells_cached for r in records),
                        "cells_failed": sum(r.cells_failed for r in records),
                        "finished_at": datetime.now(UTC).isoformat(timespec="seconds")}}
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=2))
    os.replace(tmp, path)
    return path

