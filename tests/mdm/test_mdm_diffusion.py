"""The masked-diffusion objective, planners and sampler on hand-made logits and oracle models."""

import pytest
import torch
from torch import nn

from icml25.mdm.objective import mask_tokens, mdm_loss
from icml25.mdm.planners import K_SCHEDULES, PLANNERS, select_top_k
from icml25.mdm.sampler import sample


def test_masking_touches_only_maskable_tokens_at_rate_t():
    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(1, 10, (4000, 81), generator=g)
    maskable = torch.rand(4000, 81, generator=g) < 0.6
    noisy, masked, t = mask_tokens(tokens, maskable, g, min_one=True)
    assert not (masked & ~maskable).any()
    assert torch.equal(noisy[~masked], tokens[~masked]) and (noisy[masked] == 0).all()
    assert masked.any(1)[maskable.any(1)].all()
    # The fraction masked tracks t (binomial error on ~49 maskable cells per row).
    frac = masked.sum(1) / maskable.sum(1)
    assert (frac - t).abs().mean() < 0.08
    assert abs(float(frac.mean()) - 0.5) < 0.02
    # Stratified t covers (0, 1] evenly: one draw per 1/4000-wide bin.
    gaps = ((t - 1e-3) / (1 - 1e-3)).sort().values.diff()
    assert torch.allclose(gaps, torch.full_like(gaps, 1 / 4000), atol=1e-5)


def test_min_rate_keeps_the_masking_rate_high():
    g = torch.Generator().manual_seed(1)
    tokens = torch.randint(1, 10, (2000, 36), generator=g)
    maskable = torch.rand(2000, 36, generator=g) < 0.7
    _, masked, t = mask_tokens(tokens, maskable, g, min_rate=0.8)
    assert t.min() >= 0.8 and t.max() <= 1.0 and abs(float(t.mean()) - 0.9) < 0.01
    _, masked, t = mask_tokens(tokens, maskable, g, min_rate=1.0)
    assert torch.equal(masked, maskable) and (t == 1).all()
    with pytest.raises(ValueError, match="min_rate"):
        mask_tokens(tokens, maskable, g, min_rate=1.5)

def test_elbo_loss_is_unbiased_for_the_mean_token_cross_entropy():
    g = torch.Generator().manual_seed(1)
    b, length, v = 20000, 10, 5
    targets = torch.randint(1, v, (b, length), generator=g)
    logits = torch.randn(b, length, v, generator=g)
    maskable = torch.ones(b, length, dtype=torch.bool)
    _, masked, t = mask_tokens(targets, maskable, g, stratified=False)
    full_ce = torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())
    elbo = mdm_loss(logits, targets, masked, t, maskable, weighting="elbo")
    plain = mdm_loss(logits, targets, masked, t, maskable, weighting="none")
    assert float(elbo) == pytest.approx(float(full_ce), rel=0.05)  # ~1% standard error
    assert float(plain) == pytest.approx(float(full_ce), rel=0.02)
    with pytest.raises(ValueError, match="weighting"):
        mdm_loss(logits, targets, masked, t, weighting="focal")


def test_top_margin_picks_the_largest_margin_and_ignores_unmasked():
    probs = torch.tensor([[[0.5, 0.5, 0.0], [0.9, 0.1, 0.0], [0.6, 0.2, 0.2], [1.0, 0.0, 0.0]]])
    scores = PLANNERS["top_margin"](probs, None)
    assert torch.allclose(scores, torch.tensor([[0.0, 0.8, 0.4, 1.0]]))
    eligible = torch.tensor([[True, True, True, False]])  # position 3 is already revealed
    chosen = select_top_k(scores, eligible, torch.tensor([2]))
    assert chosen.tolist() == [[False, True, True, False]]
    assert PLANNERS["top_prob"](probs, None).argmax().item() == 3
    assert PLANNERS["entropy"](probs, None)[0, 3] > PLANNERS["entropy"](probs, None)[0, 0]


def test_select_top_k_never_exceeds_eligible_even_with_large_k():
    scores = torch.randn(3, 6)
    eligible = torch.tensor([[1, 0, 1, 0, 0, 0], [0] * 6, [1] * 6], dtype=torch.bool)
    chosen = select_top_k(scores, eligible, torch.tensor([5, 2, 6]))
    assert chosen.sum(1).tolist() == [2, 0, 6] and not (chosen & ~eligible).any()


@pytest.mark.parametrize("schedule", ["linear", "dream"])
@pytest.mark.parametrize("blanks,steps", [(55, 50), (3, 50), (81, 7), (50, 50)])
def test_deterministic_schedules_sum_to_the_blanks(blanks, steps, schedule):
    n = torch.tensor([blanks])
    total = 0
    for step in range(steps):
        k = K_SCHEDULES[schedule](n, step, steps, None)
        assert k.item() >= 0
        total += k.item()
        n = n - k
    assert total == blanks and n.item() == 0


def test_binomial_counts_match_the_expected_count_on_average():
    g = torch.Generator().manual_seed(3)
    k = K_SCHEDULES["binomial"](torch.full((20000,), 40), 0, 8, g).float()
    assert abs(k.mean().item() - 5.0) < 0.05


class Oracle(nn.Module):
    """Certain of the answer on 'determined' positions, uniform on the others."""

    def __init__(self, answer, determined, vocab=4):
        super().__init__()
        self.answer, self.determined, self.vocab = answer, determined, vocab
        self.calls = []

    def forward(self, x):
        self.calls.append(x.clone())
        logits = torch.zeros(*x.shape, self.vocab)
        sure = torch.nn.functional.one_hot(self.answer, self.vocab).float() * 20
        return torch.where(self.determined[..., None], sure, logits)


@pytest.mark.parametrize("planner", ["random", "top_prob", "top_margin", "entropy"])
@pytest.mark.parametrize("remask", [False, True])
def test_every_planner_solves_with_a_perfect_model(planner, remask):
    g = torch.Generator().manual_seed(4)
    answer = torch.randint(1, 4, (8, 30), generator=g)
    maskable = torch.rand(8, 30, generator=g) < 0.7
    oracle = Oracle(answer, torch.ones_like(maskable))
    out = sample(oracle, answer, maskable, steps=10, planner=planner, remask=remask, generator=g)
    assert torch.equal(out, answer)


def test_top_margin_reveals_determined_cells_first():
    answer = torch.tensor([[1, 2, 3, 1, 2, 3]])
    maskable = torch.ones(1, 6, dtype=torch.bool)
    determined = torch.tensor([[False, True, False, True, False, True]])
    oracle = Oracle(answer, determined)
    sample(oracle, answer, maskable, steps=6, planner="top_margin", noise=0.0)
    # After 3 one-cell steps exactly the 3 determined cells are revealed.
    assert ((oracle.calls[3] != 0) == determined).all()


def test_sampler_rejects_bad_arguments():
    oracle = Oracle(torch.ones(1, 3, dtype=torch.long), torch.ones(1, 3, dtype=torch.bool))
    x, m = torch.ones(1, 3, dtype=torch.long), torch.ones(1, 3, dtype=torch.bool)
    with pytest.raises(ValueError, match="planner"):
        sample(oracle, x, m, planner="best")
    with pytest.raises(ValueError, match="steps"):
        sample(oracle, x, m, steps=0)
    with pytest.raises(ValueError, match="shape"):
        sample(oracle, x[0], m[0])
