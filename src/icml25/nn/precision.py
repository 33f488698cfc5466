"""Mixed precision as configuration: ``fp32`` (no autocast), ``bf16`` (autocast; the CPU has it
too) or ``fp16`` (autocast with a gradient scaler, whose state is checkpointed).

Only the forward pass and the loss run in the lower precision: the weights, their gradients,
the optimizer state and every checkpoint stay float32.
"""

from __future__ import annotations

import contextlib

import torch

PRECISIONS: dict[str, torch.dtype | None] = {
    "fp32": None,
    "bf16": torch.bfloat16,
    "fp16": torch.float16,
}


def check_precision(name: str) -> str:
    if name not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {name!r}")
    return name


def autocast(device: torch.device, precision: str):
    """The context a forward pass runs in: ``torch.autocast`` at ``precision``, or nothing."""
    dtype = PRECISIONS[check_precision(precision)]
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=dtype)


def grad_scaler(device: torch.device, precision: str) -> torch.amp.GradScaler:
    """A gradient scaler that is on for fp16 only (a disabled one passes everything through)."""
    return torch.amp.GradScaler(device.type, enabled=check_precision(precision) == "fp16")
