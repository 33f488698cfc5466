"""Every reproduction row of the royalties room carries a verdict from a stated rule."""

import pytest

from icml25.core import load_experiments, run_experiment, select
from icml25.core import verdicts as v


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    load_experiments()
    out = tmp_path_factory.mktemp("royalties")
    return {e.name: run_experiment(e, mode="quick", seed=0, out_root=out)
            for e in select(["royalties"])}


def test_claims_are_judged_and_only_rows_without_a_counterpart_are_not(results):
    for name, r in results.items():
        assert r.status == "ok", r.error
        for c in r.comparisons:
            if c.verdict == v.NOT_COMPARABLE:
                assert not c.rule, (name, c)
                assert c.quantity.startswith(("stopping rule", "exact Shapley")), c
            else:
                assert c.rule, (name, c)


def test_concentration_and_manipulation_verdicts(results):
    conc = {c.quantity: c for c in results["royalties-concentration"].comparisons}
    top = conc["artifacts whose top holder is the imitated one (%)"]
    assert top.chance == pytest.approx(100 / 8) and top.verdict == v.AGREES
    split = {c.quantity: c for c in results["royalties-split"].comparisons}
    declared = split["share gain from 4 shells, ownership groups declared (%)"]
    assert declared.ours == 0.0 and declared.verdict == v.AGREES
    attack = split["share gain from 4 shells, with a substitute (%)"]
    assert attack.ours > 0.5 and attack.verdict == v.AGREES
    sampling = {c.quantity: c for c in results["royalties-sampling"].comparisons}
    cover = sampling["players within 2 reported SE of exact (%)"]
    assert cover.verdict in (v.AGREES, v.WITHIN_GAP) and "interval" in cover.note
