"""One round structure for online DPO, shared by every policy (needs ``torch``).

A round, for the tasks drawn with seed ``seed + r`` from the pool:

1. **sample**: ``n_candidates`` first replies per task from the current policy, all in one
   batched generation (``policy.generate(conversations, temperature=, max_tokens=,
   generator=)``, the interface of :class:`icml25.collab.policy.PolicyLM` and
   :class:`icml25.collab.hf_online.HFPolicy`);
2. **score**: the multiturn-aware reward of each candidate
   (:class:`icml25.collab.reward.MultiturnReward`) against the world's user (rule-based, or any
   ``ChatModel`` user simulator), continuations played by the same policy, every branch of every
   task gathered into shared batches (:class:`icml25.collab.policy.PolicyChat`);
3. **pair**: chosen = highest MR, rejected = lowest, when they differ by ``min_gap``;
4. **train**: one DPO update on the pairs (the caller's ``train(pairs, seed)``);
5. **checkpoint**: the caller's ``save(log)`` after each round; a resumed run skips the rounds in
   the saved log and, since round r uses only seed ``seed + r`` and the saved state, equals an
   uninterrupted run.

:func:`icml25.collab.loop.online_dpo` (the in-repo policy model, exact DPO in torch) and
:func:`icml25.collab.hf_online.train_online` (any transformers causal LM, DPO with TRL and LoRA)
both run :func:`run_rounds`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from icml25.collab.dataset import ScoredTurn, select_dpo_pair
from icml25.collab.policy import PolicyChat
from icml25.collab.reward import CandidateScore, MultiturnReward
from icml25.collab.simulator import Assistant


@dataclasses.dataclass
class RoundData:
    """What one round collected: tasks, candidates, their scores, the pairs, and the wall and
    process-CPU seconds spent generating candidates, computing the rewards and in DPO."""

    tasks: list[Any]
    histories: list[list[dict[str, Any]]]
    candidates: list[list[str]]
    scores: list[list[CandidateScore]]
    pairs: list[dict[str, Any]]
    seconds: dict[str, float]
    cpu_seconds: dict[str, float] = dataclasses.field(default_factory=dict)

    @property
    def rewards(self) -> list[list[float]]:
        return [[s.mr for s in row] for row in self.scores]


def sample_candidates(policy: Any, histories: Sequence[Sequence[dict[str, Any]]], cfg: Any,
                      seed: int) -> list[list[str]]:
    """``cfg.n_candidates`` replies to each history, sampled in one batch with ``seed``."""
    gen = torch.Generator().manual_seed(seed)
    convs = [list(h) for h in histories for _ in range(cfg.n_candidates)]
    texts = policy.generate(convs, temperature=cfg.temperature, max_tokens=cfg.max_tokens,
                            generator=gen)
    k = cfg.n_candidates
    return [texts[i * k:(i + 1) * k] for i in range(len(histories))]


async def _score_all(policy: Any, world: Any, tasks: Sequence[Any],
                     histories: Sequence[Sequence[dict[str, Any]]],
                     candidates: Sequence[Sequence[str]], cfg: Any, seed: int,
                     user: Callable[[Any], Any] | None) -> list[list[CandidateScore]]:
    chat = PolicyChat(policy, temperature=cfg.temperature, max_tokens=cfg.max_tokens, seed=seed)
    assistant = Assistant(chat, temperature=cfg.temperature, max_tokens=cfg.max_tokens)
    make_user = user or world.user

    async def one(task: Any, history: Sequence[dict[str, Any]], cands: Sequence[str]
                  ) -> list[CandidateScore]:
        mr = MultiturnReward(user=make_user(task), assistant=assistant,
                             task_metric=world.metric(task), window=cfg.window,
                             n_samples=cfg.n_samples, token_penalty=cfg.token_penalty)
        return await mr.score(list(history), list(cands))

    return list(await asyncio.gather(*(one(t, h, c) for t, h, c in zip(
        tasks, histories, candidates, strict=True))))


def score_candidates(policy: Any, world: Any, tasks: Sequence[Any],
                     histories: Sequence[Sequence[dict[str, Any]]],
                     candidates: Sequence[Sequence[str]], cfg: Any, seed: int,
                     user: Callable[[Any], Any] | None = None) -> list[list[CandidateScore]]:
    """The multiturn-aware reward of every candidate (``user(task)``: the simulated user,
    default the world's rule-based one)."""
    return asyncio.run(_score_all(policy, world, tasks, histories, candidates, cfg, seed, user))


def preference_pairs(histories: Sequence[Sequence[dict[str, Any]]],
                     candidates: Sequence[Sequence[str]], rewards: Sequence[Sequence[float]],
                     min_gap: float) -> list[dict[str, Any]]:
    """Chosen = highest MR, rejected = lowest per history, when they differ by ``min_gap`` (the
    data engine's rule, :func:`icml25.collab.dataset.select_dpo_pair`) and by their text.

    Examples
    --------
    >>> h = [[{"role": "user", "content": "hi"}]]
    >>> [(p["chosen"], p["rejected"]) for p in preference_pairs(h, [["a", "b"]], [[0.2, 0.9]],
    ...                                                           0.1)]
    [('b', 'a')]
    """
    pairs = []
    for hist, cands, mrs in zip(histories, candidates, rewards, strict=True):
        turn = ScoredTurn([dict(m) for m in hist], list(cands), list(mrs))
        row = select_dpo_pair(turn, min_gap)
        if row is None:
            continue
        chosen, rejected = row["chosen"][0]["content"], row["rejected"][0]["content"]
        if chosen != rejected:
            pairs.append({"prompt": row["prompt"], "chosen": chosen, "rejected": rejected,
                          "mr_chosen": row["score_chosen"], "mr_rejected": row["score_rejected"]})
    return pairs


def collect_round(policy: Any, world: Any, tasks: Sequence[Any], cfg: Any, seed: int,
                  user: Callable[[Any], Any] | None = None) -> RoundData:
    """Steps 1-3 of a round (module docstring): candidates with ``seed``, rewards with
    ``seed + 1``, pairs."""
    histories = [world.opening(t) for t in tasks]
    t0, c0 = time.perf_counter(), time.process_time()
    cands = sample_candidates(policy, histories, cfg, seed)
    t1, c1 = time.perf_counter(), time.process_time()
    scores = score_candidates(policy, world, tasks, histories, cands, cfg, seed + 1, user)
    t2, c2 = time.perf_counter(), time.process_time()
    data = RoundData(list(tasks), histories, cands, scores, [], {})
    data.pairs = preference_pairs(histories, cands, data.rewards, cfg.min_gap)
    data.seconds = {"generate": t1 - t0, "reward": t2 - t1}
    data.cpu_seconds = {"generate": c1 - c0, "reward": c2 - c1}
    return data


def rollout(policy: Any, world: Any, tasks: Sequence[Any], *, temperature: float = 1.0,
            max_turns: int = 3, max_tokens: int = 32, seed: int = 0
            ) -> list[list[dict[str, Any]]]:
    """Whole conversations of ``policy`` with the world's rule-based user, all tasks stepped
    together: each turn is one batched ``policy.generate`` over the conversations still open."""
    gen = torch.Generator().manual_seed(seed)
    users = [world.user(t, max_turns=max_turns) for t in tasks]
    convs = [list(world.opening(t)) for t in tasks]
    live = list(range(len(tasks)))
    for _ in range(max_turns + 1):
        if not live:
            break
        replies = policy.generate([convs[i] for i in live], temperature=temperature,
                                  max_tokens=max_tokens, generator=gen)
        still = []
        for i, text in zip(live, replies, strict=True):
            convs[i].append({"role": "assistant", "content": text})
            msg, ended = users[i].reply(convs[i])
            if not ended:
                convs[i].append({"role": "user", "content": msg})
                still.append(i)
        live = still
    return convs


def draw_tasks(pool: Sequence[Any], n: int, seed: int) -> list[Any]:
    """``min(n, len(pool))`` distinct tasks of the pool, drawn with ``seed``."""
    rng = np.random.default_rng(seed)
    return [pool[i] for i in rng.choice(len(pool), size=min(n, len(pool)), replace=False)]


def run_rounds(policy: Any, world: Any, pool: Sequence[Any], cfg: Any, *, rounds: int,
               tasks_per_round: int, seed: int, train: Callable[[list[dict[str, Any]], int],
                                                                float],
               log: list[dict[str, Any]] | None = None,
               save: Callable[[list[dict[str, Any]], RoundData], None] | None = None,
               record: Callable[[int, RoundData, float], dict[str, Any]] | None = None,
               user: Callable[[Any], Any] | None = None) -> list[dict[str, Any]]:
    """Online DPO rounds ``len(log) .. rounds - 1`` (see the module docstring).

    Parameters
    ----------
    policy : has ``generate(conversations, temperature=, max_tokens=, generator=)``.
    world : a task world (:mod:`icml25.collab.worlds`).
    pool : the tasks each round draws from.
    cfg : window, n_samples, n_candidates, temperature, token_penalty, min_gap, max_tokens.
    rounds, tasks_per_round, seed : round r draws its tasks and samples with ``seed + r``.
    train : ``train(pairs, seed) -> loss``, one DPO update (not called without pairs).
    log : the rounds already done (a resumed run); they are skipped.
    save : ``save(log, data)`` after each round (checkpoint).
    record : ``record(r, data, loss) -> dict``: more keys for the round's log entry.
    user : ``user(task)``: the simulated user (default: the world's rule-based user).

    Returns
    -------
    list of dict
        One entry per round: round, pairs, loss (NaN without pairs), chosen_questions, and the
        keys ``record`` adds.

    Raises
    ------
    ValueError
        Without tasks.
    """
    if not pool:
        raise ValueError("online DPO needs tasks")
    log = list(log or [])
    for r in range(len(log), rounds):
        tasks = draw_tasks(pool, tasks_per_round, seed + r)
        data = collect_round(policy, world, tasks, cfg, seed + r, user)
        t0, c0 = time.perf_counter(), time.process_time()
        loss = train(data.pairs, seed + r) if data.pairs else math.nan
        data.seconds["dpo"] = time.perf_counter() - t0
        data.cpu_seconds["dpo"] = time.process_time() - c0
        asked = sum(bool(world.is_question(p["chosen"])) for p in data.pairs)
        entry = {"round": r, "pairs": len(data.pairs), "loss": loss, "chosen_questions": asked}
        if record is not None:
            entry.update(record(r, data, loss))
        log.append(entry)
        if save is not None:
            save(log, data)
    return log

