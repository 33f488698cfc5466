"""Uniform-noise discrete diffusion (SEDD's uniform graph): forward process, score entropy,
analytic sampler, and a trained toy model whose samples match the data's marginals."""

from __future__ import annotations

import itertools
import math

import pytest

torch = pytest.importorskip("torch")

from icml25.creativity.uniform import (  # noqa: E402
    GeometricNoise,
    UniformDiffusion,
    analytic_probs,
    perturb,
    sample,
    score_entropy,
    transition,
    true_log_score,
)

P0 = torch.tensor([[0.5, 0.2, 0.1, 0.1, 0.1], [0.05, 0.05, 0.1, 0.2, 0.6],
                   [0.2, 0.2, 0.2, 0.2, 0.2]])


def _within(freq: torch.Tensor, p: torch.Tensor, n: int, z: float = 4.0) -> torch.Tensor:
    """|freq - p| <= z binomial standard errors of a rate over n draws, per cell."""
    se = (p * (1 - p) / n).sqrt()
    return (freq - p).abs() <= z * se + 1e-9


def test_geometric_noise_ends_and_rate_is_the_derivative():
    noise = GeometricNoise(1e-4, 20.0)
    assert noise.total(torch.tensor(0.0)).item() == pytest.approx(1e-4)
    assert noise.total(torch.tensor(1.0)).item() == pytest.approx(20.0)
    t = torch.tensor([0.3], dtype=torch.float64)
    h = 1e-6
    numeric = (noise.total(t + h) - noise.total(t - h)) / (2 * h)
    assert noise.rate(t).item() == pytest.approx(numeric.item(), rel=1e-6)
    with pytest.raises(ValueError):
        GeometricNoise(1.0, 0.5)


def test_perturb_draws_from_the_transition_kernel():
    n, b = 5, 40_000
    x0 = torch.full((b, 1), 2)
    sigma_bar = torch.full((b,), 0.8)
    gen = torch.Generator().manual_seed(0)
    xt = perturb(x0, torch.ones_like(x0, dtype=torch.bool), sigma_bar, n, gen)
    freq = torch.bincount(xt[:, 0], minlength=n) / b
    want = transition(x0[:1], sigma_bar[:1], n)[0, 0]
    assert want.sum().item() == pytest.approx(1.0)
    assert want[2].item() == pytest.approx(math.exp(-0.8) + (1 - math.exp(-0.8)) / n)
    assert _within(freq, want, b).all()
    kept = perturb(x0, torch.zeros_like(x0, dtype=torch.bool), sigma_bar, n, gen)
    assert torch.equal(kept, x0)  # positions outside the diffused span never move


def test_score_entropy_is_zero_at_the_conditional_ratio_and_positive_elsewhere():
    n = 4
    pairs = list(itertools.product(range(n), range(n)))  # every (x_t, x0)
    xt = torch.tensor([[a] for a, _ in pairs])
    x0 = torch.tensor([[b] for _, b in pairs])
    for sb in (1e-3, 0.5, 5.0):
        sigma_bar = torch.full((len(pairs),), sb)
        kernel = transition(x0, sigma_bar, n)[:, 0]  # p(. | x0)
        ratio = kernel / kernel.gather(-1, xt)  # r_y = p(y|x0) / p(x_t|x0)
        at_ratio = score_entropy(ratio.log()[:, None], xt, x0, sigma_bar, torch.ones(len(pairs)))
        assert at_ratio.abs().max().item() < 1e-4 * max(1.0, n / math.expm1(sb))
        off = score_entropy(ratio.log()[:, None] + 0.3, xt, x0, sigma_bar,
                            torch.ones(len(pairs)))
        assert (off > at_ratio).all()


def test_expected_score_entropy_is_minimised_by_the_true_score():
    """Averaged over x0 given x_t, the loss's gradient vanishes at the marginal ratio
    p_t(y) / p_t(x_t): score entropy estimates the score, not the conditional ratio."""
    n, sb = 5, 0.6
    p0 = P0[0].double()
    sigma_bar = torch.full((n * n,), sb, dtype=torch.float64)
    xt = torch.tensor([[a] for a in range(n) for _ in range(n)])
    x0 = torch.tensor([[b] for _ in range(n) for b in range(n)])
    weight = p0[x0[:, 0]] * transition(x0, sigma_bar, n)[:, 0].gather(-1, xt)[:, 0]
    # One score per x_t (the model does not see x0), shared by the rows of that x_t.
    states = torch.arange(n)[:, None]
    truth = true_log_score(p0[None], states, sigma_bar[:n]).detach()  # (n, 1, n)

    def expected(per_state):
        per = score_entropy(per_state[xt[:, 0]], xt, x0, sigma_bar, torch.ones_like(sigma_bar))
        return (weight * per[:, 0]).sum()

    ls = truth.clone().requires_grad_()
    expected(ls).backward()
    off_diag = ~torch.nn.functional.one_hot(states, n).bool()
    assert ls.grad[off_diag].abs().max().item() < 1e-9
    assert expected(truth + 0.2).item() > expected(truth).item()
    assert expected(truth - 0.2).item() > expected(truth).item()


