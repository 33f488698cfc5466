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

import numpy as np
import torch

from icml25.creativity import shipped
from icml25.creativity.methods import _span
from icml25.creativity.scoring import Scorer
from icml25.creativity.tasks import parse_line
from icml25.creativity.training import fresh_prompts, load_run
from icml25.mdm import PLANNERS
from icml25.mdm import sample as mdm_sample


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
    prompts = [parse_line(p) for p in fresh_prompts(run, a.n, np.random.default_rng(a.seed))]
    x = torch.tensor([run.vocab.prompt(e.seed, e.marker) for e in prompts])
    scorer = Scorer(run.task, run.train)
    for planner in PLANNERS:
        for temp in map(float, a.temperatures.split(",")):
            tokens, maskable, start = _span(run.model, run.vocab, x, 0)
            filled = mdm_sample(run.model, tokens, maskable, steps=run.task.answer_len,
                                planner=planner, temperature=temp, mask_id=run.vocab.mask,
                                generator=torch.Generator().manual_seed(1))
            answers = [run.vocab.decode_answer(r[start:].tolist()) for r in filled]
            rep = scorer.score(answers, skip_errors=False).summary()
            print(json.dumps({"planner": planner, "temperature": temp, "n": a.n,
                              **{k: round(rep[k], 4) for k in
                                 ("coherence", "creativity", "memorization")}}), flush=True)


if __name__ == "__main__":
    main()
