"""Task metrics that need no downloads, and the LLM-judged ones.

* :func:`bleu` — sentence BLEU (sacrebleu) in ``[0, 1]`` (document editing).
* :func:`run_code_tests` / :func:`code_pass_rate` — run unit tests against code in a separate
  Python process with a wall-time limit, a CPU-time limit and an address-space limit, so an
  infinite loop or a memory bomb is killed and scored as failure (coding).
* :func:`math_equivalent` — final-answer equivalence through sympy, with light LaTeX clean-up
  (math); :class:`InteractivityJudge` — an LLM judge of interactivity with tolerant score
  parsing.
* :func:`extract_final_answer` / :func:`last_code_block` — heuristic artifact extraction.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from icml25.collab.chat import ChatModel, ChatModelError, Message
from icml25.collab.parsing import extract_json_object, parse_score
from icml25.collab.simulator import render_history


def bleu(hypothesis: str, reference: str) -> float:
    """Sentence BLEU of ``hypothesis`` against one reference, scaled to ``[0, 1]``.

    Parameters
    ----------
    hypothesis : str
        The text to score; empty or blank text scores 0.
    reference : str
        The reference text.

    Returns
    -------
    float
        sacrebleu's sentence BLEU divided by 100.

    Raises
    ------
    TypeError
        If either argument is not a string.
    MissingExtraError
        If sacrebleu (``llm`` extra) is not installed.

    Examples
    --------
    >>> bleu("the cat sat on the mat", "the cat sat on the mat")
    1.0
    >>> round(bleu("the cat sat on a mat", "the cat sat on the mat"), 3)
    0.537
    """
    from icml25.core import require_extra

    sacrebleu = require_extra("sacrebleu", "llm")
    if not isinstance(hypothesis, str) or not isinstance(reference, str):
        raise TypeError("bleu expects two strings")
    if not hypothesis.strip() or not reference.strip():
        return 0.0
    return min(1.0, float(sacrebleu.sentence_bleu(hypothesis, [reference]).score) / 100.0)


# --------------------------------------------------------------------------- code sandbox

_HARNESS = textwrap.dedent(r"""
    import json, sys
    src = json.loads(sys.stdin.read())
    out = sys.__stdout__
    sys.stdout = open("/dev/null", "w")
    ns = {"__name__": "solution"}
    try:
        exec(compile(src["code"], "<solution>", "exec"), ns)
    except BaseException as e:
        out.write(json.dumps({"setup_error": type(e).__name__ + ": " + str(e)[:200]}) + "\n")
        out.flush()
        raise SystemExit(0)
    for i, t in enumerate(src["tests"]):
        try:
            exec(compile(t, "<test %d>" % i, "exec"), dict(ns))
            r = {"test": i, "ok": True}
        except BaseException as e:
            r = {"test": i, "ok": False, "error": type(e).__name__ + ": " + str(e)[:200]}
        out.write(json.dumps(r) + "\n")
        out.flush()
