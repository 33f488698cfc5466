"""``icml25 conformal``: JSON output, decisions, clear errors."""

import json

import numpy as np
from typer.testing import CliRunner

from icml25.cli import get_app

runner = CliRunner()


def run(*args):
    argv = ["conformal", *map(str, args)]
    return runner.invoke(get_app(argv), argv)


def test_bound_prints_posterior_and_decision(tmp_path):
    path = tmp_path / "losses.txt"
    path.write_text("\n".join(["0"] * 9 + ["1"]) + "\n")
    res = run("bound", path, "--alpha", 0.4, "--beta", 0.95)
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["n"] == 10 and out["exact"] is True
    assert out["mean"] == 2 / 11
    assert abs(out["prob_below_alpha"] - 0.9536425984) < 1e-9
    assert out["certified"] is True and out["decision"].startswith("certified")
    assert {"quantile", "var", "min_n"} <= set(out)


def test_bound_reads_a_csv_column_and_reports_too_small_n(tmp_path):
    path = tmp_path / "l.csv"
    path.write_text("id,loss\n" + "".join(f"{i},0.0\n" for i in range(10)))
    res = run("bound", path, "--column", "loss", "--alpha", 0.1)
    out = json.loads(res.stdout)
    assert out["certified"] is False
    assert "below the minimum 29" in out["decision"]


def test_calibrate_from_a_loss_table_and_from_scores(tmp_path):
    rng = np.random.default_rng(0)
    scores = rng.exponential(size=300)
    grid = np.linspace(0, 8, 81)
    table = tmp_path / "cal.csv"
    np.savetxt(table, (scores[:, None] > grid).astype(int), delimiter=",", fmt="%d",
               header=",".join(f"{g:g}" for g in grid), comments="")
    res = run("calibrate", table, "--alpha", 0.1, "--method", "crc")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    n = scores.size
    ok = (np.sum(scores[:, None] > grid, axis=0) + 1) / (n + 1) <= 0.1
    assert out["lambda"] == grid[np.flatnonzero(ok).min()]
    sfile = tmp_path / "scores.txt"
    np.savetxt(sfile, scores[:20])
    res = run("calibrate", sfile, "--scores", "--alpha", 0.1)
    out = json.loads(res.stdout)
    assert out["lambda"] == "inf" and out["feasible"] is False
    assert "at least n=29" in out["warning"]


def test_errors_exit_with_code_2(tmp_path):
    assert run("bound", tmp_path / "missing.txt").exit_code == 2
    bad = tmp_path / "bad.txt"
    bad.write_text("0.1\n1.7\n")
    res = run("bound", bad)
    assert res.exit_code == 2 and "[0, B]" in res.output
    good = tmp_path / "good.txt"
    good.write_text("0.1\n0.7\n")
    res = run("bound", good, "--alpha", 1.5)
    assert res.exit_code == 2 and "alpha" in res.output
    nm = tmp_path / "nm.csv"
    nm.write_text("0,1,2\n1,1,0\n0,1,1\n")
    res = run("calibrate", nm)
    assert res.exit_code == 2 and "not monotone" in res.output


def test_min_n():
    out = json.loads(run("min-n", "--alpha", 0.05).stdout)
    assert out["min_n"] == 59


def test_multilabel_runs_on_a_users_score_file(tmp_path):
    from icml25.conformal.data import load_multilabel_scores, make_multilabel_scores

    scores, labels = make_multilabel_scores(n_samples=400, n_classes=10, rng=0)
    npz = tmp_path / "coco-like.npz"
    np.savez(npz, sgmd=scores, labels=labels)
    csv = tmp_path / "scores.csv"
    np.savetxt(csv, np.hstack([scores, labels]), delimiter=",")
    for path in (npz, csv):
        s, y = load_multilabel_scores(path)
        np.testing.assert_allclose(s, scores)
        np.testing.assert_array_equal(y, labels)
    res = run("multilabel", npz, "--n", 200, "--trials", 50)
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert set(out) == {"CRC", "RCPS", "BQ"} and out["CRC"]["trials"] == 50
    bad = tmp_path / "bad.npz"
    np.savez(bad, scores=scores)
    res = run("multilabel", bad)
    assert res.exit_code == 2 and "labels" in res.output


def test_adaptive_reports_long_run_coverage_and_plots(tmp_path):
    rng = np.random.default_rng(0)
    scores = np.abs(rng.normal(size=2_000) * np.r_[np.ones(1_000), 3 * np.ones(1_000)])
    path = tmp_path / "scores.txt"
    np.savetxt(path, scores)
    png = tmp_path / "cov.png"
    res = run("adaptive", path, "--alpha", 0.1, "--gamma", 0.01, "--plot", png)
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert abs(out["long_run_error"] - 0.1) <= out["bound"]
    assert out["fixed_split_error_after_first_scores"] > 0.2
    assert png.stat().st_size > 5_000
    res = run("adaptive", path, "--aggregated", "--window", 300)
    assert res.exit_code == 0, res.output
    assert abs(json.loads(res.stdout)["long_run_error"] - 0.1) < 0.02
    assert run("adaptive", path, "--gamma", -1).exit_code == 2


