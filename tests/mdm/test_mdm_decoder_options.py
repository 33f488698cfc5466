"""The decoder's options beyond planning: block KV cache, early stop, guidance, top-k/top-p,
history, the per-step hook, streaming and the LLaDA/Dream adapters (tiny models only)."""

import pytest
import torch
from torch import nn

from icml25.mdm import generate, generate_stream
from icml25.mdm.compat import ShiftedLogits, dream_generate, llada_generate
from icml25.nn import KVCache, Transformer, TransformerConfig

transformers = pytest.importorskip("transformers")

MASK, EOS, VOCAB = 0, 1, 24


def tiny(causal: bool, n_layers: int, seed: int = 0, positions: str = "rotary") -> Transformer:
    torch.manual_seed(seed)
    net = Transformer(TransformerConfig(vocab_size=VOCAB, seq_len=48, d_model=32,
                                        n_layers=n_layers, n_heads=4, causal=causal,
                                        positions=positions))
    with torch.no_grad():  # peaked outputs, like a trained model (no near-ties in the order)
        net.head.weight.mul_(40)
    return net.eval()


@pytest.fixture(scope="module")
def prompt():
    return torch.randint(2, VOCAB, (3, 8), generator=torch.Generator().manual_seed(0))


def test_kv_cache_slices_match_the_full_pass():
    net = tiny(causal=True, n_layers=2, positions="learned")
    ids = torch.randint(0, VOCAB, (2, 20))
    cache = KVCache()
    full = net(ids, kv_cache=cache)
    assert len(cache) == 20
    assert torch.allclose(net(ids[:, 12:], kv_cache=cache, start=12), full[:, 12:], atol=1e-4)
    assert torch.allclose(net(ids[:, 4:9], kv_cache=cache, start=4), full[:, 4:9], atol=1e-4)
    with pytest.raises(ValueError, match="outside"):
        net(ids[:, 15:], kv_cache=cache, start=18)


def test_kv_cache_slices_under_no_grad_update_the_cache_in_place():
    net = tiny(causal=True, n_layers=2)
    ids = torch.randint(0, VOCAB, (2, 20), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        cache = KVCache()
        full = net(ids, kv_cache=cache)
        keys = cache.layers[0][0]
        before = keys.clone()
        changed = ids.clone()
        changed[:, 12:] = (changed[:, 12:] + 1) % VOCAB
        sliced = net(changed[:, 12:], kv_cache=cache, start=12)
        assert cache.layers[0][0] is keys  # written into, not rebuilt
        assert torch.equal(keys[:, :, :12], before[:, :, :12])  # left of the slice: kept
        assert not torch.equal(keys[:, :, 12:], before[:, :, 12:])  # the slice: its new keys
        assert torch.allclose(sliced, net(changed)[:, 12:], atol=1e-4)  # causal: exact
        assert torch.allclose(net(ids[:, 12:], kv_cache=cache, start=12), full[:, 12:],
                              atol=1e-4)


@pytest.mark.parametrize("planner", ["top_prob", "top_margin", "entropy"])
def test_steps_confined_to_the_block_match_the_whole_canvas(prompt, planner):
    # without a cache, a greedy decode works on the block's columns only; a hook makes it
    # keep the whole canvas -- the tokens must not differ
    net = tiny(False, 2)
    args = dict(mask_id=MASK, gen_length=24, steps=12, block_length=8, planner=planner,
                threshold=0.9, return_info=True)
    narrow = generate(net, prompt, **args)
    whole = generate(net, prompt, **args, on_step=lambda step, logits, ids: None)
    assert torch.equal(narrow.ids, whole.ids)
    assert narrow.forward_passes == whole.forward_passes


@pytest.mark.parametrize("cache", ["prefix", "dual"])
@pytest.mark.parametrize("causal, n_layers", [(True, 2), (False, 1)])
def test_cache_gives_the_same_tokens_where_it_is_exact(prompt, cache, causal, n_layers):
    # causal: no position sees what lies right of it, so cached keys never go stale; one layer:
    # a layer's keys depend on its own token only, and the cached ones' tokens do not change
    net = tiny(causal, n_layers)
    args = dict(mask_id=MASK, gen_length=24, steps=12, block_length=8)
    plain = generate(net, prompt, **args, return_info=True)
    cached = generate(net, prompt, **args, cache=cache, return_info=True)
    assert cached.cache == cache and plain.cache is None
    assert torch.equal(cached.ids, plain.ids)
    assert cached.forward_passes == plain.forward_passes == 12


def test_cache_on_a_deep_bidirectional_model_still_fills_every_mask(prompt):
    net = tiny(False, 2)
    out = generate(net, prompt, mask_id=MASK, gen_length=24, steps=12, block_length=8,
                   cache="dual", threshold=0.9)
    assert not (out == MASK).any() and torch.equal(out[:, :8], prompt)


def test_a_causal_hf_model_caches_its_prefix_exactly(prompt):
    torch.manual_seed(0)
    gpt = transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=VOCAB, n_positions=48, n_embd=32, n_layer=2, n_head=2, bos_token_id=2,
        eos_token_id=2)).eval()
    args = dict(mask_id=MASK, gen_length=16, steps=8, block_length=4, return_info=True)
    plain, cached = generate(gpt, prompt, **args), generate(gpt, prompt, **args, cache="prefix")
    assert cached.cache == "prefix" and torch.equal(cached.ids, plain.ids)
    # dual needs the model to take keys on both sides: a HF model decodes without
    assert generate(gpt, prompt, **args, cache="dual").cache is None


