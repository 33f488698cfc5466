"""Reviewer assignment at NeurIPS size: generated venue, TF-IDF affinity, optimal min-cost flow.

Generates a venue with a topic model (papers and reviewers' past abstracts are bags of words
drawn from 1-3 topics), bids for a share of the pairs, conflicts and institutions; computes
TF-IDF affinity on sparse top-k candidate lists; solves the assignment exactly on those lists
(OR-Tools min-cost flow, one reviewer per institution per paper); prints times, peak memory,
total and per-paper affinity, and the ratio against the reference in /work/shared/ANCHORS.md
(OpenReview matcher v2.0.7 at 30,000 x 20,000: out of memory after 99 s; the same model handed
straight to OR-Tools: 44 s, 5.2 GB).

    .venv/bin/python benchmarks/review_assignment_scale.py                  # 30,000 x 20,000
    .venv/bin/python benchmarks/review_assignment_scale.py --papers 1000 --reviewers 700

Side-by-side with OpenReview's matcher (installed outside the project, see ANCHORS.md):

    # 1. generate + solve, and write the instance in the matcher's CLI formats
    .venv/bin/python benchmarks/review_assignment_scale.py --papers 1000 --reviewers 700 \\
        --no-institutions --export /tmp/inst1k
    #    -> scores.csv (paper,user,score: our candidate pairs, score = affinity + 0.5 * bid),
    #       constraints.csv (paper,user,-1 for every conflict), instance.npz, ours.json
    # 2. run the matcher on scores.csv / constraints.csv (non-candidate pairs have no score
    #    row, and the matcher drops zero-score pairs unless --allow_zero_score_assignments)
    # 3. our solver alone on the exported instance (process time and memory like the matcher's)
    .venv/bin/python benchmarks/review_assignment_scale.py --load /tmp/inst1k --no-institutions
    # 4. score and verify the matcher's assignments.json with our scorer on the same instance
    .venv/bin/python benchmarks/review_assignment_scale.py --load /tmp/inst1k --no-institutions \\
        --check-assignment assignments.json
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path

import numpy as np

from icml25.review.affinity import BID_SCORE, tfidf_profiles, top_candidates
from icml25.review.matching import Problem, Result, quality, solve, verify

REF_SECONDS_30K = 44.0  # ANCHORS.md: OR-Tools on the matcher's model, 30k x 20k, 5.2 GB


def generate(n_p: int, n_r: int, rng: np.random.Generator, vocab: int = 6000,
             topics: int = 300, words: int = 60, pubs: int = 3):
    """Abstract texts for papers and reviewers from a simple topic model."""
    # each topic: 40 characteristic words, plus a shared background vocabulary
    topic_words = rng.integers(0, vocab, size=(topics, 40))
    names = np.array([f"w{i}" for i in range(vocab)])

    def doc(main: np.ndarray) -> str:
        k = len(main)
        own = topic_words[main[rng.integers(0, k, size=int(words * 0.7))],
                          rng.integers(0, 40, size=int(words * 0.7))]
        bg = rng.integers(0, vocab, size=words - len(own))
        return " ".join(names[np.concatenate([own, bg])])

    paper_topics = [rng.choice(topics, size=rng.integers(1, 4), replace=False)
                    for _ in range(n_p)]
    rev_topics = [rng.choice(topics, size=rng.integers(1, 4), replace=False)
                  for _ in range(n_r)]
    papers = [doc(t) for t in paper_topics]
    reviewers = [[doc(t[rng.integers(0, len(t), size=1)]) for _ in range(pubs)]
                 for t in rev_topics]
    return papers, reviewers


def build_instance(args: argparse.Namespace) -> tuple[dict, float, float]:
    """Generate the venue; returns the instance arrays, generation time and affinity time."""
    rng = np.random.default_rng(args.seed)
    n_p, n_r = args.papers, args.reviewers
    t0 = time.perf_counter()
    papers, reviewers = generate(n_p, n_r, rng)
    t_gen = time.perf_counter() - t0

    t1 = time.perf_counter()
    x_s, x_r = tfidf_profiles(papers, reviewers)
    p, r, a = top_candidates(x_s, x_r, top_k=args.top_k)
    t_aff = time.perf_counter() - t1
    # bids: each reviewer bids on ~20 of their candidate papers (mostly positive)
    bid = np.zeros(len(p))
    chosen = rng.random(len(p)) < (20 * n_r) / len(p)
    bid[chosen] = rng.choice([2, 1, 0, -1, -2], size=int(chosen.sum()),
                             p=[0.3, 0.35, 0.15, 0.1, 0.1])
    score = a + 0.5 * np.vectorize(BID_SCORE.get, otypes=[float])(bid)
    # conflicts: 1% of the candidate pairs; institutions: random
    conflict = rng.random(len(p)) < 0.01
    inst = rng.integers(0, args.institutions, size=n_r)
    inst_arrays = {"n_papers": np.int64(n_p), "n_reviewers": np.int64(n_r),
                   "k": np.int64(args.k), "max_load": np.int64(args.max_load),
                   "paper": p, "reviewer": r, "affinity": a, "bid": bid, "score": score,
                   "conflict": conflict, "institution": inst}
    return inst_arrays, t_gen, t_aff


def make_problem(ins: dict, institutions: bool) -> tuple[Problem, np.ndarray]:
    """The solver's problem (conflicted pairs dropped) and the mask of kept candidate pairs."""
    p, r, conf = ins["paper"], ins["reviewer"], ins["conflict"]
    n_p, n_r = int(ins["n_papers"]), int(ins["n_reviewers"])
    conflicts = set(zip(p[conf].tolist(), r[conf].tolist(), strict=True))
    prob = Problem.build(n_p, n_r, p, r, ins["score"], k=int(ins["k"]),
                         max_load=int(ins["max_load"]),
                         institution=ins["institution"] if institutions else None,
                         conflicts=conflicts)
    return prob, ~conf


