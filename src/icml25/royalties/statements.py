"""Royalty statements: split a period's pool over its artifacts, then each artifact's amount
over the rights holders by Shapley royalty share.

Money is handled in integer minor units (cents): the pool is split over artifacts (equally or
by weight) and each artifact's amount over holders by the largest-remainder method, so every
statement adds up to the pool exactly. An artifact to which no holder contributed positively
goes to the ``unallocated`` line instead of being spread arbitrarily.

Minimum evidence: a holder is paid on an artifact only if its Shapley value is at least
``min_evidence`` nats per token of the artifact (:func:`evidence_mask`). An n-gram model built
on more text assigns a little more probability to almost any text, so an artifact unrelated to
every holder still shows a small positive total value (about 0.01-0.08 nats per character
per holder on the generated scenarios, against 1.5-2 for the imitated holder). The cents of
holders below the threshold are *held back*: they stay out of every holder's total and are
reported per artifact (``held_back_cents``) and for the period (``held_back_cents``, also
counted in ``unallocated_cents``). ``min_evidence=0`` restores the plain Shapley Royalty
Share. See docs/royalties-evidence.md.

Writing and verifying the files is in :mod:`icml25.royalties.io`. Everything is a pure
function of the inputs and the seed: the same inputs give byte-identical
JSON and CSV files (no timestamps; floats written in Python's shortest round-trip form).
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import io
import json
import platform
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal, InvalidOperation

import numpy as np

from icml25.core import JsonRecord, track
from icml25.royalties.errors import RoyaltyInputError
from icml25.royalties.ngram import KneserNeyCoalitionLM
from icml25.royalties.shapley import (
    DEFAULT_EXACT_LIMIT,
    ShapleyResult,
    royalty_shares,
    shapley_values,
)
from icml25.royalties.utility import NgramLogRatioUtility

MINOR_UNITS = 100  # cents
MAX_POOL = 10**15  # keeps every amount exact in int64 cents
DEFAULT_MIN_EVIDENCE = 0.1  # nats per token of the artifact (see the module docstring)


def parse_pool(value) -> int:
    """A royalty pool as integer cents; a clear error unless it is a positive amount with at
    most two decimals (``"1250.50"``, ``1250``, ``Decimal("0.01")``).

    Parameters
    ----------
    value : str, int, float or Decimal
        The amount in major units; underscores and surrounding spaces are allowed.

    Returns
    -------
    int
        The amount in cents.

    Raises
    ------
    RoyaltyInputError
        If ``value`` is not a positive finite amount, has more than two decimals, or exceeds
        10**15.

    Examples
    --------
    >>> parse_pool("1_250.50")
    125050
    >>> try:
    ...     parse_pool("0.001")
    ... except RoyaltyInputError as err:
    ...     print(err)
    the pool '0.001' has more than two decimals
    """
    if isinstance(value, bool) or value is None:
        raise RoyaltyInputError(f"the pool must be a positive amount, got {value!r}")
    try:
        amount = Decimal(str(value).strip().replace("_", ""))
    except InvalidOperation:
        raise RoyaltyInputError(f"the pool must be a positive amount, got {value!r}") from None
    if not amount.is_finite() or amount <= 0:
        raise RoyaltyInputError(f"the pool must be a positive amount, got {value!r}")
    if amount > MAX_POOL:
        raise RoyaltyInputError(f"the pool {value!r} is larger than {MAX_POOL:,}")
    cents = amount * MINOR_UNITS
    if cents != cents.to_integral_value():
        raise RoyaltyInputError(f"the pool {value!r} has more than two decimals")
    return int(cents)


def format_cents(cents: int) -> str:
    sign = "-" if cents < 0 else ""
    return f"{sign}{abs(cents) // MINOR_UNITS}.{abs(cents) % MINOR_UNITS:02d}"


def allocate(total: int, weights: Sequence[float]) -> list[int]:
    """Split ``total`` minor units in proportion to ``weights`` (largest remainder, ties to the
    earlier entry); the parts are non-negative integers that sum to ``total``.

    Parameters
    ----------
    total : int
        Minor units (cents) to split.
    weights : sequence of float
        Non-negative weights with a positive sum.

    Returns
    -------
    list of int
        One part per weight, summing to ``total``.

    Raises
    ------
    RoyaltyInputError
        If ``weights`` is empty, negative, non-finite or sums to zero.

    Examples
    --------
    >>> allocate(100, [1, 1, 1])
    [34, 33, 33]
    """
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 1 or len(w) == 0 or (w < 0).any() or not np.isfinite(w).all() or w.sum() <= 0:
        raise RoyaltyInputError("allocation weights must be non-negative with a positive sum")
    raw = total * (w / w.sum())
    parts = np.floor(raw).astype(np.int64)
    left = int(total - parts.sum())
    order = np.lexsort((np.arange(len(w)), -(raw - parts)))  # largest remainder first
    parts[order[:left]] += 1
    return parts.tolist()


@dataclasses.dataclass
class ArtifactLine(JsonRecord):
    """One artifact's amount and how it splits over the holders."""

    artifact: str
    sha256: str
    weight: float
    amount_cents: int
    allocated: bool
    values: list[float]  # Shapley values (nats of log-likelihood ratio)
    std_errors: list[float]
    shares: list[float]
    holder_cents: list[int]
    method: str
    n_evaluations: int
    n_permutations: int
    converged: bool
    n_tokens: int = 0  # tokens of the artifact (the unit of the evidence threshold)
    held_back_cents: int = 0  # cents of holders below the evidence threshold, not paid


