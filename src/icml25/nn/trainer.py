"""A training loop you can read top to bottom: AdamW, warm-up + cosine, gradient
clipping, optional EMA, checkpoints that resume exactly, and DDP under ``torchrun``
(gloo on CPU, NCCL on GPU).

Exact resume: the batch and the dropout noise of step ``s`` depend only on ``(seed, s, rank)``, and
a checkpoint holds the weights, the optimizer state and the EMA, so a run killed at any point and
resumed from its last checkpoint ends with the same weights as an uninterrupted one.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from icml25.core.progress import track

CHECKPOINT = "checkpoint"


@dataclasses.dataclass
class TrainConfig:
    steps: int
    batch_size: int = 128  # per process
    lr: float = 1e-3
    min_lr_ratio: float = 0.1  # cosine decays to lr * min_lr_ratio
    warmup_steps: int = 100
    weight_decay: float = 0.01
    betas: tuple[float, float] = (0.9, 0.999)
    grad_clip: float | None = 1.0
    ema_decay: float | None = None
    checkpoint_every: int = 500
    log_every: int = 50
    seed: int = 0
    out_dir: str | None = None  # where checkpoint/ and the final model go; None = keep in memory

    def __post_init__(self) -> None:
        if self.steps < 1 or self.batch_size < 1:
            raise ValueError("steps and batch_size must be positive")
        if not 0 <= self.min_lr_ratio <= 1:
            raise ValueError("min_lr_ratio must be in [0, 1]")
        if self.ema_decay is not None and not 0 < self.ema_decay < 1:
            raise ValueError("ema_decay must be in (0, 1)")


@dataclasses.dataclass
class TrainState:
    step: int = 0
    log: list[dict[str, float]] = dataclasses.field(default_factory=list)
    ema: dict[str, torch.Tensor] | None = None


def cosine_lr(step: int, cfg: TrainConfig) -> float:
    """Linear warm-up to ``lr``, then cosine decay to ``lr * min_lr_ratio`` at ``steps``."""
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    span = max(cfg.steps - cfg.warmup_steps, 1)
    progress = min((step - cfg.warmup_steps) / span, 1.0)
    floor = cfg.lr * cfg.min_lr_ratio
    return floor + 0.5 * (cfg.lr - floor) * (1 + math.cos(math.pi * progress))


def step_seed(seed: int, step: int, rank: int = 0) -> int:
    """The seed of one step's data and dropout noise (independent of how the run was resumed)."""
    return (seed * 1_000_003 + step) * 1_009 + rank


