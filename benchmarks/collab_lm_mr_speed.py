"""MR scoring speed on the shipped policy LM with the rule-based user (issue target: 16
candidates in under 10 s on 2 cores).

Scores ``--candidates`` sampled first replies of one held-out task with the paper's forward
sampling (window 2, 3 samples), twice side by side: with :class:`PolicyChat` gathering the
concurrent branches into shared batches, and with one generation per branch (what a plain
per-call model wrapper does). Prints both times and their ratio.

    python benchmarks/collab_lm_mr_speed.py [--model DIR] [--candidates 16] [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

import torch

from icml25.collab import lm_pipeline as lp
from icml25.collab import loop, world
from icml25.collab.policy import PolicyChat, PolicyLM
from icml25.collab.reward import MultiturnReward
from icml25.collab.simulator import Assistant


class OneAtATime(PolicyChat):
    """Every call generates on its own (no batching across concurrent branches)."""

    async def chat(self, messages, *, role="assistant", temperature=None, max_tokens=None):
        from icml25.collab.chat import ChatResult

        text = self.policy.generate([list(messages)], temperature=self.temperature,
                                    max_tokens=self.max_tokens, generator=self.generator)[0]
        await asyncio.sleep(0)
        return ChatResult(text, completion_tokens=len(text.split()) + 1)


def score(policy: PolicyLM, task, cands, chat_cls, window: int, samples: int) -> float:
    chat = chat_cls(policy, temperature=1.0, seed=0)
    mr = MultiturnReward(user=world.RuleUser(task), assistant=Assistant(chat),
                         task_metric=world.task_metric(task), window=window,
                         n_samples=samples, token_penalty=1e-3)
    t0 = time.perf_counter()
    asyncio.run(mr.score([{"role": "user", "content": task.request}], cands))
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=str(lp.stage_dirs(lp.SHIPPED_DIR)["sft"]))
    ap.add_argument("--candidates", type=int, default=16)
    ap.add_argument("--window", type=int, default=2)
    ap.add_argument("--samples", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    policy = PolicyLM.load(args.model)
    task = lp.held_out_tasks(1)[0]
    cfg = loop.LoopConfig(n_candidates=args.candidates)
    cands = loop.sample_candidates(policy, [task], cfg, seed=0)[0]
    batched, single = [], []
    for _ in range(args.repeats):  # alternate, so drift on a shared machine hits both
        batched.append(score(policy, task, cands, PolicyChat, args.window, args.samples))
        single.append(score(policy, task, cands, OneAtATime, args.window, args.samples))
    b, s = statistics.median(batched), statistics.median(single)
    print(f"threads {torch.get_num_threads()}; {args.candidates} candidates x "
          f"{args.samples} samples, window {args.window}")
    print(f"batched branches: median {b:.2f} s  {[round(x, 2) for x in batched]}")
    print(f"one at a time:    median {s:.2f} s  {[round(x, 2) for x in single]}")
    print(f"ratio (one at a time / batched): {s / b:.1f}x")


if __name__ == "__main__":
    main()
