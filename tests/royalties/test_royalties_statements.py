"""Statements: exact money, bit-for-bit reproducibility, audit record, clear input errors, CLI."""

import json
import os
from decimal import Decimal

import numpy as np
import pytest
from typer.testing import CliRunner

from icml25.royalties import (
    RoyaltyInputError,
    allocate,
    compute_statement,
    load_corpora,
    make_scenario,
    parse_pool,
    statement_files,
    write_corpus_tree,
    write_statement,
)
from icml25.royalties.cli import app


@pytest.fixture(scope="module")
def scenario():
    return make_scenario(7, n_holders=5, docs_per_holder=3, sentences_per_doc=10,
                         baseline_docs=4, artifacts_per_holder=1)


def test_pool_parsing():
    assert parse_pool("1000") == 100000
    assert parse_pool("12.34") == 1234
    assert parse_pool(Decimal("0.01")) == 1
    assert parse_pool(7) == 700
    for bad in ["0", "-5", "abc", "", "nan", "inf", "1.234", None, True, "1e999999999"]:
        with pytest.raises(RoyaltyInputError, match="pool"):
            parse_pool(bad)


def test_allocation_is_exact_and_fair():
    rng = np.random.default_rng(0)
    for _ in range(200):
        w = rng.exponential(size=int(rng.integers(1, 9))) * (rng.random(1) < 0.9)
        if w.sum() == 0:
            continue
        total = int(rng.integers(0, 10**6))
        parts = allocate(total, w)
        assert sum(parts) == total and min(parts) >= 0
        assert np.all(np.abs(np.array(parts) - total * w / w.sum()) < 1.0)
    assert allocate(10, [1, 1, 1]) == [4, 3, 3]  # the leftover cent goes to the first tie


def test_statement_adds_up_and_pays_the_imitated_holder(scenario):
    st = compute_statement(scenario.corpora, scenario.artifacts, "1000.00",
                           baseline=scenario.baseline, period="2025-Q1", currency="EUR",
                           order=4)
    assert sum(st.holder_totals_cents) + st.unallocated_cents == st.pool_cents == 100000
    for line in st.artifacts:
        paid = line.amount_cents - line.held_back_cents
        assert sum(line.holder_cents) == (paid if line.allocated else 0)
        if line.allocated:
            assert sum(line.shares) == pytest.approx(1.0, abs=1e-12)
            assert min(line.shares) >= 0
            top = st.holders[int(np.argmax(line.shares))]
            assert top == scenario.imitates[line.artifact]
    assert st.audit["model"]["order"] == 4
    assert set(st.audit["inputs_sha256"]["holders"]) == set(st.holders)


def _files_bytes(folder):
    out = {}
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            with open(path, "rb") as fh:
                out[os.path.relpath(path, folder)] = fh.read()
    return out


@pytest.mark.parametrize("method", ["exact", "sampled"])
def test_statements_reproduce_bit_for_bit(scenario, tmp_path, method):
    kwargs = dict(baseline=scenario.baseline, period="P1", currency="USD", order=3,
                  method=method, seed=3, weights={k: float(i + 1) for i, k in
                                                  enumerate(sorted(scenario.artifacts))})
    a = compute_statement(scenario.corpora, scenario.artifacts, "999.99", **kwargs)
    b = compute_statement({k: list(v) for k, v in scenario.corpora.items()},
                          dict(scenario.artifacts), "999.99", **kwargs)  # fresh copies
    write_statement(a, tmp_path / "a")
    write_statement(b, tmp_path / "b")
    fa, fb = _files_bytes(tmp_path / "a"), _files_bytes(tmp_path / "b")
    assert fa == fb and len(fa) == 3 + 2 * len(scenario.corpora)
    if method == "sampled":
        c = compute_statement(scenario.corpora, scenario.artifacts, "999.99",
                              **{**kwargs, "seed": 4})
        assert statement_files(c)["statement.json"] != statement_files(a)["statement.json"]
    holder = a.holders[0]
    per_holder = json.loads(fa[f"holders/{holder}.json"])
    assert per_holder["total"] == f"{a.holder_total(holder) / 100:.2f}"
    rows = fa[f"holders/{holder}.csv"].decode().strip().splitlines()
    assert rows[0].startswith("artifact,share") and rows[-1].startswith("TOTAL")
    assert len(rows) == len(scenario.artifacts) + 2


def test_statement_input_errors(scenario):
    with pytest.raises(RoyaltyInputError, match="pool"):
        compute_statement(scenario.corpora, scenario.artifacts, "-3")
    with pytest.raises(RoyaltyInputError, match="artifact"):
        compute_statement(scenario.corpora, {}, "10")
    with pytest.raises(RoyaltyInputError, match="empty corpus"):
        compute_statement({"a": ["text here"], "b": [" "]}, {"x": "text"}, "10")
    with pytest.raises(RoyaltyInputError, match="unknown artifacts"):
        compute_statement(scenario.corpora, scenario.artifacts, "10", weights={"nope": 1.0})
    with pytest.raises(RoyaltyInputError, match="missing"):
        compute_statement(scenario.corpora, scenario.artifacts, "10",
                          weights={sorted(scenario.artifacts)[0]: 1.0})