""")


@dataclass(frozen=True)
class CodeResult:
    """Outcome of :func:`run_code_tests`. ``passed[i]`` is test i's verdict.

    Parameters
    ----------
    passed : tuple of bool
        One verdict per test; tests that never reported count as failed.
    timed_out : bool
        Whether the wall-clock limit killed the process.
    killed : bool
        Whether the process ended abnormally (timeout, a limit, a crash).
    error : str, default=""
        Why the solution could not run, or how the process ended.

    Attributes
    ----------
    pass_rate : float
        Fraction of tests passed (0 when there are none).

    Examples
    --------
    >>> CodeResult((True, False, True), timed_out=False, killed=False).pass_rate
    0.6666666666666666
    """

    passed: tuple[bool, ...]
    timed_out: bool
    killed: bool
    error: str = ""

    @property
    def pass_rate(self) -> float:
        return sum(self.passed) / len(self.passed) if self.passed else 0.0


def _limits(cpu_s: int, memory_mb: int):  # pragma: no cover - runs in the child
    def apply() -> None:
        import resource

        os.setsid()  # own process group: the whole tree can be killed
        mem = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_NPROC, (64, 64))
    return apply


def run_code_tests(code: str, tests: Sequence[str], *, timeout_s: float = 10.0,
                   memory_mb: int = 512) -> CodeResult:
    """Run ``tests`` (snippets of asserts) against ``code`` in a limited subprocess.

    The child runs ``python -I`` in an empty temporary directory, with ``RLIMIT_AS`` =
    ``memory_mb``, ``RLIMIT_CPU`` ≈ ``timeout_s`` and a wall-clock kill at ``timeout_s``. Tests
    that never reported (because the process was killed) count as failed. POSIX only. This is
    a resource fence, not a security boundary: run untrusted code in a container as well.

    Parameters
    ----------
    code : str
        The solution, run once before the tests (its output is discarded).
    tests : sequence of str
        Test snippets, each run in a copy of the solution's namespace.
    timeout_s : float, default=10.0
        Wall-clock limit of the whole run, in seconds (the CPU limit is its ceiling).
    memory_mb : int, default=512
        Address-space limit of the child, in MiB.

    Returns
    -------
    CodeResult
        Per-test verdicts, whether the child timed out or was killed, and any error.

    Raises
    ------
    TypeError
        If ``code`` is not a string.
    ValueError
        If ``tests`` is empty or holds a non-string, ``timeout_s <= 0`` or
        ``memory_mb < 32``.

    Examples
    --------
    >>> code = "def f(x):\\n    return 2 * x\\n"
    >>> r = run_code_tests(code, ["assert f(2) == 4", "assert f(3) == 7"])
    >>> r.passed, r.timed_out, r.pass_rate
    ((True, False), False, 0.5)
    >>> run_code_tests("def f(:", ["assert f"]).error
    'SyntaxError: ...'
    """
    if not isinstance(code, str):
        raise TypeError("code must be a string")
    tests = list(tests)
    if not tests or not all(isinstance(t, str) for t in tests):
        raise ValueError("tests must be a non-empty sequence of strings")
    if timeout_s <= 0 or memory_mb < 32:
        raise ValueError("timeout_s must be > 0 and memory_mb >= 32")
    payload = json.dumps({"code": code, "tests": tests})
    with tempfile.TemporaryDirectory(prefix="icml25-sandbox-") as tmp:
        proc = subprocess.Popen(
            [sys.executable, "-I", "-c", _HARNESS], cwd=tmp, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={"PATH": os.environ.get("PATH", ""), "HOME": tmp},
            preexec_fn=_limits(max(1, int(timeout_s + 0.999)), memory_mb))
        timed_out = False
        try:
            stdout, stderr = proc.communicate(payload, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            try:
                os.killpg(proc.pid, 9)
            except ProcessLookupError:
                pass
            stdout, stderr = proc.communicate()
    verdict = [False] * len(tests)
    error = ""
    for line in (stdout or "").splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if "setup_error" in rec:
            error = rec["setup_error"]
        elif isinstance(rec.get("test"), int) and 0 <= rec["test"] < len(tests):
            verdict[rec["test"]] = bool(rec.get("ok"))
    killed = timed_out or proc.returncode not in (0, None)
    if killed and not error:
        tail = (stderr or "").strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
        error = "timed out" if timed_out else tail[0][:200]
    return CodeResult(tuple(verdict), timed_out, killed, error)


def code_pass_rate(code: str, tests: Sequence[str], **kwargs) -> float:
    """Fraction of ``tests`` that pass; see :func:`run_code_tests`.

    Parameters
    ----------
    code : str
        The solution.
    tests : sequence of str
        Test snippets (asserts).
    **kwargs
        ``timeout_s`` and ``memory_mb`` of :func:`run_code_tests`.

    Returns
    -------
    float
        Passed tests over all tests, in ``[0, 1]``.

    Raises
    ------
    TypeError, ValueError
        As :func:`run_code_tests`.

    Examples
    --------
    >>> code = "def f(x):\\n    return 2 * x\\n"
    >>> code_pass_rate(code, ["assert f(2) == 4", "assert f(3) == 7"])
    0.5
    """
    return run_code_tests(code, tests, **kwargs).pass_rate


_CODE_BLOCK = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.S)


def last_code_block(text: str) -> str:
    """The last fenced code block in ``text`` (or ``text`` itself if there is none).

    Parameters
    ----------
    text : str
        A model's reply; ``None`` counts as empty.

    Returns
    -------
    str
        The contents of the last fenced block (plain, ``python`` or ``py``), or ``text``.

    Examples
    --------
    >>> last_code_block("Try:\\n```python\\nprint(1)\\n```\\nor\\n```\\nprint(2)\\n```")
    'print(2)\\n'
    >>> last_code_block("no code here")
    'no code here'
    """
    blocks = _CODE_BLOCK.findall(text or "")
    return blocks[-1] if blocks else (text or "")


# --------------------------------------------------------------------------- math

_BOXED = re.compile(r"\\boxed\s*{")


def _boxed_content(s: str) -> str | None:
    found = list(_BOXED.finditer(s))
    if not found:
        return None
    m = found[-1]
    depth, i = 1, m.end()
    while i < len(s) and depth:
        depth += {"{": 1, "}": -1}.get(s[i], 0)
        i += 1
    return s[m.end():i - 1]


def extract_final_answer(text: str) -> str:
    """The final answer in a math response: last ``\\boxed{}``, else 'answer is X', else the
    last number or expression on the last line.

    Parameters
    ----------
    text : str
        A math response; ``None`` counts as empty.

    Returns
    -------
    str
        The answer, stripped ('' for empty text).

    Examples
    --------
    >>> extract_final_answer("so x = \\\\boxed{\\\\frac{1}{2}}.")
    '\\\\frac{1}{2}'
    >>> extract_final_answer("The answer is 42."), extract_final_answer("We get 3, then 7")
    ('42', '7')
    """
    text = text or ""
    boxed = _boxed_content(text)
    if boxed is not None:
        return boxed.strip()
    m = re.findall(r"answer\s*(?:is|:|=)\s*\$?([^\n$]+)", text, re.I)
    if m:
        return m[-1].strip().rstrip(".")
    nums = re.findall(r"-?\d+(?:\.\d+)?(?:\s*/\s*\d+)?", text)
    return nums[-1].strip() if nums else text.strip().splitlines()[-1] if text.strip() else ""


def _latex_to_sympy(s: str) -> str:
    s = s.strip().strip("$").strip()
    s = re.sub(r"\\(?:left|right|displaystyle|,|;|!|\s)", "", s)
    s = s.replace("\\cdot", "*").replace("\\times", "*").replace("\\pi", "pi")
    s = re.sub(r"\\(?:d|t)?frac\s*{([^{}]*)}\s*{([^{}]*)}", r"((\1)/(\2))", s)
    s = re.sub(r"\\sqrt\s*{([^{}]*)}", r"sqrt(\1)", s)
    s = re.sub(r"\\text\s*{[^{}]*}", "", s)
    s = s.replace("^", "**").replace("{", "(").replace("}", ")").replace("\\", "")
    s = s.replace("%", "/100")
    return s.rstrip(".").strip()


def math_equivalent(answer: str, reference: str, *, tol: float = 1e-9) -> bool:
    """Whether two final answers are mathematically equal (sympy), e.g. ``\\frac{1}{2}`` and
    ``0.5``. Falls back to normalised string equality when either side does not parse.

    Parameters
    ----------
    answer : str
        The answer to check (plain or LaTeX: ``\\frac``, ``\\sqrt``, ``\\cdot``, ``\\pi``...).
    reference : str
        The reference answer.
    tol : float, default=1e-9
        Relative tolerance of a numeric comparison.

    Returns
    -------
    bool
        ``True`` when sympy shows the difference is zero (within ``tol``).

    Examples
    --------
    >>> math_equivalent("\\\\frac{1}{2}", "0.5"), math_equivalent("2", "3")
    (True, False)
    """
    import sympy
    from sympy.parsing.sympy_parser import (
        implicit_multiplication_application,
        parse_expr,
        standard_transformations,
    )

    a, b = _latex_to_sympy(str(answer)), _latex_to_sympy(str(reference))
    if not a or not b:
        return False
    if a.replace(" ", "") == b.replace(" ", ""):
        return True
    tr = standard_transformations + (implicit_multiplication_application,)
    try:
        ea = parse_expr(a, transformations=tr, evaluate=True)
        eb = parse_expr(b, transformations=tr, evaluate=True)
        diff = sympy.simplify(ea - eb)
        if diff == 0:
            return True
        val = complex(sympy.N(diff))
        return abs(val) <= tol * max(1.0, abs(complex(sympy.N(eb))))
    except Exception:  # noqa: BLE001 - any parse/eval failure means "not shown equal"
        return False


# --------------------------------------------------------------------------- LLM judges

INTERACTIVITY_PROMPT = """You are judging how interactive an AI assistant was in the FOLLOW-UP
part of a conversation (the earlier history is only context). Score 1.0 when it asked the
relevant clarifying questions and improved its understanding of the user's goal, 0.5 for
moderate engagement, 0.0 when it just answered without engaging.

