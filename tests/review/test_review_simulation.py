"""The simulated conference: the qualitative result holds across seeds, and the registered
experiment runs."""

from __future__ import annotations

import json

import pytest

from icml25.core import load_experiments, run_experiment, select
from icml25.review.simulation import SimConfig, run


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_two_stage_ratings_track_quality_not_score(seed):
    r = run(SimConfig(n_papers=400, n_reviewers=200), seed=seed)
    two, one = r["two_stage"], r["one_stage"]
    # rating ~ quality + score: the score coefficient is the outcome bias that got through
    assert abs(two["fit_score_coef"]) < 3 * two["fit_score_se"]
    assert one["fit_score_coef"] > 3 * one["fit_score_se"] + 0.1
    assert two["corr_rating_quality"] > one["corr_rating_quality"] + 0.1
    assert two["corr_quality_score_latent"] > one["corr_quality_score_latent"]
    # diligent reviewers dominate the top badges (well above their share of reviewers)
    assert two["badge_precision_top10_diligent"] > r["diligent_share"] + 0.2
    # LLM reviews read generic: most are flagged, few others are
    assert r["llm_detection_rate"] > 0.5 > 0.2 > r["false_flag_rate"]


def test_no_outcome_bias_means_no_difference():
    r = run(SimConfig(n_papers=300, n_reviewers=150, outcome_bias=0.0), seed=5)
    assert r["two_stage"]["corr_rating_score"] == pytest.approx(
        r["one_stage"]["corr_rating_score"])


def test_simulated_conference_experiment(tmp_path):
    load_experiments()
    (exp,) = select(["review-simulated-conference"])
    result = run_experiment(exp, mode="quick", seed=0, out_root=tmp_path)
    assert result.status == "ok", result
    data = json.loads((tmp_path / exp.name / "result.json").read_text())["data"]
    assert data["qualitative_result_holds_every_seed"] is True
    assert (tmp_path / exp.name / "two_vs_one_stage.png").stat().st_size > 1000


def test_simulate_cli():
    from typer.testing import CliRunner

    from icml25.review import cli as review_cli

    res = CliRunner().invoke(review_cli.app, ["simulate", "--papers", "60", "--reviewers", "30"])
    assert res.exit_code == 0, res.output
    assert "two_stage" in json.loads(res.output)
