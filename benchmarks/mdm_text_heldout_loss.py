"""Held-out loss of a text run's checkpoints while it trains: every ``--every`` seconds, the
latest ``checkpoint/`` of each run folder is scored on the same fixed held-out windows
(:func:`icml25.mdm.text_mdm.held_out_loss`) and one JSON line is appended to ``--out``, so a
flattening curve can be seen (the trainer logs training loss only).

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python benchmarks/mdm_text_heldout_loss.py \\
        runs/text-mdm runs/text-causal --out runs/heldout.jsonl --every 600
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from icml25.mdm.text_data import load_corpus
from icml25.mdm.text_mdm import held_out_loss
from icml25.nn import Transformer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--every", type=float, default=600.0)
    ap.add_argument("--n-windows", type=int, default=128)
    ap.add_argument("--once", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(1)
    corpus = load_corpus("held_out")
    seen: dict[Path, int] = {}
    while True:
        for run in args.runs:
            ckpt = run / "checkpoint"
            try:
                step = json.loads((ckpt / "config.json").read_text())["step"]
                if seen.get(run) == step:
                    continue
                model = Transformer.load(ckpt)
            except (OSError, ValueError, KeyError):
                continue  # not written yet, or being replaced right now
            seen[run] = step
            row = {"run": str(run), "step": step, **held_out_loss(model, corpus, args.n_windows)}
            with args.out.open("a") as f:
                f.write(json.dumps(row) + "\n")
            print(json.dumps(row), flush=True)
        if args.once:
            return
        time.sleep(args.every)


if __name__ == "__main__":
    main()
