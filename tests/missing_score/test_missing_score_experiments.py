"""The registered reproductions run end to end at toy size and report their comparisons."""

import dataclasses
import json

import pytest

pytest.importorskip("torch")

from icml25.core import load_experiments, run_experiment, select  # noqa: E402

TINY = {
    "missing_score-truncated-gaussian": {"d": 4, "ns": [100, 200], "reps": 1, "n_iter": 30},
    "missing_score-star-auc": {"d": 6, "n": 200, "p_missing": [0.3], "n_alphas": 3,
                               "n_iter_start": 10, "n_iter_per_alpha": 3, "var_steps": 1,
                               "var_hidden": [8]},
    "missing_score-dimension-sweep": {"ds": [4, 6], "n": 200, "reps": 1, "n_alphas": 3,
                                      "n_iter_start": 10, "n_iter_per_alpha": 3,
                                      "var_steps": 1, "var_hidden": [8]},
}


def test_three_reproductions_are_registered():
    load_experiments()
    names = {e.name for e in select(["missing_score"])}
    assert names == set(TINY)


@pytest.mark.parametrize("name", sorted(TINY))
def test_reproduction_runs_at_toy_size(name, tmp_path):
    load_experiments()
    (exp,) = [e for e in select([name])]
    tiny = dataclasses.replace(exp, quick=dict(exp.quick, **TINY[name]))
    res = run_experiment(tiny, mode="quick", seed=1, out_root=tmp_path)
    assert res.status == "ok", res.error
    assert res.comparisons and all(c.published is not None for c in res.comparisons)
    # every row that states a claim is judged by a rule; only descriptive rows are not
    for c in res.comparisons:
        assert c.rule or "not judged" in c.note, c.quantity
        assert c.verdict in ("agrees", "within scale gap", "falls short", "contradicts",
                             "not comparable")
    assert res.figures and (tmp_path / name / res.figures[0]).stat().st_size > 1000
    data = json.loads((tmp_path / name / "result.json").read_text())
    assert data["name"] == name
