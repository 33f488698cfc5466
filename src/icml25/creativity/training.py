"""Next-token, teacherless and masked-diffusion training on the creativity tasks, with
seed-conditioning, on ``icml25.nn`` transformers trained from scratch (needs the ``torch`` extra).

- ``ntp``          causal LM, loss on answer tokens only (prompt and padding ignored)
- ``teacherless``  the repo's hybrid: every example keeps its NTP row and adds rows whose answer
                   inputs are all replaced by ``<dummy>`` while the labels stay the true answer
                   (sibling: +2 single-target rows; triangle: +1 row w.p. 0.5 per triangle line;
                   circle/line: +3 rows). Decoding is plain autoregression.
- ``diffusion``    bidirectional transformer, ``icml25.mdm`` masked-diffusion loss on the answer
                   span, sampled with the prompt clamped (``icml25.mdm.sample``).

Seed-conditioning: each training example carries its own random seed word (unique across the
set); each test sample gets a fresh one never seen in training, and decoding is greedy.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from icml25.creativity.scoring import Scorer
from icml25.creativity.tasks import (
    DUMMY,
    EDGE,
    END,
    MARKERS,
    MASK,
    PAD,
    SEED_ALPHABET,
    Example,
    Task,
    make_seeds,
    make_task,
    parse_line,
)
from icml25.mdm.objective import mask_tokens, mdm_loss
from icml25.mdm.sampler import sample as mdm_sample
from icml25.nn import TrainConfig, Transformer, TransformerConfig, is_main_process, train
from icml25.nn.device import inference_batch_size, place, resolve_device

METHODS = ("ntp", "teacherless", "diffusion")
IGNORE = -100
GENERATE_BATCH = 512  # prompts per forward pass on the CPU (on a GPU: what fits)


class Vocab:
    """Word-level token ids for one task: a seed word is one token per character."""

    def __init__(self, tokens: Sequence[str]) -> None:
        self.tokens = list(tokens)
        self.index = {t: i for i, t in enumerate(self.tokens)}
        self.pad, self.mask, self.dummy = (self.index[t] for t in (PAD, MASK, DUMMY))
        self.end = self.index[END]

    def __len__(self) -> int:
        return len(self.tokens)

    def prompt(self, seed: str, marker: str) -> list[int]:
        return [self.index[c] for c in seed] + [self.index[marker]]

    def encode(self, tokens: Sequence[str]) -> list[int]:
        try:
            return [self.index[t] for t in tokens]
        except KeyError as exc:
            raise ValueError(f"token {exc.args[0]!r} is not in the task's vocabulary") from None

    def decode_answer(self, ids: Sequence[int]) -> str:
        """Tokens up to and including the first ``</a>`` (the repo cuts generations there)."""
        out = []
        for i in ids:
            out.append(self.tokens[int(i)])
            if int(i) == self.end:
                break
        return " ".join(out)


# --- rows -------------------------------------------------------------------------------------

def _teacherless_targets(task: str, ex: Example,
                         rng: np.random.Generator) -> list[list[int] | None]:
    """Answer positions supervised by each extra dummy-input row (None = all positions)."""
    if task == "sibling":
        return [[1], [2]]  # prompt + 1 dummy -> second sibling; prompt + 2 dummies -> parent
    if task == "triangle":
        return [None] if ex.marker != EDGE and rng.random() < 0.5 else []
    return [None, None, None]  # circle / line: 1 NTP row : 3 teacherless rows


def build_rows(task: str, examples: Sequence[Example], vocab: Vocab, method: str,
               rng: np.random.Generator | None = None) -> dict[str, torch.Tensor]:
    """Tensors for training.

    Causal methods: ``inputs``/``targets`` (R, L-1), next-token shifted, targets ``-100`` on
    prompt and padding. Teacherless rows have every answer input replaced by ``<dummy>``.
    Diffusion: ``tokens`` (R, L) and ``maskable`` (the answer span and trailing padding).
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    rng = rng or np.random.default_rng(0)
    seqs = [(vocab.prompt(e.seed, e.marker), vocab.encode(e.answer), e) for e in examples]
    if not seqs:
        raise ValueError("no training examples")
    length = max(len(p) + len(a) for p, a, _ in seqs)
    if method == "diffusion":
        tokens = torch.full((len(seqs), length), vocab.pad, dtype=torch.long)
        maskable = torch.zeros((len(seqs), length), dtype=torch.bool)
        for r, (p, a, _) in enumerate(seqs):
            tokens[r, :len(p) + len(a)] = torch.tensor(p + a)
            maskable[r, len(p):] = True
        return {"tokens": tokens, "maskable": maskable}
    inputs, targets = [], []
    for p, a, ex in seqs:
        full = p + a + [vocab.pad] * (length - len(p) - len(a))
        tgt = [IGNORE] * (len(p) - 1) + a + [IGNORE] * (length - len(p) - len(a))
        inputs.append(full[:-1])
        targets.append(tgt)
        if method == "teacherless":
            for positions in _teacherless_targets(task, ex, rng):
                x = list(full[:-1])
                x[len(p):len(p) + len(a) - 1] = [vocab.dummy] * (len(a) - 1)
                if positions is None:
                    y = tgt
                else:
                    y = [IGNORE] * len(tgt)
                    for k in positions:
                        y[len(p) - 1 + k] = a[k]
                inputs.append(x)
                targets.append(y)
    return {"inputs": torch.tensor(inputs), "targets": torch.tensor(targets)}