def test_corpus_loading_errors(tmp_path):
    with pytest.raises(RoyaltyInputError, match="does not exist"):
        load_corpora(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(RoyaltyInputError, match="no holders"):
        load_corpora(tmp_path / "empty")
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "ann.txt").write_text("   \n")
    with pytest.raises(RoyaltyInputError, match="empty corpus"):
        load_corpora(tmp_path / "c")
    (tmp_path / "c" / "ann.txt").write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(RoyaltyInputError, match="not UTF-8"):
        load_corpora(tmp_path / "c")


@pytest.fixture(scope="module")
def demo_tree(tmp_path_factory, scenario):
    return write_corpus_tree(tmp_path_factory.mktemp("demo"), scenario.corpora,
                             scenario.baseline, scenario.artifacts)


def test_cli_shares_and_statement(demo_tree, tmp_path, scenario):
    runner = CliRunner()
    art = sorted(demo_tree["artifacts"].iterdir())[0]
    res = runner.invoke(app, ["shares", "--corpora", str(demo_tree["corpora"]), "--baseline",
                              str(demo_tree["baseline"]), "--artifact", str(art), "--order", "3",
                              "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert sum(data["shares"]) == pytest.approx(1.0)
    assert data["players"][int(np.argmax(data["shares"]))] == scenario.imitates[art.stem]
    res = runner.invoke(app, ["statement", "--corpora", str(demo_tree["corpora"]),
                              "--artifacts", str(demo_tree["artifacts"]), "--pool", "250.00",
                              "--baseline", str(demo_tree["baseline"]), "--order", "3",
                              "--out", str(tmp_path / "st")])
    assert res.exit_code == 0, res.output
    summary = (tmp_path / "st" / "summary.csv").read_text().splitlines()
    assert summary[-1].startswith("(pool),250.00")


def test_cli_clear_errors(demo_tree, tmp_path):
    runner = CliRunner()
    base = ["statement", "--corpora", str(demo_tree["corpora"]), "--artifacts",
            str(demo_tree["artifacts"]), "--out", str(tmp_path / "x")]
    for pool in ["0", "-10", "ten", "1.005"]:
        res = runner.invoke(app, base + ["--pool", pool])
        assert res.exit_code == 2 and "pool" in res.output and "Traceback" not in res.output
    (tmp_path / "empty").mkdir()
    res = runner.invoke(app, ["statement", "--corpora", str(tmp_path / "empty"), "--artifacts",
                              str(demo_tree["artifacts"]), "--pool", "10"])
    assert res.exit_code == 2 and "no holders" in res.output
    res = runner.invoke(app, ["shares", "--corpora", str(demo_tree["corpora"]), "--artifact",
                              str(tmp_path / "nope.txt")])
    assert res.exit_code == 2 and "does not exist" in res.output
    unreadable = tmp_path / "locked.txt"
    unreadable.write_text("secret")
    unreadable.chmod(0)
    if not os.access(unreadable, os.R_OK):  # root can read anything
        res = runner.invoke(app, ["shares", "--corpora", str(demo_tree["corpora"]),
                                  "--artifact", str(unreadable)])
        assert res.exit_code == 2 and "cannot read" in res.output


def test_unreadable_file_error_even_as_root(tmp_path, monkeypatch):
    from pathlib import Path

    from icml25.royalties import read_text

    target = tmp_path / "a.txt"
    target.write_text("hello")

    def deny(self, *args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "read_text", deny)
    with pytest.raises(RoyaltyInputError, match="cannot read artifact .*Permission denied"):
        read_text(target, "artifact")
    with pytest.raises(RoyaltyInputError, match="not a regular file"):
        read_text(tmp_path, "artifact")


def test_verify_detects_reproduction_and_tampering(demo_tree, tmp_path):
    runner = CliRunner()
    args = ["--corpora", str(demo_tree["corpora"]), "--artifacts", str(demo_tree["artifacts"]),
            "--baseline", str(demo_tree["baseline"])]
    out = tmp_path / "st"
    res = runner.invoke(app, ["statement", *args, "--pool", "80.10", "--order", "3",
                              "--method", "sampled", "--seed", "9", "--out", str(out)])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["verify", "--statement", str(out), *args])
    assert res.exit_code == 0 and "bit for bit" in res.output
    summary = out / "summary.csv"
    summary.write_text(summary.read_text().replace("80.10", "80.11"))
    res = runner.invoke(app, ["verify", "--statement", str(out), *args])
    assert res.exit_code == 1 and "summary.csv" in res.output
