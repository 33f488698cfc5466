"""The chain-start lookup stage (a pretrained start for Line/Circle): its targets, its batches
in each layout, and that a short stage learns the easy hops and starts a method's run."""

import numpy as np
import pytest
import torch

from icml25.creativity.lookup import (
    LookupModel,
    accuracy_by_hops,
    chain_starts,
    lookup_batch,
    pretrain_lookup,
)
from icml25.creativity.methods import IGNORE, get_method
from icml25.creativity.tasks import generate, make_task
from icml25.creativity.training import TrainSettings, model_config, train_model

torch.set_num_threads(1)


def test_causal_targets_follow_the_edges_before():
    # Edges in order: 2->3, 1->2, 3->4, 0->1 (nodes are ints).
    nodes = [2, 3, 1, 2, 3, 4, 0, 1]
    got = chain_starts(nodes, causal=True)
    # u=2 fresh; u=1 fresh; u=3 ends 2->3 after 1->2: start 1, two hops; u=0 fresh.
    assert got == [(0, 2, 0), (1, 2, 0), (2, 1, 0), (3, 1, 0), (4, 1, 2), (5, 1, 2),
                   (6, 0, 0), (7, 0, 0)]


def test_bidirectional_targets_use_only_fully_visible_edges():
    # 2->3 visible, 1->? masked head, 3->4 visible, 0->1 visible.
    nodes = [2, 3, 1, None, 3, 4, 0, 1]
    got = dict((i, (s, h)) for i, s, h in chain_starts(nodes, causal=False))
    assert got[0] == (2, 0) and got[1] == (2, 1) and got[5] == (2, 2)  # 2->3->4
    assert got[2] == (0, 1) and got[7] == (0, 1) and got[6] == (0, 0)  # 0->1
    assert 3 not in got  # a masked node has no target


def test_a_closed_cycle_has_no_start():
    nodes = [0, 1, 1, 2, 2, 0]  # 0->1->2->0, all visible
    assert chain_starts(nodes, causal=False) == []
    # Causally the closing edge's tail still has a start (the edge closes the cycle there).
    assert chain_starts(nodes, causal=True)[-1] == (5, 0, 2)


