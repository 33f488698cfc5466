"""Has a Line/Circle model learnt the global rule? A teacher-forced probe on held-out data lines.

At every head token (the ``y`` of an edge ``x y``) the one locally valid but wrong choice is
the start of the chain that ``x`` ends (the edge would close a cycle). The probe prints, by the
number of hops from ``x`` back to that start, the model's mean probability of that closing
head beside its mean probability of a valid head. A ratio near 1 means the model cannot tell
the closing head from the valid ones (only the local rule learnt); near 0, it has learnt the
lookup for that many hops. Circle's last edge, which must close the cycle, is skipped.

    .venv/bin/python benchmarks/creativity_hop_probe.py MODEL_DIR [--n 300]
"""

from __future__ import annotations

import argparse
import collections
import json

import torch

from icml25.creativity.tasks import generate, make_task
from icml25.creativity.training import Run, load_run


def closing_heads(answer: tuple[str, ...], circle: bool) -> list[tuple[int, str, int, set]]:
    """For each edge k that may not close a cycle: (k, the closing head, hops back from the
    tail to it, the heads already entered). Nodes are the answer's tokens."""
    pairs = [(answer[i], answer[i + 1]) for i in range(0, len(answer) - 1, 3)]
    pred: dict[str, str] = {}
    out = []
    for k, (u, v) in enumerate(pairs):
        start, hops = u, 0
        while start in pred:
            start, hops = pred[start], hops + 1
        if hops and not (circle and k == len(pairs) - 1):
            out.append((k, start, hops, set(pred)))
        pred[v] = u
    return out


def probe(model_dir: str, n: int) -> dict:
    return {"model": model_dir, **probe_run(load_run(model_dir), n)}


def probe_run(run: Run, n: int) -> dict:
    """The probe on a loaded (or training) run: held-out NLL per answer token, and by hops."""
    task, vocab = run.task, run.vocab
    sizes = {k: v for k, v in task.params.items() if k in ("n_entities", "length")}
    lines = generate(make_task(task.name, 99, **sizes), seed_len=run.seed_len).train[:n]
    stats = collections.defaultdict(lambda: [0, 0.0, 0.0])  # count, p(closing), p(valid)
    nll = tokens = 0.0
    for ex in lines:
        prompt = vocab.prompt(ex.seed, ex.marker)
        ids = prompt + vocab.encode(ex.answer)
        with torch.no_grad():
            logp = run.model(torch.tensor([ids[:-1]])).log_softmax(-1)[0]
        at = len(prompt) - 1  # the row predicting answer token 0
        nll -= sum(logp[at + j, ids[at + 1 + j]].item() for j in range(len(ex.answer)))
        tokens += len(ex.answer)
        for k, start, hops, entered in closing_heads(ex.answer, task.name == "circle"):
            p = logp[at + 3 * k + 1].exp()
            tail = ex.answer[3 * k]
            valid = [e for e in task.entities() if e not in entered and e not in (start, tail)]
            s = stats[hops]
            s[0] += 1
            s[1] += p[vocab.index[start]].item()
            s[2] += sum(p[vocab.index[e]].item() for e in valid) / max(len(valid), 1)
    rows = {h: {"n": c, "p_closing": a / c, "p_valid": b / c, "ratio": a / b}
            for h, (c, a, b) in sorted(stats.items())}
    return {"nll_per_token": nll / tokens, "by_hops": rows}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--n", type=int, default=300, help="held-out data lines (task seed 99)")
    a = ap.parse_args()
    torch.set_num_threads(1)
    print(json.dumps(probe(a.model, a.n)))


if __name__ == "__main__":
    main()
