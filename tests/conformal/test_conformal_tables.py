"""``icml25 conformal`` reads its files with the shared reader (icml25.core.read_table):
semicolons, decimal commas and missing-value tokens, with --on-missing error|drop|keep."""

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from icml25.cli import get_app

runner = CliRunner()


def run(*args):
    argv = ["conformal", *map(str, args)]
    return runner.invoke(get_app(argv), argv)


def _semi(values, header="id;loss"):
    """A semicolon file with decimal commas: id;loss per row (values may hold tokens)."""
    rows = [f"{i};{v if isinstance(v, str) else format(v, '.3f').replace('.', ',')}"
            for i, v in enumerate(values)]
    return "\ufeff" + header + "\n" + "\n".join(rows) + "\n"


LOSSES = [0.0, 0.25, 0.0, 0.5, 0.0, 0.125, 0.0, 0.0, 0.75, 0.0] * 4


def test_bound_on_a_semicolon_decimal_comma_file_matches_the_plain_csv(tmp_path):
    plain = tmp_path / "plain.csv"
    plain.write_text("id,loss\n" + "".join(f"{i},{v}\n" for i, v in enumerate(LOSSES)))
    semi = tmp_path / "semi.csv"
    semi.write_text(_semi(LOSSES), encoding="utf-8")
    a = run("bound", plain, "--column", "loss", "--alpha", 0.3)
    b = run("bound", semi, "--column", "loss", "--alpha", 0.3)
    assert a.exit_code == 0 and b.exit_code == 0, (a.output, b.output)
    assert json.loads(a.stdout) == json.loads(b.stdout)
    assert json.loads(b.stdout)["n"] == len(LOSSES)
    by_index = run("bound", semi, "--column", 1, "--alpha", 0.3)
    assert json.loads(by_index.stdout) == json.loads(b.stdout)


def test_bound_missing_cells_error_drop_and_keep(tmp_path):
    values = list(LOSSES)
    values[3], values[7] = "NA", ""
    path = tmp_path / "na.csv"
    path.write_text(_semi(values), encoding="utf-8")
    res = run("bound", path, "--column", "loss")  # default: error, naming line and column
    assert res.exit_code == 2
    assert "line 5, column 'loss' is missing ('NA')" in res.output
    assert "--dropna" in res.output
    for flags in (["--dropna"], ["--on-missing", "drop"]):
        res = run("bound", path, "--column", "loss", "--alpha", 0.3, *flags)
        assert res.exit_code == 0, res.output
        out = json.loads(res.stdout)
        assert out["n"] == len(LOSSES) - 2
        assert "dropped 2 of 40 rows" in res.stderr and "line(s) 5, 9" in res.stderr
    kept = [v for v in values if v not in ("NA", "")]
    ref = tmp_path / "ref.txt"
    ref.write_text("".join(f"{v}\n" for v in kept))
    assert json.loads(res.stdout) == json.loads(run("bound", ref, "--alpha", 0.3).stdout)
    res = run("bound", path, "--column", "loss", "--on-missing", "keep")
    assert res.exit_code == 2 and "keep is not supported here" in res.output
    res = run("bound", path, "--column", "loss", "--on-missing", "error", "--dropna")
    assert res.exit_code == 2 and "conflicts" in res.output
    res = run("bound", path, "--column", "loss", "--on-missing", "sometimes")
    assert res.exit_code == 2 and "error|drop|keep" in res.output


