"""Training throughput as a fraction of this machine's matmul peak, shared by the rooms that
train ``icml25.nn`` transformers (mdm's Sudoku model, creativity's task models), and the
side-by-side comparisons of the scale-out options on the CPU.

Both are measured in the same run (shared machines drift): the matmul peak through torch
(1024x1024, best of 10, before and after) and the median examples/s of a short training run.
FLOPs count every position of the padded rows the model actually processes.

``--variants fp32,bf16,compile`` trains the same workload once per variant per round, rounds
alternating, and reports each variant's examples/s relative to fp32 eager within its round.
``--against SRC`` runs the workload in subprocesses alternately on another checkout's ``src``
(e.g. the code before a change) and on this one, and reports the ratio this/that per pair.

Usage:
  .venv/bin/python benchmarks/train_throughput.py --task sudoku [--steps 60] [--batch-size 128]
  .venv/bin/python benchmarks/train_throughput.py --task line --method ntp [--d-model 128]
  .venv/bin/python benchmarks/train_throughput.py --task sudoku --variants fp32,bf16,compile
  .venv/bin/python benchmarks/train_throughput.py --task sudoku --against /tmp/old/src
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

from icml25.nn import TrainConfig, Transformer, matmul_peak_flops, train, training_flops

CREATIVITY_TASKS = ("line", "circle", "sibling", "triangle")
VARIANTS = {"fp32": {}, "bf16": {"precision": "bf16"}, "compile": {"compile": True},
            "bf16+compile": {"precision": "bf16", "compile": True}}


def sudoku_run(args, extra: dict) -> tuple[Transformer, list[dict], int]:
    from icml25.mdm import sudoku
    from icml25.mdm.sudoku_mdm import default_model_config, sudoku_batch, sudoku_loss

    puzzles, solutions = sudoku.generate_dataset(64, seed=5)
    torch.manual_seed(0)  # the same initial weights in every run and variant
    model = Transformer(default_model_config(d_model=args.d_model, n_layers=args.layers))
    cfg = TrainConfig(steps=args.steps, batch_size=args.batch_size, warmup_steps=5,
                      log_every=max(args.steps // 10, 1), **extra)
    state = train(model, lambda m, b: sudoku_loss(m, b[:2], b[2]),
                  lambda s, g, r: sudoku_batch(puzzles, solutions, cfg.batch_size, g) + (g,), cfg)
    return model, state.log, 81


def creativity_run(args, extra: dict) -> tuple[Transformer, list[dict], int]:
    from icml25.creativity.tasks import generate, make_task
    from icml25.creativity.training import TrainSettings, train_model

    task = make_task(args.task, 0)
    data = generate(task, seed_len=10)
    log: list[dict] = []
    run = train_model(task, data.train, TrainSettings(
        method=args.method, seed_len=10, steps=args.steps, batch_size=args.batch_size,
        d_model=args.d_model, n_layers=args.layers, warmup_steps=5, **extra), on_log=log.append)
    return run.model, log, run.model.cfg.seq_len


def measure(args, extra: dict) -> dict:
    """One training run: median examples/s after the first log row, its FLOP/s, the wall."""
    start = time.perf_counter()
    model, log, tokens = (sudoku_run if args.task == "sudoku" else creativity_run)(args, extra)
    rate = float(np.median([row["examples_per_s"] for row in log[1:]]))  # first row: warm-up
    return {"rate": rate, "flops": training_flops(model, rate * tokens), "tokens": tokens,
            "params": model.num_params(), "wall": time.perf_counter() - start,
            "final_loss": log[-1]["loss"]}


def single(args) -> None:
    peak_before = matmul_peak_flops()
    r = measure(args, {})
    peak = max(peak_before, matmul_peak_flops())
    name = args.task if args.task == "sudoku" else f"{args.task}/{args.method}"
    if args.json:
        print(json.dumps({**r, "peak": peak}))
        return
    print(f"{name}: threads={torch.get_num_threads()} params={r['params']:,} "
          f"tokens/example={r['tokens']} steps={args.steps} batch={args.batch_size} "
          f"wall={r['wall']:.1f}s")
    print(f"matmul peak {peak / 1e9:.1f} GFLOP/s; training {r['rate']:.0f} examples/s = "
          f"{r['flops'] / 1e9:.1f} GFLOP/s; utilisation {r['flops'] / peak:.1%}")


def variants(args) -> None:
    names = args.variants.split(",")
    if "fp32" not in names:
        names.insert(0, "fp32")
    rounds = []
    for k in range(args.rounds):
        order = names if k % 2 == 0 else names[::-1]  # alternate, so drift hits all alike
        row = {}
        for name in order:
            torch._dynamo.reset()
            row[name] = measure(args, VARIANTS[name])
            print(f"round {k + 1} {name}: {row[name]['rate']:.0f} examples/s, loss "
                  f"{row[name]['final_loss']:.4f}, wall {row[name]['wall']:.1f}s", flush=True)
        rounds.append(row)
    print(f"\n{args.task}: threads={torch.get_num_threads()} steps={args.steps} "
          f"batch={args.batch_size}; examples/s per round and relative to fp32 eager")
    for name in names:
        rates = [r[name]["rate"] for r in rounds]
        ratios = [r[name]["rate"] / r["fp32"]["rate"] for r in rounds]
        print(f"  {name:13s} {' '.join(f'{x:7.0f}' for x in rates)}   ratio median "
              f"{np.median(ratios):.3f} (rounds: {', '.join(f'{x:.3f}' for x in ratios)})")


def against(args) -> None:
    """Alternate subprocesses on ``args.against`` (that) and this checkout's src (this)."""
    here = str(Path(__file__).resolve().parents[1] / "src")
    cmd = [sys.executable, __file__, "--task", args.task, "--method", args.method, "--steps",
           str(args.steps), "--batch-size", str(args.batch_size), "--d-model", str(args.d_model),
           "--layers", str(args.layers), "--json"]
    pairs = []
    for k in range(args.rounds):
        order = [("that", args.against), ("this", here)]
        row = {}
        for which, src in order if k % 2 == 0 else order[::-1]:
            env = {**os.environ, "PYTHONPATH": src, "ICML25_NO_PROGRESS": "1"}
            out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
            row[which] = json.loads(out.stdout.strip().splitlines()[-1])["rate"]
        pairs.append(row)
        print(f"round {k + 1}: that {row['that']:.0f}, this {row['this']:.0f} examples/s, "
              f"ratio {row['this'] / row['that']:.3f}", flush=True)
    ratios = [p["this"] / p["that"] for p in pairs]
    print(f"\nthis/that examples/s: median {np.median(ratios):.3f}, mean {np.mean(ratios):.3f} "
          f"over {len(ratios)} alternating pairs ({args.against} vs {here})")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--task", default="sudoku", choices=("sudoku", *CREATIVITY_TASKS))
    ap.add_argument("--method", default="ntp", help="creativity: ntp | teacherless | diffusion")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--batch-size", type=int, default=None, help="sudoku 128, creativity 64")
    ap.add_argument("--d-model", type=int, default=128)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--variants", default=None, help=f"comma-separated: {', '.join(VARIANTS)}")
    ap.add_argument("--against", default=None, help="another checkout's src folder")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="one JSON line (used by --against)")
    args = ap.parse_args()
    if args.batch_size is None:
        args.batch_size = 128 if args.task == "sudoku" else 64
    if args.against:
        against(args)
    elif args.variants:
        variants(args)
    else:
        single(args)


if __name__ == "__main__":
    main()
