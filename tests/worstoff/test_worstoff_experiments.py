"""The registered reproductions run and report the paper's numbers."""

import json

from icml25.core import load_experiments, run_experiment, select


def test_figure1_and_heatmaps_reproduce(tmp_path):
    load_experiments()
    names = {e.name for e in select(["worstoff"])}
    assert names == {"worstoff-figure1", "worstoff-heatmaps", "worstoff-casestudy"}
    (exp,) = select(["worstoff-figure1"])
    exp = exp.__class__(**{**exp.__dict__, "quick": {"n": 20_000, "reps": 4}})
    res = run_experiment(exp, mode="quick", seed=0, out_root=tmp_path)
    assert res.status == "ok", res.error
    rows = {c.quantity: c for c in res.comparisons}
    for label in ("V base", "V with access +0.2", "V with R2 +0.2"):
        assert round(rows[label].ours, 3) == rows[label].published
        assert rows[label].verdict == "agrees" and rows[label].rule
    assert rows["PAR (steps 0.2)"].verdict == "agrees"
    (heat,) = select(["worstoff-heatmaps"])
    heat = heat.__class__(**{**heat.__dict__, "quick": {"grid": 20}})
    res = run_experiment(heat, mode="quick", seed=0, out_root=tmp_path)
    assert res.status == "ok", res.error
    assert len(res.figures) == 2
    data = json.loads((tmp_path / "worstoff-heatmaps" / "result.json").read_text())["data"]
    assert data["beta=0.2"]["share_par_above_1"] > 0.5
    verdicts = {c.quantity: c.verdict for c in res.comparisons}
    assert [v for q, v in verdicts.items() if q.startswith("local PAR") or
            q.startswith("PAR (0.01")] == ["agrees"] * 3
    assert {v for q, v in verdicts.items() if q.startswith("share")} == {"not comparable"}
