"""Multiturn-aware reward: arithmetic on scripted conversations, failures, concurrency."""

import asyncio
import json
import math
import time

import pytest

from icml25.collab import (
    TERMINATION_SIGNAL,
    Assistant,
    InteractivityJudge,
    MultiturnReward,
    RetryableError,
    RetryPolicy,
    ScriptedChatModel,
    UserSimulator,
    bleu_task_metric,
    code_task_metric,
    math_task_metric,
    paper_reward,
    weighted_reward,
)

HISTORY = [{"role": "user", "content": "Write a story."}]
ASK = "What length?"  # 3 tokens: What, length, ?
FAST = RetryPolicy(max_attempts=2, timeout_s=2.0, base_delay_s=0.01, max_delay_s=0.01)


def _mr(user_reply='{"response": "more detail please"}', *, judge="0.5", latency=0.0,
        task=lambda conv: len(conv) / 10, **kw):
    model = ScriptedChatModel({"user": user_reply, "assistant": "Here is the draft.",
                               "judge": f'{{"interactivity": {judge}}}'},
                              latency_s=latency, retry=FAST)
    kw.setdefault("window", 2)
    kw.setdefault("n_samples", 3)
    return MultiturnReward(UserSimulator(model, "story", "a 100-word story"), Assistant(model),
                           task_metric=task, judge=InteractivityJudge(model), **kw), model


def test_paper_form_full_window():
    mr, model = _mr(token_penalty=0.01)
    (s,) = asyncio.run(mr.score(HISTORY, [ASK]))
    # follow-up: candidate (3) + 2 × (user 3 + assistant 5) = 19 tokens; conversation has 6
    # messages → task 0.6; judge 0.5; MR = 0.6 + 0.5 - 0.19.
    assert s.mr == pytest.approx(0.91) and s.std == pytest.approx(0.0)
    assert s.n_valid == 3 and len(s.samples) == 3
    sm = s.samples[0]
    assert sm.metrics == pytest.approx({"task": 0.6, "interactivity": 0.5, "tokens": 19,
                                        "token_cost": 0.19})
    assert sm.n_forward == 4 and not sm.terminated
    assert [m["role"] for m in sm.forward] == ["user", "assistant"] * 2
    assert model.calls == 3 * (2 + 2 + 1)  # per sample: 2 user, 2 assistant, 1 judge


def test_termination_stops_branch():
    mr, _ = _mr(json.dumps({"response": TERMINATION_SIGNAL}), token_penalty=0.01)
    (s,) = asyncio.run(mr.score(HISTORY, [ASK]))
    assert s.samples[0].terminated and s.samples[0].n_forward == 0
    assert s.mr == pytest.approx(0.2 + 0.5 - 0.03)


def test_token_cost_is_capped_at_one():
    mr, _ = _mr(token_penalty=1.0)
    (s,) = asyncio.run(mr.score(HISTORY, [ASK]))
    assert s.samples[0].metrics["token_cost"] == 1.0
    assert s.mr == pytest.approx(paper_reward(0.6, 0.5, 19, 1.0)) == pytest.approx(0.1)


def test_user_defined_weights_and_validation():
    mr, _ = _mr(weights={"task": 2.0, "tokens": -0.01})
    (s,) = asyncio.run(mr.score(HISTORY, [ASK]))
    assert s.mr == pytest.approx(2 * 0.6 - 0.19)
    bad, _ = _mr(weights={"bleu": 1.0})
    with pytest.raises(ValueError, match="not configured"):
        asyncio.run(bad.score(HISTORY, [ASK]))
    assert weighted_reward({"a": 1.0}, {"a": 2.0, "b": 1.0}) != weighted_reward({"a": 1.0},
                                                                                {"a": 2.0})


def test_window_zero_is_single_turn_reward():
    mr, model = _mr(window=0, n_samples=1, token_penalty=0.01)
    (s,) = asyncio.run(mr.score(HISTORY, [ASK]))
    assert s.samples[0].n_forward == 0 and s.mr == pytest.approx(0.2 + 0.5 - 0.03)
    assert [r for r, _ in model.log] == ["judge"]


