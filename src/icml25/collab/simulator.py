"""The simulated user and the assistant wrapper used in forward sampling.

The user simulator sees a hidden task description and a hidden reference (the complete request
or goal artifact) that the assistant never sees. It is prompted to behave like a real user
(vague at first, reveals preferences when asked, makes occasional mistakes, stops when satisfied)
and to answer with JSON ``{current_answer, thought, response}``. Output is parsed tolerantly;
after ``max_retries`` unusable outputs or failed calls it falls back to a plain message and
records why (``UserTurn.failures``) instead of raising, so one bad sample never sinks a batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from icml25.collab.chat import ChatModel, ChatModelError, Message
from icml25.collab.parsing import extract_json_object

TERMINATION_SIGNAL = "[[TERMINATE CHAT]]"

USER_SYSTEM_PROMPT = """You are role-playing a human USER talking to an AI assistant.
Stay in character; never say you are an AI. Behave like a real user:
- minimise effort: start with a short, vague or incomplete request and let the assistant ask;
- reveal details, preferences and constraints (length, style, format, "I'm in a hurry") only
  gradually or when asked;
- you have a realistic knowledge level; you may miss the assistant's mistakes and occasionally
  make small mistakes yourself (typos, unclear phrasing);
- stay goal-oriented, no small talk; steer back when the conversation drifts;
- never copy the hidden task or goal verbatim.
When your goal is met, or the assistant clearly cannot help, reply with exactly
""" + TERMINATION_SIGNAL + """ as your response.
Answer ONLY with a JSON object:
{"current_answer": "<short summary of the assistant's current solution>",
 "thought": "<am I satisfied? what am I stuck on? did it ask me something? any misunderstanding?>",
 "response": "<your next message to the assistant>"}"""

USER_TURN_TEMPLATE = """## Task (hidden from the assistant)
{task}

## Your goal / complete request (hidden from the assistant; use it to decide what you want)
{reference}

## Conversation so far
{history}