@pytest.mark.parametrize("method", ["ntp", "diffusion"])
def test_batches_put_targets_on_node_tokens_only(method):
    task = make_task("circle")
    m = get_method(method)
    vocab = m.vocab(task)
    cfg = model_config(task, m, vocab, 10, TrainSettings(method=method))
    x, y, hops = lookup_batch(task, vocab, method, 10, 32, cfg.seq_len,
                              np.random.default_rng(0), torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (32, cfg.seq_len)
    entities = {vocab.index[e] for e in task.entities()}
    has = y != IGNORE
    assert has.any() and set(y[has].tolist()) <= entities
    assert set(x[has].tolist()) <= entities  # only visible node tokens carry a target
    assert ((hops >= 0) == has).all()
    if method == "ntp":  # every node token of every answer, all visible
        assert has.sum(1).eq(2 * 9).all()


@pytest.mark.parametrize("name", ["line", "circle"])
def test_causal_batches_are_fresh_answers_with_the_chain_starts_of_chain_starts(name):
    # The causal batch is built with numpy over the whole batch: every row must be a coherent
    # answer of the task, and its targets exactly what chain_starts finds on its nodes.
    task = make_task(name)
    m = get_method("ntp")
    vocab = m.vocab(task)
    width = model_config(task, m, vocab, 10, TrainSettings()).seq_len
    x, y, hops = lookup_batch(task, vocab, "ntp", 10, 200, width, np.random.default_rng(3),
                              torch.Generator().manual_seed(3))
    edges = int(task.params["length"])
    pos = [11 + 3 * (i // 2) + i % 2 for i in range(2 * edges)]
    seen_hops = set()
    for r in range(200):
        answer = vocab.decode_answer(x[r, 11:].tolist() + [vocab.end])
        assert task.canonical(answer.split()[:-1]) is not None, answer  # a line / circle
        nodes = x[r, pos].tolist()
        want_y = torch.full_like(y[r], IGNORE)
        want_h = torch.full_like(hops[r], -1)
        for i, start, h in chain_starts(nodes, causal=True):
            want_y[pos[i]], want_h[pos[i]] = start, h
            seen_hops.add(h)
        assert torch.equal(y[r], want_y) and torch.equal(hops[r], want_h)
    assert seen_hops == set(range(edges))  # every hop count from 0 to edges - 1 occurs
    assert len({tuple(row[:10].tolist()) for row in x}) == 200  # a fresh seed per answer


def test_pretrain_lookup_learns_and_starts_a_run(tmp_path):
    task = make_task("line", 0, n_train=40, n_test=4)
    s = TrainSettings(steps=60, d_model=32, n_layers=2, n_heads=2, batch_size=32, lr=3e-3,
                      warmup_steps=5, token_shift=True, seed_len=3, eval_every=30)
    net, report = pretrain_lookup(task, s, out_dir=tmp_path / "lk")
    assert report["acc_by_hops"][0] > 0.9  # a fresh tail is its own start: learnt first
    assert (tmp_path / "lk" / "model" / "config.json").exists()
    data = generate(task, seed_len=3)
    run = train_model(task, data.train, TrainSettings(
        steps=2, d_model=32, n_layers=2, n_heads=2, batch_size=8, token_shift=True,
        init_from=str(tmp_path / "lk")))
    start = net.state_dict()["blocks.0.qkv.weight"]
    assert run.model.state_dict()["blocks.0.qkv.weight"].shape == start.shape


def test_pretrain_lookup_refuses_what_it_has_no_layout_for():
    with pytest.raises(ValueError, match="line and circle"):
        pretrain_lookup(make_task("sibling"), TrainSettings(steps=1))
    with pytest.raises(ValueError, match="layout"):
        pretrain_lookup(make_task("line"), TrainSettings(method="diffusion-uniform", steps=1))


def test_accuracy_is_reported_by_hops():
    task = make_task("line")
    m = get_method("ntp")
    vocab = m.vocab(task)
    from icml25.nn import Transformer

    cfg = model_config(task, m, vocab, 10, TrainSettings(d_model=16, n_layers=1, n_heads=2))
    batch = lookup_batch(task, vocab, "ntp", 10, 16, cfg.seq_len, np.random.default_rng(1),
                         torch.Generator())
    acc = accuracy_by_hops(LookupModel(Transformer(cfg)), *batch)
    assert 0 in acc and all(0.0 <= v <= 1.0 for v in acc.values())


def test_head_only_phase_trains_the_head_and_leaves_the_body(tmp_path):
    from icml25.creativity.training import _train_head

    task = make_task("line", 0, n_train=40, n_test=4)
    data = generate(task, seed_len=3)
    base = dict(d_model=16, n_layers=1, n_heads=2, batch_size=8, token_shift=True)
    run = train_model(task, data.train, TrainSettings(steps=2, **base))
    run.save(tmp_path / "init")
    s = TrainSettings(steps=1, init_from=str(tmp_path / "init"), head_only_steps=5, **base)
    m = get_method("ntp")
    from icml25.creativity.methods import build_rows

    built = build_rows("line", run.train, run.vocab, "ntp")
    before = {k: v.clone() for k, v in run.model.state_dict().items()}

    def batch_fn(step, gen, rank):
        return m.batch(built, torch.randint(len(built["inputs"]), (8,), generator=gen), gen,
                       run.vocab)

    _train_head(run.model, lambda net, b: m.loss(net, b, run.vocab), batch_fn, s, None, False)
    after = run.model.state_dict()
    assert not torch.equal(before["head.weight"], after["head.weight"])
    assert all(torch.equal(before[k], after[k]) for k in before
               if not k.startswith(("head.", "ln_f.")))
    assert all(p.requires_grad for p in run.model.parameters())  # the body is thawed again


def test_head_only_needs_a_start():
    with pytest.raises(ValueError, match="init_from"):
        TrainSettings(head_only_steps=10)


def test_cli_pretrain_lookup_then_train_from_it(tmp_path):
    import json

    from typer.testing import CliRunner

    from icml25.creativity.cli import app

    runner = CliRunner()
    r = runner.invoke(app, ["pretrain-lookup", "--task", "circle", "-o", str(tmp_path / "lk"),
                            "--steps", "4", "--d-model", "16", "--n-layers", "1",
                            "--n-heads", "2", "--layer-shift", "--eval-every", "2",
                            "--batch-size", "8"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout.strip().splitlines()[-1])["steps"] == 4
    r = runner.invoke(app, ["train", "--task", "circle", "-o", str(tmp_path / "run"),
                            "--steps", "2", "--d-model", "16", "--n-layers", "1",
                            "--n-heads", "2", "--layer-shift", "--param", "n_train=40",
                            "--init-from", str(tmp_path / "lk"), "--head-only-steps", "2",
                            "--replay-weight", "1", "--batch-size", "8"])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "run" / "model" / "config.json").exists()
    r = runner.invoke(app, ["pretrain-lookup", "--task", "sibling", "-o", str(tmp_path / "x")])
    assert r.exit_code != 0 and "line and circle" in r.output


@pytest.mark.parametrize("method", ["ntp", "diffusion"])
def test_replay_keeps_the_lookup_and_the_anchor_holds_the_body(tmp_path, method):
    """Fine-tuning from a lookup stage with replay trains (finite loss, both layouts), and a
    strong L2-SP anchor keeps the body near the start where free fine-tuning moves it."""
    task = make_task("line", 0, n_train=40, n_test=4)
    arch = dict(d_model=32, n_layers=2, n_heads=2, token_shift=True, seed_len=3)
    lk = TrainSettings(method=method, steps=80, batch_size=32, lr=3e-3, warmup_steps=5, **arch)
    net, _ = pretrain_lookup(task, lk, out_dir=tmp_path / "lk")
    data = generate(task, seed_len=3)
    common = dict(method=method, steps=30, batch_size=8, lr=3e-3, warmup_steps=1,
                  init_from=str(tmp_path / "lk"), **arch)
    rows = []
    run = train_model(task, data.train, TrainSettings(replay_weight=1.0, replay_batch=8,
                                                      **common), on_log=rows.append)
    assert all(np.isfinite(r["loss"]) for r in rows)
    held = lookup_batch(task, run.vocab, method, 3, 64, run.model.cfg.seq_len,
                        np.random.default_rng(5), torch.Generator().manual_seed(5))
    anchored = train_model(task, data.train, TrainSettings(anchor_weight=1e4, **common))
    free = train_model(task, data.train, TrainSettings(**common))

    def drift(m):
        return sum(((p - net.state_dict()[k]) ** 2).sum().item()
                   for k, p in m.state_dict().items() if k.startswith("blocks."))
    assert drift(anchored.model) < 0.1 * drift(free.model)
    assert held[1].ne(-100).any()
    with pytest.raises(ValueError, match="init_from"):
        TrainSettings(replay_weight=1.0)
    with pytest.raises(ValueError, match=">= 0"):
        TrainSettings(anchor_weight=-1.0, init_from="x")
