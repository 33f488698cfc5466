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


def _ctx(exp, settings, tmp_path, mode="full"):
    from icml25.core import seed_everything
    from icml25.core.registry import RunContext

    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    return RunContext(exp, mode, 1, settings, out, seed_everything(1))


@pytest.mark.parametrize("name", ["missing_score-truncated-gaussian",
                                  "missing_score-dimension-sweep"])
def test_full_runs_resume_from_stored_cells(name, tmp_path):
    """--full keeps one JSON cell per (level, repetition); a rerun reads them instead of
    fitting (same numbers), a run stopped by its deadline reports a partial summary, and a
    cell whose settings changed is recomputed, not reused."""
    load_experiments()
    (exp,) = select([name])
    s = dict(exp.quick, **dict(TINY[name], reps=2), cells_dir=str(tmp_path / "cells"))
    first = exp.func(_ctx(exp, s, tmp_path))
    files = sorted((tmp_path / "cells").glob("level*_rep*.json"))
    assert len(files) == 2 * 2 and not any("PARTIAL" in n for n in first.notes)
    again = exp.func(_ctx(exp, dict(s, cached_only=True), tmp_path))
    assert again.data == first.data  # every number came back from the cells
    files[0].unlink()
    partial = exp.func(_ctx(exp, dict(s, deadline=0.0), tmp_path))
    assert partial.notes[0] == "PARTIAL: 3 of 4 cells finished"
    key = "fisher_divergence" if "fisher_divergence" in first.data else "auc"
    got = [v for row in next(iter(partial.data[key].values())) for v in row]
    assert sum(v != v for v in got) == 1  # the missing cell is NaN, the others reused
    changed = exp.func(_ctx(exp, dict(s, cached_only=True, n=150) if "n" in s
                            else dict(s, cached_only=True, n_iter=31), tmp_path))
    assert changed.notes[0] == "PARTIAL: 0 of 4 cells finished"
    # no finished cell: no claim is judged (not "contradicts" on NaN)
    assert {c.verdict for c in changed.comparisons} == {"not comparable"}, changed.comparisons


def test_star_summary_without_cells_judges_nothing(tmp_path):
    """A --full summary before any star cell has run names no best method (it once said
    "Marg-IW: contradicts" from a table of NaN)."""
    load_experiments()
    (exp,) = select(["missing_score-star-auc"])
    s = dict(exp.quick, **TINY["missing_score-star-auc"], cells_dir=str(tmp_path / "cells"),
             cached_only=True)
    out = exp.func(_ctx(exp, s, tmp_path))
    assert out.notes[0].startswith("PARTIAL: 0 of")
    assert {c.verdict for c in out.comparisons} == {"not comparable"}, out.comparisons


def test_quick_cells_do_not_depend_on_order(tmp_path):
    """A cell's numbers are the same whether it runs first or after the others (its data and
    seeds are drawn up front), which is what makes a resumed --full run the same run."""
    load_experiments()
    name = "missing_score-truncated-gaussian"
    (exp,) = select([name])
    s = dict(exp.quick, **dict(TINY[name], reps=2))
    whole = exp.func(_ctx(exp, s, tmp_path, mode="quick")).data["fisher_divergence"]
    s_one = dict(s, levels=[1], cells_dir=str(tmp_path / "c1"))
    alone = exp.func(_ctx(exp, s_one, tmp_path)).data["fisher_divergence"]
    for m in whole:
        assert alone[m][1] == whole[m][1] and all(v != v for v in alone[m][0])
