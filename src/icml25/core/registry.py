"""The ``reproduce`` registry: each subsystem registers its headline experiments here.

A subsystem's ``experiments.py`` decorates a function ``fn(ctx: RunContext) -> Outcome``::

    @experiment("conformal-binomial", paper="Snell & Griffiths 2025",
                reproduces="Table 1, synthetic binomial",
                published={"CRC failure rate (%)": 21.2},
                quick={"trials": 1000}, full={"trials": 10000})
    def binomial(ctx):
        ...
        row = ctx.compare("CRC failure rate (%)", 21.0, scale="1,000 trials")
        return Outcome(comparisons=[row])

``load_experiments()`` imports every subsystem's ``experiments`` module that can be imported;
one whose optional extra is missing is listed as unavailable, with the reason.
"""

from __future__ import annotations

import dataclasses
import importlib
import sys
import time
import traceback
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from icml25.core import verdicts
from icml25.core.errors import EXTRA_OF, MissingExtraError, extra_installed, extra_message
from icml25.core.records import Comparison, ExperimentResult, Outcome
from icml25.core.seeding import seed_everything

SUBSYSTEMS = (
    "conformal",
    "worstoff",
    "mdm",
    "creativity",
    "missing_score",
    "collab",
    "review",
    "royalties",
)
MODES = ("quick", "full")


@dataclasses.dataclass(frozen=True)
class Experiment:
    """A registered headline experiment (made by the :func:`experiment` decorator).

    Parameters
    ----------
    name : str
        What ``icml25 reproduce NAME`` takes.
    subsystem : str
        The room it belongs to.
    paper : str
        The paper it reproduces.
    reproduces : str
        Which table or figure.
    published : dict
        The published numbers (or claims in words), by quantity.
    quick : dict
        Settings of the quick scale.
    full : dict
        Settings of the full scale.
    func : callable
        ``func(ctx: RunContext) -> Outcome``.
    requires : tuple of str, default=()
        Extras (optional dependencies) it needs.
    cells : bool, default=False
        True when it maps its own cells through :meth:`RunContext.map`.

    Attributes
    ----------
    name : str
        What ``icml25 reproduce NAME`` takes.
    subsystem : str
        The room it belongs to.
    paper : str
        The paper it reproduces.
    reproduces : str
        Which table or figure.
    published : dict
        The published numbers (or claims in words), by quantity.
    quick, full : dict
        Settings of the two scales.
    func : callable
        ``func(ctx: RunContext) -> Outcome``.
    requires : tuple of str
        Extras it needs.

    Examples
    --------
    >>> exp = Experiment("demo", "demo", "A paper", "Table 1", {}, {"n": 10}, {"n": 1000},
    ...                  lambda ctx: Outcome())
    >>> exp.settings("full"), exp.why_unavailable()
    ({'n': 1000}, '')
    """

    name: str
    subsystem: str
    paper: str
    reproduces: str
    published: dict[str, Any]
    quick: dict[str, Any]
    full: dict[str, Any]
    func: Callable[[RunContext], Outcome]
    requires: tuple[str, ...] = ()  # extras (pyproject optional dependencies) it needs
    # True when it maps its own cells (RunContext.map): reproduce then runs it here and its
    # cells on the executor; otherwise the whole experiment is one cell on the executor.
    cells: bool = False

    def settings(self, mode: str) -> dict[str, Any]:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        return dict(self.quick if mode == "quick" else self.full)

    def missing_extras(self) -> list[str]:
        """The extras it needs that are not installed here."""
        return [x for x in self.requires if not extra_installed(x)]

    def why_unavailable(self) -> str:
        """One line naming the missing extra(s); empty when it can run here."""
        return "; ".join(extra_message(x) for x in self.missing_extras())


@dataclasses.dataclass(frozen=True)
class Unavailable:
    """An experiment that cannot run here, and why (the extra to install)."""

    name: str
    subsystem: str
    reproduces: str
    why: str


# Rooms whose experiments all need an extra (an experiment can also say so: requires=...).
ROOM_REQUIRES: dict[str, tuple[str, ...]] = {
    "mdm": ("torch",), "creativity": ("torch",), "missing_score": ("torch",),
}

_REGISTRY: dict[str, Experiment] = {}
_UNAVAILABLE: dict[str, str] = {}
_UNAVAILABLE_DECLARED: dict[str, Unavailable] = {}  # declared in a room that cannot import


