"""The Sudoku MDM glue: batches, loss, solving files with bad lines, the CLI contract."""

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from icml25.mdm import sudoku
from icml25.mdm.cli import app
from icml25.mdm.sudoku_mdm import (
    default_model_config,
    solve_sudoku,
    sudoku_batch,
    sudoku_loss,
)
from icml25.nn import Transformer

EASY = "530070000600195000098000060800060003400803001700020006060000280000419005000080079"


@pytest.fixture(scope="module")
def data():
    return sudoku.generate_dataset(6, seed=11)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    torch.manual_seed(0)
    model = Transformer(default_model_config(d_model=16, n_layers=1, n_heads=2)).eval()
    path = tmp_path_factory.mktemp("model")
    model.save(path)
    return model, path


def test_batches_are_augmented_valid_boards_with_blanks_maskable(data):
    puzzles, solutions = data
    tokens, maskable = sudoku_batch(puzzles, solutions, 32, torch.Generator().manual_seed(0))
    grids = tokens.numpy().astype(np.int8)
    assert sudoku.is_valid_solution(grids).all()
    # Clue count is preserved by the symmetries, so the maskable counts are the puzzles' blanks.
    assert set(maskable.sum(1).tolist()) <= set((puzzles == 0).sum(1).tolist())


def test_loss_only_scores_blank_cells(data):
    tokens, maskable = sudoku_batch(*data, 16, torch.Generator().manual_seed(1))

    def knows_blanks_only(x):
        """Certain and right on blank cells, certain and wrong on clue cells."""
        right = torch.nn.functional.one_hot(tokens, 10).float() * 50
        wrong = torch.nn.functional.one_hot(tokens % 9 + 1, 10).float() * 50
        return torch.where(maskable[..., None], right, wrong)

    loss, metrics = sudoku_loss(knows_blanks_only, (tokens, maskable),
                                torch.Generator().manual_seed(2))
    assert loss.item() < 1e-6 and metrics["masked_cell_acc"] == 1.0


def test_solve_keeps_one_result_per_line_and_reports_bad_lines(tiny_model):
    model, _ = tiny_model
    lines = [EASY, "123", EASY.replace("5", "x", 1), "55" + EASY[2:], EASY.replace("0", ".")]
    results = solve_sudoku(lines, model=model, steps=5)
    assert len(results) == 5
    assert results[1].error and "length" in results[1].error
    assert results[2].error and "x" in results[2].error
    assert results[3].error  # two 5s in the first row: contradictory clues
    for r in (results[0], results[4]):
        assert r.error is None and len(r.solution) == 81
        assert all(a == b for a, b in zip(EASY, r.solution, strict=True) if a != "0")


def test_cli_solve_file_writes_exactly_one_line_per_input(tmp_path, tiny_model):
    _, path = tiny_model
    f = tmp_path / "p.txt"
    f.write_text(f"{EASY}\nbad\n{EASY}\n")
    out = CliRunner().invoke(app, ["solve", "--file", str(f), "--model", str(path), "--steps", "3"])
    assert out.exit_code == 0, out.output
    lines = out.stdout.splitlines()
    assert len(lines) == 3 and lines[1].startswith("error: ")
    grids = [line.removeprefix("unsolved: ") for line in (lines[0], lines[2])]
    assert all(len(g) == 81 and g.isdigit() for g in grids)  # an untrained model's answers
    assert all(line.startswith("unsolved: ") or line.isdigit() for line in (lines[0], lines[2]))
    assert "3 puzzles" in out.stderr and "1 rejected" in out.stderr


def test_a_short_run_resumes_and_exports_with_its_training_card(tmp_path, data):
    import json

    from icml25.mdm.model_io import describe_card
    from icml25.mdm.sudoku_mdm import export_checkpoint, load_model, train_sudoku
    from icml25.nn import TrainConfig

    cfg = TrainConfig(steps=4, batch_size=8, warmup_steps=1, checkpoint_every=2, log_every=2,
                      out_dir=str(tmp_path / "run"))
    small = default_model_config(d_model=16, n_layers=1, n_heads=2)
    train_sudoku(*data, TrainConfig(**{**cfg.__dict__, "steps": 2}), small)
    model, log = train_sudoku(*data, cfg, small)  # resumes at step 2
    assert [row["step"] for row in log] == [2, 4]
    dest = export_checkpoint(tmp_path / "run", tmp_path / "exported", "icml25 mdm train ...")
    card = json.loads((dest / "training.json").read_text())
    assert card["step"] == 4 and card["finished"] and card["examples_seen"] == 32
    again = export_checkpoint(tmp_path / "run", tmp_path / "restarted", "... --init X",
                              started_from=card)
    chained = json.loads((again / "training.json").read_text())
    assert chained["started_from"] == card and chained["examples_seen_total"] == 64
    third = export_checkpoint(tmp_path / "run", tmp_path / "third", "... --init Y",
                              started_from=chained)
    text = describe_card(json.loads((third / "training.json").read_text()))
    assert "(... --init X), itself a warm restart of" in text and "(icml25 mdm train ...)" in text
    assert "96 examples in all" in text  # a warm restart of a warm restart counts all three
    x = torch.zeros(1, 81, dtype=torch.long)
    assert torch.equal(load_model(dest)(x), model.eval()(x))