class RowScript(nn.Module):
    """Row r predicts ``script[r][i]`` at position i, with certainty rising to the left."""

    def __init__(self, script):
        super().__init__()
        self.script = torch.tensor(script)
        self.w = nn.Parameter(torch.zeros(()))
        self.calls = []

    def forward(self, x):
        self.calls.append(x.clone())
        b, length = x.shape
        logits = torch.zeros(b, length, VOCAB)
        ramp = torch.linspace(8, 4, length)
        logits.scatter_(2, self.script[:b, :length, None], ramp[None, :, None].expand(b, -1, 1))
        return logits


def test_early_stop_per_row_and_blocks_after_eos_are_skipped():
    # row 0 says EOS at position 5 (generated token 3), row 1 at 9, row 2 never
    script = [[7] * 16 for _ in range(3)]
    script[0][5], script[1][9] = EOS, EOS
    model = RowScript(script)
    info = generate(model, torch.full((3, 2), 5), mask_id=MASK, gen_length=14, steps=14,
                    block_length=2, eos_id=EOS, return_info=True)
    assert info.lengths.tolist() == [3, 7, 14]
    assert info.ids[0, 5:].tolist() == [EOS] * 11 and info.ids[1, 9:].tolist() == [EOS] * 7
    assert info.steps_used.tolist() == [4, 8, 14]  # rows stop using passes at their EOS
    # when every row has ended the later blocks are not decoded
    two = generate(RowScript(script[:2]), torch.full((2, 2), 5), mask_id=MASK, gen_length=14,
                   steps=14, block_length=2, eos_id=EOS, return_info=True)
    assert two.forward_passes == 8 and two.lengths.tolist() == [3, 7]
    # without eos_id every block is decoded and lengths are the full span
    plain = generate(model, torch.full((3, 2), 5), mask_id=MASK, gen_length=14, steps=14,
                     block_length=2, return_info=True)
    assert plain.forward_passes == 14 and plain.lengths.tolist() == [14] * 3


def test_cfg_scale_zero_is_no_guidance_and_guidance_masks_the_prompt(prompt):
    net = tiny(False, 2)
    calls = []
    net.register_forward_hook(lambda m, args, out: calls.append(args[0].clone()))
    args = dict(mask_id=MASK, gen_length=8, steps=4, block_length=4)
    plain = generate(net, prompt, **args)
    n_plain = len(calls)
    assert torch.equal(generate(net, prompt, **args, cfg_scale=0.0), plain)
    assert len(calls) == 2 * n_plain and all(c.shape[0] == 3 for c in calls)
    calls.clear()
    guided = generate(net, prompt, **args, cfg_scale=2.0)
    assert all(c.shape[0] == 6 for c in calls)  # conditional + unconditional in one pass
    assert (calls[0][3:, :8] == MASK).all() and torch.equal(calls[0][:3, :8], prompt)
    assert not (guided == MASK).any()


