"""Achieved training FLOP/s against this machine's own matmul peak (the issues' throughput bar).

Measure both in the same run: shared machines drift, so only the ratio is comparable.
"""

from __future__ import annotations

import math
import time

import torch

from icml25.nn.model import Transformer


def matmul_peak_flops(size: int = 1024, repeats: int = 10) -> float:
    """This machine's float32 matmul throughput through torch (best of ``repeats``)."""
    a, b = torch.randn(size, size), torch.randn(size, size)
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
    return 2 * size**3 / best


def training_flops(model: Transformer, tokens_per_s: float) -> float:
    """Training FLOP/s of ``model`` processing ``tokens_per_s`` tokens per second."""
    return model.flops_per_token() * tokens_per_s