def test_cell_groups_are_rows_columns_and_boxes():
    from icml25.mdm.sudoku_mdm import cell_groups

    rows, cols, boxes = cell_groups()
    assert (rows[30], cols[30], boxes[30]) == (3, 3, 4)
    assert (rows[80], cols[80], boxes[80]) == (8, 8, 8)
    for ids in (rows, cols, boxes):
        assert np.bincount(ids).tolist() == [9] * 9
    grid = np.array(boxes).reshape(9, 9)
    assert (grid[:3, :3] == 0).all() and (grid[6:, 3:6] == 7).all()
    cfg = default_model_config(cell_embeddings=True)
    assert cfg.position_groups == [rows, cols, boxes]


def test_cli_evaluate_reads_a_puzzle_file(tmp_path, tiny_model, data):
    import json

    _, path = tiny_model
    f = tmp_path / "held_out.npz"
    sudoku.save_dataset(f, *data, seed=11, difficulty="easy")
    out = CliRunner().invoke(app, ["evaluate", "--model", str(path), "--data", str(f),
                                   "--planners", "random,top_margin", "--steps", "3",
                                   "--noise", "0.5"])
    assert out.exit_code == 0, out.output
    report = json.loads(out.stdout)
    assert set(report) == {"random", "top_margin"}
    assert all(r["n"] == len(data[0]) and 0 <= r["cell_acc"] <= 1 for r in report.values())
    missing = CliRunner().invoke(app, ["evaluate", "--data", str(tmp_path / "none.npz")])
    assert missing.exit_code == 2  # a usage error, not a traceback


def test_init_starts_a_fresh_schedule_from_a_models_weights(tmp_path, tiny_model, data):
    import json

    from icml25.mdm.sudoku_mdm import load_model

    model, path = tiny_model
    f = tmp_path / "train.npz"
    sudoku.save_dataset(f, *data, seed=11, difficulty="easy")
    run = tmp_path / "restart"
    out = CliRunner().invoke(app, ["train", "--data", str(f), "--out", str(run), "--steps", "2",
                                   "--batch-size", "4", "--warmup", "1", "--lr", "1e-2",
                                   "--init", str(path)])
    assert out.exit_code == 0, out.output
    restarted = load_model(run / "model")
    assert restarted.cfg == model.cfg  # the size options are taken from --init
    x = torch.zeros(1, 81, dtype=torch.long)
    assert not torch.equal(restarted(x), model(x))  # trained on from there ...
    card = json.loads((run / "model" / "training.json").read_text())
    assert card["final"]["step"] == 2  # ... with its own step count and schedule
    bad = CliRunner().invoke(app, ["train", "--data", str(f), "--out", str(tmp_path / "x"),
                                   "--steps", "1", "--init", str(tmp_path / "nowhere")])
    assert bad.exit_code == 2 and "--init" in bad.output
    other_task = CliRunner().invoke(app, ["train", "--task", "zebra", "--n-puzzles", "1",
                                          "--out", str(tmp_path / "z"), "--steps", "1",
                                          "--init", str(path)])
    assert other_task.exit_code == 2 and "vocabulary" in other_task.output


def test_full_reproduction_trains_every_phase_then_evaluates(tmp_path, monkeypatch):
    import dataclasses

    import icml25.mdm.experiments  # noqa: F401  (registers mdm-sudoku; other rooms not needed)
    from icml25.core import run_experiment, select
    from icml25.mdm import sudoku_mdm

    phases, real = [], sudoku_mdm.train_sudoku

    def spy(puzzles, solutions, cfg, *args, init=None, **kw):
        model, log = real(puzzles, solutions, cfg, *args, init=init, **kw)
        phases.append((cfg.steps, cfg.lr, cfg.batch_size, init is not None))
        return model, log

    monkeypatch.setattr(sudoku_mdm, "train_sudoku", spy)

    (exp,) = select(["mdm-sudoku"])
    assert len(exp.settings("full")["restarts"]) >= 1  # the shipped model's warm restarts
    tiny = {"train_steps": 2, "restarts": [(1, 3e-4, 8), (1, 4e-4, 16)], "base_puzzles": 8,
            "n_easy": 2, "n_hard": 1, "steps": 5, "sweep_n": 2}
    result = run_experiment(dataclasses.replace(exp, full=tiny), mode="full", out_root=tmp_path)
    assert result.status == "ok", result.error
    assert phases[1:] == [(1, 3e-4, 8, True), (1, 4e-4, 16, True)] and not phases[0][3]
    assert "warm restarts of 1 steps x 8 at lr 0.0003; 1 steps x 16 at lr 0.0004" in (
        " ".join(result.notes))
    assert {c.quantity for c in result.comparisons} >= {
        "easy: top margin (%)", "hard: vanilla (%)", "easy: autoregressive, row-major (%)",
        "hard: autoregressive, row-major (%)"}
    (ar,) = [c for c in result.comparisons if c.quantity.startswith("easy: autoregressive")]
    assert ar.published == 9.73 and 0 <= ar.ours <= 100


def test_an_answer_that_breaks_the_rules_is_not_printed_as_a_solution():
    # before: the grid alone, indistinguishable from a solution
    from icml25.mdm.sudoku_mdm import SolveResult

    grid = "1" * 81
    assert SolveResult(grid, valid=False).line() == f"unsolved: {grid}"
    assert SolveResult(grid, valid=True).line() == grid
    assert SolveResult(None, valid=False, error="bad length").line() == "error: bad length"
