"""Achieved training FLOP/s against this machine's own matmul peak (the issues' throughput bar).

Measure both in the same run: shared machines drift, so only the ratio is comparable. On a GPU
the peak is a bf16 matmul (the precision the paper presets train in); on the CPU the default is
float32, as every CPU row in ``benchmarks/RESULTS.md`` was measured.
"""

from __future__ import annotations

import math
import time

import torch

from icml25.nn.model import Transformer


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def matmul_peak_flops(size: int = 1024, repeats: int = 10, *, device: str | torch.device = "cpu",
                      dtype: torch.dtype = torch.float32, warmup: int = 3) -> float:
    """Matmul throughput through torch on ``device`` at ``dtype`` (best of ``repeats`` square
    products of ``size``, after ``warmup`` untimed ones). A GPU needs a large ``size`` (8192)
    to come near its datasheet rate."""
    device = torch.device(device)
    a = torch.randn(size, size, device=device).to(dtype)
    b = torch.randn(size, size, device=device).to(dtype)
    for _ in range(warmup):
        a @ b
    _sync(device)
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        _sync(device)
        best = min(best, time.perf_counter() - start)
    return 2 * size**3 / best


def training_flops(model: Transformer, tokens_per_s: float) -> float:
    """Training FLOP/s of ``model`` processing ``tokens_per_s`` tokens per second."""
    return model.flops_per_token() * tokens_per_s
