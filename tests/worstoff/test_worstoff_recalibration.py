"""Recalibration onto the outcome's scale: rescaled predictions give the same R^2, PAR and
lever; the terminal table shows the smoothed PAR with its interval and a verdict in words."""

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from icml25.worstoff import (
    bootstrap_evaluation,
    empirical_par,
    empirical_value,
    par_verdict,
    r2_score,
    recalibrate,
    smoothed_par,
)
from icml25.worstoff.cli import app

ALPHAS = np.array([0.1, 0.2, 0.3])


@pytest.fixture(scope="module")
def ridge_on_diabetes():
    """A ridge model's held-out predictions on scikit-learn's bundled diabetes data."""
    from sklearn.datasets import load_diabetes
    from sklearn.linear_model import Ridge

    X, y = load_diabetes(return_X_y=True)
    rng = np.random.default_rng(0)
    idx = rng.permutation(y.size)
    tr, te = idx[:220], idx[220:]
    p = Ridge(alpha=1.0).fit(X[tr], y[tr]).predict(X[te])
    return y[te], p


def test_rescaling_predictions_no_longer_changes_r2_or_par(ridge_on_diabetes):
    y, p = ridge_on_diabetes
    scaled = 0.25 * p + 40.0  # same ranking, same recall, other units
    np.testing.assert_allclose(empirical_value(y, p, ALPHAS, 0.2),
                               empirical_value(y, scaled, ALPHAS, 0.2))
    # without recalibration the scale moves R^2 and the PAR (the reported misbehaviour)
    assert r2_score(y, scaled) < r2_score(y, p) - 0.3
    raw = [empirical_par(y, q, ALPHAS, 0.2, recalibrate=False, warn=False) for q in (p, scaled)]
    assert not np.allclose(raw[0], raw[1], rtol=0.05)
    # with it (the default) they agree to rounding
    a = bootstrap_evaluation(y, p, ALPHAS, 0.2, n_boot=50, seed=0)
    b = bootstrap_evaluation(y, scaled, ALPHAS, 0.2, n_boot=50, seed=0)
    assert a.r2 == pytest.approx(b.r2, abs=1e-10)
    assert a.r2 == pytest.approx(np.corrcoef(y, p)[0, 1] ** 2, abs=1e-10)
    np.testing.assert_allclose(a.par, b.par, rtol=1e-9)
    np.testing.assert_allclose(a.par_ci, b.par_ci, rtol=1e-9)
    assert a.lever() == b.lever()
    np.testing.assert_allclose(empirical_par(y, p, ALPHAS, 0.2),
                               empirical_par(y, scaled, ALPHAS, 0.2), rtol=1e-9)
    sa = smoothed_par(y, p, 0.2, alphas=ALPHAS, n_boot=20, seed=0)
    sb = smoothed_par(y, scaled, 0.2, alphas=ALPHAS, n_boot=20, seed=0)
    np.testing.assert_allclose(sa.par, sb.par, rtol=1e-9)
    assert a.recalibration["applied"] and a.recalibration["r2_raw"] == pytest.approx(
        r2_score(y, p))


def test_recalibration_keeps_the_ranking_and_refuses_a_negative_slope():
    rng = np.random.default_rng(1)
    y = rng.normal(size=300)
    p = 3 * y + rng.normal(size=300)
    q = recalibrate(y, p)
    np.testing.assert_array_equal(np.argsort(q), np.argsort(p))
    assert r2_score(y, q) >= r2_score(y, p)
    flipped = -p
    np.testing.assert_array_equal(recalibrate(y, flipped), flipped)  # ranking never reversed


def test_par_verdict_words():
    assert par_verdict(1.2, 3.0).startswith("expand access")
    assert par_verdict(0.2, 0.9).startswith("improve prediction")
    assert par_verdict(0.5, float("inf")).startswith("unclear: the interval contains 1")
    assert par_verdict(0.5, 0.8, cost_ratio=0.25).startswith("expand access: PAR > 0.25")
    assert par_verdict(0, 0, saturated=True).startswith("neither")


def _write(tmp_path, y, p):
    path = tmp_path / "d.csv"
    path.write_text("y,p\n" + "\n".join(f"{a},{b}" for a, b in zip(y, p, strict=True)))
    return path


def test_evaluate_table_shows_the_smoothed_par_and_what_its_interval_supports(
        tmp_path, ridge_on_diabetes):
    y, p = ridge_on_diabetes
    path = _write(tmp_path, y, 0.25 * p + 40.0)
    args = ["evaluate", str(path), "--outcome", "y", "--prediction", "p", "--beta", "0.2",
            "--n-boot", "60", "--out", str(tmp_path / "f")]
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 0, out.output
    text = out.stdout
    assert "smoothed PAR (bandwidth 0.05)" in text and "what the interval supports" in text
    assert "recalibrated onto the outcome's scale" in text
    assert any(w in text for w in ("expand access:", "improve prediction:", "unclear:"))
    rows = [ln for ln in text.splitlines() if ln.strip().startswith(("│ 0.", "| 0."))]
    assert rows
    for row in rows:  # no raw point estimates such as inf / nan in the table
        cells = row.replace("│", "|").split("|")
        assert "inf" not in row and "nan" not in row, row
        assert len(cells) > 6
    doc = json.loads(CliRunner().invoke(app, args + ["--json"]).stdout)
    assert doc["recalibration"]["applied"] and doc["recalibration"]["slope"] > 0
    assert "verdict" in doc["betas"][0]["par_smooth"]
    raw = CliRunner().invoke(app, args + ["--json", "--no-recalibrate"]).stdout
    assert json.loads(raw)["r2"] < doc["r2"] - 0.3


def test_evaluate_help_shows_the_interval_format():
    out = CliRunner().invoke(app, ["evaluate", "--help"], env={"COLUMNS": "200"})
    assert out.exit_code == 0
    assert "(*_ci = )" not in out.output
    assert "low, high pair" in " ".join(out.output.split())
