"""User simulator: tolerant parsing, termination, fallback; every crash listed in ANCHORS.md."""

import asyncio
import json
import time

import pytest

from icml25.collab import (
    TERMINATION_SIGNAL,
    InteractivityJudge,
    OpenAIChatModel,
    RetryableError,
    RetryPolicy,
    ScriptedChatModel,
    UserSimulator,
    extract_json_object,
    parse_score,
)
from icml25.collab.stub_server import StubServer

CONV = [{"role": "user", "content": "write me an essay"},
        {"role": "assistant", "content": "Sure, on what topic and how long?"}]
FAST = RetryPolicy(max_attempts=2, timeout_s=1.0, base_delay_s=0.01, max_delay_s=0.02)


@pytest.mark.parametrize("raw,expected", [
    ('{"response": "hi"}', {"response": "hi"}),
    ('Sure!\n```json\n{"thought": "x", "response": "hi",}\n```', {"thought": "x",
                                                                  "response": "hi"}),
    ("{'response': 'single quotes', 'ok': True}", {"response": "single quotes", "ok": True}),
    ('{"response": """triple\nquoted"""}', {"response": "triple\nquoted"}),
    ('prefix {"a": {"b": "}"}} suffix', {"a": {"b": "}"}}),
    ("42", None), ('"just a string"', None), ("null", None), (None, None), ("", None),
    ("[1, 2]", None), ("{not json at all", None),
])
def test_extract_json_object(raw, expected):
    assert extract_json_object(raw) == expected


@pytest.mark.parametrize("raw,expected", [
    (0.7, 0.7), ("0.7", 0.7), ("high", 1.0), ("Medium", 0.5), ("low", 0.0), ("2/3", 2 / 3),
    ("8 out of 10", 0.8), ("85", 0.85), (True, 1.0), (1.7, 1.0), ("very high", 1.0),
    (None, None), ("banana", None), (float("nan"), None), ([1], None),
])
def test_parse_score(raw, expected):
    got = parse_score(raw)
    assert got == pytest.approx(expected) if expected is not None else got is None


def _sim(reply, **kw):
    model = ScriptedChatModel({"user": reply}, retry=FAST)
    return UserSimulator(model, "essay writing", "A 300-word essay on bees.", **kw), model


def test_parses_response_and_hides_nothing_from_prompt():
    sim, model = _sim('{"current_answer": "", "thought": "t", "response": "about bees"}')
    turn = asyncio.run(sim.respond(CONV))
    assert (turn.text, turn.parsed, turn.terminated, turn.failures) == ("about bees", True,
                                                                         False, [])
    role, msgs = model.log[0]
    assert role == "user" and "300-word essay on bees" in msgs[1]["content"]
    assert "Sure, on what topic" in msgs[1]["content"]


def test_termination_signal():
    sim, _ = _sim(json.dumps({"response": TERMINATION_SIGNAL}))
    turn = asyncio.run(sim.respond(CONV))
    assert turn.terminated and turn.parsed


def test_malformed_then_good_output_records_failures():
    sim, model = _sim(["not json {", '{"response": "ok now"}'])
    turn = asyncio.run(sim.respond(CONV))
    assert turn.text == "ok now" and turn.parsed and len(turn.failures) == 1
    assert "unparseable" in turn.failures[0] and model.calls == 2


def test_unparseable_forever_falls_back_to_plain_prose():
    # Anchor crash 1: output that never parses (official package: UnboundLocalError).
    sim, model = _sim("I guess about bees, 300 words?", max_retries=4)
    turn = asyncio.run(sim.respond(CONV))
    assert turn.fallback and not turn.parsed and turn.text == "I guess about bees, 300 words?"
    assert len(turn.failures) == 4 and model.calls == 4


def test_bare_number_is_not_a_crash():
    # Anchor crash 2: a simulated user answering "42" (parsed to int → AttributeError).
    sim, _ = _sim("42")
    turn = asyncio.run(sim.respond(CONV))
    assert turn.text == "42" and turn.fallback and not turn.terminated


def test_null_content_falls_back_to_default_message():
    # Anchor crash 3: content null.
    sim, _ = _sim(None)
    turn = asyncio.run(sim.respond(CONV))
    assert turn.text == sim.fallback_message and turn.fallback
    assert all("null content" in f for f in turn.failures)


def test_judge_word_score_and_garbage():
    # Anchor crash 4: judge score "high".
    judge = InteractivityJudge(ScriptedChatModel({"judge": '{"interactivity": "high"}'}))
    assert asyncio.run(judge.score(CONV[:1], CONV[1:])) == (1.0, [])
    bad = InteractivityJudge(ScriptedChatModel({"judge": '{"interactivity": "n/a"}'}),
                             max_retries=2)
    value, failures = asyncio.run(bad.score(CONV[:1], CONV[1:]))
    assert value is None and len(failures) == 2


def test_repeated_http_500_bounded_wait_over_real_http():
    # Anchor crash 5: repeated HTTP 500s (official package: 60 s stall, whole MR call lost).
    with StubServer(responder=lambda b: '{"response": "x"}') as srv:
        srv.fail_next = 1000
        model = OpenAIChatModel("sim", srv.url, retry=FAST)
        sim = UserSimulator(model, "task", "goal", max_retries=2)
        t0 = time.perf_counter()
        turn = asyncio.run(sim.respond(CONV))
        elapsed = time.perf_counter() - t0
    assert turn.fallback and turn.text == sim.fallback_message
    assert len(turn.failures) == 2 and all("call failed" in f for f in turn.failures)
    assert srv.requests == 2 * FAST.max_attempts
    assert elapsed < 30  # bounded (the anchor stalls 60 s); generous, so a busy machine passes


def test_transient_error_then_success():
    sim, _ = _sim([RetryableError("500"), '{"response": "recovered"}'])
    turn = asyncio.run(sim.respond(CONV))
    assert turn.text == "recovered" and turn.failures == []  # retried inside the backend
