"""The ``icml25 worstoff`` commands."""

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from icml25.worstoff import local_par, par, value
from icml25.worstoff.cli import app

runner = CliRunner()


def test_mounted_under_root_cli():
    import subprocess
    import sys

    code = "from icml25.cli import main; main()"
    res = subprocess.run([sys.executable, "-c", code, "worstoff", "par", "--alpha", "0.05",
                          "--beta", "0.15", "--r2", "0.15", "--json"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert round(json.loads(res.stdout)["local_par"], 2) == 6.34


def test_par_json():
    res = runner.invoke(app, ["par", "--alpha", "0.2", "--beta", "0.2", "--r2", "0.2",
                              "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["value"] == pytest.approx(value(0.2, 0.2, 0.2))
    assert out["par"] == pytest.approx(par(0.2, 0.2, 0.2))
    assert out["local_par"] == pytest.approx(local_par(0.2, 0.2, 0.2))


def test_par_decision_and_errors():
    res = runner.invoke(app, ["par", "--alpha", "0.2", "--beta", "0.2", "--r2", "0.25",
                              "--d-alpha", "0.2", "--d-r2", "0.2", "--cost-ratio", "3", "--json"])
    assert json.loads(res.output)["decision"] == "improve prediction"  # PAR = 2.36 < 3
    res = runner.invoke(app, ["par", "--alpha", "1.2", "--beta", "0.2", "--r2", "0.2"])
    assert res.exit_code == 2 and "alpha must lie in (0, 1)" in res.output


def test_heatmap_writes_png(tmp_path):
    out = tmp_path / "h.png"
    res = runner.invoke(app, ["heatmap", "--beta", "0.2", "--grid", "20", "-o",
                              str(out)])
    assert res.exit_code == 0, res.output
    assert out.read_bytes()[:4] == b"\x89PNG"


def _csv(tmp_path, n=600):
    rng = np.random.default_rng(0)
    y = rng.normal(size=n)
    good = 0.5 * y + rng.normal(0, 0.8, n)
    simple = np.round(good)
    path = tmp_path / "d.csv"
    lines = ["income,model,simple"] + [f"{a},{b},{c}" for a, b, c in zip(y, good, simple,
                                                                            strict=True)]
    path.write_text("\n".join(lines))
    return path


def test_evaluate_table_and_figures(tmp_path):
    path = _csv(tmp_path)
    res = runner.invoke(app, ["evaluate", str(path), "--outcome", "income",
                              "--prediction", "model", "--baseline", "simple", "--beta", "0.2",
                              "--out", str(tmp_path / "figs")])
    assert res.exit_code == 0, res.output
    assert "capacity for 50/75/90% recall" in res.output and "Delta-alpha*" in res.output
    names = {p.name for p in (tmp_path / "figs").iterdir()}
    assert names == {"recall_vs_alpha.png", "par.png", "par_smoothed.png",
                     "delta_alpha_star.png", "report.html"}
    html = (tmp_path / "figs" / "report.html").read_text()
    assert "smoothed PAR CI" in html and "recall CI" in html and 'src="par_smoothed.png"' in html
    assert "meaningless" not in html


def test_evaluate_missing_column(tmp_path):
    path = _csv(tmp_path)
    res = runner.invoke(app, ["evaluate", str(path), "--outcome", "wealth",
                              "--prediction", "model"])
    assert res.exit_code == 2
    assert "no column(s) ['wealth']" in res.output


def test_evaluate_non_numeric(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("y,p\n1,2\nx,3\n4,5\n")
    res = runner.invoke(app, ["evaluate", str(path), "--outcome", "y",
                              "--prediction", "p"])
    assert res.exit_code == 2 and "line 3, column 1: 'x' is not a number" in res.output


def test_evaluate_empty_cell_is_missing_and_can_be_dropped(tmp_path):
    rng = np.random.default_rng(1)
    y = rng.normal(size=300)
    p = 0.6 * y + rng.normal(0, 0.8, 300)
    rows = [f"{a:.4f};{b:.4f}".replace(".", ",") for a, b in zip(y, p, strict=True)]
    rows[4] = ";" + rows[4].split(";")[1]  # empty outcome on file line 6
    rows[9] = rows[9].split(";")[0] + ";NA"  # NA prediction on file line 11
    path = tmp_path / "semi.csv"
    path.write_text("\ufeffincome;model\n" + "\n".join(rows) + "\n", encoding="utf-8")
    res = runner.invoke(app, ["evaluate", str(path), "--outcome", "income",
                              "--prediction", "model", "--beta", "0.2",
                              "--out", str(tmp_path / "f")])
    assert res.exit_code == 2
    assert "line 6, column 'income' is missing (an empty cell)" in res.output
    assert "non-numeric" not in res.output and "--dropna" in res.output
    for flags in (["--dropna"], ["--on-missing", "drop"]):
        res = runner.invoke(app, ["evaluate", str(path), "--outcome", "income",
                                  "--prediction", "model", "--beta", "0.2", *flags,
                                  "--out", str(tmp_path / "f")])
        assert res.exit_code == 0, res.output
        assert "dropped 2 of 300 rows" in res.output and "line(s) 6, 11" in res.output
        assert "n = 298" in res.output
