"""``icml25 mdm``: solve, generate, train and evaluate Sudoku, Zebra and text masked diffusion
models."""

from __future__ import annotations

import json
import sys
import time
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

app = typer.Typer(help="Masked diffusion with adaptive unmasking (Sudoku, Zebra, text).",
                  no_args_is_help=True)

Planner = Annotated[str, typer.Option(help="random | top_prob | top_margin | entropy")]
Noise = Annotated[float, typer.Option(
    min=0.0, help="Gumbel noise coefficient on the planner's scores (the paper: 0.5).")]


def _err(msg: str) -> None:
    print(msg, file=sys.stderr)


def _place(net, device: str) -> None:
    """Move a loaded model to ``--device``, or say clearly why not."""
    from icml25.nn.device import place

    try:
        place(net, device)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--device") from None


@app.command()
def solve(
    puzzle: Annotated[str | None, typer.Argument(help="81 characters, 0 or . for blanks.")] = None,
    file: Annotated[Path | None, typer.Option("--file", help="One puzzle per line.")] = None,
    planner: Planner = "top_margin",
    steps: Annotated[int, typer.Option(min=1, help="Reverse (sampling) steps.")] = 50,
    model: Annotated[Path | None, typer.Option(help="Model folder (default: shipped).")] = None,
    batch_size: Annotated[int | None, typer.Option(
        min=1, help="Puzzles per forward pass (default: 100 on a CPU, measured fastest; what "
                    "fits on a GPU).")] = None,
    noise: Noise = 0.0,
    remask: Annotated[str | None, typer.Option(
        help="ReMDM remasking schedule: cap | rescale | conf, optionally name:eta[:start[:stop]] "
             "(e.g. conf:0.1); paced, so no pass reveals more cells than without it; "
             "default none.")] = None,
    threshold: Annotated[float | None, typer.Option(
        min=0.0, max=1.0, help="Also reveal every cell predicted with at least this "
                               "probability (Fast-dLLM parallel decoding).")] = None,
    json_out: Annotated[bool, typer.Option(
        "--json", help="One JSON record per input line (solution, valid, error, steps, "
                       "seconds) instead of plain lines.")] = False,
    device: Device = "auto",
) -> None:
    """Solve puzzles: one output line per input line -- the solution, `unsolved: <81 digits>`
    for an answer that breaks a rule or a clue, or `error: ...` for a malformed line."""
    from icml25.mdm.planners import check_planner
    from icml25.mdm.remask import check_remask
    from icml25.mdm.sudoku_mdm import load_model, solve_sudoku

    try:
        check_planner(planner)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--planner") from None
    try:
        schedule = check_remask(remask)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--remask") from None
    if (puzzle is None) == (file is None):
        raise typer.BadParameter("give either a PUZZLE or --file", param_hint="PUZZLE")
    if file is not None:
        try:
            lines = file.read_text().splitlines()
        except OSError as exc:
            raise typer.BadParameter(f"cannot read {file}: {exc.strerror}",
                                    param_hint="--file") from None
    else:
        lines = [puzzle]
    try:
        net = load_model(model)
    except FileNotFoundError as exc:
        _err(f"error: {exc}")
        raise typer.Exit(2) from None
    _place(net, device)
    start = time.perf_counter()
    results = solve_sudoku(lines, planner=planner, steps=steps, model=net, batch_size=batch_size,
                           noise=noise, remask=schedule, threshold=threshold)
    for r in results:
        print(json.dumps(r.record()) if json_out else r.line())
    n_err = sum(r.error is not None for r in results)
    n_ok = sum(r.valid for r in results)
    extras = "".join(f", {name} {value}" for name, value in
                     (("remask", remask), ("threshold", threshold)) if value is not None)
    _err(f"{len(results)} puzzles: {n_ok} solved (valid), {len(results) - n_ok - n_err} "
         f"unsolved, {n_err} rejected inputs; {time.perf_counter() - start:.2f} s "
         f"({planner}, {steps} steps{extras})")
    if results and n_err == len(results):  # nothing could be solved at all: say so by the code
        raise typer.Exit(1)


