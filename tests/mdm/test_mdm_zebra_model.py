"""The Zebra MDM glue: augmentation, storage, the answer-first layout, training and the CLI."""

import json

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from icml25.mdm import zebra
from icml25.mdm.cli import app
from icml25.mdm.zebra_mdm import (
    default_model_config,
    encode_batch,
    evaluate_zebra,
    solve_zebra,
    zebra_loss,
)
from icml25.nn import Transformer


@pytest.fixture(scope="module")
def puzzles():
    return zebra.generate_dataset(8, seed=21)


@pytest.fixture(scope="module")
def tiny_model():
    torch.manual_seed(0)
    return Transformer(default_model_config(d_model=16, n_layers=1, n_heads=2)).eval()


def test_augmented_puzzles_keep_a_unique_solution_that_the_checker_accepts(puzzles):
    rng = np.random.default_rng(0)
    for pz in puzzles:
        for _ in range(4):
            aug = zebra.augment(pz, rng)
            assert zebra.check(aug, aug.solution)
            assert zebra.count_solutions(aug.n_houses, aug.n_attrs, aug.clues, limit=3) == 1
            assert (zebra.solve(aug.n_houses, aug.n_attrs, aug.clues) == aug.solution).all()
    assert len({str(zebra.augment(puzzles[0], rng).clues) for _ in range(5)}) == 5


def test_save_and_load_round_trip_and_bad_lines(tmp_path, puzzles):
    path = zebra.save_puzzles(tmp_path / "p.jsonl", puzzles)
    back = zebra.load_puzzles(path)
    assert [p.clues for p in back] == [p.clues for p in puzzles]
    assert all((a.solution == b.solution).all() for a, b in zip(back, puzzles, strict=True))
    path.write_text(path.read_text() + '{"n_houses": 9}\n')
    with pytest.raises(zebra.ZebraError, match=":9:"):
        zebra.load_puzzles(path)


def test_layout_puts_the_answer_first_and_masks_only_its_cells(puzzles):
    tokens, maskable = encode_batch(puzzles)
    longest = max(len(zebra.encode(p)[0]) for p in puzzles)
    assert tokens.shape == maskable.shape == (len(puzzles), zebra.ANSWER_LEN + longest)
    for i, pz in enumerate(puzzles):
        prompt, answer = zebra.encode(pz)
        assert tokens[i, :36].tolist() == answer.tolist()
        assert tokens[i, 36:36 + len(prompt)].tolist() == prompt.tolist()
        assert int(maskable[i].sum()) == pz.n_houses * pz.n_attrs
        assert not maskable[i, 36:].any()
    with pytest.raises(zebra.ZebraError, match="room"):
        encode_batch(puzzles, max_prompt=5)


class _PositionOnly(torch.nn.Module):
    """Logits that depend on the position only, so a loss change can only come from targets."""

    def __init__(self, length: int) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(length, zebra.VOCAB_SIZE))

    def forward(self, x):
        return self.w[:x.shape[1]].expand(x.shape[0], -1, -1)


def test_loss_scores_only_answer_cells(puzzles):
    tokens, maskable = encode_batch(puzzles[:4])
    model = _PositionOnly(tokens.shape[1])

    def loss(t):
        return zebra_loss(model, (t, maskable), torch.Generator().manual_seed(0))[0]

    base = loss(tokens)
    clues_and_pads = tokens.masked_fill(~maskable, zebra.SEP)
    assert torch.equal(loss(clues_and_pads), base)
    answers = tokens.masked_fill(maskable, zebra.VOCAB.index("P0"))
    assert not torch.equal(loss(answers), base)


def test_solve_returns_a_grid_per_puzzle_in_input_order(tiny_model, puzzles):
    grids = solve_zebra(tiny_model, puzzles, steps=4)
    assert [g.shape for g in grids] == [(p.n_houses, p.n_attrs) for p in puzzles]
    report = evaluate_zebra(tiny_model, puzzles, ["random", "top_margin"], steps=4)
    assert set(report) == {"random", "top_margin"}
    assert all(r["n"] == len(puzzles) and 0 <= r["cell_acc"] <= 1 for r in report.values())
    sizes = [f"{p.n_houses}x{p.n_attrs}" for p in puzzles]
    for r in report.values():  # the per-size rates average back to the overall one
        assert set(r["by_size"]) == set(sizes)
        overall = sum(r["by_size"][s] for s in sizes) / len(sizes)
        assert overall == pytest.approx(r["solved"])
        assert set(r["cell_acc_by_size"]) == set(sizes)
        assert min(r["cell_acc_by_size"].values()) <= r["cell_acc"] <= max(
            r["cell_acc_by_size"].values())