def test_top_k_one_is_greedy_and_top_p_keeps_the_nucleus(prompt):
    net = tiny(False, 2, positions="learned")
    args = dict(mask_id=MASK, gen_length=16, steps=8, block_length=8)
    greedy = generate(net, prompt, **args)
    g = torch.Generator().manual_seed(0)
    assert torch.equal(generate(net, prompt, **args, temperature=1.0, top_k=1, generator=g),
                       greedy)
    assert torch.equal(generate(net, prompt, **args, temperature=1.0, top_p=1e-6, generator=g),
                       greedy)
    sampled = generate(net, prompt, **args, temperature=5.0, generator=g)
    assert not torch.equal(sampled, greedy)  # (and temperature alone does sample)


def test_history_has_one_canvas_per_pass_and_masks_only_shrink(prompt):
    net = tiny(False, 1)
    info = generate(net, prompt, mask_id=MASK, gen_length=16, steps=8, block_length=4,
                    return_history=True)
    assert len(info.history) == 8 == info.forward_passes
    masked = [int((h == MASK).sum()) for h in info.history]
    assert masked == sorted(masked, reverse=True) and masked[-1] == 0
    assert torch.equal(info.history[-1], info.ids)


def test_the_hook_sees_every_pass_and_can_force_a_token(prompt):
    net = tiny(False, 2)
    seen = []

    def force(step, logits, ids):
        seen.append((step, logits.shape, ids.shape))
        logits[:, 10] = float("-inf")
        logits[:, 10, 5] = 0.0  # position 10 can only be token 5
        return logits

    out = generate(net, prompt, mask_id=MASK, gen_length=16, steps=8, block_length=4,
                   on_step=force, cache="dual")
    assert (out[:, 10] == 5).all()
    assert [s for s, _, _ in seen] == list(range(8))
    assert all(shape == (3, 24, VOCAB) and ids == (3, 24) for _, shape, ids in seen)
    # a hook returning None keeps the logits
    plain = generate(net, prompt, mask_id=MASK, gen_length=16, steps=8, block_length=4)
    kept = generate(net, prompt, mask_id=MASK, gen_length=16, steps=8, block_length=4,
                    on_step=lambda step, logits, ids: None)
    assert torch.equal(kept, plain)


def test_streaming_yields_the_blocks_in_order_and_stops_at_eos(prompt):
    net = tiny(False, 2)
    args = dict(mask_id=MASK, gen_length=16, steps=8, block_length=4)
    out = generate(net, prompt, **args)
    blocks = list(generate_stream(net, prompt, **args))
    assert len(blocks) == 4
    for r in range(3):
        assert sum((b[r] for b in blocks), []) == out[r, 8:].tolist()
    script = [[7] * 16, [7] * 16]
    script[0][6] = EOS
    streamed = list(generate_stream(RowScript(script), torch.full((2, 2), 5), mask_id=MASK,
                                    gen_length=14, steps=14, block_length=4, eos_id=EOS))
    assert [len(b[0]) for b in streamed] == [4, 0, 0, 0] and sum(map(len, streamed[0])) == 8
    with pytest.raises(TypeError):
        next(generate_stream(net, prompt, mask_id=MASK, gen_length=4, steps=4, colour="red"))


def test_bad_new_options_are_refused(prompt):
    net = tiny(False, 1)
    for kwargs, match in [({"cache": "full"}, "cache"), ({"eos_id": MASK}, "eos_id"),
                          ({"cfg_scale": -1.0}, "cfg_scale"), ({"top_k": 0}, "top_k"),
                          ({"top_p": 1.5}, "top_p"), ({"on_step": 3}, "on_step")]:
        with pytest.raises(ValueError, match=match):
            generate(net, prompt, mask_id=MASK, gen_length=4, steps=4, **kwargs)


def test_a_hf_masked_lm_decodes_through_every_new_option():
    torch.manual_seed(0)
    bert = transformers.BertForMaskedLM(transformers.BertConfig(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=64, pad_token_id=2)).eval()
    rows = [[5, 6, 7], [8, 9, 10, 11, 12]]
    info = generate(bert, rows, mask_id=MASK, pad_id=2, gen_length=8, steps=8, block_length=4,
                    cache="prefix", eos_id=EOS, cfg_scale=1.0, temperature=1.0, top_k=5,
                    top_p=0.9, return_history=True, on_step=lambda s, logits, ids: logits,
                    generator=torch.Generator().manual_seed(0))
    assert info.cache is None  # BERT returns no cache: decoded without
    assert [r[:len(p)] for r, p in zip(info.ids, rows, strict=True)] == rows
    assert all(MASK not in r for r in info.ids) and len(info.history) == info.forward_passes
    assert ((0 <= info.lengths) & (info.lengths <= 8)).all()


