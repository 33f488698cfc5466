"""A training loop you can read top to bottom: AdamW, warm-up + cosine, gradient
clipping, optional EMA, checkpoints that resume exactly, and DDP under ``torchrun``
(gloo on CPU, NCCL on GPU), on any device (``device.py``) and at any precision
(``precision.py``), optionally compiled and accumulating gradients over micro-batches.

Exact resume: the batch and the dropout noise of step ``s`` depend only on ``(seed, s, rank)``, and
a checkpoint holds the weights, the optimizer state, the EMA and the fp16 gradient scaler, so a
run killed at any point and resumed from its last checkpoint on the same device and precision ends
with the same weights as an uninterrupted one.

Accumulation: micro-batch ``m`` of rank ``r`` is drawn as rank ``r + world * m`` would draw it, so
a run of ``W`` processes accumulating ``k`` micro-batches sees exactly the batches of ``W * k``
processes that do not accumulate. ``batch_size`` is per process and micro-batch.

Time budgets: ``max_seconds`` stops at the first step past it (with a log row and a checkpoint),
and so does a SIGTERM to a single process (``timeout``, a scheduler's notice);
``budget_seconds`` sets the step count itself: after ``calibration_skip`` steps (start-up, CUDA
initialisation, compilation) the next ``calibration_steps`` are timed, and ``steps`` becomes
the number that fits the rest of the budget at that rate (never more than configured), so the
schedule (warm-up, cosine) ends when the budget does.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import shutil
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from icml25.core.progress import track
from icml25.nn.device import (
    check_device,
    configure_backends,
    process_group_backend,
    resolve_device,
    to_cpu,
    to_device,
    use_fused_adamw,
)
from icml25.nn.precision import autocast, check_precision, grad_scaler

CHECKPOINT = "checkpoint"
# torch.compile's modes: "reduce-overhead" adds CUDA graphs (static shapes only),
# "max-autotune-no-cudagraphs" tunes matmul kernels (a longer compilation).
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


@dataclasses.dataclass
class TrainConfig:
    """Everything :func:`train` needs besides the model, the loss and the batches.

    Scale is configuration: the same code trains on a CPU, one GPU or many nodes.

    Parameters
    ----------
    steps : int
        Optimizer steps.
    batch_size : int, default=128
        Rows per process and micro-batch.
    lr : float, default=1e-3
        Peak AdamW learning rate (cosine decay after ``warmup_steps``).
    min_lr_ratio : float, default=0.1
        The cosine decays to ``lr * min_lr_ratio``.
    warmup_steps : int, default=100
        Linear warm-up steps.
    weight_decay : float, default=0.01
        AdamW weight decay.
    betas : tuple of float, default=(0.9, 0.999)
        AdamW betas.
    grad_clip : float or None, default=1.0
        Gradient-norm clipping (None: off).
    ema_decay : float or None, default=None
        Keep an exponential moving average of the weights.
    checkpoint_every : int, default=500
        Steps between checkpoints (with ``out_dir``).
    log_every : int, default=50
        Steps between log records.
    seed : int, default=0
        Seeds initialisation and the batch generator.
    out_dir : str or None, default=None
        Where ``checkpoint/`` and the final model go (None: keep in memory); training resumes
        from there.
    device : str, default="auto"
        ``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"mps"``.
    precision : {"fp32", "bf16", "fp16"}, default="fp32"
        Autocast precision; weights, optimizer state and checkpoints stay float32.
    compile : bool, default=False
        Wrap the model in ``torch.compile``.
    grad_accum_steps : int, default=1
        Micro-batches per optimizer step.
    max_seconds : float or None, default=None
        Stop, with a checkpoint, at the first log step past this wall time.

    Examples
    --------
    >>> cfg = TrainConfig(steps=100, batch_size=32, precision="bf16")
    >>> cfg.device, cfg.grad_accum_steps
    ('auto', 1)
    """

    steps: int
    batch_size: int = 128  # per process and micro-batch
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
    device: str = "auto"  # auto | cpu | cuda | cuda:N | mps
    precision: str = "fp32"  # fp32 | bf16 | fp16 (autocast; weights stay fp32)
    compile: bool = False  # torch.compile the model
    grad_accum_steps: int = 1  # micro-batches per optimizer step
    max_seconds: float | None = None  # stop, with a checkpoint, at the first step past this
    budget_seconds: float | None = None  # fit ``steps`` to this wall time (see the module doc)
    calibration_skip: int = 10  # steps left out of the budget's rate (start-up, compilation)
    calibration_steps: int = 20  # steps whose rate fits ``steps`` to ``budget_seconds``
    compile_mode: str | None = None  # torch.compile mode (COMPILE_MODES); None = its default

    def __post_init__(self) -> None:
        if self.steps < 1 or self.batch_size < 1:
            raise ValueError("steps and batch_size must be positive")
        if not 0 <= self.min_lr_ratio <= 1:
            raise ValueError("min_lr_ratio must be in [0, 1]")
        if self.ema_decay is not None and not 0 < self.ema_decay < 1:
            raise ValueError("ema_decay must be in (0, 1)")
        if self.grad_accum_steps < 1:
            raise ValueError("grad_accum_steps must be >= 1")
        if self.max_seconds is not None and not self.max_seconds > 0:
            raise ValueError("max_seconds must be positive (or None)")
        if self.budget_seconds is not None and not self.budget_seconds > 0:
            raise ValueError("budget_seconds must be positive (or None)")
        if self.calibration_skip < 0 or self.calibration_steps < 1:
            raise ValueError("calibration_skip must be >= 0 and calibration_steps >= 1")
        if self.compile_mode is not None and self.compile_mode not in COMPILE_MODES:
            raise ValueError(f"compile_mode must be one of {', '.join(COMPILE_MODES)} (or None), "
                             f"got {self.compile_mode!r}")
        check_device(self.device)
        check_precision(self.precision)


@dataclasses.dataclass
class TrainState:
    """What :func:`train` returns (and checkpoints): progress, the log and optional states.

    Attributes
    ----------
    step : int
        Optimizer steps done.
    log : list of dict
        One record per ``log_every`` steps.
    ema : dict or None
        The EMA weights when ``ema_decay`` is set.
    scaler : dict or None
        The fp16 gradient scaler's state.
    stopped_early : bool
        ``max_seconds`` ran out before ``steps``.
    budget : dict or None
        The fit of ``steps`` to ``budget_seconds``: rate, start-up, the steps chosen.

    Parameters
    ----------
    step : int, default=0
    log : list of dict, default=[]
    ema : dict or None, default=None
    scaler : dict or None, default=None
    stopped_early : bool, default=False
    budget : dict or None, default=None
        The attributes above; :func:`train` builds and returns the state.

    Examples
    --------
    >>> from icml25.nn import TrainState
    >>> TrainState()
    TrainState(step=0, log=[], ema=None, scaler=None, stopped_early=False, budget=None)
    """

    step: int = 0
    log: list[dict[str, float]] = dataclasses.field(default_factory=list)
    ema: dict[str, torch.Tensor] | None = None
    scaler: dict[str, Any] | None = None  # the fp16 gradient scaler's state
    stopped_early: bool = False  # max_seconds ran out (or a SIGTERM came) before cfg.steps
    budget: dict[str, float] | None = None  # the budget fit: rate, start-up, the steps chosen


def cosine_lr(step: int, cfg: TrainConfig) -> float:
    """Linear warm-up to ``lr``, then cosine decay to ``lr * min_lr_ratio`` at ``steps``.

    Parameters
    ----------
    step : int
        The optimizer step (0-based).
    cfg : TrainConfig
        Reads ``lr``, ``warmup_steps``, ``steps`` and ``min_lr_ratio``.

    Returns
    -------
    float
        The learning rate of that step.

    Examples
    --------
    >>> from icml25.nn import TrainConfig, cosine_lr
    >>> cfg = TrainConfig(steps=100, lr=1e-3, warmup_steps=10)
    >>> cosine_lr(0, cfg), cosine_lr(9, cfg), cosine_lr(100, cfg)
    (0.0001, 0.001, 0.0001)
    """
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    span = max(cfg.steps - cfg.warmup_steps, 1)
    progress = min((step - cfg.warmup_steps) / span, 1.0)
    floor = cfg.lr * cfg.min_lr_ratio
    return floor + 0.5 * (cfg.lr - floor) * (1 + math.cos(math.pi * progress))


def step_seed(seed: int, step: int, rank: int = 0) -> int:
    """The seed of one step's data and dropout noise (independent of how the run was resumed)."""
    return (seed * 1_000_003 + step) * 1_009 + rank


