"""Metrics on known cases: BLEU, the code sandbox (infinite loop, memory bomb), math."""

import time

import pytest

from icml25.collab import (
    bleu,
    code_pass_rate,
    extract_final_answer,
    last_code_block,
    math_equivalent,
    run_code_tests,
    token_counter,
)

SOL = "def add(a, b):\n    return a + b\n"


def test_bleu_known_cases():
    ref = "the cat is on the mat"
    assert bleu(ref, ref) == pytest.approx(1.0)
    assert bleu("dogs bark loudly at night", ref) < 0.05
    mid = bleu("the cat is on a mat", ref)
    assert 0.2 < mid < 0.9
    assert bleu("", ref) == 0.0
    with pytest.raises(TypeError):
        bleu(None, ref)


def test_code_pass_rate_counts_tests():
    tests = ["assert add(1, 2) == 3", "assert add(-1, 1) == 0", "assert add(2, 2) == 5"]
    res = run_code_tests(SOL, tests, timeout_s=10)
    assert res.passed == (True, True, False) and not res.killed
    assert res.pass_rate == pytest.approx(2 / 3)
    assert code_pass_rate("def add(a, b) return", tests) == 0.0  # syntax error


def test_sandbox_kills_infinite_loop():
    t0 = time.perf_counter()
    res = run_code_tests(SOL, ["assert add(1, 2) == 3", "while True:\n    pass",
                               "assert add(0, 0) == 0"], timeout_s=1.5)
    elapsed = time.perf_counter() - t0
    assert res.timed_out and res.killed
    assert res.passed == (True, False, False)  # what ran before the loop still counts
    assert elapsed < 60  # killed at its 1.5 s timeout, not left running (generous bound)


def test_sandbox_kills_memory_bomb():
    bomb = "x = []\nwhile True:\n    x.append(bytearray(50_000_000))"
    t0 = time.perf_counter()
    res = run_code_tests(bomb, ["assert True"], timeout_s=10, memory_mb=256)
    assert res.pass_rate == 0.0 and "MemoryError" in res.error
    assert time.perf_counter() - t0 < 60  # stopped by the memory cap (generous bound)


def test_sandbox_output_and_exit_do_not_confuse_it():
    noisy = 'print("{\\"test\\": 0, \\"ok\\": true}")\nimport sys\n'
    res = run_code_tests(noisy + SOL, ["assert add(1, 1) == 3", "sys.exit(0)"], timeout_s=10)
    assert res.passed == (False, False)


def test_sandbox_boundary_errors():
    with pytest.raises(ValueError):
        run_code_tests(SOL, [])
    with pytest.raises(ValueError):
        run_code_tests(SOL, ["assert True"], timeout_s=0)


@pytest.mark.parametrize("a,b,eq", [
    ("\\frac{1}{2}", "0.5", True), ("2x+2", "2(x+1)", True), ("\\sqrt{8}", "2\\sqrt{2}", True),
    ("3", "3.0", True), ("$\\pi$", "pi", True), ("1/3", "0.333", False), ("2", "3", False),
    ("x^2", "x*x", True), ("", "1", False), ("???", "1", False),
])
def test_math_equivalence(a, b, eq):
    assert math_equivalent(a, b) is eq


def test_final_answer_extraction():
    assert extract_final_answer("so \\boxed{\\frac{a}{b}} done") == "\\frac{a}{b}"
    assert extract_final_answer("The answer is 12.") == "12"
    assert extract_final_answer("we get 3 then 7") == "7"
    assert last_code_block("x\n```python\na=1\n```\n```py\nb=2\n```") == "b=2\n"


def test_token_counter():
    assert token_counter("approx")("Hello, world!") == 4
    with pytest.raises(ValueError):
        token_counter("bpe")


def test_tiktoken_counts_offline_match_openai_encodings():
    pytest.importorskip("bpe_openai")
    # Token ids published for these encodings: "Hello", ",", " world", "!"
    assert token_counter("tiktoken:cl100k_base")("Hello, world!") == 4
    assert token_counter("tiktoken:o200k_base")("Hello, world! <|endoftext|>") > 4
    with pytest.raises(ValueError, match="not supported"):
        token_counter("tiktoken:nope")


def test_accuracy_judge_backs_up_sympy_and_extractor_falls_back():
    import asyncio

    from icml25.collab import (
        AccuracyJudge,
        LLMExtractor,
        RetryableError,
        RetryPolicy,
        ScriptedChatModel,
        math_task_metric,
    )

    conv = [{"role": "user", "content": "solve x^2-12x+35=0"},
            {"role": "assistant", "content": "x = 5 or x = 7"}]
    yes = AccuracyJudge(ScriptedChatModel({"judge": '{"accuracy": 1}'}))
    garbage = AccuracyJudge(ScriptedChatModel({"judge": "dunno"}))
    assert math_task_metric("\\{5, 7\\}")(conv) == 0.0  # sympy alone cannot tell
    assert asyncio.run(math_task_metric("\\{5, 7\\}", judge=yes)(conv)) == 1.0
    assert asyncio.run(math_task_metric("\\{5, 7\\}", judge=garbage)(conv)) == 0.0
    good = LLMExtractor(ScriptedChatModel(
        {"extractor": '{"thought": "", "final_completion": "def f(): return 1"}'}), kind="code")
    assert asyncio.run(good.extract(conv)) == "def f(): return 1"
    dead = LLMExtractor(ScriptedChatModel({"extractor": RetryableError("x")},
                                          retry=RetryPolicy(max_attempts=1, timeout_s=1)))
    assert asyncio.run(dead.extract(conv)) == "x = 5 or x = 7" and len(dead.failures) == 2
