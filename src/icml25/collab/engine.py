"""The data engine: grow conversations turn by turn with the MR-best reply.

For one task (hidden from the assistant, known to the simulated user): the simulated user opens;
then, until the user terminates or ``max_turns`` assistant turns are reached, each policy proposes
a reply (all concurrently), :class:`~icml25.collab.reward.MultiturnReward` scores them (all
branches concurrently), the turn is recorded as a :class:`~icml25.collab.dataset.ScoredTurn`,
and the best reply is appended. The next user message is taken from the best reply's longest
forward sample (as the official engine does), or asked from the simulator when no sample has one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from icml25.collab.chat import ChatModelError
from icml25.collab.dataset import ScoredTurn
from icml25.collab.reward import CandidateScore, MultiturnReward
from icml25.collab.simulator import Assistant, is_termination


@dataclass
class GrownConversation:
    """A finished conversation, its scored turns, and every failure met on the way.

    Parameters
    ----------
    messages : list of dict
        The whole conversation, opening user message first.
    turns : list of ScoredTurn
        One per scored assistant turn (empty for :func:`simulate_conversation`).
    terminated : bool
        Whether the simulated user ended the chat (rather than the turn limit or a failure).
    failures : list of str, default=[]
        Every unusable model output or failed call met on the way.

    Examples
    --------
    >>> g = GrownConversation([{"role": "user", "content": "hi"}], [], terminated=False)
    >>> len(g.messages), g.failures
    (1, [])
    """

    messages: list[dict[str, Any]]
    turns: list[ScoredTurn]
    terminated: bool
    failures: list[str] = field(default_factory=list)


def _next_user_message(best: CandidateScore, prefix_len: int) -> str | None:
    # The longest forward branch of the chosen reply that has a user message after it.
    branches = sorted(best.samples, key=lambda s: s.n_forward, reverse=True)
    for s in branches:
        after = s.conversation[prefix_len:]
        if after and after[0]["role"] == "user":
            return after[0]["content"]
    return None


async def grow_conversation(reward: MultiturnReward, policies: Sequence[Assistant], *,
                            max_turns: int = 6, conv_id: str = "") -> GrownConversation:
    """Grow one conversation; never raises on model failures (they are recorded).

    The simulated user of ``reward`` opens; each turn every policy proposes a reply, ``reward``
    scores them all, and the MR-best reply is kept. The next user message comes from the best
    reply's longest forward sample, or from the simulator when no sample has one.

    Parameters
    ----------
    reward : MultiturnReward
        Scores the candidates; its ``user`` is the simulated user.
    policies : sequence of Assistant
        The proposers, one candidate each per turn.
    max_turns : int, default=6
        Most assistant turns.
    conv_id : str, default=""
        Stored on each :class:`ScoredTurn`.

    Returns
    -------
    GrownConversation
        The conversation, one :class:`ScoredTurn` per assistant turn, and the failures.

    Raises
    ------
    ValueError
        If ``policies`` is empty or ``max_turns < 1``.

    Examples
    --------
    >>> import asyncio
    >>> from icml25.collab import (Assistant, MultiturnReward, ScriptedChatModel,
    ...                            UserSimulator)
    >>> user = ScriptedChatModel({"user": ['{"response": "Help me with a poem."}',
    ...                                    '{"response": "[[TERMINATE CHAT]]"}']})
    >>> brief = Assistant(ScriptedChatModel({"assistant": "Here is a poem."}))
    >>> asks = Assistant(ScriptedChatModel({"assistant": "What is it about?"}))
    >>> asked = lambda conv: float(conv[-1]["content"].endswith("?"))
    >>> mr = MultiturnReward(UserSimulator(user, "write a poem"), brief, task_metric=asked,
    ...                      window=0, n_samples=1)
    >>> g = asyncio.run(grow_conversation(mr, [brief, asks], max_turns=1, conv_id="c1"))
    >>> [m["content"] for m in g.messages], g.turns[0].candidates
    (['Help me with a poem.', 'What is it about?'], ['Here is a poem.', 'What is it about?'])
    """
    if not policies:
        raise ValueError("need at least one policy to propose replies")
    if max_turns < 1:
        raise ValueError("max_turns must be >= 1")
    failures: list[str] = []
    opening = await reward.user.respond([])
    failures.extend(opening.failures)
    messages: list[dict[str, Any]] = [{"role": "user", "content": opening.text}]
    turns: list[ScoredTurn] = []
    terminated = opening.terminated
    while not terminated and len(turns) < max_turns:
        proposals = await asyncio.gather(*(p.respond(messages) for p in policies),
                                         return_exceptions=True)
        candidates = []
        for p in proposals:
            if isinstance(p, ChatModelError):
                failures.append(f"policy: {p}")
            elif isinstance(p, BaseException):
                raise p
            else:
                candidates.append(p[0])
        if not candidates:
            break
        scores = await reward.score(messages, candidates)
        turns.append(ScoredTurn.from_scores(messages, scores, conv_id=conv_id))
        finite = [s for s in scores if s.mr == s.mr]  # drop NaN
        best = max(finite, key=lambda s: s.mr) if finite else scores[0]
        messages = [*messages, {"role": "assistant", "content": best.candidate}]
        if len(turns) >= max_turns:
            break
        text = _next_user_message(best, len(messages))
        if text is None:
            if any(s.terminated for s in best.samples):
                terminated = True
                break
            turn = await reward.user.respond(messages)
            failures.extend(turn.failures)
            text, terminated = turn.text, turn.terminated
            if terminated:
                break
        elif is_termination(text):
            terminated = True
            break
        messages.append({"role": "user", "content": text})
    return GrownConversation(messages, turns, terminated, failures)


async def simulate_conversation(user: Any, assistant: Assistant, *,
                                max_turns: int = 6) -> GrownConversation:
    """A plain simulated chat (no scoring): the user opens, then assistant and user alternate
    until the user terminates, the assistant fails, or ``max_turns`` assistant turns.

    Parameters
    ----------
    user : UserSimulator
        Anything with an async ``respond(messages) -> UserTurn``.
    assistant : Assistant
        The policy under evaluation.
    max_turns : int, default=6
        Most assistant turns.

    Returns
    -------
    GrownConversation
        The conversation (``turns`` is empty) and the failures.

    Raises
    ------
    ValueError
        If ``max_turns < 1``.

    Examples
    --------
    >>> import asyncio
    >>> from icml25.collab import Assistant, ScriptedChatModel, UserSimulator
    >>> llm = ScriptedChatModel({"user": ['{"response": "2+2?"}',
    ...                                   '{"response": "[[TERMINATE CHAT]]"}'],
    ...                          "assistant": "4."})
    >>> g = asyncio.run(simulate_conversation(UserSimulator(llm, "arithmetic"), Assistant(llm)))
    >>> [m["content"] for m in g.messages], g.terminated
    (['2+2?', '4.'], True)
    """
    if max_turns < 1:
        raise ValueError("max_turns must be >= 1")
    failures: list[str] = []
    turn = await user.respond([])
    failures.extend(turn.failures)
    messages: list[dict[str, Any]] = [{"role": "user", "content": turn.text}]
    terminated = turn.terminated
    n = 0
    while not terminated and n < max_turns:
        try:
            text, _ = await assistant.respond(messages)
        except ChatModelError as exc:
            failures.append(f"assistant: {exc}")
            break
        messages.append({"role": "assistant", "content": text})
        n += 1
        if n >= max_turns:
            break
        turn = await user.respond(messages)
        failures.extend(turn.failures)
        terminated = turn.terminated
        if not terminated:
            messages.append({"role": "user", "content": turn.text})
    return GrownConversation(messages, [], terminated, failures)
