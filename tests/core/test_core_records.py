import dataclasses
import json
import math

import numpy as np
import pytest

from icml25.core import Comparison, ExperimentResult, JsonRecord


def _result() -> ExperimentResult:
    return ExperimentResult(
        name="demo", subsystem="core", paper="P", reproduces="Table 1", mode="quick", seed=3,
        settings={"trials": np.int64(10), "alpha": np.float32(0.25)},
        command="icml25 reproduce demo --quick --seed 3",
        comparisons=[Comparison("failure rate (%)", np.float64(3.5), 3.42, "10 trials", "n"),
                     Comparison("label", "text", None)],
        figures=["a.png"], notes=["synthetic"],
        data={"curve": np.arange(3), "inf": math.inf, "nested": {"x": np.bool_(True)}},
    )


def test_result_round_trips_through_json():
    result = _result()
    text = result.to_json()
    back = ExperimentResult.from_json(text)
    assert isinstance(back.comparisons[0], Comparison)
    assert back.comparisons[0].ours == 3.5 and back.comparisons[1].published is None
    assert back.settings == {"trials": 10, "alpha": pytest.approx(0.25)}
    assert back.data["curve"] == [0, 1, 2] and back.data["inf"] == math.inf
    assert back.data["nested"] == {"x": True}
    assert back.to_json() == text  # a second trip changes nothing


def test_numpy_values_become_plain_json_types():
    plain = json.loads(_result().to_json())
    assert type(plain["settings"]["trials"]) is int
    assert type(plain["comparisons"][0]["ours"]) is float


def test_nested_user_records_round_trip():
    @dataclasses.dataclass
    class Point(JsonRecord):
        x: float
        y: float

    @dataclasses.dataclass
    class Path_(JsonRecord):
        points: list[Point]
        best: Point | None = None
        tags: tuple[str, ...] = ()

    p = Path_([Point(1, 2.5)], Point(0.0, 1.0), ("a", "b"))
    back = Path_.from_json(p.to_json())
    assert back == p and isinstance(back.points[0], Point) and isinstance(back.points[0].x, float)


def test_unknown_fields_are_rejected():
    data = _result().to_dict()
    data["surprise"] = 1
    with pytest.raises(ValueError, match="surprise"):
        ExperimentResult.from_dict(data)
