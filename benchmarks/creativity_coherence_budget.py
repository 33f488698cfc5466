"""How much training makes NTP coherent on Line / Circle at the full setting (10,000 training
lines, 10-symbol seeds)? Trains one model, resumable (rerun the same command after a kill), and
prints a learning-curve point (loss, coherence, creativity on greedy decoding of fresh seeds)
every ``--eval-every`` steps; the points are kept in OUT/curve.jsonl. When training is done it
scores 1,024 generations on fresh prompts (evaluation seed 0) and writes OUT/model/card.json
(the command, settings, curve and that evaluation): OUT/model is then a shippable model folder.

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python benchmarks/creativity_coherence_budget.py \\
        --task line --steps 12000 --out /tmp/coh-line
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

import numpy as np
import torch

from icml25.creativity.tasks import generate, make_task
from icml25.creativity.training import TrainSettings, evaluate_model, train_model


def decoding(evaluation: dict) -> str:
    if evaluation["temperature"] == 0:
        return "greedy on fresh seeds"
    return f"sampled at T = {evaluation['temperature']} (one fresh prompt per sample)"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--task", default="line", choices=["line", "circle"])
    ap.add_argument("--method", default="ntp",
                    help="ntp | teacherless | diffusion | diffusion-uniform")
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=12_000)
    ap.add_argument("--d-model", type=int, default=128)
    ap.add_argument("--n-layers", type=int, default=4)
    ap.add_argument("--n-heads", type=int, default=4)
    ap.add_argument("--positions", default="learned", choices=["learned", "rotary"])
    ap.add_argument("--qk-init-std", type=float, default=None,
                    help="init std of query/key weights (default 0.02; try 1/sqrt(d_model))")
    ap.add_argument("--token-shift", action="store_true",
                    help="add a learned previous-token embedding to the input (what it took)")
    ap.add_argument("--layer-shift", action="store_true",
                    help="every block also mixes in its left neighbour (icml25.nn layer_shift)")
    ap.add_argument("--param", action="append", default=[],
                    help="task size KEY=VALUE (e.g. n_entities=5, length=4); default: the paper's")
    ap.add_argument("--fresh-min-nodes", type=int, default=None,
                    help="curriculum stage: fresh answers every batch, node counts N..full")
    ap.add_argument("--init-from", default=None,
                    help="a saved model folder whose weights start the run (same architecture)")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--min-lr-ratio", type=float, default=0.1)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--eval-every", type=int, default=1000)
    ap.add_argument("--eval-n", type=int, default=256)
    ap.add_argument("--seed-len", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--max-seconds", type=float, default=None)
    ap.add_argument("--probe-n", type=int, default=0,
                    help="held-out lines for the hop probe at every learning-curve point "
                         "(benchmarks/creativity_hop_probe.py; 0: no probe)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    sizes = {k: int(v) for k, v in (x.split("=", 1) for x in a.param)}
    task = make_task(a.task, a.seed, **sizes)  # default: the full setting (10,000 lines)
    data = generate(task, seed_len=a.seed_len)
    settings = TrainSettings(
        method=a.method, seed_len=a.seed_len, d_model=a.d_model, n_layers=a.n_layers,
        n_heads=a.n_heads, positions=a.positions, qk_init_std=a.qk_init_std,
        token_shift=a.token_shift, layer_shift=a.layer_shift,
        fresh_min_nodes=a.fresh_min_nodes, init_from=a.init_from,
        steps=a.steps,
        batch_size=a.batch_size, lr=a.lr,
        warmup_steps=a.warmup, min_lr_ratio=a.min_lr_ratio, seed=a.seed,
        eval_every=a.eval_every, eval_n=a.eval_n, checkpoint_every=a.eval_every,
        max_seconds=a.max_seconds)
    hops = None
    if a.probe_n:
        from creativity_hop_probe import probe_run  # benchmarks/ is on sys.path

        def hops(run):
            p = probe_run(run, a.probe_n)
            # Greedy decoding on fresh seeds collapses onto few answers when the seeds carry
            # no information (the fresh-data curriculum): T = 1 shows what the model knows.
            sampled = evaluate_model(run, n=a.eval_n, temperature=1.0,
                                     rng=np.random.default_rng([a.seed, 5, len(run.curve)]))
            return {"heldout_nll": round(p["nll_per_token"], 4),
                    "hop_ratio": {h: round(r["ratio"], 3) for h, r in p["by_hops"].items()},
                    "t1": {k: sampled[k] for k in ("coherence", "creativity", "uniqueness",
                                                   "memorization")}}
    run = train_model(task, data.train, settings, out_dir=a.out, resume=True, probe=hops,
                      on_eval=lambda p: print(json.dumps(p), flush=True),
                      on_log=lambda r: print(json.dumps({k: round(v, 4) for k, v in r.items()}),
                                             flush=True))
    print(json.dumps({"done": not run.stopped_early, "seconds": run.seconds}), flush=True)
    if run.stopped_early:
        return
    evaluation = evaluate_model(run, n=1024, seed=0)
    card = {"task": a.task, "method": a.method, "seed_len": a.seed_len,
            "command": "OMP_NUM_THREADS=1 .venv/bin/python " + shlex.join(sys.argv),
            "settings": vars(a), "params": run.model.num_params(),
            "train_seconds_last_leg": run.seconds, "curve": run.curve,
            "evaluation": {"seed": 0, "decoding": decoding(evaluation), **evaluation}}
    Path(a.out, "model", "card.json").write_text(json.dumps(card, indent=2))
    print(json.dumps({"evaluation": evaluation}), flush=True)


if __name__ == "__main__":
    main()
