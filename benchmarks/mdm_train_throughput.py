"""Training throughput of the Sudoku MDM as a fraction of this machine's matmul peak.

Both are measured in the same run (shared machines drift): the float32 matmul peak through torch
(1024x1024, best of 10) and the median examples/s of a short training run of the default model.
Usage: .venv/bin/python benchmarks/mdm_train_throughput.py [--steps 60] [--batch-size 128]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from icml25.mdm import sudoku
from icml25.mdm.sudoku_mdm import (
    default_model_config,
    flops_utilisation,
    matmul_peak_flops,
    sudoku_batch,
    sudoku_loss,
)
from icml25.nn import TrainConfig, Transformer, train


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--d-model", type=int, default=128)
    ap.add_argument("--layers", type=int, default=4)
    args = ap.parse_args()
    puzzles, solutions = sudoku.generate_dataset(64, seed=5)
    model = Transformer(default_model_config(d_model=args.d_model, n_layers=args.layers))
    cfg = TrainConfig(steps=args.steps, batch_size=args.batch_size, warmup_steps=5, log_every=10)
    peak_before = matmul_peak_flops()
    start = time.perf_counter()
    state = train(model, lambda m, b: sudoku_loss(m, b[:2], b[2]),
                  lambda s, g, r: sudoku_batch(puzzles, solutions, cfg.batch_size, g) + (g,), cfg)
    wall = time.perf_counter() - start
    peak = max(peak_before, matmul_peak_flops())
    rate = float(np.median([row["examples_per_s"] for row in state.log[1:]]))
    util = flops_utilisation(model, rate, peak)
    print(f"threads={torch.get_num_threads()} params={model.num_params():,} "
          f"steps={args.steps} batch={args.batch_size} wall={wall:.1f}s")
    print(f"matmul peak {peak / 1e9:.1f} GFLOP/s; training {rate:.0f} examples/s = "
          f"{model.flops_per_token() * 81 * rate / 1e9:.1f} GFLOP/s; utilisation {util:.1%}")


if __name__ == "__main__":
    main()
