"""``icml25.mdm.generate`` on a tiny randomly initialised Hugging Face BERT (built from a config,
nothing downloaded) and on hand-made models whose logits we choose."""

import pytest
import torch
from torch import nn

from icml25.mdm import generate
from icml25.mdm.decoding import Generation
from icml25.mdm.planners import PLANNERS, check_planner
from icml25.mdm.remask import REMASK_SCHEDULES, Cap, Conf, Rescale, check_remask

transformers = pytest.importorskip("transformers")

PAD, MASK, VOCAB = 0, 4, 50


@pytest.fixture(scope="module")
def bert():
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                                  num_attention_heads=2, intermediate_size=64,
                                  max_position_embeddings=64, pad_token_id=PAD)
    return transformers.BertForMaskedLM(cfg).eval()


def prompts(g, lengths):
    return [torch.randint(5, VOCAB, (n,), generator=g).tolist() for n in lengths]


OPTIONS = [
    {},
    {"block_length": 4},
    {"threshold": 0.05},
    {"planner": "random"},
    {"planner": "entropy", "noise": 0.5},
    {"temperature": 1.0},
    *({"remask": name} for name in REMASK_SCHEDULES),
    {"remask": Cap(eta=0.5), "block_length": 4},
]


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(map(str, o.items())) or "-")
@pytest.mark.parametrize("side", ["left", "right"])
def test_bert_fills_every_mask_and_keeps_the_prompt(bert, options, side):
    g = torch.Generator().manual_seed(1)
    rows = prompts(g, [3, 7, 5])
    out = generate(bert, rows, mask_id=MASK, pad_id=PAD, gen_length=8, steps=8,
                   padding_side=side, generator=g, **options)
    assert [len(r) for r in out] == [11, 15, 13]
    for row, prompt in zip(out, rows, strict=True):
        assert row[:len(prompt)] == prompt
        assert MASK not in row and PAD not in row[len(prompt):]


@pytest.mark.parametrize("remask", [None, *REMASK_SCHEDULES])
def test_bert_infills_masks_anywhere(bert, remask):
    g = torch.Generator().manual_seed(2)
    x = torch.randint(5, VOCAB, (4, 20), generator=g)
    holes = torch.rand(4, 20, generator=g) < 0.4
    out = generate(bert, x.masked_fill(holes, MASK), mask_id=MASK, gen_length=0, steps=5,
                   remask=remask, block_length=3, generator=g)
    assert out.shape == x.shape and not (out == MASK).any()
    assert torch.equal(out[~holes], x[~holes])


def test_padding_is_hidden_from_a_model_that_takes_an_attention_mask(bert):
    # The same prompt alone and beside a longer one (so padded) decodes to the same tokens.
    g = torch.Generator().manual_seed(3)
    short, long_ = prompts(g, [3, 9])
    alone = generate(bert, [short], mask_id=MASK, pad_id=PAD, gen_length=4, steps=4,
                     padding_side="right")
    both = generate(bert, [short, long_], mask_id=MASK, pad_id=PAD, gen_length=4, steps=4,
                    padding_side="right")
    assert both[0] == alone[0]


class Fixed(nn.Module):
    """Logits chosen by hand, the same at every step; records each call's input."""

    def __init__(self, logits):
        super().__init__()
        self.logits = logits
        self.w = nn.Parameter(torch.zeros(()))
        self.calls = []

    def forward(self, x):
        self.calls.append(x.clone())
        return self.logits.expand(x.shape[0], -1, -1)


def one_hot_logits(probs):
    return torch.log(torch.tensor(probs).clamp_min(1e-9))[None]


def test_planners_on_hand_made_probabilities():
    probs = torch.tensor([[[0.5, 0.5, 0.0], [0.9, 0.1, 0.0], [0.6, 0.2, 0.2], [0.4, 0.3, 0.3]]])
    margin = check_planner("top_margin")(probs, None)
    assert margin.argmax().item() == 1
    assert torch.allclose(margin, torch.tensor([[0.0, 0.8, 0.4, 0.1]]))
    top = check_planner("top_prob")(probs, None)[0]
    assert top.tolist() == pytest.approx([0.5, 0.9, 0.6, 0.4])
    ent = check_planner("entropy")(probs, None)[0]
    assert ent.argmax().item() == 1 and ent.argmin().item() == 3  # negative entropy
    with pytest.raises(ValueError, match="planner"):
        check_planner("best")