def export(out: Path, ins: dict) -> None:
    """The instance in openreview-matcher's CLI formats (plus the arrays, for checking).

    scores.csv: one ``paper,user,score`` row per candidate pair (conflicted ones too), with
    exactly the score our solver maximises (affinity + 0.5 * bid score). Pairs outside the
    top-k lists get no row: the matcher gives them score 0 and, without
    ``--allow_zero_score_assignments``, adds no arc for them -- the same candidate set as ours.
    constraints.csv: ``paper,user,-1`` for every conflict.
    """
    out.mkdir(parents=True, exist_ok=True)
    p, r, s, conf = ins["paper"], ins["reviewer"], ins["score"], ins["conflict"]
    with open(out / "scores.csv", "w") as f:
        f.writelines(f"p{a},r{b},{c:.6f}\n" for a, b, c in
                     zip(p.tolist(), r.tolist(), s.tolist(), strict=True))
    with open(out / "constraints.csv", "w") as f:
        f.writelines(f"p{a},r{b},-1\n" for a, b in
                     zip(p[conf].tolist(), r[conf].tolist(), strict=True))
    np.savez_compressed(out / "instance.npz", **ins)


def load(path: Path) -> dict:
    with np.load(path / "instance.npz") as z:
        return {k: z[k] for k in z.files}


