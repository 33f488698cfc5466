"""`icml25 mdm`'s scale-out flags: --preset, --device, --precision, --compile, --grad-accum."""

import json
import re

import pytest
from typer.testing import CliRunner

from icml25.mdm import sudoku
from icml25.mdm.cli import app

runner = CliRunner()
EASY = "530070000600195000098000060800060003400803001700020006060000280000419005000080079"


def _plain(text: str) -> str:
    """The words of a (rich, boxed, wrapped) message, one space between them."""
    return re.sub(r"[\s│╭╮╰╯─]+", " ", re.sub(r"\x1b\[[0-9;]*m", "", text))


def test_train_help_shows_the_scale_options():
    out = _plain(runner.invoke(app, ["train", "--help"], env={"COLUMNS": "200"}).output)
    for flag in ("--device", "--precision", "--compile", "--no-compile", "--grad-accum",
                 "--preset", "--max-seconds"):
        assert flag in out, flag
    for cmd in ("solve", "evaluate"):
        assert "--device" in _plain(runner.invoke(app, [cmd, "--help"],
                                                  env={"COLUMNS": "200"}).output)


@pytest.fixture(scope="module")
def data_file(tmp_path_factory):
    f = tmp_path_factory.mktemp("data") / "train.npz"
    sudoku.save_dataset(f, *sudoku.generate_dataset(6, seed=11), seed=11, difficulty="easy")
    return f


def test_paper_preset_gives_the_papers_model_and_flags_override_it(tmp_path, data_file):
    run = tmp_path / "paper"
    out = runner.invoke(app, ["train", "--preset", "paper", "--data", str(data_file), "--out",
                              str(run), "--steps", "2", "--batch-size", "2", "--device", "cpu",
                              "--precision", "bf16", "--grad-accum", "2"])
    assert out.exit_code == 0, out.output
    meta = json.loads((run / "model" / "config.json").read_text())
    m = meta["model"]
    assert (m["d_model"], m["n_layers"], m["n_heads"], m["dropout"]) == (384, 3, 12, 0.1)
    card = json.loads((run / "model" / "training.json").read_text())
    assert card["preset"] == "paper" and card["precision"] == "bf16"
    assert card["grad_accum_steps"] == 2 and card["stopped_early"] is False
    train = json.loads((run / "checkpoint" / "config.json").read_text())["train"]
    assert (train["batch_size"], train["lr"], train["weight_decay"]) == (2, 1e-3, 0.0)
    assert (train["precision"], train["grad_accum_steps"], train["device"]) == ("bf16", 2, "cpu")
    # explicit size flags win over the preset's
    out = runner.invoke(app, ["train", "--preset", "paper", "--data", str(data_file), "--out",
                              str(tmp_path / "mine"), "--steps", "1", "--batch-size", "2",
                              "--d-model", "48", "--n-heads", "4", "--dropout", "0"])
    assert out.exit_code == 0, out.output
    m = json.loads((tmp_path / "mine" / "model" / "config.json").read_text())["model"]
    assert (m["d_model"], m["n_layers"], m["n_heads"], m["dropout"]) == (48, 3, 4, 0.0)


def test_cpu_preset_is_the_default(tmp_path, data_file):
    out = runner.invoke(app, ["train", "--data", str(data_file), "--out", str(tmp_path / "r"),
                              "--steps", "1", "--batch-size", "2"])
    assert out.exit_code == 0, out.output
    m = json.loads((tmp_path / "r" / "model" / "config.json").read_text())["model"]
    assert (m["d_model"], m["n_layers"], m["n_heads"]) == (128, 4, 4)


@pytest.mark.parametrize("args, words", [
    (["--precision", "fp8"], "precision must be one of fp32, bf16, fp16"),
    (["--device", "gpu"], "device must be"),
    (["--preset", "huge"], "preset must be one of paper | cpu"),
    (["--d-model", "100", "--preset", "paper"], "multiple of n_heads"),
    (["--grad-accum", "0"], "--grad-accum"),
])
def test_bad_scale_options_are_usage_errors(tmp_path, data_file, args, words):
    out = runner.invoke(app, ["train", "--data", str(data_file), "--out", str(tmp_path / "x"),
                              "--steps", "1", *args], env={"COLUMNS": "200"})
    assert out.exit_code == 2 and words in _plain(out.output)


def test_solve_and_evaluate_on_a_named_device(tmp_path, data_file):
    import torch

    from icml25.mdm.sudoku_mdm import default_model_config
    from icml25.nn import Transformer

    torch.manual_seed(0)
    Transformer(default_model_config(d_model=16, n_layers=1, n_heads=2)).save(tmp_path / "m")
    out = runner.invoke(app, ["solve", EASY, "--model", str(tmp_path / "m"), "--steps", "3",
                              "--device", "cpu"])
    assert out.exit_code == 0, out.output
    assert len(out.stdout.strip().removeprefix("unsolved: ")) == 81
    out = runner.invoke(app, ["evaluate", "--model", str(tmp_path / "m"), "--data",
                              str(data_file), "--planners", "top_margin", "--steps", "3",
                              "--device", "cpu", "--batch-size", "4"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["top_margin"]["n"] == 6
    if not torch.cuda.is_available():
        out = runner.invoke(app, ["solve", EASY, "--model", str(tmp_path / "m"),
                                  "--device", "cuda"], env={"COLUMNS": "200"})
        assert out.exit_code == 2 and "no CUDA device" in _plain(out.output)