def _distributed() -> tuple[int, int]:
    """(rank, world size); initialises the process group under torchrun."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return 0, 1
    import torch.distributed as dist

    if not dist.is_initialized():
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    return dist.get_rank(), world


def _optimizer(model: nn.Module, cfg: TrainConfig) -> torch.optim.Optimizer:
    # Decay matrices only (not biases, norms or embeddings' 1-D parts), as in GPT-2 training.
    decay = [p for p in model.parameters() if p.requires_grad and p.dim() >= 2]
    rest = [p for p in model.parameters() if p.requires_grad and p.dim() < 2]
    groups = [{"params": decay, "weight_decay": cfg.weight_decay},
              {"params": rest, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=cfg.betas)


def _save_checkpoint(directory: Path, model: nn.Module, opt, state: TrainState, cfg) -> None:
    """Write to a temporary folder, then swap it in: a kill mid-save leaves a usable checkpoint
    (``_recover`` puts ``checkpoint.old`` back if the kill fell between the two renames)."""
    tmp = directory.with_name(directory.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    if hasattr(model, "save"):
        model.save(tmp, extra={"train": dataclasses.asdict(cfg), "step": state.step})
    else:
        torch.save(model.state_dict(), tmp / "model.pt")
    torch.save({"optimizer": opt.state_dict(), "step": state.step, "log": state.log,
                "ema": state.ema}, tmp / "trainer_state.pt")
    old = directory.with_name(directory.name + ".old")
    if directory.exists():
        directory.rename(old)
    tmp.rename(directory)
    shutil.rmtree(old, ignore_errors=True)


def _recover(directory: Path) -> None:
    old = directory.with_name(directory.name + ".old")
    if not directory.exists() and old.exists():
        old.rename(directory)


def _load_checkpoint(directory: Path, model: nn.Module, opt) -> TrainState:
    if (directory / "model.safetensors").exists():
        from safetensors.torch import load_file

        state_dict = load_file(str(directory / "model.safetensors"))
        model.load_state_dict(state_dict, strict=False)
    else:
        model.load_state_dict(torch.load(directory / "model.pt"))
    saved = torch.load(directory / "trainer_state.pt", weights_only=False)
    opt.load_state_dict(saved["optimizer"])
    return TrainState(step=saved["step"], log=saved["log"], ema=saved["ema"])


def train(
    model: nn.Module,
    loss_fn: Callable[[nn.Module, Any], torch.Tensor | tuple[torch.Tensor, dict[str, float]]],
    batch_fn: Callable[[int, torch.Generator, int], Any],
    cfg: TrainConfig,
    *,
    resume: bool = True,
    on_log: Callable[[dict[str, float]], None] | None = None,
    examples_per_batch: int | None = None,
) -> TrainState:
    """Train ``model`` for ``cfg.steps`` steps and return the final state.

    ``batch_fn(step, generator, rank)`` makes one batch from the given generator (so data are
    reproducible); ``loss_fn(model, batch)`` returns the loss, or ``(loss, metrics)``.
    With ``cfg.out_dir`` set, checkpoints go to ``out_dir/checkpoint`` every
    ``checkpoint_every`` steps and at the end, and training resumes from there when ``resume``.
    """
    rank, world = _distributed()
    net: nn.Module = model
    if world > 1:
        from torch.nn.parallel import DistributedDataParallel

        net = DistributedDataParallel(model)
    opt = _optimizer(model, cfg)
    ckpt = Path(cfg.out_dir) / CHECKPOINT if cfg.out_dir else None
    state = TrainState()
    if ckpt is not None and rank == 0:
        _recover(ckpt)
    if resume and ckpt is not None and (ckpt / "trainer_state.pt").exists():
        state = _load_checkpoint(ckpt, model, opt)
    if cfg.ema_decay is not None and state.ema is None:
        state.ema = {k: v.detach().clone() for k, v in model.state_dict().items()}

    model.train()
    examples = examples_per_batch or cfg.batch_size
    window_start, window_steps = time.perf_counter(), 0
    steps = range(state.step, cfg.steps)
    for step in track(steps, "training", enabled=None if rank == 0 else False):
        seed = step_seed(cfg.seed, step, rank)
        batch = batch_fn(step, torch.Generator().manual_seed(seed), rank)
        torch.manual_seed(seed + 1)  # dropout noise of this step
        for group in opt.param_groups:
            group["lr"] = cosine_lr(step, cfg)
        out = loss_fn(net, batch)
        loss, metrics = out if isinstance(out, tuple) else (out, {})
        if not torch.isfinite(loss):
            raise FloatingPointError(f"loss is {loss.item()} at step {step}; lower the lr")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = (nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
                     if cfg.grad_clip else torch.tensor(float("nan")))
        opt.step()
        if state.ema is not None:
            with torch.no_grad():
                for k, v in model.state_dict().items():
                    if v.dtype.is_floating_point:
                        state.ema[k].lerp_(v, 1 - cfg.ema_decay)
        state.step = step + 1
        window_steps += 1
        if state.step % cfg.log_every == 0 or state.step == cfg.steps:
            elapsed = time.perf_counter() - window_start
            row = {"step": state.step, "loss": loss.item(), "lr": cosine_lr(step, cfg),
                   "grad_norm": float(grad_norm),
                   "examples_per_s": window_steps * examples * world / max(elapsed, 1e-9),
                   **{k: float(v) for k, v in metrics.items()}}
            state.log.append(row)
            if on_log and rank == 0:
                on_log(row)
            window_start, window_steps = time.perf_counter(), 0
        if ckpt is not None and rank == 0 and (
                state.step % cfg.checkpoint_every == 0 or state.step == cfg.steps):
            _save_checkpoint(ckpt, model, opt, state, cfg)
        if world > 1 and ckpt is not None and state.step % cfg.checkpoint_every == 0:
            torch.distributed.barrier()
    if cfg.out_dir and rank == 0:
        (Path(cfg.out_dir) / "train_log.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in state.log))
    return state
