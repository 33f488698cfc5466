"""Manipulation checks: what a holder gains by splitting into shell holders or by merging.

Shapley values are not robust to how players are *declared*: a holder who splits its catalogue
into k shells becomes k players, and when other holders offer substitutes (data that raises the
artifact's likelihood in much the same way) each shell is credited separately, so the shells
together get more than the original holder (the "shell-company attack", arXiv 2505.19013).
Merging is the mirror image: two substitutes that merge lose what splitting would have gained.

Mitigation offered here: compute values over declared *ownership groups* (Owen value: the
Shapley value of the game between groups, then split within each group). Because counts add,
a group's data — and hence the game between groups — is unchanged by how the owner splits its
catalogue, so the group's total is exactly invariant to splitting. This only helps when
ownership is declared truthfully (e.g. a registry of beneficial owners); undeclared shells
still gain.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np

from icml25.core import JsonRecord
from icml25.royalties.errors import RoyaltyInputError
from icml25.royalties.ngram import KneserNeyCoalitionLM
from icml25.royalties.shapley import royalty_shares, shapley_values
from icml25.royalties.utility import NgramLogRatioUtility


def shell_name(holder: str, k: int) -> str:
    return f"{holder}#shell{k}"


def split_holder(corpora: Mapping[str, Sequence[str]], holder: str,
                 n_shells: int) -> dict[str, list[str]]:
    """Replace ``holder`` by ``n_shells`` shells that share its documents round-robin.

    With fewer documents than shells, the text is cut into ``n_shells`` pieces at spaces.
    Counts add, so the shells together hold exactly the holder's n-grams (up to the n-grams
    that span a cut).

    Parameters
    ----------
    corpora : mapping of str to sequence of str
        Holder -> documents (a single string counts as one document).
    holder : str
        The holder to split.
    n_shells : int
        Number of shells (1 leaves the holder as is); shells are named ``<holder>#shell<k>``.

    Returns
    -------
    dict of str to list of str
        The corpora with ``holder`` replaced by its shells.

    Raises
    ------
    RoyaltyInputError
        For an unknown holder, ``n_shells`` < 1, or too little text for the shells.

    Examples
    --------
    >>> split_holder({"ann": ["d1", "d2", "d3"], "bob": ["x"]}, "ann", 2)
    {'ann#shell1': ['d1', 'd3'], 'ann#shell2': ['d2'], 'bob': ['x']}
    """
    if holder not in corpora:
        raise RoyaltyInputError(f"unknown holder {holder!r}")
    if not isinstance(n_shells, int) or n_shells < 1:
        raise RoyaltyInputError(f"n_shells must be a positive integer, got {n_shells!r}")
    docs = [corpora[holder]] if isinstance(corpora[holder], str) else list(corpora[holder])
    if len(docs) < n_shells:
        words = " ".join(docs).split(" ")
        cuts = np.linspace(0, len(words), n_shells + 1).round().astype(int)
        docs = [" ".join(words[a:b]) for a, b in zip(cuts[:-1], cuts[1:], strict=True)]
        if any(not d.strip() for d in docs):
            raise RoyaltyInputError(f"holder {holder!r} has too little text for {n_shells} "
                                    "shells")
    out: dict[str, list[str]] = {}
    for name, value in corpora.items():
        if name != holder:
            out[name] = [value] if isinstance(value, str) else list(value)
            continue
        if n_shells == 1:
            out[name] = docs
            continue
        for k in range(n_shells):
            out[shell_name(holder, k + 1)] = docs[k::n_shells]
    return out


def merge_holders(corpora: Mapping[str, Sequence[str]], members: Sequence[str],
                  new_name: str) -> dict[str, list[str]]:
    """Replace ``members`` by one holder ``new_name`` owning all their documents.

    Parameters
    ----------
    corpora : mapping of str to sequence of str
        Holder -> documents.
    members : sequence of str
        At least two distinct holders to merge.
    new_name : str
        Name of the merged holder (may be one of ``members``, not another holder).

    Returns
    -------
    dict of str to list of str
        The corpora with ``members`` replaced by ``new_name``.

    Raises
    ------
    RoyaltyInputError
        For fewer than two distinct members, an unknown member, or a taken ``new_name``.

    Examples
    --------
    >>> merge_holders({"ann": ["a"], "bob": ["b"], "cy": ["c"]}, ["ann", "cy"], "ac")
    {'ac': ['a', 'c'], 'bob': ['b']}
    """
    members = list(members)
    if len(members) < 2 or len(set(members)) != len(members):
        raise RoyaltyInputError("merging needs at least two distinct holders")
    for m in members:
        if m not in corpora:
            raise RoyaltyInputError(f"unknown holder {m!r}")
    if new_name in corpora and new_name not in members:
        raise RoyaltyInputError(f"a holder named {new_name!r} already exists")
    out: dict[str, list[str]] = {}
    for name, value in corpora.items():
        docs = [value] if isinstance(value, str) else list(value)
        if name in members:
            out.setdefault(new_name, []).extend(docs)
        else:
            out[name] = docs
    return out


@dataclasses.dataclass
class ManipulationResult(JsonRecord):
    """A party's mean royalty share over the artifacts before and after a manipulation.

    Parameters
    ----------
    kind : str
        ``"split"`` or ``"merge"``.
    party : list of str
        Holders the party controls after the manipulation.
    share_before : float
        Mean share before.
    share_after : float
        Mean share after.
    grouped : bool
        Whether values were computed over declared ownership groups.
    per_artifact_before : list of float
        Share per artifact before.
    per_artifact_after : list of float
        Share per artifact after.

    Examples
    --------
    >>> r = ManipulationResult("split", ["a#shell1", "a#shell2"], 0.5, 0.6, False,
    ...                        [0.5], [0.6])
    >>> round(r.gain, 6)
    0.2
    """

    kind: str  # "split" or "merge"
    party: list[str]  # holders the party controls after the manipulation
    share_before: float
    share_after: float
    grouped: bool  # were values computed over declared ownership groups?
    per_artifact_before: list[float]
    per_artifact_after: list[float]

    @property
    def gain(self) -> float:
        """Relative change of the party's share (0.2 = 20 % more money)."""
        return self.share_after / self.share_before - 1.0 if self.share_before > 0 else np.nan


