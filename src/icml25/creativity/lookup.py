"""The chain-start lookup stage: a pretrained start for Line and Circle models.

From scratch, a small model learns the local rule of Line and Circle (a tail not yet left, a
head not yet entered) and, with token shift, the one-hop lookup; the global rule (the head of
an edge may not be the start of the chain its tail ends, or the edge closes a cycle) needs the
lookup over up to 8 hops, and the task's own objective gives it only a weak signal
(docs/creativity.md, "What it took"). The paper's models start from pretrained GPT-2 / SEDD
instead. We have no such checkpoint, so this stage stands in for it: on freshly generated
answers (never the task's training lines; the seeds are fresh too), an auxiliary linear head on
the final hidden states learns, for every node token, the start of its chain among the edges
the model sees:

- causal layout (ntp, teacherless): at both tokens of edge ``u v``, the start of the chain
  ``u`` ends, given the edges before it (where ``v`` is chosen, and the record a later lookup
  can reuse);
- absorbing diffusion: the answer partly masked as in training; at every visible node token,
  the start of its chain among the edges whose two nodes are both visible.

There is no language-model loss: the model's own head is untouched and never sees an answer.
The saved transformer (the auxiliary head dropped) starts a method's training through
``TrainSettings.init_from``; every method of one task can share it, as the paper's methods
share GPT-2.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from icml25.creativity.methods import IGNORE, Vocab, build_rows, get_method
from icml25.creativity.tasks import Task
from icml25.nn import Transformer, train

LAYOUTS = ("ntp", "teacherless", "diffusion")  # the methods the stage has a layout for
HELD_OUT = 512  # answers the accuracy is measured on


def chain_starts(nodes: list[int | None], causal: bool) -> list[tuple[int, int, int]]:
    """``nodes`` holds an answer's node ids in edge order (``u0 v0 u1 v1 ...``; ``None`` where
    a node is masked). Returns ``(index into nodes, the start's id, hops back to it)``.

    Causal: both nodes of edge k get the start of the chain ``u_k`` ends, among edges < k.
    Otherwise: every visible node gets the start of its chain among the fully visible edges
    (a node on a closed cycle has no start and is left out)."""
    out: list[tuple[int, int, int]] = []
    pred: dict[int, int] = {}

    def start_of(x: int) -> tuple[int, int] | None:
        s, hops = x, 0
        while s in pred:
            s, hops = pred[s], hops + 1
            if s == x:
                return None
        return s, hops

    if causal:
        for k in range(0, len(nodes) - 1, 2):
            u, v = nodes[k], nodes[k + 1]
            s = start_of(u)
            if s is not None:
                out += [(k, *s), (k + 1, *s)]
            pred[v] = u
        return out
    for k in range(0, len(nodes) - 1, 2):
        if nodes[k] is not None and nodes[k + 1] is not None:
            pred[nodes[k + 1]] = nodes[k]
    for i, x in enumerate(nodes):
        if x is not None and (s := start_of(x)) is not None:
            out.append((i, *s))
    return out


class LookupModel(nn.Module):
    """A transformer with an auxiliary head (one logit per token id) on its hidden states."""

    def __init__(self, net: Transformer) -> None:
        super().__init__()
        self.net = net
        self.aux = nn.Linear(net.cfg.d_model, net.cfg.vocab_size)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        return self.aux(self.net.hidden(idx))


def lookup_batch(task: Task, vocab: Vocab, method: str, seed_len: int, n: int, width: int,
                 rng: np.random.Generator, gen: torch.Generator):
    """``n`` fresh answers in ``method``'s layout: (inputs, chain-start targets, hops; the
    last two -100 / -1 where there is nothing to predict)."""
    m = get_method(method)
    if m.causal and m.prefix == 0:
        return _causal_lookup_batch(task, vocab, seed_len, n, width, rng)
    return _looped_lookup_batch(task, vocab, method, seed_len, n, width, rng, gen)


def _looped_lookup_batch(task: Task, vocab: Vocab, method: str, seed_len: int, n: int,
                         width: int, rng: np.random.Generator, gen: torch.Generator):
    """:func:`lookup_batch` one answer at a time (every layout; the causal one is built over
    the whole batch by :func:`_causal_lookup_batch`)."""
    from icml25.creativity.training import fresh_examples  # (training imports this module)

    m = get_method(method)
    full = int(task.params["length"]) + (1 if task.name == "line" else 0)
    examples = fresh_examples(task, n, full, seed_len, rng)
    rows = build_rows(task.name, examples, vocab, "ntp" if m.causal else method, rng)
    if m.causal:
        inputs = rows["inputs"]
    else:
        inputs = m.batch(rows, torch.arange(n), gen, vocab)[0]
    inputs = F.pad(inputs, (0, width - inputs.shape[1]), value=vocab.pad)
    targets = torch.full_like(inputs, IGNORE)
    hops = torch.full_like(inputs, -1)
    at = m.prefix + seed_len + 1  # the first answer position
    n_nodes = 2 * int(task.params["length"])
    for r in range(n):
        pos = [at + 3 * (i // 2) + i % 2 for i in range(n_nodes)]
        ids = inputs[r, pos].tolist()
        nodes = [None if x == vocab.mask else x for x in ids]
        for i, start, h in chain_starts(nodes, m.causal):
            targets[r, pos[i]], hops[r, pos[i]] = start, h
    return inputs, targets, hops


def _causal_lookup_batch(task: Task, vocab: Vocab, seed_len: int, n: int, width: int,
                         rng: np.random.Generator):
    """:func:`lookup_batch` in the causal layout, built with numpy over the whole batch: ``n``
    fresh full-length answers (random distinct nodes in a random order, the edges shuffled,
    random seeds) and, at both nodes of the edge in position ``p``, the start of the chain its
    tail ends among the edges before ``p`` (as :func:`chain_starts` finds it)."""
    from icml25.creativity.tasks import END, SEED_ALPHABET, SEP

    length = int(task.params["length"])  # edges
    k = length + (1 if task.name == "line" else 0)  # nodes
    n_entities = int(task.params["n_entities"])
    entity = np.array([vocab.index[f"<a_{i}>"] for i in range(n_entities)])
    order = np.argsort(rng.random((n, n_entities)), axis=1)[:, :k]  # the path's nodes
    heads = np.arange(1, length + 1) % k  # edge i joins node i to node i + 1 (mod k: circle)
    perm = np.argsort(rng.random((n, length)), axis=1)  # position p holds path edge perm[p]
    place = np.argsort(perm, axis=1)  # the position of path edge i
    rows = np.arange(n)[:, None]
    # Hops back from edge i's tail: the run of edges i-1, i-2, ... all written before it.
    hops = np.zeros((n, length), dtype=np.int64)
    going = np.ones((n, length), dtype=bool)
    edge = np.arange(length)
    for back in range(1, length):
        j = edge - back
        ok = j >= 0 if task.name == "line" else np.ones(length, dtype=bool)
        before = place[:, j % length] < place
        going &= ok & before
        hops += going
    start = order[rows, (edge - hops) % k]  # (n, edges): the start of each path edge's chain
    seeds = np.array([vocab.index[c] for c in SEED_ALPHABET])[
        rng.integers(0, len(SEED_ALPHABET), (n, seed_len))]
    prompt = np.concatenate([seeds, np.full((n, 1), vocab.index[task.marker])], axis=1)
    tails, ends = entity[order[rows, perm]], entity[order[rows, heads[perm]]]
    answer = np.full((n, 3 * length), vocab.index[SEP])  # u v <sep> ... u v </a>
    answer[:, 0::3], answer[:, 1::3], answer[:, -1] = tails, ends, vocab.index[END]
    full = np.concatenate([prompt, answer], axis=1)[:, :-1]  # inputs: shifted by one
    inputs = np.full((n, width), vocab.pad, dtype=np.int64)
    inputs[:, :full.shape[1]] = full
    targets = np.full_like(inputs, IGNORE)
    hop_map = np.full_like(inputs, -1)
    at = seed_len + 1 + 3 * np.arange(length)  # each position's tail token
    for offset in (0, 1):  # the tail and the head of the edge in each position
        targets[:, at + offset] = entity[start[rows, perm]]
        hop_map[:, at + offset] = hops[rows, perm]
    return torch.from_numpy(inputs), torch.from_numpy(targets), torch.from_numpy(hop_map)


@torch.no_grad()
def accuracy_by_hops(model: LookupModel, inputs, targets, hops) -> dict[int, float]:
    """The auxiliary head's accuracy, by hops from the node back to its chain start."""
    was = model.training
    model.eval()
    right = model(inputs).argmax(-1) == targets
    model.train(was)
    return {h: round(right[hops == h].float().mean().item(), 4)
            for h in sorted(set(hops[hops >= 0].tolist()))}