@dataclasses.dataclass
class RoyaltyStatement(JsonRecord):
    """A period's statement: per-artifact splits, per-holder totals and the audit record.

    Parameters
    ----------
    period : str
        Label of the period (e.g. ``"2025-Q1"``).
    currency : str
        Currency label.
    pool_cents : int
        The period's pool in cents.
    holders : list of str
        Holder names, sorted.
    artifacts : list of ArtifactLine
        One line per artifact: amount, Shapley values, shares and cents per holder.
    holder_totals_cents : list of int
        Total cents per holder.
    unallocated_cents : int
        Cents paid to no holder (held-back cents included).
    audit : dict
        Model, valuation, evidence and money settings, input hashes and software versions.
    held_back_cents : int, default=0
        The part of ``unallocated_cents`` held back for lack of evidence.

    Examples
    --------
    >>> st = compute_statement({"ann": "the cat sat", "bob": "a dog ran"},
    ...                        {"a1": "the cat sat"}, "10.00", order=2, tokenizer="word")
    >>> st.holders, st.holder_total("ann") + st.holder_total("bob") + st.unallocated_cents
    (['ann', 'bob'], 1000)
    """

    period: str
    currency: str
    pool_cents: int
    holders: list[str]
    artifacts: list[ArtifactLine]
    holder_totals_cents: list[int]
    unallocated_cents: int  # not paid to any holder (held-back cents included)
    audit: dict
    held_back_cents: int = 0  # the part of unallocated_cents held back for lack of evidence

    def holder_total(self, holder: str) -> int:
        return self.holder_totals_cents[self.holders.index(holder)]


def _sha256(texts: str | Sequence[str]) -> str:
    h = hashlib.sha256()
    for t in [texts] if isinstance(texts, str) else texts:
        data = t.encode("utf-8")
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    return h.hexdigest()