def is_main_process() -> bool:
    """Rank 0 under torchrun, or a plain single process: the one that logs and writes.

    Returns
    -------
    bool
        Whether the ``RANK`` environment variable is unset or 0.

    Examples
    --------
    >>> import os
    >>> from icml25.nn import is_main_process
    >>> is_main_process() == (os.environ.get("RANK", "0") == "0")
    True
    """
    return os.environ.get("RANK", "0") == "0"


def _distributed(device: torch.device) -> tuple[int, int]:
    """(rank, world size); initialises the process group under torchrun."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return 0, 1
    import torch.distributed as dist

    if not dist.is_initialized():
        dist.init_process_group(process_group_backend(device))
    return dist.get_rank(), world


def _optimizer(model: nn.Module, cfg: TrainConfig, device: torch.device) -> torch.optim.Optimizer:
    # Decay matrices only (not biases, norms or embeddings' 1-D parts), as in GPT-2 training.
    decay = [p for p in model.parameters() if p.requires_grad and p.dim() >= 2]
    rest = [p for p in model.parameters() if p.requires_grad and p.dim() < 2]
    groups = [{"params": decay, "weight_decay": cfg.weight_decay},
              {"params": rest, "weight_decay": 0.0}]
    fused = {"fused": True} if use_fused_adamw(device) else {}
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=cfg.betas, **fused)


def _save_checkpoint(directory: Path, model: nn.Module, opt, scaler, state: TrainState,
                     cfg) -> None:
    """Write CPU copies to a temporary folder, then swap it in: a kill mid-save leaves a usable
    checkpoint (``_recover`` puts ``checkpoint.old`` back if the kill fell between the two
    renames)."""
    tmp = directory.with_name(directory.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    if hasattr(model, "save"):
        model.save(tmp, extra={"train": dataclasses.asdict(cfg), "step": state.step})
    else:
        torch.save(to_cpu(model.state_dict()), tmp / "model.pt")
    (tmp / "train_config.json").write_text(json.dumps(
        {"train": dataclasses.asdict(cfg), "step": state.step}, default=str))
    torch.save({"optimizer": to_cpu(opt.state_dict()), "step": state.step, "log": state.log,
                "ema": to_cpu(state.ema), "scaler": state.scaler, "budget": state.budget},
               tmp / "trainer_state.pt")
    old = directory.with_name(directory.name + ".old")
    if directory.exists():
        directory.rename(old)
    tmp.rename(directory)
    shutil.rmtree(old, ignore_errors=True)


def _recover(directory: Path) -> None:
    old = directory.with_name(directory.name + ".old")
    if not directory.exists() and old.exists():
        old.rename(directory)


def _load_checkpoint(directory: Path, model: nn.Module, opt, scaler,
                     device: torch.device) -> TrainState:
    if (directory / "model.safetensors").exists():
        from safetensors.torch import load_file

        state_dict = load_file(str(directory / "model.safetensors"))
        model.load_state_dict(state_dict, strict=False)
    else:
        model.load_state_dict(torch.load(directory / "model.pt", map_location="cpu"))
    saved = torch.load(directory / "trainer_state.pt", map_location="cpu", weights_only=False)
    # This run's fused/foreach choice, not the writer's: a CUDA checkpoint resumes on a CPU.
    flags = [{k: g[k] for k in ("fused", "foreach", "capturable") if k in g}
             for g in opt.param_groups]
    groups = [{**g, **f} for g, f in zip(saved["optimizer"]["param_groups"], flags, strict=True)]
    opt.load_state_dict({**saved["optimizer"], "param_groups": groups})
    if saved.get("scaler"):
        scaler.load_state_dict(saved["scaler"])
    ema = saved["ema"] and {k: v.to(device) for k, v in saved["ema"].items()}
    return TrainState(step=saved["step"], log=saved["log"], ema=ema, scaler=saved.get("scaler"),
                      budget=saved.get("budget"))


def _check_finite(loss: torch.Tensor, step: int) -> None:
    if not torch.isfinite(loss):
        raise FloatingPointError(f"loss is {loss.item()} at step {step}; lower the lr")


def _out_of_time(start: float, cfg: TrainConfig, world: int, device: torch.device) -> bool:
    """Whether ``max_seconds`` has run out; under DDP rank 0's clock decides for every rank."""
    over = cfg.max_seconds is not None and time.perf_counter() - start > cfg.max_seconds
    if world > 1 and cfg.max_seconds is not None:
        flag = torch.tensor(float(over), device=device)
        torch.distributed.broadcast(flag, 0)
        over = bool(flag.item())
    return over


