"""The ``icml25 creativity`` commands end to end (CliRunner)."""

import json

from typer.testing import CliRunner

from icml25.creativity.cli import app

runner = CliRunner()


def _data(tmp_path, task="line", *extra):
    out = tmp_path / "data"
    r = runner.invoke(app, ["data", "--task", task, "-o", str(out), "--param", "n_train=50",
                            "--param", "n_test=20", *extra])
    assert r.exit_code == 0, r.output
    return out


def test_data_writes_the_three_files(tmp_path):
    out = _data(tmp_path)
    train = (out / "train.txt").read_text().splitlines()
    prompts = (out / "test_prompts.txt").read_text().splitlines()
    meta = json.loads((out / "meta.json").read_text())
    assert len(train) == 50 and len(prompts) == 20
    assert meta["task"] == "line" and meta["params"]["n_train"] == 50 and meta["seed_len"] == 10
    assert all(p.endswith(" <q>") for p in prompts) and train[0].split()[1] == "<q>"
    again = _data(tmp_path / "b")
    assert (again / "train.txt").read_text() == (out / "train.txt").read_text()


def test_score_counts_and_reports_malformed_lines(tmp_path):
    out = _data(tmp_path)
    train = (out / "train.txt").read_text().splitlines()
    novel = " <sep> ".join(f"<a_{i}> <a_{i + 1}>" for i in range(9)) + " </a>"
    answers = tmp_path / "answers.txt"
    answers.write_text("\n".join([train[0], train[1].split("<q>")[1], novel, novel,
                                  "<a_0> <a_1> </a>", "<a_0> <b_3>", ""]) + "\n")
    r = runner.invoke(app, ["score", str(answers), "--task", "line", "--data", str(out)])
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout[r.stdout.index("{"):])
    assert rep["n"] == 5  # two unreadable lines are left out
    assert [e["line"] for e in rep["errors"]] == [6, 7]
    assert "unknown token" in rep["errors"][0]["error"]
    assert rep["coherence"] == 4 / 5
    assert rep["memorization"] == 2 / 5
    assert rep["creativity"] == 1 / 5  # the in-order path is not among 50 random training lines
    assert rep["uniqueness"] == 3 / 5


def test_score_rejects_wrong_task_and_missing_data(tmp_path):
    out = _data(tmp_path)
    answers = tmp_path / "a.txt"
    answers.write_text("<a_0> <a_1> </a>\n")
    r = runner.invoke(app, ["score", str(answers), "--task", "circle", "--data", str(out)])
    assert r.exit_code != 0 and "line task" in r.output
    r = runner.invoke(app, ["score", str(answers), "--task", "line", "--data",
                            str(tmp_path / "nope")])
    assert r.exit_code != 0 and "meta.json" in r.output
    r = runner.invoke(app, ["data", "--task", "square", "-o", str(tmp_path / "x")])
    assert r.exit_code != 0


def test_train_then_evaluate(tmp_path):
    out = _data(tmp_path, "line", "--seed-len", "3")
    run = tmp_path / "run"
    r = runner.invoke(app, ["train", "--task", "line", "--data", str(out), "-o", str(run),
                            "--method", "teacherless", "--steps", "5", "--d-model", "16",
                            "--n-layers", "1", "--n-heads", "2", "--batch-size", "8",
                            "--token-shift"])
    assert r.exit_code == 0, r.output
    assert (run / "model" / "model.safetensors").exists()
    assert json.loads((run / "model" / "config.json").read_text())["model"]["token_shift"]
    r = runner.invoke(app, ["evaluate", str(run), "--n", "12", "--temperature", "1.0",
                            "--top-k", "5", "--answers", str(tmp_path / "gen.tsv")])
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout[r.stdout.index("{"):])
    assert rep["n"] == 12 and rep["method"] == "teacherless" and rep["top_k"] == 5
    lines = (tmp_path / "gen.tsv").read_text().splitlines()
    assert len(lines) == 12 and all(len(x.split("\t")[0].split()[0]) == 3 for x in lines)


def test_score_canonical_order_switch(tmp_path):
    out = _data(tmp_path)
    edges = [f"<a_{i}> <a_{i + 1}>" for i in range(9)]
    answers = tmp_path / "answers.txt"
    answers.write_text(" <sep> ".join(edges) + " </a>\n"
                       + " <sep> ".join(edges[::-1]) + " </a>\n")
    reps = []
    for extra in ([], ["--canonical-order"]):
        r = runner.invoke(app, ["score", str(answers), "--task", "line", "--data", str(out),
                                *extra])
        assert r.exit_code == 0, r.output
        reps.append(json.loads(r.stdout[r.stdout.index("{"):]))
    assert reps[0]["uniqueness"] == 1.0 and reps[1]["uniqueness"] == 0.5
