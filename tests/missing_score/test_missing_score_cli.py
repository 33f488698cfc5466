"""``icml25 missing-score graph`` end to end on a generated CSV."""

import json

import numpy as np
import pytest

pytest.importorskip("torch")

from typer.testing import CliRunner  # noqa: E402

from icml25.missing_score.cli import app  # noqa: E402
from icml25.missing_score.io import read_csv_with_missing  # noqa: E402


def _write_chain_csv(path, n=800, seed=0):
    rng = np.random.default_rng(seed)
    P = np.eye(4) + np.diag([0.45] * 3, 1) + np.diag([0.45] * 3, -1)
    X = rng.multivariate_normal(np.zeros(4), np.linalg.inv(P), size=n)
    M = rng.random(X.shape) < 0.25
    lines = ["a,b,c,d"]
    for row, m in zip(X, M, strict=True):
        cells = ["" if mi and k % 2 else ("NaN" if mi else f"{v:.5f}")
                 for k, (v, mi) in enumerate(zip(row, m, strict=True))]
        lines.append(",".join(cells))
    path.write_text("\n".join(lines) + "\n")
    return M


def test_read_csv_treats_empty_and_nan_cells_as_missing(tmp_path):
    f = tmp_path / "x.csv"
    M = _write_chain_csv(f, n=50)
    X, names = read_csv_with_missing(f)
    assert names == ["a", "b", "c", "d"]
    assert np.array_equal(np.isnan(X), M)
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n3,oops\n")
    with pytest.raises(ValueError, match="line 3, column 2: 'oops' is not a number"):
        read_csv_with_missing(bad)


def test_graph_json_lists_the_chain_edges_first(tmp_path):
    f = tmp_path / "data.csv"
    _write_chain_csv(f)
    res = CliRunner().invoke(app, ["graph", str(f), "--json", "--n-alphas", "10"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    top3 = {frozenset((e["source"], e["target"])) for e in out["edges"][:3]}
    assert top3 == {frozenset("ab"), frozenset("bc"), frozenset("cd")}
    assert all(np.isfinite(e["score"]) for e in out["edges"])
    assert (tmp_path / "data_graph.png").stat().st_size > 1000


def test_graph_table_and_clear_errors(tmp_path):
    f = tmp_path / "data.csv"
    _write_chain_csv(f, n=300)
    res = CliRunner().invoke(app, ["graph", str(f), "--no-figure", "--n-alphas", "5"])
    assert res.exit_code == 0 and "edge(s)" in res.output
    res = CliRunner().invoke(app, ["graph", str(tmp_path / "nope.csv")])
    assert res.exit_code == 2 and "no such file" in res.output
    empty_col = tmp_path / "e.csv"
    empty_col.write_text("a,b\n1,\n2,\n3,\n")
    res = CliRunner().invoke(app, ["graph", str(empty_col), "--no-figure"])
    assert res.exit_code == 2 and "no observed value" in res.output


def test_graph_on_missing_drop_and_error(tmp_path):
    f = tmp_path / "data.csv"
    M = _write_chain_csv(f, n=300)
    res = CliRunner().invoke(app, ["graph", str(f), "--no-figure", "--n-alphas", "5",
                                   "--dropna", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["n_samples"] == int((~M.any(1)).sum())
    assert f"dropped {int(M.any(1).sum())} of 300 rows" in res.stderr
    res = CliRunner().invoke(app, ["graph", str(f), "--no-figure", "--on-missing", "error"])
    assert res.exit_code == 2 and "is missing" in res.output


def test_graph_reads_semicolon_decimal_comma(tmp_path):
    f = tmp_path / "data.csv"
    _write_chain_csv(f, n=300)
    g = tmp_path / "semi.csv"
    g.write_text(f.read_text().replace(",", ";").replace(".", ","))
    X, names = read_csv_with_missing(g)
    X0, _ = read_csv_with_missing(f)
    assert names == ["a", "b", "c", "d"] and np.allclose(X, X0, equal_nan=True)


def test_graph_reports_the_cv_alpha_and_accepts_a_fixed_one(tmp_path):
    f = tmp_path / "data.csv"
    _write_chain_csv(f, n=400)
    res = CliRunner().invoke(app, ["graph", str(f), "--json", "--n-alphas", "8", "--cv", "3",
                                   "--selection", "cv", "--positive-definite", "shift"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["alpha_selection"] == "cv" and out["cv"]["folds"] == 3
    assert out["cv"]["scheme"] == "shao" and out["cv"]["preconditioner"] == "covariance"
    assert out["alpha"] in out["cv"]["alphas"] and len(out["cv"]["mean_test_loss"]) == 8
    assert (tmp_path / "data_graph.png").stat().st_size > 1000
    res = CliRunner().invoke(app, ["graph", str(f), "--n-alphas", "8", "--cv", "3",
                                   "--selection", "cv", "--cv-repeats", "2", "--no-figure"])
    assert res.exit_code == 0, res.output
    assert "3-fold x 2 splits shao CV" in " ".join(res.output.split())  # the title may wrap
    # the default: extended BIC, reported with its curve and the edge count of each penalty
    res = CliRunner().invoke(app, ["graph", str(f), "--json", "--n-alphas", "8",
                                   "--figure", str(tmp_path / "eb.png")])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    sel = out["selection"]
    assert out["alpha_selection"] == "ebic" and sel["gamma"] == 0.5 and out["cv"] is None
    assert len(sel["ebic"]) == len(sel["n_edges"]) == 8 and out["alpha"] in sel["alphas"]
    k = sel["alphas"].index(out["alpha"])
    assert sel["ebic"][k] == min(v for v in sel["ebic"] if v is not None)
    assert len(out["edges"]) == sel["n_edges"][k]  # the reported graph is the scored one
    assert (tmp_path / "eb.png").stat().st_size > 1000
    res = CliRunner().invoke(app, ["graph", str(f), "--no-figure", "--selection", "aic"])
    assert res.exit_code == 2 and "--selection must be one of" in res.output
    res = CliRunner().invoke(app, ["graph", str(f), "--no-figure", "--alpha", "0.05",
                                   "--n-alphas", "5"])
    assert res.exit_code == 0 and "alpha=0.05," in res.output and "CV" not in res.output
    res = CliRunner().invoke(app, ["graph", str(f), "--no-figure", "--alpha", "lots"])
    assert res.exit_code == 2 and "--alpha must be 'auto' or a number" in res.output
    # Shao's CV refits on one fold: too few rows per fold is a clear error naming the way out
    res = CliRunner().invoke(app, ["graph", str(f), "--no-figure", "--selection", "cv",
                                   "--cv", "100", "--n-alphas", "3"])
    assert res.exit_code == 2 and "scheme='kfold'" in res.output, res.output
    res = CliRunner().invoke(app, ["graph", str(f), "--no-figure", "--selection", "cv",
                                   "--cv-scheme", "loo", "--n-alphas", "3"])
    assert res.exit_code == 2 and "scheme must be one of" in res.output
