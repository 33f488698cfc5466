"""The whole CollabLLM recipe on the small policy LM, stage by stage, resumable (needs torch).

``train_pipeline(out)`` writes one model directory per stage::

    out/sft                      SFT on ask-or-guess demonstrations
    out/w{w}/offline_dpo         offline DPO on MR(w)-ranked pairs from the SFT policy
    out/w{w}/online_dpo          online DPO rounds from the offline-DPO checkpoint

for every window ``w`` of the ablation. A stage whose directory holds a model is kept, so an
interrupted run resumes (online rounds resume inside the stage). ``evaluate_pipeline(out)``
measures every stage on held-out tasks. The shipped models (``collab/checkpoints/lm``) were made
by :data:`SHIPPED_COMMAND`.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from icml25.collab import loop, world
from icml25.collab.policy import PolicyLM

SHIPPED_DIR = Path(__file__).parent / "checkpoints" / "lm"
SHIPPED_COMMAND = "icml25 collab train-lm --out src/icml25/collab/checkpoints/lm --float16"
WINDOWS = (0, 1, 2)
TRAIN_SEED, EVAL_SEED = 1, 2  # task seeds: training pool and held-out tasks never share a draw


@dataclasses.dataclass(frozen=True)
class Recipe:
    """Budget of one pipeline run (defaults: the shipped models, ~25 CPU-minutes on one core)."""

    seed: int = 0
    d_model: int = 96
    n_layers: int = 3
    n_heads: int = 4
    seq_len: int = 96
    sft_tasks: int = 3000
    sft_steps: int = 2500
    sft_lr: float = 2e-3
    offline_tasks: int = 512
    online_rounds: int = 6
    tasks_per_round: int = 128
    windows: tuple[int, ...] = WINDOWS
    n_samples: int = 2
    dpo_lr: float = 1e-4

    def loop_config(self, window: int) -> loop.LoopConfig:
        return loop.LoopConfig(window=window, n_samples=self.n_samples, lr=self.dpo_lr)


def stage_dirs(out: str | Path, windows: Sequence[int] = WINDOWS) -> dict[str, Path]:
    """Stage name (``sft``, ``w2/offline_dpo``, ...) -> its model directory."""
    out = Path(out)
    dirs = {"sft": out / "sft"}
    for w in windows:
        dirs[f"w{w}/offline_dpo"] = out / f"w{w}" / "offline_dpo"
        dirs[f"w{w}/online_dpo"] = out / f"w{w}" / "online_dpo"
    return dirs


def _done(path: Path) -> bool:
    return (path / "model.safetensors").exists() and (path / "vocab.json").exists()


def _save(policy: PolicyLM, path: Path, card: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    policy.save(tmp, card=card)
    if path.exists():
        import shutil

        shutil.rmtree(path)
    tmp.replace(path)


def train_pipeline(out: str | Path, recipe: Recipe = Recipe(), *, command: str = "",
                   float16: bool = False, log: Callable[[str], None] = print
                   ) -> dict[str, Path]:
    """Run (or resume) every stage of ``recipe`` under ``out``; returns the stage directories.

    ``float16``: once every stage is trained (in float32 throughout), store each stage's
    weights in half precision (what ships; they load back as float32).
    """
    out = Path(out)
    dirs = stage_dirs(out, recipe.windows)
    base_card = {"recipe": dataclasses.asdict(recipe), "command": command}
    pool = world.make_tasks(recipe.sft_tasks, TRAIN_SEED)
    if not _done(dirs["sft"]):
        t0 = time.perf_counter()
        tok = loop.build_tokenizer(seed=recipe.seed)
        policy = PolicyLM.new(tok, seq_len=recipe.seq_len, d_model=recipe.d_model,
                              n_layers=recipe.n_layers, n_heads=recipe.n_heads, seed=recipe.seed)
        losses = loop.train_sft(policy, pool, steps=recipe.sft_steps, lr=recipe.sft_lr,
                                seed=recipe.seed)
        _save(policy, dirs["sft"], {**base_card, "stage": "sft", "loss": losses,
                                    "params": policy.model.num_params(),
                                    "seconds": round(time.perf_counter() - t0, 1)})
        log(f"sft: loss {losses[0]:.3f} -> {losses[-1]:.3f}")
    for w in recipe.windows:
        cfg = recipe.loop_config(w)
        off, on = dirs[f"w{w}/offline_dpo"], dirs[f"w{w}/online_dpo"]
        if not _done(off):
            t0 = time.perf_counter()
            policy = PolicyLM.load(dirs["sft"])
            tasks = world.make_tasks(recipe.offline_tasks, TRAIN_SEED + 100)
            res = loop.offline_dpo(policy, tasks, cfg, seed=recipe.seed + 10 * w)
            _save(policy, off, {**base_card, "stage": "offline_dpo", "window": w, **res,
                                "seconds": round(time.perf_counter() - t0, 1)})
            log(f"w={w} offline DPO: {res['pairs']} pairs, loss {res['loss']:.3f}")
        if not _done(on):
            t0 = time.perf_counter()
            policy = PolicyLM.load(off)
            reference = PolicyLM.load(dirs["sft"]).model.eval()  # the paper keeps the SFT ref
            rounds = loop.online_dpo(policy, pool, cfg, rounds=recipe.online_rounds,
                                     tasks_per_round=recipe.tasks_per_round,
                                     seed=recipe.seed + 1000 * (w + 1),
                                     out_dir=out / f"w{w}" / "online_rounds",
                                     reference=reference)
            _save(policy, on, {**base_card, "stage": "online_dpo", "window": w,
                               "rounds": rounds, "seconds": round(time.perf_counter() - t0, 1)})
            log(f"w={w} online DPO: pairs per round {[r['pairs'] for r in rounds]}")
    if float16:
        for path in dirs.values():
            policy = PolicyLM.load(path)
            policy.save(path, card={**read_card(path), "weights": "float16 (loads as float32)"},
                        float16=True)
    return dirs


def held_out_tasks(n: int, recipe: Recipe = Recipe()) -> list[world.FormatTask]:
    """``n`` tasks whose request never occurs in the training pools (same content, any goal)."""
    seen = {t.request for t in world.make_tasks(recipe.sft_tasks, TRAIN_SEED)}
    seen |= {t.request for t in world.make_tasks(recipe.offline_tasks, TRAIN_SEED + 100)}
    fresh = [t for t in world.make_tasks(4 * n, EVAL_SEED) if t.request not in seen]
    if len(fresh) < n:
        raise ValueError(f"only {len(fresh)} held-out tasks avoid the training pools")
    return fresh[:n]


def evaluate_pipeline(out: str | Path, *, n_eval: int = 500, seed: int = 0,
                      windows: Sequence[int] = WINDOWS) -> dict[str, dict[str, Any]]:
    """Every stage's held-out figures (:func:`icml25.collab.loop.evaluate`)."""
    tasks = held_out_tasks(n_eval)
    results = {}
    for name, path in stage_dirs(out, windows).items():
        if not _done(path):
            raise FileNotFoundError(f"stage {name!r} has no model in {path}; run "
                                    f"`{SHIPPED_COMMAND}` (or train_pipeline) first")
        torch.manual_seed(seed)
        results[name] = loop.evaluate(PolicyLM.load(path), tasks, seed=seed)
    return results


def read_card(path: str | Path) -> dict[str, Any]:
    return json.loads((Path(path) / "config.json").read_text()).get("card", {})
