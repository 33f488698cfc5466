"""The CollabLLM training loop on a small policy language model (needs ``torch``).

Stages, each measured on held-out tasks (:func:`evaluate`):

1. **SFT** (:func:`train_sft`): demonstrations that ask first half of the time and guess the
   rest (:func:`icml25.collab.world.demonstrations`) — fluent, not yet strategic.
2. **Offline DPO** (:func:`offline_dpo`): candidates sampled once from the SFT policy, scored by
   the multiturn-aware reward (:class:`icml25.collab.reward.MultiturnReward`, forward-sampled with
   the rule-based user and the policy itself), pairs chosen = highest MR, rejected = lowest.
3. **Online DPO** (:func:`online_dpo`): the same, with fresh candidates from the current policy
   each round (the paper's best variant); every round is saved and resumes exactly.

The reward is ``task - min(lambda * tokens, 1)``: the paper-era form without its LLM-judged
interactivity term, so asking is rewarded only through what it does for the outcome within the
window — which is exactly what the window ablation (w = 0 vs 1 vs 2) tests.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from icml25.collab import online, world
from icml25.collab.policy import PolicyLM, WordTokenizer, conversation_rows
from icml25.collab.worlds import AskOrGuess
from icml25.core.stats import clopper_pearson, mean_interval


@dataclasses.dataclass(frozen=True)
class LoopConfig:
    """Settings of the MR scoring and the DPO updates (paper: beta 0.1; window 2, 3 samples)."""

    window: int = 2
    n_samples: int = 2
    n_candidates: int = 2  # the paper: one proactive and one plain candidate per turn
    temperature: float = 1.0
    token_penalty: float = 1e-3
    min_gap: float = 0.1  # keep a pair only if MR(chosen) - MR(rejected) >= min_gap (paper: 0.1)
    beta: float = 0.1
    lr: float = 1e-4
    epochs: int = 2
    batch_size: int = 32
    max_tokens: int = 32

    def __post_init__(self) -> None:
        if self.window < 0 or self.n_samples < 1 or self.n_candidates < 2:
            raise ValueError("need window >= 0, n_samples >= 1 and n_candidates >= 2")
        if not (self.beta > 0 and self.lr > 0):
            raise ValueError("beta and lr must be positive")


_WORLD = AskOrGuess()

# --------------------------------------------------------------------------- SFT

def build_tokenizer(seed: int = 0, n: int = 3000) -> WordTokenizer:
    """Vocabulary from generated dialogues of every kind and option (so no reply is unknown)."""
    rng = np.random.default_rng(seed)
    texts = []
    for t in world.make_tasks(n, seed):
        for conv in (world.demonstrations(t, rng, ask_rate=1.0),
                     world.demonstrations(t, rng, ask_rate=0.0)):
            texts += [m["content"] for m in conv]
        texts += [world.THANKS, world.GIVE_UP, f"i just need it done . {t.request}",
                  f"never mind . {world.TERMINATION_SIGNAL}"]
        texts += [t.answer(o) for o in t.spec.options]
    return WordTokenizer.train(texts)


def demonstration_rows(tasks: Sequence[world.FormatTask], seed: int, ask_rate: float = 0.5
             ) -> list[tuple[list[dict[str, Any]], str]]:
    rng = np.random.default_rng(seed)
    rows = []
    for t in tasks:
        rows += conversation_rows(world.demonstrations(t, rng, ask_rate))
    return rows


def train_sft(policy: PolicyLM, tasks: Sequence[world.FormatTask], *, steps: int,
              batch_size: int = 64, lr: float = 2e-3, seed: int = 0, ask_rate: float = 0.5
              ) -> list[float]:
    """Supervised fine-tuning on demonstrations; returns the loss every 50 steps."""
    rows = demonstration_rows(tasks, seed, ask_rate)
    if not rows:
        raise ValueError("no SFT rows: give at least one task")
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(policy.model.parameters(), lr=lr, weight_decay=0.01)
    policy.model.train()
    log = []
    for step in range(steps):
        idx = torch.randint(len(rows), (batch_size,), generator=gen).tolist()
        ids, mask = policy.reply_batch([rows[i][0] for i in idx], [rows[i][1] for i in idx])
        for g in opt.param_groups:  # linear warm-up, cosine decay
            warm = min(1.0, (step + 1) / 50)
            g["lr"] = lr * warm * 0.5 * (1 + math.cos(math.pi * step / max(1, steps)))
        loss = policy.token_loss(ids, mask)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.model.parameters(), 1.0)
        opt.step()
        if step % 50 == 0 or step == steps - 1:
            log.append(float(loss.detach()))
    policy.model.eval()
    return log


# --------------------------------------------------------------------------- MR and pairs

def multiturn_rewards(policy: PolicyLM, tasks: Sequence[world.FormatTask],
                      candidates: Sequence[Sequence[str]], cfg: LoopConfig, seed: int = 0
                      ) -> list[list[float]]:
    """MR of each candidate first reply, per task (all branches generated in shared batches)."""
    histories = [_WORLD.opening(t) for t in tasks]
    scores = online.score_candidates(policy, _WORLD, tasks, histories, candidates, cfg, seed)
    return [[s.mr for s in row] for row in scores]


def sample_candidates(policy: PolicyLM, tasks: Sequence[world.FormatTask], cfg: LoopConfig,
                      seed: int) -> list[list[str]]:
    return online.sample_candidates(policy, [_WORLD.opening(t) for t in tasks], cfg, seed)


def preference_pairs(tasks: Sequence[world.FormatTask], candidates: Sequence[Sequence[str]],
                     rewards: Sequence[Sequence[float]], min_gap: float) -> list[dict[str, Any]]:
    """Chosen = highest MR, rejected = lowest per task, when they differ by ``min_gap`` (the
    data engine's rule, :func:`icml25.collab.dataset.select_dpo_pair`) and by their text."""
    return online.preference_pairs([_WORLD.opening(t) for t in tasks], candidates, rewards,
                                   min_gap)


def collect_pairs(policy: PolicyLM, tasks: Sequence[world.FormatTask], cfg: LoopConfig,
                  seed: int) -> list[dict[str, Any]]:
    return online.collect_round(policy, _WORLD, tasks, cfg, seed).pairs


# --------------------------------------------------------------------------- DPO

def dpo_margins(policy: PolicyLM, reference: torch.nn.Module, pairs: Sequence[dict[str, Any]]
                ) -> torch.Tensor:
    """``(log pi/ref)(chosen) - (log pi/ref)(rejected)`` per pair (differentiable in pi)."""
    prompts = [p["prompt"] for p in pairs]
    ids_c, m_c = policy.reply_batch(prompts, [p["chosen"] for p in pairs])
    ids_r, m_r = policy.reply_batch(prompts, [p["rejected"] for p in pairs])
    with torch.no_grad():
        ref_c = policy.sequence_logprob(ids_c, m_c, reference)
        ref_r = policy.sequence_logprob(ids_r, m_r, reference)
    return ((policy.sequence_logprob(ids_c, m_c) - ref_c)
            - (policy.sequence_logprob(ids_r, m_r) - ref_r))


def dpo_step(policy: PolicyLM, reference: torch.nn.Module, opt: torch.optim.Optimizer,
             pairs: Sequence[dict[str, Any]], cfg: LoopConfig, gen: torch.Generator) -> float:
    """``epochs`` passes of DPO over ``pairs``; returns the last minibatch loss."""
    policy.model.train()
    loss_value = math.nan
    for _ in range(cfg.epochs):
        order = torch.randperm(len(pairs), generator=gen).tolist()
        for i in range(0, len(order), cfg.batch_size):
            batch = [pairs[j] for j in order[i:i + cfg.batch_size]]
            loss = -F.logsigmoid(cfg.beta * dpo_margins(policy, reference, batch)).mean()
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.model.parameters(), 1.0)
            opt.step()
            loss_value = float(loss.detach())
    policy.model.eval()
    return loss_value


