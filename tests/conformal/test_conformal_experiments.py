"""The registered reproductions run, write figures, and compare with the published numbers."""

import json

import pytest

import icml25.conformal.experiments  # noqa: F401  (registers the reproductions)
from icml25.core import run_experiment, select


@pytest.fixture(scope="module")
def experiments():
    return {e.name: e for e in select(["conformal"])}


def test_three_reproductions_are_registered(experiments):
    assert set(experiments) == {"conformal-binomial", "conformal-heteroskedastic",
                                "conformal-multilabel"}
    for exp in experiments.values():
        assert exp.full["trials"] == 10_000


@pytest.mark.parametrize("name", ["conformal-heteroskedastic", "conformal-multilabel",
                                  "conformal-binomial"])
def test_quick_run_writes_results_and_figures(experiments, tmp_path, name):
    res = run_experiment(experiments[name], mode="quick", seed=0, out_root=tmp_path)
    assert res.status == "ok", res.error
    assert len(res.figures) >= 2
    for fig in res.figures:
        assert (tmp_path / name / fig).stat().st_size > 5_000
    rows = {c.quantity: c for c in res.comparisons}
    for quantity in ("CRC failure rate (%)", "RCPS failure rate (%)", "BQ failure rate (%)"):
        assert rows[quantity].published is not None
    saved = json.loads((tmp_path / name / "result.json").read_text())
    assert saved["comparisons"]
    # The paper's qualitative result at any scale: CRC fails often, BQ rarely, RCPS never.
    assert rows["CRC failure rate (%)"].ours > 15
    assert rows["BQ failure rate (%)"].ours < 12
    assert rows["RCPS failure rate (%)"].ours < 1


def test_every_row_with_a_published_number_is_judged(experiments, tmp_path):
    for name in ("conformal-heteroskedastic", "conformal-binomial"):
        res = run_experiment(experiments[name], mode="quick", seed=1, out_root=tmp_path)
        assert res.status == "ok", res.error
        for row in res.comparisons:
            if row.published is not None:
                assert row.rule, (name, row.quantity)
                assert row.verdict != "not comparable", (name, row.quantity)


def test_heteroskedastic_record_carries_the_exact_rates(experiments, tmp_path):
    res = run_experiment(experiments["conformal-heteroskedastic"], mode="quick", seed=0,
                         out_root=tmp_path)
    ex = res.data["exact"]
    # ranks only: the same for every continuous pool of 5,200 with n = 200
    assert round(100 * ex["CRC"]["failure_rate"], 2) == 46.39
    assert round(100 * ex["BQ"]["failure_rate"], 2) == 3.40
    rows = {c.quantity: c for c in res.comparisons}
    assert "46.39%" in rows["CRC failure rate (%)"].note


@pytest.mark.slow
def test_full_heteroskedastic_agrees_with_the_paper_and_is_fast(experiments, tmp_path):
    res = run_experiment(experiments["conformal-heteroskedastic"], mode="full", seed=0,
                         out_root=tmp_path)
    assert res.status == "ok", res.error
    assert res.data["wall_time_all_rules_s"] < 5
    for row in res.comparisons:
        assert row.verdict == "agrees", (row.quantity, row.note)
