"""Why NTP models sit at 25-30% coherence on Line and Circle: the coherence of a sampler that
knows only the *local* rule (each node leaves once and is entered once, no self-loops, no
repeated edge) and nothing about cycles, scored by the project's own scorer. It also prints the
data's entropy per answer token (the loss of a perfect model) and the excess loss a model that
knows only the local rule pays: KL(data || local-rule sampler), estimated on data answers,
beside -log P(coherent) (the two agree when the data were exactly the sampler conditioned on
coherence; they nearly are).

    .venv/bin/python benchmarks/creativity_degree_only.py --n 20000
    .venv/bin/python benchmarks/creativity_degree_only.py --n 5000 --hop-table
"""

from __future__ import annotations

import argparse
import json
import math

import numpy as np

from icml25.creativity.scoring import Scorer
from icml25.creativity.tasks import END, SEP, make_task


def _chain_start(u: int, pred: dict[int, int]) -> tuple[int, int]:
    """The start of the chain that ends in ``u`` and how many hops back it is (``(u, 0)`` when
    ``u`` lies on a cycle already closed: no edge from it can close another)."""
    hops, x = 0, u
    while x in pred:
        x, hops = pred[x], hops + 1
        if x == u:
            return u, 0
    return x, hops


def local_rule_answer(task_name: str, rng: np.random.Generator, hops: int = 0) -> str:
    """Edges drawn one by one, uniformly among those the local rule allows (circle: on 9 of the
    10 entities, chosen first). ``hops`` > 0: the sampler also knows the global rule for chains
    of up to that many edges: it never closes a cycle whose start is at most ``hops`` hops
    back from the tail (a model that has learnt the chain-start lookup that deep)."""
    nodes = list(range(10)) if task_name == "line" else sorted(rng.choice(10, 9, replace=False))
    n_edges = 9
    left, entered, edges, pred = set(), set(), [], {}
    for k in range(n_edges):
        closing_ok = task_name == "circle" and k == n_edges - 1
        allowed = []
        for u in nodes:
            start, back = _chain_start(u, pred)
            known = not closing_ok and 0 < back <= hops
            allowed += [(u, v) for v in nodes if u != v and u not in left
                        and v not in entered and not (known and v == start)]
        if not allowed:
            break
        u, v = allowed[int(rng.integers(len(allowed)))]
        left.add(u)
        entered.add(v)
        pred[v] = u
        edges.append((u, v))
    return f" {SEP} ".join(f"<a_{u}> <a_{v}>" for u, v in edges) + f" {END}"


def data_answer(task_name: str, rng: np.random.Generator) -> tuple[list, list]:
    """(nodes, shuffled directed edges) drawn the way the task's generator draws them."""
    if task_name == "line":
        order = [int(x) for x in rng.permutation(10)]
        edges = [(order[i], order[i + 1]) for i in range(9)]
        nodes = list(range(10))
    else:
        order = [int(x) for x in rng.choice(10, 9, replace=False)]
        edges = [(order[i], order[(i + 1) % 9]) for i in range(9)]
        nodes = sorted(order)
    return nodes, [edges[int(i)] for i in rng.permutation(9)]


def local_rule_log_prob(task_name: str, nodes: list, edges: list) -> float:
    """log q(answer) under the local-rule sampler."""
    lq = -math.log(10) if task_name == "circle" else 0.0  # circle: which entity is left out
    left, entered = set(), set()
    for u, v in edges:
        tails = [x for x in nodes if x not in left]
        heads = [x for x in nodes if x not in entered]
        lq -= math.log(len(tails) * len(heads) - len(set(tails) & set(heads)))
        left.add(u)
        entered.add(v)
    return lq


def entropy_per_token(task_name: str) -> float:
    """log(number of distinct training answers) / 27 tokens: node order x edge order."""
    if task_name == "line":
        total = math.lgamma(11) + math.lgamma(10)  # 10! node orders x 9! edge orders
    else:  # 10 ways to leave one entity out, 8! directed 9-cycles, 9! edge orders
        total = math.log(10) + math.lgamma(9) + math.lgamma(10)
    return total / 27


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--hop-table", action="store_true",
                    help="instead: coherence of samplers that know the global rule up to "
                         "0..8 hops (what a model must learn for a coherence level)")
    a = ap.parse_args()
    if a.hop_table:
        for name in ("line", "circle"):
            scorer = Scorer(make_task(name, 0), [])
            row = {}
            for h in range(9):
                rng = np.random.default_rng(a.seed)
                answers = [local_rule_answer(name, rng, h) for _ in range(a.n)]
                row[h] = round(scorer.score(answers).coherence, 4)
            print(json.dumps({"task": name, "n": a.n, "coherence_by_hops_known": row}))
        return
    for name in ("line", "circle"):
        rng = np.random.default_rng(a.seed)
        answers = [local_rule_answer(name, rng) for _ in range(a.n)]
        rep = Scorer(make_task(name, 0), []).score(answers)
        p = rep.coherence
        log_p = -entropy_per_token(name) * 27  # every data answer is equally likely
        kl = sum(log_p - local_rule_log_prob(name, *data_answer(name, rng))
                 for _ in range(a.n)) / a.n
        print(json.dumps({
            "task": name, "n": a.n, "local_rule_coherence": round(p, 4),
            "se": round(math.sqrt(p * (1 - p) / a.n), 4),
            "data_entropy_per_token": round(entropy_per_token(name), 4),
            "minus_log_coherence_per_answer": round(-math.log(p), 3),
            "kl_data_to_local_rule_per_answer": round(kl, 3),
            "local_rule_excess_loss_per_token": round(kl / 27, 4),
            "excess_loss_per_token_at_90pct": round(-math.log(0.9) / 27, 4)}))


if __name__ == "__main__":
    main()
