"""Result records: dataclasses that round-trip to JSON.

``JsonRecord`` is a mixin for any dataclass: ``to_dict``/``to_json`` turn NumPy scalars and arrays
into plain numbers and lists; ``from_dict``/``from_json`` rebuild nested records from the type
hints. Non-finite floats are written as JSON's ``NaN``/``Infinity`` tokens (Python reads them back).
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from pathlib import Path
from typing import Any, Self

import numpy as np


def to_jsonable(value: Any) -> Any:
    """Plain-Python form of ``value`` (dataclasses, NumPy types, paths, tuples, dicts)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return to_jsonable(value.tolist())
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, Path):
        return str(value)
    return value


def _from_jsonable(tp: Any, value: Any) -> Any:
    """Rebuild ``value`` as type ``tp`` (nested dataclasses, lists, dicts, optionals)."""
    if value is None:
        return None
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(tp):
            if arg is type(None):
                continue
            if dataclasses.is_dataclass(arg) and isinstance(value, dict):
                return _from_jsonable(arg, value)
        return value
    if dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp)
        names = {f.name for f in dataclasses.fields(tp)}
        unknown = set(value) - names
        if unknown:
            raise ValueError(f"{tp.__name__}: unknown fields {sorted(unknown)}")
        return tp(**{k: _from_jsonable(hints[k], v) for k, v in value.items()})
    if origin is list:
        (item,) = typing.get_args(tp) or (Any,)
        return [_from_jsonable(item, v) for v in value]
    if origin is tuple:
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_from_jsonable(args[0], v) for v in value)
        return tuple(_from_jsonable(a, v) for a, v in zip(args, value, strict=True))
    if origin is dict:
        _, item = typing.get_args(tp) or (str, Any)
        return {k: _from_jsonable(item, v) for k, v in value.items()}
    if tp is float and isinstance(value, int):
        return float(value)
    return value


class JsonRecord:
    """Mixin giving a dataclass a lossless JSON form.

    ``to_dict``/``to_json`` turn NumPy scalars and arrays, paths and tuples into plain JSON
    values; ``from_dict``/``from_json`` rebuild the dataclass (nested records included) from its
    type hints, and reject unknown fields with a ``ValueError``. The mixin itself takes no
    parameters.

    Examples
    --------
    >>> import dataclasses
    >>> import numpy as np
    >>> @dataclasses.dataclass
    ... class Point(JsonRecord):
    ...     x: float
    ...     tags: list[str]
    >>> text = Point(np.float64(1.5), ["a"]).to_json(indent=None)
    >>> text
    '{"x": 1.5, "tags": ["a"]}'
    >>> Point.from_json(text)
    Point(x=1.5, tags=['a'])
    """

    def to_dict(self) -> dict[str, Any]:
        return to_jsonable(self)

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        return _from_jsonable(cls, data)

    @classmethod
    def from_json(cls, text: str) -> Self:
        return cls.from_dict(json.loads(text))


@dataclasses.dataclass
class Comparison(JsonRecord):
    """One row of a reproduction table: a published figure next to ours.

    Parameters
    ----------
    quantity : str
        What is compared (e.g. ``"coverage"``).
    ours : float, str or None
        Our figure.
    published : float, str or None, default=None
        The paper's figure.
    scale : str, default=""
        At what scale ours was measured (e.g. ``"n=200"``).
    note : str, default=""
        A remark shown with the row.
    verdict : str, default="not comparable"
        One of ``icml25.core.verdicts.VERDICTS``.
    rule : str, default=""
        Description of the rule that gave the verdict.
    chance : float or None, default=None
        What guessing scores on the same quantity, when it has one.

    Examples
    --------
    >>> c = Comparison("coverage", 0.91, published=0.9, scale="n=200")
    >>> c.verdict, Comparison.from_dict(c.to_dict()) == c
    ('not comparable', True)
    """

    quantity: str
    ours: float | str | None
    published: float | str | None = None
    scale: str = ""
    note: str = ""
    # One of icml25.core.verdicts.VERDICTS, and the rule that gave it (its description).
    verdict: str = "not comparable"
    rule: str = ""
    # What guessing scores on the same quantity (for accuracies and hit rates), when it has one.
    chance: float | None = None


@dataclasses.dataclass
class Outcome(JsonRecord):
    """What an experiment function returns; figures are added through its RunContext.

    Parameters
    ----------
    comparisons : list of Comparison, default=[]
        Rows of the reproduction table.
    data : dict, default={}
        Raw numbers (JSON-able) kept in ``result.json``.
    notes : list of str, default=[]
        Remarks shown in the report.
    provenance : list of str, default=[]
        Where the numbers come from (training commands, model cards).

    Examples
    --------
    >>> out = Outcome(comparisons=[Comparison("error", 0.1, published=0.12)],
    ...               data={"n": 10})
    >>> Outcome.from_json(out.to_json()).comparisons[0].published
    0.12
    """

    comparisons: list[Comparison] = dataclasses.field(default_factory=list)
    data: dict[str, Any] = dataclasses.field(default_factory=dict)
    notes: list[str] = dataclasses.field(default_factory=list)
    # Where the numbers come from (training commands, model cards): the report folds these away.
    provenance: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class ExperimentResult(JsonRecord):
    """Everything ``results/<name>/result.json`` holds about one run of one experiment.

    Parameters
    ----------
    name : str
        Experiment name.
    subsystem : str
        Room the experiment belongs to.
    paper : str
        The paper it reproduces.
    reproduces : str
        Which table or figure.
    mode : str
        ``"quick"`` or ``"full"``.
    seed : int
        The seed of the run.
    settings : dict
        The settings used.
    command : str
        The command that reproduces the run.
    status : str, default="ok"
        ``"ok"`` or ``"failed"``.
    wall_time_s : float, default=0.0
        Wall-clock seconds.
    started_at : str, default=""
        ISO start time.
    comparisons : list of Comparison, default=[]
        Rows of the reproduction table.
    figures : list of str, default=[]
        Figure files, relative to ``results/<name>/``.
    notes : list of str, default=[]
        Remarks.
    data : dict, default={}
        Raw numbers.
    error : str, default=""
        The error of a failed run.
    provenance : list of str, default=[]
        Where the numbers come from.

    Examples
    --------
    >>> r = ExperimentResult("demo", "core", "A paper", "Table 1", "quick", 0, {},
    ...                      "icml25 run demo")
    >>> ExperimentResult.from_json(r.to_json()) == r
    True
    """

    name: str
    subsystem: str
    paper: str
    reproduces: str
    mode: str
    seed: int
    settings: dict[str, Any]
    command: str
    status: str = "ok"  # ok | failed
    wall_time_s: float = 0.0
    started_at: str = ""
    comparisons: list[Comparison] = dataclasses.field(default_factory=list)
    figures: list[str] = dataclasses.field(default_factory=list)  # relative to results/<name>/
    notes: list[str] = dataclasses.field(default_factory=list)
    data: dict[str, Any] = dataclasses.field(default_factory=dict)
    error: str = ""
    provenance: list[str] = dataclasses.field(default_factory=list)