def steps_in_budget(done: int, steps_per_s: float, elapsed: float, budget: float,
                    cap: int) -> int:
    """The step count that ends a run at ``budget`` seconds: ``done`` steps were taken in
    ``elapsed`` seconds, the rest go at ``steps_per_s``; never fewer than ``done`` nor more
    than ``cap``.

    Parameters
    ----------
    done : int
        Steps already taken.
    steps_per_s : float
        The measured rate (start-up excluded).
    elapsed, budget : float
        Seconds spent so far, and in all.
    cap : int
        The configured step count (the budget only ever shortens a run).

    Returns
    -------
    int
        The new total step count.

    Examples
    --------
    >>> steps_in_budget(50, 10.0, 20.0, 60.0, 10_000)  # 40 s left at 10 steps/s
    450
    >>> steps_in_budget(50, 10.0, 70.0, 60.0, 10_000)  # over budget already: stop now
    50
    """
    left = max(budget - elapsed, 0.0)
    return int(min(cap, done + max(math.floor(left * steps_per_s), 0)))


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _fit_budget(cfg: TrainConfig, state: TrainState, *, done: int, start: float,
                timed_from: float, world: int, device: torch.device) -> TrainConfig:
    """``cfg`` with ``steps`` fitted to ``budget_seconds`` after the calibration window (the
    last ``calibration_steps`` steps, timed from ``timed_from``); ``state.budget`` records the
    fit. Rank 0's numbers decide under DDP."""
    now = time.perf_counter()
    rate = cfg.calibration_steps / max(now - timed_from, 1e-9)
    fitted = steps_in_budget(done, rate, now - start, cfg.budget_seconds, cfg.steps)
    if world > 1:
        flag = torch.tensor(float(fitted), device=device)
        torch.distributed.broadcast(flag, 0)
        fitted = int(flag.item())
    state.budget = {"steps_per_s": rate, "startup_seconds": timed_from - start,
                    "calibration_steps": cfg.calibration_steps,
                    "calibration_skip": cfg.calibration_skip, "at_step": done,
                    "budget_seconds": cfg.budget_seconds, "configured_steps": cfg.steps,
                    "steps": fitted}
    return dataclasses.replace(cfg, steps=fitted)


