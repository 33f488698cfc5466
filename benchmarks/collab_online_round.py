"""Where the time of one online-DPO round goes: generation vs reward vs DPO.

Runs one round of ``--n`` tasks of ``icml25 collab train-online`` (the same code) on ``--policy``
(default the shipped Gemma 3 270M) and prints the seconds of each part, per task, and a
**linear extrapolation** to ``--target`` tasks (generation and reward are batched over tasks,
DPO steps are one per ``batch_size`` pairs, so each part grows about linearly with the tasks).
``--min-gap 0`` (the default here) keeps a pair for every task whose two candidates differ, so
the DPO part is the most a round of that size can cost.

    OMP_NUM_THREADS=2 nice python benchmarks/collab_online_round.py --n 8 [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time

import torch

from icml25.collab.hf_online import OnlineConfig, train_online


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policy", default="gemma-270m")
    ap.add_argument("--tasks", default="ask-or-guess-nl")
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--target", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--min-gap", type=float, default=0.0)
    ap.add_argument("--max-tokens", type=int, default=32)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    cfg = OnlineConfig(min_gap=args.min_gap, max_tokens=args.max_tokens)
    out = tempfile.mkdtemp(prefix="collab-online-bench-")
    t0 = time.perf_counter()
    res = train_online(args.policy, args.tasks, f"{out}/run", rounds=1, tasks_per_round=args.n,
                       cfg=cfg, log_fn=lambda m: print(m, flush=True))
    total = time.perf_counter() - t0
    entry = res["log"][0]
    sec = entry["seconds"]
    parts = {k: sec[k] for k in ("generate", "reward", "dpo")}
    round_s = sum(parts.values())
    scale = args.target / args.n
    print(json.dumps({
        "policy": args.policy, "tasks": args.tasks, "n": args.n, "threads": args.threads,
        "pairs": entry["pairs"], "seconds": parts, "round_seconds": round_s,
        "share": {k: v / round_s for k, v in parts.items()},
        "cpu_seconds": entry["cpu_seconds"],
        "wall_seconds_with_load": total,
        f"extrapolated_round_seconds_{args.target}_tasks": round_s * scale,
        f"extrapolated_round_cpu_seconds_{args.target}_tasks":
            sum(entry["cpu_seconds"].values()) * scale,
        "extrapolation": f"linear: measured {args.n} tasks x {scale:g}"}, indent=1))


if __name__ == "__main__":
    main()
