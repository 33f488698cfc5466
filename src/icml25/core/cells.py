"""Cells: an experiment's independent units of work, run on an executor, cached and seeded.

An experiment declares its cells (a key, a pure function and its arguments) and maps them
through its run context (:meth:`icml25.core.RunContext.map`). The core then

- seeds each cell from ``(seed, cell key)`` alone (:func:`cell_seed`), so one process, N local
  processes or a Dask cluster give the same numbers;
- pins the threads inside a cell to one (``torch``, OpenMP and BLAS pools), so N cells never
  oversubscribe N cores;
- caches each finished cell under its key (experiment, settings, seed, cell key, code
  version) in the output folder, written atomically, so an interrupted run resumes with the
  missing cells only;
- reports a failing cell with its key and traceback and lets the other cells finish.

Executors: :class:`ProcessExecutor` (local processes, ``--jobs N``; a worker that dies has its
cells resubmitted) and :class:`DaskExecutor` (a Dask distributed scheduler, ``--executor
tcp://HOST:PORT`` or ``ICML25_EXECUTOR``; Dask reruns the cells of a lost worker).
"""

from __future__ import annotations

import abc
import concurrent.futures as cf
import contextlib
import dataclasses
import functools
import hashlib
import inspect
import json
import multiprocessing
import os
import pickle
import queue
import sys
import threading
import time
import traceback
from collections.abc import Callable, Hashable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from icml25.core.records import to_jsonable
from icml25.core.seeding import seed_everything

EXECUTOR_ENV = "ICML25_EXECUTOR"
CACHE_DIR = ".cells"  # under the output folder: <out>/.cells/<experiment>/<hash>.pkl
THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
              "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")
MAX_RETRIES = 3  # how often a cell is resubmitted after its worker died


@dataclasses.dataclass(frozen=True)
class Cell:
    """One independent unit of work: ``fn(*args, **kwargs)`` identified by ``key``.

    Parameters
    ----------
    key : hashable
        What names the cell inside its experiment, e.g. ``("n=100", 3)``; made of strings,
        numbers, booleans and tuples of them. It seeds the cell and keys its cache entry.
    args : tuple, default=()
        Positional arguments of the experiment's cell function.
    kwargs : dict, default={}
        Keyword arguments of the cell function.

    Examples
    --------
    >>> Cell(("level", 0), (10,)).key
    ('level', 0)
    """

    key: Hashable
    args: tuple = ()
    kwargs: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class CellFailure:
    """A cell that raised: its key and the traceback text."""

    key: Hashable
    traceback: str


class CellsFailed(RuntimeError):
    """Raised by :meth:`RunContext.map` after every cell ran when some of them failed.

    Parameters
    ----------
    failures : list of CellFailure
        The failed cells, each with its key and traceback.
    """

    def __init__(self, failures: list[CellFailure]):
        self.failures = failures
        parts = [f"{len(failures)} cell(s) failed:"]
        parts += [f"--- cell {f.key!r}\n{f.traceback.rstrip()}" for f in failures]
        super().__init__("\n".join(parts))


# ---------------------------------------------------------------------------- keys, seeds

def canonical(value: Any) -> str:
    """The canonical JSON text of a key or settings (sorted keys, plain numbers).

    Examples
    --------
    >>> canonical({"b": (1, 2), "a": np.int64(3)})
    '{"a":3,"b":[1,2]}'
    """
    return json.dumps(to_jsonable(value), sort_keys=True, separators=(",", ":"))


def cell_seed(seed: int, key: Hashable) -> int:
    """The seed of the cell ``key`` of a run seeded ``seed``: a function of both alone.

    Parameters
    ----------
    seed : int
        The run's seed (``--seed``).
    key : hashable
        The cell's key.

    Returns
    -------
    int
        A seed in ``[0, 2**63)``.

    Examples
    --------
    >>> cell_seed(0, ("a", 1)) == cell_seed(0, ("a", 1)) != cell_seed(1, ("a", 1))
    True
    """
    digest = hashlib.sha256(canonical(key).encode()).digest()
    words = [int(seed)] + [int.from_bytes(digest[i:i + 4], "little") for i in range(0, 16, 4)]
    state = np.random.SeedSequence(words).generate_state(2, np.uint32)
    return int(state[0]) << 31 | int(state[1]) >> 1


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """A hash of the installed ``icml25`` package: every ``.py`` file's bytes and the names
    and sizes of its other files (shipped models, data). Part of every cache key, so an edit
    of the code recomputes what it may change.

    Examples
    --------
    >>> len(code_version())
    16
    """
    root = Path(__file__).resolve().parent.parent
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts:
            continue
        rel = path.relative_to(root).as_posix()
        h.update(rel.encode() + b"\0")
        h.update(path.read_bytes() if path.suffix == ".py" else str(path.stat().st_size).encode())
    return h.hexdigest()[:16]