def compute_statement(corpora: Mapping[str, str | Sequence[str]], artifacts: Mapping[str, str],
                      pool, *, baseline: str | Sequence[str] | None = None, period: str = "",
                      currency: str = "", weights: Mapping[str, float] | None = None,
                      order: int = 5, tokenizer: str = "char", discount: float = 0.75,
                      method: str = "auto", exact_limit: int = DEFAULT_EXACT_LIMIT,
                      groups: Sequence[Sequence[str]] | None = None, seed: int = 0,
                      rel_se_tol: float = 0.01, max_permutations: int = 4000,
                      min_evidence: float = DEFAULT_MIN_EVIDENCE,
                      progress: bool | None = False) -> RoyaltyStatement:
    """Shapley royalty statement for one period (see the module docstring).

    ``min_evidence`` (nats per token of the artifact, default 0.1) is the smallest Shapley
    value per token for which a holder is paid on an artifact; the cents of holders below it
    are held back (:func:`evidence_mask`). ``progress=None`` shows a progress bar over
    artifacts on an interactive terminal.

    Parameters
    ----------
    corpora : mapping of str to str or sequence of str
        Holder -> corpus (one text or a list of documents).
    artifacts : mapping of str to str
        Artifact id -> text (at least one).
    pool : str, int, float or Decimal
        The period's pool (see :func:`parse_pool`).
    baseline : str, sequence of str or None, default=None
        Public baseline corpus of the language model.
    period : str, default=""
        Period label.
    currency : str, default=""
        Currency label.
    weights : mapping of str to float or None, default=None
        Weight of each artifact in the pool split; None splits equally.
    order : int, default=5
        n-gram order.
    tokenizer : {"char", "word"}, default="char"
        Tokenizer of the language model.
    discount : float, default=0.75
        Kneser–Ney discount.
    method : {"auto", "exact", "sampled"}, default="auto"
        Shapley method (see :func:`shapley_values`).
    exact_limit : int, default=15
        Largest number of holders valued exactly under ``"auto"``.
    groups : sequence of sequences of str or None, default=None
        Ownership groups (Owen values).
    seed : int, default=0
        Non-negative seed; each artifact gets its own stream.
    rel_se_tol : float, default=0.01
        Relative standard-error target of the sampler.
    max_permutations : int, default=4000
        Orderings the sampler draws at most.
    min_evidence : float, default=0.1
        Smallest Shapley value per artifact token for a holder to be paid.
    progress : bool or None, default=False
        Show a progress bar (None: only on an interactive terminal).

    Returns
    -------
    RoyaltyStatement
        The statement; cents add up to the pool exactly.

    Raises
    ------
    RoyaltyInputError
        For a bad pool, no artifacts, a negative or non-integer seed, bad weights, a bad
        ``min_evidence``, or bad corpora or model parameters.

    Examples
    --------
    >>> st = compute_statement({"ann": "the cat sat", "bob": "a dog ran"},
    ...                        {"a1": "the cat sat", "a2": "a dog ran"}, "10.00",
    ...                        order=2, tokenizer="word")
    >>> st.pool_cents, st.holder_totals_cents, st.unallocated_cents
    (1000, [500, 500], 0)
    """
    pool_cents = parse_pool(pool)
    min_evidence = _check_min_evidence(min_evidence)
    if not isinstance(artifacts, Mapping) or not artifacts:
        raise RoyaltyInputError("a statement needs at least one artifact")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise RoyaltyInputError(f"seed must be a non-negative integer, got {seed!r}")
    ids = sorted(artifacts)
    w = _artifact_weights(ids, weights)
    lm = KneserNeyCoalitionLM(order=order, tokenizer=tokenizer, discount=discount)
    lm.fit(corpora, baseline)
    holders = list(lm.holders_)
    seeds = np.random.SeedSequence(seed).spawn(len(ids))  # one stream per artifact
    amounts = allocate(pool_cents, w)
    lines, totals, unallocated, held = [], np.zeros(len(holders), np.int64), 0, 0
    work = track(list(zip(ids, w, amounts, seeds, strict=True)), "valuing artifacts",
                 enabled=progress)
    for key, weight, amount, ss in work:
        result: ShapleyResult = shapley_values(
            NgramLogRatioUtility(lm, artifacts[key]), method=method, exact_limit=exact_limit,
            groups=groups, seed=np.random.default_rng(ss), rel_se_tol=rel_se_tol,
            max_permutations=max_permutations)
        shares, allocated = royalty_shares(result.values)
        n_tok = _n_tokens(artifacts[key], tokenizer)
        cents = np.asarray(allocate(amount, shares) if allocated else [0] * len(holders),
                           np.int64)
        below = ~evidence_mask(result.values, n_tok, min_evidence)
        held_here = int(cents[below].sum())
        cents[below] = 0
        held += held_here
        unallocated += held_here + (0 if allocated else amount)
        totals += cents
        lines.append(ArtifactLine(
            artifact=key, sha256=_sha256(artifacts[key]), weight=float(weight),
            amount_cents=amount, allocated=allocated, values=result.values.tolist(),
            std_errors=result.std_errors.tolist(), shares=shares.tolist(),
            holder_cents=cents.tolist(),
            method=result.method, n_evaluations=result.n_evaluations,
            n_permutations=result.n_permutations, converged=result.converged,
            n_tokens=n_tok, held_back_cents=held_here))
    audit = {
        "mechanism": "Shapley royalty share: v(S) = log p_S(x) - log p_empty(x); "
                     "share_i = max(phi_i, 0) / sum_j max(phi_j, 0)",
        "model": {"family": "interpolated Kneser-Ney n-gram, counts summed per coalition",
                  **lm.get_params(), "vocabulary_size": len(lm.vocab_),
                  "tokens_per_holder": dict(zip(holders, lm.n_tokens_[:-1], strict=True)),
                  "baseline_tokens": lm.n_tokens_[-1]},
        "valuation": {"method": method, "exact_limit": exact_limit, "seed": seed,
                      "rel_se_tol": rel_se_tol, "max_permutations": max_permutations,
                      "ownership_groups": [list(g) for g in groups] if groups else None},
        "evidence": {"min_evidence_nats_per_token": min_evidence,
                     "rule": "holder i is paid on an artifact of T tokens only if "
                             "phi_i >= min_evidence * T; the rest is held back"},
        "money": {"minor_units": MINOR_UNITS, "rounding": "largest remainder",
                  "artifact_weights": None if weights is None else dict(zip(ids, w,
                                                                            strict=True))},
        "inputs_sha256": {"holders": {h: _sha256(_docs(corpora[h])) for h in holders},
                          "baseline": _sha256(_docs(baseline)) if baseline is not None else None,
                          "artifacts": {k: line.sha256 for k, line in zip(ids, lines,
                                                                          strict=True)}},
        "software": {"icml25": _version(), "numpy": np.__version__,
                     "python": platform.python_version()},
    }
    return RoyaltyStatement(period=period, currency=currency, pool_cents=pool_cents,
                            holders=holders, artifacts=lines, holder_totals_cents=totals.tolist(),
                            unallocated_cents=unallocated, audit=audit,
                            held_back_cents=held)


