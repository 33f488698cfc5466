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
    """A finished conversation, its scored turns, and every failure met on the way."""

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
    """Grow one conversation; never raises on model failures (they are recorded)."""
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
    until the user terminates, the assistant fails, or ``max_turns`` assistant turns."""
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
