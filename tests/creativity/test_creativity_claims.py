"""The paper's claims become judged rows: each verdict follows from the measured effect and its
interval, on made-up grids (no training)."""

import pytest

from icml25.core import verdicts as v


def _ev(creativity, coherence=0.3, n=1000):
    return {"creativity": creativity, "coherence": coherence, "memorization": 0.0, "n": n}


def _grid(seeded, null, **every):
    """``seeded``/``null``: method -> creativity (null at T=1.0); ``every``: set in all cells."""
    return {**{f"{m}/seed": {"evals": {"greedy": _ev(c, **every)}} for m, c in seeded.items()},
            **{f"{m}/null": {"evals": {"T=1.0": _ev(c, **every)}} for m, c in null.items()}}


def _judged(task, grid, top_k=0):
    from icml25.creativity.experiments import claims

    rows = claims(task, grid, ["ntp", "teacherless", "diffusion"], top_k)
    return {r["quantity"]: (r["ours"], v.judge(r["rule"], r["ours"], r["published"]), r)
            for r in rows}


def test_line_claims_agree_when_diffusion_wins_and_seeds_tie():
    rows = _judged("line", _grid({"ntp": 0.20, "teacherless": 0.20, "diffusion": 0.30},
                                 {"ntp": 0.20, "teacherless": 0.19, "diffusion": 0.30}))
    assert rows["line: creativity diffusion - ntp (best decoding each)"][1] == v.AGREES
    assert rows["line: creativity teacherless - ntp (best decoding each)"][1] == v.AGREES
    assert rows["line: ntp: creativity seed - no seed"][1] == v.AGREES  # a tie is "as good"
    assert rows["line: diffusion: creativity seed - no seed"][1] == v.AGREES  # no seed gain
    assert all(isinstance(r[2]["published"], str) and r[2]["published"] for r in rows.values())


def test_line_claims_contradicted_by_a_clear_opposite_effect():
    rows = _judged("line", _grid({"ntp": 0.25, "teacherless": 0.60, "diffusion": 0.05},
                                 {"ntp": 0.40, "teacherless": 0.25, "diffusion": 0.05}))
    ours, verdict, _ = rows["line: creativity diffusion - ntp (best decoding each)"]
    assert verdict == v.CONTRADICTS and ours == pytest.approx(0.05 - 0.40)
    assert rows["line: creativity teacherless - ntp (best decoding each)"][1] == v.CONTRADICTS
    assert rows["line: ntp: creativity seed - no seed"][1] == v.CONTRADICTS
    assert rows["line: teacherless: creativity seed - no seed"][1] == v.AGREES  # seed better


def test_a_small_difference_over_few_samples_is_inconclusive_not_agreement():
    grid = _grid({"ntp": 0.20, "teacherless": 0.2, "diffusion": 0.22},
                 {"ntp": 0.20, "teacherless": 0.2, "diffusion": 0.2}, n=100)
    rows = _judged("line", grid)
    assert rows["line: creativity diffusion - ntp (best decoding each)"][1] == v.WITHIN_GAP


def test_sibling_expects_no_gain_and_triangle_seed_claim_needs_top_k():
    rows = _judged("sibling", _grid({"ntp": 0.01, "teacherless": 0.3, "diffusion": 0.1},
                                    {"ntp": 0.35, "teacherless": 0.1, "diffusion": 0.1}))
    assert rows["sibling: ntp: creativity seed - no seed"][1] == v.AGREES  # seed worse
    assert rows["sibling: teacherless: creativity seed - no seed"][1] == v.CONTRADICTS
    assert rows["sibling: creativity diffusion - ntp (best decoding each)"][1] == v.AGREES
    tri = _judged("triangle", _grid({"ntp": 0.05, "teacherless": 0.05, "diffusion": 0.05},
                                    {"ntp": 0.05, "teacherless": 0.05, "diffusion": 0.05}))
    assert tri["triangle: ntp: creativity seed - no seed"][1] == v.NOT_COMPARABLE


def test_incoherent_cells_make_a_claim_not_comparable():
    grid = _grid({"ntp": 0.01, "teacherless": 0.01, "diffusion": 0.02},
                 {"ntp": 0.01, "teacherless": 0.01, "diffusion": 0.02}, coherence=0.02)
    rows = _judged("line", grid)
    assert {r[1] for r in rows.values()} == {v.NOT_COMPARABLE}
    assert all("coherence below 5%" in r[2]["note"] for r in rows.values())


def test_teacherless_far_below_ntp_falls_short_of_parity():
    rows = _judged("line", _grid({"ntp": 0.22, "teacherless": 0.03, "diffusion": 0.03},
                                 {"ntp": 0.15, "teacherless": 0.04, "diffusion": 0.03}))
    row = rows["line: creativity teacherless - ntp (best decoding each)"]
    assert row[1] == v.FALLS_SHORT and "≈ NTP" in row[2]["published"]


def test_both_rates_zero_is_inconclusive_not_a_point_interval():
    rows = _judged("triangle", _grid({"ntp": 0.0, "teacherless": 0.0, "diffusion": 0.0},
                                     {"ntp": 0.0, "teacherless": 0.0, "diffusion": 0.0}))
    assert rows["triangle: creativity diffusion - ntp (best decoding each)"][1] == v.WITHIN_GAP