def experiment(
    name: str,
    *,
    paper: str,
    reproduces: str,
    published: dict[str, Any] | None = None,
    quick: dict[str, Any] | None = None,
    full: dict[str, Any] | None = None,
    subsystem: str | None = None,
    requires: tuple[str, ...] | list[str] | None = None,
    cells: bool = False,
) -> Callable[[Callable[[RunContext], Outcome]], Callable[[RunContext], Outcome]]:
    """Register ``fn`` as a headline experiment (see the module docstring).

    ``requires``: the extras it needs (default: its room's, :data:`ROOM_REQUIRES`); without
    them ``reproduce`` lists it as unavailable, naming the extra, instead of failing it.
    ``cells``: True when ``fn`` maps its units of work through :meth:`RunContext.map` (they
    then run on the executor); otherwise the whole experiment runs as one cell.

    Parameters
    ----------
    name : str
        Unique experiment name.
    paper : str
        The paper it reproduces.
    reproduces : str
        Which table or figure.
    published : dict or None, default=None
        Published numbers by quantity (the default of :meth:`RunContext.compare`).
    quick : dict or None, default=None
        Settings of the quick scale.
    full : dict or None, default=None
        Settings of the full scale (default: ``quick``).
    subsystem : str or None, default=None
        Room it belongs to (default: read from the function's module).
    requires : tuple or list of str or None, default=None
        Extras it needs (default: its room's).
    cells : bool, default=False
        Whether ``fn`` maps its cells through :meth:`RunContext.map`.

    Returns
    -------
    callable
        A decorator that registers ``fn`` and returns it unchanged.

    Raises
    ------
    ValueError
        When another function is already registered under ``name``.

    Examples
    --------
    >>> @experiment("demo-sum", paper="A paper", reproduces="Table 1", subsystem="demo",
    ...             published={"sum": 3}, quick={"n": 2})
    ... def demo_sum(ctx):
    ...     return Outcome(comparisons=[ctx.compare("sum", sum(range(ctx.settings["n"] + 1)))])
    >>> [e.name for e in select(["demo-sum"])]
    ['demo-sum']
    >>> run_experiment(select(["demo-sum"])[0], out_root="results").comparisons[0].ours
    3
    >>> unregister("demo-sum")
    """

    def register(fn: Callable[[RunContext], Outcome]) -> Callable[[RunContext], Outcome]:
        room = subsystem or _subsystem_of(fn)
        if name in _REGISTRY and _REGISTRY[name].func is not fn:
            raise ValueError(f"experiment {name!r} is registered twice")
        needs = tuple(requires) if requires is not None else ROOM_REQUIRES.get(room, ())
        _REGISTRY[name] = Experiment(
            name, room, paper, reproduces, dict(published or {}), dict(quick or {}),
            dict(full or quick or {}), fn, needs, bool(cells),
        )
        return fn

    return register


def unregister(name: str) -> None:
    """Remove an experiment (tests register throw-away ones)."""
    _REGISTRY.pop(name, None)


def _subsystem_of(fn: Callable) -> str:
    parts = fn.__module__.split(".")
    return parts[1] if len(parts) > 2 and parts[0] == "icml25" else parts[0]


def rooms_for(names: Iterable[str]) -> tuple[str, ...] | None:
    """The subsystems holding the named experiments or subsystems, found without importing
    anything (names are read from each room's source); None (all rooms) when ``names`` is
    empty or a name is unknown, so selection reports it the usual way."""
    names = list(names)
    if not names:
        return None
    rooms: list[str] = []
    for name in names:
        key = _key(name)
        room = next((r for r in SUBSYSTEMS if _key(r) == key), None) or next(
            (r for r in SUBSYSTEMS if any(_key(n) == key for n, _ in declared_experiments(r))),
            None)
        if room is None:
            return None
        rooms.append(room)
    return tuple(dict.fromkeys(rooms))


