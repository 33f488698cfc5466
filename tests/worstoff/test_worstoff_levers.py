"""Budget allocation across levers (capacity, better model, subgroup) and the CRRA objective."""

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from icml25.worstoff.cli import app
from icml25.worstoff.levers import allocate_budget, crra_gain, screening_welfare


@pytest.fixture(scope="module")
def incomes():
    rng = np.random.default_rng(0)
    n = 3000
    x = rng.normal(size=n)
    y = np.exp(1 + 0.6 * x + 0.5 * rng.normal(size=n))
    return y, np.exp(1 + 0.6 * x), rng.random(n) < 0.3


def test_best_split_beats_every_single_lever_and_reports_equivalent_costs(incomes):
    y, p, sub = incomes
    costs = {"capacity": 20000.0, "prediction": 5000.0, "subgroup": 3000.0}
    res = allocate_budget(y, p, 0.1, 1000.0, costs, subgroup=sub, steps=10)
    assert res.welfare >= max(res.single_lever_welfare.values()) - 1e-12
    assert res.welfare > res.baseline_welfare
    assert sum(res.spend.values()) == pytest.approx(1000.0)
    for k in res.levers:
        assert res.theta[k] == pytest.approx(min(res.spend[k] / costs[k], 1.0), rel=1e-9) \
            or res.theta[k] < res.spend[k] / costs[k]
        eq = res.equivalent_cost[k]
        # a lever alone reaches the best split's welfare only by spending at least as much
        assert eq >= 1000.0 * (1 - 1e-6) or res.single_lever_welfare[k] >= res.welfare - 1e-12
    # capacity alone: its equivalent cost buys exactly the best split's welfare
    eq = res.equivalent_cost["capacity"]
    if np.isfinite(eq):
        w = screening_welfare(y, res.recalibration["intercept"] + res.recalibration["slope"] * p,
                              0.1 + eq / costs["capacity"])
        assert w >= res.welfare - 1e-9


def test_a_free_lever_takes_the_budget_and_a_costly_one_gets_nothing(incomes):
    y, p, _ = incomes
    res = allocate_budget(y, p, 0.1, 100.0, {"capacity": 1e9, "prediction": 500.0}, steps=10)
    assert res.spend["capacity"] == 0 and res.spend["prediction"] == pytest.approx(100.0)
    assert res.equivalent_cost["prediction"] == pytest.approx(100.0, rel=0.02)


def test_crra_objective_values_the_poorest_most(incomes):
    y, p, _ = incomes
    g0 = crra_gain(y, 1.0, 0.0)
    np.testing.assert_allclose(g0, 1.0)  # linear utility: every transfer worth its amount
    g2 = crra_gain(y, 1.0, 2.0)
    assert np.all(np.diff(g2[np.argsort(y)]) <= 1e-15)  # decreasing in income
    lin = screening_welfare(y, p, 0.2, objective="crra", benefit=1.0, rho=0.0)
    assert lin == pytest.approx(0.2)
    perfect = screening_welfare(y, y, 0.2, objective="crra", rho=2.0)
    model = screening_welfare(y, p, 0.2, objective="crra", rho=2.0)
    rand = screening_welfare(y, np.zeros_like(y), 0.2, objective="crra", rho=2.0)
    assert perfect > model > rand
    with pytest.raises(ValueError, match="positive outcomes"):
        screening_welfare(y - 10, p, 0.2, objective="crra")


def test_bad_lever_inputs():
    y = np.arange(1.0, 101.0)
    with pytest.raises(ValueError, match="unknown lever"):
        allocate_budget(y, y, 0.1, 10, {"ads": 1.0})
    with pytest.raises(ValueError, match="needs subgroup"):
        allocate_budget(y, y, 0.1, 10, {"subgroup": 1.0})
    with pytest.raises(ValueError, match="objective must be one of"):
        allocate_budget(y, y, 0.1, 10, {"capacity": 1.0}, objective="gini")
    with pytest.raises(ValueError, match="budget"):
        allocate_budget(y, y, 0.1, 0, {"capacity": 1.0})


def test_levers_cli_json(tmp_path, incomes):
    y, p, sub = incomes
    path = tmp_path / "d.csv"
    path.write_text("y,p,g\n" + "\n".join(f"{a},{b},{int(c)}"
                                          for a, b, c in zip(y, p, sub, strict=True)))
    base = ["levers", str(path), "--outcome", "y", "--prediction", "p", "--alpha", "0.1",
            "--budget", "1000", "--capacity-cost", "20000", "--prediction-cost", "5000",
            "--steps", "5"]
    out = CliRunner().invoke(app, base + ["--subgroup", "g", "--subgroup-cost", "3000",
                                          "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert set(doc["spend"]) == {"capacity", "prediction", "subgroup"}
    table = CliRunner().invoke(app, base + ["--objective", "crra", "--rho", "1"])
    assert table.exit_code == 0 and "equivalent cost" in table.stdout
    bad = CliRunner().invoke(app, base + ["--subgroup", "g"])
    assert bad.exit_code == 2 and "go together" in bad.output
