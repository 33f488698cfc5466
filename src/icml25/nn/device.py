"""Where training and inference run: device names, the batch's one move there, and the backend
switches that pay on each device (small pure functions; the trainer reads top to bottom).

A device is named ``auto`` (CUDA when present, else the CPU), ``cpu``, ``cuda``, ``cuda:N`` or
``mps``. Under ``torchrun`` a bare ``cuda`` (or ``auto`` on a CUDA machine) binds each process to
its ``LOCAL_RANK`` GPU; an explicit ``cuda:N`` is taken as given.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

import torch

_DEVICE_NAME = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")


def check_device(name: str) -> str:
    """``name`` if it is a device this project knows; a clear error otherwise."""
    if not isinstance(name, str) or not _DEVICE_NAME.match(name):
        raise ValueError(f"device must be auto, cpu, cuda, cuda:N or mps, got {name!r}")
    return name


def resolve_device(name: str = "auto") -> torch.device:
    """The ``torch.device`` that ``name`` means on this machine (and, under torchrun, this rank).

    Parameters
    ----------
    name : str, default="auto"
        ``"auto"`` (CUDA when present, else the CPU), ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or
        ``"mps"``; a bare ``"cuda"`` under torchrun means the ``LOCAL_RANK`` GPU.

    Returns
    -------
    torch.device

    Raises
    ------
    ValueError
        For an unknown name, or a device that torch does not see on this machine.

    Examples
    --------
    >>> from icml25.nn import resolve_device
    >>> resolve_device("cpu")
    device(type='cpu')
    """
    check_device(name)
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device {name!r} was asked for, but torch sees no CUDA device here "
                         "(use --device cpu, or auto)")
    if name == "mps" and not torch.backends.mps.is_available():
        raise ValueError("device 'mps' was asked for, but torch sees no Apple GPU here")
    if name == "cuda":
        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    return torch.device(name)


def device_of(model: torch.nn.Module) -> torch.device:
    """Where ``model``'s parameters live (the CPU for a model without any)."""
    return next((p.device for p in model.parameters()), torch.device("cpu"))


def place(model: torch.nn.Module, device: str | None) -> torch.device:
    """Move ``model`` to ``device`` (a name, as in ``TrainConfig.device``) and return where it
    is; ``None`` leaves it where it is. Inference functions' ``device=`` goes through here."""
    if device is None:
        return device_of(model)
    where = resolve_device(device)
    model.to(where)
    return where


def to_device(batch, device: torch.device):
    """``batch`` with every tensor on ``device`` (tuples, lists and dicts walked; anything else,
    e.g. a ``torch.Generator``, kept). A tensor already there is returned as is: no copy."""
    if isinstance(batch, torch.Tensor):
        return batch if batch.device == device else batch.to(device, non_blocking=True)
    if isinstance(batch, tuple):
        return tuple(to_device(b, device) for b in batch)
    if isinstance(batch, list):
        return [to_device(b, device) for b in batch]
    if isinstance(batch, Mapping):
        return {k: to_device(v, device) for k, v in batch.items()}
    return batch


def to_cpu(tree):
    """A copy of ``tree`` (an optimizer / scaler state or a state dict) with tensors on the CPU,
    for checkpoints that load anywhere."""
    if isinstance(tree, torch.Tensor):
        return tree.detach().cpu()
    if isinstance(tree, Mapping):
        return {k: to_cpu(v) for k, v in tree.items()}
    if isinstance(tree, list | tuple):
        return type(tree)(to_cpu(v) for v in tree)
    return tree


def use_fused_adamw(device: torch.device) -> bool:
    """Fused AdamW where it is the known win: CUDA. On the CPU the default (for-each) update
    is kept, so CPU runs give the same numbers as before devices were configurable."""
    return device.type == "cuda"


def configure_backends(device: torch.device) -> None:
    """TF32 matmuls and convolutions on CUDA (Ampere and later); nothing elsewhere."""
    if device.type == "cuda":
        torch.set_float32_matmul_precision("high")  # TF32 for fp32 matmuls
        torch.backends.cudnn.allow_tf32 = True
        torch.cuda.set_device(device)


def process_group_backend(device: torch.device) -> str:
    """NCCL for CUDA ranks, gloo for everything else."""
    return "nccl" if device.type == "cuda" else "gloo"


# Rows per forward pass when decoding on the CPU is each room's measured constant; on an
# accelerator it is what fits in a quarter of the free memory, at most this many.
MAX_ACCELERATOR_BATCH = 4096


def activation_bytes_per_row(model) -> int:
    """A generous bound on one row's peak memory in an inference forward pass (fp32): the widest
    activations of one block, its attention scores, and the output logits."""
    c = model.cfg
    d_ff = c.d_ff or 4 * c.d_model
    widest = c.seq_len * (3 * c.d_model + d_ff + 2 * c.d_model)
    scores = c.n_heads * c.seq_len * c.seq_len
    logits = 2 * c.seq_len * (c.out_size or c.vocab_size)
    return 4 * (widest + scores + logits)


def inference_batch_size(model, device: torch.device, cpu_batch: int,
                         free_bytes: int | None = None) -> int:
    """Rows per forward pass for decoding with ``model`` on ``device``.

    The CPU keeps ``cpu_batch`` (each room measured its best on two cores: larger activations
    cost page faults there). On CUDA: as many rows as fit in a quarter of the free memory
    (``free_bytes``, read from the device when not given), between ``cpu_batch`` and
    :data:`MAX_ACCELERATOR_BATCH`. On MPS, which reports no free memory: 4 x ``cpu_batch``.

    Parameters
    ----------
    model : Transformer
        The model (its config bounds the activations of one row).
    device : torch.device
        Where decoding runs.
    cpu_batch : int
        The room's measured batch on the CPU (also the floor elsewhere).
    free_bytes : int or None, default=None
        Free accelerator memory (None: asked of the CUDA device).

    Returns
    -------
    int
        Rows per forward pass.

    Examples
    --------
    >>> import torch
    >>> from icml25.nn import Transformer, TransformerConfig, inference_batch_size
    >>> m = Transformer(TransformerConfig(vocab_size=10, seq_len=8, d_model=16, n_layers=1,
    ...                                   n_heads=2))
    >>> inference_batch_size(m, torch.device("cpu"), 64)
    64
    >>> inference_batch_size(m, torch.device("cuda"), 64, free_bytes=10**9)   # capped
    4096
    """
    if device.type == "cpu":
        return cpu_batch
    if device.type == "cuda":
        if free_bytes is None:
            free_bytes, _ = torch.cuda.mem_get_info(device)
        fit = free_bytes // 4 // activation_bytes_per_row(model)
        return int(max(cpu_batch, min(MAX_ACCELERATOR_BATCH, fit)))
    return 4 * cpu_batch