def load_experiments(rooms: Iterable[str] | None = None) -> dict[str, str]:
    """Import the ``experiments`` module of ``rooms`` (default: every subsystem); return
    {subsystem: why unavailable}.

    The experiments a room declares are still listed (:func:`unavailable`) when the room
    cannot be imported: their names are read from its source, without running it. Importing
    only the rooms a command names keeps ``reproduce conformal-binomial`` from paying for
    torch and the other rooms at start-up.

    Parameters
    ----------
    rooms : iterable of str or None, default=None
        Subsystems to import (None: every subsystem).

    Returns
    -------
    dict of str to str
        ``{subsystem: why unavailable}`` for every room that could not be imported so far.

    Examples
    --------
    >>> missing = load_experiments(["conformal"])
    >>> any(e.subsystem == "conformal" for e in registered())
    True
    """
    for room in SUBSYSTEMS if rooms is None else [r for r in SUBSYSTEMS if r in set(rooms)]:
        module = f"icml25.{room}.experiments"
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name in (f"icml25.{room}", module):
                continue  # this subsystem has no experiments (yet)
            top = (exc.name or "").split(".")[0]
            _UNAVAILABLE[room] = (extra_message(EXTRA_OF[top], top) if top in EXTRA_OF
                                  else f"needs '{exc.name}' ({exc})")
        except ImportError as exc:  # MissingExtraError and friends
            _UNAVAILABLE[room] = str(exc)
        else:
            continue
        for name, reproduces in declared_experiments(room):
            if name not in _REGISTRY:
                _UNAVAILABLE_DECLARED[name] = Unavailable(name, room, reproduces,
                                                          _UNAVAILABLE[room])
    return dict(_UNAVAILABLE)


def declared_experiments(room: str) -> list[tuple[str, str]]:
    """``(name, reproduces)`` of each ``@experiment`` in a room's ``experiments.py``, read from
    its source (so a room whose extra is missing can still say what it would run)."""
    import ast

    path = Path(__file__).resolve().parent.parent / room / "experiments.py"
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError):
        return []
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef):
            continue
        for deco in node.decorator_list:
            fn = getattr(deco, "func", None)
            called = getattr(fn, "id", None) or getattr(fn, "attr", None)
            if called != "experiment" or not deco.args:
                continue
            first = deco.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                repro = next((k.value.value for k in deco.keywords if k.arg == "reproduces"
                              and isinstance(k.value, ast.Constant)), "")
                found.append((first.value, str(repro)))
    return found


def unavailable() -> list[Unavailable]:
    """Every experiment that cannot run here (after :func:`load_experiments`), with why."""
    out = [Unavailable(e.name, e.subsystem, e.reproduces, e.why_unavailable())
           for e in registered() if e.missing_extras()]
    out += [u for u in _UNAVAILABLE_DECLARED.values() if u.name not in _REGISTRY]
    named = {u.subsystem for u in out}
    out += [Unavailable(room, room, "", why) for room, why in _UNAVAILABLE.items()
            if room not in named]  # a room that failed to import before declaring anything
    order = {room: i for i, room in enumerate(SUBSYSTEMS)}
    return sorted(out, key=lambda u: (order.get(u.subsystem, 99), u.name))


def registered() -> list[Experiment]:
    """All registered experiments, in subsystem order, then by name.

    Only experiments whose module has been imported are registered: call
    :func:`load_experiments` first.

    Returns
    -------
    list of Experiment
        The registered experiments.

    Examples
    --------
    >>> _ = load_experiments(["conformal"])
    >>> exps = [e for e in registered() if e.subsystem == "conformal"]
    >>> len(exps) > 0, exps == sorted(exps, key=lambda e: e.name)
    (True, True)
    """
    order = {room: i for i, room in enumerate(SUBSYSTEMS)}
    return sorted(_REGISTRY.values(), key=lambda e: (order.get(e.subsystem, 99), e.name))


def select(names: Iterable[str] = ()) -> list[Experiment]:
    """Experiments matching each name exactly or by subsystem; all of them when names is empty.

    Names are matched case-insensitively, with ``_`` and ``-`` alike.

    Parameters
    ----------
    names : iterable of str, default=()
        Experiment or subsystem names.

    Returns
    -------
    list of Experiment
        The matching experiments, without repeats, in the order asked.

    Raises
    ------
    MissingExtraError
        When a name belongs to an experiment or room whose extra is not installed.
    KeyError
        When a name matches nothing.

    Examples
    --------
    >>> _ = load_experiments(["conformal"])
    >>> all(e.subsystem == "conformal" for e in select(["Conformal"]))
    True
    >>> try:
    ...     select(["no-such-experiment"])
    ... except KeyError:
    ...     print("unknown")
    unknown
    """
    names = list(names)
    every = registered()
    if not names:
        return every
    chosen: list[Experiment] = []
    for wanted in names:
        key = _key(wanted)  # missing-score and missing_score name the same subsystem
        hits = [e for e in every if key in (_key(e.name), _key(e.subsystem))]
        if not hits:
            gone = [u for u in _UNAVAILABLE_DECLARED.values()
                    if key in (_key(u.name), _key(u.subsystem))]
            gone += [Unavailable(r, r, "", why) for r, why in _UNAVAILABLE.items()
                     if key == _key(r) and not gone]
            if gone:
                raise MissingExtraError(f"{wanted} cannot run here: {gone[0].why}")
            known = sorted({e.name for e in every} | {e.subsystem for e in every})
            raise KeyError(f"no experiment or subsystem named {wanted!r}; known: {known}")
        chosen += [e for e in hits if e not in chosen]
    return chosen


