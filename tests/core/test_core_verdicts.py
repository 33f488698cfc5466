"""The verdict rules that judge a reproduction row against the paper."""

import pytest

from icml25.core import verdicts as v
from icml25.core.records import Comparison


def test_close_agrees_within_tol_gap_then_falls_short():
    rule = v.Close(tol=0.5, gap=2.0)
    assert rule.judge(10.4, 10.0) == v.AGREES
    assert rule.judge(11.5, 10.0) == v.WITHIN_GAP
    assert rule.judge(0.0, 98.3) == v.FALLS_SHORT
    assert v.Close(tol=0.5).judge(11.5, 10.0) == v.FALLS_SHORT


def test_non_numbers_are_not_comparable():
    assert v.Close(tol=1).judge("n/a", 3) == v.NOT_COMPARABLE
    assert v.Close(tol=1).judge(float("nan"), 3) == v.NOT_COMPARABLE
    assert v.AtLeast(0.9).judge(None, None) == v.NOT_COMPARABLE


def test_overlap_of_interval_with_value_or_interval():
    assert v.Overlap(ci=(0.2, 0.4)).judge(0.3, 0.35) == v.AGREES
    assert v.Overlap(ci=(0.2, 0.4)).judge(0.3, [0.39, 0.6]) == v.AGREES
    assert v.Overlap(ci=(0.2, 0.4)).judge(0.3, 0.5) == v.FALLS_SHORT
    assert v.Overlap(ci=(0.2, 0.4), gap=0.2).judge(0.3, 0.5) == v.WITHIN_GAP


def test_targets_and_bounds():
    assert v.AtLeast(0.9).judge(0.95, None) == v.AGREES
    assert v.AtLeast().judge(0.85, 0.9) == v.FALLS_SHORT
    assert v.AtLeast(0.9, gap=0.1).judge(0.85, None) == v.WITHIN_GAP
    assert v.AtMost(0.1).judge(0.034, None) == v.AGREES
    assert v.AtMost().judge(0.5, 0.1) == v.FALLS_SHORT


def test_direction_by_margin_and_by_interval():
    rule = v.Direction(sign=1, margin=0.01)
    assert rule.judge(0.2, "A > B") == v.AGREES
    assert rule.judge(-0.2, "A > B") == v.CONTRADICTS
    assert rule.judge(0.005, "A > B") == v.WITHIN_GAP
    assert v.Direction(sign=-1).judge(-0.3, None) == v.AGREES
    assert v.Direction(ci=(0.1, 0.3)).judge(0.2, None) == v.AGREES
    assert v.Direction(ci=(-0.1, 0.3)).judge(0.2, None) == v.WITHIN_GAP
    assert v.Direction(ci=(-0.3, -0.1)).judge(-0.2, None) == v.CONTRADICTS
    with pytest.raises(ValueError):
        v.Direction(sign=0)


def test_same_answer():
    assert v.Same().judge("Marg-IW", "marg-iw") == v.AGREES
    assert v.Same().judge("Zeroed", "Marg-IW") == v.CONTRADICTS


def test_judge_without_rule_and_with_a_rule_that_speaks_another_language():
    assert v.judge(None, 1, 1) == v.NOT_COMPARABLE

    class Bad:
        def judge(self, ours, published):
            return "fine"

    with pytest.raises(ValueError, match="fine"):
        v.judge(Bad(), 1, 1)


def test_tally_counts_every_verdict():
    counts = v.tally([v.AGREES, v.AGREES, v.CONTRADICTS])
    assert list(counts) == list(v.VERDICTS)
    assert counts[v.AGREES] == 2 and counts[v.CONTRADICTS] == 1 and counts[v.FALLS_SHORT] == 0


def test_comparison_round_trips_its_verdict():
    c = Comparison(quantity="q", ours=1.0, published=2.0, verdict=v.FALLS_SHORT, rule="r")
    back = Comparison.from_dict(c.to_dict())
    assert back.verdict == v.FALLS_SHORT and back.rule == "r"
    # records written before verdicts existed still load, as not comparable
    old = {"quantity": "q", "ours": 1.0, "published": 2.0, "scale": "", "note": ""}
    assert Comparison.from_dict(old).verdict == v.NOT_COMPARABLE


def test_overlap_with_a_claimed_value_stated_in_words():
    rule = v.Overlap(ci=(-0.2, 0.1), value=0.0)
    assert rule.judge(-0.05, "≈ 0 (no effect)") == v.AGREES
    assert v.Overlap(ci=(0.1, 0.3), value=0.0).judge(0.2, "≈ 0") == v.FALLS_SHORT
    assert v.Overlap(ci=(0.1, 0.3), value=0.0, gap=0.2).judge(0.2, "≈ 0") == v.WITHIN_GAP
    assert "0" in rule.describe()


def test_direction_or_equal_for_at_least_as_good_and_no_gain_claims():
    as_good = v.Direction(sign=1, ci=(-0.02, 0.03), or_equal=True)
    assert as_good.judge(0.005, "A >= B") == v.AGREES  # a tie agrees with "as good"
    assert v.Direction(sign=1, ci=(-0.02, 0.03)).judge(0.005, "A > B") == v.WITHIN_GAP
    assert v.Direction(sign=1, ci=(-0.3, -0.1), or_equal=True).judge(-0.2, None) == v.CONTRADICTS
    no_gain = v.Direction(sign=-1, ci=(0.05, 0.2), or_equal=True)
    assert no_gain.judge(0.1, "no gain") == v.CONTRADICTS  # a clear gain contradicts
    assert v.Direction(sign=-1, margin=0.01, or_equal=True).judge(0.0, None) == v.AGREES
    assert "not positive" in no_gain.describe()


def test_compare_carries_rule_verdict_and_chance():
    from icml25.core.registry import Experiment, RunContext

    exp = Experiment("toy", "toy", "p", "r", {"accuracy (%)": 98.3}, {}, {}, lambda ctx: None)
    ctx = RunContext(exp, "quick", 0, {}, None, None)
    row = ctx.compare("accuracy (%)", 0.0, rule=v.Close(tol=1.0, gap=10.0), chance=11.1)
    assert (row.published, row.verdict, row.chance) == (98.3, v.FALLS_SHORT, 11.1)
    assert row.rule == "agrees within 1; within 10: scale gap"
    assert ctx.compare("accuracy (%)", 98.0).verdict == v.NOT_COMPARABLE  # no rule stated


def test_no_gain_claims():
    assert v.NoGain(ci=(-0.02, 0.03)).judge(0.005, "A ≈ B") == v.AGREES
    assert v.NoGain(ci=(0.05, 0.2)).judge(0.1, "A ≈ B") == v.CONTRADICTS
    assert v.NoGain(ci=(-0.3, -0.1)).judge(-0.2, "A ≈ B") == v.FALLS_SHORT
    assert v.NoGain(ci=(None, 1)).judge(0.0, None) == v.NOT_COMPARABLE