def test_a_bad_cell_names_its_line_column_and_value(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("id,loss\n0,0.1\n1,0.2\n2,oops\n")
    for flags in ([], ["--dropna"]):  # dropping is for missing cells, not for typos
        res = run("bound", path, "--column", "loss", *flags)
        assert res.exit_code == 2
        assert "line 4, column 2: 'oops' is not a number (column 'loss'" in res.output
    res = run("bound", path, "--column", "nope")
    assert res.exit_code == 2 and "no column 'nope'" in res.output


def test_one_column_of_decimal_commas_with_a_header(tmp_path):
    rng = np.random.default_rng(0)
    scores = np.abs(rng.normal(size=600))
    comma = tmp_path / "scores.csv"
    comma.write_text("score\n" + "".join(f"{v:.6f}\n".replace(".", ",") for v in scores))
    dot = tmp_path / "scores.txt"
    dot.write_text("".join(f"{v:.6f}\n" for v in scores))
    a, b = run("adaptive", comma, "--alpha", 0.1), run("adaptive", dot, "--alpha", 0.1)
    assert a.exit_code == 0, a.output
    assert json.loads(a.stdout) == json.loads(b.stdout)
    assert json.loads(a.stdout)["steps"] == 600


def test_calibrate_semicolon_table_with_decimal_comma_lambdas_and_a_missing_row(tmp_path):
    rng = np.random.default_rng(0)
    scores = rng.exponential(size=300)
    grid = np.linspace(0, 8, 17)
    loss = (scores[:, None] > grid).astype(int)
    plain = tmp_path / "cal.csv"
    plain.write_text(",".join(f"{g:g}" for g in grid) + "\n"
                     + "".join(",".join(map(str, r)) + "\n" for r in loss))
    rows = [";".join(map(str, r)) for r in loss] + [";".join(["?"] * grid.size)]
    semi = tmp_path / "cal_semi.csv"
    semi.write_text(";".join(f"{g:g}".replace(".", ",") for g in grid) + "\n"
                    + "\n".join(rows) + "\n")
    a = run("calibrate", plain, "--alpha", 0.1, "--method", "crc")
    assert a.exit_code == 0, a.output
    res = run("calibrate", semi, "--alpha", 0.1, "--method", "crc")
    assert res.exit_code == 2 and "line 302, column '0' is missing ('?')" in res.output
    b = run("calibrate", semi, "--alpha", 0.1, "--method", "crc", "--dropna")
    assert b.exit_code == 0, b.output
    assert json.loads(a.stdout) == json.loads(b.stdout)
    assert "dropped 1 of 301 rows" in b.stderr


def test_precision_drops_a_row_missing_either_column(tmp_path):
    rng = np.random.default_rng(1)
    s = rng.uniform(size=1_000)
    y = (rng.uniform(size=1_000) < 0.3 + 0.6 * s).astype(int)
    cells = [[f"{a:.5f}".replace(".", ","), str(b)] for a, b in zip(s, y, strict=True)]
    cells[10][0], cells[20][1] = "NaN", "null"
    path = tmp_path / "p.tsv"
    path.write_text("score\tlabel\n" + "".join("\t".join(c) + "\n" for c in cells))
    res = run("precision", path, "--alpha", 0.2, "--score-column", "score",
              "--label-column", "label")
    assert res.exit_code == 2 and "line 12, column 'score' is missing ('NaN')" in res.output
    res = run("precision", path, "--alpha", 0.2, "--score-column", "score",
              "--label-column", "label", "--dropna")
    assert res.exit_code == 0, res.output
    assert "dropped 2 of 1000 rows" in res.stderr and "line(s) 12, 22" in res.stderr
    keep = np.ones(1_000, bool)
    keep[[10, 20]] = False
    ref = tmp_path / "ref.csv"
    np.savetxt(ref, np.c_[np.round(s, 5), y][keep], delimiter=",", header="score,label",
               comments="", fmt=["%.5f", "%d"])
    want = run("precision", ref, "--alpha", 0.2, "--score-column", "score",
               "--label-column", "label")
    assert json.loads(res.stdout) == json.loads(want.stdout)


def test_cv_plus_train_and_predict_files_with_missing_cells(tmp_path):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(60, 2))
    t = X @ [1.0, 2.0] + rng.normal(size=60)
    lines = [f"{a:.4f};{b:.4f};{c:.4f}".replace(".", ",") for a, b, c in np.c_[X, t]]
    lines[5] = lines[5].rsplit(";", 1)[0] + ";"  # no target on file line 7
    train = tmp_path / "t.csv"
    train.write_text("a;b;y\n" + "\n".join(lines) + "\n")
    res = run("cv-plus", train, "--target", "y", "--predict", train)
    assert res.exit_code == 2 and "line 7, column 'y' is missing (an empty cell)" in res.output
    new = tmp_path / "new.csv"
    new.write_text("b,a,note\n1.0,2.0,first\nNA,1.0,second\n0.5,0.5,third\n")
    res = run("cv-plus", train, "--target", "y", "--predict", new, "--dropna")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["n"] == 59 and len(out["intervals"]) == 2  # the NA row of new.csv is dropped
    assert "dropped 1 of 60 rows" in res.stderr and "dropped 1 of 3 rows" in res.stderr
    res = run("cv-plus", train, "--target", "y", "--predict", new, "--on-missing", "error",
              "--dropna")
    assert res.exit_code == 2


def test_multilabel_score_table_with_missing_cells(tmp_path):
    from icml25.conformal.data import (
        DroppedRowsWarning,
        load_multilabel_scores,
        make_multilabel_scores,
    )

    scores, labels = make_multilabel_scores(n_samples=300, n_classes=4, rng=0)
    rows = [";".join([f"{v:.6f}".replace(".", ",") for v in s] + [str(v) for v in lab])
            for s, lab in zip(scores, labels, strict=True)]
    rows[2] = ";".join(rows[2].split(";")[:-1] + ["NA"])
    path = tmp_path / "ml.csv"
    path.write_text("\n".join(rows) + "\n")
    with pytest.raises(ValueError, match=r"line 3, column 'x7' is missing \('NA'\)"):
        load_multilabel_scores(path)
    with pytest.warns(DroppedRowsWarning, match="dropped 1 of 300 rows"):
        s, y = load_multilabel_scores(path, on_missing="drop")
    keep = np.arange(300) != 2
    np.testing.assert_allclose(s, scores[keep], atol=1e-6)
    np.testing.assert_array_equal(y, labels[keep])
    res = run("multilabel", path, "--n", 100, "--trials", 5)
    assert res.exit_code == 2 and "line 3" in res.output
    res = run("multilabel", path, "--n", 100, "--trials", 5, "--dropna")
    assert res.exit_code == 0, res.output
    assert "dropped 1 of 300 rows" in res.stderr
    assert json.loads(res.stdout)["CRC"]["trials"] == 5