def check_assignment(prob: Problem, keep: np.ndarray, ins: dict, path: Path) -> dict:
    """Score an openreview-matcher ``assignments.json`` (paper id -> [{"user": id}, ...]) on
    the same instance with our scorer, and verify it against our constraints."""
    data = json.loads(path.read_text())
    n_r = prob.n_reviewers
    pairs = np.array([(int(pid[1:]), int(e["user"][1:])) for pid, lst in data.items()
                      for e in lst], dtype=np.int64).reshape(-1, 2)
    want = pairs[:, 0] * n_r + pairs[:, 1]
    keys = prob.paper * n_r + prob.reviewer
    chosen = np.isin(keys, want)
    outside = int((~np.isin(want, keys)).sum())  # non-candidate or conflicted pairs
    res = Result(chosen, "total", "openreview-matcher", float(prob.score[chosen].sum()),
                 0.0, False)
    errors = verify(prob, res)
    if outside:
        errors.append(f"{outside} assigned pair(s) outside the candidate lists or conflicted")
    # the institution rule, counted on the assignment even when the solvers ignored it
    inst = ins["institution"][pairs[:, 1]]
    _, per_group = np.unique(np.stack([pairs[:, 0], inst]), axis=1, return_counts=True)
    q = quality(prob, res, affinity=ins["affinity"][keep], bid=ins["bid"][keep])
    q.pop("optimal")  # unknown for an external assignment
    return {"n_pairs_file": len(pairs), "errors": errors,
            "institution_rule_violations": int((per_group > 1).sum()),
            "total_affinity": round(float(ins["affinity"][keep][chosen].sum()), 4), **q}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--papers", type=int, default=30_000)
    ap.add_argument("--reviewers", type=int, default=20_000)
    ap.add_argument("--k", type=int, default=3, help="reviewers per paper")
    ap.add_argument("--max-load", type=int, default=6)
    ap.add_argument("--top-k", type=int, default=40, help="candidates per paper")
    ap.add_argument("--institutions", type=int, default=2_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-institutions", action="store_true",
                    help="drop the one-reviewer-per-institution rule (the matcher's MinMax and "
                         "FairFlow cannot express it)")
    ap.add_argument("--export", type=Path, metavar="DIR",
                    help="write the instance in openreview-matcher's CLI formats and our result")
    ap.add_argument("--load", type=Path, metavar="DIR",
                    help="solve an instance written by --export instead of generating one")
    ap.add_argument("--check-assignment", type=Path, metavar="JSON",
                    help="with --load: score and verify a matcher assignments.json instead of "
                         "solving")
    args = ap.parse_args()
    use_inst = not args.no_institutions

    t_gen = t_aff = 0.0
    if args.load:
        t_load = time.perf_counter()
        ins = load(args.load)
        t_load = time.perf_counter() - t_load
    else:
        ins, t_gen, t_aff = build_instance(args)
    n_p, n_r = int(ins["n_papers"]), int(ins["n_reviewers"])

    if args.check_assignment:
        if not args.load:
            ap.error("--check-assignment needs --load DIR")
        prob, keep = make_problem(ins, use_inst)
        print(json.dumps(check_assignment(prob, keep, ins, args.check_assignment), indent=1))
        return

    t2 = time.perf_counter()
    prob, keep = make_problem(ins, use_inst)
    res = solve(prob, backend="ortools")
    t_solve = time.perf_counter() - t2
    errors = verify(prob, res)
    q = quality(prob, res, affinity=ins["affinity"][keep], bid=ins["bid"][keep])
    total_aff = float(ins["affinity"][keep][res.chosen].sum())
    peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 ** 2
    total = t_aff + t_solve
    print(f"instance: {n_p:,} papers x {n_r:,} reviewers, k={int(ins['k'])}, loads "
          f"0-{int(ins['max_load'])}, {len(prob.paper):,} candidate pairs, "
          f"{int(ins['conflict'].sum()):,} conflicts, institution rule "
          f"{'on' if use_inst else 'off'}")
    if args.load:
        print(f"load instance       {t_load:8.1f} s")
    else:
        print(f"generate texts      {t_gen:8.1f} s  (not part of the assignment)")
        print(f"tf-idf + top-k      {t_aff:8.1f} s")
    print(f"build + solve       {t_solve:8.1f} s  ({res.solver}, optimal on the candidates)")
    print(f"assignment total    {total:8.1f} s   peak memory {peak_gb:.2f} GB")
    print(f"constraint check    {'ok' if not errors else errors}")
    print(f"total score {q['total_score']:.4f}; total affinity {total_aff:.4f}; mean pair "
          f"affinity {q['mean_affinity']:.4f}; min paper affinity "
          f"{q['min_paper_affinity']:.4f}; bids honoured {q['bids_honoured']:.3f}; loads "
          f"{q['load_min']}-{q['load_max']}")
    if args.export:
        export(args.export, ins)
        ours = {"solver": res.solver, "institution_rule": use_inst, "tfidf_topk_s": t_aff,
                "build_solve_s": t_solve, "peak_rss_gb_process": peak_gb,
                "constraints_ok": not errors, "total_affinity": round(total_aff, 4), **q}
        (args.export / "ours.json").write_text(json.dumps(ours, indent=1))
        print(f"exported to {args.export} (scores.csv, constraints.csv, instance.npz, "
              f"ours.json)")
    if n_p == 30_000 and n_r == 20_000 and not args.load:
        print(f"reference (ANCHORS.md): OpenReview matcher OOM after 99 s; OR-Tools on its model "
              f"{REF_SECONDS_30K:.0f} s -> ratio ours/reference = {total / REF_SECONDS_30K:.2f}")


if __name__ == "__main__":
    main()