def _frozen(policy: PolicyLM) -> torch.nn.Module:
    ref = copy.deepcopy(policy.model).eval()
    for p in ref.parameters():
        p.requires_grad_(False)
    return ref


def offline_dpo(policy: PolicyLM, tasks: Sequence[world.FormatTask], cfg: LoopConfig, *,
                seed: int = 0) -> dict[str, Any]:
    """Pairs from the policy as given (once), then DPO against a frozen copy of it."""
    reference = _frozen(policy)
    pairs = collect_pairs(policy, tasks, cfg, seed)
    if not pairs:
        raise ValueError("no DPO pairs: every task's candidates had MR within min_gap of "
                         "each other")
    opt = torch.optim.AdamW(policy.model.parameters(), lr=cfg.lr, weight_decay=0.0)
    loss = dpo_step(policy, reference, opt, pairs, cfg, torch.Generator().manual_seed(seed))
    return {"pairs": len(pairs), "loss": loss}


ROUND_STATE = "online_state.pt"


def online_dpo(policy: PolicyLM, task_pool: Sequence[world.FormatTask], cfg: LoopConfig, *,
               rounds: int, tasks_per_round: int, seed: int = 0,
               out_dir: str | Path | None = None, reference: torch.nn.Module | None = None
               ) -> list[dict[str, Any]]:
    """Online DPO: each round samples fresh candidates from the current policy.

    With ``out_dir`` the policy, optimizer and log are saved after every round and a later call
    resumes after the last saved round (round r always uses seed ``seed + r``, so a resumed run
    equals an uninterrupted one). ``reference`` defaults to a frozen copy of the starting policy
    (saved too, so a resume keeps the same reference).
    """
    if not task_pool:
        raise ValueError("online DPO needs tasks")
    state_path = Path(out_dir) / ROUND_STATE if out_dir else None
    opt = torch.optim.AdamW(policy.model.parameters(), lr=cfg.lr, weight_decay=0.0)
    log: list[dict[str, Any]] = []
    if state_path is not None and state_path.exists():
        state = torch.load(state_path, weights_only=False)
        policy.model.load_state_dict(state["policy"])
        opt.load_state_dict(state["optimizer"])
        reference = _frozen(policy)
        reference.load_state_dict(state["reference"])
        log = state["log"]
    if reference is None:
        reference = _frozen(policy)
    ref = reference

    def train(pairs: list[dict[str, Any]], round_seed: int) -> float:
        return dpo_step(policy, ref, opt, pairs, cfg, torch.Generator().manual_seed(round_seed))

    def save(log: list[dict[str, Any]], _data: Any) -> None:
        if state_path is None:
            return
        state_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = state_path.with_suffix(".tmp")
        torch.save({"policy": policy.model.state_dict(), "optimizer": opt.state_dict(),
                    "reference": ref.state_dict(), "log": log}, tmp)
        tmp.replace(state_path)

    return online.run_rounds(policy, _WORLD, task_pool, cfg, rounds=rounds,
                             tasks_per_round=tasks_per_round, seed=seed, train=train, log=log,
                             save=save)


