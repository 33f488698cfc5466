"""Training and evaluation of the creativity methods (the registry is :mod:`.methods`), with
seed-conditioning, on ``icml25.nn`` transformers trained from scratch (needs the ``torch`` extra).

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

from icml25.creativity.lookup import LookupModel
from icml25.creativity.methods import IGNORE, METHODS, Method, Vocab, build_rows, get_method
from icml25.creativity.scoring import Scorer
from icml25.creativity.tasks import EDGE, Example, Task, make_seeds, make_task, parse_line
from icml25.mdm.planners import check_planner
from icml25.nn import TrainConfig, Transformer, TransformerConfig, is_main_process, train
from icml25.nn.device import inference_batch_size, place, resolve_device

__all__ = ["IGNORE", "METHODS", "Run", "TrainSettings", "Vocab", "build_rows", "evaluate_model",
           "fresh_prompts", "generate_answers", "load_run", "load_snapshot", "reseed",
           "saturation_step", "train_model"]
SNAPSHOTS = "snapshots"
GENERATE_BATCH = 512  # prompts per forward pass on the CPU (on a GPU: what fits)


# --- training ---------------------------------------------------------------------------------

@dataclasses.dataclass
class TrainSettings:
    """Model and optimisation settings of :func:`train_model` (defaults: a tiny model that
    trains on a CPU).

    Parameters
    ----------
    method : str, default="ntp"
        Training method, a name of ``METHODS`` (``ntp``, ``teacherless``, ``diffusion``,
        ``diffusion-uniform``).
    seed_len : int or None, default=None
        None keeps the data's seeds; 0 strips them; N gives fresh N-symbol seeds.
    d_model, n_layers, n_heads : int, default=128, 4, 4
        Transformer width, depth and heads.
    steps : int, default=2000
        Optimizer steps.
    batch_size : int, default=64
        Rows per step.
    lr : float, default=1e-3
        Peak learning rate.
    warmup_steps : int, default=100
        Linear warm-up steps.
    weight_decay : float, default=0.01
        AdamW weight decay.
    min_lr_ratio : float, default=0.1
        The cosine decays to ``lr * min_lr_ratio`` (1.0: constant after the warm-up).
    dropout : float, default=0.0
        Dropout rate.
    positions : {"learned", "rotary"}, default="learned"
        Position encoding.
    qk_init_std : float or None, default=None
        Init std of the query/key weights (None: 0.02 like every other weight).
    token_shift : bool, default=False
        Input = token + previous token.
    layer_shift : bool, default=False
        Every block also mixes in its left neighbour.
    fresh_min_nodes : int or None, default=None
        Curriculum: every batch is freshly generated Line/Circle answers with node counts from
        this many up to the task's own (at least 3).
    init_from : str or None, default=None
        A saved model folder whose weights start the run.
    head_only_steps : int, default=0
        First train only the output head and final norm on ``init_from``'s features.
    head_lr : float, default=3e-3
        Learning rate of the head-only phase.
    replay_weight : float, default=0.0
        Weight of a replay loss that keeps training the start's lookup skill.
    replay_batch : int, default=32
        Fresh answers per step for the replay loss.
    anchor_weight : float, default=0.0
        L2-SP weight pulling the body towards its ``init_from`` start.
    seed : int, default=0
        Seeds initialisation, reseeding and batches.
    eval_every : int, default=0
        > 0: score generations every N steps (the learning curve).
    eval_n : int, default=256
        Generations per learning-curve point.
    keep_snapshots : bool, default=False
        Keep the weights at every learning-curve point (needs ``eval_every``).
    checkpoint_every : int, default=0
        > 0: a resumable checkpoint every N steps (0: only at the end).
    device, precision, compile, grad_accum_steps, max_seconds, budget_seconds, compile_mode
        As in ``icml25.nn.TrainConfig`` (defaults ``"auto"``, ``"fp32"``, False, 1, None,
        None, None).

    Raises
    ------
    ValueError
        For an unknown method or positions, a negative ``seed_len``, or options that need
        another (``head_only_steps``, ``replay_weight`` and ``anchor_weight`` need
        ``init_from``; ``keep_snapshots`` needs ``eval_every``).

    Examples
    --------
    >>> from icml25.creativity import TrainSettings
    >>> s = TrainSettings(method="diffusion", steps=100, d_model=32, n_layers=2, n_heads=2)
    >>> s.train_config(out_dir=None).steps
    100
    >>> TrainSettings(method="gpt")
    Traceback (most recent call last):
    ...
    ValueError: method must be one of (...), got 'gpt'
    """

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
    # Architecture knobs of icml25.nn (see docs/creativity.md, "What it took"): rotary
    # positions and an order-one query/key init let the edge-matching heads form early.
    positions: str = "learned"  # learned | rotary
    qk_init_std: float | None = None  # None: 0.02 like every other weight
    token_shift: bool = False  # input = token + previous token (icml25.nn token_shift)
    layer_shift: bool = False  # every block also mixes in its left neighbour (icml25.nn)
    # Curriculum (docs/creativity.md, "A fresh-data curriculum"): with ``fresh_min_nodes`` set,
    # every batch is freshly generated Line/Circle answers with fresh seeds, each with a node
    # count drawn uniformly from fresh_min_nodes .. the task's own (the given examples are then
    # only the set memorisation is scored against). ``init_from``: a saved model folder whose
    # weights start the run (same architecture, or the same plus ``layer_shift``, whose mixes
    # start at zero), e.g. such a curriculum stage.
    fresh_min_nodes: int | None = None
    init_from: str | None = None
    # LP-FT (Kumar et al., ICLR 2022) after ``init_from``: the first ``head_only_steps`` steps
    # train only the output head and final norm (constant ``head_lr``, no decay) on the init's
    # frozen features,
    # so that the head reads them (e.g. the lookup stage's chain starts, :mod:`.lookup`) before
    # full fine-tuning sends its gradients into the body; ``steps`` then counts the full phase.
    head_only_steps: int = 0
    head_lr: float = 3e-3
    # Keeping the start's skill through fine-tuning (``init_from`` a lookup stage): full
    # fine-tuning overwrites the chain-start features within a few hundred steps
    # (docs/creativity.md). ``replay_weight`` > 0 goes on training the lookup on
    # ``replay_batch`` fresh answers per step, through a fresh auxiliary head, beside the
    # method's loss (pretraining replay, as PPO-ptx mixes pretraining gradients into
    # fine-tuning; the method's own head never sees those answers). ``anchor_weight`` > 0 adds
    # L2-SP (Li et al., ICML 2018): anchor_weight/2 · ||body − body at the start||².
    replay_weight: float = 0.0
    replay_batch: int = 32
    anchor_weight: float = 0.0
    seed: int = 0
    eval_every: int = 0  # >0: score generations every N steps (learning curve)
    eval_n: int = 256
    # Keep the weights at every learning-curve point (``out_dir/snapshots/step-N``), so that the
    # checkpoint where creativity saturates can be reported, as the paper does
    # (:func:`saturation_step`, :func:`load_snapshot`).
    keep_snapshots: bool = False
    checkpoint_every: int = 0  # >0: a resumable checkpoint every N steps (0: only at the end)
    # Where and how: as in icml25.nn.TrainConfig.
    device: str = "auto"
    precision: str = "fp32"
    compile: bool = False
    grad_accum_steps: int = 1
    max_seconds: float | None = None
    budget_seconds: float | None = None  # fit the steps to this time (icml25.nn.TrainConfig)
    compile_mode: str | None = None

    def __post_init__(self) -> None:
        get_method(self.method)  # a clear error for an unknown name
        if self.seed_len is not None and self.seed_len < 0:
            raise ValueError("seed_len must be >= 0")
        if self.positions not in ("learned", "rotary"):
            raise ValueError(f"positions must be 'learned' or 'rotary', got {self.positions!r}")
        if self.qk_init_std is not None and not self.qk_init_std > 0:
            raise ValueError(f"qk_init_std must be positive, got {self.qk_init_std}")
        if self.head_only_steps < 0 or not self.head_lr > 0:
            raise ValueError("head_only_steps must be >= 0 and head_lr positive")
        if self.head_only_steps and self.init_from is None:
            raise ValueError("head_only_steps trains a head on the features of init_from: give it")
        if self.keep_snapshots and not self.eval_every:
            raise ValueError("keep_snapshots keeps the weights at each learning-curve point: "
                             "set eval_every")
        if self.replay_weight < 0 or self.anchor_weight < 0 or self.replay_batch < 1:
            raise ValueError("replay_weight and anchor_weight must be >= 0, replay_batch >= 1")
        if (self.replay_weight or self.anchor_weight) and self.init_from is None:
            raise ValueError("replay_weight and anchor_weight keep what init_from learnt: give it")
        if self.fresh_min_nodes is not None and self.fresh_min_nodes < 3:
            raise ValueError(f"fresh_min_nodes must be >= 3, got {self.fresh_min_nodes}")
        self.train_config(out_dir=None)  # device, precision, ... are checked here, once

    def train_config(self, out_dir: str | Path | None) -> TrainConfig:
        return TrainConfig(
            steps=self.steps, batch_size=self.batch_size, lr=self.lr,
            warmup_steps=min(self.warmup_steps, self.steps), weight_decay=self.weight_decay,
            min_lr_ratio=self.min_lr_ratio, seed=self.seed,
            log_every=self.eval_every or max(self.steps // 20, 1),
            checkpoint_every=self.checkpoint_every or max(self.steps, 1),
            out_dir=str(out_dir) if out_dir is not None else None, device=self.device,
            precision=self.precision, compile=self.compile,
            grad_accum_steps=self.grad_accum_steps, max_seconds=self.max_seconds,
            budget_seconds=self.budget_seconds, compile_mode=self.compile_mode)


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
    stopped_early: bool = False  # max_seconds ran out before the last step (resume to finish)

    def meta(self) -> dict:
        return {"task": self.task.name, "task_seed": self.task.seed, "params": self.task.params,
                "method": self.method, "seed_len": self.seed_len, "curve": self.curve,
                "seconds": self.seconds, "stopped_early": self.stopped_early}

    def save(self, directory: str | Path) -> Path:
        """Write ``model.safetensors`` + ``config.json`` (with the run's metadata) and the
        training lines actually used (``train.txt``)."""
        directory = Path(directory)
        self.model.save(directory, extra={"creativity": self.meta()})
        (directory / "train.txt").write_text("".join(e.line() + "\n" for e in self.train))
        return directory


def load_run(directory: str | Path) -> Run:
    """Load a run written by :meth:`Run.save` (or by ``icml25 creativity train``).

    Parameters
    ----------
    directory : str or pathlib.Path
        The run folder (its ``model/`` subfolder is found).

    Returns
    -------
    Run
        The model (in eval mode), task, vocabulary, method, seed length and training lines.

    Raises
    ------
    FileNotFoundError
        When the folder holds no ``config.json``.
    ValueError
        When the saved model is not a creativity run.

    Examples
    --------
    >>> from icml25.creativity import load_run
    >>> from icml25.creativity.shipped import shipped_dir
    >>> run = load_run(shipped_dir("line-ntp"))
    >>> run.task.name, run.method, run.seed_len, len(run.train)
    ('line', 'ntp', 10, 10000)
    """
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
    method = get_method(meta["method"])
    return Run(model, task, method.vocab(task), method.name, meta["seed_len"],
               [parse_line(x) for x in lines if x.strip()], meta.get("curve", []),
               meta.get("seconds", 0.0))


def model_config(task: Task, method: Method, vocab: Vocab, seed_len: int,
                 s: TrainSettings, width: int = 0) -> TransformerConfig:
    """The transformer a run of ``method`` on ``task`` trains: room for its longest training
    row (``width``) and for a test prompt plus a full answer."""
    seq_len = max(width, method.prefix + seed_len + 1 + task.answer_len
                  - (1 if method.causal else 0))
    return TransformerConfig(
        vocab_size=len(vocab), seq_len=seq_len, d_model=s.d_model, n_layers=s.n_layers,
        n_heads=s.n_heads, causal=method.causal, dropout=s.dropout, positions=s.positions,
        qk_init_std=s.qk_init_std, token_shift=s.token_shift, layer_shift=s.layer_shift)


def train_model(task: Task, examples: Sequence[Example], settings: TrainSettings, *,
                out_dir: str | Path | None = None, resume: bool = False,
                on_eval: Callable[[dict], None] | None = None,
                on_log: Callable[[dict], None] | None = None,
                probe: Callable[[Run], dict] | None = None) -> Run:
    """Train one model from scratch on ``examples`` of ``task`` with ``settings.method``.

    Parameters
    ----------
    task : Task
        The task instance.
    examples : sequence of Example
        The training lines (e.g. ``generate(...).train``).
    settings : TrainSettings
        Method, model size and optimisation.
    out_dir : str, pathlib.Path or None, default=None
        Where checkpoints and the learning curve (``curve.jsonl``) go (None: in memory).
    resume : bool, default=False
        With ``out_dir``, go on from its last checkpoint (a run killed or stopped by
        ``max_seconds``).
    on_eval : callable or None, default=None
        Called with each learning-curve point.
    on_log : callable or None, default=None
        Called with each trainer log row (loss, lr, examples/s).
    probe : callable or None, default=None
        ``probe(run)`` adds its keys to each learning-curve point.

    Returns
    -------
    Run
        The trained model with its task, vocabulary, training lines and curve.

    Raises
    ------
    ValueError
        For training seeds of mixed lengths, no examples, or an ``init_from`` of another
        architecture.

    Examples
    --------
    Two steps of a tiny model (a real run is ``icml25 creativity train``):

    >>> from icml25.creativity import TrainSettings, generate, make_task, train_model
    >>> task = make_task("line", 0, n_entities=4, length=3, n_train=3)
    >>> data = generate(task, seed_len=2)
    >>> settings = TrainSettings(steps=2, batch_size=4, d_model=16, n_layers=1, n_heads=2,
    ...                          device="cpu")
    >>> run = train_model(task, data.train, settings)
    >>> run.method, run.seed_len, len(run.train)
    ('ntp', 2, 3)
    """
    s = settings
    rng = np.random.default_rng([s.seed, 3])
    examples = reseed(examples, s.seed_len, rng)
    seed_len = _seed_len_of(examples)
    method = get_method(s.method)
    vocab = method.vocab(task)
    rows = build_rows(task.name, examples, vocab, s.method, rng)
    width = next(iter(rows.values())).shape[1]
    model = Transformer(model_config(task, method, vocab, seed_len, s, width))
    if s.init_from is not None:
        start_from = Transformer.load(Path(s.init_from) / "model"
                                      if (Path(s.init_from) / "model").is_dir() else s.init_from)
        grown = dataclasses.replace(start_from.cfg, layer_shift=model.cfg.layer_shift)
        if grown != model.cfg:
            raise ValueError(f"init_from={s.init_from!r} has another architecture "
                             f"({start_from.cfg}) than this run ({model.cfg})")
        missing, _ = model.load_state_dict(start_from.state_dict(), strict=False)
        if not all(k.endswith("shift.weight") for k in missing):  # only the zero-init mixes
            raise ValueError(f"init_from={s.init_from!r} lacks weights {missing}")
    n_rows = next(iter(rows.values())).shape[0]
    cfg = s.train_config(out_dir)
    # The rows move to the device once; a step draws its indices on the CPU (reproducible on
    # every device) and gathers there.
    device = resolve_device(cfg.device)
    rows = {k: v.to(device) for k, v in rows.items()}

    def batch_fn(step: int, gen: torch.Generator, rank: int):
        if s.fresh_min_nodes is not None:
            np_rng = np.random.default_rng(int(torch.randint(2**62, (1,), generator=gen)))
            fresh = fresh_examples(task, s.batch_size, s.fresh_min_nodes, seed_len, np_rng)
            fresh_rows = _pad_rows(build_rows(task.name, fresh, vocab, s.method, np_rng), width,
                                   vocab.pad)
            idx = torch.arange(next(iter(fresh_rows.values())).shape[0])
            return method.batch({k: v.to(device) for k, v in fresh_rows.items()},
                                idx.to(device), gen, vocab)
        idx = torch.randint(n_rows, (s.batch_size,), generator=gen).to(device)
        return method.batch(rows, idx, gen, vocab)

    def loss_fn(net, batch):
        return method.loss(net, batch, vocab)

    trainee, main_loss, main_batch = model, loss_fn, batch_fn
    if s.replay_weight or s.anchor_weight:
        trainee, main_loss, main_batch = _keeping_the_start(model, task, vocab, seed_len, s,
                                                            loss_fn, batch_fn)

    curve_file = Path(out_dir) / "curve.jsonl" if out_dir is not None else None
    curve = _read_curve(curve_file) if resume and curve_file is not None else []
    run = Run(model, task, vocab, s.method, seed_len, list(examples), curve, 0.0)
    scorer = Scorer(task, examples) if s.eval_every else None

    def log_row(row: dict) -> None:
        if on_log:
            on_log(row)
        if scorer is None or row["step"] % s.eval_every:
            return
        # A model without seeds decoded greedily repeats one answer: sample it at T = 1.
        temp = 1.0 if (seed_len == 0 or not method.causal) else 0.0
        # Prompts drawn from (seed, step): a resumed run scores the same points.
        report = evaluate_model(run, scorer=scorer, n=s.eval_n, temperature=temp,
                                rng=np.random.default_rng([s.seed, 4, row["step"]]))
        point = {"step": row["step"], "loss": row["loss"], **report,
                 **(probe(run) if probe else {})}
        if s.keep_snapshots and out_dir is not None and is_main_process():
            model.save(Path(out_dir) / SNAPSHOTS / f"step-{row['step']}")
        model.train()  # decoding switched dropout off; training goes on
        run.curve.append(point)
        if curve_file is not None and is_main_process():
            curve_file.parent.mkdir(parents=True, exist_ok=True)
            with curve_file.open("a") as fh:
                fh.write(json.dumps(point) + "\n")
        if on_eval:
            on_eval(point)

    start = time.perf_counter()
    if curve_file is not None and not resume:
        curve_file.unlink(missing_ok=True)
    if s.head_only_steps:
        head = _train_head(model, loss_fn, batch_fn, s, out_dir, resume)
        if head.stopped_early:
            return _finish(run, out_dir, start, stopped_early=True)
        # The full phase gets what the head phase left of the time limits.
        spent = time.perf_counter() - start
        cfg = dataclasses.replace(cfg, **{name: max(limit - spent, 1e-3) for name, limit in (
            ("max_seconds", cfg.max_seconds), ("budget_seconds", cfg.budget_seconds))
            if limit is not None})
    state = train(trainee, main_loss, main_batch, cfg, resume=resume, on_log=log_row)
    return _finish(run, out_dir, start, stopped_early=state.stopped_early)


def _finish(run: Run, out_dir: str | Path | None, start: float, *, stopped_early: bool) -> Run:
    """Time the run and save its model (``out_dir/model``), also when a time limit stopped it:
    what was reached can be evaluated, and ``--resume`` goes on from the checkpoint."""
    run.seconds = time.perf_counter() - start
    run.model.eval()
    run.stopped_early = stopped_early
    if out_dir is not None and is_main_process():
        run.save(Path(out_dir) / "model")
    return run


def saturation_step(curve: Sequence[dict], key: str = "creativity") -> int:
    """The learning-curve step to report (the paper's rule: the checkpoint where creativity
    saturates): the first step with the highest ``key``. The curve's prompts are drawn apart
    from the final evaluation's (see :func:`train_model`), so choosing on it leaves that
    evaluation unbiased."""
    if not curve:
        raise ValueError("an empty learning curve: train with eval_every > 0")
    return max(curve, key=lambda p: (p[key], -p["step"]))["step"]


def load_snapshot(run: Run, out_dir: str | Path, step: int) -> Run:
    """``run`` with the weights it had at learning-curve ``step`` (``keep_snapshots=True``)."""
    where = Path(out_dir) / SNAPSHOTS / f"step-{step}"
    if not (where / "config.json").exists():
        raise FileNotFoundError(f"no snapshot at step {step} in {out_dir} (keep_snapshots?)")
    model = Transformer.load(where)
    model.eval()
    return dataclasses.replace(run, model=model)


class _WithAux(LookupModel):
    """The lookup stage's model and auxiliary head (replay), whose forward is the model's own
    (the method's loss calls it; replay calls ``aux`` on the hidden states)."""

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        return self.net(idx)


def _keeping_the_start(model: Transformer, task: Task, vocab: Vocab, seed_len: int,
                       s: TrainSettings, loss_fn, batch_fn):
    """(module to train, loss, batches) with replay and/or the L2-SP anchor added. Replay
    calls the model's hidden states outside the wrapper's forward, which DDP would not see."""
    from icml25.creativity.lookup import lookup_batch

    if s.replay_weight and torch.distributed.is_initialized() \
            and torch.distributed.get_world_size() > 1:
        raise ValueError("replay_weight is single-process for now (not under torchrun)")

    body = {n: p for n, p in model.named_parameters() if not n.startswith(("head.", "ln_f."))}
    start = {n: p.detach().clone() for n, p in body.items()}
    trainee = _WithAux(model) if s.replay_weight else model

    def batches(step: int, gen: torch.Generator, rank: int):
        main = batch_fn(step, gen, rank)
        if not s.replay_weight:
            return main, None
        rng = np.random.default_rng(int(torch.randint(2**62, (1,), generator=gen)))
        x, y, _ = lookup_batch(task, vocab, s.method, seed_len, s.replay_batch,
                               model.cfg.seq_len, rng, gen)
        device = next(model.parameters()).device
        return main, (x.to(device), y.to(device))

    def loss(net, batch):
        main, replay = batch
        total = loss_fn(net, main)
        if replay is not None:
            x, y = replay
            aux = trainee.aux(model.hidden(x))
            total = total + s.replay_weight * F.cross_entropy(
                aux.flatten(0, 1), y.flatten(), ignore_index=IGNORE)
        if s.anchor_weight:
            drift = sum(((p - start[n]) ** 2).sum() for n, p in body.items())
            total = total + 0.5 * s.anchor_weight * drift
        return total

    return trainee, loss, batches


def _train_head(model: Transformer, loss_fn, batch_fn, s: TrainSettings,
                out_dir: str | Path | None, resume: bool):
    """LP-FT's first phase: only the output head and the final norm before it learn (their
    own checkpoint in ``out_dir/head``)."""
    body = [p for name, p in model.named_parameters() if not name.startswith(("head.", "ln_f."))]
    for p in body:
        p.requires_grad_(False)
    cfg = dataclasses.replace(
        s.train_config(Path(out_dir) / "head" if out_dir is not None else None),
        steps=s.head_only_steps, lr=s.head_lr, warmup_steps=0, min_lr_ratio=1.0,
        weight_decay=0.0, log_every=max(s.head_only_steps // 4, 1),
        checkpoint_every=s.head_only_steps, budget_seconds=None)
    try:
        return train(model, loss_fn, batch_fn, cfg, resume=resume)
    finally:
        for p in body:
            p.requires_grad_(True)


def fresh_examples(task: Task, n: int, min_nodes: int, seed_len: int,
                   rng: np.random.Generator) -> list[Example]:
    """``n`` fresh Line/Circle examples over ``task``'s entities, each with a node count drawn
    uniformly from ``min_nodes`` .. the task's own, and a fresh random seed (the curriculum)."""
    if task.name not in ("line", "circle"):
        raise ValueError(f"a fresh-data curriculum needs line or circle, not {task.name!r}")
    full = int(task.params["length"]) + (1 if task.name == "line" else 0)
    if not 3 <= min_nodes <= full:
        raise ValueError(f"min_nodes must be in 3..{full}, got {min_nodes}")
    nodes = rng.integers(min_nodes, full + 1, size=n)
    seeds = iter(make_seeds(n, seed_len, rng))
    out: list[Example] = []
    for k in sorted(set(nodes.tolist())):
        length = k - 1 if task.name == "line" else k
        params = {**task.params, "length": length, "n_train": int((nodes == k).sum())}
        for marker, answer in make_task(task.name, task.seed, **params).train_examples(rng):
            out.append(Example(next(seeds), marker, answer))
    return out


def _pad_rows(rows: dict[str, torch.Tensor], width: int, pad_id: int) -> dict[str, torch.Tensor]:
    """Pad causal rows (``inputs`` with ``<pad>``, ``targets`` with IGNORE) to ``width``."""
    if "inputs" not in rows:
        raise ValueError("the fresh-data curriculum is for the causal methods")
    pad = width - rows["inputs"].shape[1]
    inputs = F.pad(rows["inputs"], (0, pad), value=pad_id)
    return {"inputs": inputs, "targets": F.pad(rows["targets"], (0, pad), value=IGNORE)}


def _read_curve(path: Path) -> list[dict]:
    """The saved points, one per step (a point written after the last checkpoint is redone)."""
    if not path.exists():
        return []
    points = {p["step"]: p for p in map(json.loads, path.read_text().splitlines())}
    return [points[k] for k in sorted(points)]


# --- sampling and evaluation ------------------------------------------------------------------

def fresh_prompts(run: Run, n: int, rng: np.random.Generator) -> list[str]:
    """``n`` prompts, each with a fresh seed never used in training (seed-conditioning)."""
    used = {e.seed for e in run.train}
    seeds = make_seeds(n, run.seed_len, rng, exclude=used)
    return [f"{x} {run.task.marker}" if x else run.task.marker for x in seeds]


@torch.no_grad()
def generate_answers(run: Run, prompts: Sequence[str], *, temperature: float = 0.0,
                     top_k: int | None = None, diffusion_steps: int | None = None,
                     planner: str | None = None, generator: torch.Generator | None = None,
                     batch_size: int | None = None, device: str | None = None) -> list[str]:
    """One answer per prompt: greedy at ``temperature=0``, else sampled.

    Diffusion models fill the answer span; absorbing diffusion unmasks in random order (the
    paper's) unless ``planner`` names one.

    Parameters
    ----------
    run : Run
        A trained run (:func:`train_model` or :func:`load_run`).
    prompts : sequence of str
        ``[SEED] MARKER`` prompts, all of the same length.
    temperature : float, default=0.0
        0 decodes greedily; above 0 samples at that temperature.
    top_k : int or None, default=None
        Sample only among the ``top_k`` most likely tokens (None: off).
    diffusion_steps : int or None, default=None
        Denoising steps (None: absorbing one per answer token, uniform two).
    planner : str or None, default=None
        An unmasking order of ``icml25.mdm.PLANNERS``, for absorbing diffusion only.
    generator : torch.Generator or None, default=None
        Source of the draws (they are made where it lives).
    batch_size : int or None, default=None
        Prompts per pass (None: what suits the device, 512 on the CPU).
    device : str or None, default=None
        Move the model there first (None: where it is).

    Returns
    -------
    list of str
        One answer per prompt, up to and including ``</a>``.

    Raises
    ------
    ValueError
        For a negative temperature, ``top_k < 1``, a planner for a method without an order,
        or prompts of different lengths.

    Examples
    --------
    >>> from icml25.creativity import load_run
    >>> from icml25.creativity.shipped import shipped_dir
    >>> run = load_run(shipped_dir("line-ntp"))
    >>> answer = generate_answers(run, ["abcdefghij <q>"])[0]
    >>> run.task.canonical(answer.split()[:-1]) is not None  # coherent: a path of the graph
    True
    """
    if temperature < 0:
        raise ValueError("temperature must be >= 0")
    if top_k is not None and top_k < 1:
        raise ValueError("top_k must be >= 1 (or None for no top-k)")
    method = get_method(run.method)
    if planner is not None:  # checked here, once, before any generation
        if not method.has_order:
            raise ValueError(f"a planner (unmasking order) is for absorbing diffusion; "
                             f"{run.method} has no order to choose")
        check_planner(planner)
    where = place(run.model, device)
    batch_size = batch_size or inference_batch_size(run.model, where, GENERATE_BATCH)
    out: list[str] = []
    for i in range(0, len(prompts), batch_size):
        chunk = [parse_line(p) for p in prompts[i:i + batch_size]]
        ids = [run.vocab.prompt(e.seed, e.marker) for e in chunk]
        if len({len(x) for x in ids}) != 1:
            raise ValueError("all prompts of a batch must have the same length")
        x = torch.tensor(ids, device=where)
        out += method.answers(run.model, run.vocab, x, run.task.answer_len,
                              temperature=temperature, top_k=top_k, steps=diffusion_steps,
                              generator=generator, planner=planner)
    return out


def evaluate_model(run: Run, *, scorer: Scorer | None = None, n: int = 1024,
                   temperature: float | None = None, top_k: int | None = None,
                   planner: str | None = None, rng: np.random.Generator | None = None,
                   seed: int = 0, device: str | None = None) -> dict:
    """Score ``n`` generations, one per fresh test prompt (a seed unseen in training).

    Default decoding: greedy for causal models (seed-conditioning; a model trained without seeds
    is then deterministic, so pass a temperature), temperature 1 for diffusion models.

    Parameters
    ----------
    run : Run
        A trained run.
    scorer : Scorer or None, default=None
        None scores against the run's own training lines.
    n : int, default=1024
        Generations to score.
    temperature : float or None, default=None
        None for the method's default (above).
    top_k : int or None, default=None
        As in :func:`generate_answers`.
    planner : str or None, default=None
        As in :func:`generate_answers`.
    rng : numpy.random.Generator or None, default=None
        Draws the prompts' seeds (None: from ``seed``).
    seed : int, default=0
        Seeds ``rng`` when it is None.
    device : str or None, default=None
        Where the model runs and its draws are made (None: where it is).

    Returns
    -------
    dict
        ``creativity``, ``coherence``, ``uniqueness``, ``memorization``, ``n``, ``n_errors``
        (unreadable generations count as incoherent), ``temperature``, ``top_k``,
        ``seed_len`` and, when given, ``planner``.

    Examples
    --------
    >>> from icml25.creativity import load_run
    >>> from icml25.creativity.shipped import shipped_dir
    >>> run = load_run(shipped_dir("line-ntp"))
    >>> report = evaluate_model(run, n=8)
    >>> report["n"], report["temperature"], 0.0 <= report["creativity"] <= 1.0
    (8, 0.0, True)
    """
    rng = rng if rng is not None else np.random.default_rng(seed)
    scorer = scorer or Scorer(run.task, run.train)
    if temperature is None:
        temperature = get_method(run.method).default_temperature
    prompts = fresh_prompts(run, n, rng)
    where = place(run.model, device)
    gen = torch.Generator(device=where).manual_seed(int(rng.integers(2**31)))
    answers = generate_answers(run, prompts, temperature=temperature, top_k=top_k,
                               planner=planner, generator=gen)
    report = scorer.score(answers, skip_errors=False).summary()  # empty output = incoherent
    report.update(temperature=temperature, top_k=top_k, seed_len=run.seed_len)
    if planner is not None:
        report["planner"] = planner
    return report