def test_llada_adapter_maps_its_names_onto_generate(prompt, monkeypatch):
    import icml25.mdm.compat as compat

    net = tiny(False, 2)
    out = llada_generate(net, prompt, steps=8, gen_length=16, block_length=8, mask_id=MASK,
                         cfg_scale=0.5)
    assert torch.equal(out, generate(net, prompt, mask_id=MASK, gen_length=16, steps=8,
                                     block_length=8, planner="top_prob", cfg_scale=0.5))
    seen = {}
    monkeypatch.setattr(compat, "generate", lambda model, ids, **kw: seen.update(kw) or ids)
    llada_generate(net, prompt, remasking="random", temperature=0.7, cache="dual")
    assert seen["planner"] == "random" and seen["mask_id"] == 126336
    assert (seen["steps"], seen["gen_length"], seen["block_length"]) == (128, 128, 128)
    assert seen["temperature"] == 0.7 and seen["cache"] == "dual"
    for bad in [dict(gen_length=10, block_length=4), dict(steps=3, gen_length=8,
                                                          block_length=4),
                dict(remasking="worst")]:
        with pytest.raises(ValueError):
            llada_generate(net, prompt, mask_id=MASK, **bad)


def test_llada_adapter_keeps_left_padding(prompt):
    net = tiny(False, 1)
    padded = prompt.clone()
    padded[0, :3] = 3
    att = torch.ones_like(padded)
    att[0, :3] = 0
    out = llada_generate(net, padded, att, steps=4, gen_length=8, block_length=4, mask_id=MASK)
    assert out.shape == (3, 16) and (out[0, :3] == 3).all()
    assert torch.equal(out[:, :8], padded) and not (out == MASK).any()


def test_dream_adapter_maps_its_names_onto_generate(prompt, monkeypatch):
    import icml25.mdm.compat as compat

    seen = {}
    monkeypatch.setattr(compat, "generate", lambda model, ids, **kw: seen.update(
        kw, model=model) or ids)
    net = tiny(False, 1)
    dream_generate(net, prompt, max_length=20, mask_token_id=MASK)
    assert seen["gen_length"] == 12 and seen["steps"] == 512
    assert seen["planner"] == "random" and seen["k_schedule"] == "binomial"
    assert isinstance(seen["model"], ShiftedLogits)
    for alg, planner in [("maskgit_plus", "top_prob"), ("topk_margin", "top_margin"),
                         ("entropy", "entropy")]:
        dream_generate(net, prompt, max_new_tokens=4, alg=alg, alg_temp=0.3, top_p=0.9,
                       mask_token_id=MASK, shift_logits=False)
        assert seen["planner"] == planner and seen["k_schedule"] == "dream"
        assert seen["noise"] == 0.3 and seen["top_p"] == 0.9 and seen["model"] is net
    with pytest.raises(ValueError, match="alg"):
        dream_generate(net, prompt, alg="best", mask_token_id=MASK)
    with pytest.raises(ValueError, match="mask_token_id"):
        dream_generate(net, prompt)


def test_dream_adapter_returns_history_and_calls_the_logits_hook(prompt):
    net = tiny(False, 1)
    steps_seen = []

    def hook(step, x, logits):
        steps_seen.append(step)
        return logits

    out = dream_generate(net, prompt, max_new_tokens=8, steps=8, alg="entropy",
                         mask_token_id=MASK, output_history=True, return_dict_in_generate=True,
                         generation_logits_hook_func=hook)
    assert out.sequences.shape == (3, 16) and len(out.history) == 8
    assert steps_seen == list(range(8)) and not (out.sequences == MASK).any()


def test_generate_text_prints_the_prompt_then_the_blocks():
    from typer.testing import CliRunner

    from icml25.mdm.cli import app

    result = CliRunner().invoke(app, ["generate-text", "def f(x):", "--gen-length", "16",
                                      "--steps", "4", "--block-length", "8", "--cache", "dual"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("def f(x):") and len(result.output) > len("def f(x):") + 1
    bad = CliRunner().invoke(app, ["generate-text", "x", "--gen-length", "300"])
    assert bad.exit_code != 0
