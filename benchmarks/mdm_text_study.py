"""The text experiment at the documented scale, on the shipped text MDM and its causal judge.

``infill``: single-line and multi-line spans of held-out standard-library modules, vanilla /
top prob / top margin at several bytes per step (exact match and "the file still parses", 95%
intervals). ``perplexity``: unconditional samples per planner and step count, perplexity per
byte under the judge and unigram entropy, beside held-out text (Fig. 3). The same functions as
``icml25 reproduce mdm-text``; the two parts can run side by side (one thread each).

Run (niced, one thread each, in the background)::

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python benchmarks/mdm_text_study.py infill \\
        --n-single 200 --n-multi 100 --bytes-per-step 1,2 --out docs/mdm/text-infill.json
    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python benchmarks/mdm_text_study.py perplexity \\
        --n-samples 16 --sample-steps 16,64,256 --out docs/mdm/text-perplexity.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from icml25.mdm.model_io import load_model
from icml25.mdm.text_data import load_corpus
from icml25.mdm.text_eval import evaluate_infilling, evaluate_perplexity, held_out_perplexity

PLANNERS = ("random", "top_prob", "top_margin")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("part", choices=["infill", "perplexity"])
    ap.add_argument("--kinds", default="single,multi", help="infill: single, multi or both")
    ap.add_argument("--n-single", type=int, default=200)
    ap.add_argument("--n-multi", type=int, default=100)
    ap.add_argument("--bytes-per-step", default="1,2")
    ap.add_argument("--n-samples", type=int, default=16)
    ap.add_argument("--sample-steps", default="16,64,256")
    ap.add_argument("--out", type=Path, required=True, help="JSON, rewritten after every part")
    args = ap.parse_args()
    torch.set_num_threads(1)
    model = load_model(task="text")
    held_out = load_corpus("held_out")
    record = {"part": args.part, "held_out_modules": held_out.modules,
              "held_out_bytes": held_out.n_bytes()}

    def write():
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(record, indent=1))

    t0 = time.perf_counter()
    if args.part == "infill":
        sizes = {"single": args.n_single, "multi": args.n_multi}
        for kind in args.kinds.split(","):
            record[kind] = {}
            for b in (int(b) for b in args.bytes_per_step.split(",")):
                record[kind][b] = {}
                for planner in PLANNERS:  # one at a time: an interrupted run keeps the rest
                    r = evaluate_infilling(model, held_out, [planner], kinds=[kind],
                                           n=sizes[kind], bytes_per_step=[b])[kind][b][planner]
                    record[kind][b][planner] = r
                    record["seconds"] = round(time.perf_counter() - t0, 1)
                    write()
                    print(kind, b, planner, json.dumps({m: round(v.get("rate", v.get("mean")), 4)
                                                        for m, v in r.items()}), flush=True)
    else:
        from icml25.mdm.experiments import TEXT_SAMPLE_SEED

        judge = load_model(task="text-causal")
        steps = [int(s) for s in args.sample_steps.split(",")]
        record["reference"] = held_out_perplexity(judge, held_out, args.n_samples,
                                                  seed=TEXT_SAMPLE_SEED)
        record["perplexity"] = {}
        for s in steps:  # one step count at a time, so an interrupted run keeps what it did
            record["perplexity"][s] = evaluate_perplexity(
                model, judge, PLANNERS, steps_grid=[s], n=args.n_samples, seed=1)[s]
            record["seconds"] = round(time.perf_counter() - t0, 1)
            write()
            print(s, json.dumps({p: round(r["perplexity"], 3)
                                 for p, r in record["perplexity"][s].items()}), flush=True)


if __name__ == "__main__":
    main()