def evidence_mask(values, n_tokens: int, min_evidence: float = DEFAULT_MIN_EVIDENCE
                  ) -> np.ndarray:
    """Which holders have enough evidence to be paid on one artifact.

    Parameters
    ----------
    values : array-like of shape (n_holders,)
        Shapley values of the holders on the artifact (nats of log-likelihood ratio).
    n_tokens : int
        Tokens of the artifact (characters for the ``"char"`` tokenizer).
    min_evidence : float, default=0.1
        Smallest value per token that is paid (nats per token); 0 pays every positive value.

    Returns
    -------
    numpy.ndarray of bool, shape (n_holders,)
        True where ``values >= min_evidence * n_tokens`` (and the value is positive).

    Raises
    ------
    RoyaltyInputError
        If ``min_evidence`` is negative or not finite, or ``n_tokens`` is negative.

    Examples
    --------
    >>> evidence_mask([300.0, 4.0, -2.0], n_tokens=200, min_evidence=0.1).tolist()
    [True, False, False]
    """
    me = _check_min_evidence(min_evidence)
    if isinstance(n_tokens, bool) or int(n_tokens) < 0:
        raise RoyaltyInputError(f"n_tokens must be a non-negative integer, got {n_tokens!r}")
    phi = np.asarray(values, dtype=np.float64)
    return (phi > 0) & (phi >= me * int(n_tokens))


def _check_min_evidence(value) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not np.isfinite(value) \
            or value < 0:
        raise RoyaltyInputError(f"min_evidence must be a finite number >= 0 (nats per token), "
                                f"got {value!r}")
    return float(value)


def _n_tokens(text: str, tokenizer: str) -> int:
    from icml25.royalties.ngram import tokenize

    return len(tokenize(text, tokenizer))