def test_precision_and_cv_plus(tmp_path):
    rng = np.random.default_rng(1)
    s = rng.uniform(size=2_000)
    y = (rng.uniform(size=2_000) < 0.3 + 0.6 * s).astype(int)
    path = tmp_path / "p.csv"
    np.savetxt(path, np.c_[s, y], delimiter=",", header="score,label", comments="")
    res = run("precision", path, "--alpha", 0.2, "--score-column", "score",
              "--label-column", "label")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["lambda"] >= 2 / 3 and out["calibration_precision"] >= 0.8
    X = rng.normal(size=(60, 2))
    t = X @ [1.0, 2.0] + rng.normal(size=60)
    train = tmp_path / "t.csv"
    np.savetxt(train, np.c_[X, t], delimiter=",", header="a,b,y", comments="")
    res = run("cv-plus", train, "--target", "y", "--predict", train, "--cv", 5)
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["rank"] == 55 and len(out["intervals"]) == 60  # ceil(0.9 * 61)
    assert run("cv-plus", train, "--target", "nope").exit_code == 2


# --------------------------------------------------------------------------- cv-plus files
def _xy(n=60, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    return X, X @ [1.0, 2.0] + rng.normal(size=n)


def test_cv_plus_without_predict_is_refused(tmp_path):
    X, t = _xy()
    train = tmp_path / "t.csv"
    np.savetxt(train, np.c_[X, t], delimiter=",", header="a,b,y", comments="")
    res = run("cv-plus", train, "--target", "y")
    assert res.exit_code == 2 and "--predict" in res.output and res.stdout == ""


def test_cv_plus_keys_intervals_by_line_or_id_after_dropna(tmp_path):
    X, t = _xy()
    train = tmp_path / "t.csv"
    np.savetxt(train, np.c_[X, t], delimiter=",", header="a,b,y", comments="")
    pred = tmp_path / "p.csv"
    pred.write_text("id,a,b\nr1,0.0,0.0\nr2,,1.0\nr3,1.0,1.0\n")
    res = run("cv-plus", train, "--target", "y", "--predict", pred, "--dropna")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["id"] == "line" and set(out["intervals"]) == {"2", "4"}  # line 3 dropped
    lo, hi = out["intervals"]["4"]
    assert lo < 3.0 < hi  # x = (1, 1): y = 3 on average
    res = run("cv-plus", train, "--target", "y", "--predict", pred, "--dropna", "--id", "id")
    out = json.loads(res.stdout)
    assert out["id"] == "id" and set(out["intervals"]) == {"r1", "r3"}
    assert out["intervals"]["r3"] == [lo, hi]
    dup = tmp_path / "dup.csv"
    dup.write_text("id,a,b\nr1,0,0\nr1,1,1\n")
    res = run("cv-plus", train, "--target", "y", "--predict", dup, "--id", "id")
    assert res.exit_code == 2 and "unique" in res.output


def test_cv_plus_headerless_files_and_target_by_index(tmp_path):
    X, t = _xy()
    train = tmp_path / "t.csv"
    np.savetxt(train, np.c_[t, X], delimiter=",")  # no header: target in column 0
    # the old reader took the first data row as the header; now the row is data
    res = run("cv-plus", train, "--target", "y", "--predict", train)
    assert res.exit_code == 2 and "0-based column index" in res.output
    res = run("cv-plus", train, "--target", "0", "--predict", train)
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["n"] == 60 and len(out["intervals"]) == 60
    assert list(out["intervals"])[:2] == ["1", "2"]
    named = tmp_path / "n.csv"
    np.savetxt(named, np.c_[t, X], delimiter=",", header="y,a,b", comments="")
    same = json.loads(run("cv-plus", named, "--target", "0", "--predict", train).stdout)
    assert same["intervals"]["1"] == out["intervals"]["1"]  # the name and index agree
    feats = tmp_path / "f.csv"
    np.savetxt(feats, X[:3], delimiter=",")  # features only, no target column
    res = json.loads(run("cv-plus", train, "--target", "0", "--predict", feats).stdout)
    assert res["intervals"]["1"] == out["intervals"]["1"]


def test_cv_plus_ambiguous_header_is_an_error(tmp_path):
    X, t = _xy()
    train = tmp_path / "t.csv"
    np.savetxt(train, np.c_[X, t], delimiter=",", header="a,2020,y", comments="")
    res = run("cv-plus", train, "--target", "y", "--predict", train)
    assert res.exit_code == 2 and "--header" in res.output and "--no-header" in res.output
    res = run("cv-plus", train, "--target", "y", "--predict", train, "--header")
    assert res.exit_code == 0, res.output
