"""Presets: one registry, validated once; ``cpu`` = what we ship, ``paper`` = the notes' sizes."""

import dataclasses

import pytest

from icml25.nn import Transformer
from icml25.nn.presets import PRESET_NAMES, PRESETS, Preset, get_preset, with_overrides


def test_every_system_has_both_presets_and_the_paper_sizes():
    assert set(PRESETS) == {"mdm-sudoku", "mdm-zebra", "mdm-text", "creativity"}
    assert all(set(v) == set(PRESET_NAMES) for v in PRESETS.values())
    sudoku = get_preset("mdm-sudoku", "paper")
    assert (sudoku.n_layers, sudoku.d_model, sudoku.n_heads, sudoku.batch_size) == (3, 384, 12, 128)
    assert sudoku.lr == 1e-3 and sudoku.dropout == 0.1
    assert sudoku.steps * sudoku.batch_size == pytest.approx(540e6, rel=0.01)  # 300 x 1.8M
    gpt2 = get_preset("creativity", "paper")
    assert (gpt2.n_layers, gpt2.d_model, gpt2.n_heads, gpt2.batch_size) == (12, 768, 12, 64)
    assert gpt2.min_lr_ratio == 1.0 and gpt2.warmup_steps == 2000 and gpt2.lr == 1e-4


def _non_embedding_params(system: str, preset: Preset) -> int:
    if system == "creativity":
        from icml25.nn import TransformerConfig

        cfg = TransformerConfig(vocab_size=40, seq_len=40, d_model=preset.d_model,
                                n_layers=preset.n_layers, n_heads=preset.n_heads, causal=True)
    elif system == "mdm-zebra":
        from icml25.mdm.zebra_mdm import default_model_config

        cfg = default_model_config(d_model=preset.d_model, n_layers=preset.n_layers,
                                   n_heads=preset.n_heads)
    else:
        from icml25.mdm.sudoku_mdm import default_model_config

        cfg = default_model_config(d_model=preset.d_model, n_layers=preset.n_layers,
                                   n_heads=preset.n_heads)
    return sum(p.numel() for p in Transformer(cfg).blocks.parameters())


@pytest.mark.parametrize("system, millions", [("mdm-sudoku", 5.3), ("mdm-zebra", 19),
                                              ("creativity", 85)])
def test_paper_models_have_the_papers_parameter_counts(system, millions):
    """The notes: Sudoku ~5.3M in the blocks ("6M"), Zebra "19M", GPT-2 small "86M"."""
    assert _non_embedding_params(system, get_preset(system, "paper")) / 1e6 == pytest.approx(
        millions, rel=0.03)


def test_cpu_presets_are_todays_shipped_settings():
    from icml25.creativity.training import TrainSettings

    for system in ("mdm-sudoku", "mdm-zebra"):
        p = get_preset(system, "cpu")
        assert (p.d_model, p.n_layers, p.n_heads, p.batch_size, p.lr, p.warmup_steps,
                p.steps, p.dropout) == (128, 4, 4, 128, 1e-3, 500, 20_000, 0.0)
    c, t = get_preset("creativity", "cpu"), TrainSettings()
    for field in ("d_model", "n_layers", "n_heads", "batch_size", "lr", "warmup_steps", "steps",
                  "weight_decay", "min_lr_ratio", "dropout"):
        assert getattr(c, field) == getattr(t, field), field


def test_the_text_cpu_preset_is_the_shipped_text_mdm():
    import json

    from icml25.mdm.model_io import read_card, shipped_path

    p = get_preset("mdm-text", "cpu")
    config = json.loads((shipped_path("text") / "config.json").read_text())
    model, train = config["model"], config["train"]
    assert (p.d_model, p.n_layers, p.n_heads, p.dropout) == (
        model["d_model"], model["n_layers"], model["n_heads"], model["dropout"])
    assert (p.batch_size, p.lr, p.warmup_steps, p.steps, p.weight_decay, p.min_lr_ratio) == (
        train["batch_size"], train["lr"], train["warmup_steps"], train["steps"],
        train["weight_decay"], train["min_lr_ratio"])
    assert read_card("text")["finished"]


def test_explicit_values_override_and_are_checked():
    paper = get_preset("mdm-sudoku", "paper")
    mine = with_overrides(paper, batch_size=1024, lr=None, d_model=None)
    assert mine.batch_size == 1024 and mine.lr == paper.lr and mine.d_model == 384
    with pytest.raises(ValueError, match="multiple of n_heads"):
        with_overrides(paper, d_model=100)
    with pytest.raises(ValueError, match="preset must be one of paper | cpu"):
        get_preset("mdm-sudoku", "gpu")
    with pytest.raises(ValueError, match="no presets"):
        get_preset("mdm-chess", "cpu")
    with pytest.raises(ValueError, match="dropout"):
        dataclasses.replace(paper, dropout=1.0)
