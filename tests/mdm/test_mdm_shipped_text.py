"""The shipped text MDM and its causal judge: cards, and what they measurably learnt (fast:
single forward passes on held-out modules)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from icml25.mdm.model_io import load_model, read_card  # noqa: E402
from icml25.mdm.text_data import MASK, PAD, load_corpus, window_index, windows  # noqa: E402
from icml25.mdm.text_eval import byte_nll  # noqa: E402


@pytest.fixture(scope="module")
def held_out_windows():
    index = window_index(load_corpus("held_out"), 256)
    picks = np.random.default_rng(7).choice(len(index.starts), 32, replace=False)
    return torch.from_numpy(windows(index, picks))


@pytest.mark.parametrize("task", ["text", "text-causal"])
def test_cards_record_the_command(task):
    card = read_card(task)
    assert card["finished"] and card["command"].startswith("icml25 mdm train --task text")
    assert ("--autoregressive" in card["command"]) == (task == "text-causal")


def test_the_mdm_card_is_the_full_recipe_of_reproduce():
    from icml25.mdm.experiments import TEXT_JUDGE_PHASES, TEXT_MDM_PHASES

    for task, phases in (("text", TEXT_MDM_PHASES), ("text-causal", TEXT_JUDGE_PHASES)):
        card, steps = read_card(task), []
        while card is not None:  # a warm restart nests the card of the model it began with
            steps.insert(0, card["step"])
            card = card.get("started_from")
        assert steps == [n for n, _ in phases], task


def test_the_judge_reads_held_out_code(held_out_windows):
    judge = load_model(task="text-causal")
    assert judge.cfg.causal
    ppl = float(byte_nll(judge, held_out_windows).mean().exp())
    # measured 7.3 per byte on 16 held-out windows (docs/mdm.md); uniform bytes would be 258
    assert ppl < 12, ppl


def test_the_mdm_fills_masked_held_out_bytes_better_than_the_commonest_byte(held_out_windows):
    model = load_model(task="text")
    assert not model.cfg.causal
    gen = torch.Generator().manual_seed(0)
    x = held_out_windows
    masked = (torch.rand(x.shape, generator=gen) < 0.3) & (x != PAD)
    with torch.no_grad():
        logits = model(x.masked_fill(masked, MASK))
    logits[..., MASK] = float("-inf")
    acc = float((logits.argmax(-1) == x)[masked].float().mean())
    space = float((x == ord(" "))[masked].float().mean())  # the commonest byte in code
    # measured on these 2,441 masked bytes: 0.528 against 0.270 for always-space (the model
    # shipped before, 400 steps, got 0.328); the floor fails for that one and keeps this one
    # far above the commonest byte
    assert acc > 0.45 and acc > space + 0.15, (acc, space)


def test_cli_evaluates_text_infilling_through_the_task_registry():
    import json

    from typer.testing import CliRunner

    from icml25.mdm.cli import app

    out = CliRunner().invoke(app, ["evaluate", "--task", "text", "--n", "3", "--planners",
                                   "random,top_margin", "--bytes-per-step", "16"])
    assert out.exit_code == 0, out.output
    report = json.loads(out.stdout)
    assert set(report) == {"single", "multi"}
    for kind in report:
        for planner in ("random", "top_margin"):
            score = report[kind]["16"][planner]
            assert score["exact"]["n"] == 3 and 0 <= score["parses"]["rate"] <= 1
    judge = CliRunner().invoke(app, ["evaluate", "--task", "text-causal", "--n", "8"])
    assert judge.exit_code == 0, judge.output
    assert 1 < json.loads(judge.stdout)["held_out"]["perplexity"] < 12


@pytest.mark.parametrize("args, message", [
    (["--task", "text", "--steps", "4"], "--bytes-per-step, not --steps"),
    (["--task", "sudoku", "--bytes-per-step", "2"], "bytes_per_step does not apply"),
    (["--task", "text", "--bytes-per-step", "0"], "positive"),
    (["--task", "chess"], "unknown task 'chess'"),
    (["--task", "text-causal", "--model", "SHIPPED_TEXT"], "is not causal"),
])
def test_cli_evaluate_refuses_what_a_task_does_not_take(args, message):
    from typer.testing import CliRunner

    from icml25.mdm.cli import app
    from icml25.mdm.model_io import shipped_path

    args = [str(shipped_path("text")) if a == "SHIPPED_TEXT" else a for a in args]
    out = CliRunner().invoke(app, ["evaluate", "--n", "2", *args])
    assert out.exit_code != 0 and message in " ".join(out.output.split()), out.output