def test_input_validation():
    mr, _ = _mr()
    with pytest.raises(ValueError, match="non-empty"):
        asyncio.run(mr.score(HISTORY, []))
    with pytest.raises(ValueError, match="window"):
        asyncio.run(_mr(window=-1)[0].score(HISTORY, [ASK]))
    with pytest.raises(ValueError, match="role"):
        asyncio.run(mr.score([{"role": "human", "content": "x"}], [ASK]))


def test_failing_metric_sample_is_dropped_not_the_call():
    calls = []

    def flaky(conv):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("metric exploded")
        return 1.0

    mr, _ = _mr(task=flaky, token_penalty=0.0)
    (s,) = asyncio.run(mr.score(HISTORY, [ASK]))
    assert s.n_valid == 2 and s.mr == pytest.approx(1.5)
    assert sum(any("metric exploded" in f for f in x.failures) for x in s.samples) == 1


def test_judge_garbage_and_dead_assistant_are_recorded():
    mr, _ = _mr(judge='"high"', token_penalty=0.0)
    (s,) = asyncio.run(mr.score(HISTORY, [ASK]))
    assert s.samples[0].metrics["interactivity"] == 1.0
    model = ScriptedChatModel({"user": '{"response": "go on"}', "assistant": RetryableError("x"),
                               "judge": '{"interactivity": 0}'}, retry=FAST)
    dead = MultiturnReward(UserSimulator(model, "t"), Assistant(model),
                           task_metric=lambda c: 1.0, judge=InteractivityJudge(model),
                           window=2, n_samples=2, token_penalty=0.0)
    (d,) = asyncio.run(dead.score(HISTORY, [ASK]))
    assert d.n_valid == 2 and d.mr == pytest.approx(1.0)
    assert all(any(f.startswith("assistant:") for f in x.failures) for x in d.samples)
    assert all(x.n_forward == 1 for x in d.samples)  # the user turn stays, no reply


def test_all_candidates_and_samples_run_concurrently():
    lat = 0.05
    mr, model = _mr(latency=lat, window=2, n_samples=3)
    cands = [ASK, "Here it is.", "Once upon a time.", "Which genre?"]
    t0 = time.perf_counter()
    res = asyncio.run(mr.score(HISTORY, cands))
    conc = time.perf_counter() - t0
    t0 = time.perf_counter()
    asyncio.run(mr.score(HISTORY, cands, concurrent=False))
    seq = time.perf_counter() - t0
    ideal = (2 * 2 + 1) * lat  # window × (user + assistant) + judge
    assert len(res) == 4 and model.max_in_flight == 12
    assert conc < 2 * ideal
    assert seq / conc > 2.5  # sequential-over-candidates takes ≈ N × longer


def test_task_metrics_math_bleu_code():
    conv = [{"role": "user", "content": "q"},
            {"role": "assistant", "content": "So the answer is \\boxed{\\frac{3}{4}}."}]
    assert math_task_metric("0.75")(conv) == 1.0
    assert math_task_metric("0.7")(conv) == 0.0
    doc = [{"role": "assistant", "content": "the quick brown fox jumps over the lazy dog"}]
    assert bleu_task_metric("the quick brown fox jumps over the lazy dog")(doc) == \
        pytest.approx(1.0)
    code = [{"role": "assistant", "content": "```python\ndef f(x):\n    return x + 1\n```"},
            {"role": "assistant", "content": "Anything else?"}]
    rate = asyncio.run(code_task_metric(["assert f(1) == 2", "assert f(1) == 3"])(code))
    assert rate == 0.5
    assert math.isclose(asyncio.run(code_task_metric(["assert True"])(doc)), 0.0)


def test_task_metrics_with_llm_extractor():
    from icml25.collab import LLMExtractor

    ext = LLMExtractor(ScriptedChatModel(
        {"extractor": json.dumps({"final_completion": "def f(x):\n    return x + 1\n"})}),
        kind="code")
    conv = [{"role": "assistant", "content": "no code block here"}]
    assert asyncio.run(code_task_metric(["assert f(1) == 2"], extractor=ext)(conv)) == 1.0
    doc = LLMExtractor(ScriptedChatModel(
        {"extractor": json.dumps({"final_completion": "a b c d e f"})}))
    assert asyncio.run(bleu_task_metric("a b c d e f", extractor=doc)(conv)) == \
        pytest.approx(1.0)
