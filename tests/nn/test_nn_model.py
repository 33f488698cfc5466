import math

import pytest
import torch

from icml25.nn import TrainConfig, Transformer, TransformerConfig, cosine_lr


def _model(**kw):
    torch.manual_seed(0)
    cfg = dict(vocab_size=11, seq_len=12, d_model=32, n_layers=2, n_heads=4)
    return Transformer(TransformerConfig(**(cfg | kw))).eval()


@pytest.mark.parametrize("positions", ["learned", "rotary"])
def test_causal_model_ignores_the_future_and_bidirectional_does_not(positions):
    x = torch.randint(0, 11, (2, 12))
    y = x.clone()
    y[:, 8:] = (y[:, 8:] + 1) % 11
    causal = _model(causal=True, positions=positions)
    assert torch.allclose(causal(x)[:, :8], causal(y)[:, :8], atol=1e-6)
    bidir = _model(causal=False, positions=positions)
    assert not torch.allclose(bidir(x)[:, :8], bidir(y)[:, :8], atol=1e-4)


def test_rotary_model_is_position_aware():
    m = _model(positions="rotary")
    x = torch.tensor([[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1, 2]])
    out = m(x)
    assert not torch.allclose(out[0, 0], out[0, 10], atol=1e-4)  # same token, different place


def test_save_load_round_trip(tmp_path):
    m = _model(out_size=9, tie_embeddings=False)
    m.save(tmp_path / "m", extra={"task": "demo"})
    back = Transformer.load(tmp_path / "m").eval()
    x = torch.randint(0, 11, (3, 12))
    assert torch.equal(m(x), back(x))
    tied = _model(tie_embeddings=True)
    tied.save(tmp_path / "t")
    assert torch.equal(tied(x), Transformer.load(tmp_path / "t").eval()(x))


def test_position_groups_share_an_embedding_and_survive_save_load(tmp_path):
    # rotary positions: the group table is the only absolute position signal
    halves = [[0] * 6 + [1] * 6]
    m = _model(positions="rotary", position_groups=halves, n_layers=1)
    x = torch.full((1, 12), 3)
    emb = m.tok(x) + m.groups[0](m.group_ids_0)
    assert torch.equal(emb[0, 0], emb[0, 5]) and not torch.equal(emb[0, 0], emb[0, 6])
    m.save(tmp_path / "g")
    back = Transformer.load(tmp_path / "g").eval()
    assert back.cfg.position_groups == halves and torch.equal(m(x), back(x))
    with pytest.raises(ValueError, match="position group"):
        TransformerConfig(vocab_size=5, seq_len=4, position_groups=[[0, 1, 2]])


def test_qk_init_std_scales_only_queries_and_keys():
    d = 32
    plain, wide = _model(), _model(qk_init_std=0.5)
    for m, qk in ((plain, 0.02), (wide, 0.5)):
        w = m.blocks[0].qkv.weight
        assert w[:2 * d].std().item() == pytest.approx(qk, rel=0.1)
        assert w[2 * d:].std().item() == pytest.approx(0.02, rel=0.1)  # values untouched
    with pytest.raises(ValueError, match="qk_init_std"):
        TransformerConfig(vocab_size=5, seq_len=4, qk_init_std=0.0)


def test_bad_configs_and_inputs_are_refused(tmp_path):
    with pytest.raises(ValueError, match="multiple of n_heads"):
        TransformerConfig(vocab_size=5, seq_len=4, d_model=30, n_heads=4)
    with pytest.raises(ValueError, match="positions"):
        TransformerConfig(vocab_size=5, seq_len=4, positions="alibi")
    with pytest.raises(ValueError, match="exceeds"):
        _model()(torch.zeros(1, 13, dtype=torch.long))
    with pytest.raises(ValueError, match="batch, seq"):
        _model()(torch.zeros(13, dtype=torch.long))
    with pytest.raises(FileNotFoundError, match="config.json"):
        Transformer.load(tmp_path)


