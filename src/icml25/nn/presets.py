"""Named training setups, one registry for every room that trains an ``icml25.nn`` model:
``cpu`` is what we ship (trainable on two CPU cores), ``paper`` the paper's model and batch.

Each entry is validated once, here, at import. A command's explicit flags override its preset's
fields (:func:`with_overrides`). Where the paper does not state a number, the entry says so in
``source``; numbers and their provenance are in ``shared/papers`` (masked-diffusion-ordering.md,
algorithmic-creativity.md) and docs/nn.md.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Preset:
    """A model size and its optimisation recipe (``batch_size`` is per process)."""

    d_model: int
    n_layers: int
    n_heads: int
    batch_size: int
    lr: float
    warmup_steps: int
    steps: int
    weight_decay: float = 0.01
    min_lr_ratio: float = 0.1  # 1.0 = constant after the warm-up, 0.0 = cosine to zero
    dropout: float = 0.0
    source: str = ""

    def __post_init__(self) -> None:
        for name in ("d_model", "n_layers", "n_heads", "batch_size", "steps"):
            if getattr(self, name) < 1:
                raise ValueError(f"preset {name} must be positive, got {getattr(self, name)}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} must be a multiple of "
                             f"n_heads={self.n_heads}")
        if not self.lr > 0 or self.warmup_steps < 0 or self.weight_decay < 0:
            raise ValueError("lr must be positive; warmup_steps and weight_decay >= 0")
        if not 0 <= self.min_lr_ratio <= 1 or not 0 <= self.dropout < 1:
            raise ValueError("min_lr_ratio must be in [0, 1] and dropout in [0, 1)")


PRESETS: dict[str, dict[str, Preset]] = {
    "mdm-sudoku": {
        "cpu": Preset(d_model=128, n_layers=4, n_heads=4, batch_size=128, lr=1e-3,
                      warmup_steps=500, steps=20_000,
                      source="ours: 0.8M parameters, the shipped Sudoku model's settings"),
        # Kim et al.: 6M GPT-2 "tiny" (3 x 384, 12 heads, dropout 0.1), lr 1e-3, batch 128,
        # 300 epochs of 1.8M puzzles = 540M examples = 4.2M steps at 128 (the authors' script
        # ran 128 per GPU on 8 GPUs: 530k steps at 1,024). HF Trainer defaults: no weight
        # decay, cosine to zero. The warm-up is ours (none is stated).
        "paper": Preset(d_model=384, n_layers=3, n_heads=12, batch_size=128, lr=1e-3,
                        warmup_steps=500, steps=4_200_000, weight_decay=0.0, min_lr_ratio=0.0,
                        dropout=0.1, source="Kim et al. 2025 (6M model, batch 128, 300 "
                                            "epochs); warm-up ours"),
    },
    "mdm-zebra": {
        "cpu": Preset(d_model=128, n_layers=4, n_heads=4, batch_size=128, lr=1e-3,
                      warmup_steps=500, steps=20_000,
                      source="ours: 0.8M parameters, the CLI's shipped defaults"),
        # Kim et al.: a 19M model (its shape is not published: 6 x 512 gives 18.9M in the
        # blocks), lr 1e-3, batch 128, 300 epochs of ~1.5M puzzles = 3.5M steps at 128.
        "paper": Preset(d_model=512, n_layers=6, n_heads=8, batch_size=128, lr=1e-3,
                        warmup_steps=500, steps=3_500_000, weight_decay=0.0, min_lr_ratio=0.0,
                        dropout=0.1, source="Kim et al. 2025 (19M model, batch 128, 300 "
                                            "epochs); the 6 x 512 shape and warm-up are ours"),
    },
    "mdm-text": {
        # the byte-level MDM on Python's standard library (icml25.mdm.text_mdm): 0.86M
        # parameters, 256-byte windows, batch 16 on one CPU thread. Steps and warm-up are the
        # shipped model's second phase (its card: a warm restart of a 400-step run).
        "cpu": Preset(d_model=128, n_layers=4, n_heads=4, batch_size=16, lr=1e-3,
                      warmup_steps=100, steps=1_600,
                      source="ours: the shipped text MDM's settings (docs/mdm.md)"),
        # Kim et al.'s text MDMs are pretrained models of Nie et al. (SMDM): 170M (Fig. 3
        # caption) or 1.1B (App. D.1.2), L = 2048, AdamW (0.9, 0.95), wd 0.1, cosine 4e-4 ->
        # 4e-5. The 170M shape (12 x 768) is our reading; the batch and steps are not stated.
        "paper": Preset(d_model=768, n_layers=12, n_heads=12, batch_size=256, lr=4e-4,
                        warmup_steps=2_000, steps=100_000, weight_decay=0.1, min_lr_ratio=0.1,
                        source="Nie et al. 2024 / Kim et al. 2025 (170M text MDM, lr 4e-4 -> "
                               "4e-5, wd 0.1); shape, batch, steps and warm-up ours"),
    },
    "creativity": {
        "cpu": Preset(d_model=128, n_layers=4, n_heads=4, batch_size=64, lr=1e-3,
                      warmup_steps=100, steps=2_000,
                      source="ours: 0.8M parameters, TrainSettings' defaults"),
        # Nagarajan et al.'s GPT-2 (86M non-embedding) = GPT-2 small, 12 x 768, 12 heads,
        # dropout 0.1; the repo: batch 64, lr 1e-4 constant after 2,000 warm-up steps, no
        # weight decay, 40k steps (Line/Circle). They fine-tune pretrained GPT-2; we train
        # from scratch (no weights may be downloaded).
        "paper": Preset(d_model=768, n_layers=12, n_heads=12, batch_size=64, lr=1e-4,
                        warmup_steps=2_000, steps=40_000, weight_decay=0.0, min_lr_ratio=1.0,
                        dropout=0.1, source="Nagarajan et al. 2025, GPT-2 small (86M), the "
                                            "repo's Line/Circle recipe, from scratch"),
    },
}
PRESET_NAMES = ("paper", "cpu")


def _validate() -> None:
    for system, entries in PRESETS.items():
        if set(entries) != set(PRESET_NAMES):
            raise ValueError(f"{system} needs exactly the presets {PRESET_NAMES}")


_validate()


def get_preset(system: str, name: str) -> Preset:
    """The ``name`` preset (``paper`` or ``cpu``) of ``system`` (``mdm-sudoku``, ``mdm-zebra``,
    ``mdm-text``, ``creativity``)."""
    if system not in PRESETS:
        raise ValueError(f"no presets for {system!r}; known: {', '.join(PRESETS)}")
    if name not in PRESETS[system]:
        raise ValueError(f"preset must be one of {' | '.join(PRESET_NAMES)}, got {name!r}")
    return PRESETS[system][name]


def with_overrides(preset: Preset, **given) -> Preset:
    """``preset`` with every field given explicitly (not ``None``) replaced, and re-checked.

    >>> with_overrides(get_preset("mdm-sudoku", "paper"), batch_size=1024, lr=None).batch_size
    1024
    """
    return dataclasses.replace(preset, **{k: v for k, v in given.items() if v is not None})