@app.command()
def generate(
    n: Annotated[int, typer.Option(min=1, help="How many puzzles.")] = 100,
    task: Annotated[str, typer.Option(help="sudoku | zebra")] = "sudoku",
    difficulty: Annotated[str, typer.Option(help="sudoku: easy | hard")] = "easy",
    seed: int = 0,
    processes: Annotated[int, typer.Option(min=1)] = 1,
    houses: Annotated[int | None, typer.Option(
        min=3, max=6, help="zebra: this many houses (default: drawn from 3-6 per puzzle)")] = None,
    attrs: Annotated[int | None, typer.Option(
        min=3, max=6, help="zebra: this many attributes (default: drawn from 3-6)")] = None,
    out: Annotated[Path, typer.Option(
        "-o", "--out", help="sudoku: .txt (puzzles) or .npz; zebra: .jsonl")] = Path(
        "puzzles.txt"),
    lookup: Annotated[bool, typer.Option(
        help="zebra: clues all `at` (a curriculum's first stage, see docs/mdm.md)")] = False,
) -> None:
    """Generate puzzles with a unique solution (Sudoku easy = solvable by the 7 techniques;
    Zebra sizes drawn from 3-6 houses x 3-6 attributes unless fixed)."""
    from icml25.mdm import sudoku

    if task == "zebra":
        from icml25.mdm import zebra

        zebra.save_puzzles(out, zebra.generate_dataset(n, seed, houses, attrs,
                                                       processes=processes, lookup=lookup))
        _err(f"wrote {n} zebra puzzles to {out}")
        return
    if task != "sudoku":
        raise typer.BadParameter("sudoku or zebra", param_hint="--task")
    if houses is not None or attrs is not None or lookup:
        raise typer.BadParameter("Zebra only", param_hint="--houses/--attrs/--lookup")
    if difficulty not in ("easy", "hard"):
        raise typer.BadParameter("easy or hard", param_hint="--difficulty")
    puzzles, solutions = sudoku.generate_dataset(n, seed, difficulty, processes)
    if out.suffix == ".npz":
        sudoku.save_dataset(out, puzzles, solutions, seed=seed, difficulty=difficulty)
    else:
        out.write_text("".join(sudoku.format_grid(p) + "\n" for p in puzzles))
    _err(f"wrote {n} {difficulty} puzzles to {out}")


