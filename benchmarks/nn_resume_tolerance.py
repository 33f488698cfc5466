"""How far a run moves when it resumes on another device or precision, measured on the CPU.

The Sudoku MDM at the cpu preset's size (0.8M parameters) trains 2N steps on fixed data:
  fp32          uninterrupted, float32 (the reference)
  fp32 resumed  N steps, killed, resumed from the checkpoint in float32 (must be identical)
  ->bf16        N steps in float32, resumed in bf16 for the other N (a checkpoint moved to a
                device/precision other than the one that wrote it)
  bf16, fp16    2N steps in that precision throughout
Each is compared with the reference: max |weight difference| relative to the weights' RMS, and
the mean loss of the last N/4 steps (its relative difference). On a GPU the arithmetic differs
again (TF32, other kernels), so these are CPU figures for the precision part only.

Usage: .venv/bin/python benchmarks/nn_resume_tolerance.py [--steps 100] [--batch-size 32]
"""

from __future__ import annotations

import argparse
import tempfile

import numpy as np
import torch

from icml25.mdm import sudoku
from icml25.mdm.sudoku_mdm import default_model_config, train_sudoku
from icml25.nn import TrainConfig


class Stop(Exception):
    pass


def run(data, args, out_dir=None, precision="fp32", stop_at=None):
    cfg = TrainConfig(steps=2 * args.steps, batch_size=args.batch_size, warmup_steps=20,
                      log_every=1, checkpoint_every=args.steps, seed=3, device="cpu",
                      precision=precision, out_dir=out_dir)

    def on_log(row):
        if stop_at is not None and row["step"] == stop_at:
            raise Stop

    try:
        return train_sudoku(*data, cfg, default_model_config(), on_log=on_log)
    except Stop:
        return None


def compare(name, ref, other, n_tail) -> None:
    a, b = ref[0].state_dict(), other[0].state_dict()
    rms = float(torch.sqrt(torch.mean(torch.cat([v.flatten() ** 2 for v in a.values()]))))
    diff = max(float((a[k] - b[k]).abs().max()) for k in a)
    la = np.mean([r["loss"] for r in ref[1][-n_tail:]])
    lb = np.mean([r["loss"] for r in other[1][-n_tail:]])
    print(f"{name:14s} max|dw|/rms(w) {diff / rms:.2e}   tail loss {lb:.4f} vs {la:.4f} "
          f"({(lb - la) / la:+.2%})", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=100, help="N: each run trains 2N steps")
    ap.add_argument("--batch-size", type=int, default=32)
    args = ap.parse_args()
    torch.set_num_threads(1)  # one reduction order: the exact-resume row must be exact
    data = sudoku.generate_dataset(64, seed=5)
    n_tail = max(args.steps // 4, 1)
    ref = run(data, args)
    print(f"reference: fp32, {2 * args.steps} steps x {args.batch_size}, tail loss over the last "
          f"{n_tail} steps", flush=True)
    with tempfile.TemporaryDirectory() as d:
        run(data, args, d, stop_at=args.steps + 1)  # killed just after the step-N checkpoint
        compare("fp32 resumed", ref, run(data, args, d), n_tail)
    with tempfile.TemporaryDirectory() as d:
        run(data, args, d, stop_at=args.steps + 1)
        compare("fp32->bf16", ref, run(data, args, d, precision="bf16"), n_tail)
    for precision in ("bf16", "fp16"):
        compare(precision, ref, run(data, args, precision=precision), n_tail)


if __name__ == "__main__":
    main()