def _docs(value: str | Sequence[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def _version() -> str:
    from icml25 import __version__

    return __version__


def _artifact_weights(ids: list[str], weights: Mapping[str, float] | None) -> list[float]:
    if weights is None:
        return [1.0] * len(ids)
    unknown = sorted(set(weights) - set(ids))
    if unknown:
        raise RoyaltyInputError(f"weights name unknown artifacts: {unknown}")
    missing = [k for k in ids if k not in weights]
    if missing:
        raise RoyaltyInputError(f"weights are missing for artifacts: {missing}")
    out = []
    for k in ids:
        v = weights[k]
        if isinstance(v, bool) or not isinstance(v, int | float) or not np.isfinite(v) or v < 0:
            raise RoyaltyInputError(f"artifact weight for {k!r} must be a non-negative number")
        out.append(float(v))
    if sum(out) <= 0:
        raise RoyaltyInputError("artifact weights must have a positive sum")
    return out


# ---------------------------------------------------------------------------------- files
def _csv(rows: list[list]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    return buf.getvalue()


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name) or "holder"


def statement_files(st: RoyaltyStatement) -> dict[str, str]:
    """Every output file of a statement as ``{relative path: text}`` (deterministic).

    Parameters
    ----------
    st : RoyaltyStatement
        The statement.

    Returns
    -------
    dict of str to str
        ``statement.json``, ``audit.json``, ``summary.csv`` and, per holder,
        ``holders/<name>.csv`` and ``holders/<name>.json``.

    Examples
    --------
    >>> st = compute_statement({"ann": "the cat sat", "bob": "a dog ran"},
    ...                        {"a1": "the cat sat"}, "10.00", order=2, tokenizer="word")
    >>> sorted(statement_files(st))
    ['audit.json', 'holders/ann.csv', 'holders/ann.json', 'holders/bob.csv',
     'holders/bob.json', 'statement.json', 'summary.csv']
    """
    files = {"statement.json": json.dumps(st.to_dict(), indent=2) + "\n",
             "audit.json": json.dumps(st.audit, indent=2) + "\n"}
    summary = [["holder", "total", "currency", "period"]]
    summary += [[h, format_cents(c), st.currency, st.period]
                for h, c in zip(st.holders, st.holder_totals_cents, strict=True)]
    summary.append(["(unallocated)", format_cents(st.unallocated_cents), st.currency, st.period])
    summary.append(["(held back: below min evidence; part of unallocated)",
                    format_cents(st.held_back_cents), st.currency, st.period])
    summary.append(["(pool)", format_cents(st.pool_cents), st.currency, st.period])
    files["summary.csv"] = _csv(summary)
    used: set[str] = set()
    for j, holder in enumerate(st.holders):
        stem = _safe(holder)
        while stem in used:  # two names that sanitise alike still get their own files
            stem += "_"
        used.add(stem)
        rows = [["artifact", "share", "shapley_value", "std_error", "artifact_amount", "amount"]]
        entries = []
        for line in st.artifacts:
            rows.append([line.artifact, repr(line.shares[j]), repr(line.values[j]),
                         repr(line.std_errors[j]), format_cents(line.amount_cents),
                         format_cents(line.holder_cents[j])])
            entries.append({"artifact": line.artifact, "share": line.shares[j],
                            "shapley_value": line.values[j], "std_error": line.std_errors[j],
                            "artifact_amount": format_cents(line.amount_cents),
                            "amount": format_cents(line.holder_cents[j])})
        total = format_cents(st.holder_totals_cents[j])
        rows.append(["TOTAL", "", "", "", format_cents(st.pool_cents), total])
        files[f"holders/{stem}.csv"] = _csv(rows)
        files[f"holders/{stem}.json"] = json.dumps(
            {"holder": holder, "period": st.period, "currency": st.currency,
             "pool": format_cents(st.pool_cents), "total": total, "artifacts": entries,
             "audit_sha256": hashlib.sha256(files["audit.json"].encode()).hexdigest()},
            indent=2) + "\n"
    return files