def _key(name: str) -> str:
    return name.strip().lower().replace("_", "-")


@dataclasses.dataclass
class RunContext:
    """What an experiment function gets: its settings, seed, RNG and a place for figures.

    Parameters
    ----------
    experiment : Experiment
        The experiment being run.
    mode : str
        ``"quick"`` or ``"full"``.
    seed : int
        The run's seed.
    settings : dict
        The settings of ``mode``.
    out_dir : Path
        Where figures and ``result.json`` go.
    rng : numpy.random.Generator
        A Generator seeded with ``seed``.
    figures : list of str, default=[]
        Figures saved so far (file names in ``out_dir``).
    runner : CellRunner or None, default=None
        Runs the cells of :meth:`map` (None: in this process).

    Examples
    --------
    >>> exp = Experiment("demo", "demo", "", "", {"error": 0.1}, {}, {}, lambda ctx: None)
    >>> ctx = RunContext(exp, "quick", 0, {}, Path("."), np.random.default_rng(0))
    >>> row = ctx.compare("error", np.float64(0.12))
    >>> row.ours, row.published, row.verdict
    (0.12, 0.1, 'not comparable')
    """

    experiment: Experiment
    mode: str
    seed: int
    settings: dict[str, Any]
    out_dir: Path
    rng: np.random.Generator
    figures: list[str] = dataclasses.field(default_factory=list)
    # Runs the cells of map() (reproduce gives one with an executor and a cache); None: here.
    runner: Any = None

    def map(self, fn: Callable, cells: Iterable, *, settings: dict[str, Any] | None = None,
            allow_failures: bool = False) -> dict:
        """Run ``fn`` over independent cells; return ``{cell.key: result}`` in cell order.

        Each cell (an :class:`icml25.core.cells.Cell`: key, args, kwargs) runs as
        ``fn(*args, **kwargs)`` on the run's executor, seeded from ``(seed, key)`` alone
        (``random``, NumPy's global state, torch; a parameter named ``rng`` receives a
        Generator from that seed) with one thread, and is cached under (experiment,
        settings, seed, key, code version). ``fn`` must be a module-level function (or a
        ``functools.partial`` of one) and its arguments picklable.

        Parameters
        ----------
        fn : callable
            The pure function of one cell.
        cells : iterable of Cell
            The cells; keys must be unique.
        settings : dict, optional
            What the results depend on besides seed and key (default: the run's settings and
            mode); leave out settings that only choose which cells to run.
        allow_failures : bool, default=False
            Return the cells that succeeded instead of raising when some failed.

        Returns
        -------
        dict
            ``{key: value}``.

        Raises
        ------
        icml25.core.cells.CellsFailed
            After every cell ran, when some failed (each with its key and traceback).

        Examples
        --------
        >>> from icml25.core.cells import Cell
        >>> exp = Experiment("demo", "demo", "", "", {}, {}, {}, lambda ctx: None)
        >>> ctx = RunContext(exp, "quick", 0, {}, Path("."), np.random.default_rng(0))
        >>> ctx.map(divmod, [Cell("a", (7, 2)), Cell("b", (9, 4))])
        {'a': (3, 1), 'b': (2, 1)}
        """
        from icml25.core.cells import CellRunner

        runner = self.runner if self.runner is not None else CellRunner()
        if settings is None:
            settings = dict(self.settings, mode=self.mode)
        return runner.map(self.experiment.name, settings, self.seed, fn, cells,
                          allow_failures=allow_failures,
                          seed_torch="torch" in self.experiment.requires)

    def save_figure(self, fig, stem: str) -> Path:
        """Save a matplotlib figure as ``<out_dir>/<stem>.png`` and list it in the report."""
        from icml25.core.figures import save_figure

        path = save_figure(fig, self.out_dir / stem)
        self.figures.append(path.name)
        return path

    def compare(self, quantity: str, ours: Any, *, scale: str = "", note: str = "",
                published: Any = None, rule: Any = None,
                chance: float | None = None) -> Comparison:
        """A table row; the published value defaults to the one declared at registration.

        ``rule`` (an object from :mod:`icml25.core.verdicts`) judges ours against published;
        without one the row is ``not comparable``. ``chance``: what guessing would score on
        this quantity (an accuracy's chance level), shown beside it in the report.
        """
        if published is None:
            published = self.experiment.published.get(quantity)
        ours, published = _plain(ours), _plain(published)
        return Comparison(quantity=quantity, ours=ours, published=published, scale=scale,
                          note=note, verdict=verdicts.judge(rule, ours, published),
                          rule=rule.describe() if rule is not None else "",
                          chance=None if chance is None else float(chance))


