"""A tiny training job for the trainer tests (run in-process, as a subprocess, by torchrun).

``python toy_train.py OUT STEPS SLOW [key=value ...]``: the keys are ``TrainConfig`` fields (ints,
floats or strings) plus ``pool=1`` (the batches of :func:`pool_batches`) and ``dropout=0``.
"""

import json
import os
import sys
import time

import torch

from icml25.nn import TrainConfig, Transformer, TransformerConfig, train

POOL = 16  # rows of one step's pool (pool_batches)


def make_model(dropout: float = 0.1) -> Transformer:
    torch.manual_seed(0)
    return Transformer(TransformerConfig(vocab_size=8, seq_len=6, d_model=16, n_layers=1,
                                         n_heads=2, dropout=dropout))


def batch_fn(step, gen, rank):
    x = torch.randint(0, 8, (4, 6), generator=gen)
    return x, (x + 1) % 8  # learn "add one"


def pool_batches(batch_size: int):
    """Step ``s`` draws a fixed pool of POOL rows from ``s`` alone; (virtual) rank ``r`` takes
    rows ``[r * batch_size, (r + 1) * batch_size)``. So 1 process with batch 16, 1 with batch 4
    accumulating 4 micro-batches, and 2 with batch 4 accumulating 2 see the same 16 rows."""
    def make(step, gen, rank):
        pool = torch.randint(0, 8, (POOL, 6), generator=torch.Generator().manual_seed(1000 + step))
        x = pool[rank * batch_size:(rank + 1) * batch_size]
        return x, (x + 1) % 8
    return make


def loss_fn(model, batch):
    x, y = batch
    logits = model(x)
    return torch.nn.functional.cross_entropy(logits.reshape(-1, 8), y.reshape(-1))


def run(out_dir, steps=30, slow=0.0, ema=None, *, pool=False, dropout=0.1, loss=loss_fn,
        on_log=None, batch_source=None, **overrides):
    """Train the toy model; ``overrides`` are further ``TrainConfig`` fields."""
    cfg = TrainConfig(**{**dict(steps=steps, batch_size=4, lr=3e-3, warmup_steps=3,
                                checkpoint_every=5, log_every=5, seed=1, out_dir=out_dir,
                                ema_decay=ema, device="cpu"), **overrides})
    batches = batch_source or (pool_batches(cfg.batch_size) if pool else batch_fn)

    def slow_batches(step, gen, rank):
        time.sleep(slow)
        return batches(step, gen, rank)

    # One thread: bit-exact comparisons across processes need the same reduction order.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model = make_model(dropout)
        state = train(model, loss, slow_batches, cfg, on_log=on_log)
    finally:
        torch.set_num_threads(threads)
    return model, state


def _value(text: str):
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


if __name__ == "__main__":
    extra = dict(arg.split("=", 1) for arg in sys.argv[4:])
    kwargs = {k: _value(v) for k, v in extra.items()}
    kwargs["pool"] = bool(kwargs.get("pool", 0))
    model, state = run(sys.argv[1], steps=int(sys.argv[2]), slow=float(sys.argv[3]), **kwargs)
    if int(os.environ.get("RANK", "0")) == 0:
        torch.save(model.state_dict(), f"{sys.argv[1]}/final.pt")
        with open(f"{sys.argv[1]}/final_log.json", "w") as f:
            json.dump(state.log, f)
