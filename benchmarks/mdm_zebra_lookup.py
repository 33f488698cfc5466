"""Zebra lookup diagnostic: can a model read a clue at all?

Builds 3 x 3 Zebra puzzles whose clues are all ``at`` (attribute a has value v in house h), two
per attribute, so every answer cell is a direct lookup or follows from all-different. Trains the
Zebra MDM's model on them once per position scheme, side by side, and prints each run's log, its
final loss and its solve rate on fresh puzzles (the space of such puzzles is small, so some
repeat training ones: this measures whether clues are read, not generalisation).

``--objective all-masked`` masks every answer cell (the clues are then the only information, so
the loss can only fall below ln 3 = 1.099 by reading them); ``mdm`` is the usual objective.

    OMP_NUM_THREADS=1 python benchmarks/mdm_zebra_lookup.py --positions learned rotary

benchmarks/RESULTS.md and docs/mdm.md have what it gave.
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import torch
import torch.nn.functional as F

from icml25.mdm import zebra
from icml25.mdm.zebra_mdm import default_model_config, encode_batch, evaluate_zebra, zebra_loss
from icml25.nn import TrainConfig, Transformer, train


def lookup_puzzle(rng: np.random.Generator, n: int = 3, m: int = 3) -> zebra.ZebraPuzzle:
    """A puzzle whose clues pin n - 1 houses of every attribute directly."""
    solution = np.stack([rng.permutation(n) for _ in range(m)], 1)  # (house, attribute)
    clues = [zebra.Clue("at", (a, int(solution[h, a])), house=int(h))
             for a in range(m) for h in rng.choice(n, n - 1, replace=False)]
    clues = [clues[i] for i in rng.permutation(len(clues))]
    assert zebra.count_solutions(n, m, clues) == 1
    return zebra.ZebraPuzzle(n, m, clues, solution)


def all_masked_loss(model, tokens, maskable):
    """Cross-entropy with every answer cell masked."""
    logits = model(torch.where(maskable, torch.full_like(tokens, zebra.MASK), tokens))
    acc = (logits[maskable].argmax(-1) == tokens[maskable]).float().mean()
    return F.cross_entropy(logits[maskable], tokens[maskable]), {"masked_cell_acc": float(acc)}


def run(positions: str, args, puzzles, test) -> dict:
    model_cfg = default_model_config(positions=positions, cell_embeddings=args.cell_embeddings)
    torch.manual_seed(args.seed)
    model = Transformer(model_cfg)
    cfg = TrainConfig(steps=args.steps, batch_size=64, warmup_steps=100, log_every=50,
                      seed=args.seed)

    def batch_fn(step, gen, rank):
        r = np.random.default_rng(int(torch.randint(0, 2**62, (1,), generator=gen)))
        chosen = [zebra.augment(puzzles[i], r) for i in r.choice(len(puzzles), cfg.batch_size)]
        return encode_batch(chosen, model_cfg.seq_len - zebra.ANSWER_LEN) + (gen,)

    def loss_fn(net, batch):
        tokens, maskable, gen = batch
        if args.objective == "all-masked":
            return all_masked_loss(net, tokens, maskable)
        return zebra_loss(net, (tokens, maskable), gen)

    def show(row: dict) -> None:
        print(json.dumps({"positions": positions} | {k: round(v, 4) for k, v in row.items()}),
              flush=True)

    log = train(model, loss_fn, batch_fn, cfg, on_log=show).log
    last = log[-5:]  # the last 250 steps, smoothing batch noise
    report = evaluate_zebra(model.eval(), test, ("top_margin",))["top_margin"]
    return {"positions": positions, "loss_last_250": float(np.mean([r["loss"] for r in last])),
            "acc_last_250": float(np.mean([r["masked_cell_acc"] for r in last])),
            "solved": report["solved"], "cell_acc": report["cell_acc"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--positions", nargs="+", choices=("learned", "rotary"),
                    default=["learned", "rotary"])
    ap.add_argument("--objective", choices=("mdm", "all-masked"), default="all-masked")
    ap.add_argument("--no-cell-embeddings", dest="cell_embeddings", action="store_false",
                    help="plain positions only (no house/attribute embeddings)")
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--n-train", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    puzzles = [lookup_puzzle(rng) for _ in range(args.n_train)]
    test = [lookup_puzzle(rng) for _ in range(200)]
    results = [run(positions, args, puzzles, test) for positions in args.positions]
    print(f"chance: loss ln 3 = {np.log(3):.4f}, cell accuracy 1/3")
    for r in results:
        print(json.dumps(r | {"objective": args.objective, "steps": args.steps}))


if __name__ == "__main__":
    main()
