"""The multiturn-aware reward (MR) by forward sampling.

For a candidate assistant response ``m_j`` after a history, MR is the expected conversation-level
reward over future turns, estimated from ``n_samples`` simulated continuations of ``window``
rounds (one simulated user message + one assistant reply per round; a branch stops early when
the simulated user sends the termination signal). Per sample::

    paper-era:  R = task + interactivity - min(lambda * tokens, 1)
    general:    R = sum_k weights[k] * metric_k

with metrics ``task`` (task metric of the whole conversation), ``interactivity`` (LLM judge of
the candidate and its follow-up, earlier history as context), ``tokens`` (tokens of the candidate
and the follow-up), ``token_cost`` (``min(lambda * tokens, 1)``) and any extra metrics given.
MR is the mean over samples whose reward is finite; failed samples are kept with their failures.

All ``N × S`` branches of a :meth:`MultiturnReward.score` call run concurrently, so with a
fixed-latency endpoint the wall time is about ``window × (user + assistant latency)`` plus one
judge call, not ``N × S × window`` calls end to end.
"""

from __future__ import annotations

import asyncio
import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from icml25.collab.chat import ChatModelError, Message, approx_token_count, validate_messages
from icml25.collab.metrics import (
    InteractivityJudge,
    bleu,
    code_pass_rate,
    extract_final_answer,
    last_code_block,
    math_equivalent,
)
from icml25.collab.simulator import Assistant, UserSimulator

TaskMetric = Callable[[list[dict[str, Any]]], Any]
"""``conversation -> float`` (or an awaitable of one): scores the whole conversation."""

PAPER_WEIGHTS = {"task": 1.0, "interactivity": 1.0, "token_cost": -1.0}


def paper_reward(task: float, interactivity: float, tokens: float, lam: float) -> float:
    """Paper-era conversation reward: ``task + interactivity - min(lam * tokens, 1)``.

    Parameters
    ----------
    task : float
        The task metric of the conversation (BLEU, pass rate, accuracy).
    interactivity : float
        The judge's interactivity score in ``[0, 1]``.
    tokens : float
        Tokens of the candidate and its follow-up.
    lam : float
        The token penalty ``lambda``.

    Returns
    -------
    float
        The reward; the token cost is capped at 1.

    Examples
    --------
    >>> paper_reward(0.5, 1.0, 1000, 5e-4)
    1.0
    """
    return task + interactivity - min(lam * tokens, 1.0)


def weighted_reward(metrics: Mapping[str, float], weights: Mapping[str, float]) -> float:
    """``sum_k weights[k] * metrics[k]``; NaN when a weighted metric is missing or NaN.

    Parameters
    ----------
    metrics : mapping of str to float
        The conversation's metrics (``task``, ``interactivity``, ``token_cost``...).
    weights : mapping of str to float
        One weight per metric that counts.

    Returns
    -------
    float
        The weighted sum, NaN when a weighted metric is missing or not finite.

    Examples
    --------
    >>> weighted_reward({"task": 1.0, "token_cost": 0.2}, {"task": 1, "token_cost": -1})
    0.8
    >>> weighted_reward({"task": 1.0}, {"task": 1, "interactivity": 1})
    nan
    """
    total = 0.0
    for k, w in weights.items():
        v = metrics.get(k, math.nan)
        if v is None or not math.isfinite(v):
            return math.nan
        total += w * v
    return total