# --------------------------------------------------------------------------- evaluation

def rollout(policy: PolicyLM, tasks: Sequence[world.FormatTask], *, temperature: float = 1.0,
            max_turns: int = 3, seed: int = 0, max_tokens: int = 32
            ) -> list[list[dict[str, Any]]]:
    """Whole conversations with the rule-based user, all tasks stepped together in batches."""
    return online.rollout(policy, _WORLD, tasks, temperature=temperature, max_turns=max_turns,
                          max_tokens=max_tokens, seed=seed)


def evaluate(policy: PolicyLM, tasks: Sequence[world.FormatTask], *, seed: int = 0,
             temperature: float = 1.0, token_penalty: float = 1e-3) -> dict[str, Any]:
    """Task success, interactivity (useful clarifying question first), assistant tokens per
    chat and the conversation reward ``task - min(lambda * tokens, 1)``, with 95% intervals
    (Clopper-Pearson for the two rates, Student t for the means)."""
    if not tasks:
        raise ValueError("no evaluation tasks")
    convs = rollout(policy, tasks, temperature=temperature, seed=seed)
    success = [world.task_success(t, c) for t, c in zip(tasks, convs, strict=True)]
    asked = [world.useful_question(t, c) for t, c in zip(tasks, convs, strict=True)]
    tokens = [sum(len((m["content"] or "").split()) for m in c if m["role"] == "assistant")
              for c in convs]
    reward = [s - min(token_penalty * k, 1.0) for s, k in zip(success, tokens, strict=True)]
    n = len(tasks)
    return {"n": n,
            "success": float(np.mean(success)),
            "success_ci": list(clopper_pearson(int(sum(success)), n)),
            "interactivity": float(np.mean(asked)),
            "interactivity_ci": list(clopper_pearson(int(sum(asked)), n)),
            "tokens": float(np.mean(tokens)), "tokens_ci": list(mean_interval(tokens)),
            "reward": float(np.mean(reward)), "reward_ci": list(mean_interval(reward)),
            "examples": [convs[i] for i in range(min(3, n))]}
