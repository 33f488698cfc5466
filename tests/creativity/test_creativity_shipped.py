"""The shipped models: the plumbing (``evaluate --shipped NAME --json``, clear errors) on a tiny
model in a temporary folder, and the real shipped models against their cards and the
coherence target."""

import json
import re

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from icml25.creativity import shipped
from icml25.creativity.cli import app
from icml25.creativity.tasks import generate, make_task
from icml25.creativity.training import TrainSettings, evaluate_model, load_run, train_model

runner = CliRunner()
torch.set_num_threads(1)
KEYS = {"coherence", "creativity", "uniqueness", "memorization", "n"}


@pytest.fixture
def fake_root(tmp_path, monkeypatch):
    task = make_task("line", 0, n_train=60, n_test=4)
    data = generate(task, seed_len=3)
    run = train_model(task, data.train, TrainSettings(steps=5, d_model=16, n_layers=1,
                                                      n_heads=2, batch_size=8))
    run.save(tmp_path / "line-tiny")
    monkeypatch.setattr(shipped, "_root", lambda: tmp_path)
    return tmp_path


def test_evaluate_shipped_prints_one_json_object(fake_root):
    r = runner.invoke(app, ["evaluate", "--shipped", "line-tiny", "--n", "8", "--json"])
    assert r.exit_code == 0, r.output
    lines = [x for x in r.stdout.splitlines() if x.strip()]
    assert len(lines) == 1
    rep = json.loads(lines[0])
    assert KEYS <= set(rep) and rep["n"] == 8 and rep["method"] == "ntp"


def _plain(text: str) -> str:
    return re.sub(r"[\s│╭╮╰╯─]+", " ", re.sub(r"\x1b\[[0-9;]*m", "", text))


def test_evaluate_refuses_unknown_or_ambiguous_models(fake_root, tmp_path):
    wide = {"COLUMNS": "200"}
    r = runner.invoke(app, ["evaluate", "--shipped", "nope"], env=wide)
    assert r.exit_code != 0 and "line-tiny" in _plain(r.output)  # names what is shipped
    r = runner.invoke(app, ["evaluate", str(fake_root / "line-tiny"), "--shipped", "line-tiny"],
                      env=wide)
    assert r.exit_code != 0 and "one of them" in _plain(r.output)
    assert shipped.shipped_names() == ["line-tiny"]


# --- the real shipped models ----------------------------------------------------------------

REAL = shipped.shipped_names()


def test_line_and_circle_models_are_shipped_with_cards():
    for name in ("line-ntp", "circle-ntp", "line-teacherless", "circle-teacherless",
                 "line-diffusion", "circle-diffusion"):
        assert name in REAL
    for name in REAL:
        card = shipped.shipped_card(name)
        assert card["evaluation"]["n"] == 1024 and "command" in card
        assert card["name"] == name and name.startswith(f"{card['task']}-{card['method']}")
        size = sum(p.stat().st_size for p in shipped.shipped_dir(name).iterdir())
        assert size < 8e6  # a few MB


# The NTP models are checked against their cards on 1,024 prompts by the target test below.
@pytest.mark.parametrize("name", [x for x in REAL if not x.endswith("-ntp")])
def test_shipped_model_matches_its_card_on_fresh_prompts(name):
    """256 generations on another prompt set (seed 1): coherence within 4 binomial standard
    errors of the card's 1,024-generation figure (of both samples)."""
    card = shipped.shipped_card(name)["evaluation"]
    run = load_run(shipped.shipped_dir(name))
    rep = evaluate_model(run, n=256, rng=np.random.default_rng(1),
                         temperature=card["temperature"])
    p = card["coherence"]
    se = (p * (1 - p) / 256 + p * (1 - p) / 1024) ** 0.5
    assert abs(rep["coherence"] - p) <= 4 * se + 1e-9, (rep["coherence"], p)


TARGET = 0.9


def _target_case(name: str):
    """A model whose card is below the target is a strict expected failure: the test fails
    the day it passes, so the card and docs get updated."""
    p = shipped.shipped_card(name).get("evaluation", {}).get("coherence", 0.0)
    if p >= TARGET:
        return name
    return pytest.param(name, marks=pytest.mark.xfail(
        strict=True, reason=f"card: coherence {p:.3f} < {TARGET}, the target is not reached"))


@pytest.mark.parametrize("name", [_target_case(x) for x in REAL if x.endswith("-ntp")])
def test_shipped_ntp_reaches_the_coherence_target(name):
    """The coherence target: NTP coherence >= 0.9 on 1,024 generations, greedy on the fixed
    fresh-seed prompts of prompt seed 0 (the card's own evaluation, which this repeats)."""
    card = shipped.shipped_card(name)["evaluation"]
    rep = evaluate_model(load_run(shipped.shipped_dir(name)), n=1024, seed=0, temperature=0.0)
    assert rep["coherence"] == pytest.approx(card["coherence"], abs=3 / 1024)
    assert rep["coherence"] >= TARGET


def test_quick_construction_judges_each_shipped_models_coherence(fake_root, tmp_path):
    from icml25.core import RunContext, load_experiments, select
    from icml25.core.seeding import seed_everything
    from icml25.creativity.experiments import construction

    load_experiments()
    exp = next(e for e in select(["creativity-construction"]))
    settings = {**exp.settings("quick"), "n_eval": 16}
    ctx = RunContext(exp, "quick", 0, settings, tmp_path / "out", seed_everything(0))
    outcome = construction(ctx)
    rows = outcome.comparisons
    assert [r.quantity for r in rows] == ["line: coherence of the shipped ntp model"]
    assert rows[0].verdict != "not comparable"  # judged against the 0.9 bar
    assert outcome.data["line"]["line-tiny"]["n"] == 16
    assert any("circle: no shipped model" in n for n in outcome.notes)
