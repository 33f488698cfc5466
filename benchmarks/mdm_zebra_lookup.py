"""Zebra lookup diagnostic: can a model read a clue at all?

Builds 3 x 3 Zebra puzzles whose clues are all ``at`` (attribute a has value v in house h), two
per attribute, so every answer cell is a direct lookup or follows from all-different. Trains the
Zebra MDM's model on them once per position scheme, side by side, and prints each run's log, its
final loss and its solve rate on fresh puzzles (the space of such puzzles is small, so some
repeat training ones: this measures whether clues are read, not generalisation).

``--objective all-masked`` masks every answer cell (the clues are then the only information, so
the loss can only fall below ln 3 = 1.099 by reading them); ``mdm`` is the usual objective.

``--layout`` picks the answer's layout: ``item`` (the package's, ``zebra.encode``) has one cell
per item (attribute, value) holding its house, so a clue names the answer cells it is about
(``same A0 V2 A3 V1`` relates cells (0, 2) and (3, 1)); ``house`` (the package's until
2026-11-30) has one cell per (house, attribute) holding a value, so a relational clue first
needs a search for the house that holds a value. The clue tokens are the same.
``--qk-init-std`` sets the initial scale of the query/key projections
(``TransformerConfig.qk_init_std``; 0.02 is GPT-2's, the package's Zebra default is 0.088).
``--real-steps N`` then trains each model N more steps on real 3 x 3 puzzles (4,000 of seed 20)
with the MDM objective and reports its solve rate on 200 of seed 21: does reading lookups carry
over to relational clues?

    OMP_NUM_THREADS=1 python benchmarks/mdm_zebra_lookup.py --positions learned rotary
    OMP_NUM_THREADS=1 python benchmarks/mdm_zebra_lookup.py --positions rotary --layout item \
        --qk-init-std 0.02 0.088 --real-steps 3000

benchmarks/RESULTS.md and docs/mdm.md have what it gave.
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import torch
import torch.nn.functional as F

from icml25.mdm import zebra
from icml25.mdm.sampler import sample
from icml25.mdm.zebra_mdm import default_model_config, encode_batch, evaluate_zebra, zebra_loss
from icml25.nn import TrainConfig, Transformer, train

SIDE = zebra.MAX_SIZE
V0 = zebra.VOCAB.index("V0")


def house_major_batch(puzzles, max_prompt: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``encode_batch`` with the answer re-laid out house-major: cell ``h * 6 + a`` holds
    ``V<value of attribute a in house h>``."""
    tokens, maskable = encode_batch(puzzles, max_prompt)
    for i, pz in enumerate(puzzles):
        n, m = pz.n_houses, pz.n_attrs
        answer = np.full((SIDE, SIDE), zebra.PAD, dtype=np.int64)
        answer[:n, :m] = V0 + np.asarray(pz.solution)
        tokens[i, :zebra.ANSWER_LEN] = torch.from_numpy(answer.reshape(-1))
        maskable[i, :zebra.ANSWER_LEN] = torch.from_numpy(answer.reshape(-1) != zebra.PAD)
    return tokens, maskable


def evaluate_house_major(model, test) -> dict:
    """Top-margin solve rate and cell accuracy of a house-major model (one puzzle size)."""
    tokens, maskable = house_major_batch(test, model.cfg.seq_len - zebra.ANSWER_LEN)
    with torch.no_grad():
        filled = sample(model, tokens, maskable, steps=zebra.ANSWER_LEN, planner="top_margin",
                        mask_id=zebra.MASK, generator=torch.Generator().manual_seed(0))
    right = (filled == tokens)[maskable].float().mean().item()
    n, m = test[0].n_houses, test[0].n_attrs
    grids = filled[:, :zebra.ANSWER_LEN].numpy().reshape(-1, SIDE, SIDE)[:, :n, :m] - V0
    solved = sum(zebra.check(pz, grid) for pz, grid in zip(test, grids, strict=True))
    return {"solved": solved / len(test), "cell_acc": right}


def all_masked_loss(model, tokens, maskable):
    """Cross-entropy with every answer cell masked."""
    logits = model(torch.where(maskable, torch.full_like(tokens, zebra.MASK), tokens))
    acc = (logits[maskable].argmax(-1) == tokens[maskable]).float().mean()
    return F.cross_entropy(logits[maskable], tokens[maskable]), {"masked_cell_acc": float(acc)}