def party_shares(corpora: Mapping[str, Sequence[str]], artifacts: Sequence[str],
                 party: Sequence[str], *, baseline=None, groups=None, order: int = 5,
                 tokenizer: str = "char", discount: float = 0.75, method: str = "auto",
                 seed: int = 0) -> list[float]:
    """Total royalty share of the holders in ``party`` for each artifact.

    Parameters
    ----------
    corpora : mapping of str to sequence of str
        Holder -> documents.
    artifacts : sequence of str
        Artifact texts.
    party : sequence of str
        Holders whose shares are summed.
    baseline : str, sequence of str or None, default=None
        Baseline corpus of the language model.
    groups : sequence of sequences of str or None, default=None
        Ownership groups (Owen values).
    order : int, default=5
        n-gram order.
    tokenizer : {"char", "word"}, default="char"
        Tokenizer of the language model.
    discount : float, default=0.75
        Kneser–Ney discount.
    method : {"auto", "exact", "sampled"}, default="auto"
        Shapley method (see :func:`shapley_values`).
    seed : int, default=0
        Seed of the sampler.

    Returns
    -------
    list of float
        The party's total share for each artifact, in [0, 1].

    Raises
    ------
    ValueError
        If a party member is not a holder.

    Examples
    --------
    >>> corpora = {"ann": ["the cat sat"], "bob": ["a dog ran"]}
    >>> [round(x, 3) for x in party_shares(corpora, ["the cat sat", "a dog ran"], ["ann"],
    ...                                     order=2, tokenizer="word")]
    [1.0, 0.0]
    """
    lm = KneserNeyCoalitionLM(order=order, tokenizer=tokenizer, discount=discount)
    lm.fit(corpora, baseline)
    idx = [lm.holders_.index(p) for p in party]
    out = []
    for text in artifacts:
        res = shapley_values(NgramLogRatioUtility(lm, text), method=method, groups=groups,
                             seed=seed)
        shares, _ = royalty_shares(res.values)
        out.append(float(shares[idx].sum()))
    return out