@app.command()
def train(
    task: Annotated[str, typer.Option(
        help="sudoku | zebra | text (or sudoku-ar | text-causal, = --autoregressive)")]
    = "sudoku",
    data: Annotated[list[Path] | None, typer.Option(
        help="sudoku .npz / zebra .jsonl data from `generate` (default: generate)")] = None,
    n_puzzles: Annotated[int, typer.Option(help="Base puzzles to generate when no --data.")] = 2000,
    out: Annotated[Path, typer.Option("--out", help="Run folder (resumes if it has a checkpoint).")]
    = Path("runs/sudoku"),
    preset: PresetName = "cpu",
    steps: Annotated[int | None, typer.Option(
        min=1, help="Optimizer steps (preset cpu 20,000; paper: Sudoku 4.2M, Zebra 3.5M).")] = None,
    batch_size: Annotated[int | None, typer.Option(
        min=1, help="Per process and micro-batch (presets: 128).")] = None,
    lr: Annotated[float | None, typer.Option(help="Peak learning rate (presets: 1e-3).")] = None,
    warmup: Annotated[int | None, typer.Option(
        min=0, help="Warm-up steps (presets: 500).")] = None,
    d_model: Annotated[int | None, typer.Option(
        help="Width (preset cpu 128; paper: Sudoku 384, Zebra 512).")] = None,
    n_layers: Annotated[int | None, typer.Option(
        help="Layers (preset cpu 4; paper: Sudoku 3, Zebra 6).")] = None,
    n_heads: Annotated[int | None, typer.Option(
        help="Heads (preset cpu 4; paper: Sudoku 12, Zebra 8).")] = None,
    dropout: Annotated[float | None, typer.Option(
        min=0.0, max=0.99, help="Dropout (preset cpu 0, paper 0.1).")] = None,
    device: Device = "auto",
    precision: Precision = "fp32",
    compile: Compile = False,
    grad_accum: GradAccum = 1,
    max_seconds: MaxSeconds = None,
    budget_seconds: BudgetSeconds = None,
    compile_mode: CompileMode = None,
    weighting: Annotated[str | None, typer.Option(
        help="elbo | none (default elbo; masked diffusion tasks only)")] = None,
    min_mask_rate: Annotated[float, typer.Option(
        min=0.0, max=1.0, help="Zebra: draw masking rates from (this, 1] (1 masks every answer "
                               "cell): a curriculum stage, not the ELBO; see docs/mdm.md.")] = 0.0,
    cell_embeddings: Annotated[bool, typer.Option(
        help="Add embeddings of each cell's row/column/box (Sudoku) or attribute/value (Zebra): "
             "a deviation from the paper's plain positions.")]
    = False,
    positions: Annotated[str | None, typer.Option(
        help="learned | rotary (default: learned for Sudoku, as in the paper; rotary for Zebra, "
             "whose clue tokens are read by their relative offsets; see docs/mdm.md).")] = None,
    autoregressive: Annotated[bool, typer.Option(
        help="Sudoku: train the row-major causal baseline instead of the MDM; text: the causal "
             "judge of generative perplexity.")] = False,
    init: Annotated[Path | None, typer.Option(
        help="Start from this model's weights (a run's model/ or checkpoint/) with a fresh "
             "optimizer and schedule: a warm restart. Its config replaces the size options.")]
    = None,
    checkpoint_every: int = 500,
    seed: int = 0,
) -> None:
    """Train a Sudoku, Zebra or text masked diffusion model (resumable; works under torchrun)."""
    from icml25.mdm.model_io import load_model, write_training_card
    from icml25.mdm.tasks import check_options, train_task, training_task
    from icml25.nn import TrainConfig, is_main_process
    from icml25.nn.presets import get_preset, with_overrides

    try:
        spec = training_task(task, autoregressive)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--task") from None
    try:
        recipe = with_overrides(get_preset(spec.preset, preset), steps=steps,
                                batch_size=batch_size, lr=lr, warmup_steps=warmup,
                                d_model=d_model, n_layers=n_layers, n_heads=n_heads,
                                dropout=dropout)
        cfg = TrainConfig(steps=recipe.steps, batch_size=recipe.batch_size, lr=recipe.lr,
                          warmup_steps=recipe.warmup_steps, weight_decay=recipe.weight_decay,
                          min_lr_ratio=recipe.min_lr_ratio, checkpoint_every=checkpoint_every,
                          log_every=100, seed=seed, out_dir=str(out), device=device,
                          precision=precision, compile=compile, grad_accum_steps=grad_accum,
                          max_seconds=max_seconds, budget_seconds=budget_seconds,
                          compile_mode=compile_mode)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    sizes = dict(d_model=recipe.d_model, n_layers=recipe.n_layers, n_heads=recipe.n_heads,
                 dropout=recipe.dropout)
    if positions is not None:
        if positions not in ("learned", "rotary"):
            raise typer.BadParameter("learned or rotary", param_hint="--positions")
        sizes["positions"] = positions
    if weighting is not None and weighting not in ("elbo", "none"):
        raise typer.BadParameter("elbo or none", param_hint="--weighting")

    def show(row: dict) -> None:
        _err(json.dumps({k: round(v, 4) for k, v in row.items()}))

    start = None
    if init is not None:
        try:
            start = load_model(init).train()
        except (FileNotFoundError, OSError, ValueError) as exc:
            raise typer.BadParameter(str(exc), param_hint="--init") from None
    options = dict(weighting=weighting, min_mask_rate=min_mask_rate,
                   cell_embeddings=cell_embeddings)
    try:
        check_options(spec, **options)  # before any data is made
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    try:
        data_set = spec.load(data, n_puzzles, seed)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--data") from None
    try:
        model, log = train_task(spec, data_set, cfg, sizes, on_log=show, init=start, **options)
    except ValueError as exc:  # an --init model of another kind or size, unusable data
        raise typer.BadParameter(str(exc)) from None
    if not is_main_process():
        return  # every rank trained; rank 0 alone writes
    final = out / "model"
    fit_file = out / "train_budget.json"  # the steps a --budget-seconds run fitted
    fit = json.loads(fit_file.read_text()) if budget_seconds and fit_file.exists() else None
    planned = fit["steps"] if fit else cfg.steps
    model.save(final, extra={"task": task, "weighting": weighting or "elbo",
                             "min_mask_rate": min_mask_rate, "autoregressive": spec.causal})
    write_training_card(final, "icml25 mdm train " + " ".join(sys.argv[3:]), log,
                        {spec.size_name: spec.size(data_set), "params": model.num_params(),
                         "preset": preset, "device": device, "precision": precision,
                         "grad_accum_steps": grad_accum, "compile": compile,
                         "planned_steps": planned, "budget": fit,
                         "stopped_early": bool(log) and log[-1]["step"] < planned})
    _err(f"saved {final}")


