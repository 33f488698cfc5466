"""Rules as strategy objects: registry, instances through every entry point, one validation."""

import numpy as np
import pytest
from sklearn.datasets import load_diabetes

from icml25.conformal import (
    RULES,
    ConformalRegressor,
    RiskPosterior,
    Rule,
    RuleSpec,
    calibrate,
    calibrate_scores,
    get_rule,
    minimum_calibration_size,
    register_rule,
)
from icml25.conformal import rules as rules_mod
from icml25.conformal.rules import BQRule, CRCRule, crc_bound


def test_registry_holds_the_four_rules_and_names_resolve():
    assert set(RULES) >= {"split", "crc", "rcps", "bq"}
    for name, rule in RULES.items():
        assert get_rule(name) is rule and rule.name == name
    with pytest.raises(ValueError, match="method must be one of"):
        get_rule("cp")
    with pytest.raises(ValueError, match="pass BQRule()"):
        get_rule(BQRule)
    with pytest.raises(ValueError, match="Rule instance"):
        get_rule(object())


def test_minimum_n_lives_in_the_rule():
    for name in RULES:
        assert minimum_calibration_size(0.1, 0.95, name) == RULES[name].minimum_n(
            0.1, 0.95, 1.0, "hb")
    assert minimum_calibration_size(0.1, 0.95, BQRule()) == 29


class HalfCRC(CRCRule):
    """A toy rule: CRC at alpha / 2 (twice as strict)."""

    name = "half-crc"

    def admissible(self, losses, spec):
        return crc_bound(losses, spec.bound) <= spec.alpha / 2 + 1e-12

    def minimum_n(self, alpha, beta, bound, concentration):
        return max(1, int(np.ceil(2 * bound / alpha - 1 - 1e-9)))


def test_a_rule_instance_works_everywhere_a_name_does():
    rng = np.random.default_rng(0)
    s = rng.exponential(size=400)
    a = calibrate_scores(s, 0.2, method=HalfCRC())
    b = calibrate_scores(s, 0.1, method="crc")
    assert a.lambda_ == b.lambda_ and a.method == "half-crc"
    grid = np.sort(s)
    c = calibrate((s[:, None] > grid[None, :]).astype(float), grid, 0.2, method=HalfCRC())
    assert c.lambda_ == a.lambda_
    X, y = load_diabetes(return_X_y=True)
    reg = ConformalRegressor(method=HalfCRC(), alpha=0.2, random_state=0).fit(X, y)
    ref = ConformalRegressor(method="crc", alpha=0.1, random_state=0).fit(X, y)
    assert reg.lambda_ == ref.lambda_
    assert reg.get_params()["method"] == HalfCRC()


def test_register_rule_adds_a_name(monkeypatch):
    monkeypatch.setattr(rules_mod, "RULES", dict(RULES))
    register_rule(HalfCRC())
    assert isinstance(rules_mod.get_rule("half-crc"), HalfCRC)
    with pytest.raises(TypeError, match="name"):
        register_rule(Rule())


def test_alpha_is_validated_once_along_a_fit(monkeypatch):
    calls = []
    real = rules_mod.check_level

    def counting(value, name):
        calls.append(name)
        return real(value, name)

    monkeypatch.setattr(rules_mod, "check_level", counting)
    X, y = load_diabetes(return_X_y=True)
    ConformalRegressor(method="bq", random_state=0).fit(X, y)
    assert calls.count("alpha") == 1


def test_random_state_reaches_the_monte_carlo():
    # bound = 2 takes the 0/1 losses off the closed form: Monte Carlo decides.
    rng = np.random.default_rng(1)
    s = rng.exponential(size=300)
    lam = {seed: calibrate_scores(s, 0.2, method="bq", bound=2.0, n_draws=300,
                                  random_state=seed).posterior.quantile(0.95)
           for seed in range(6)}
    assert len(set(lam.values())) > 1  # the draws do depend on the seed
    again = calibrate_scores(s, 0.2, method="bq", bound=2.0, n_draws=300, random_state=3)
    assert again.posterior.quantile(0.95) == lam[3]
    X, y = load_diabetes(return_X_y=True)
    fits = [ConformalRegressor(method="bq", bound=2.0, n_draws=200, prefit=False,
                               random_state=r).fit(X, y) for r in (0, 0, 5)]
    assert fits[0].calibration_.posterior.random_state == 0
    assert fits[2].calibration_.posterior.random_state == 5
    spec = RuleSpec.make("bq", random_state=None)
    assert isinstance(spec.random_state, int)  # resolved once, shared by every lambda


def test_rule_spec_validates_at_the_boundary():
    with pytest.raises(ValueError, match="alpha"):
        RuleSpec.make("bq", alpha=1.0)
    with pytest.raises(ValueError, match="n_draws"):
        RuleSpec.make("bq", n_draws=0)
    with pytest.raises(ValueError, match="random_state"):
        RuleSpec.make("bq", random_state="seed")
    spec = RuleSpec.make("bq", 0.1, 0.95)
    post = spec.posterior(np.zeros(40))
    assert isinstance(post, RiskPosterior)
    assert spec.statistic(np.zeros((1, 40)))[0] == pytest.approx(post.quantile(0.95))


def test_the_room_has_no_import_cycle():
    import ast
    import pathlib

    import icml25.conformal as pkg

    root = pathlib.Path(pkg.__file__).parent
    graph = {}
    for path in root.glob("*.py"):
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    "icml25.conformal."):
                deps.add(node.module.rsplit(".", 1)[1])
        graph[path.stem] = deps
    assert graph["_validation"] == set()
    assert "_validation" in graph["posterior"] and "rules" not in graph["posterior"]

    def visit(node, stack):
        assert node not in stack, f"import cycle: {' -> '.join([*stack, node])}"
        for dep in graph.get(node, ()):
            visit(dep, [*stack, node])

    for mod in graph:
        visit(mod, [])


def test_the_posterior_density_follows_its_own_seed():
    losses = np.linspace(0, 0.5, 30)
    grid = np.linspace(0, 1, 50)
    a = RiskPosterior(losses, n_draws=500, random_state=1).density(grid)
    b = RiskPosterior(losses, n_draws=500, random_state=1).density(grid)
    c = RiskPosterior(losses, n_draws=500, random_state=2).density(grid)
    assert np.array_equal(a, b) and not np.array_equal(a, c)
