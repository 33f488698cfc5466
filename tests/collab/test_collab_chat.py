"""ChatModel protocol: scripted backend, and the OpenAI backend against a real loopback stub."""

import asyncio
import time

import pytest

from icml25.collab import (
    ChatModel,
    ChatModelError,
    OpenAIChatModel,
    RetryableError,
    RetryPolicy,
    ScriptedChatModel,
    load_chat_model,
)
from icml25.collab.stub_server import StubServer

MSG = [{"role": "user", "content": "hello there"}]
FAST = RetryPolicy(max_attempts=3, timeout_s=2.0, base_delay_s=0.01, max_delay_s=0.05)


def test_scripted_replies_per_role_and_usage():
    m = ScriptedChatModel({"assistant": ["a1", "a2"], "user": lambda msgs: "u:" + msgs[-1][
        "content"], "judge": None})
    assert isinstance(m, ChatModel)

    async def go():
        return [await m.chat(MSG), await m.chat(MSG), await m.chat(MSG, role="user"),
                await m.chat(MSG, role="judge")]

    a1, a2, u, j = asyncio.run(go())
    assert (a1.text, a2.text, u.text) == ("a1", "a2", "u:hello there")
    assert a1.prompt_tokens == 2 and a1.completion_tokens == 1
    assert j.text == "" and j.null_content
    with pytest.raises(ChatModelError, match="no reply for role"):
        asyncio.run(m.chat(MSG, role="extractor"))


def test_bad_messages_rejected_at_boundary():
    m = ScriptedChatModel({"assistant": "x"})
    with pytest.raises(ValueError, match="role"):
        asyncio.run(m.chat([{"role": "bot", "content": "x"}]))
    with pytest.raises(TypeError):
        asyncio.run(m.chat("hello"))


def test_retries_then_success_and_bounded_failure():
    m = ScriptedChatModel({"assistant": [RetryableError("503"), RetryableError("503"), "ok"]},
                          retry=FAST)
    res = asyncio.run(m.chat(MSG))
    assert res.text == "ok" and res.attempts == 3 and m.failures == 2
    bad = ScriptedChatModel({"assistant": RetryableError("down")}, retry=FAST)
    with pytest.raises(ChatModelError, match="3 attempts failed"):
        asyncio.run(bad.chat(MSG))
    assert bad.calls == 3


def test_timeout_is_retried_and_bounded():
    slow = ScriptedChatModel({"assistant": "late"}, latency_s=5.0,
                             retry=RetryPolicy(max_attempts=2, timeout_s=0.1, base_delay_s=0.01,
                                               max_delay_s=0.01))
    t0 = time.perf_counter()
    with pytest.raises(ChatModelError, match="TimeoutError"):
        asyncio.run(slow.chat(MSG))
    # bounded: two 0.1 s timeouts, never the 5 s replies (generous, so a busy machine passes)
    assert time.perf_counter() - t0 < slow.latency_s


def test_concurrency_is_bounded():
    m = ScriptedChatModel({"assistant": "x"}, latency_s=0.05, max_concurrency=3)

    async def go():
        await asyncio.gather(*(m.chat(MSG) for _ in range(12)))

    t0 = time.perf_counter()
    asyncio.run(go())
    elapsed = time.perf_counter() - t0
    assert m.max_in_flight == 3
    assert elapsed >= 0.19  # 12 calls / 3 slots × 50 ms: at least 4 waves (load only slows it)


def test_load_chat_model_specs():
    assert isinstance(load_chat_model("openai:gpt-x@http://127.0.0.1:9/v1"), OpenAIChatModel)
    assert load_chat_model("scripted:echo").name == "scripted"
    with pytest.raises(ValueError, match="unknown model spec"):
        load_chat_model("nonsense")


# ---------------------------------------------------------------- real HTTP stub on loopback

def test_openai_backend_roundtrip_and_usage():
    with StubServer(responder=lambda b: "pong " + b["messages"][-1]["content"]) as srv:
        m = OpenAIChatModel("stub-model", srv.url, retry=FAST)
        res = asyncio.run(m.chat(MSG, temperature=0.3, max_tokens=7))
        assert res.text == "pong hello there"
        assert (res.prompt_tokens, res.completion_tokens) == (2, 3)
        body = srv.bodies[-1]
        assert body["model"] == "stub-model" and body["temperature"] == 0.3
        assert body["max_tokens"] == 7


def test_openai_backend_retries_http_500():
    with StubServer(responder=lambda b: "fine") as srv:
        srv.fail_next = 2
        m = OpenAIChatModel("s", srv.url, retry=FAST)
        res = asyncio.run(m.chat(MSG))
        assert res.text == "fine" and res.attempts == 3 and srv.requests == 3


def test_openai_backend_repeated_500_fails_within_bound():
    with StubServer(responder=lambda b: "never") as srv:
        srv.fail_next = 100
        m = OpenAIChatModel("s", srv.url, retry=FAST)
        t0 = time.perf_counter()
        with pytest.raises(ChatModelError):
            asyncio.run(m.chat(MSG))
        assert srv.requests == 3  # gave up after the policy's attempts, not after 100 500s
        assert time.perf_counter() - t0 < 30  # bounded (generous: a busy machine passes)


def test_openai_backend_timeout_then_retry():
    with StubServer(responder=lambda b: "after hang") as srv:
        srv.hang_next, srv.hang_s = 1, 1.5
        m = OpenAIChatModel("s", srv.url, retry=RetryPolicy(max_attempts=2, timeout_s=0.3,
                                                            base_delay_s=0.01, max_delay_s=0.01))
        res = asyncio.run(m.chat(MSG))
        # a second attempt answered: the first, hung request was abandoned at its timeout
        assert res.text == "after hang" and res.attempts == 2 and srv.requests == 2


def test_openai_backend_null_content_and_real_concurrency():
    with StubServer(responder=lambda b: None, latency_s=0.2) as srv:
        m = OpenAIChatModel("s", srv.url, retry=FAST, max_concurrency=8)

        async def go():
            async with m:  # one shared connection pool for the session
                await m.chat(MSG)  # warm-up: the client's lazy imports cost ~1 s once
                return await asyncio.gather(*(m.chat(MSG) for _ in range(8)))

        res = asyncio.run(go())
        assert all(r.text == "" and r.null_content for r in res)
        assert srv.max_in_flight >= 6  # the requests overlapped on the server: not sequential


def test_openai_backend_client_errors_not_retried():
    with StubServer() as srv:
        m = OpenAIChatModel("s", srv.url.replace("/v1", "/nope"), retry=FAST)
        with pytest.raises(ChatModelError, match="404"):
            asyncio.run(m.chat(MSG))
        assert srv.requests == 1


def test_openai_backend_survives_consecutive_event_loops():
    with StubServer(responder=lambda b: "again") as srv:
        m = OpenAIChatModel("s", srv.url, retry=FAST)
        assert [asyncio.run(m.chat(MSG)).text for _ in range(3)] == ["again"] * 3
