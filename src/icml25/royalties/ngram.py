"""An interpolated Kneser–Ney n-gram language model whose counts add across rights holders.

Each source (the public baseline and every holder) is counted once. The model of a coalition S
is the interpolated Kneser–Ney model of the *summed* counts of the baseline and S's holders, so
every one of the 2^n coalition models comes from the same count tables without retraining.

Why this is fast: every statistic the model needs for an artifact x is a sum over "items" of a
weight times an indicator "does S contain one of the sources this item belongs to". Additive
counts c(hw) are items owned by one source each (weight = that source's count); distinct counts
such as N1+(•hw) are items owned by every source in which the n-gram occurs (weight 1). Grouping
items by their owner set (a presence mask) turns all statistics of all coalitions into one
product ``hits(S, mask) @ W(mask, statistic)``, done in chunks of coalitions with numpy/scipy.

Kneser–Ney here is the interpolated form with one absolute discount D per order (Chen & Goodman
1999): the highest order uses raw counts, lower orders use continuation counts, and the recursion
ends in the uniform distribution over the vocabulary (which includes an unknown-token symbol).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from icml25.royalties.errors import RoyaltyInputError

TOKENIZERS = ("char", "word")
UNK = 1  # reserved id of the unknown token; real tokens start at 2 (0 is never a token)
_WORD_RE = re.compile(r"\w+|[^\w\s]")
_CHUNK_CELLS = 4_000_000  # coalitions x statistics evaluated at once (bounds memory)


def tokenize(text: str, tokenizer: str) -> list[str]:
    """Split ``text`` into characters (whitespace runs become one space) or lower-cased words.

    Parameters
    ----------
    text : str
        The text to split.
    tokenizer : {"char", "word"}
        ``"char"``: one token per character after collapsing whitespace; ``"word"``: lower-cased
        word runs and single punctuation marks.

    Returns
    -------
    list of str
        The tokens.

    Raises
    ------
    RoyaltyInputError
        For an unknown ``tokenizer``.

    Examples
    --------
    >>> tokenize("Hi,  you!", "word")
    ['hi', ',', 'you', '!']
    >>> tokenize("a  b", "char")
    ['a', ' ', 'b']
    """
    if tokenizer == "char":
        return list(" ".join(text.split()))
    if tokenizer == "word":
        return _WORD_RE.findall(text.lower())
    raise RoyaltyInputError(f"tokenizer must be one of {TOKENIZERS}, got {tokenizer!r}")


def _as_documents(value: str | Sequence[str], what: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    docs = list(value)
    if not all(isinstance(d, str) for d in docs):
        raise RoyaltyInputError(f"{what}: documents must be strings")
    return docs


@dataclass(frozen=True)
class _Distinct:
    """Items grouped by a context key; per group, how many items share each presence mask."""

    group_keys: np.ndarray  # sorted unique group keys
    starts: np.ndarray  # offsets into mask_ids / counts, length len(group_keys) + 1
    mask_ids: np.ndarray
    counts: np.ndarray

    @classmethod
    def build(cls, groups: np.ndarray, mask_ids: np.ndarray) -> _Distinct:
        pairs, counts = np.unique(np.stack([groups, mask_ids], axis=1), axis=0,
                                  return_counts=True)
        keys, first = np.unique(pairs[:, 0], return_index=True)
        starts = np.append(first, len(pairs))
        return cls(keys, starts, pairs[:, 1].copy(), counts.astype(np.float64))

    def lookup(self, key: int) -> tuple[np.ndarray, np.ndarray]:
        pos = np.searchsorted(self.group_keys, key)
        if pos == len(self.group_keys) or self.group_keys[pos] != key:
            return _EMPTY_IDS, _EMPTY_W
        lo, hi = self.starts[pos], self.starts[pos + 1]
        return self.mask_ids[lo:hi], self.counts[lo:hi]


@dataclass(frozen=True)
class _Additive:
    """Per-source counts for sorted keys; source s is the one-hot mask ``onehot[s]``."""

    keys: np.ndarray
    counts: np.ndarray  # (n_sources, len(keys))
    onehot: np.ndarray  # mask id of each source's one-hot mask

    def lookup(self, key: int) -> tuple[np.ndarray, np.ndarray]:
        pos = np.searchsorted(self.keys, key)
        if pos == len(self.keys) or self.keys[pos] != key:
            return _EMPTY_IDS, _EMPTY_W
        col = self.counts[:, pos]
        nz = np.flatnonzero(col)
        return self.onehot[nz], col[nz].astype(np.float64)


_EMPTY_IDS = np.zeros(0, dtype=np.int64)
_EMPTY_W = np.zeros(0, dtype=np.float64)


class KneserNeyCoalitionLM:
    """Interpolated Kneser–Ney n-gram LM for every coalition of rights holders at once.

    Parameters are stored untouched; ``fit`` validates them (scikit-learn convention).

    Parameters
    ----------
    order : int, default=5
        n-gram order (1 = unigram). Character models work well at 4–6, word models at 2–3.
    tokenizer : {"char", "word"}, default="char"
        How text is split into tokens.
    discount : float, default=0.75
        Absolute discount D in (0, 1), the same for every order.

    Raises
    ------
    RoyaltyInputError
        In ``fit``, for a parameter out of range, no holders, an empty holder name or an empty
        corpus.

    Examples
    --------
    >>> lm = KneserNeyCoalitionLM(order=3).fit({"a": ["abcabc"], "b": ["xyzxyz"]}, baseline="ab")
    >>> lm.holders_
    ['a', 'b']
    >>> bool(lm.log_prob("abc", [True, False]) > lm.log_prob("abc", [False, True]))
    True
    """

    def __init__(self, order: int = 5, tokenizer: str = "char", discount: float = 0.75):
        self.order = order
        self.tokenizer = tokenizer
        self.discount = discount

    def get_params(self) -> dict:
        return {"order": self.order, "tokenizer": self.tokenizer, "discount": self.discount}

    # ----------------------------------------------------------------------------- fitting
    def fit(self, corpora: Mapping[str, str | Sequence[str]],
            baseline: str | Sequence[str] | None = None) -> KneserNeyCoalitionLM:
        """Count every holder's corpus and the baseline once.

        ``corpora`` maps holder name -> text or list of documents. ``baseline`` is the public
        text every coalition (including the empty one) is trained on; ``None`` means no
        baseline, so the empty coalition's model is uniform over the vocabulary.
        """
        self._check_params()
        if not isinstance(corpora, Mapping) or len(corpora) == 0:
            raise RoyaltyInputError("corpora must map at least one holder name to its text")
        names = list(corpora)
        for name in names:
            if not isinstance(name, str) or not name.strip():
                raise RoyaltyInputError(f"holder names must be non-empty strings, got {name!r}")
        docs = [[tokenize(d, self.tokenizer) for d in _as_documents(corpora[h], f"holder {h!r}")]
                for h in names]
        for name, holder_docs in zip(names, docs, strict=True):
            if sum(len(d) for d in holder_docs) == 0:
                raise RoyaltyInputError(f"holder {name!r} has an empty corpus (no tokens)")
        base_docs = [tokenize(d, self.tokenizer)
                     for d in _as_documents(baseline if baseline is not None else [], "baseline")]
        sources = docs + [base_docs]  # source index n is the baseline

        vocab = sorted({tok for src in sources for d in src for tok in d})
        self.vocab_ = vocab
        self._index = {tok: i + 2 for i, tok in enumerate(vocab)}
        self.base_ = len(vocab) + 2  # radix for n-gram keys (unused 0, UNK, tokens)
        if float(self.base_) ** self.order >= 2.0**62:
            raise RoyaltyInputError(
                f"order {self.order} with a vocabulary of {len(vocab)} tokens does not fit "
                "64-bit n-gram keys; lower the order or use tokenizer='char'")
        self.holders_ = names
        self.n_tokens_ = [sum(len(d) for d in src) for src in sources]
        per_order = [self._count_order(sources, j) for j in range(1, self.order + 1)]
        self._build_tables(per_order)
        return self

    def _check_params(self) -> None:
        if not isinstance(self.order, int | np.integer) or isinstance(self.order, bool) \
                or not 1 <= self.order <= 12:
            raise RoyaltyInputError(f"order must be an integer in 1..12, got {self.order!r}")
        if self.tokenizer not in TOKENIZERS:
            raise RoyaltyInputError(
                f"tokenizer must be one of {TOKENIZERS}, got {self.tokenizer!r}")
        d = self.discount
        if isinstance(d, bool) or not isinstance(d, int | float) or not 0.0 < d < 1.0:
            raise RoyaltyInputError(f"discount must be a number in (0, 1), got {d!r}")

    def _ids(self, tokens: list[str]) -> np.ndarray:
        return np.array([self._index.get(t, UNK) for t in tokens], dtype=np.int64)

    def _keys(self, ids: np.ndarray, j: int) -> np.ndarray:
        """Keys of the j-grams ending at positions j-1, j, ..., len(ids)-1 (no padding)."""
        if len(ids) < j:
            return np.zeros(0, dtype=np.int64)
        windows = np.lib.stride_tricks.sliding_window_view(ids, j)
        powers = self.base_ ** np.arange(j - 1, -1, -1, dtype=np.int64)
        return windows @ powers

    def _count_order(self, sources: list[list[list[str]]], j: int):
        keys_per_source = []
        for src in sources:
            parts = [self._keys(self._ids(d), j) for d in src if d]
            keys_per_source.append(np.concatenate(parts) if parts else np.zeros(0, np.int64))
        all_keys = np.unique(np.concatenate(keys_per_source))
        counts = np.zeros((len(sources), len(all_keys)), dtype=np.int64)
        for s, k in enumerate(keys_per_source):
            uk, c = np.unique(k, return_counts=True)
            counts[s, np.searchsorted(all_keys, uk)] = c
        return all_keys, counts

    def _build_tables(self, per_order) -> None:
        n_sources = len(self.holders_) + 1
        B, N = self.base_, self.order
        # Items of the continuation distributions: a k-gram (k < N) "occurs after something"
        # in a source iff that source has a (k+1)-gram ending in it.
        cont = []
        for k in range(1, N):
            keys, counts = per_order[k]
            suffix = keys % (B**k)
            order = np.argsort(suffix, kind="stable")
            uniq, first = np.unique(suffix[order], return_index=True)
            present = (counts[:, order] > 0).T
            cont.append((uniq, np.logical_or.reduceat(present, first, axis=0)
                         if len(first) else present))
        # One global list of presence masks: one-hot rows, each n-gram's owners, each
        # continuation item's owners.
        presence = ([np.eye(n_sources, dtype=bool)] + [(c > 0).T for _, c in per_order]
                    + [m for _, m in cont])
        masks, inverse = np.unique(np.concatenate(presence), axis=0, return_inverse=True)
        inverse = inverse.ravel()
        self._masks = masks
        onehot = inverse[:n_sources]
        ids, offset = [], n_sources
        for block in presence[1:]:
            ids.append(inverse[offset:offset + len(block)])
            offset += len(block)
        mask_of, cont_mask_of = ids[:N], ids[N:]

        top_keys, top_counts = per_order[N - 1]
        self._top_num = _Additive(top_keys, top_counts, onehot)
        prefixes, first = np.unique(top_keys // B, return_index=True)
        den_counts = np.add.reduceat(top_counts, first, axis=1) if len(first) else top_counts
        self._top_den = _Additive(prefixes, den_counts, onehot)
        self._top_types = _Distinct.build(top_keys // B, mask_of[N - 1])
        self._cont_num, self._cont_den, self._cont_types = [], [], []
        for k in range(1, N):  # continuation statistics of order k come from (k+1)-grams
            keys, owners = per_order[k][0], mask_of[k]
            suffix = keys % (B**k)
            self._cont_num.append(_Distinct.build(suffix, owners))  # N1+(. h w)
            self._cont_den.append(_Distinct.build(suffix // B, owners))  # N1+(. h .)
            items = cont[k - 1][0]
            self._cont_types.append(_Distinct.build(items // B, cont_mask_of[k - 1]))

    # ----------------------------------------------------------------------------- scoring
    def _check_fitted(self) -> None:
        if not hasattr(self, "holders_"):
            raise RuntimeError("this KneserNeyCoalitionLM is not fitted yet; call fit() first")

    def plan(self, text: str) -> ScoringPlan:
        """Precompute what scoring ``text`` under any coalition needs."""
        self._check_fitted()
        if not isinstance(text, str):
            raise RoyaltyInputError("an artifact must be a string")
        tokens = tokenize(text, self.tokenizer)
        if not tokens:
            raise RoyaltyInputError("the artifact is empty (no tokens to score)")
        return ScoringPlan(self, self._ids(tokens))

    def log_prob(self, text: str, coalitions) -> np.ndarray | float:
        """Natural-log probability of ``text`` under the model of each coalition.

        ``coalitions`` is a boolean vector over ``holders_`` or a matrix with one row per
        coalition; the baseline is always included.
        """
        coal = np.asarray(coalitions, dtype=bool)
        out = self.plan(text).log_prob(np.atleast_2d(coal))
        return float(out[0]) if coal.ndim == 1 else out


class ScoringPlan:
    """The statistics one artifact needs, as a sparse map from presence masks to statistics.

    Token t (0-based) is predicted from its last min(t, N-1) tokens: the full order-N model
    where the history is complete, the continuation distribution of order t+1 for the first
    N-1 tokens (no sentence-start padding, so no holder is credited for merely having
    documents that start somewhere).
    """

    def __init__(self, lm: KneserNeyCoalitionLM, ids: np.ndarray):
        self.n_holders = len(lm.holders_)
        self.n_tokens = len(ids)
        self.discount = float(lm.discount)
        self.uniform = 1.0 / (lm.base_ - 1)  # every token id except the unused 0
        B, N = lm.base_, lm.order
        rows, cols, vals = [], [], []
        index: dict[tuple, int] = {}

        def statistic(table, kind: tuple, keys: np.ndarray) -> np.ndarray:
            uniq, inv = np.unique(keys, return_inverse=True)
            out = np.empty(len(uniq), dtype=np.int64)
            for u, key in enumerate(uniq.tolist()):
                tag = kind + (key,)
                if tag not in index:
                    index[tag] = len(index)
                    m, w = table.lookup(key)
                    rows.append(m)
                    cols.append(np.full(len(m), index[tag], dtype=np.int64))
                    vals.append(w)
                out[u] = index[tag]
            return out[inv.ravel()]

        # per order k = 1..N: (first position, numerator, denominator, types) statistic ids
        self.layers = []
        for k in range(1, min(N, len(ids)) + 1):
            g = lm._keys(ids, k)  # k-grams ending at positions k-1, ..., len-1
            h = g // B
            if k == N:
                tables = (lm._top_num, lm._top_den, lm._top_types)
            else:
                tables = (lm._cont_num[k - 1], lm._cont_den[k - 1], lm._cont_types[k - 1])
            self.layers.append((k - 1,
                                statistic(tables[0], ("n", k), g),
                                statistic(tables[1], ("d", k), h),
                                statistic(tables[2], ("t", k), h)))
        r = np.concatenate(rows) if rows else _EMPTY_IDS
        used, r = np.unique(r, return_inverse=True)
        self.masks = lm._masks[used].astype(np.float32)  # (U, n_sources)
        self.weights_t = sp.csr_matrix(
            (np.concatenate(vals) if vals else _EMPTY_W,
             (np.concatenate(cols) if cols else _EMPTY_IDS, r.ravel())),
            shape=(len(index), len(used)))  # (statistics, masks)

    def statistics(self, coalitions: np.ndarray) -> np.ndarray:
        """Value of every statistic for each coalition: (n_statistics, n_coalitions)."""
        ext = np.concatenate([coalitions.astype(np.float32),
                              np.ones((len(coalitions), 1), np.float32)], axis=1)
        hits = (self.masks @ ext.T > 0.5).astype(np.float64)  # (U, C): does S own the item?
        return self.weights_t @ hits

    def log_prob(self, coalitions: np.ndarray) -> np.ndarray:
        """log p_S(x) for each coalition row (boolean, one column per holder)."""
        coalitions = np.asarray(coalitions, dtype=bool)
        if coalitions.ndim != 2 or coalitions.shape[1] != self.n_holders:
            raise RoyaltyInputError(
                f"coalitions must have shape (k, {self.n_holders}), got {coalitions.shape}")
        width = max(self.weights_t.shape[0], len(self.masks), self.n_tokens, 1)
        chunk = max(1, _CHUNK_CELLS // width)
        out = np.empty(len(coalitions))
        for lo in range(0, len(coalitions), chunk):
            out[lo:lo + chunk] = self._log_prob_chunk(coalitions[lo:lo + chunk])
        return out

    def _log_prob_chunk(self, coalitions: np.ndarray) -> np.ndarray:
        stats = self.statistics(coalitions)
        D = self.discount
        p = np.full((self.n_tokens, len(coalitions)), self.uniform)  # (positions, coalitions)
        for start, num_id, den_id, typ_id in self.layers:
            low = p[start:]  # the lower-order estimate for positions start, start+1, ...
            den = stats[den_id]
            mixed = stats[num_id] - D
            np.maximum(mixed, 0.0, out=mixed)
            mixed += D * stats[typ_id] * low
            seen = den > 0
            np.divide(mixed, den, out=mixed, where=seen)
            # interpolate where this context was seen, else back off to the lower order
            np.copyto(low, mixed, where=seen)
        return np.log(p).sum(axis=0)