@pytest.mark.parametrize("planner, order", [
    ("top_margin", [0, 3, 2, 1]),  # margins .8 .16 .20 .36
    ("top_prob", [0, 1, 3, 2]),  # max probabilities .9 .58 .45 .52
])
def test_generate_reveals_in_planner_order(planner, order):
    # token 0 = mask, 1..4 values; one distribution per position, the same at every step
    probs = [[0.0, 0.9, 0.1, 0.0, 0.0], [0.0, 0.58, 0.42, 0.0, 0.0],
             [0.0, 0.45, 0.05, 0.25, 0.25], [0.0, 0.52, 0.16, 0.16, 0.16]]
    model = Fixed(one_hot_logits(probs))
    out = generate(model, torch.zeros(1, 4, dtype=torch.long), mask_id=0, gen_length=0,
                   steps=4, planner=planner)
    assert out.tolist() == [[1, 1, 1, 1]]
    seen = [set(torch.nonzero(c[0]).flatten().tolist()) for c in model.calls] + [set(range(4))]
    assert [next(iter(b - a)) for a, b in zip(seen, seen[1:], strict=False)] == order


def test_threshold_reveals_at_least_one_per_step_and_everything_above():
    # two positions are sure (p = .99), the rest unsure (p = .4): with threshold .9 the first
    # step takes both sure ones, later steps one each; the forward passes drop accordingly
    sure, unsure = [0.0, 0.99, 0.01], [0.0, 0.4, 0.6]
    probs = [sure, unsure, sure, unsure, unsure]
    model = Fixed(one_hot_logits(probs))
    info = generate(model, torch.zeros(1, 5, dtype=torch.long), mask_id=0, gen_length=0,
                    steps=5, threshold=0.9, return_info=True)
    assert isinstance(info, Generation) and not (info.ids == 0).any()
    counts = [int((c != 0).sum()) for c in model.calls] + [5]
    per_step = [b - a for a, b in zip(counts, counts[1:], strict=False)]
    assert per_step == [2, 1, 1, 1] and info.forward_passes == 4
    assert all(k >= 1 for k in per_step)
    # a threshold nobody reaches still reveals (the schedule's K, at least one) each step
    model = Fixed(one_hot_logits([unsure] * 5))
    info = generate(model, torch.zeros(1, 5, dtype=torch.long), mask_id=0, gen_length=0,
                    steps=5, threshold=0.999, return_info=True)
    assert info.forward_passes == 5 and int(info.steps_used) == 5


def test_blocks_decode_left_to_right():
    model = Fixed(one_hot_logits([[0.0, 0.9, 0.1]] * 7))
    generate(model, torch.tensor([[2]]), mask_id=0, gen_length=6, steps=6, block_length=2,
             planner="random", generator=torch.Generator().manual_seed(0))
    for call in model.calls:
        filled = (call[0, 1:] != 0).tolist()
        # a later position is never revealed while an earlier block has a mask
        blocks = [filled[i:i + 2] for i in range(0, 6, 2)]
        done = [all(b) for b in blocks]
        started = [any(b) for b in blocks]
        assert all(done[i] or not any(started[i + 1:]) for i in range(3))


def test_remasking_returns_tokens_to_mask_and_still_finishes():
    g = torch.Generator().manual_seed(5)
    model = Fixed(one_hot_logits([[0.0, 0.7, 0.3]] * 12))
    info = generate(model, torch.zeros(2, 12, dtype=torch.long), mask_id=0, gen_length=0,
                    steps=12, remask=Cap(eta=0.3, paced=False), generator=g,
                    return_info=True)
    masked_counts = [int((c == 0).sum()) for c in model.calls]
    # unpaced, the schedule keeps the masked count on the linear path: 2 rows x (12, ..., 1)
    assert masked_counts == [2 * m for m in range(12, 0, -1)]
    assert not (info.ids == 0).any() and info.forward_passes == 12
    # and some revealed token went back to mask on the way (else remasking did nothing)
    back = any(bool(((a != 0) & (b == 0)).any())
               for a, b in zip(model.calls, model.calls[1:], strict=False))
    assert back