## Earlier history
{history}

## Follow-up conversation to judge
{followup}

Answer ONLY with JSON: {{"thought": "<reasoning>", "interactivity": <number from 0 to 1>}}"""


@dataclass
class InteractivityJudge:
    """LLM judge of interactivity in ``[0, 1]``; returns ``None`` when no usable score came back
    after ``max_retries`` (recorded by the caller, never raised).

    ``await judge.score(history, followup)`` asks the model (role ``"judge"``) to score the
    follow-up part of a conversation, the earlier history being context, and returns
    ``(score or None, failures)``. The reply is parsed tolerantly (:func:`parse_score`).

    Parameters
    ----------
    model : ChatModel
        The judge LLM.
    max_retries : int, default=2
        Attempts at a usable score.
    temperature : float or None, default=0.0
        Sampling temperature of the judge.

    Examples
    --------
    >>> import asyncio
    >>> from icml25.collab import ScriptedChatModel
    >>> llm = ScriptedChatModel({"judge": ["I'd say high!", '{"interactivity": 0.5}']})
    >>> judge = InteractivityJudge(llm)
    >>> followup = [{"role": "assistant", "content": "What length?"}]
    >>> asyncio.run(judge.score([{"role": "user", "content": "A poem?"}], followup))
    (1.0, [])
    >>> asyncio.run(InteractivityJudge(ScriptedChatModel({"judge": "?"}), max_retries=1)
    ...             .score([], followup))
    (None, ["judge attempt 1: unusable score '?'"])
    """

    model: ChatModel
    max_retries: int = 2
    temperature: float | None = 0.0

    async def score(self, history: Sequence[Message],
                    followup: Sequence[Message]) -> tuple[float | None, list[str]]:
        failures: list[str] = []
        prompt = INTERACTIVITY_PROMPT.format(history=render_history(history),
                                             followup=render_history(followup))
        for attempt in range(1, max(1, self.max_retries) + 1):
            try:
                res = await self.model.chat([{"role": "user", "content": prompt}], role="judge",
                                            temperature=self.temperature, max_tokens=512)
            except ChatModelError as exc:
                failures.append(f"judge attempt {attempt}: {exc}")
                continue
            obj = extract_json_object(res.text)
            raw = obj.get("interactivity", obj.get("score")) if obj else res.text
            value = parse_score(raw)
            if value is not None:
                return value, failures
            failures.append(f"judge attempt {attempt}: unusable score {str(raw)[:60]!r}")
        return None, failures


def token_counter(name: str = "approx"):
    """A ``text -> int`` token counter: ``"approx"`` (offline word/punctuation count) or
    ``"tiktoken:<encoding>"`` (e.g. ``cl100k_base``, ``o200k_base``): OpenAI's BPE counts
    through ``bpe-openai``, which is tiktoken-compatible and ships its tables, so it works
    offline where tiktoken would download them.

    Parameters
    ----------
    name : str, default="approx"
        ``"approx"`` or ``"tiktoken:<encoding>"``.

    Returns
    -------
    callable
        ``text -> int``; ``None`` text counts as empty.

    Raises
    ------
    ValueError
        For an unknown counter or encoding.
    MissingExtraError
        For ``tiktoken:`` without ``bpe-openai`` (``llm`` extra).

    Examples
    --------
    >>> token_counter()("Hello, world!")
    4
    >>> token_counter("tiktoken:cl100k_base")("Hello, world!")
    4
    """
    from icml25.collab.chat import approx_token_count

    if name == "approx":
        return approx_token_count
    if name.startswith("tiktoken:"):
        from icml25.core import require_extra

        bpe = require_extra("bpe_openai", "llm")
        try:
            enc = bpe.get_encoding(name.split(":", 1)[1])
        except bpe.UnsupportedModelError as exc:
            raise ValueError(str(exc)) from None
        return lambda text: len(enc.encode(text or "", disallowed_special=()))
    raise ValueError(f"unknown token counter {name!r}; use 'approx' or 'tiktoken:<encoding>'")


def read_path(path: str | Path) -> str:
    """Read a UTF-8 text file with a clear error."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"no such file: {p}")
    return p.read_text(encoding="utf-8")


