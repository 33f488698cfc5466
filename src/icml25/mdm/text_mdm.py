"""Byte-level masked diffusion on Python source, and the causal model that judges its samples.

Two ``icml25.nn.Transformer`` models of the same size (rotary positions, 256-byte context) are
trained on the standard library's training modules (:mod:`icml25.mdm.text_data`):

- the **MDM**, bidirectional, with the masked-diffusion ELBO (:func:`masked_diffusion_loss`) on
  random line-aligned windows (only PAD past a file's end is never masked);
- the **judge**, causal, with next-byte cross-entropy on the same windows, used only to score the
  MDM's unconditional samples (generative perplexity, the paper's Fig. 3; the paper's judge is
  LLaMA-2-7B, ours is this small model trained here).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from icml25.mdm.objective import masked_diffusion_loss
from icml25.mdm.text_data import MASK, PAD, VOCAB_SIZE, Corpus, window_index, windows
from icml25.nn import TrainConfig, Transformer, TransformerConfig, train

SEQ_LEN = 256


def default_model_config(*, causal: bool = False, **overrides) -> TransformerConfig:
    """0.8M parameters (4 x 128, 4 heads, rotary): trains on one CPU thread in well under an
    hour; the same shape for the MDM and the causal judge."""
    base = dict(vocab_size=VOCAB_SIZE, seq_len=SEQ_LEN, d_model=128, n_layers=4, n_heads=4,
                dropout=0.0, causal=causal, positions="rotary")
    return TransformerConfig(**(base | overrides))


def text_batch(index, batch_size: int, generator: torch.Generator) -> torch.Tensor:
    """``batch_size`` random line-aligned windows (int64 tokens)."""
    picks = torch.randint(0, len(index.starts), (batch_size,), generator=generator).numpy()
    return torch.from_numpy(windows(index, picks))


def mdm_text_loss(model, tokens: torch.Tensor, generator: torch.Generator | None = None):
    return masked_diffusion_loss(model, tokens, tokens != PAD, generator, mask_id=MASK)


def causal_text_loss(model, tokens: torch.Tensor):
    """Next-byte cross-entropy (PAD targets ignored); also the bits per byte."""
    logits = model(tokens[:, :-1]).float()
    target = tokens[:, 1:].masked_fill(tokens[:, 1:] == PAD, -100)
    loss = F.cross_entropy(logits.flatten(0, 1), target.flatten(), ignore_index=-100)
    return loss, {"bits_per_byte": loss.detach() / torch.log(torch.tensor(2.0))}


def train_text(corpus: Corpus, cfg: TrainConfig, model_cfg: TransformerConfig | None = None, *,
               on_log=None, init: Transformer | None = None) -> tuple[Transformer, list[dict]]:
    """Train (or resume from ``cfg.out_dir``) the MDM, or the causal judge when
    ``model_cfg.causal``, on random windows of ``corpus``."""
    torch.manual_seed(cfg.seed)
    model = init or Transformer(model_cfg or default_model_config())
    index = window_index(corpus, model.cfg.seq_len)

    def batch_fn(step, gen, rank):
        return text_batch(index, cfg.batch_size, gen), gen

    def loss_fn(net, batch):
        tokens, gen = batch
        if model.cfg.causal:
            return causal_text_loss(net, tokens)
        return mdm_text_loss(net, tokens, gen)

    state = train(model, loss_fn, batch_fn, cfg, on_log=on_log)
    return model, state.log


@torch.no_grad()
def held_out_loss(model, corpus: Corpus, n_windows: int = 128, *, seed: int = 0,
                  batch_size: int = 32) -> dict:
    """The training loss on ``n_windows`` fixed windows of ``corpus`` (same windows and, for the
    MDM, the same masks for every model given the same ``seed``): ELBO nats per byte for the
    MDM, next-byte bits per byte for a causal model. Tracks a run on held-out modules."""
    was_training = model.training
    model.eval()
    index = window_index(corpus, model.cfg.seq_len)
    picks = np.random.default_rng(seed).choice(len(index.starts), n_windows, replace=False)
    gen = torch.Generator().manual_seed(seed)
    losses, weights = [], []
    for lo in range(0, n_windows, batch_size):
        tokens = torch.from_numpy(windows(index, picks[lo:lo + batch_size]))
        if model.cfg.causal:
            loss = causal_text_loss(model, tokens)[1]["bits_per_byte"]
        else:
            loss = mdm_text_loss(model, tokens, gen)[0]
        losses.append(float(loss))
        weights.append(len(tokens))
    model.train(was_training)
    return {"loss": float(np.average(losses, weights=weights)), "n_windows": n_windows,
            "measure": "bits_per_byte" if model.cfg.causal else "elbo_nats_per_byte"}