def passes(model, ids, mask_id=0):
    """Per forward pass: (new tokens revealed, tokens sent back to mask), over all rows."""
    seen = [*model.calls, ids]
    return [(int(((a == mask_id) & (b != mask_id)).sum()),
             int(((a != mask_id) & (b == mask_id)).sum()))
            for a, b in zip(seen, seen[1:], strict=False)]


@pytest.mark.parametrize("schedule", [Cap(eta=1.0), Rescale(eta=1.0), Conf(eta=1.0)])
def test_paced_remasking_never_reveals_more_per_pass_than_the_schedule(schedule):
    g = torch.Generator().manual_seed(6)
    # fewer steps than masks: 12 in 5 steps, the linear schedule reveals 3, 3, 2, 2, 2 -- a
    # paced schedule may remask only in the passes with room (2 < 3), one token each
    model = Fixed(one_hot_logits([[0.0, 0.7, 0.3]] * 12))
    ids = generate(model, torch.zeros(1, 12, dtype=torch.long), mask_id=0, gen_length=0,
                   steps=5, remask=schedule, generator=g)
    per_pass = passes(model, ids)
    assert not (ids == 0).any() and len(model.calls) == 5
    assert all(new <= 3 for new, _ in per_pass)
    assert [back for _, back in per_pass] == [0, 0, 1, 1, 0]
    # more steps than masks: 4 in 10 steps; plain decoding would finish after 4 passes, a paced
    # schedule spends the spare ones holding the masked count level (ReMDM's loop), one new
    # token per pass at most, and still ends with every mask filled by the last pass
    model = Fixed(one_hot_logits([[0.0, 0.7, 0.3]] * 4))
    ids = generate(model, torch.zeros(1, 4, dtype=torch.long), mask_id=0, gen_length=0,
                   steps=10, remask=schedule, generator=g)
    per_pass = passes(model, ids)
    assert not (ids == 0).any() and 4 < len(model.calls) <= 10
    assert all(new <= 1 for new, _ in per_pass) and sum(back for _, back in per_pass) > 0
    held = [new == back for new, back in per_pass]
    assert any(held) and not held[-1]


def test_conf_remasks_the_least_confident_first():
    schedule = Conf(eta=1.0)
    candidates = torch.tensor([[True, True, True, False]])
    confidence = torch.tensor([[0.9, 0.2, 0.5, 0.0]])
    picked = schedule.pick(candidates, confidence, torch.tensor([1]), None)
    assert picked.tolist() == [[False, True, False, False]]


def test_bad_arguments_are_refused_at_the_boundary(bert):
    x = torch.full((1, 4), MASK)
    for kwargs, match in [({"planner": "best"}, "planner"), ({"steps": 0}, "steps"),
                          ({"remask": "often"}, "remask"), ({"threshold": 2.0}, "threshold"),
                          ({"k_schedule": "cubic"}, "K schedule"),
                          ({"remask": "cap:7"}, "eta"),
                          ({"block_length": 1, "steps": 2, "gen_length": 4}, "blocks")]:
        args = {"mask_id": MASK, "gen_length": 0, "steps": 3} | kwargs
        with pytest.raises(ValueError, match=match):
            generate(bert, x, **args)
    with pytest.raises(ValueError, match="pad_id"):
        generate(bert, [[5], [5, 6]], mask_id=MASK, gen_length=2, steps=2)
    assert check_remask("conf:0.2") == Conf(eta=0.2) and check_remask("conf") == Conf(eta=0.1)
    assert check_remask("conf:0.1:0.5") == Conf(eta=0.1, start=0.5)
    assert check_remask("cap:0.05:0.2:0.8") == Cap(eta=0.05, start=0.2, stop=0.8)
    with pytest.raises(ValueError, match="start"):
        check_remask("conf:0.1:0.9:0.5")
    assert set(PLANNERS) == {"random", "top_prob", "top_margin", "entropy"}


def test_our_transformer_goes_through_the_same_decoder():
    from icml25.nn import Transformer, TransformerConfig

    torch.manual_seed(0)
    net = Transformer(TransformerConfig(vocab_size=12, seq_len=16, d_model=16, n_layers=1,
                                        n_heads=2, causal=False))
    out = generate(net, torch.randint(1, 12, (3, 6)), mask_id=0, gen_length=10, steps=4,
                   block_length=5)
    assert out.shape == (3, 16) and not (out == 0).any()
