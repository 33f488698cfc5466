"""TRL-format export read back by TRL's collators; 2-step DPO and SFT on a tiny random model."""

import math

import pytest

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")  # TRL/transformers internals
pytest.importorskip("trl")
pytest.importorskip("transformers")

from icml25.collab import ScoredTurn, dpo_rows, sft_rows, write_jsonl  # noqa: E402
from icml25.collab.train import _texts, tiny_causal_lm, train_dpo, train_sft  # noqa: E402

PROMPT = [{"role": "user", "content": "write a poem about the sea"}]
TURNS = [ScoredTurn(PROMPT, ["what length and tone do you want ?", "the sea is blue"],
                    [0.9, 0.2], conv_id=str(i)) for i in range(4)]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    d = tmp_path_factory.mktemp("trl")
    write_jsonl(dpo_rows(TURNS, min_gap=0.1), d / "dpo.jsonl")
    write_jsonl(sft_rows(TURNS), d / "sft.jsonl")
    return d


def test_preference_rows_through_trl_collator(exported):
    from trl.trainer.dpo_trainer import DataCollatorForPreference

    from icml25.collab import read_jsonl

    rows = read_jsonl(exported / "dpo.jsonl")
    _, tok = tiny_causal_lm(_texts(rows))
    feats = []
    for r in rows[:2]:
        p = tok.apply_chat_template(r["prompt"], add_generation_prompt=True, tokenize=False)
        c = tok.apply_chat_template(r["prompt"] + r["chosen"], tokenize=False)[len(p):]
        j = tok.apply_chat_template(r["prompt"] + r["rejected"], tokenize=False)[len(p):]
        feats.append({"prompt_ids": tok(p)["input_ids"], "chosen_ids": tok(c)["input_ids"],
                      "rejected_ids": tok(j)["input_ids"]})
    batch = DataCollatorForPreference(pad_token_id=tok.pad_token_id)(feats)
    assert batch["input_ids"].shape[0] == 4  # chosen and rejected stacked
    assert tok.unk_token_id not in set(batch["input_ids"].flatten().tolist())


def test_two_step_dpo_and_sft_on_tiny_random_model(exported, tmp_path):
    import torch

    from icml25.collab import read_jsonl

    rows = read_jsonl(exported / "dpo.jsonl")
    model, tok = tiny_causal_lm(_texts(rows) + _texts(read_jsonl(exported / "sft.jsonl")))
    before = [p.detach().clone() for p in model.parameters()]
    out = train_dpo(model, tok, exported / "dpo.jsonl", tmp_path / "dpo", max_steps=2,
                    learning_rate=1e-3)
    assert out["global_step"] == 2
    losses = [h["loss"] for h in out["log_history"] if "loss" in h]
    assert losses and all(math.isfinite(x) for x in losses)
    assert losses[0] == pytest.approx(math.log(2), abs=0.05)  # policy == reference at step 1
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
    out = train_sft(model, tok, exported / "sft.jsonl", tmp_path / "sft", max_steps=2)
    assert out["global_step"] == 2


def test_train_cli_tiny_dpo(exported, tmp_path):
    from typer.testing import CliRunner

    from icml25.collab.cli import app

    r = CliRunner().invoke(app, ["train", str(exported / "dpo.jsonl"), "--method", "dpo",
                                 "--base", "tiny", "--max-steps", "1",
                                 "--out-dir", str(tmp_path / "m")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "m" / "config.json").is_file()
    assert (tmp_path / "m" / "tokenizer.json").is_file()
    r = CliRunner().invoke(app, ["train", str(exported / "dpo.jsonl"), "--method", "ppo",
                                 "--out-dir", str(tmp_path / "m2")])
    assert r.exit_code == 2 and "method" in r.output


def test_hf_backend_on_a_saved_tiny_model(exported, tmp_path):
    import asyncio

    from icml25.collab import ChatModel, load_chat_model, read_jsonl

    model, tok = tiny_causal_lm(_texts(read_jsonl(exported / "dpo.jsonl")))
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    m = load_chat_model(f"hf:{tmp_path}")
    assert isinstance(m, ChatModel) and m.max_concurrency == 1
    res = asyncio.run(m.chat(PROMPT, max_tokens=5, temperature=0.0))
    assert isinstance(res.text, str) and 1 <= res.completion_tokens <= 5
    assert res.prompt_tokens == len(tok.apply_chat_template(PROMPT, add_generation_prompt=True,
                                                            tokenize=True)["input_ids"])


def test_lora_dpo_trains_only_the_adapters(exported, tmp_path):
    pytest.importorskip("peft")
    import torch

    from icml25.collab import read_jsonl
    from icml25.collab.train import lora_config

    rows = read_jsonl(exported / "dpo.jsonl")
    model, tok = tiny_causal_lm(_texts(rows) + _texts(read_jsonl(exported / "sft.jsonl")))
    base = {k: v.detach().clone() for k, v in model.named_parameters()}
    out = train_dpo(model, tok, exported / "dpo.jsonl", tmp_path / "lora", max_steps=2,
                    learning_rate=1e-2, lora_r=4, lora_alpha=8)
    assert out["global_step"] == 2
    trained = dict(out["model"].named_parameters())
    adapters = {n: p for n, p in trained.items() if p.requires_grad}
    assert adapters and all("lora_" in n for n in adapters)
    assert any(p.abs().sum() > 0 for n, p in adapters.items() if "lora_B" in n)  # B starts at 0
    frozen = {n.removeprefix("base_model.model.").replace(".base_layer", ""): p
              for n, p in trained.items() if not p.requires_grad}
    assert set(frozen) == set(base)
    for k, v in base.items():
        assert torch.equal(v, frozen[k].detach()), k
    with pytest.raises(ValueError, match="LoRA needs"):
        lora_config(0)