def test_cli_trains_and_evaluates_a_zebra_model(tmp_path, puzzles):
    data = zebra.save_puzzles(tmp_path / "train.jsonl", puzzles)
    run = tmp_path / "run"
    out = CliRunner().invoke(app, ["train", "--task", "zebra", "--data", str(data), "--out",
                                   str(run), "--steps", "3", "--batch-size", "4", "--warmup",
                                   "1", "--d-model", "16", "--n-layers", "1", "--n-heads", "2",
                                   "--cell-embeddings"])
    assert out.exit_code == 0, out.output
    card = json.loads((run / "model" / "training.json").read_text())
    assert card["base_puzzles"] == len(puzzles) and card["final"]["step"] == 3
    assert Transformer.load(run / "model").cfg.positions == "rotary"  # Zebra's default

    out = CliRunner().invoke(app, ["evaluate", "--task", "zebra", "--model", str(run),
                                   "--data", str(data), "--steps", "3"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["top_margin"]["n"] == len(puzzles)
    gen = CliRunner().invoke(app, ["generate", "--task", "zebra", "--n", "2", "-o",
                                   str(tmp_path / "z.jsonl")])
    assert gen.exit_code == 0 and len(zebra.load_puzzles(tmp_path / "z.jsonl")) == 2
    small = CliRunner().invoke(app, ["generate", "--task", "zebra", "--n", "3", "--houses", "3",
                                     "--attrs", "4", "-o", str(tmp_path / "s.jsonl")])
    assert small.exit_code == 0, small.output
    assert {(p.n_houses, p.n_attrs) for p in zebra.load_puzzles(tmp_path / "s.jsonl")} == {(3, 4)}
    sudoku_sized = CliRunner().invoke(app, ["generate", "--houses", "3", "-o",
                                            str(tmp_path / "x.txt")])
    assert sudoku_sized.exit_code == 2


def test_cli_positions_option(tmp_path, puzzles):
    data = zebra.save_puzzles(tmp_path / "train.jsonl", puzzles)
    args = ["train", "--task", "zebra", "--data", str(data), "--steps", "1", "--batch-size",
            "2", "--warmup", "1", "--d-model", "16", "--n-layers", "1", "--n-heads", "2"]
    out = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "a"), "--positions", "learned"])
    assert out.exit_code == 0, out.output
    assert Transformer.load(tmp_path / "a" / "model").cfg.positions == "learned"
    out = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "b"), "--positions", "alibi"])
    assert out.exit_code != 0 and "learned or rotary" in out.output


def test_cli_curriculum_stage_lookup_puzzles_all_masked(tmp_path):
    data = tmp_path / "lookup.jsonl"
    gen = CliRunner().invoke(app, ["generate", "--task", "zebra", "--lookup", "--n", "4",
                                   "-o", str(data)])
    assert gen.exit_code == 0, gen.output
    assert all({c.kind for c in p.clues} == {"at"} for p in zebra.load_puzzles(data))
    args = ["train", "--task", "zebra", "--data", str(data), "--steps", "1", "--batch-size",
            "2", "--warmup", "1", "--d-model", "16", "--n-layers", "1", "--n-heads", "2"]
    out = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "a"), "--min-mask-rate", "1"])
    assert out.exit_code == 0, out.output
    extra = json.loads((tmp_path / "a" / "model" / "config.json").read_text())
    assert extra["min_mask_rate"] == 1.0
    sudoku = CliRunner().invoke(app, ["train", "--n-puzzles", "1", "--steps", "1",
                                      "--out", str(tmp_path / "s"), "--min-mask-rate", "1"])
    assert sudoku.exit_code == 2 and "min_mask_rate does not apply to task sudoku" in " ".join(
        sudoku.output.split())

def test_zebra_experiment_is_registered_beside_the_paper_table():
    from icml25.core import load_experiments, select

    load_experiments()
    (exp,) = select(["mdm-zebra"])
    assert exp.published == {"vanilla (%)": 76.9, "top prob (%)": 98.5, "top margin (%)": 98.3}
    assert exp.settings("quick")["train_steps"] == 0 and exp.settings("full")["train_steps"] > 0


def test_full_reproduction_trains_the_three_stage_curriculum(tmp_path, monkeypatch):
    import dataclasses

    from icml25.core import load_experiments, run_experiment, select
    from icml25.mdm import zebra_mdm

    stages, real = [], zebra_mdm.train_zebra

    def spy(puzzles, cfg, model_cfg=None, *, init=None, min_mask_rate=0.0, **kw):
        stages.append((cfg.steps, min_mask_rate, init is not None,
                       {p.n_houses for p in puzzles}, {c.kind for p in puzzles for c in p.clues}))
        small = dataclasses.replace(model_cfg, d_model=16, n_layers=1, n_heads=2)
        return real(puzzles, cfg, small, init=init, min_mask_rate=min_mask_rate, **kw)

    monkeypatch.setattr(zebra_mdm, "train_zebra", spy)
    load_experiments()
    (exp,) = select(["mdm-zebra"])
    tiny = {"lookup_h3_steps": 1, "lookup_steps": 2, "train_steps": 3, "n_train": 4,
            "n_lookup": 8, "n_test": 2}
    result = run_experiment(dataclasses.replace(exp, full=tiny), mode="full", out_root=tmp_path)
    assert result.status == "ok", result.error
    (s1, r1, i1, h1, k1), (s2, r2, i2, _, k2), (s3, r3, i3, _, k3) = stages
    assert (s1, r1, i1, h1, k1) == (1, 1.0, False, {3}, {"at"})
    assert (s2, r2, i2, k2) == (2, 1.0, True, {"at"})
    assert (s3, r3, i3) == (3, 0.0, True) and len(k3) > 2  # real clues beside the lookups
    assert {c.quantity for c in result.comparisons} == {"vanilla (%)", "top prob (%)",
                                                        "top margin (%)"}


def test_cell_embeddings_name_each_answer_cells_attribute_and_value(puzzles):
    from icml25.mdm.zebra_mdm import cell_groups

    attrs, values = cell_groups(max_prompt=10)
    assert len(attrs) == len(values) == zebra.ANSWER_LEN + 10
    assert (attrs[8], values[8]) == (1, 2) and (attrs[35], values[35]) == (5, 5)
    assert set(attrs[zebra.ANSWER_LEN:]) == set(values[zebra.ANSWER_LEN:]) == {zebra.MAX_SIZE}
    cfg = default_model_config(cell_embeddings=True, d_model=16, n_layers=1, n_heads=2)
    assert len(cfg.position_groups) == 2 and len(cfg.position_groups[0]) == cfg.seq_len
    tokens, maskable = encode_batch(puzzles)
    assert Transformer(cfg)(tokens).shape == (*tokens.shape, zebra.VOCAB_SIZE)