def fit(model, puzzles, steps: int, objective: str, layout: str, seed: int, tag: dict) -> list:
    """Train ``model`` in place on augmented ``puzzles``; returns the log."""
    cfg = TrainConfig(steps=steps, batch_size=64, warmup_steps=100, log_every=50, seed=seed)
    to_batch = house_major_batch if layout == "house" else encode_batch

    def batch_fn(step, gen, rank):
        r = np.random.default_rng(int(torch.randint(0, 2**62, (1,), generator=gen)))
        chosen = [zebra.augment(puzzles[i], r) for i in r.choice(len(puzzles), cfg.batch_size)]
        return to_batch(chosen, model.cfg.seq_len - zebra.ANSWER_LEN) + (gen,)

    def loss_fn(net, batch):
        tokens, maskable, gen = batch
        if objective == "all-masked":
            return all_masked_loss(net, tokens, maskable)
        return zebra_loss(net, (tokens, maskable), gen)

    def show(row: dict) -> None:
        print(json.dumps(tag | {k: round(v, 4) for k, v in row.items()}), flush=True)

    return train(model, loss_fn, batch_fn, cfg, on_log=show).log


def report(model, test, layout: str) -> dict:
    if layout == "house":
        out = evaluate_house_major(model.eval(), test)
    else:
        out = evaluate_zebra(model.eval(), test, ("top_margin",))["top_margin"]
    model.train()
    return {"solved": out["solved"], "cell_acc": out["cell_acc"]}


def run(positions: str, qk_std: float | None, args, puzzles, test, real) -> dict:
    tag = {"positions": positions, "layout": args.layout, "qk_init_std": qk_std}
    model_cfg = default_model_config(positions=positions, cell_embeddings=args.cell_embeddings,
                                     qk_init_std=qk_std)
    torch.manual_seed(args.seed)
    model = Transformer(model_cfg)
    log = fit(model, puzzles, args.steps, args.objective, args.layout, args.seed, tag)
    last = log[-5:]  # the last 250 steps, smoothing batch noise
    out = tag | {"loss_last_250": float(np.mean([r["loss"] for r in last])),
                 "acc_last_250": float(np.mean([r["masked_cell_acc"] for r in last]))}
    out |= report(model, test, args.layout)
    if args.real_steps:
        real_train, real_test = real
        real_tag = tag | {"phase": "real"}
        log = fit(model, real_train, args.real_steps, "mdm", args.layout, args.seed, real_tag)
        out |= {"real_acc_last_250": float(np.mean([r["masked_cell_acc"] for r in log[-5:]]))}
        out |= {f"real_{k}": v for k, v in report(model, real_test, args.layout).items()}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--positions", nargs="+", choices=("learned", "rotary"),
                    default=["learned", "rotary"])
    ap.add_argument("--objective", choices=("mdm", "all-masked"), default="all-masked")
    ap.add_argument("--no-cell-embeddings", dest="cell_embeddings", action="store_false",
                    help="plain positions only (no house/attribute embeddings)")
    ap.add_argument("--layout", choices=("house", "item"), default="house")
    ap.add_argument("--qk-init-std", type=float, nargs="+", default=[None],
                    help="one run per value (default: 0.02 like every other weight)")
    ap.add_argument("--real-steps", type=int, default=0)
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--n-train", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    puzzles = [zebra.generate_lookup_puzzle(rng, 3, 3) for _ in range(args.n_train)]
    test = [zebra.generate_lookup_puzzle(rng, 3, 3) for _ in range(200)]
    real = None
    if args.real_steps:
        real = (zebra.generate_dataset(4000, seed=20, n_houses=3, n_attrs=3),
                zebra.generate_dataset(200, seed=21, n_houses=3, n_attrs=3))
    results = [run(positions, qk, args, puzzles, test, real)
               for positions in args.positions for qk in args.qk_init_std]
    print(f"chance: loss ln 3 = {np.log(3):.4f}, cell accuracy 1/3")
    for r in results:
        print(json.dumps(r | {"objective": args.objective, "steps": args.steps,
                              "real_steps": args.real_steps}))


if __name__ == "__main__":
    main()
