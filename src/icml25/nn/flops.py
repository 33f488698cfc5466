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
    to come near its datasheet rate.

    Parameters
    ----------
    size : int, default=1024
        Side of the square matrices.
    repeats : int, default=10
        Timed products; the fastest counts.
    device : str or torch.device, default="cpu"
        Where to multiply.
    dtype : torch.dtype, default=torch.float32
        Precision of the product.
    warmup : int, default=3
        Untimed products first.

    Returns
    -------
    float
        FLOP/s (``2 size^3`` per product).

    Examples
    --------
    >>> from icml25.nn import matmul_peak_flops
    >>> matmul_peak_flops(64, repeats=2, warmup=1) > 0
    True
    """
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
    """Training FLOP/s of ``model`` processing ``tokens_per_s`` tokens per second.

    Parameters
    ----------
    model : Transformer
        The model (its ``flops_per_token()`` counts forward and backward).
    tokens_per_s : float
        Measured training throughput.

    Returns
    -------
    float
        FLOP/s; divide by :func:`matmul_peak_flops` measured in the same run for a utilisation.

    Examples
    --------
    >>> from icml25.nn import Transformer, TransformerConfig, training_flops
    >>> m = Transformer(TransformerConfig(vocab_size=10, seq_len=8, d_model=16, n_layers=1,
    ...                                   n_heads=2))
    >>> training_flops(m, 1000.0) == 1000.0 * m.flops_per_token()
    True
    """
    return model.flops_per_token() * tokens_per_s
