"""Data engine on a programmatic task with a hidden preference: MR with w >= 1 picks the
clarifying question, the single-turn reward (w = 0) picks the cheaper guess."""

import asyncio
import json

import pytest

from icml25.collab import (
    TERMINATION_SIGNAL,
    Assistant,
    MultiturnReward,
    RetryableError,
    RetryPolicy,
    ScriptedChatModel,
    UserSimulator,
    dpo_rows,
)
from icml25.collab.engine import grow_conversation

ASK = "Which colour do you like best: red, green or blue?"


def _last(body: str, role: str) -> str:
    parts = body.split(f"**{role}**: ")
    return parts[-1].split("\n\n**")[0] if len(parts) > 1 else ""


def user_reply(msgs):
    body = msgs[-1]["content"]
    said = _last(body, "assistant")
    if not said:
        text = "Recommend a colour for my room."
    elif "Blue" in said:
        text = TERMINATION_SIGNAL
    elif "?" in said:
        text = "blue, I think"  # answers the question truthfully
    else:
        text = "No, that's not what I want."
    return json.dumps({"current_answer": "", "thought": "", "response": text})


def knows_after_asked(msgs):
    last_user = [m["content"] for m in msgs if m["role"] == "user"][-1]
    return "Blue it is." if "blue" in last_user else "Red."


def _setup(window):
    user = ScriptedChatModel({"user": user_reply})
    cont = ScriptedChatModel({"assistant": knows_after_asked})
    asker = ScriptedChatModel({"assistant": lambda m: knows_after_asked(m)
                               if "blue" in m[-1]["content"] else ASK})
    guesser = ScriptedChatModel({"assistant": "Red."})
    mr = MultiturnReward(
        UserSimulator(user, "pick a colour", "the user wants blue"), Assistant(cont),
        task_metric=lambda conv: float("Blue" in conv[-1]["content"]
                                       or "Blue" in conv[-2]["content"]),
        window=window, n_samples=2, token_penalty=0.01)
    return mr, [Assistant(asker), Assistant(guesser)]


def test_mr_window_prefers_asking_and_engine_grows_conversation():
    mr, policies = _setup(window=2)
    conv = asyncio.run(grow_conversation(mr, policies, max_turns=4, conv_id="c1"))
    roles = [m["role"] for m in conv.messages]
    assert roles == ["user", "assistant", "user", "assistant"]
    assert conv.messages[1]["content"] == ASK and conv.messages[2]["content"] == "blue, I think"
    assert conv.messages[3]["content"] == "Blue it is." and conv.terminated
    assert len(conv.turns) == 2 and conv.failures == []
    pairs = dpo_rows(conv.turns, min_gap=0.1)
    assert [p["chosen"][0]["content"] for p in pairs] == [ASK, "Blue it is."]
    assert all(p["rejected"][0]["content"] == "Red." for p in pairs)


def test_single_turn_reward_prefers_the_cheap_guess():
    mr, policies = _setup(window=0)
    conv = asyncio.run(grow_conversation(mr, policies, max_turns=1))
    (turn,) = conv.turns
    assert turn.candidates[turn.scores.index(max(turn.scores))] == "Red."


def test_engine_survives_a_dead_policy_and_validates():
    mr, policies = _setup(window=1)
    dead = Assistant(ScriptedChatModel({"assistant": RetryableError("down")},
                                       retry=RetryPolicy(max_attempts=1, timeout_s=1)))
    conv = asyncio.run(grow_conversation(mr, [dead, *policies], max_turns=2))
    assert any(f.startswith("policy:") for f in conv.failures)
    assert conv.messages[1]["content"] == ASK
    with pytest.raises(ValueError):
        asyncio.run(grow_conversation(mr, [], max_turns=2))
