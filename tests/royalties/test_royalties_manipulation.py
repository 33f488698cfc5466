"""Manipulation checks: the shell-company attack is measurable, ownership groups neutralise it."""

import pytest

from icml25.royalties import (
    HolderStyle,
    RoyaltyInputError,
    default_holders,
    make_scenario,
    merge_check,
    merge_holders,
    split_check,
    split_holder,
    tokenize,
)


@pytest.fixture(scope="module")
def twins():
    holders = default_holders(4)
    holders[1] = HolderStyle("twin", holders[0].topic, holders[0].style)  # a substitute
    sc = make_scenario(1, holders=holders, docs_per_holder=4, sentences_per_doc=10,
                       baseline_docs=4, artifacts_per_holder=1)
    arts = [t for k, t in sc.artifacts.items() if sc.imitates[k] == holders[0].name]
    return sc, holders, arts


def test_split_preserves_the_catalogue():
    corpora = {"a": ["one two", "three four", "five"], "b": ["x y"]}
    split = split_holder(corpora, "a", 2)
    assert list(split) == ["a#shell1", "a#shell2", "b"]
    assert sorted(split["a#shell1"] + split["a#shell2"]) == sorted(corpora["a"])
    short = split_holder({"a": "w1 w2 w3 w4 w5 w6"}, "a", 3)
    assert sum(len(tokenize(" ".join(d), "word")) for d in short.values()) == 6
    merged = merge_holders(corpora, ["a", "b"], "ab")
    assert merged == {"ab": corpora["a"] + corpora["b"]}
    with pytest.raises(RoyaltyInputError, match="unknown holder"):
        split_holder(corpora, "zz", 2)
    with pytest.raises(RoyaltyInputError, match="n_shells"):
        split_holder(corpora, "a", 0)
    with pytest.raises(RoyaltyInputError, match="two distinct"):
        merge_holders(corpora, ["a"], "x")


def test_splitting_beside_a_substitute_pays_and_groups_stop_it(twins):
    sc, holders, arts = twins
    model = {"baseline": sc.baseline, "order": 4}
    attack = split_check(sc.corpora, arts, holders[0].name, 3, **model)
    assert 0.3 < attack.share_before < 0.7  # the twin takes about half
    assert attack.gain > 0.15  # three shells take clearly more than the holder did
    guarded = split_check(sc.corpora, arts, holders[0].name, 3, mitigate=True, **model)
    assert guarded.share_after == pytest.approx(guarded.share_before, abs=1e-9)


def test_merging_reports_both_sides(twins):
    sc, holders, arts = twins
    res = merge_check(sc.corpora, arts, [holders[0].name, holders[1].name],
                      baseline=sc.baseline, order=4)
    assert res.party == ["merged"] and 0 <= res.share_after <= 1
    assert res.share_before == pytest.approx(sum(res.per_artifact_before) / len(arts))
