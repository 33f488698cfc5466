"""Defaults that are right on real data: one data-driven selection (extended BIC) for the
class and the command line, a warning at the densest point of the path, StARS on subsamples
that keep their missing entries, and the nonparanormal transform."""

import inspect
import json
import warnings

import numpy as np
import pytest

pytest.importorskip("torch")

from typer.testing import CliRunner  # noqa: E402

from icml25.missing_score import (  # noqa: E402
    DensestPenaltyWarning,
    MissingScoreGGM,
    MissingScoreGGMCV,
    mcar_mask,
    nonparanormal,
    sample_gaussian,
    stars_index,
)
from icml25.missing_score.cli import app  # noqa: E402
from icml25.missing_score.cli import graph as graph_command  # noqa: E402


def _readme_chain(d=20, n=300, seed=0):
    """The README's quick-start data: a chain graph, 20% of the cells missing."""
    rng = np.random.default_rng(seed)
    cov = np.linalg.inv(np.eye(d) - 0.4 * np.eye(d, k=1) - 0.4 * np.eye(d, k=-1))
    X = rng.multivariate_normal(np.zeros(d), cov, size=n)
    X[rng.random(X.shape) < 0.2] = np.nan
    return X


def _wine_mcar():
    from sklearn.datasets import load_wine

    X = load_wine().data.astype(float)
    X[mcar_mask(X.shape, 0.3, np.random.default_rng(1))] = np.nan
    return X


def test_class_and_command_line_share_one_data_driven_default():
    assert MissingScoreGGM().alpha == "auto" and MissingScoreGGM().selection == "ebic"
    assert MissingScoreGGMCV().selection == "ebic"
    params = inspect.signature(graph_command).parameters
    assert params["selection"].default == "ebic" and params["alpha"].default == "auto"


def test_readme_quick_start_gives_a_sparse_graph():
    X = _readme_chain()
    est = MissingScoreGGM(method="iw", random_state=0).fit(X)
    edges = {(i, j) for i, j, _ in est.edges()}
    assert len(edges) < 190 // 2, len(edges)  # was 190 of 190 with the fixed penalty
    chain = {(i, i + 1) for i in range(19)}
    assert len(edges & chain) >= 17, sorted(edges)
    assert est.alpha_ == pytest.approx(est.selection_.alpha_) and est.alpha_ > 0
    assert est.selection_.ebic_results_["ebic"].shape == (20,)


def test_a_fixed_small_penalty_keeps_every_edge_on_wine_and_the_default_does_not():
    """alpha = 0.01 sits far below the penalty at which the path's first edge enters
    (about 2 on standardised wine), so the fixed penalty keeps (almost) every edge."""
    X = _wine_mcar()
    fixed = MissingScoreGGM(alpha=0.01, n_alphas=10, random_state=0).fit(X)
    assert len(fixed.edges()) >= 70  # of 78
    auto = MissingScoreGGM(random_state=0).fit(X)
    assert len(auto.edges()) < 78 // 2
    assert auto.alphas_[0] > 100 * 0.01


def test_densest_point_of_the_path_warns():
    rng = np.random.default_rng(0)
    P = np.full((4, 4), 0.3) + 0.7 * np.eye(4)  # every pair dependent
    X = sample_gaussian(1500, np.zeros(4), P, rng)
    with pytest.warns(DensestPenaltyWarning, match="smallest penalty of the path"):
        MissingScoreGGMCV(alphas=3, eps=0.6, random_state=0).fit(X)


def test_stars_choice_and_subsamples_keep_their_missing_entries(monkeypatch):
    rng = np.random.default_rng(2)
    d = 6
    P = np.eye(d) + np.diag([0.4] * (d - 1), 1) + np.diag([0.4] * (d - 1), -1)
    X = sample_gaussian(300, np.zeros(d), P, rng)
    X[mcar_mask(X.shape, 0.3, rng)] = np.nan
    seen = []
    real_fit = MissingScoreGGM.fit
    monkeypatch.setattr(MissingScoreGGM, "fit",
                        lambda self, Z, y=None: seen.append(np.array(Z)) or real_fit(self, Z))
    est = MissingScoreGGMCV(selection="stars", alphas=6, stars_subsamples=4,
                            ggm_params={"n_iter_start": 40, "n_iter_per_alpha": 3},
                            random_state=0).fit(X)
    r = est.stars_results_
    assert r["n_subsamples"] == 4 and r["subsample_size"] == int(10 * np.sqrt(300))
    subs = [Z for Z in seen if Z.shape[0] == r["subsample_size"]]
    assert len(subs) == 4
    rows = {tuple(np.nan_to_num(row, nan=1e300)) for row in X}
    for Z in subs:  # every subsample row is a data row, missing cells included
        assert np.isnan(Z).any()
        assert all(tuple(np.nan_to_num(row, nan=1e300)) in rows for row in Z)
    k = int(np.flatnonzero(est.cv_alphas_ == est.alpha_)[0])
    assert k == stars_index(r["instability"], 0.05)
    assert r["monotone_instability"][k] <= 0.05 or k == 0
    if k + 1 < est.cv_alphas_.size:
        assert r["monotone_instability"][k + 1] > 0.05
    np.testing.assert_allclose(r["monotone_instability"], np.maximum.accumulate(r["instability"]))


def test_nonparanormal_is_rank_based_and_keeps_missing_cells():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(200, 3))
    X[rng.random(X.shape) < 0.25] = np.nan
    Y = np.exp(X) ** 3  # a monotone map of every column
    Zx, Zy = nonparanormal(X), nonparanormal(Y)
    np.testing.assert_array_equal(np.isnan(Zx), np.isnan(X))

    def std(Z):
        return (Z - np.nanmean(Z, 0)) / np.nanstd(Z, 0)

    np.testing.assert_allclose(std(Zx), std(Zy), atol=1e-12, equal_nan=True)
    kw = dict(alpha=0.05, n_alphas=4, n_iter_start=50, n_iter_per_alpha=3, random_state=0)
    a = MissingScoreGGM(marginal_transform="nonparanormal", **kw).fit(X)
    b = MissingScoreGGM(marginal_transform="nonparanormal", **kw).fit(Y)
    assert [e[:2] for e in a.edges()] == [e[:2] for e in b.edges()]
    with pytest.raises(ValueError, match="marginal_transform must be one of"):
        MissingScoreGGM(marginal_transform="rank", **kw).fit(X)


def test_cli_stars_and_nonparanormal(tmp_path):
    X = _readme_chain(d=5, n=300)
    path = tmp_path / "d.csv"
    path.write_text("a,b,c,d,e\n" + "\n".join(
        ",".join("" if np.isnan(v) else f"{v:.5f}" for v in row) for row in X))
    res = CliRunner().invoke(app, ["graph", str(path), "--selection", "stars",
                                   "--stars-subsamples", "3", "--n-alphas", "6",
                                   "--transform", "nonparanormal", "--json", "--no-figure"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["transform"] == "nonparanormal" and doc["alpha_selection"] == "stars"
    assert len(doc["selection"]["instability"]) == 6 and doc["selection"]["subsamples"] == 3
    bad = CliRunner().invoke(app, ["graph", str(path), "--transform", "ranks", "--no-figure"])
    assert bad.exit_code == 2 and "--transform" in bad.output
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = CliRunner().invoke(app, ["graph", str(path), "--json", "--no-figure"])
    assert json.loads(res.stdout)["alpha_selection"] == "ebic"
