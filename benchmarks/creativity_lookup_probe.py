"""Is the chain-start lookup still in a model? A linear probe on its frozen final hidden states.

The lookup stage (``icml25.creativity.lookup``) teaches a transformer, for every node token of
a Line/Circle answer, the start of its chain; fine-tuning on the task may keep or overwrite
that. This trains a fresh linear head (Adam, lr 3e-3) on the frozen model for ``--steps``
batches of 64 fresh answers and prints its accuracy by hops back to the chain start on 512
held-out answers (1.00 everywhere: the lookup is there, linearly readable).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/creativity_lookup_probe.py \\
        --task line runs/cells/line-lookup-ntp-10/model \\
        runs/cells/line-ntp-seed-s0/snapshots/step-500
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import torch
import torch.nn.functional as F

from icml25.creativity.lookup import LookupModel, accuracy_by_hops, lookup_batch
from icml25.creativity.methods import IGNORE, get_method
from icml25.creativity.tasks import make_task
from icml25.nn import Transformer


def probe(path: str, task_name: str, method: str, seed_len: int, steps: int) -> dict:
    net = Transformer.load(path)
    net.eval()
    for p in net.parameters():
        p.requires_grad_(False)
    task = make_task(task_name)
    vocab = get_method(method).vocab(task)
    model = LookupModel(net)
    opt = torch.optim.Adam(model.aux.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(0)
    width = net.cfg.seq_len
    held = lookup_batch(task, vocab, method, seed_len, 512, width, np.random.default_rng(77),
                        gen)
    for step in range(steps):
        x, y, _ = lookup_batch(task, vocab, method, seed_len, 64, width,
                               np.random.default_rng(step), gen)
        loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten(), ignore_index=IGNORE)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return accuracy_by_hops(model, *held)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="+", help="saved model folders (config.json inside)")
    ap.add_argument("--task", choices=["line", "circle"], required=True)
    ap.add_argument("--method", default="ntp", help="the layout: ntp, teacherless, diffusion")
    ap.add_argument("--seed-len", type=int, default=10)
    ap.add_argument("--steps", type=int, default=400)
    a = ap.parse_args()
    torch.set_num_threads(1)
    for path in a.models:
        acc = probe(path, a.task, a.method, a.seed_len, a.steps)
        print(json.dumps({"model": path, "acc_by_hops": acc}), flush=True)


if __name__ == "__main__":
    main()
