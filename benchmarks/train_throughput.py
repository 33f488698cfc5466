"""Training throughput as a fraction of this machine's float32 matmul peak, shared by the rooms
that train ``icml25.nn`` transformers (mdm's Sudoku model, creativity's task models).

Both are measured in the same run (shared machines drift): the matmul peak through torch
(1024x1024, best of 10, before and after) and the median examples/s of a short training run.
FLOPs count every position of the padded rows the model actually processes.

Usage:
  .venv/bin/python benchmarks/train_throughput.py --task sudoku [--steps 60] [--batch-size 128]
  .venv/bin/python benchmarks/train_throughput.py --task line --method ntp [--d-model 128]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from icml25.nn import TrainConfig, Transformer, matmul_peak_flops, train, training_flops

CREATIVITY_TASKS = ("line", "circle", "sibling", "triangle")


def sudoku_run(args) -> tuple[Transformer, list[dict], int]:
    from icml25.mdm import sudoku
    from icml25.mdm.sudoku_mdm import default_model_config, sudoku_batch, sudoku_loss

    puzzles, solutions = sudoku.generate_dataset(64, seed=5)
    model = Transformer(default_model_config(d_model=args.d_model, n_layers=args.layers))
    cfg = TrainConfig(steps=args.steps, batch_size=args.batch_size, warmup_steps=5,
                      log_every=max(args.steps // 10, 1))
    state = train(model, lambda m, b: sudoku_loss(m, b[:2], b[2]),
                  lambda s, g, r: sudoku_batch(puzzles, solutions, cfg.batch_size, g) + (g,), cfg)
    return model, state.log, 81


def creativity_run(args) -> tuple[Transformer, list[dict], int]:
    from icml25.creativity.tasks import generate, make_task
    from icml25.creativity.training import TrainSettings, train_model

    task = make_task(args.task, 0)
    data = generate(task, seed_len=10)
    log: list[dict] = []
    run = train_model(task, data.train, TrainSettings(
        method=args.method, seed_len=10, steps=args.steps, batch_size=args.batch_size,
        d_model=args.d_model, n_layers=args.layers, warmup_steps=5), on_log=log.append)
    return run.model, log, run.model.cfg.seq_len


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--task", default="sudoku", choices=("sudoku", *CREATIVITY_TASKS))
    ap.add_argument("--method", default="ntp", help="creativity: ntp | teacherless | diffusion")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--batch-size", type=int, default=None, help="sudoku 128, creativity 64")
    ap.add_argument("--d-model", type=int, default=128)
    ap.add_argument("--layers", type=int, default=4)
    args = ap.parse_args()
    if args.batch_size is None:
        args.batch_size = 128 if args.task == "sudoku" else 64
    peak_before = matmul_peak_flops()
    start = time.perf_counter()
    model, log, tokens = (sudoku_run if args.task == "sudoku" else creativity_run)(args)
    wall = time.perf_counter() - start
    peak = max(peak_before, matmul_peak_flops())
    rate = float(np.median([row["examples_per_s"] for row in log[1:]]))  # first row: warm-up
    achieved = training_flops(model, rate * tokens)
    name = args.task if args.task == "sudoku" else f"{args.task}/{args.method}"
    print(f"{name}: threads={torch.get_num_threads()} params={model.num_params():,} "
          f"tokens/example={tokens} steps={args.steps} batch={args.batch_size} wall={wall:.1f}s")
    print(f"matmul peak {peak / 1e9:.1f} GFLOP/s; training {rate:.0f} examples/s = "
          f"{achieved / 1e9:.1f} GFLOP/s; utilisation {achieved / peak:.1%}")


if __name__ == "__main__":
    main()
