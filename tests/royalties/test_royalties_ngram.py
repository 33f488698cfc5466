"""The coalition Kneser–Ney model: summed counts give the same model as retraining, and every
coalition's model is a normalised distribution."""

import itertools
import math
from collections import Counter

import numpy as np
import pytest

from icml25.royalties import KneserNeyCoalitionLM, RoyaltyInputError, tokenize


def reference_log_prob(docs: list[list[str]], x: list[str], order: int, discount: float,
                       vocab_size: int) -> float:
    """Textbook interpolated Kneser–Ney, retrained from the coalition's concatenated documents
    with plain dictionaries (slow, independent of the vectorised code)."""
    grams = {j: Counter() for j in range(1, order + 1)}
    for d in docs:
        for j in range(1, order + 1):
            for t in range(j - 1, len(d)):
                grams[j][tuple(d[t - j + 1:t + 1])] += 1

    def prob(w: str, h: tuple, k: int) -> float:
        if k == 0:
            return 1.0 / vocab_size
        lower = prob(w, h[1:], k - 1)
        if k == order:
            num = grams[k][h + (w,)]
            den = sum(c for g, c in grams[k].items() if g[:-1] == h)
            typ = sum(1 for g in grams[k] if g[:-1] == h)
        else:
            ext = grams[k + 1]
            num = sum(1 for g in ext if g[1:] == h + (w,))
            den = sum(1 for g in ext if g[1:-1] == h)
            typ = len({g[1:] for g in ext if g[1:-1] == h})
        if den == 0:
            return lower
        return (max(num - discount, 0.0) + discount * typ * lower) / den

    total = 0.0
    for t, w in enumerate(x):
        k = min(t + 1, order)
        total += math.log(prob(w, tuple(x[t - k + 1:t]), k))
    return total


@pytest.mark.parametrize("order,tokenizer", [(1, "char"), (3, "char"), (4, "char"),
                                             (2, "word")])
def test_summed_counts_equal_retraining_on_every_coalition(order, tokenizer):
    rng = np.random.default_rng(order)
    alphabet = list("abcde ")
    words = ["red", "fox", "runs", "over", "the", "dog", "blue"]

    def draw(n):
        if tokenizer == "char":
            return "".join(rng.choice(alphabet, n))
        return " ".join(rng.choice(words, n // 3))

    corpora = {f"h{i}": [draw(40), draw(25)] for i in range(3)}
    baseline = [draw(30)]
    artifact = draw(24) + "z"  # an unseen token too
    lm = KneserNeyCoalitionLM(order=order, tokenizer=tokenizer, discount=0.6)
    lm.fit(corpora, baseline)
    coalitions = np.array(list(itertools.product([False, True], repeat=3)))
    ours = lm.log_prob(artifact, coalitions)
    x = tokenize(artifact, tokenizer)
    for row, value in zip(coalitions, ours, strict=True):
        docs = [tokenize(d, tokenizer) for d in baseline]
        for name, member in zip(lm.holders_, row, strict=True):
            if member:
                docs += [tokenize(d, tokenizer) for d in corpora[name]]
        ref = reference_log_prob(docs, x, order, 0.6, len(lm.vocab_) + 1)
        assert value == pytest.approx(ref, abs=1e-9)


def test_every_coalition_model_is_normalised():
    lm = KneserNeyCoalitionLM(order=3).fit(
        {"a": ["abcabcabd"], "b": ["xyzxyz"], "c": ["helloworld"]}, baseline="abcd")
    symbols = lm.vocab_ + ["\u2603"]  # plus one unknown symbol
    assert " " not in symbols
    for row in itertools.product([False, True], repeat=3):
        for ctx in ["", "a", "ab", "zq", "abca"]:
            base = lm.log_prob(ctx, row) if ctx else 0.0
            total = sum(math.exp(lm.log_prob(ctx + s, row) - base) for s in symbols)
            assert total == pytest.approx(1.0, abs=1e-9)


def test_more_of_the_imitated_data_raises_the_likelihood():
    lm = KneserNeyCoalitionLM(order=4).fit(
        {"sea": ["the hull and the keel and the mast"] * 3,
         "law": ["the statute and the verdict and the clause"] * 3}, baseline="the and")
    x = "the keel and the hull"
    assert lm.log_prob(x, [True, False]) > lm.log_prob(x, [False, False]) > \
        lm.log_prob(x, [False, True]) - 50  # the unrelated holder may lower it a little
    assert lm.log_prob(x, [True, False]) > lm.log_prob(x, [False, True])


def test_clear_errors():
    with pytest.raises(RoyaltyInputError, match="empty corpus"):
        KneserNeyCoalitionLM().fit({"a": "text", "b": ["", "   "]})
    with pytest.raises(RoyaltyInputError, match="at least one holder"):
        KneserNeyCoalitionLM().fit({})
    with pytest.raises(RoyaltyInputError, match="order"):
        KneserNeyCoalitionLM(order=0).fit({"a": "x"})
    with pytest.raises(RoyaltyInputError, match="discount"):
        KneserNeyCoalitionLM(discount=1.5).fit({"a": "x"})
    with pytest.raises(RoyaltyInputError, match="tokenizer"):
        KneserNeyCoalitionLM(tokenizer="bpe").fit({"a": "x"})
    lm = KneserNeyCoalitionLM(order=3).fit({"a": "abc"})
    with pytest.raises(RoyaltyInputError, match="empty"):
        lm.plan("   ")
    with pytest.raises(RoyaltyInputError, match="shape"):
        lm.plan("abc").log_prob(np.ones((2, 3), bool))
    with pytest.raises(RuntimeError, match="not fitted"):
        KneserNeyCoalitionLM().plan("abc")
    words = " ".join(f"w{i}" for i in range(5000))
    with pytest.raises(RoyaltyInputError, match="64-bit"):
        KneserNeyCoalitionLM(order=6, tokenizer="word").fit({"a": words})
