"""``icml25 creativity``: generate the tasks, score answers, train and evaluate models."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from icml25.core.cli_options import (
    BudgetSeconds,
    Compile,
    CompileMode,
    Device,
    GradAccum,
    MaxSeconds,
    Precision,
    PresetName,
)

app = typer.Typer(help="Algorithmic creativity: tasks, exact scorer, multi-token training and "
                       "seed-conditioning.", no_args_is_help=True)

TaskOpt = Annotated[str, typer.Option("--task", help="sibling | triangle | circle | line")]
LayerShift = Annotated[bool, typer.Option(
    "--layer-shift", help="Every block also mixes in its left neighbour (icml25.nn layer_shift): "
    "what the chain-start lookup took (docs/creativity.md).")]


def _err(msg: str) -> None:
    print(msg, file=sys.stderr)


def _check_task(task: str) -> None:
    from icml25.creativity.tasks import TASKS

    if task not in TASKS:
        raise typer.BadParameter(f"choose one of {', '.join(TASKS)}", param_hint="--task")


def _params(pairs: list[str]) -> dict:
    out = {}
    for p in pairs:
        key, sep, value = p.partition("=")
        if not sep:
            raise typer.BadParameter(f"expected KEY=VALUE, got {p!r}", param_hint="--param")
        try:
            out[key] = int(value)
        except ValueError:
            try:
                out[key] = float(value)
            except ValueError:
                raise typer.BadParameter(f"{key} must be a number", param_hint="--param") from None
    return out


def _load_data(directory: Path, task: str):
    """(task object, training examples) from a folder written by ``data``."""
    from icml25.creativity.tasks import AnswerError, make_task, parse_line

    meta_path = directory / "meta.json"
    if not meta_path.exists() or not (directory / "train.txt").exists():
        raise typer.BadParameter(f"{directory} has no meta.json/train.txt (make it with "
                                 "`icml25 creativity data`)", param_hint="--data")
    meta = json.loads(meta_path.read_text())
    if meta["task"] != task:
        raise typer.BadParameter(f"{directory} holds the {meta['task']} task, not {task}",
                                 param_hint="--task")
    t = make_task(task, meta["seed"], **meta["params"])
    lines = (directory / "train.txt").read_text().splitlines()
    try:
        train = [parse_line(x) for x in lines if x.strip()]
    except AnswerError as exc:
        raise typer.BadParameter(f"bad train.txt: {exc}", param_hint="--data") from None
    return t, train


@app.command()
def data(
    task: TaskOpt,
    out: Annotated[Path, typer.Option("-o", "--out", help="Output folder.")],
    seed: Annotated[int, typer.Option(min=0, help="Generator seed.")] = 0,
    seed_len: Annotated[int, typer.Option(min=0, help="Seed-prefix length (0 = none).")] = 10,
    param: Annotated[list[str] | None, typer.Option(
        "--param", help="Task parameter KEY=VALUE, e.g. n_train=5000 (repeatable).")] = None,
) -> None:
    """Write train.txt, test_prompts.txt and meta.json for one task."""
    from icml25.creativity.tasks import generate

    _check_task(task)
    try:
        ds = generate(task, seed=seed, seed_len=seed_len, **_params(param or []))
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--param") from None
    out.mkdir(parents=True, exist_ok=True)
    (out / "train.txt").write_text("".join(e.line() + "\n" for e in ds.train))
    (out / "test_prompts.txt").write_text("".join(p + "\n" for p in ds.test_prompts))
    (out / "meta.json").write_text(json.dumps(ds.meta(), indent=2))
    _err(f"{task}: {len(ds.train)} training lines, {len(ds.test_prompts)} test prompts -> {out}")


@app.command()
def score(
    answers: Annotated[Path, typer.Argument(help="One answer per line ('-' = stdin).")],
    task: TaskOpt,
    data_dir: Annotated[Path, typer.Option("--data", help="Folder written by `data`.")],
    details: Annotated[bool, typer.Option(help="Also list every line's judgement.")] = False,
    canonical_order: Annotated[bool, typer.Option(
        "--canonical-order", help="Circle/line: compare answers as sets of directed edges with "
        "their node names (another edge order counts once; renamings count apart).")] = False,
) -> None:
    """Score answers: prints JSON with creativity, coherence, uniqueness, memorization, n."""
    from icml25.creativity.scoring import Scorer

    _check_task(task)
    t, train = _load_data(data_dir, task)
    try:
        text = sys.stdin.read() if str(answers) == "-" else answers.read_text()
    except OSError as exc:
        raise typer.BadParameter(f"cannot read {answers}: {exc.strerror}",
                                 param_hint="ANSWERS") from None
    report = Scorer(t, train, canonical_order=canonical_order).score(text.splitlines())
    out = report.summary()
    out["errors"] = [{"line": i + 1, "error": j.error}
                     for i, j in enumerate(report.judgements) if j.error]
    if details:
        out["lines"] = [{"line": i + 1, "coherent": j.coherent, "memorized": j.memorized}
                        for i, j in enumerate(report.judgements) if not j.error]
    for e in out["errors"]:
        _err(f"line {e['line']}: {e['error']}")
    print(json.dumps(out, indent=2))


@app.command("train")
def train_cmd(
    task: TaskOpt,
    out: Annotated[Path, typer.Option("-o", "--out", help="Run folder.")],
    method: Annotated[str, typer.Option(
        help="ntp | teacherless | diffusion (absorbing) | diffusion-uniform")] = "ntp",
    data_dir: Annotated[Path | None, typer.Option(
        "--data", help="Folder from `data` (default: generate with --param).")] = None,
    seed_len: Annotated[int | None, typer.Option(
        help="Seed-prefix length for training (0 = no seed; default: the data's).")] = None,
    preset: PresetName = "cpu",
    steps: Annotated[int | None, typer.Option(
        min=1, help="Optimizer steps (preset cpu 2,000, paper 40,000).")] = None,
    batch_size: Annotated[int | None, typer.Option(
        min=1, help="Per process and micro-batch (presets: 64).")] = None,
    lr: Annotated[float | None, typer.Option(
        min=0.0, help="Peak learning rate (preset cpu 1e-3, paper 1e-4).")] = None,
    warmup: Annotated[int | None, typer.Option(
        min=0, help="Warm-up steps (preset cpu 100, paper 2,000).")] = None,
    d_model: Annotated[int | None, typer.Option(
        min=8, help="Width (preset cpu 128, paper 768).")] = None,
    n_layers: Annotated[int | None, typer.Option(
        min=1, help="Layers (preset cpu 4, paper 12).")] = None,
    n_heads: Annotated[int | None, typer.Option(
        min=1, help="Heads (preset cpu 4, paper 12).")] = None,
    dropout: Annotated[float | None, typer.Option(
        min=0.0, max=0.99, help="Dropout (preset cpu 0, paper 0.1).")] = None,
    token_shift: Annotated[bool, typer.Option(
        "--token-shift", help="Add a learned previous-token embedding to the input: what Line "
        "and Circle coherence took on a CPU (docs/creativity.md).")] = False,
    layer_shift: LayerShift = False,
    init_from: Annotated[Path | None, typer.Option(
        "--init-from", help="A saved model folder whose weights start the run, e.g. the "
        "`pretrain-lookup` stage (same architecture).")] = None,
    head_only_steps: Annotated[int, typer.Option(
        min=0, help="LP-FT: first train only the output head for this many steps on the "
        "--init-from features (then --steps of full fine-tuning).")] = 0,
    head_lr: Annotated[float, typer.Option(
        min=0.0, help="Constant learning rate of the head-only phase.")] = 3e-3,
    replay_weight: Annotated[float, typer.Option(
        min=0.0, help="With --init-from a `pretrain-lookup` stage: go on training its lookup "
        "beside the method's loss, so fine-tuning keeps it (docs/creativity.md).")] = 0.0,
    device: Device = "auto",
    precision: Precision = "fp32",
    compile: Compile = False,
    grad_accum: GradAccum = 1,
    max_seconds: MaxSeconds = None,
    budget_seconds: BudgetSeconds = None,
    compile_mode: CompileMode = None,
    eval_every: Annotated[int, typer.Option(min=0, help="Learning-curve interval.")] = 0,
    seed: Annotated[int, typer.Option(min=0)] = 0,
    param: Annotated[list[str] | None, typer.Option("--param")] = None,
    resume: Annotated[bool, typer.Option(
        "--resume", help="Go on from OUT's checkpoint (a run killed or stopped by "
        "--max-seconds).")] = False,
) -> None:
    """Train a model (from scratch, or from --init-from); saves OUT/model (evaluate it with
    `evaluate OUT`)."""
    from icml25.creativity.tasks import generate, make_task
    from icml25.creativity.training import METHODS, TrainSettings, train_model
    from icml25.nn.presets import get_preset, with_overrides

    _check_task(task)
    if method not in METHODS:
        raise typer.BadParameter(f"choose one of {', '.join(METHODS)}", param_hint="--method")
    if data_dir is not None:
        t, train = _load_data(data_dir, task)
    else:
        t = make_task(task, seed, **_params(param or []))
        train = generate(t, seed_len=10 if seed_len is None else seed_len).train
    try:
        r = with_overrides(get_preset("creativity", preset), steps=steps, batch_size=batch_size,
                           lr=lr, warmup_steps=warmup, d_model=d_model, n_layers=n_layers,
                           n_heads=n_heads, dropout=dropout)
        settings = TrainSettings(
            method=method, seed_len=seed_len, steps=r.steps, batch_size=r.batch_size, lr=r.lr,
            warmup_steps=r.warmup_steps, weight_decay=r.weight_decay,
            min_lr_ratio=r.min_lr_ratio, dropout=r.dropout, d_model=r.d_model,
            n_layers=r.n_layers, n_heads=r.n_heads, token_shift=token_shift,
            layer_shift=layer_shift, init_from=None if init_from is None else str(init_from),
            head_only_steps=head_only_steps, head_lr=head_lr, replay_weight=replay_weight,
            eval_every=eval_every, seed=seed,
            device=device, precision=precision, compile=compile, grad_accum_steps=grad_accum,
            max_seconds=max_seconds, budget_seconds=budget_seconds, compile_mode=compile_mode)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    try:
        run = train_model(t, train, settings, out_dir=out, resume=resume,
                          on_eval=lambda p: _err(json.dumps(p)))
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    if run.stopped_early:
        _err(f"stopped by --max-seconds after {run.seconds:.1f} s; saved what it reached to "
             f"{out / 'model'} (rerun with --resume to finish)")
        return
    _err(f"trained {method} on {task} ({len(train)} lines, seed length {run.seed_len}) in "
         f"{run.seconds:.1f} s -> {out / 'model'}")


@app.command("pretrain-lookup")
def pretrain_lookup_cmd(
    task: TaskOpt,
    out: Annotated[Path, typer.Option("-o", "--out", help="Stage folder (OUT/model).")],
    method: Annotated[str, typer.Option(
        help="The layout of the run it will start: ntp | teacherless | diffusion.")] = "ntp",
    steps: Annotated[int, typer.Option(min=1)] = 3000,
    d_model: Annotated[int, typer.Option(min=8)] = 64,
    n_layers: Annotated[int, typer.Option(min=1)] = 6,
    n_heads: Annotated[int, typer.Option(min=1)] = 4,
    token_shift: Annotated[bool, typer.Option("--token-shift")] = False,
    layer_shift: LayerShift = False,
    lr: Annotated[float, typer.Option(min=0.0)] = 1e-3,
    warmup: Annotated[int, typer.Option(min=0)] = 200,
    batch_size: Annotated[int, typer.Option(min=1)] = 64,
    seed_len: Annotated[int, typer.Option(min=0, help="Seed length of the prompts.")] = 10,
    eval_every: Annotated[int, typer.Option(min=0, help="Accuracy interval.")] = 500,
    seed: Annotated[int, typer.Option(min=0)] = 0,
    dropout: Annotated[float, typer.Option(min=0.0, max=0.99)] = 0.0,
    device: Device = "auto",
    precision: Precision = "fp32",
    compile: Compile = False,
    compile_mode: CompileMode = None,
    max_seconds: MaxSeconds = None,
    budget_seconds: BudgetSeconds = None,
    resume: Annotated[bool, typer.Option("--resume", help="Go on from OUT's checkpoint.")]
    = False,
) -> None:
    """The chain-start lookup stage for line/circle (a pretrained start on fresh answers, no
    language-model loss): start `train` from it with --init-from OUT."""
    from icml25.creativity.lookup import pretrain_lookup
    from icml25.creativity.tasks import make_task
    from icml25.creativity.training import TrainSettings

    _check_task(task)
    try:
        settings = TrainSettings(
            method=method, seed_len=seed_len, steps=steps, d_model=d_model, n_layers=n_layers,
            n_heads=n_heads, token_shift=token_shift, layer_shift=layer_shift, lr=lr,
            warmup_steps=warmup, batch_size=batch_size, eval_every=eval_every, seed=seed,
            dropout=dropout, device=device, precision=precision, compile=compile,
            compile_mode=compile_mode, max_seconds=max_seconds, budget_seconds=budget_seconds)
        _, report = pretrain_lookup(make_task(task), settings, out_dir=out, resume=resume,
                                    on_eval=lambda p: _err(json.dumps(p)))
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    if report["stopped_early"]:
        _err(f"stopped by --max-seconds; saved what it reached to {out / 'model'} (rerun with "
             "--resume to finish)")
    print(json.dumps(report))


@app.command()
def evaluate(
    checkpoint: Annotated[Path | None, typer.Argument(
        help="Run folder from `train` (or use --shipped).")] = None,
    shipped: Annotated[str | None, typer.Option(
        "--shipped", help="A model shipped with the package, e.g. line-ntp.")] = None,
    n: Annotated[int, typer.Option(min=1, help="Generations (one per fresh prompt).")] = 1024,
    temperature: Annotated[float | None, typer.Option(
        min=0.0, help="0 = greedy (default for causal models; 1 for diffusion; a shipped "
        "model: its card's).")] = None,
    top_k: Annotated[int | None, typer.Option(min=1, help="Top-k sampling (off by default).")]
    = None,
    planner: Annotated[str | None, typer.Option(
        help="Absorbing diffusion's unmasking order: random (the paper's, default), top_prob, "
        "top_margin, entropy (icml25.mdm's planners).")] = None,
    seed: Annotated[int, typer.Option(min=0)] = 0,
    answers_out: Annotated[Path | None, typer.Option("--answers", help="Save generations.")]
    = None,
    device: Device = "auto",
    as_json: Annotated[bool, typer.Option(
        "--json", help="Print one JSON object on one line (for scripts).")] = False,
) -> None:
    """Generate from a trained model on fresh prompts and print the creativity scores."""
    import numpy as np

    from icml25.creativity.methods import get_method
    from icml25.creativity.scoring import Scorer
    from icml25.creativity.training import fresh_prompts, generate_answers, load_run

    if (checkpoint is None) == (shipped is None):
        raise typer.BadParameter("give a run folder or --shipped NAME (one of them)",
                                 param_hint="CHECKPOINT")
    try:
        if shipped is not None:
            from icml25.creativity.shipped import shipped_dir, shipped_temperature

            checkpoint = shipped_dir(shipped)
            if temperature is None:  # the decoding its card reports
                temperature = shipped_temperature(shipped)
        run = load_run(checkpoint)
    except (FileNotFoundError, ValueError) as exc:
        raise typer.BadParameter(str(exc), param_hint="--shipped" if shipped else
                                 "CHECKPOINT") from None
    rng = np.random.default_rng(seed)
    if temperature is None:
        temperature = get_method(run.method).default_temperature
    if run.seed_len == 0 and temperature == 0:
        _err("warning: a model trained without seeds, decoded greedily, gives one answer for "
             "every prompt; pass --temperature")
    prompts = fresh_prompts(run, n, rng)
    import torch

    from icml25.nn.device import place

    try:
        where = place(run.model, device)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--device") from None
    try:
        answers = generate_answers(run, prompts, temperature=temperature, top_k=top_k,
                                   planner=planner,
                                   generator=torch.Generator(device=where).manual_seed(seed))
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    report = Scorer(run.task, run.train).score(answers, skip_errors=False).summary()
    report.update(task=run.task.name, method=run.method, seed_len=run.seed_len,
                  temperature=temperature, top_k=top_k)
    if planner is not None:
        report["planner"] = planner
    if answers_out is not None:
        answers_out.write_text("".join(f"{p}\t{a}\n" for p, a in zip(prompts, answers,
                                                                        strict=True)))
    print(json.dumps(report) if as_json else json.dumps(report, indent=2))