ACCURACY_PROMPT = """Decide whether the assistant's final answer to the problem is correct.

## Problem
{problem}

## Reference solution
{reference}

## Assistant's final response
{answer}

Answer ONLY with JSON: {{"thought": "<reasoning>", "accuracy": <1 if correct, else 0>}}"""

EXTRACT_PROMPT = """Below is a conversation in which an assistant helps a user produce a {kind}.
Merge every revision the user asked for into ONE final {kind}, exactly as the assistant would
deliver it at the end (complete and runnable if it is code, without tests or a __main__ block).

{history}

Answer ONLY with JSON: {{"thought": "<what changed>", "final_completion": "<the final {kind}>"}}"""


@dataclass
class AccuracyJudge:
    """LLM judge of math correctness (0/1) against a reference solution; ``None`` when no usable
    verdict came back after ``max_retries``.

    ``await judge.score(problem, reference, answer)`` returns ``(verdict, failures)``: the
    verdict is 1.0 or 0.0 (a parsed score of 0.5 or more counts as correct), or ``None``, and
    failures lists what went wrong; it never raises on model output or a failing endpoint.

    Parameters
    ----------
    model : ChatModel
        The judge LLM (called with role ``"judge"`` at temperature 0).
    max_retries : int, default=2
        Attempts at a usable verdict.

    Examples
    --------
    >>> import asyncio
    >>> from icml25.collab import ScriptedChatModel
    >>> judge = AccuracyJudge(ScriptedChatModel({"judge": '{"accuracy": 1}'}))
    >>> asyncio.run(judge.score("Solve x^2 = 25.", "x = 5 or x = -5", "x = ±5"))
    (1.0, [])
    """

    model: ChatModel
    max_retries: int = 2

    async def score(self, problem: str, reference: str,
                    answer: str) -> tuple[float | None, list[str]]:
        failures: list[str] = []
        prompt = ACCURACY_PROMPT.format(problem=problem, reference=reference, answer=answer)
        for attempt in range(1, max(1, self.max_retries) + 1):
            try:
                res = await self.model.chat([{"role": "user", "content": prompt}], role="judge",
                                            temperature=0.0, max_tokens=512)
            except ChatModelError as exc:
                failures.append(f"accuracy judge attempt {attempt}: {exc}")
                continue
            obj = extract_json_object(res.text)
            value = parse_score(obj.get("accuracy") if obj else res.text)
            if value is not None:
                return float(value >= 0.5), failures
            failures.append(f"accuracy judge attempt {attempt}: unusable verdict")
        return None, failures