def pretrain_lookup(task: Task, settings, *, out_dir: str | Path | None = None,
                    resume: bool = False,
                    on_eval: Callable[[dict], None] | None = None) -> tuple[Transformer, dict]:
    """Train the stage for ``settings.steps`` with ``settings``' architecture and optimiser
    (a :class:`~icml25.creativity.training.TrainSettings`; its method picks the layout, its
    ``seed_len`` the prompt length, default 10). Writes ``out_dir/model`` (load it with
    ``init_from``) and returns the transformer and its report (accuracy by hops)."""
    from icml25.creativity.training import model_config

    s = settings
    if task.name not in ("line", "circle"):
        raise ValueError(f"the lookup stage is for line and circle, not {task.name!r}")
    if s.method not in LAYOUTS:
        raise ValueError(f"the lookup stage has a layout for {LAYOUTS}, not {s.method!r}")
    if s.init_from is not None or s.fresh_min_nodes is not None:
        raise ValueError("the lookup stage starts from scratch on full-length fresh answers")
    seed_len = 10 if s.seed_len is None else s.seed_len
    method = get_method(s.method)
    vocab = method.vocab(task)
    cfg = model_config(task, method, vocab, seed_len, s)
    torch.manual_seed(s.seed)
    model = LookupModel(Transformer(cfg))
    held_out = lookup_batch(task, vocab, s.method, seed_len, HELD_OUT, cfg.seq_len,
                            np.random.default_rng([s.seed, 77]),
                            torch.Generator().manual_seed(s.seed + 77))
    curve_file = Path(out_dir) / "lookup_curve.jsonl" if out_dir is not None else None
    if curve_file is not None and not resume:
        curve_file.unlink(missing_ok=True)
    every = s.eval_every or max(s.steps // 10, 1)

    def batch_fn(step: int, gen: torch.Generator, rank: int):
        rng = np.random.default_rng(int(torch.randint(2**62, (1,), generator=gen)))
        return lookup_batch(task, vocab, s.method, seed_len, s.batch_size, cfg.seq_len, rng,
                            gen)[:2]

    def loss_fn(net, batch):
        x, y = batch
        return F.cross_entropy(net(x).flatten(0, 1), y.flatten(), ignore_index=IGNORE)

    def on_log(row: dict) -> None:
        if row["step"] % every:
            return
        point = {"step": row["step"], "loss": row["loss"],
                 "acc_by_hops": accuracy_by_hops(model, *held_out)}
        if curve_file is not None:
            curve_file.parent.mkdir(parents=True, exist_ok=True)
            with curve_file.open("a") as fh:
                fh.write(json.dumps(point) + "\n")
        if on_eval:
            on_eval(point)

    cfg_train = dataclasses.replace(s.train_config(out_dir), log_every=every,
                                    checkpoint_every=s.checkpoint_every or every)
    start = time.perf_counter()
    state = train(model, loss_fn, batch_fn, cfg_train, resume=resume, on_log=on_log)
    report = {"task": task.name, "method": s.method, "seed_len": seed_len, "steps": s.steps,
              "steps_done": state.step, "budget": state.budget, "seed": s.seed,
              "seconds_last_leg": round(time.perf_counter() - start, 1),
              "stopped_early": state.stopped_early,
              "acc_by_hops": accuracy_by_hops(model, *held_out)}
    model.net.eval()
    if out_dir is not None:  # also when a time limit stopped it (a resume goes on from there)
        model.net.save(Path(out_dir) / "model", extra={"lookup_pretrain": report})
    return model.net, report
