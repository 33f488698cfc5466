"""Unmasking order for the absorbing-diffusion creativity models: the paper's sampler reveals
answer tokens in random order; ``icml25.mdm``'s adaptive planners (top probability, top
margin, entropy) choose the most confident position first. Scores one model on the same fresh
prompts for each planner and temperature (one answer token per step, prompt clamped).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/creativity_diffusion_planners.py \\
        --shipped line-diffusion --n 512
"""

from __future__ import annotations

import argparse
import json

import torch

from icml25.creativity import shipped
from icml25.creativity.scoring import Scorer
from icml25.creativity.training import evaluate_model, load_run
from icml25.mdm import PLANNERS


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shipped", default="line-diffusion")
    ap.add_argument("--n", type=int, default=512)
    ap.add_argument("--seed", type=int, default=5, help="prompt seed")
    ap.add_argument("--temperatures", default="0.5,1.0")
    a = ap.parse_args()
    torch.set_num_threads(1)
    run = load_run(shipped.shipped_dir(a.shipped))
    if run.method != "diffusion":
        raise SystemExit(f"{a.shipped} is a {run.method} model, not absorbing diffusion")
    scorer = Scorer(run.task, run.train)
    for planner in PLANNERS:
        for temp in map(float, a.temperatures.split(",")):
            # the same prompt seed for every planner: the same prompts, the same draws
            rep = evaluate_model(run, scorer=scorer, n=a.n, temperature=temp, planner=planner,
                                 seed=a.seed)
            print(json.dumps({"planner": planner, "temperature": temp, "n": a.n,
                              **{k: round(rep[k], 4) for k in
                                 ("coherence", "creativity", "memorization")}}), flush=True)


if __name__ == "__main__":
    main()