# --- training ---------------------------------------------------------------------------------

@dataclasses.dataclass
class TrainSettings:
    """Model and optimisation settings (defaults: a tiny model that trains on a CPU)."""

    method: str = "ntp"
    seed_len: int | None = None  # None: the data's seeds; 0: strip them; N: fresh N-symbol seeds
    d_model: int = 128
    n_layers: int = 4
    n_heads: int = 4
    steps: int = 2000
    batch_size: int = 64
    lr: float = 1e-3
    warmup_steps: int = 100
    weight_decay: float = 0.01
    min_lr_ratio: float = 0.1  # 1.0: constant lr after the warm-up (the paper's schedule)
    dropout: float = 0.0
    seed: int = 0
    eval_every: int = 0  # >0: score generations every N steps (learning curve)
    eval_n: int = 256
    # Where and how: as in icml25.nn.TrainConfig.
    device: str = "auto"
    precision: str = "fp32"
    compile: bool = False
    grad_accum_steps: int = 1
    max_seconds: float | None = None

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if self.seed_len is not None and self.seed_len < 0:
            raise ValueError("seed_len must be >= 0")
        self.train_config(out_dir=None)  # device, precision, ... are checked here, once

    def train_config(self, out_dir: str | Path | None) -> TrainConfig:
        return TrainConfig(
            steps=self.steps, batch_size=self.batch_size, lr=self.lr,
            warmup_steps=min(self.warmup_steps, self.steps), weight_decay=self.weight_decay,
            min_lr_ratio=self.min_lr_ratio, seed=self.seed,
            log_every=self.eval_every or max(self.steps // 20, 1),
            checkpoint_every=max(self.steps, 1),
            out_dir=str(out_dir) if out_dir is not None else None, device=self.device,
            precision=self.precision, compile=self.compile,
            grad_accum_steps=self.grad_accum_steps, max_seconds=self.max_seconds)


def reseed(examples: Sequence[Example], seed_len: int | None,
           rng: np.random.Generator) -> list[Example]:
    """Give every seeded example a fresh unique seed of ``seed_len`` symbols (0 strips them)."""
    if seed_len is None:
        return list(examples)
    seeded = [e for e in examples if e.marker != EDGE]
    seeds = iter(make_seeds(len(seeded), seed_len, rng))
    return [e if e.marker == EDGE else dataclasses.replace(e, seed=next(seeds)) for e in examples]


def _seed_len_of(examples: Sequence[Example]) -> int:
    lens = {len(e.seed) for e in examples if e.marker != EDGE}
    if len(lens) != 1:
        raise ValueError(f"training seeds have mixed lengths {sorted(lens)}")
    return lens.pop()


@dataclasses.dataclass
class Run:
    """A trained model with everything needed to sample and score it."""

    model: Transformer
    task: Task
    vocab: Vocab
    method: str
    seed_len: int
    train: list[Example]
    curve: list[dict]
    seconds: float

    def meta(self) -> dict:
        return {"task": self.task.name, "task_seed": self.task.seed, "params": self.task.params,
                "method": self.method, "seed_len": self.seed_len, "curve": self.curve,
                "seconds": self.seconds}

    def save(self, directory: str | Path) -> Path:
        """Write ``model.safetensors`` + ``config.json`` (with the run's metadata) and the
        training lines actually used (``train.txt``)."""
        directory = Path(directory)
        self.model.save(directory, extra={"creativity": self.meta()})
        (directory / "train.txt").write_text("".join(e.line() + "\n" for e in self.train))
        return directory


def load_run(directory: str | Path) -> Run:
    """Load a run written by :meth:`Run.save` (or by ``icml25 creativity train``)."""
    directory = Path(directory)
    if (directory / "model" / "config.json").exists():
        directory = directory / "model"
    cfg_path = directory / "config.json"
    if not cfg_path.exists():
        raise FileNotFoundError(f"no config.json in {directory}: not a creativity run")
    meta = json.loads(cfg_path.read_text()).get("creativity")
    if meta is None:
        raise ValueError(f"{directory} holds a model that is not a creativity run")
    task = make_task(meta["task"], meta["task_seed"], **meta["params"])
    lines = (directory / "train.txt").read_text().splitlines()
    model = Transformer.load(directory)
    model.eval()
    return Run(model, task, Vocab(task.vocab()), meta["method"], meta["seed_len"],
               [parse_line(x) for x in lines if x.strip()], meta.get("curve", []),
               meta.get("seconds", 0.0))


def train_model(task: Task, examples: Sequence[Example], settings: TrainSettings, *,
                out_dir: str | Path | None = None,
                on_eval: Callable[[dict], None] | None = None,
                on_log: Callable[[dict], None] | None = None) -> Run:
    """Train one model from scratch on ``examples`` of ``task`` with ``settings.method``.

    ``on_eval`` gets each learning-curve point, ``on_log`` each trainer log row (loss, lr,
    examples/s)."""
    s = settings
    rng = np.random.default_rng([s.seed, 3])
    examples = reseed(examples, s.seed_len, rng)
    seed_len = _seed_len_of(examples)
    vocab = Vocab(task.vocab())
    rows = build_rows(task.name, examples, vocab, s.method, rng)
    causal = s.method != "diffusion"
    width = (rows["inputs"] if causal else rows["tokens"]).shape[1]
    # Room for the longest training row and for a test prompt plus a full answer.
    seq_len = max(width, seed_len + 1 + task.answer_len - (1 if causal else 0))
    model = Transformer(TransformerConfig(
        vocab_size=len(vocab), seq_len=seq_len, d_model=s.d_model, n_layers=s.n_layers,
        n_heads=s.n_heads, causal=causal, dropout=s.dropout))
    n_rows = next(iter(rows.values())).shape[0]
    cfg = s.train_config(out_dir)
    # The rows move to the device once; a step draws its indices on the CPU (reproducible on
    # every device) and gathers there.
    device = resolve_device(cfg.device)
    rows = {k: v.to(device) for k, v in rows.items()}

    def batch_fn(step: int, gen: torch.Generator, rank: int):
        idx = torch.randint(n_rows, (s.batch_size,), generator=gen).to(device)
        if causal:
            return rows["inputs"][idx], rows["targets"][idx]
        tokens, maskable = rows["tokens"][idx], rows["maskable"][idx]
        noisy, masked, t = mask_tokens(tokens, maskable, gen, mask_id=vocab.mask)
        return noisy, tokens, masked, t, maskable

    def loss_fn(net, batch):
        if causal:
            x, y = batch
            logits = net(x)
            return F.cross_entropy(logits.flatten(0, 1), y.flatten(), ignore_index=IGNORE)
        noisy, tokens, masked, t, maskable = batch
        return mdm_loss(net(noisy), tokens, masked, t, maskable)

    run = Run(model, task, vocab, s.method, seed_len, list(examples), [], 0.0)
    scorer = Scorer(task, examples) if s.eval_every else None
    eval_rng = np.random.default_rng([s.seed, 4])

    def log_row(row: dict) -> None:
        if on_log:
            on_log(row)
        if scorer is None or row["step"] % s.eval_every:
            return
        # A model without seeds decoded greedily repeats one answer: sample it at T = 1.
        temp = 1.0 if (seed_len == 0 or not causal) else 0.0
        report = evaluate_model(run, scorer=scorer, n=s.eval_n, rng=eval_rng, temperature=temp)
        model.train()  # decoding switched dropout off; training goes on
        point = {"step": row["step"], "loss": row["loss"], **report}
        run.curve.append(point)
        if on_eval:
            on_eval(point)

    start = time.perf_counter()
    train(model, loss_fn, batch_fn, cfg, resume=False, on_log=log_row)
    run.seconds = time.perf_counter() - start
    model.eval()
    if out_dir is not None and is_main_process():
        run.save(Path(out_dir) / "model")
    return run


# --- sampling and evaluation ------------------------------------------------------------------

def fresh_prompts(run: Run, n: int, rng: np.random.Generator) -> list[str]:
    """``n`` prompts, each with a fresh seed never used in training (seed-conditioning)."""
    used = {e.seed for e in run.train}
    seeds = make_seeds(n, run.seed_len, rng, exclude=used)
    return [f"{x} {run.task.marker}" if x else run.task.marker for x in seeds]


@torch.no_grad()
def generate_answers(run: Run, prompts: Sequence[str], *, temperature: float = 0.0,
                     top_k: int | None = None, diffusion_steps: int | None = None,
                     generator: torch.Generator | None = None,
                     batch_size: int | None = None, device: str | None = None) -> list[str]:
    """One answer per prompt: greedy at ``temperature=0``, else sampled (``top_k`` optional;
    off by default). Diffusion models fill the answer span with ``icml25.mdm.sample``.

    ``device`` moves the model there first (default: where it is); ``batch_size`` defaults to
    what suits it (512 on the CPU). Draws are made where ``generator`` lives."""
    if temperature < 0:
        raise ValueError("temperature must be >= 0")
    if top_k is not None and top_k < 1:
        raise ValueError("top_k must be >= 1 (or None for no top-k)")
    where = place(run.model, device)
    batch_size = batch_size or inference_batch_size(run.model, where, GENERATE_BATCH)
    out: list[str] = []
    for i in range(0, len(prompts), batch_size):
        chunk = [parse_line(p) for p in prompts[i:i + batch_size]]
        ids = [run.vocab.prompt(e.seed, e.marker) for e in chunk]
        if len({len(x) for x in ids}) != 1:
            raise ValueError("all prompts of a batch must have the same length")
        x = torch.tensor(ids, device=where)
        if run.method == "diffusion":
            out += _fill(run, x, temperature, diffusion_steps, generator)
        else:
            out += _decode(run, x, temperature, top_k, generator)
    return out


def _banned(vocab: Vocab) -> list[int]:
    """Tokens a model may never emit inside an answer: padding, mask, dummy, markers, seeds."""
    return [vocab.pad, vocab.mask, vocab.dummy, *(vocab.index[m] for m in MARKERS),
            *(vocab.index[c] for c in SEED_ALPHABET)]


def _decode(run: Run, x: torch.Tensor, temperature: float, top_k: int | None,
            generator: torch.Generator | None) -> list[str]:
    model, vocab = run.model, run.vocab
    model.eval()
    banned = _banned(vocab)
    p = x.shape[1]
    done = torch.zeros(x.shape[0], dtype=torch.bool, device=x.device)
    for _ in range(run.task.answer_len):
        logits = model(x)[:, -1].float()
        logits[:, banned] = float("-inf")
        if temperature == 0:
            nxt = logits.argmax(-1)
        else:
            logits = logits / temperature
            if top_k is not None and top_k < logits.shape[-1]:
                kth = logits.topk(top_k, dim=-1).values[:, -1:]
                logits = logits.masked_fill(logits < kth, float("-inf"))
            where = generator.device if generator is not None else x.device
            probs = logits.softmax(-1).to(where)
            nxt = torch.multinomial(probs, 1, generator=generator).squeeze(1).to(x.device)
        nxt = torch.where(done, torch.full_like(nxt, vocab.end), nxt)
        x = torch.cat([x, nxt[:, None]], 1)
        done |= nxt == vocab.end
        if done.all() or x.shape[1] >= model.cfg.seq_len + 1:
            break
    return [vocab.decode_answer(row[p:].tolist()) for row in x]


def _fill(run: Run, x: torch.Tensor, temperature: float, steps: int | None,
          generator: torch.Generator | None) -> list[str]:
    vocab, length = run.vocab, run.model.cfg.seq_len
    p = x.shape[1]
    tokens = torch.full((x.shape[0], length), vocab.pad, dtype=torch.long, device=x.device)
    tokens[:, :p] = x
    maskable = torch.zeros_like(tokens, dtype=torch.bool)
    maskable[:, p:] = True
    filled = mdm_sample(run.model, tokens, maskable, steps=steps or run.task.answer_len,
                        planner="random", temperature=temperature, mask_id=vocab.mask,
                        generator=generator)
    return [vocab.decode_answer(row[p:].tolist()) for row in filled]


def evaluate_model(run: Run, *, scorer: Scorer | None = None, n: int = 1024,
                   temperature: float | None = None, top_k: int | None = None,
                   rng: np.random.Generator | None = None, seed: int = 0,
                   device: str | None = None) -> dict:
    """Score ``n`` generations, one per fresh test prompt, made on ``device`` (default: where
    the model is; its random draws are made there too).

    Default decoding: greedy for causal models (seed-conditioning; a model trained without seeds
    is then deterministic, so pass a temperature), temperature 1 for diffusion models.
    """
    rng = rng if rng is not None else np.random.default_rng(seed)
    scorer = scorer or Scorer(run.task, run.train)
    if temperature is None:
        temperature = 1.0 if run.method == "diffusion" else 0.0
    prompts = fresh_prompts(run, n, rng)
    where = place(run.model, device)
    gen = torch.Generator(device=where).manual_seed(int(rng.integers(2**31)))
    answers = generate_answers(run, prompts, temperature=temperature, top_k=top_k,
                               generator=gen)
    report = scorer.score(answers, skip_errors=False).summary()  # empty output = incoherent
    report.update(temperature=temperature, top_k=top_k, seed_len=run.seed_len)
    return report