@dataclass
class LLMExtractor:
    """Extract the final artifact (document, code, answer) from a whole conversation with an
    LLM, as the paper does before applying the task metric. Falls back to the last assistant
    message (its last code block for code) when the model fails; the fallback is recorded in
    ``failures``.

    ``await extractor.extract(conversation)`` asks the model (role ``"extractor"``) for JSON
    with a ``final_completion`` and returns that string.

    Parameters
    ----------
    model : ChatModel
        The extracting LLM.
    kind : str, default="document"
        What to extract ("document", "code", "answer"...), named in the prompt.
    max_retries : int, default=2
        Attempts at a usable ``final_completion``.
    failures : list of str, default=[]
        Where failed attempts are recorded (it grows across calls).

    Examples
    --------
    >>> import asyncio
    >>> from icml25.collab import ScriptedChatModel
    >>> conv = [{"role": "user", "content": "A haiku?"},
    ...         {"role": "assistant", "content": "Autumn moon..."}]
    >>> llm = ScriptedChatModel({"extractor": '{"final_completion": "Autumn moon rises"}'})
    >>> asyncio.run(LLMExtractor(llm).extract(conv))
    'Autumn moon rises'
    >>> broken = LLMExtractor(ScriptedChatModel({"extractor": "sorry"}), max_retries=1)
    >>> asyncio.run(broken.extract(conv)), broken.failures
    ('Autumn moon...', ['extractor attempt 1: no final_completion'])
    """

    model: ChatModel
    kind: str = "document"
    max_retries: int = 2
    failures: list[str] = field(default_factory=list)

    async def extract(self, conversation: Sequence[Message]) -> str:
        prompt = EXTRACT_PROMPT.format(kind=self.kind, history=render_history(conversation))
        for attempt in range(1, max(1, self.max_retries) + 1):
            try:
                res = await self.model.chat([{"role": "user", "content": prompt}],
                                            role="extractor", temperature=0.0)
            except ChatModelError as exc:
                self.failures.append(f"extractor attempt {attempt}: {exc}")
                continue
            obj = extract_json_object(res.text)
            value = obj.get("final_completion") if obj else None
            if isinstance(value, str) and value.strip():
                return value
            self.failures.append(f"extractor attempt {attempt}: no final_completion")
        last = next((m.get("content") or "" for m in reversed(conversation)
                     if m.get("role") == "assistant"), "")
        return last_code_block(last) if self.kind == "code" else last
