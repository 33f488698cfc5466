"""A tiny training job for the trainer tests (run in-process, as a subprocess, by torchrun)."""

import sys
import time

import torch

from icml25.nn import TrainConfig, Transformer, TransformerConfig, train


def make_model() -> Transformer:
    torch.manual_seed(0)
    return Transformer(TransformerConfig(vocab_size=8, seq_len=6, d_model=16, n_layers=1,
                                         n_heads=2, dropout=0.1))


def batch_fn(step, gen, rank):
    x = torch.randint(0, 8, (4, 6), generator=gen)
    return x, (x + 1) % 8  # learn "add one"


def loss_fn(model, batch):
    x, y = batch
    logits = model(x)
    return torch.nn.functional.cross_entropy(logits.reshape(-1, 8), y.reshape(-1))


def run(out_dir, steps=30, slow=0.0, ema=None):
    def slow_batches(step, gen, rank):
        time.sleep(slow)
        return batch_fn(step, gen, rank)

    # One thread: bit-exact comparisons across processes need the same reduction order.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model = make_model()
        cfg = TrainConfig(steps=steps, batch_size=4, lr=3e-3, warmup_steps=3,
                          checkpoint_every=5, log_every=5, seed=1, out_dir=out_dir,
                          ema_decay=ema)
        state = train(model, loss_fn, slow_batches, cfg)
    finally:
        torch.set_num_threads(threads)
    return model, state


if __name__ == "__main__":
    model, state = run(sys.argv[1], steps=int(sys.argv[2]), slow=float(sys.argv[3]))
    if int(__import__("os").environ.get("RANK", "0")) == 0:
        torch.save(model.state_dict(), f"{sys.argv[1]}/final.pt")
