"""The reproduction is registered and its grid runs end to end at a toy size."""

from icml25.core import load_experiments, select


def test_experiments_registered_quick_evaluates_shipped_models():
    load_experiments()
    exps = {e.name: e for e in select(["creativity"])}
    assert {"creativity-construction", "creativity-discovery"} <= set(exps)
    quick = exps["creativity-construction"].settings("quick")
    assert quick["tasks"] == ["line", "circle"] and quick["shipped"] and quick["n_eval"] == 1024
    full = exps["creativity-construction"].settings("full")
    assert set(full["methods"]) == {"ntp", "teacherless", "diffusion", "diffusion-uniform"}
    assert exps["creativity-discovery"].settings("quick")["top_k"] == 0  # top-k off by default


def test_run_grid_toy():
    from icml25.creativity.experiments import best_null, run_grid

    s = {"methods": ["ntp", "diffusion-uniform"], "n_train": 50, "n_eval": 16, "seed_len": 3,
         "steps": 3, "eval_every": 3, "curve_n": 8, "temperatures": [1.0, 2.0], "top_k": 5,
         "model": {"d_model": 16, "n_layers": 1, "n_heads": 2, "batch_size": 8}}
    grid = run_grid("line", s, 0)
    assert set(grid) == {"ntp/seed", "ntp/null", "diffusion-uniform/seed",
                         "diffusion-uniform/null"}
    assert set(grid["ntp/seed"]["evals"]) == {"greedy"}
    assert set(grid["ntp/null"]["evals"]) == {"T=1.0", "T=2.0", "T=2.0,top-k=5"}
    assert grid["ntp/null"]["seed_len"] == 0 and grid["ntp/seed"]["seed_len"] == 3
    assert [p["step"] for p in grid["ntp/seed"]["curve"]] == [3]
    label, ev = best_null(grid["ntp/null"])
    assert ev["n"] == 16 and label in grid["ntp/null"]["evals"]


def test_run_grid_cache_reuses_finished_cells_and_ignores_stale_ones(tmp_path, monkeypatch):
    from icml25.creativity import experiments

    s = {"methods": ["ntp"], "n_train": 30, "n_eval": 8, "seed_len": 2, "steps": 2,
         "eval_every": 0, "curve_n": 4, "temperatures": [1.0], "top_k": 0,
         "model": {"d_model": 16, "n_layers": 1, "n_heads": 2, "batch_size": 4}}
    first = experiments.run_grid("line", s, 0, cache_dir=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["line-ntp-null.json",
                                                          "line-ntp-seed.json"]
    calls = []
    real = experiments._run_cell
    monkeypatch.setattr(experiments, "_run_cell", lambda *a: calls.append(a[5]) or real(*a))
    assert experiments.run_grid("line", s, 0, cache_dir=tmp_path) == first
    assert calls == []  # both cells came from the cache
    experiments.run_grid("line", {**s, "steps": 3}, 0, cache_dir=tmp_path)
    assert calls == ["seed", "null"]  # other settings: recomputed and overwritten
