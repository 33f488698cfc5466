"""``icml25 mdm solve``: `unsolved:` lines for a model that cannot solve, ``--json`` records,
``--remask`` / ``--threshold`` reach the decoder, bad choices are usage errors; the task
registry behind ``train``."""

import json

import pytest
import torch
from typer.testing import CliRunner

from icml25.mdm.cli import app
from icml25.mdm.sudoku_mdm import default_model_config
from icml25.mdm.tasks import TASKS, get_task, train_task
from icml25.nn import TrainConfig, Transformer

EASY = "530070000600195000098000060800060003400803001700020006060000280000419005000080079"
runner = CliRunner()


@pytest.fixture(scope="module")
def untrained(tmp_path_factory):
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("m")
    Transformer(default_model_config(d_model=16, n_layers=1, n_heads=2)).save(path)
    return path


def test_a_model_that_cannot_solve_prints_unsolved_lines(tmp_path, untrained):
    f = tmp_path / "p.txt"
    f.write_text(f"{EASY}\nnot a puzzle\n{EASY.replace('0', '.')}\n")
    out = runner.invoke(app, ["solve", "--file", str(f), "--model", str(untrained),
                              "--steps", "5"])
    assert out.exit_code == 0, out.output
    lines = out.stdout.splitlines()
    assert len(lines) == 3 and lines[1].startswith("error: ")
    for line in (lines[0], lines[2]):
        assert line.startswith("unsolved: ")
        grid = line.removeprefix("unsolved: ")
        assert len(grid) == 81 and grid.isdigit()
        assert all(a == b for a, b in zip(EASY, grid, strict=True) if a != "0")  # clues kept
    assert "0 solved (valid), 2 unsolved, 1 rejected" in out.stderr


@pytest.mark.parametrize("extra", [[], ["--remask", "conf:0.2"], ["--threshold", "0.5"]])
def test_json_gives_one_record_per_line(tmp_path, untrained, extra):
    f = tmp_path / "p.txt"
    f.write_text(f"{EASY}\nbad\n")
    out = runner.invoke(app, ["solve", "--file", str(f), "--model", str(untrained), "--steps",
                              "6", "--json", *extra])
    assert out.exit_code == 0, out.output
    good, bad = (json.loads(line) for line in out.stdout.splitlines())
    assert good["valid"] is False and len(good["solution"]) == 81 and good["error"] is None
    assert 1 <= good["steps"] <= 6 and good["seconds"] > 0
    assert bad["valid"] is False and bad["solution"] is None and "length" in bad["error"]


def test_threshold_spends_fewer_steps_when_the_model_is_sure(untrained):
    from icml25.mdm.sudoku_mdm import solve_sudoku

    net = Transformer.load(untrained)
    (plain,) = solve_sudoku(EASY, model=net, steps=50)
    (fast,) = solve_sudoku(EASY, model=net, steps=50, threshold=0.0)  # everything at once
    assert plain.steps == 50 and fast.steps == 1


@pytest.mark.parametrize("args, hint", [(["--remask", "sometimes"], "--remask"),
                                        (["--planner", "best"], "--planner"),
                                        (["--threshold", "1.5"], "--threshold")])
def test_bad_decoder_choices_are_usage_errors(untrained, args, hint):
    out = runner.invoke(app, ["solve", EASY, "--model", str(untrained), *args],
                        env={"COLUMNS": "200"})
    assert out.exit_code == 2 and hint in out.output


def test_every_task_builds_its_model_and_refuses_options_it_does_not_use():
    assert set(TASKS) == {"sudoku", "sudoku-ar", "zebra", "text", "text-causal"}
    sizes = dict(d_model=16, n_layers=1, n_heads=2, dropout=0.0)
    cfg = TrainConfig(steps=1, batch_size=2)
    for name in TASKS:
        spec = get_task(name)
        assert spec.model_config(**sizes).causal == spec.causal
    with pytest.raises(ValueError, match="min_mask_rate does not apply to task sudoku"):
        train_task(get_task("sudoku"), None, cfg, sizes, min_mask_rate=0.5)
    with pytest.raises(ValueError, match="weighting does not apply to task sudoku-ar"):
        train_task(get_task("sudoku-ar"), None, cfg, sizes, weighting="none")
    with pytest.raises(ValueError, match="unknown task"):
        get_task("chess")


def test_train_finds_the_autoregressive_variant_in_the_registry():
    from icml25.mdm.tasks import training_task

    assert training_task("sudoku", autoregressive=True).name == "sudoku-ar"
    assert training_task("text", autoregressive=True).name == "text-causal"
    assert training_task("zebra").name == "zebra"
    with pytest.raises(ValueError, match="zebra has no autoregressive variant"):
        training_task("zebra", autoregressive=True)
    out = CliRunner().invoke(app, ["train", "--task", "zebra", "--autoregressive", "--steps", "1"])
    assert out.exit_code != 0 and "no autoregressive variant" in out.output


def test_sudoku_modules_do_not_import_each_other():
    import ast
    from pathlib import Path

    import icml25.mdm as mdm

    root = Path(mdm.__file__).parent
    imports = {}
    for name in ("sudoku_mdm", "sudoku_ar"):
        tree = ast.parse((root / f"{name}.py").read_text())
        imports[name] = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "icml25.mdm.sudoku_mdm" not in imports["sudoku_ar"]