def _plain(x: Any) -> Any:
    if isinstance(x, np.generic):
        return x.item()
    return x


def _torch_threads(restore: int | None = None) -> int | None:
    """torch's intra-op thread count (None if torch is not loaded); sets it when ``restore``."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    if restore is not None:
        torch.set_num_threads(restore)
    return torch.get_num_threads()


def rerun_command(name: str, mode: str, seed: int) -> str:
    return f"icml25 reproduce {name} --{mode} --seed {seed}"


def run_experiment(exp: Experiment, *, mode: str = "quick", seed: int = 0,
                   out_root: str | Path = "results", runner: Any = None) -> ExperimentResult:
    """Run one experiment, time it, and write ``<out_root>/<name>/result.json``.

    An exception inside the experiment is caught and recorded (status ``failed``) so that one
    broken experiment does not stop the others; the caller decides the exit code.
    ``runner`` (an :class:`icml25.core.cells.CellRunner`) runs its cells; default: here.

    Parameters
    ----------
    exp : Experiment
        The experiment to run.
    mode : {"quick", "full"}, default="quick"
        Which settings to use.
    seed : int, default=0
        Seed of ``random``, NumPy and (when needed) torch.
    out_root : str or Path, default="results"
        The result goes to ``<out_root>/<name>/result.json`` (old PNGs there are removed).
    runner : CellRunner or None, default=None
        Runs the experiment's cells (None: in this process).

    Returns
    -------
    ExperimentResult
        The record written to ``result.json``; ``status`` is ``"failed"`` (with the traceback
        in ``error``) when the experiment raised.

    Raises
    ------
    ValueError
        For an unknown ``mode`` or a negative seed.

    Examples
    --------
    >>> exp = Experiment("demo-fail", "demo", "", "", {}, {}, {}, lambda ctx: 1 / 0)
    >>> res = run_experiment(exp, out_root="results")
    >>> res.status, res.error.strip().splitlines()[-1]
    ('failed', 'ZeroDivisionError: division by zero')
    >>> (Path("results") / "demo-fail" / "result.json").is_file()
    True
    """
    out_dir = Path(out_root) / exp.name
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("*.png"):
        old.unlink()
    settings = exp.settings(mode)
    # torch is seeded whenever the experiment needs it (imported or not yet), so a run gives
    # the same numbers in a fresh worker process as after other experiments in this one.
    rng = seed_everything(seed, torch=True if "torch" in exp.requires else None)
    ctx = RunContext(exp, mode, seed, settings, out_dir, rng, runner=runner)
    result = ExperimentResult(
        name=exp.name, subsystem=exp.subsystem, paper=exp.paper, reproduces=exp.reproduces,
        mode=mode, seed=seed, settings=settings, command=rerun_command(exp.name, mode, seed),
        started_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    start = time.perf_counter()
    threads = _torch_threads()
    try:
        outcome = exp.func(ctx)
        if not isinstance(outcome, Outcome):
            raise TypeError(f"experiment {exp.name!r} returned {type(outcome).__name__}, "
                            "expected icml25.core.Outcome")
        result.comparisons = outcome.comparisons
        result.notes = outcome.notes
        result.data = outcome.data
        result.provenance = outcome.provenance
    except Exception:
        result.status = "failed"
        result.error = traceback.format_exc()
    finally:
        _torch_threads(threads)  # an experiment may pin torch threads: give them back
    result.wall_time_s = round(time.perf_counter() - start, 3)
    result.figures = list(ctx.figures)
    (out_dir / "result.json").write_text(result.to_json())
    return result