def split_check(corpora: Mapping[str, Sequence[str]], artifacts: Sequence[str], holder: str,
                n_shells: int, *, mitigate: bool = False, **model) -> ManipulationResult:
    """Mean share of ``holder`` before vs. its shells' total after splitting into ``n_shells``.

    ``mitigate=True`` declares the shells as one ownership group (Owen value), which makes the
    total exactly invariant to the split.

    Parameters
    ----------
    corpora : mapping of str to sequence of str
        Holder -> documents.
    artifacts : sequence of str
        Artifact texts.
    holder : str
        The holder that splits.
    n_shells : int
        Number of shells.
    mitigate : bool, default=False
        Value the shells as one declared ownership group.
    **model
        Passed to :func:`party_shares` (``order``, ``tokenizer``, ``baseline``...).

    Returns
    -------
    ManipulationResult
        ``kind="split"``, the shells as ``party``, mean shares before and after.

    Raises
    ------
    RoyaltyInputError
        As :func:`split_holder`.

    Examples
    --------
    >>> corpora = {"ann": ["the cat sat", "the cat ran"], "bob": ["the cat sat down"]}
    >>> r = split_check(corpora, ["the cat sat"], "ann", 2, mitigate=True,
    ...                 order=2, tokenizer="word")
    >>> r.party, abs(r.share_after - r.share_before) < 1e-9
    (['ann#shell1', 'ann#shell2'], True)
    """
    before = party_shares(corpora, artifacts, [holder], **model)
    split = split_holder(corpora, holder, n_shells)
    party = [holder] if n_shells == 1 else [shell_name(holder, k + 1) for k in range(n_shells)]
    groups = [party] if mitigate else None
    after = party_shares(split, artifacts, party, groups=groups, **model)
    return ManipulationResult("split", party, float(np.mean(before)), float(np.mean(after)),
                              mitigate, before, after)


def merge_check(corpora: Mapping[str, Sequence[str]], artifacts: Sequence[str],
                members: Sequence[str], *, new_name: str = "merged",
                **model) -> ManipulationResult:
    """Mean total share of ``members`` before vs. the merged holder's share after.

    Parameters
    ----------
    corpora : mapping of str to sequence of str
        Holder -> documents.
    artifacts : sequence of str
        Artifact texts.
    members : sequence of str
        Holders that merge.
    new_name : str, default="merged"
        Name of the merged holder.
    **model
        Passed to :func:`party_shares`.

    Returns
    -------
    ManipulationResult
        ``kind="merge"``, ``party=[new_name]``, mean shares before and after.

    Raises
    ------
    RoyaltyInputError
        As :func:`merge_holders`.

    Examples
    --------
    >>> corpora = {"ann": ["the cat sat"], "bob": ["the cat sat"], "cy": ["a dog ran"]}
    >>> r = merge_check(corpora, ["the cat sat"], ["ann", "bob"], order=2, tokenizer="word")
    >>> r.party, round(r.share_before, 3), round(r.share_after, 3)
    (['merged'], 1.0, 1.0)
    """
    before = party_shares(corpora, artifacts, list(members), **model)
    merged = merge_holders(corpora, members, new_name)
    after = party_shares(merged, artifacts, [new_name], **model)
    return ManipulationResult("merge", [new_name], float(np.mean(before)),
                              float(np.mean(after)), False, before, after)
