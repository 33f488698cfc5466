"""The registered reproduction: authors never rate with stage 2 visible, so a simulated outcome
bias cannot reach the ratings (it does in the one-stage baseline)."""

from __future__ import annotations

import json

import numpy as np

from icml25.core import load_experiments, run_experiment, select


def test_outcome_bias_experiment(tmp_path):
    load_experiments()
    (exp,) = select(["review-outcome-bias"])
    result = run_experiment(exp, mode="quick", seed=1, out_root=tmp_path)
    assert result.status == "ok", result
    data = json.loads((tmp_path / exp.name / "result.json").read_text())["data"]
    n = data["n_ratings"]
    assert n == exp.quick["n_papers"] * exp.quick["k"] == data["n_ratings_stored"]
    assert data["share_rated_with_stage2_visible"] == 0.0
    se = 1 / np.sqrt(n - 3)  # Fisher-z standard error of a correlation near 0
    assert abs(data["corr_rating_score_two_stage"]) < 3 * se
    assert data["corr_rating_score_one_stage"] > data["corr_rating_score_two_stage"] + 3 * se
    assert data["n_submissions_stage2_released"] == exp.quick["n_papers"]
    assert (tmp_path / exp.name / "rating_vs_score.png").stat().st_size > 1000
    verdicts = {c.quantity: c.verdict for c in result.comparisons}
    assert verdicts["ratings given with stage 2 visible (two-stage)"] == "agrees"
    assert verdicts["corr(rating, score), two-stage"] == "agrees"  # interval holds 0
    assert verdicts["corr(rating, score), one-stage baseline"] == "agrees"
    assert verdicts["corr(rating, reviewer quality), two-stage"] == "not comparable"


def test_simulated_conference_judges_the_papers_claims(tmp_path):
    load_experiments()
    (exp,) = select(["review-simulated-conference"])
    result = run_experiment(exp, mode="quick", seed=0, out_root=tmp_path)
    assert result.status == "ok", result.error
    rows = {c.quantity: c for c in result.comparisons}
    two = rows["score coefficient in author ratings, two-stage"]
    assert two.published == "0 (claim)" and two.rule.startswith("agrees when our 95% interval")
    assert two.verdict == "agrees"
    assert rows["score coefficient in author ratings, one-stage"].verdict == "agrees"
    gap = rows["corr(rating, review quality), two-stage minus one-stage"]
    assert gap.ours > 0 and gap.verdict == "agrees"
    assert rows["LLM-review detection rate from author flags"].verdict == "not comparable"