@app.command()
def export(
    run: Annotated[Path, typer.Argument(help="A training run folder (with checkpoint/).")],
    dest: Annotated[Path, typer.Argument(help="Where to write the model.")],
    command: Annotated[str, typer.Option(help="The training command, for the card.")] = "",
    task: Annotated[str, typer.Option(help="sudoku | zebra")] = "sudoku",
    started_from: Annotated[Path | None, typer.Option(
        help="training.json of the model a warm restart (train --init) began with.")] = None,
) -> None:
    """Export a run's latest checkpoint as a model folder with its training card."""
    from icml25.mdm.model_io import export_checkpoint

    before = None
    if started_from is not None:
        try:
            before = json.loads(started_from.read_text())
        except (OSError, ValueError) as exc:
            raise typer.BadParameter(str(exc), param_hint="--started-from") from None
    try:
        path = export_checkpoint(run, dest, command, task, started_from=before)
    except FileNotFoundError as exc:
        raise typer.BadParameter(str(exc), param_hint="RUN") from None
    _err(f"exported {path}")


@app.command()
def evaluate(
    model: Annotated[Path | None, typer.Option(help="Model folder (default: shipped).")] = None,
    task: Annotated[str, typer.Option(
        help="sudoku | sudoku-ar | zebra | text (infilling) | text-causal (the judge's "
             "perplexity on held-out windows)")] = "sudoku",
    n: Annotated[int | None, typer.Option(
        min=1, help="Held-out puzzles (default 1,000), text spans per kind (100) or judge "
                    "windows (64).")] = None,
    difficulty: Annotated[str, typer.Option(help="sudoku: easy | hard")] = "easy",
    steps: Annotated[int | None, typer.Option(
        min=1, help="Sampling steps (default: sudoku 50, zebra 36 = one per cell).")] = None,
    bytes_per_step: Annotated[str | None, typer.Option(
        help="text: bytes revealed per step, comma-separated (default 1); a span of L bytes "
             "takes ceil(L / b) steps.")] = None,
    planners: Annotated[str, typer.Option(help="Comma-separated planners.")]
    = "random,top_prob,top_margin",
    seed: Annotated[int, typer.Option(help="Seed of the held-out puzzles or spans.")] = 2,
    noise: Noise = 0.0,
    data: Annotated[Path | None, typer.Option(
        exists=True, dir_okay=False,
        help="Evaluate on this .npz / .jsonl (from `generate`) instead of generating N puzzles.")]
    = None,
    device: Device = "auto",
    batch_size: Annotated[int | None, typer.Option(
        min=1, help="Puzzles per forward pass (default: Sudoku 100 / Zebra 256 on a CPU, what "
                    "fits on a GPU).")] = None,
) -> None:
    """Held-out evaluation per planner (JSON): solved rate (puzzles) or infilling exact match
    and "file parses" (text)."""
    from icml25.mdm.model_io import load_model
    from icml25.mdm.planners import check_planner
    from icml25.mdm.tasks import check_options, evaluate_task, get_task

    try:
        spec = get_task(task)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--task") from None
    names = planners.split(",")
    try:
        for name in names:
            check_planner(name)
        widths = None if bytes_per_step is None else [int(b) for b in bytes_per_step.split(",")]
        if widths is not None and min(widths) < 1:
            raise ValueError("--bytes-per-step must be positive integers")
        options = {"bytes_per_step": widths}
        check_options(spec, evaluating=True, **options)
        held_out = spec.held_out(data, n or spec.default_n, seed, difficulty)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    try:
        net = load_model(model, task)
    except FileNotFoundError as exc:
        _err(f"error: {exc}")
        raise typer.Exit(2) from None
    if net.cfg.causal != spec.causal and task != "sudoku":  # sudoku reads either kind
        raise typer.BadParameter(f"this model is {'' if net.cfg.causal else 'not '}causal; "
                                 f"task {task} needs one that is{'' if spec.causal else ' not'}",
                                 param_hint="--model")
    _place(net, device)
    try:
        report = evaluate_task(spec, net, held_out, names, steps=steps, noise=noise,
                               batch_size=batch_size, **options)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    print(json.dumps(report, indent=2))