@dataclass
class SampleResult:
    """One forward-sampled branch.

    Parameters
    ----------
    conversation : list of dict
        The history, the candidate and the simulated follow-up.
    n_forward : int
        Messages after the candidate (the simulated follow-up).
    metrics : dict of str to float
        The branch's metrics (``task``, ``interactivity``, ``tokens``, ``token_cost``...; NaN
        for a metric that failed).
    reward : float
        The weighted reward (NaN when a weighted metric is missing).
    terminated : bool
        Whether the simulated user ended the chat.
    failures : list of str, default=[]
        Every unusable output, failed call or failed metric in the branch.

    Attributes
    ----------
    forward : list of dict
        The last ``n_forward`` messages of ``conversation``.

    Examples
    --------
    >>> conv = [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"},
    ...         {"role": "user", "content": "thanks"}, {"role": "assistant", "content": "np"}]
    >>> s = SampleResult(conv, n_forward=2, metrics={"task": 1.0}, reward=1.0, terminated=False)
    >>> [m["content"] for m in s.forward]
    ['thanks', 'np']
    """

    conversation: list[dict[str, Any]]
    n_forward: int
    metrics: dict[str, float]
    reward: float
    terminated: bool
    failures: list[str] = field(default_factory=list)

    @property
    def forward(self) -> list[dict[str, Any]]:
        return self.conversation[len(self.conversation) - self.n_forward:]


@dataclass
class CandidateScore:
    """MR of one candidate: mean and std of finite per-sample rewards, and the samples.

    Parameters
    ----------
    candidate : str
        The candidate reply.
    mr : float
        Mean of the finite sample rewards (NaN if none).
    std : float
        Population std of the finite sample rewards (NaN if none).
    samples : list of SampleResult
        Every forward sample, failed ones included.

    Attributes
    ----------
    n_valid : int
        Samples with a finite reward.

    Examples
    --------
    >>> samples = [SampleResult([], 0, {"task": t}, t, True) for t in (1.0, 0.0, float("nan"))]
    >>> c = CandidateScore("It is 4.", mr=0.5, std=0.5, samples=samples)
    >>> c.n_valid, c.metric_means(), c.to_dict()["samples"][2]["reward"] is None
    (2, {'task': 0.5}, True)
    """

    candidate: str
    mr: float
    std: float
    samples: list[SampleResult]

    @property
    def n_valid(self) -> int:
        return sum(math.isfinite(s.reward) for s in self.samples)

    def metric_means(self) -> dict[str, float]:
        keys = sorted({k for s in self.samples for k in s.metrics})
        out = {}
        for k in keys:
            vals = [s.metrics[k] for s in self.samples
                    if k in s.metrics and math.isfinite(s.metrics[k])]
            out[k] = sum(vals) / len(vals) if vals else math.nan
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"candidate": self.candidate, "mr": _json_float(self.mr),
                "std": _json_float(self.std), "n_valid": self.n_valid,
                "metrics": {k: _json_float(v) for k, v in self.metric_means().items()},
                "samples": [{"reward": _json_float(s.reward), "terminated": s.terminated,
                             "metrics": {k: _json_float(v) for k, v in s.metrics.items()},
                             "forward": s.forward, "failures": s.failures}
                            for s in self.samples]}