@contextlib.contextmanager
def _stop_on_sigterm(enabled: bool):
    """While training, a SIGTERM sets the event the loop checks every step (it then stops with a
    log row and a checkpoint, as at ``max_seconds``), instead of killing the process mid-step.
    Only in the main thread of a single process, and only over the default handler."""
    requested = threading.Event()
    if not (enabled and threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL):
        yield requested
        return
    signal.signal(signal.SIGTERM, lambda signum, frame: requested.set())
    try:
        yield requested
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


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

    ``batch_fn(step, generator, rank)`` makes one (micro-)batch from the given CPU generator (so
    data are reproducible, and the same on every device); the trainer moves it to the device once.
    ``loss_fn(model, batch)`` returns the loss, or ``(loss, metrics)``. The model is moved to
    ``cfg.device`` and stays there. With ``cfg.out_dir`` set, checkpoints go to
    ``out_dir/checkpoint`` every ``checkpoint_every`` steps and at the end, and training resumes
    from there when ``resume``. Under DDP only rank 0 logs and writes; every rank resumes.

    Parameters
    ----------
    model : torch.nn.Module
        The model; trained in place and left on ``cfg.device``.
    loss_fn : callable
        ``loss_fn(model, batch) -> loss`` or ``(loss, metrics)`` (metrics are logged).
    batch_fn : callable
        ``batch_fn(step, generator, rank) -> batch`` on the CPU.
    cfg : TrainConfig
        Steps, optimizer, schedule, device, precision, checkpoints.
    resume : bool, default=True
        Continue from ``cfg.out_dir``'s checkpoint when there is one.
    on_log : callable or None, default=None
        Called with every log record (rank 0).
    examples_per_batch : int or None, default=None
        Examples in one batch, for ``examples_per_s`` (None: ``cfg.batch_size``).

    Returns
    -------
    TrainState
        Steps done, the log, and the EMA / scaler states.

    Raises
    ------
    FloatingPointError
        When the loss becomes non-finite.
    ValueError
        For an unknown or unavailable device.

    Examples
    --------
    >>> import torch
    >>> from icml25.nn import TrainConfig, Transformer, TransformerConfig, train
    >>> m = Transformer(TransformerConfig(vocab_size=10, seq_len=8, d_model=16, n_layers=1,
    ...                                   n_heads=2))
    >>> def batch_fn(step, gen, rank):                 # a batch of random token ids
    ...     return torch.randint(0, 10, (4, 8), generator=gen)
    >>> def loss_fn(model, ids):                       # reconstruct the input
    ...     return torch.nn.functional.cross_entropy(model(ids).flatten(0, 1), ids.flatten())
    >>> cfg = TrainConfig(steps=4, batch_size=4, warmup_steps=1, log_every=2, device="cpu")
    >>> state = train(m, loss_fn, batch_fn, cfg)
    >>> state.step, [row["step"] for row in state.log]
    (4, [2, 4])
    """
    device = resolve_device(cfg.device)
    configure_backends(device)
    rank, world = _distributed(device)
    model.to(device)
    net: nn.Module = model
    if cfg.compile:
        net = torch.compile(model, mode=None if cfg.compile_mode == "default" else cfg.compile_mode)
    if world > 1:
        from torch.nn.parallel import DistributedDataParallel

        net = DistributedDataParallel(net, device_ids=[device] if device.type == "cuda" else None)
    opt = _optimizer(model, cfg, device)
    scaler = grad_scaler(device, cfg.precision)
    ckpt = Path(cfg.out_dir) / CHECKPOINT if cfg.out_dir else None
    state = TrainState()
    if ckpt is not None and rank == 0:
        _recover(ckpt)
    if ckpt is not None and world > 1:
        torch.distributed.barrier()  # the others look for the checkpoint rank 0 may have restored
    if resume and ckpt is not None and (ckpt / "trainer_state.pt").exists():
        state = _load_checkpoint(ckpt, model, opt, scaler, device)
    if cfg.ema_decay is not None and state.ema is None:
        state.ema = {k: v.detach().clone() for k, v in model.state_dict().items()}
    if state.budget is not None:  # a resumed budget run keeps the steps it fitted
        cfg = dataclasses.replace(cfg, steps=state.budget["steps"])
    fitting = cfg.budget_seconds is not None and state.budget is None

    model.train()
    k = cfg.grad_accum_steps
    examples = (examples_per_batch or cfg.batch_size) * k * world
    start = window_start = time.perf_counter()
    window_steps = 0
    first = state.step
    timed_from = start
    steps = range(state.step, cfg.steps)
    with _stop_on_sigterm(world == 1) as terminated:
        for step in track(steps, "training", enabled=None if rank == 0 else False):
            if step >= cfg.steps:  # the budget shortened the run
                break
            for group in opt.param_groups:
                group["lr"] = cosine_lr(step, cfg)
            opt.zero_grad(set_to_none=True)
            loss_sum, metric_sums = torch.zeros((), device=device), {}
            for micro in range(k):
                virtual_rank = rank + world * micro
                seed = step_seed(cfg.seed, step, virtual_rank)
                batch = batch_fn(step, torch.Generator().manual_seed(seed), virtual_rank)
                batch = to_device(batch, device)
                torch.manual_seed(seed + 1)  # dropout noise of this micro-batch
                last = micro == k - 1
                with contextlib.nullcontext() if last or world == 1 else net.no_sync():
                    with autocast(device, cfg.precision):
                        out = loss_fn(net, batch)
                    loss, metrics = out if isinstance(out, tuple) else (out, {})
                    if device.type == "cpu":
                        _check_finite(loss, step)  # free here; on a GPU it would sync
                    scaler.scale(loss / k).backward()  # DDP averages the gradients on the last
                loss_sum += loss.detach().float()
                for name, value in metrics.items():
                    metric_sums[name] = metric_sums.get(name, 0.0) + value
            grad_norm = torch.tensor(float("nan"))
            if cfg.grad_clip:
                scaler.unscale_(opt)
                grad_norm = nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
            scaler.step(opt)
            scaler.update()
            if state.ema is not None:
                with torch.no_grad():
                    for name, v in model.state_dict().items():
                        if v.dtype.is_floating_point:
                            state.ema[name].lerp_(v, 1 - cfg.ema_decay)
            state.step = step + 1
            window_steps += 1
            local = state.step - first
            if fitting and local == cfg.calibration_skip:
                _sync(device)  # start-up and compilation end here
                timed_from = time.perf_counter()
            if fitting and local == cfg.calibration_skip + cfg.calibration_steps:
                _sync(device)
                cfg = _fit_budget(cfg, state, done=state.step, start=start, timed_from=timed_from,
                                  world=world, device=device)
                fitting = False
            # One process checks its clock every step (no sync); under DDP, at log steps.
            out_of_time = state.step < cfg.steps and (
                (world == 1 and terminated.is_set())
                or ((world == 1 or state.step % cfg.log_every == 0)
                    and _out_of_time(start, cfg, world, device)))
            logging = state.step % cfg.log_every == 0 or state.step == cfg.steps or out_of_time
            saving = ckpt is not None and (state.step % cfg.checkpoint_every == 0
                                           or state.step == cfg.steps)
            if logging or saving:
                _check_finite(loss_sum, step)
            if logging:
                elapsed = time.perf_counter() - window_start
                row = {"step": state.step, "loss": loss_sum.item() / k,
                       "lr": cosine_lr(step, cfg), "grad_norm": float(grad_norm),
                       "examples_per_s": window_steps * examples / max(elapsed, 1e-9),
                       **{name: float(v) / k for name, v in metric_sums.items()}}
                state.log.append(row)
                if on_log and rank == 0:
                    on_log(row)
                window_start, window_steps = time.perf_counter(), 0
            state.stopped_early = out_of_time
            if scaler.is_enabled() and (saving or state.stopped_early or state.step == cfg.steps):
                state.scaler = scaler.state_dict()  # reads the scale: a GPU sync, not every step
            if ckpt is not None and rank == 0 and (saving or state.stopped_early):
                _save_checkpoint(ckpt, model, opt, scaler, state, cfg)
            if world > 1 and ckpt is not None and (state.step % cfg.checkpoint_every == 0
                                                   or state.stopped_early):
                torch.distributed.barrier()
            if state.stopped_early:
                break
    if cfg.out_dir and rank == 0:
        (Path(cfg.out_dir) / "train_log.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in state.log))
        if state.budget is not None:
            (Path(cfg.out_dir) / "train_budget.json").write_text(json.dumps(state.budget))
    return state