def function_version(fn: Callable) -> str:
    """The code version a function's results depend on: :func:`code_version`, plus a hash of
    its module's file when it lives outside ``icml25`` (a user's own experiment).

    Examples
    --------
    >>> function_version(divmod) == code_version()
    True
    """
    while isinstance(fn, functools.partial):
        fn = fn.func
    module = getattr(fn, "__module__", None) or ""
    if module.split(".")[0] in ("icml25", "builtins", "math", "operator", "numpy"):
        return code_version()
    try:
        source = Path(inspect.getsourcefile(fn) or "").read_bytes()
    except (TypeError, OSError):
        return code_version()
    return code_version() + hashlib.sha256(source).hexdigest()[:8]


def cache_key(experiment: str, settings: dict, seed: int, key: Hashable,
              version: str | None = None) -> dict:
    """Everything a cell's result depends on.

    Examples
    --------
    >>> k = cache_key("demo", {"n": 3}, 0, ("a", 1), version="v1")
    >>> sorted(k)
    ['cell', 'code', 'experiment', 'seed', 'settings']
    """
    return json.loads(canonical({"experiment": experiment, "settings": settings, "seed": seed,
                                 "cell": key, "code": version or code_version()}))


class CellCache:
    """Finished cells as pickles under a folder, one file per key hash, written atomically.

    Parameters
    ----------
    folder : path
        Where the files go (``<out>/.cells/<experiment>``).

    Examples
    --------
    >>> import tempfile
    >>> cache = CellCache(tempfile.mkdtemp())
    >>> k = cache_key("demo", {}, 0, 1, version="v1")
    >>> cache.get(k)
    (False, None)
    >>> cache.put(k, [1, 2])
    >>> cache.get(k)
    (True, [1, 2])
    """

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)

    def path(self, key: dict) -> Path:
        return self.folder / (hashlib.sha256(canonical(key).encode()).hexdigest()[:32] + ".pkl")

    def get(self, key: dict) -> tuple[bool, Any]:
        """``(True, value)`` for a stored cell with exactly this key, else ``(False, None)``."""
        path = self.path(key)
        try:
            with path.open("rb") as fh:
                saved = pickle.load(fh)
        except Exception:  # noqa: BLE001 - absent, torn by a crash or unreadable: recompute
            return False, None
        if not isinstance(saved, dict) or saved.get("key") != key:
            return False, None
        return True, saved["value"]

    def put(self, key: dict, value: Any, **meta: Any) -> None:
        """Store ``value`` under ``key`` (a temporary file renamed over the target)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.path(key)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        with tmp.open("wb") as fh:
            pickle.dump({"key": key, "value": value, **meta}, fh,
                        protocol=pickle.HIGHEST_PROTOCOL)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)


# ------------------------------------------------------------------------ running one cell

@contextlib.contextmanager
def pinned_threads(n: int = 1) -> Iterator[None]:
    """Limit torch's intra-op threads and the OpenMP/BLAS pools to ``n`` inside the block.

    Examples
    --------
    >>> with pinned_threads(1):
    ...     pass
    """
    torch = sys.modules.get("torch")
    before = torch.get_num_threads() if torch is not None else None
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
        limits = contextlib.nullcontext()
    else:
        limits = threadpool_limits(limits=n)
    with limits:
        if torch is not None:
            torch.set_num_threads(n)
        try:
            yield
        finally:
            if before is not None:
                torch.set_num_threads(before)


@dataclasses.dataclass
class Task:
    """What a worker runs: ``fn(*args, **kwargs)`` seeded and pinned (picklable)."""

    fn: Callable
    args: tuple = ()
    kwargs: dict = dataclasses.field(default_factory=dict)
    seed: int | None = None  # None: the function seeds itself
    seed_torch: bool = False
    threads: int = 1


@dataclasses.dataclass
class Done:
    """What a worker sends back: the value, or the traceback, and the time taken."""

    ok: bool
    value: Any = None
    error: str = ""
    wall_s: float = 0.0
    cpu_s: float = 0.0


def _wants_rng(fn: Callable) -> bool:
    try:
        return "rng" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def execute(task: Task) -> Done:
    """Run one task here: seed, pin threads, call, time; an exception becomes a failed Done.

    Examples
    --------
    >>> execute(Task(divmod, (7, 2))).value
    (3, 1)
    >>> execute(Task(divmod, (7, 0))).ok
    False
    """
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        kwargs = dict(task.kwargs)
        if task.seed_torch:
            import torch  # noqa: F401 - imported before pinning, so its pool is pinned too
        with pinned_threads(task.threads):
            if task.seed is not None:
                rng = seed_everything(task.seed, torch=True if task.seed_torch else None)
                if "rng" not in kwargs and _wants_rng(task.fn):
                    kwargs["rng"] = rng
            value = task.fn(*task.args, **kwargs)
    except Exception:
        return Done(False, error=traceback.format_exc(),
                    wall_s=time.perf_counter() - t0, cpu_s=time.process_time() - c0)
    return Done(True, value, wall_s=time.perf_counter() - t0, cpu_s=time.process_time() - c0)


# ------------------------------------------------------------------------------- executors

def available_cores() -> int:
    """The cores this process may run on (its CPU affinity), at least 1.

    Examples
    --------
    >>> available_cores() >= 1
    True
    """
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


class Executor(abc.ABC):
    """Runs :class:`Task` objects; ``submit`` returns a ``concurrent.futures.Future`` of a
    :class:`Done`. Subclasses: :class:`InlineExecutor`, :class:`ProcessExecutor`,
    :class:`DaskExecutor`."""

    workers: int = 1
    description: str = ""
    remote: bool = False  # True when workers may not share this machine's file system

    @abc.abstractmethod
    def submit(self, task: Task) -> cf.Future:
        """Start ``task``; the future resolves to its :class:`Done`."""

    def close(self, wait: bool = True) -> None:  # noqa: B027 - a default: nothing to release
        """Release the workers (idempotent); ``wait=False`` does not wait for running tasks."""

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, exc_type, *exc) -> None:
        self.close(wait=exc_type is None)


class InlineExecutor(Executor):
    """Runs each task at once, in this process (``--jobs 1``).

    Examples
    --------
    >>> InlineExecutor().submit(Task(divmod, (7, 2))).result().value
    (3, 1)
    """

    workers = 1
    description = "this process"

    def submit(self, task: Task) -> cf.Future:
        fut: cf.Future = cf.Future()
        fut.set_result(execute(task))
        return fut


class ProcessExecutor(Executor):
    """Local worker processes (``spawn``), each running one task at a time on one thread.

    A worker that dies (killed, out of memory) breaks the pool: a fresh pool is started and
    every task that had not finished is resubmitted, up to ``MAX_RETRIES`` times each.

    Parameters
    ----------
    jobs : int, optional
        Worker processes; default: the cores this process may use.
    threads : int, default=1
        Threads inside each task (OpenMP/BLAS/torch pools are limited to it).

    Examples
    --------
    >>> with ProcessExecutor(1) as ex:
    ...     ex.submit(Task(divmod, (7, 2))).result().value
    (3, 1)
    """

    def __init__(self, jobs: int | None = None, *, threads: int = 1):
        jobs = available_cores() if jobs is None else jobs
        if not isinstance(jobs, int) or jobs < 1:
            raise ValueError(f"jobs must be a positive integer, got {jobs!r}")
        self.workers = jobs
        self.threads = threads
        self.description = f"{jobs} local process{'es' if jobs > 1 else ''}"
        self._lock = threading.Lock()
        self._generation = 0
        self._pool: cf.ProcessPoolExecutor | None = None
        self._retry: queue.Queue = queue.Queue()
        self._closed = False
        self._retrier = threading.Thread(target=self._resubmit_loop, daemon=True,
                                         name="icml25-cells-retry")
        self._retrier.start()
        self.restarts = 0  # pools replaced after a worker died
        # Workers (started on demand) inherit these before they import NumPy or torch: their
        # OpenMP/BLAS pools start at one thread. Restored by close().
        self._saved_env = {k: os.environ.get(k) for k in THREAD_ENV}
        os.environ.update({k: str(threads) for k in THREAD_ENV})

    def _new_pool(self) -> cf.ProcessPoolExecutor:
        return cf.ProcessPoolExecutor(self.workers,
                                      mp_context=multiprocessing.get_context("spawn"))

    def submit(self, task: Task) -> cf.Future:
        outer: cf.Future = cf.Future()
        self._submit(task, outer, 0)
        return outer

    def _submit(self, task: Task, outer: cf.Future, tries: int) -> None:
        with self._lock:
            if self._closed:
                outer.cancel()
                return
            if self._pool is None:
                self._pool = self._new_pool()
            generation, pool = self._generation, self._pool
            try:
                inner = pool.submit(execute, task)
            except cf.process.BrokenProcessPool:
                inner = cf.Future()
                inner.set_exception(cf.process.BrokenProcessPool("pool broken at submit"))
        inner.add_done_callback(
            lambda f: self._settle(f, task, outer, tries, generation))

    def _settle(self, inner: cf.Future, task: Task, outer: cf.Future, tries: int,
                generation: int) -> None:
        if inner.cancelled():
            outer.cancel()
            return
        exc = inner.exception()
        if isinstance(exc, cf.process.BrokenProcessPool) and tries < MAX_RETRIES:
            self._retry.put((task, outer, tries + 1, generation))
        elif exc is not None:
            outer.set_result(Done(False, error="".join(traceback.format_exception(exc))))
        else:
            outer.set_result(inner.result())

    def _resubmit_loop(self) -> None:
        while True:
            item = self._retry.get()
            if item is None:
                return
            task, outer, tries, generation = item
            with self._lock:
                if self._generation == generation and self._pool is not None:
                    self._pool.shutdown(wait=False, cancel_futures=True)
                    self._pool, self._generation = None, generation + 1
                    self.restarts += 1
            self._submit(task, outer, tries)

    def close(self, wait: bool = True) -> None:
        """Stop the workers; ``wait=False`` (an interrupted run) kills the running cells."""
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            if not wait:  # Ctrl-C: do not wait for cells that may run for minutes
                for proc in list(getattr(pool, "_processes", {}).values()):
                    with contextlib.suppress(Exception):
                        proc.kill()
            pool.shutdown(wait=wait, cancel_futures=True)
        self._retry.put(None)
        for k, v in self._saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        self._saved_env = {}


class DaskExecutor(Executor):
    """A Dask distributed scheduler at ``address`` (``tcp://HOST:PORT``); Dask reruns the
    tasks of a worker that dies on another one. Needs the ``dask`` extra.

    Parameters
    ----------
    address : str
        The scheduler's address.
    threads : int, default=1
        Threads inside each task.
    timeout : float, default=30
        Seconds to wait for the scheduler.

    Raises
    ------
    icml25.core.MissingExtraError
        When ``dask.distributed`` is not installed.
    ConnectionError
        When the scheduler cannot be reached.
    """

    remote = True

    def __init__(self, address: str, *, threads: int = 1, timeout: float = 30):
        from icml25.core.errors import require_extra

        require_extra("distributed", "dask")
        from distributed import Client

        try:
            self.client = Client(address, timeout=timeout, set_as_default=False)
        except (OSError, TimeoutError) as exc:
            raise ConnectionError(f"no Dask scheduler answers at {address!r}: {exc}") from None
        self.address = address
        self.threads = threads
        n = sum(w.get("nthreads", 1) for w in self.client.scheduler_info()
                .get("workers", {}).values())
        self.workers = max(1, n)
        self.description = f"Dask scheduler {address} ({n} worker threads now)"

    def submit(self, task: Task) -> cf.Future:
        outer: cf.Future = cf.Future()
        fut = self.client.submit(execute, task, pure=False)

        def settle(f) -> None:
            try:
                outer.set_result(f.result())
            except BaseException as exc:  # noqa: BLE001 - a lost task: report it as a cell error
                outer.set_result(Done(False, error="".join(traceback.format_exception(exc))))

        fut.add_done_callback(settle)
        outer._dask_future = fut  # keep it referenced: Dask forgets unreferenced futures
        return outer

    def close(self, wait: bool = True) -> None:
        with contextlib.suppress(Exception):
            self.client.close()


def make_executor(jobs: int | None = None, address: str | None = None) -> Executor:
    """The executor for ``--jobs`` and ``--executor`` (or ``ICML25_EXECUTOR``).

    Parameters
    ----------
    jobs : int, optional
        Local worker processes; default: the cores available. 1 runs in this process.
    address : str, optional
        A Dask scheduler address; default: ``$ICML25_EXECUTOR`` when set.

    Returns
    -------
    Executor

    Examples
    --------
    >>> make_executor(1).description
    'this process'
    """
    address = address or os.environ.get(EXECUTOR_ENV) or None
    if address:
        return DaskExecutor(address)
    jobs = available_cores() if jobs is None else jobs
    if not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"--jobs must be a positive integer, got {jobs!r}")
    return InlineExecutor() if jobs == 1 else ProcessExecutor(jobs)


# --------------------------------------------------------------------- the map of one run

@dataclasses.dataclass
class CellStats:
    """Counts of one experiment's cells in this run."""

    total: int = 0
    cached: int = 0
    failed: int = 0
    done: int = 0
    running: int = 0


class CellRunner:
    """Maps an experiment's cells on an executor with a cache (what ``reproduce`` gives a
    run context). Thread-safe: several experiments may map at once.

    Parameters
    ----------
    executor : Executor, optional
        Default: :class:`InlineExecutor`.
    cache_root : path, optional
        Where finished cells are kept (``<out>/.cells``); None keeps nothing.
    fresh : bool, default=False
        Ignore stored cells (they are still overwritten with the new results).
    on_change : callable, optional
        Called with ``(experiment, CellStats)`` whenever a count changes (the progress view).
    """

    def __init__(self, executor: Executor | None = None, *, cache_root: str | Path | None = None,
                 fresh: bool = False, on_change: Callable[[str, CellStats], None] | None = None):
        self.executor = executor or InlineExecutor()
        self.cache_root = None if cache_root is None else Path(cache_root)
        self.fresh = fresh
        self.on_change = on_change
        self.stats: dict[str, CellStats] = {}
        self._lock = threading.Lock()
        self._serial = threading.Lock()
        self._local = threading.local()

    @contextlib.contextmanager
    def serial_section(self) -> Iterator[None]:
        """Hold the turn of the experiments that run in this process: one runs its own code
        at a time; :meth:`map` gives the turn away while it waits for its cells."""
        with self._serial:
            self._local.holding = True
            try:
                yield
            finally:
                self._local.holding = False

    @contextlib.contextmanager
    def _waiting(self) -> Iterator[None]:
        parked = getattr(self._local, "parked", None)
        if parked is not None:
            parked.set()  # this experiment's cells are submitted
        if not getattr(self._local, "holding", False):
            yield
            return
        self._serial.release()
        try:
            yield
        finally:
            self._serial.acquire()

    def stats_for(self, experiment: str) -> CellStats:
        with self._lock:
            return self.stats.setdefault(experiment, CellStats())

    def _changed(self, experiment: str) -> None:
        if self.on_change is not None:
            self.on_change(experiment, self.stats_for(experiment))

    def map(self, experiment: str, settings: dict, seed: int, fn: Callable,
            cells: Iterable[Cell], *, allow_failures: bool = False,
            seed_torch: bool = False) -> dict:
        """``{key: fn(*cell.args, **cell.kwargs)}`` over ``cells``; see :meth:`RunContext.map`."""
        cells = list(cells)
        keys = [c.key for c in cells]
        if len(set(keys)) != len(keys):
            raise ValueError(f"{experiment}: cell keys must be unique")
        cache = None if self.cache_root is None else CellCache(self.cache_root / experiment)
        stats = self.stats_for(experiment)
        version = function_version(fn)
        results: dict = {}
        failures: list[CellFailure] = []
        pending: dict[cf.Future, tuple[Cell, dict]] = {}
        with self._lock:
            stats.total += len(cells)
        self._changed(experiment)
        for cell in cells:
            ckey = cache_key(experiment, settings, seed, cell.key, version)
            if cache is not None and not self.fresh:
                hit, value = cache.get(ckey)
                if hit:
                    results[cell.key] = value
                    with self._lock:
                        stats.cached += 1
                        stats.done += 1
                    continue
            task = Task(fn, tuple(cell.args), dict(cell.kwargs), cell_seed(seed, cell.key),
                        seed_torch)
            with self._lock:
                stats.running += 1
            fut = self.executor.submit(task)
            if fut.done():  # run here (--jobs 1): kept at once, so Ctrl-C loses nothing
                self._settle(experiment, cell, ckey, fut.result(), results, failures, cache)
            else:
                pending[fut] = (cell, ckey)
        self._changed(experiment)
        try:
            with self._waiting():
                for fut in cf.as_completed(pending):
                    cell, ckey = pending[fut]
                    self._settle(experiment, cell, ckey, fut.result(), results, failures,
                                 cache)
        except BaseException:
            for fut in pending:
                fut.cancel()
            raise
        if failures and not allow_failures:
            raise CellsFailed(failures)
        return {c.key: results[c.key] for c in cells if c.key in results}

    def _settle(self, experiment: str, cell: Cell, ckey: dict, done: Done, results: dict,
                failures: list, cache: CellCache | None) -> None:
        stats = self.stats_for(experiment)
        with self._lock:
            stats.running -= 1
            stats.done += 1
            stats.failed += not done.ok
        if done.ok:
            results[cell.key] = done.value
            if cache is not None:
                cache.put(ckey, done.value, wall_s=done.wall_s, cpu_s=done.cpu_s)
        else:
            failures.append(CellFailure(cell.key, done.error))
        self._changed(experiment)