def test_cosine_schedule_warms_up_then_decays_to_the_floor():
    cfg = TrainConfig(steps=100, lr=1e-3, warmup_steps=10, min_lr_ratio=0.1)
    lrs = [cosine_lr(s, cfg) for s in range(101)]
    assert lrs[0] == pytest.approx(1e-4) and lrs[9] == pytest.approx(1e-3)
    assert all(a >= b for a, b in zip(lrs[10:], lrs[11:], strict=False))
    assert lrs[100] == pytest.approx(1e-4)
    assert lrs[55] == pytest.approx(1e-4 + 0.5 * 9e-4 * (1 + math.cos(math.pi * 0.5)))


def test_token_shift_adds_the_previous_token_and_stays_causal(tmp_path):
    m = _model(causal=True, token_shift=True)
    x = torch.randint(0, 11, (2, 12))
    y = x.clone()
    y[:, 8] = (y[:, 8] + 1) % 11
    assert torch.allclose(m(x)[:, :8], m(y)[:, :8], atol=1e-6)  # the past does not move
    assert not torch.allclose(m(x)[:, 9], m(y)[:, 9], atol=1e-4)  # position 9 sees x_8
    m.save(tmp_path / "s")
    back = Transformer.load(tmp_path / "s").eval()
    assert back.cfg.token_shift and torch.equal(m(x), back(x))
    assert _model().prev_tok is None  # off by default: old configs load unchanged


def test_layer_shift_starts_as_the_model_without_it_and_stays_causal(tmp_path):
    torch.manual_seed(0)
    base = _model(causal=True, token_shift=True)
    grown = _model(causal=True, token_shift=True, layer_shift=True)
    missing, unexpected = grown.load_state_dict(base.state_dict(), strict=False)
    assert sorted(missing) == [f"blocks.{i}.shift.weight" for i in range(grown.cfg.n_layers)]
    assert not unexpected
    x = torch.randint(0, 11, (2, 12))
    assert torch.allclose(base.eval()(x), grown.eval()(x), atol=1e-6)  # zero mix at the start
    with torch.no_grad():
        for block in grown.blocks:
            block.shift.weight.normal_(std=0.2)
    y = x.clone()
    y[:, 8] = (y[:, 8] + 1) % 11
    assert torch.allclose(grown(x)[:, :8], grown(y)[:, :8], atol=1e-6)  # the past does not move
    assert not torch.allclose(grown(x), base(x), atol=1e-4)
    grown.save(tmp_path / "g")
    back = Transformer.load(tmp_path / "g").eval()
    assert back.cfg.layer_shift and torch.equal(grown(x), back(x))
    assert all(b.shift is None for b in _model().blocks)  # off by default


def _pair_lookup_batch(gen, n=64, pairs=5, vocab=11):
    """``a1 b1 a2 b2 ... q`` with q one of the b's; the answer is its a (the token *before*
    q's earlier occurrence), the lookup creativity's Line/Circle need."""
    perm = torch.argsort(torch.rand(n, vocab - 1, generator=gen), 1)[:, :2 * pairs] + 1
    j = torch.randint(pairs, (n,), generator=gen)
    rows = torch.arange(n)
    q, a = perm[rows, 2 * j + 1], perm[rows, 2 * j]
    return torch.cat([perm, q[:, None]], 1), a


def _lookup_accuracy(token_shift: bool, steps=300) -> float:
    torch.manual_seed(0)
    m = Transformer(TransformerConfig(vocab_size=11, seq_len=11, d_model=32, n_layers=1,
                                      n_heads=2, causal=True, token_shift=token_shift))
    opt = torch.optim.AdamW(m.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(0)
    for _ in range(steps):
        x, a = _pair_lookup_batch(gen)
        loss = torch.nn.functional.cross_entropy(m(x)[:, -1], a)
        opt.zero_grad()
        loss.backward()
        opt.step()
    x, a = _pair_lookup_batch(torch.Generator().manual_seed(1), n=512)
    with torch.no_grad():
        return (m.eval()(x)[:, -1].argmax(-1) == a).float().mean().item()


def test_token_shift_lets_one_layer_read_the_token_before_a_match():
    # One attention layer cannot both move a token's left neighbour onto it and match it;
    # with the previous token in the input it only has to match. Chance is 1/5.
    torch.set_num_threads(1)
    assert _lookup_accuracy(token_shift=True) > 0.9
    assert _lookup_accuracy(token_shift=False) < 0.5
