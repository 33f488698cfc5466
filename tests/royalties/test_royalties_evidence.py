"""Minimum evidence: value below the threshold is held back and reported; Shapley results
hold arrays."""

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from icml25.royalties import (
    KneserNeyCoalitionLM,
    NgramLogRatioUtility,
    RoyaltyInputError,
    ShapleyResult,
    compute_statement,
    evidence_mask,
    exact_shapley,
    make_scenario,
    shapley_values,
    statement_files,
)
from icml25.royalties.cli import app

UNRELATED = ("Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor "
             "incididunt ut labore et dolore magna aliqua.")


@pytest.fixture(scope="module")
def scenario():
    return make_scenario(7, n_holders=5, docs_per_holder=3, sentences_per_doc=10,
                         baseline_docs=4, artifacts_per_holder=1)


def test_unrelated_artifact_is_held_back_not_paid_out(scenario):
    arts = {"unrelated": UNRELATED, **dict(list(scenario.artifacts.items())[:1])}
    plain = compute_statement(scenario.corpora, arts, "100.00", baseline=scenario.baseline,
                              order=4, min_evidence=0.0)
    line = plain.artifacts[[a.artifact for a in plain.artifacts].index("unrelated")]
    # the plain share pays the unrelated artifact out in full on a small positive value
    assert line.allocated and sum(line.holder_cents) == line.amount_cents
    assert 0 < sum(v for v in line.values if v > 0) < 0.1 * line.n_tokens
    st = compute_statement(scenario.corpora, arts, "100.00", baseline=scenario.baseline,
                           order=4)
    line = st.artifacts[[a.artifact for a in st.artifacts].index("unrelated")]
    assert sum(line.holder_cents) == 0 and line.held_back_cents == line.amount_cents
    imitated = st.artifacts[1 - [a.artifact for a in st.artifacts].index("unrelated")]
    top = st.holders.index(scenario.imitates[imitated.artifact])
    assert imitated.holder_cents[top] > 0.9 * imitated.amount_cents
    assert st.held_back_cents >= line.amount_cents
    assert sum(st.holder_totals_cents) + st.unallocated_cents == st.pool_cents
    assert st.audit["evidence"]["min_evidence_nats_per_token"] == 0.1
    assert "held back" in statement_files(st)["summary.csv"]


def test_evidence_mask_rule_and_errors():
    assert evidence_mask([5.0, 1.0, 0.0], 10, 0.2).tolist() == [True, False, False]
    assert evidence_mask([5.0, 1e-9, -1.0], 10, 0.0).tolist() == [True, True, False]
    for bad in (-0.1, float("nan"), True, "x"):
        with pytest.raises(RoyaltyInputError, match="min_evidence"):
            evidence_mask([1.0], 10, bad)


def test_shapley_values_are_arrays_like_shares():
    lm = KneserNeyCoalitionLM(order=3).fit({"ann": "the cat sat", "bob": "a dog ran"},
                                           baseline="the end")
    for res in (exact_shapley(NgramLogRatioUtility(lm, "the cat ran")),
                shapley_values(NgramLogRatioUtility(lm, "the cat ran"), method="sampled",
                               min_permutations=4, max_permutations=8)):
        assert isinstance(res.values, np.ndarray) and res.values.shape == (2,)
        assert isinstance(res.std_errors, np.ndarray) and isinstance(res.shares(), np.ndarray)
        assert res.values.tolist() == list(res.as_dict().values())
        back = ShapleyResult.from_json(res.to_json())  # JSON round trip keeps arrays
        assert np.array_equal(back.values, res.values)
        assert json.loads(res.to_json())["values"] == res.values.tolist()


def test_cli_shares_reports_the_held_back_part(tmp_path, scenario):
    from icml25.royalties import write_corpus_tree

    paths = write_corpus_tree(tmp_path, scenario.corpora, scenario.baseline, {"x": UNRELATED})
    out = CliRunner().invoke(app, ["shares", "--corpora", str(paths["corpora"]), "--baseline",
                                   str(paths["baseline"]), "--artifact",
                                   str(paths["artifacts"] / "x.txt"), "--order", "4", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert not any(data["paid"]) and data["held_back_share"] == pytest.approx(1.0)
