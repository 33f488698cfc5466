"""Online DPO for transformers models (``icml25 collab train-online``) on a tiny random Llama
built from a config (no download), and the task worlds for pretrained models."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")
pytest.importorskip("peft")

from icml25.collab import worlds  # noqa: E402
from icml25.collab.hf_online import (  # noqa: E402
    HFPolicy,
    OnlineConfig,
    dpo_round,
    load_base,
    save_tiny_policy,
)

ROOT = Path(__file__).parents[2]
# min-gap 0: the random model's candidates rarely differ in task success, so keep every pair
# whose texts differ (the default 0.1 is the paper's rule for real runs).
ARGS = ["--tasks", "ask-or-guess-nl", "--tasks-per-round", "6", "--lora-r", "4",
        "--lora-alpha", "8", "--max-tokens", "10", "--eval-tasks", "3", "--pool-size", "40",
        "--min-gap", "0"]


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return save_tiny_policy(tmp_path_factory.mktemp("tiny"), hidden=16, layers=1)


def _cli(tiny_dir, out, rounds, *extra):
    return [sys.executable, "-m", "icml25", "collab", "train-online", "--policy",
            f"hf:{tiny_dir}", "--user", "rule", "--rounds", str(rounds), "--out", str(out),
            *ARGS, *extra]


def _env():
    return {**os.environ, "PYTHONPATH": str(ROOT / "src"), "OMP_NUM_THREADS": "1",
            "ICML25_NO_PROGRESS": "1"}


def _options(**kw):
    cfg = OnlineConfig(lora_r=4, lora_alpha=8, max_tokens=10, min_gap=0.0)
    return {"tasks_per_round": 6, "cfg": cfg, "eval_tasks": 3, "pool_size": 40, **kw}


@pytest.fixture(scope="module")
def straight_run(tiny_dir, tmp_path_factory):
    """Two rounds in this process, one torch thread (as the subprocesses below)."""
    from icml25.collab.hf_online import train_online

    out = tmp_path_factory.mktemp("straight") / "run"
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        res = train_online(f"hf:{tiny_dir}", "ask-or-guess-nl", out, rounds=2, **_options())
    finally:
        torch.set_num_threads(threads)
    return out, res


def _adapter(folder):
    from safetensors.torch import load_file

    return load_file(str(folder / "adapter" / "adapter_model.safetensors"))


def test_two_rounds_write_every_round_file(straight_run):
    out, printed = straight_run
    assert [e["round"] for e in printed["log"]] == [0, 1]
    state = json.loads((out / "state.json").read_text())
    assert state["log"] == printed["log"] and state["baseline"]["n"] == 3
    for r in (0, 1):
        d = out / f"round-{r:03d}"
        pairs = [json.loads(x) for x in (d / "pairs.jsonl").read_text().splitlines()]
        rewards = [json.loads(x) for x in (d / "rewards.jsonl").read_text().splitlines()]
        metrics = [json.loads(x) for x in (d / "metrics.jsonl").read_text().splitlines()]
        assert len(rewards) == 6 and all(len(r["candidates"]) == 2 for r in rewards)
        assert metrics == [state["log"][r]] and metrics[0]["pairs"] == len(pairs) > 0
        assert set(metrics[0]["seconds"]) == {"generate", "reward", "dpo"}
        assert {"success", "interactivity"} <= set(metrics[0]["eval"])
        # chosen is the higher-MR candidate of its task
        best = {json.dumps(r["prompt"]): max(c["mr"] for c in r["candidates"]) for r in rewards}
        for p in pairs:
            assert p["chosen"][0]["role"] == "assistant"
            assert json.dumps(p["prompt"]) in best
        keys = set(_adapter(d))
        assert keys and all("lora_" in k for k in keys)  # only adapter weights are stored
    # the adapters moved between rounds (B starts at zero)
    a0, a1 = _adapter(out / "round-000"), _adapter(out / "round-001")
    assert any(torch.count_nonzero(v) for k, v in a0.items() if "lora_B" in k)
    assert any(not torch.equal(a0[k], a1[k]) for k in a0)


def test_resume_after_the_first_round_is_exact(tiny_dir, straight_run, tmp_path):
    """A run cut after round 0 (state and folders as a kill leaves them, plus a half-written
    round) resumes to the same round 1 as the straight run."""
    import shutil

    from icml25.collab.hf_online import train_online

    out = tmp_path / "run"
    shutil.copytree(straight_run[0], out)
    shutil.rmtree(out / "round-001")
    (out / "round-001.tmp").mkdir()
    state = json.loads((out / "state.json").read_text())
    state["log"] = state["log"][:1]
    (out / "state.json").write_text(json.dumps(state))
    with pytest.raises(FileExistsError):
        train_online(f"hf:{tiny_dir}", "ask-or-guess-nl", out, rounds=2, **_options())
    with pytest.raises(ValueError, match="different settings"):
        train_online(f"hf:{tiny_dir}", "ask-or-guess-nl", out, rounds=2, resume=True,
                     **_options(eval_tasks=2))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        res = train_online(f"hf:{tiny_dir}", "ask-or-guess-nl", out, rounds=2, resume=True,
                           **_options())
    finally:
        torch.set_num_threads(threads)
    assert res["log"][0] == straight_run[1]["log"][0]
    assert res["log"][1]["loss"] == straight_run[1]["log"][1]["loss"]
    assert res["log"][1]["eval"] == straight_run[1]["log"][1]["eval"]
    for name in ("pairs.jsonl", "rewards.jsonl"):
        assert (out / "round-001" / name).read_text() == \
            (straight_run[0] / "round-001" / name).read_text()
    a, b = _adapter(straight_run[0] / "round-001"), _adapter(out / "round-001")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert not (out / "round-001.tmp").exists()


@pytest.mark.slow  # two runs of the CLI in subprocesses (imports of torch, transformers, TRL)
@pytest.mark.timeout(1800)  # on a loaded 2-core machine the imports alone take minutes
def test_resume_after_sigkill_between_rounds_is_exact(tiny_dir, straight_run, tmp_path):
    out = tmp_path / "run"
    proc = subprocess.Popen(_cli(tiny_dir, out, 3), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=_env())
    state = out / "state.json"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if state.exists() and len(json.loads(state.read_text())["log"]) >= 1:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done = len(json.loads(state.read_text())["log"])
    assert done == 1, "the run should have been killed after its first round"
    again = subprocess.run(_cli(tiny_dir, out, 2, "--resume"), capture_output=True, text=True,
                           timeout=600, env=_env())
    assert again.returncode == 0, again.stderr[-3000:]
    assert "round 1:" in again.stderr and "round 0:" not in again.stderr
    straight = straight_run[0]
    for r in ("round-000", "round-001"):
        a, b = _adapter(straight / r), _adapter(out / r)
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
        assert (straight / r / "pairs.jsonl").read_text() == (out / r / "pairs.jsonl").read_text()
    assert not list(out.glob("*.tmp"))


def test_round_pairs_feed_trls_dataset_and_collator(tiny_dir, straight_run, tmp_path):
    from datasets import Dataset
    from trl import DPOConfig, DPOTrainer

    from icml25.collab.dataset import read_jsonl

    rows = read_jsonl(straight_run[0] / "round-001" / "pairs.jsonl")
    model, tok = load_base(f"hf:{tiny_dir}")
    trainer = DPOTrainer(model=model, ref_model=None, processing_class=tok,
                         train_dataset=Dataset.from_list(rows),
                         args=DPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to=[],
                                        per_device_train_batch_size=len(rows)),
                         peft_config=__import__("icml25.collab.train", fromlist=["x"])
                         .lora_config(4, 8))
    batch = next(iter(trainer.get_train_dataloader()))
    # chosen rows then rejected rows, each with a completion mask over the reply
    assert batch["input_ids"].shape[0] == 2 * len(rows)
    assert int(batch["completion_mask"].sum()) > 0


def test_a_dpo_round_trains_only_the_adapters(tiny_dir, tmp_path):
    from peft import get_peft_model

    from icml25.collab.train import lora_config

    model, tok = load_base(f"hf:{tiny_dir}")
    for p in model.parameters():
        p.requires_grad_(False)
    torch.manual_seed(0)
    model = get_peft_model(model, lora_config(4, 8))
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    hist = [{"role": "user", "content": "Please format the name Ada Lovelace for a badge."}]
    pairs = [{"prompt": hist, "chosen": "How should the name look?",
              "rejected": "Here it is: ADA LOVELACE"}] * 4
    cfg = OnlineConfig(lora_r=4, lora_alpha=8, lr=1e-2)
    dpo_round(model, tok, pairs, cfg, tmp_path / "w", seed=0)
    after = dict(model.named_parameters())
    assert set(after) == set(before)  # TRL's reference copy of the adapter is gone again
    changed = {k for k in before if not torch.equal(before[k], after[k].detach())}
    assert changed and all("lora_" in k for k in changed)
    assert any("lora_B" in k for k in changed)


def test_batched_generation_matches_one_at_a_time(tiny_dir):
    model, tok = load_base(f"hf:{tiny_dir}")
    pol = HFPolicy(model, tok)
    convs = [[{"role": "user", "content": "Please rewrite this list: tea, milk, eggs."}],
             [{"role": "user", "content": "Please write the date May 3, 2001 in numbers."},
              {"role": "assistant", "content": "Which format do you want?"},
              {"role": "user", "content": "The ISO format, please."}]]
    both = pol.generate(convs, temperature=0, max_tokens=6)
    assert both == [pol.generate([c], temperature=0, max_tokens=6)[0] for c in convs]


def test_cli_rejects_bad_options(tmp_path):
    from typer.testing import CliRunner

    from icml25.collab.cli import app

    r = CliRunner().invoke(app, ["train-online", "--policy", "nope", "--out", str(tmp_path)])
    assert r.exit_code == 2 and "hf:DIR" in r.output
    r = CliRunner().invoke(app, ["train-online", "--policy", "gemma-270m", "--tasks", "chess",
                                 "--out", str(tmp_path)])
    assert r.exit_code == 2 and "math-roots" in r.output


# --------------------------------------------------------------------------- the worlds

def test_nl_world_user_reveals_when_asked_and_judges_the_answer():
    w = worlds.get_world("ask-or-guess-nl")
    t = w.tasks(3, seed=1)[0]  # a date
    user = w.user(t)
    conv = [*w.opening(t), {"role": "assistant", "content": w.question(t)}]
    msg, ended = user.reply(conv)
    assert not ended and msg == w.reveal(t)
    wrong = next(o for o in w.options(t) if t.render(o) != t.target)
    assert user.reply([*conv, {"role": "assistant", "content": w.deliver(t, wrong)}]) == (
        worlds.WRONG, True)
    good = [*conv, {"role": "user", "content": msg},
            {"role": "assistant", "content": f"Sure: {t.target}."}]
    assert w.success(t, good) == 1.0 and w.interactivity(t, good) == 1.0
    guess = [*w.opening(t), {"role": "assistant", "content": w.deliver(t, t.goal)}]
    assert w.success(t, guess) == 1.0 and w.interactivity(t, guess) == 0.0
    # an off-topic question reveals nothing
    assert user.reply([*w.opening(t), {"role": "assistant", "content": "Why?"}])[0] != \
        w.reveal(t)


def test_math_world_checks_the_wanted_root_with_sympy():
    w = worlds.get_world("math-roots")
    tasks = w.tasks(40, seed=0)
    assert {t.goal for t in tasks} == {"smaller", "larger"} and all(t.a != t.b for t in tasks)
    t = tasks[0]
    other = str(t.a if str(t.a) != t.target else t.b)
    reply = lambda text: [*w.opening(t), {"role": "assistant", "content": text}]  # noqa: E731
    assert w.success(t, reply(f"The answer is {t.target}.0")) == 1.0  # sympy: 3.0 == 3
    assert w.success(t, reply(f"\\boxed{{{other}}}")) == 0.0
    assert w.answer_of(t, "Do you want the smaller or the larger root?") is None
    assert w.answer_of(t, "x = 1000") == "?"
    assert "x^2" in t.request and "=" in t.request
    with pytest.raises(ValueError, match="known"):
        worlds.get_world("chess")


@pytest.mark.parametrize("name", ["worlds", "online", "hf_online"])
def test_docstring_examples(name):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(f"icml25.collab.{name}"))
    assert result.attempted > 0 and result.failed == 0