def _json_float(x: float) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and population std of the finite values (NaN, NaN if none)."""
    vals = [v for v in values if v is not None and math.isfinite(v)]
    if not vals:
        return math.nan, math.nan
    mu = sum(vals) / len(vals)
    return mu, math.sqrt(sum((v - mu) ** 2 for v in vals) / len(vals))


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


@dataclass
class MultiturnReward:
    """Multiturn-aware reward by forward sampling (see the module docstring).

    ``await reward.score(history, candidates)`` returns one :class:`CandidateScore` per
    candidate, in order; all ``N × S`` branches run concurrently (``concurrent=False`` scores
    candidates one after another).

    Parameters
    ----------
    user : UserSimulator
        The simulated user (hidden task) that continues each branch.
    assistant : Assistant
        The policy that answers the simulated user in each branch.
    task_metric : callable or None, default=None
        ``conversation -> float`` (sync or async), e.g. :func:`bleu_task_metric`; without it
        the ``task`` metric is absent.
    judge : InteractivityJudge or None, default=None
        Interactivity judge; without it the ``interactivity`` metric is absent.
    window : int, default=2
        Rounds simulated after the candidate (``w``; 0 = single-turn reward).
    n_samples : int, default=3
        Forward samples per candidate (``S``).
    weights : mapping of str to float or None, default=None
        Metric weights; ``None`` = paper-era form (task 1, interactivity 1, token_cost -1),
        dropping weights of metrics that are not configured.
    token_penalty : float, default=5e-4
        ``lambda`` in ``min(lambda * tokens, 1)`` (5e-4 for MATH and BigCodeBench, 1e-4 for
        Medium in the paper-era code).
    count_tokens : callable, default=approx_token_count
        ``text -> int``; the default is an offline approximation (see :func:`token_counter`).
    extra_metrics : mapping of str to callable, default={}
        More ``conversation -> float`` metrics, usable in ``weights``.

    Raises
    ------
    ValueError
        When scoring, if ``weights`` name metrics that are not configured (the message lists
        the available ones), ``window < 0``, ``n_samples < 1``, a negative or infinite
        ``token_penalty``, or ``candidates`` is empty or a string.
    TypeError
        When scoring, if a candidate is not a string.

    Examples
    --------
    A scripted user that ends the chat at once, and a task metric that checks the reply:

    >>> import asyncio
    >>> from icml25.collab import Assistant, ScriptedChatModel, UserSimulator
    >>> llm = ScriptedChatModel({"user": '{"response": "[[TERMINATE CHAT]]"}', "assistant": "ok"})
    >>> said_ok = lambda conv: float(any(m["content"] == "ok" for m in conv
    ...                                  if m["role"] == "assistant"))
    >>> mr = MultiturnReward(UserSimulator(llm, task="say ok", reference="ok"), Assistant(llm),
    ...                      task_metric=said_ok, window=1, n_samples=2)
    >>> scores = asyncio.run(mr.score([{"role": "user", "content": "say ok"}], ["ok", "no"]))
    >>> [(s.candidate, round(s.mr, 4)) for s in scores]   # task - token cost
    [('ok', 0.9995), ('no', -0.0005)]
    """

    user: UserSimulator
    assistant: Assistant
    task_metric: TaskMetric | None = None
    judge: InteractivityJudge | None = None
    window: int = 2
    n_samples: int = 3
    weights: Mapping[str, float] | None = None
    token_penalty: float = 5e-4
    count_tokens: Callable[[str], int] = approx_token_count
    extra_metrics: Mapping[str, TaskMetric] = field(default_factory=dict)

    def _weights(self) -> dict[str, float]:
        available = {"tokens", "token_cost", *self.extra_metrics}
        if self.task_metric is not None:
            available.add("task")
        if self.judge is not None:
            available.add("interactivity")
        if self.weights is None:
            return {k: w for k, w in PAPER_WEIGHTS.items() if k in available}
        unknown = set(self.weights) - available
        if unknown:
            raise ValueError(f"weights name metrics that are not configured: {sorted(unknown)}; "
                             f"available: {sorted(available)}")
        return dict(self.weights)

    def _check(self) -> None:
        if not isinstance(self.window, int) or self.window < 0:
            raise ValueError("window must be an int >= 0")
        if not isinstance(self.n_samples, int) or self.n_samples < 1:
            raise ValueError("n_samples must be an int >= 1")
        if not (self.token_penalty >= 0 and math.isfinite(self.token_penalty)):
            raise ValueError("token_penalty must be finite and >= 0")

    async def score(self, history: Sequence[Message], candidates: Sequence[str], *,
                    concurrent: bool = True) -> list[CandidateScore]:
        """MR of each candidate reply to ``history`` (which should end with a user message).

        ``concurrent=False`` scores candidates one after another (samples still in parallel),
        the way the official package's dataset builder does; it exists for benchmarks.
        """
        self._check()
        weights = self._weights()
        hist = validate_messages(history)
        if isinstance(candidates, str) or not candidates:
            raise ValueError("candidates must be a non-empty list of strings")
        if not all(isinstance(c, str) for c in candidates):
            raise TypeError("every candidate must be a string")

        async def one(c: str) -> list[SampleResult]:
            return list(await asyncio.gather(
                *(self._sample(hist, c, weights) for _ in range(self.n_samples))))

        if concurrent:
            per = await asyncio.gather(*(one(c) for c in candidates))
        else:
            per = [await one(c) for c in candidates]
        out = []
        for c, samples in zip(candidates, per, strict=True):
            mu, sd = mean_std([s.reward for s in samples])
            out.append(CandidateScore(c, mu, sd, samples))
        return out

    async def _sample(self, history: list[dict[str, Any]], candidate: str,
                      weights: Mapping[str, float]) -> SampleResult:
        conv = [*history, {"role": "assistant", "content": candidate}]
        failures: list[str] = []
        terminated = False
        for _ in range(self.window):
            turn = await self.user.respond(conv)
            failures.extend(f"user: {f}" for f in turn.failures)
            if turn.terminated:
                terminated = True
                break
            conv.append({"role": "user", "content": turn.text})
            try:
                text, _ = await self.assistant.respond(conv)
            except ChatModelError as exc:
                failures.append(f"assistant: {exc}")
                break
            conv.append({"role": "assistant", "content": text})
        followup = conv[len(history):]
        metrics, metric_failures = await self._metrics(history, conv, followup)
        failures.extend(metric_failures)
        return SampleResult(conv, len(followup) - 1, metrics, weighted_reward(metrics, weights),
                            terminated, failures)

    async def _metrics(self, history, conv, followup) -> tuple[dict[str, float], list[str]]:
        failures: list[str] = []
        tokens = float(sum(self.count_tokens(m["content"] or "") for m in followup))
        metrics = {"tokens": tokens, "token_cost": min(self.token_penalty * tokens, 1.0)}
        named: dict[str, TaskMetric] = dict(self.extra_metrics)
        if self.task_metric is not None:
            named["task"] = self.task_metric

        async def run(name: str, fn: TaskMetric) -> None:
            try:
                value = await _maybe_await(fn([dict(m) for m in conv]))
                metrics[name] = float(value)
            except Exception as exc:  # noqa: BLE001 - a failing metric must not sink the batch
                failures.append(f"metric {name}: {type(exc).__name__}: {exc}")
                metrics[name] = math.nan

        async def judge() -> None:
            assert self.judge is not None
            value, fails = await self.judge.score(history, followup)
            failures.extend(fails)
            metrics["interactivity"] = math.nan if value is None else value

        jobs = [run(k, f) for k, f in named.items()]
        if self.judge is not None:
            jobs.append(judge())
        await asyncio.gather(*jobs)
        return metrics, failures


# --------------------------------------------------------------------------- task metrics

def _assistant_texts(conv: Sequence[Message]) -> list[str]:
    return [m.get("content") or "" for m in conv if m.get("role") == "assistant"]


def bleu_task_metric(reference: str, *, extractor: Any = None) -> TaskMetric:
    """BLEU against ``reference`` of the final document: extracted from the whole conversation
    by ``extractor`` (an :class:`~icml25.collab.metrics.LLMExtractor`, as in the paper) or, by
    default, the last assistant message.

    Parameters
    ----------
    reference : str
        The goal document.
    extractor : LLMExtractor or None, default=None
        Extracts the final document from the conversation; ``None`` takes the last assistant
        message.

    Returns
    -------
    callable
        ``conversation -> float`` (async with an ``extractor``); 0 without assistant
        messages.

    Examples
    --------
    >>> metric = bleu_task_metric("the cat sat on the mat")
    >>> metric([{"role": "user", "content": "A sentence?"},
    ...         {"role": "assistant", "content": "the cat sat on the mat"}])
    1.0
    """
    if extractor is not None:
        async def extracted(conv: list[dict[str, Any]]) -> float:
            return bleu(await extractor.extract(conv), reference)
        return extracted

    def metric(conv: list[dict[str, Any]]) -> float:
        texts = _assistant_texts(conv)
        return bleu(texts[-1], reference) if texts else 0.0
    return metric


def math_task_metric(reference_answer: str, *, judge: Any = None, problem: str = "",
                     reference_solution: str = "") -> TaskMetric:
    """1.0 when the last assistant message's final answer equals ``reference_answer`` (sympy).

    With ``judge`` (an :class:`~icml25.collab.metrics.AccuracyJudge`), answers sympy cannot show
    equal are sent to the LLM judge (e.g. "x = 5 or 7" vs "{5, 7}"); a judge that returns no
    usable verdict counts as incorrect.

    Parameters
    ----------
    reference_answer : str
        The final answer to match.
    judge : AccuracyJudge or None, default=None
        LLM judge for answers sympy cannot show equal; ``None`` uses sympy alone.
    problem : str, default=""
        The problem, shown to the judge.
    reference_solution : str, default=""
        The solution shown to the judge; ``""`` shows ``reference_answer``.

    Returns
    -------
    callable
        ``conversation -> float`` in {0, 1} (async with a ``judge``).

    Examples
    --------
    >>> metric = math_task_metric("1/2")
    >>> conv = [{"role": "user", "content": "Half of 1?"}]
    >>> metric([*conv, {"role": "assistant", "content": "It is 0.5."}])
    1.0
    >>> metric([*conv, {"role": "assistant", "content": "It is 2."}])
    0.0
    """
    def sympy_check(conv: list[dict[str, Any]]) -> tuple[float, str]:
        texts = _assistant_texts(conv)
        if not texts:
            return 0.0, ""
        return float(math_equivalent(extract_final_answer(texts[-1]), reference_answer)), \
            texts[-1]

    if judge is None:
        return lambda conv: sympy_check(conv)[0]

    async def metric(conv: list[dict[str, Any]]) -> float:
        value, last = sympy_check(conv)
        if value == 1.0 or not last:
            return value
        verdict, _ = await judge.score(problem, reference_solution or reference_answer, last)
        return verdict or 0.0
    return metric


def code_task_metric(tests: Sequence[str], *, timeout_s: float = 10.0, memory_mb: int = 512,
                     extractor: Any = None) -> TaskMetric:
    """Pass rate of the final code, run in the sandbox in a worker thread (concurrent branches
    do not block the event loop). The code is extracted by ``extractor`` (an LLM, as in the
    paper) or, by default, is the last fenced code block any assistant message wrote.

    Parameters
    ----------
    tests : sequence of str
        Test snippets (asserts).
    timeout_s : float, default=10.0
        Wall-clock limit of each sandbox run; see :func:`run_code_tests`.
    memory_mb : int, default=512
        Address-space limit of each sandbox run, in MiB.
    extractor : LLMExtractor or None, default=None
        Extracts the final code from the conversation; ``None`` takes the last fenced block.

    Returns
    -------
    callable
        An async ``conversation -> float`` (the pass rate; 0 when there is no code).

    Examples
    --------
    >>> import asyncio
    >>> metric = code_task_metric(["assert f(2) == 4", "assert f(3) == 6"])
    >>> reply = "Here:\\n```python\\ndef f(x):\\n    return 2 * x\\n```"
    >>> asyncio.run(metric([{"role": "assistant", "content": reply}]))
    1.0
    """
    tests = list(tests)

    async def metric(conv: list[dict[str, Any]]) -> float:
        if extractor is not None:
            code = await extractor.extract(conv)
        else:
            code = next((last_code_block(t) for t in reversed(_assistant_texts(conv))
                         if "```" in t), "")
        if not code.strip():
            return 0.0
        return await asyncio.to_thread(code_pass_rate, code, tests, timeout_s=timeout_s,
                                       memory_mb=memory_mb)
    return metric