{instruction}"""


def render_history(messages: Sequence[Message]) -> str:
    """Conversation as text with bold role names (system messages dropped)."""
    lines = [f"**{m['role']}**: {m.get('content') or ''}" for m in messages
             if m.get("role") != "system"]
    return "\n\n".join(lines) if lines else "(empty)"


def is_termination(text: str | None) -> bool:
    """True when a user message ends the conversation."""
    return bool(text) and TERMINATION_SIGNAL in text


@dataclass
class UserTurn:
    """One simulated user message; ``failures`` lists every unusable output or failed call.

    Parameters
    ----------
    text : str
        The user's message.
    terminated : bool
        Whether it carries the termination signal ``[[TERMINATE CHAT]]``.
    parsed : bool
        Whether it came from output in the JSON contract (else salvaged or the fallback).
    failures : list of str, default=[]
        Every unusable output or failed call before this message.
    tokens : int, default=0
        Completion tokens spent on it, retries included.
    fallback : bool, default=False
        Whether the retries ran out (the text is salvaged prose or the fallback message).

    Examples
    --------
    >>> import asyncio
    >>> from icml25.collab import ScriptedChatModel, UserSimulator
    >>> llm = ScriptedChatModel({"user": '{"response": "Thanks! [[TERMINATE CHAT]]"}'})
    >>> turn = asyncio.run(UserSimulator(llm, task="x").respond([]))
    >>> turn.terminated, turn.parsed, turn.fallback
    (True, True, False)
    """

    text: str
    terminated: bool
    parsed: bool
    failures: list[str] = field(default_factory=list)
    tokens: int = 0
    fallback: bool = False


@dataclass
class UserSimulator:
    """A simulated user with a hidden task and reference.

    ``respond(conversation)`` returns the next user message for a conversation whose messages
    are from the assistant's point of view. ``fallback_message`` is sent when every retry failed
    and no plain text was salvageable.

    Parameters
    ----------
    model : ChatModel
        The LLM that plays the user.
    task : str
        The user's hidden task (e.g. "write a blog post").
    reference : str, default=""
        What the user secretly wants (the reference document, answer or code).
    max_retries : int, default=3
        Attempts at an output in the JSON contract before salvaging plain text.
    temperature : float or None, default=1.0
        Sampling temperature of the user model.
    max_tokens : int or None, default=1024
        Token cap of each user message.
    fallback_message : str, default="Can you continue, please?"
        Sent when nothing usable came back.

    Examples
    --------
    >>> import asyncio
    >>> from icml25.collab import ScriptedChatModel
    >>> llm = ScriptedChatModel({"user": '{"response": "Make it about bees, 300 words."}'})
    >>> user = UserSimulator(llm, task="write a blog post", reference="a post about bees")
    >>> turn = asyncio.run(user.respond([{"role": "assistant", "content": "What topic?"}]))
    >>> turn.text, turn.parsed, turn.terminated
    ('Make it about bees, 300 words.', True, False)

    Output that breaks the contract is retried, then salvaged, never raised:

    >>> bad = UserSimulator(ScriptedChatModel({"user": "not json {"}), task="x", max_retries=2)
    >>> turn = asyncio.run(bad.respond([]))
    >>> turn.parsed, len(turn.failures)
    (False, 2)
    """

    model: ChatModel
    task: str
    reference: str = ""
    max_retries: int = 3
    temperature: float | None = 1.0
    max_tokens: int | None = 1024
    fallback_message: str = "Can you continue, please?"

    def prompt(self, conversation: Sequence[Message]) -> list[dict[str, str]]:
        instruction = ("Open the conversation with your first (vague) request." if not any(
            m.get("role") == "assistant" for m in conversation)
            else "Write your next message to the assistant.")
        body = USER_TURN_TEMPLATE.format(task=self.task, reference=self.reference or "(none)",
                                         history=render_history(conversation),
                                         instruction=instruction)
        return [{"role": "system", "content": USER_SYSTEM_PROMPT},
                {"role": "user", "content": body}]

    async def respond(self, conversation: Sequence[Message]) -> UserTurn:
        """Next user turn; never raises on bad model output or a failing endpoint."""
        failures: list[str] = []
        salvage: str | None = None
        tokens = 0
        msgs = self.prompt(conversation)
        for attempt in range(1, max(1, self.max_retries) + 1):
            try:
                res = await self.model.chat(msgs, role="user", temperature=self.temperature,
                                            max_tokens=self.max_tokens)
            except ChatModelError as exc:
                failures.append(f"attempt {attempt}: call failed: {exc}")
                continue
            tokens += res.completion_tokens
            text = _parse_user_output(res.text)
            if text is not None:
                return UserTurn(text, is_termination(text), True, failures, tokens)
            raw = (res.text or "").strip()
            reason = "null content" if res.null_content else f"unparseable output {raw[:80]!r}"
            failures.append(f"attempt {attempt}: {reason}")
            if raw and not raw.lstrip().startswith(("{", "[", "```")):
                salvage = raw  # plain prose is still a usable user message
        text = salvage if salvage else self.fallback_message
        return UserTurn(text, is_termination(text), False, failures, tokens, fallback=True)


def _parse_user_output(raw: str | None) -> str | None:
    obj = extract_json_object(raw)
    if obj is None:
        return None
    for key in ("response", "message", "user_response", "reply"):
        value = obj.get(key)
        if value is not None and not isinstance(value, (dict, list)):
            text = str(value).strip()
            if text:
                return text
    return None


@dataclass
class Assistant:
    """The policy side of a simulated conversation: a model plus an optional system prompt.

    ``await assistant.respond(conversation)`` drops the conversation's system messages, puts
    ``system_prompt`` first, and returns ``(text, completion_tokens)``; it raises
    :class:`ChatModelError` when the model fails after its retries.

    Parameters
    ----------
    model : ChatModel
        The policy LLM (called with role ``"assistant"``).
    system_prompt : str or None, default=None
        The system prompt, e.g. :data:`PROACTIVE_SYSTEM_PROMPT`.
    temperature : float or None, default=0.8
        Sampling temperature.
    max_tokens : int or None, default=2048
        Token cap of each reply.

    Examples
    --------
    >>> import asyncio
    >>> from icml25.collab import PROACTIVE_SYSTEM_PROMPT, ScriptedChatModel
    >>> llm = ScriptedChatModel({"assistant": "Sure. How long should it be?"})
    >>> a = Assistant(llm, system_prompt=PROACTIVE_SYSTEM_PROMPT)
    >>> asyncio.run(a.respond([{"role": "user", "content": "Write a poem."}]))
    ('Sure. How long should it be?', 8)
    >>> [m["role"] for m in llm.log[0][1]]
    ['system', 'user']
    """

    model: ChatModel
    system_prompt: str | None = None
    temperature: float | None = 0.8
    max_tokens: int | None = 2048

    async def respond(self, conversation: Sequence[Message]) -> tuple[str, int]:
        """Reply text and its token count. Raises :class:`ChatModelError` after retries."""
        msgs: list[Any] = [dict(m) for m in conversation if m.get("role") != "system"]
        if self.system_prompt:
            msgs.insert(0, {"role": "system", "content": self.system_prompt})
        res = await self.model.chat(msgs, role="assistant", temperature=self.temperature,
                                    max_tokens=self.max_tokens)
        return res.text, res.completion_tokens


PROACTIVE_SYSTEM_PROMPT = (
    "You are a collaborative assistant. Optimise for the user's long-term goal, not just this "
    "turn: when the request is ambiguous (length, format, audience, constraints) ask one or two "
    "specific clarifying questions, ideally with concrete options; otherwise give a concise, "
    "complete answer and offer a concrete next step. Do not repeat yourself; be honest.")