def test_analytic_step_is_bayes_rule_for_one_token():
    """One step from t to s with the exact score gives p(x_s | x_t) = p_s(y) p(x_t|y) / p_t(x_t)."""
    n = 5
    p0 = P0[1:2]
    s_bar, t_bar = torch.tensor([0.3]), torch.tensor([1.1])
    for x in range(n):
        xt = torch.tensor([[x]])
        probs = analytic_probs(true_log_score(p0, xt, t_bar), xt, t_bar - s_bar)[0, 0]
        ps = (torch.exp(-s_bar) * p0[0] + (1 - torch.exp(-s_bar)) / n)
        back = transition(torch.arange(n)[:, None], t_bar - s_bar, n)[:, 0, x]  # p(x_t=x|y)
        bayes = ps * back / (ps * back).sum()
        assert torch.allclose(probs, bayes, atol=1e-5)


def _oracle(p0, noise):
    return lambda xt, t: true_log_score(p0, xt, noise.total(t))


def test_sampler_with_exact_scores_recovers_the_marginals():
    """Exact for independent positions: only the sampling error (4 standard errors) remains.
    The same test fails for a score of all-ones (the sampler's output is then uniform)."""
    b, noise = 6000, GeometricNoise()
    x = torch.zeros(b, P0.shape[0], dtype=torch.long)
    noised = torch.ones_like(x, dtype=torch.bool)
    gen = torch.Generator().manual_seed(1)
    out = sample(_oracle(P0, noise), x, noised, 5, steps=8, noise=noise, generator=gen)
    freq = torch.stack([torch.bincount(out[:, i], minlength=5) / b for i in range(P0.shape[0])])
    assert _within(freq, P0, b).all()
    flat = sample(lambda xt, t: torch.zeros(*xt.shape, 5), x, noised, 5, steps=8, generator=gen)
    freq = torch.stack([torch.bincount(flat[:, i], minlength=5) / b for i in range(2)])
    assert not _within(freq, P0[:2], b).all()


def test_sampler_keeps_the_prompt():
    x = torch.tensor([[3, 1, 0, 0]] * 50)
    noised = torch.tensor([[False, False, True, True]] * 50)
    out = sample(_oracle(P0[:1].expand(4, 5), GeometricNoise()), x, noised, 5, steps=4,
                 generator=torch.Generator().manual_seed(0))
    assert torch.equal(out[:, :2], x[:, :2])


# --- a trained toy model --------------------------------------------------------------------

N, L = 4, 3
TOY_P = torch.tensor([0.55, 0.25, 0.15, 0.05])  # first token; the second copies it + 1 mod N


def _toy_batch(b: int, gen: torch.Generator) -> torch.Tensor:
    """Sequences ``[time slot, a, (a + 1) % N, c]``: a ~ TOY_P, c ~ uniform-independent skew."""
    a = torch.multinomial(TOY_P, b, replacement=True, generator=gen)
    c = torch.multinomial(TOY_P.flip(0), b, replacement=True, generator=gen)
    return torch.stack([torch.zeros_like(a), a, (a + 1) % N, c], 1)


def test_a_trained_toy_model_samples_the_data_marginals():
    """Train a tiny bidirectional transformer with score entropy, sample 2,000 sequences and
    compare each position's marginal with the data's within 4 standard errors of the sampling,
    and the copy rule (second = first + 1) in at least 95% of samples."""
    from icml25.nn import Transformer, TransformerConfig

    torch.manual_seed(0)
    bins, steps = 64, 800
    diff = UniformDiffusion(range(N), list(range(N, N + bins)))
    net = Transformer(TransformerConfig(vocab_size=N + bins, seq_len=L + 1, d_model=32,
                                        n_layers=1, n_heads=4))
    opt = torch.optim.AdamW(net.parameters(), lr=3e-3)
    # The learning rate decays to zero: a model still jittering at the end is off by more
    # than the sampling error.
    decay = torch.optim.lr_scheduler.LambdaLR(opt, lambda i: 1 - i / steps)
    gen = torch.Generator().manual_seed(0)
    noised = torch.tensor([[False] + [True] * L])
    for _ in range(steps):
        tokens = _toy_batch(512, gen)
        loss = diff.loss(net, tokens, noised.expand_as(tokens), gen)
        opt.zero_grad()
        loss.backward()
        opt.step()
        decay.step()
    net.eval()
    b = 2000
    start = torch.zeros(b, L + 1, dtype=torch.long)
    out = diff.sample(net, start, noised.expand(b, -1), steps=32,
                      generator=torch.Generator().manual_seed(3))
    want = [TOY_P, (TOY_P.roll(1)), TOY_P.flip(0)]  # position 2 holds a + 1: shifted
    for pos, p in zip(range(1, L + 1), want, strict=True):
        freq = torch.bincount(out[:, pos], minlength=N) / b
        assert _within(freq, p, b).all(), (pos, freq, p)
    assert ((out[:, 2] == (out[:, 1] + 1) % N).float().mean().item()) >= 0.95


def test_alphabet_and_time_tokens_are_checked():
    with pytest.raises(ValueError):
        UniformDiffusion([0], [1])
    with pytest.raises(ValueError):
        UniformDiffusion([0, 1], [1, 2])
    diff = UniformDiffusion([0, 1], [2])
    tokens = torch.tensor([[2, 0, 5]])
    with pytest.raises(ValueError, match="outside the alphabet"):
        diff.loss(lambda x: torch.zeros(*x.shape, 6), tokens, torch.tensor([[False, True, True]]))