@app.command("generate-text")
def generate_text(
    prompt: Annotated[str, typer.Argument(help="The text to continue (bytes; the shipped model "
                                               "knows Python source).")],
    gen_length: Annotated[int, typer.Option(min=1, help="Bytes to generate.")] = 128,
    steps: Annotated[int | None, typer.Option(
        min=1, help="Forward passes at most (default: gen-length).")] = None,
    block_length: Annotated[int, typer.Option(min=1, help="Semi-autoregressive block.")] = 32,
    planner: Planner = "top_prob",
    cache: Annotated[str | None, typer.Option(help="Block KV cache: prefix | dual.")] = None,
    threshold: Annotated[float | None, typer.Option(
        min=0.0, max=1.0, help="Parallel decoding: also reveal every byte this sure.")] = None,
    temperature: Annotated[float, typer.Option(min=0.0)] = 0.0,
    top_k: Annotated[int | None, typer.Option(min=1)] = None,
    top_p: Annotated[float | None, typer.Option(min=0.0, max=1.0)] = None,
    seed: Annotated[int, typer.Option(help="Seed of the random draws.")] = 0,
    model: Annotated[Path | None, typer.Option(help="Model folder (default: shipped text MDM).")
                     ] = None,
    device: Device = "auto",
) -> None:
    """Continue PROMPT with the text MDM, printing each block as soon as it is decided."""
    import torch

    from icml25.mdm.decoding import generate_stream
    from icml25.mdm.model_io import load_model
    from icml25.mdm.text_data import MASK, PAD

    try:
        net = load_model(model, "text")
    except FileNotFoundError as exc:
        _err(f"error: {exc}")
        raise typer.Exit(2) from None
    _place(net, device)
    ids = list(prompt.encode())
    room = net.cfg.seq_len - gen_length
    if room < 1:
        raise typer.BadParameter(f"at most {net.cfg.seq_len - 1} bytes fit the model's context",
                                 param_hint="--gen-length")
    ids = ids[-room:]  # the model's context holds the prompt's end
    gen = torch.Generator().manual_seed(seed)
    try:
        stream = generate_stream(net, [ids], mask_id=MASK, pad_id=PAD, gen_length=gen_length,
                                 steps=steps or gen_length, block_length=block_length,
                                 planner=planner, cache=cache, threshold=threshold,
                                 temperature=temperature, top_k=top_k, top_p=top_p,
                                 generator=gen)
        print(prompt, end="", flush=True)
        for block in stream:
            print(bytes(t for t in block[0] if t < 256).decode(errors="replace"), end="",
                  flush=True)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    print()
