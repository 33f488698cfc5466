"""Headline reproduction: Sudoku and Zebra puzzles solved by the same MDM under different
unmasking planners.

``--quick`` evaluates the shipped checkpoints on freshly generated held-out puzzles (their seeds
differ from the training data's); ``--full`` first trains models from scratch at the shipped
models' settings, then evaluates on 1,000 easy and 1,000 hard Sudoku and 1,000 Zebra puzzles.
"""

from __future__ import annotations

import dataclasses
import tempfile

from icml25.core import Outcome, RunContext, experiment, new_figure
from icml25.core.figures import legend_outside
from icml25.core.verdicts import Direction, Overlap

PAPER = ("Kim, Shah, Kontonis, Kakade & Chen (ICML 2025), Train for the Worst, Plan for the Best: "
         "Understanding Token Ordering in Masked Diffusions")
PLANNER_LABELS = {"random": "vanilla", "top_prob": "top prob", "top_margin": "top margin"}
EASY_SEED, HARD_SEED, TRAIN_SEED = 2, 3, 1000
PAPER_NOISE = 0.5  # App. D.2: Gumbel noise with coefficient 0.5 on the certainty scores
# How far (points) our 95% interval may miss a published solve rate and still count as the gap
# a model with 1/7 of the parameters and ~1/100 of the training examples explains; beyond it, a
# row falls short. Stated once, for every puzzle row.
SCALE_GAP = 15.0


def _ci(r: dict) -> tuple[float, float]:
    return (100 * r["ci_low"], 100 * r["ci_high"])


def _effect_row(ctx: RunContext, quantity: str, better: dict, worse: dict, published: float,
                scale: str):
    """``better - worse`` in points, judged by the sign of a conservative interval (the
    difference of the two 95% intervals' far ends: no pairing assumed)."""
    lo = 100 * (better["ci_low"] - worse["ci_high"])
    hi = 100 * (better["ci_high"] - worse["ci_low"])
    ours = round(100 * (better["solved"] - worse["solved"]), 2)
    return ctx.compare(quantity, ours, published=round(published, 2), scale=scale,
                       note=f"interval {lo:.1f} to {hi:.1f} points",
                       rule=Direction(1, ci=(lo, hi)))


@experiment(
    "mdm-sudoku",
    paper=PAPER,
    reproduces="Table 2 (Sudoku) and Table 5 (hard Sudoku): % of puzzles fully solved per planner",
    published={
        "easy: vanilla (%)": 6.88, "easy: top prob (%)": 18.51, "easy: top margin (%)": 89.49,
        "hard: vanilla (%)": 3.62, "hard: top prob (%)": 9.44, "hard: top margin (%)": 49.88,
        "easy: autoregressive, row-major (%)": 9.73,
    },
    # quick: few puzzles (wide intervals, shown in every row) so that this and mdm-zebra --quick
    # take under 2 minutes together on 2 cores
    quick={"train_steps": 0, "n_easy": 100, "n_hard": 40, "steps": 50, "sweep_n": 20},
    # restarts: (steps, lr, batch size) of each warm restart after the first phase
    full={"train_steps": 16_000, "restarts": [(6_500, 3e-4, 128), (6_500, 4e-4, 256)],
          "base_puzzles": 20_000, "n_easy": 1000, "n_hard": 1000, "steps": 50, "sweep_n": 300},
)
def sudoku_planners(ctx: RunContext) -> Outcome:
    from icml25.mdm import sudoku
    from icml25.mdm.sudoku_mdm import evaluate, load_model, train_sudoku
    from icml25.nn import TrainConfig

    s = ctx.settings
    notes = []
    ar_model = None
    if s["train_steps"]:
        puzzles, solutions = sudoku.generate_dataset(s["base_puzzles"], seed=TRAIN_SEED,
                                                     processes=2)
        with tempfile.TemporaryDirectory() as run:
            cfg = TrainConfig(steps=s["train_steps"], batch_size=128, warmup_steps=500,
                              seed=ctx.seed, out_dir=run)
            model, _ = train_sudoku(puzzles, solutions, cfg)
        ar_model = _train_ar_baseline(puzzles, solutions, cfg)
        # The shipped model's later phases: warm restarts (fresh AdamW state and cosine
        # schedule, new batches), each from the previous phase's weights.
        for i, (steps, lr, batch) in enumerate(s["restarts"], 1):
            with tempfile.TemporaryDirectory() as run:
                cfg = TrainConfig(steps=steps, batch_size=batch, lr=lr, warmup_steps=200,
                                  seed=ctx.seed + i, out_dir=run)
                model, _ = train_sudoku(puzzles, solutions, cfg, init=model)
        model.eval()
        notes.append(f"Trained from scratch: {s['train_steps']} steps x 128 on "
                     f"{s['base_puzzles']} augmented base puzzles, then warm restarts of "
                     + "; ".join(f"{n} steps x {b} at lr {lr}" for n, lr, b in s["restarts"])
                     + f". Autoregressive baseline: {s['train_steps']} steps x 128 from scratch, "
                     "the first phase's budget and schedule.")
    else:
        model = load_model()
        notes.append(_shipped_card())
        try:
            ar_model = load_model(task="sudoku-ar")
            notes.append("Autoregressive baseline: " + _shipped_card("sudoku-ar"))
        except FileNotFoundError:
            notes.append("Autoregressive baseline: not measured, no checkpoint is shipped yet "
                         "(its run is in data/mdm/README.md).")
    notes.append(f"Model: {model.num_params():,} parameters (paper: ~6M); puzzles generated "
                 "here (the paper's Kaggle-derived data cannot be downloaded), easy = solvable by "
                 "the 7 techniques of Shah et al., hard = unique but not solvable by them.")
    rows, data = [], {}
    for level, n, seed in (("easy", s["n_easy"], EASY_SEED), ("hard", s["n_hard"], HARD_SEED)):
        puzzles, solutions = sudoku.generate_dataset(n, seed=seed, difficulty=level)
        report = evaluate(model, puzzles, solutions, list(PLANNER_LABELS), steps=s["steps"],
                          seed=ctx.seed)
        data[level] = report
        for planner, label in PLANNER_LABELS.items():
            r = report[planner]
            rows.append(ctx.compare(
                f"{level}: {label} (%)", round(100 * r["solved"], 2),
                scale=f"{n} puzzles, {s['steps']} steps",
                note=f"95% CI {100 * r['ci_low']:.1f}–{100 * r['ci_high']:.1f}; "
                     f"cell accuracy {100 * r['cell_acc']:.1f}%",
                rule=Overlap(_ci(r), gap=SCALE_GAP)))
        published = ctx.experiment.published
        scale = f"{n} puzzles, {s['steps']} steps"
        rows.append(_effect_row(
            ctx, f"{level}: top margin − vanilla (points)", report["top_margin"],
            report["random"], published[f"{level}: top margin (%)"]
            - published[f"{level}: vanilla (%)"], scale))
        rows.append(_effect_row(
            ctx, f"{level}: top margin − top prob (points)", report["top_margin"],
            report["top_prob"], published[f"{level}: top margin (%)"]
            - published[f"{level}: top prob (%)"], scale))
        # The paper's stated Gumbel coefficient, for comparison with our noise-free default.
        r = evaluate(model, puzzles, solutions, ["top_margin"], steps=s["steps"], seed=ctx.seed,
                     noise=PAPER_NOISE)["top_margin"]
        data[level]["top_margin_paper_noise"] = r
        rows.append(ctx.compare(
            f"{level}: top margin + {PAPER_NOISE} Gumbel (%)", round(100 * r["solved"], 2),
            scale=f"{n} puzzles, {s['steps']} steps",
            note=f"95% CI {100 * r['ci_low']:.1f}–{100 * r['ci_high']:.1f}; the paper's noise "
                 "setting; our default adds none"))
        if ar_model is not None:
            r = evaluate(ar_model, puzzles, solutions)["autoregressive"]
            data[level]["autoregressive"] = r
            rows.append(ctx.compare(
                f"{level}: autoregressive, row-major (%)", round(100 * r["solved"], 2),
                scale=f"{n} puzzles, greedy",
                rule=Overlap(_ci(r), gap=SCALE_GAP) if level == "easy" else None,
                note=f"95% CI {100 * r['ci_low']:.1f}–{100 * r['ci_high']:.1f}; cell accuracy "
                     f"{100 * r['cell_acc']:.1f}%; the MDM's first-phase budget; paper: 42M "
                     "parameters"))
    data["sweep"] = _steps_sweep(ctx, model, sudoku, s["sweep_n"])
    return Outcome(comparisons=rows, data=data, notes=notes)


def _train_ar_baseline(puzzles, solutions, cfg):
    """The row-major causal baseline at the MDM's first-phase budget (same steps, batch,
    schedule and data)."""
    from icml25.mdm.sudoku_ar import train_sudoku_ar

    with tempfile.TemporaryDirectory() as run:
        model, _ = train_sudoku_ar(puzzles, solutions, dataclasses.replace(cfg, out_dir=run))
    return model.eval()


def _shipped_card(task: str = "sudoku") -> str:
    from icml25.mdm.model_io import describe_card, read_card

    return describe_card(read_card(task))


def _steps_sweep(ctx: RunContext, model, sudoku, n: int) -> dict:
    """Accuracy vs number of sampling steps, one curve per planner (the paper's budget is 50)."""
    from icml25.mdm.sudoku_mdm import evaluate

    puzzles, solutions = sudoku.generate_dataset(n, seed=EASY_SEED)
    grid = [5, 10, 25, 50]
    curves = {p: [] for p in PLANNER_LABELS}
    for steps in grid:
        report = evaluate(model, puzzles, solutions, list(PLANNER_LABELS), steps=steps,
                          seed=ctx.seed)
        for p in PLANNER_LABELS:
            curves[p].append(100 * report[p]["solved"])
    fig, ax = new_figure()
    for p, label in PLANNER_LABELS.items():
        ax.plot(grid, curves[p], marker="o", label=label)
    ax.set(xlabel="sampling steps", ylabel="puzzles fully solved (%)", xscale="log",
           title=f"Sudoku, {n} held-out easy puzzles")
    ax.set_xticks(grid, [str(g) for g in grid])
    ax.minorticks_off()  # the log axis's own minor labels would overprint ours
    legend_outside(ax, "below")
    ctx.save_figure(fig, "accuracy_vs_steps")
    return {"steps": grid, **curves}


ZEBRA_TRAIN_SEED, ZEBRA_TEST_SEED = 10, 11
LOOKUP_SEED, LOOKUP_H3_SEED = 30, 32  # the curriculum's lookup puzzles (docs/mdm.md, "Zebra")


@experiment(
    "mdm-zebra",
    paper=PAPER,
    reproduces="Table 3 (Zebra puzzles): % of puzzles fully solved per planner",
    published={"vanilla (%)": 76.9, "top prob (%)": 98.5, "top margin (%)": 98.3},
    quick={"train_steps": 0, "n_test": 60},
    full={"lookup_h3_steps": 1500, "lookup_steps": 1000, "train_steps": 7000, "n_train": 8000,
          "n_lookup": 8000, "n_test": 1000},
)
def zebra_planners(ctx: RunContext) -> Outcome:
    from icml25.mdm import zebra
    from icml25.mdm.sudoku_mdm import load_model
    from icml25.mdm.zebra_mdm import evaluate_zebra

    s = ctx.settings
    notes = []
    if s["train_steps"]:
        model = _train_zebra_curriculum(s, ctx.seed)
        notes.append(
            f"Trained from scratch, the shipped model's curriculum: {s['lookup_h3_steps']} steps "
            f"on 3-house lookup puzzles and {s['lookup_steps']} on lookup puzzles of every size "
            f"(every answer cell masked), then {s['train_steps']} steps (MDM objective) on "
            f"{s['n_train']} real puzzles and {s['n_lookup'] // 4} lookup ones; batch 64, "
            "item-major answers, rotary positions, attribute/value embeddings, query/key init "
            "0.088.")
    else:
        try:
            model = load_model(task="zebra")
        except FileNotFoundError:
            return Outcome(comparisons=[], data={}, notes=[
                "Not measured: no Zebra checkpoint is shipped yet (docs/mdm.md has the state "
                "of the Zebra run); `--full` trains one from scratch."])
        notes.append(_shipped_card("zebra"))
    notes.append(f"Model: {model.num_params():,} parameters (paper: 19M, ~1.5M training "
                 "puzzles); puzzles from our generator (3-6 houses x 3-6 attributes, unique "
                 "solution), held-out seed; one sampling step per answer cell (36).")
    test = zebra.generate_dataset(s["n_test"], seed=ZEBRA_TEST_SEED)
    report = evaluate_zebra(model, test, list(PLANNER_LABELS), seed=ctx.seed)
    rows = [ctx.compare(f"{label} (%)", round(100 * report[p]["solved"], 2),
                        scale=f"{s['n_test']} puzzles, 36 steps",
                        note=f"95% CI {100 * report[p]['ci_low']:.1f}–"
                             f"{100 * report[p]['ci_high']:.1f}; cell accuracy "
                             f"{100 * report[p]['cell_acc']:.1f}%",
                        rule=Overlap(_ci(report[p]), gap=SCALE_GAP))
            for p, label in PLANNER_LABELS.items()]
    margin = report["top_margin"]
    notes.append("Top margin by size (houses x attributes): solved (items placed right) "
                 + ", ".join(f"{size} {100 * rate:.0f}% "
                             f"({100 * margin['cell_acc_by_size'][size]:.0f}%)"
                             for size, rate in margin["by_size"].items()))
    return Outcome(comparisons=rows, data=report, notes=notes)


def _train_zebra_curriculum(s: dict, seed: int):
    """The shipped Zebra model's three stages, each a warm restart of the one before: lookup
    puzzles with 3 houses, then of every size (both with every answer cell masked), then real
    puzzles with a quarter as many lookup ones mixed in (the MDM objective)."""
    from icml25.mdm import zebra
    from icml25.mdm.zebra_mdm import default_model_config, train_zebra
    from icml25.nn import TrainConfig

    lookup = zebra.generate_dataset(s["n_lookup"], seed=LOOKUP_SEED, lookup=True)
    stages = [
        (zebra.generate_dataset(s["n_lookup"] // 2, seed=LOOKUP_H3_SEED, n_houses=3,
                                lookup=True), s["lookup_h3_steps"], 100, 1.0),
        (lookup, s["lookup_steps"], 100, 1.0),
        (zebra.generate_dataset(s["n_train"], seed=ZEBRA_TRAIN_SEED, processes=2)
         + lookup[:s["n_lookup"] // 4], s["train_steps"], 200, 0.0),
    ]
    model = None
    for puzzles, steps, warmup, min_mask_rate in stages:
        with tempfile.TemporaryDirectory() as run:
            cfg = TrainConfig(steps=steps, batch_size=64, warmup_steps=warmup, seed=seed,
                              out_dir=run)
            model, _ = train_zebra(puzzles, cfg, default_model_config(cell_embeddings=True),
                                   min_mask_rate=min_mask_rate, init=model)
    return model.eval()


TEXT_PUBLISHED = {  # LLaDA-8B, Table 4 (HumanEval-Infill exact match, %)
    "single-line: vanilla (%)": 31.8, "single-line: top prob (%)": 32.9,
    "single-line: top margin (%)": 33.5,
    "multi-line: vanilla (%)": 16.5, "multi-line: top prob (%)": 20.8,
    "multi-line: top margin (%)": 25.4,
}
# the shipped models' training, phase by phase: (steps, warm-up), later phases warm restarts
# (their cards, src/icml25/mdm/checkpoints/text*/training.json); batch 16 windows of 256 bytes
TEXT_MDM_PHASES = [(400, 60), (1600, 100)]
TEXT_JUDGE_PHASES = [(250, 40)]
_TEXT_BYTES = sum(n for n, _ in TEXT_MDM_PHASES) * 16 * 256
TEXT_SCALE = ("LLaDA-8B (8B parameters, 2.3T tokens, BPE) on HumanEval-Infill; ours: a 0.86M "
              f"byte-level MDM that saw {_TEXT_BYTES / 1e6:.1f}M bytes of the standard library "
              f"({' + '.join(str(n) for n, _ in TEXT_MDM_PHASES)} steps x 16 x 256), held-out "
              "stdlib modules")
TEXT_KINDS = {"single": "single-line", "multi": "multi-line"}
TEXT_TASK_SEED, TEXT_SAMPLE_SEED = 0, 1


@experiment(
    "mdm-text",
    paper=PAPER,
    reproduces="Table 4 (HumanEval-Infill, LLaDA) and Fig. 3 (generative perplexity): code "
               "infilling and unconditional samples of a byte-level MDM on Python source",
    published=TEXT_PUBLISHED,
    # quick: the shipped models, few spans and samples (wide intervals) so that the README's
    # main job stays short; full: retrain both models at the shipped settings, more of each
    quick={"train": False, "n_single": 16, "n_multi": 6, "bytes_per_step": [1],
           "n_samples": 6, "sample_steps": [16, 64]},
    # mdm / judge: (phases, model sizes) as the shipped models were trained; each phase is
    # (steps, warm-up), the later ones warm restarts (fresh optimizer and cosine schedule)
    full={"train": True, "mdm": (TEXT_MDM_PHASES, {}),
          "judge": (TEXT_JUDGE_PHASES, {"d_model": 96, "n_layers": 3}), "batch_size": 16,
          "n_single": 300, "n_multi": 150, "bytes_per_step": [1, 2, 4], "n_samples": 32,
          "sample_steps": [16, 64, 256]},
)
def text_planners(ctx: RunContext) -> Outcome:
    from icml25.mdm.text_data import load_corpus
    from icml25.mdm.text_eval import evaluate_infilling, evaluate_perplexity, held_out_perplexity

    s = ctx.settings
    notes = []
    if s["train"]:
        model, judge = _train_text_models(s, ctx.seed)
        notes.append(f"Trained from scratch at the shipped settings: MDM phases (steps, "
                     f"warm-up) {s['mdm'][0]} and causal judge phases {s['judge'][0]}, batch "
                     f"{s['batch_size']} windows of 256 bytes.")
    else:
        from icml25.mdm.model_io import load_model

        try:
            model, judge = load_model(task="text"), load_model(task="text-causal")
        except FileNotFoundError as exc:
            return Outcome(comparisons=[], data={}, notes=[f"Not measured: {exc}"])
        notes += [f"MDM: {_shipped_card('text')}", f"Judge: {_shipped_card('text-causal')}"]
    held_out = load_corpus("held_out")
    notes.append(f"Held-out modules ({len(held_out.modules)}, {held_out.n_bytes():,} bytes of "
                 f"this Python's standard library): {', '.join(held_out.modules)}. Spans: a "
                 "non-blank line of <= 64 bytes (single-line) or 2-5 lines of <= 128 bytes "
                 "(multi-line), length known, inside a 256-byte window; greedy values; "
                 "'parses' = the whole file with the filled span passes ast.parse.")
    planners = list(PLANNER_LABELS)
    rows, data = [], {"infilling": {}, "perplexity": None}
    for kind, label in TEXT_KINDS.items():
        report = evaluate_infilling(model, held_out, planners, kinds=[kind],
                                    n=s[f"n_{kind}"], bytes_per_step=s["bytes_per_step"],
                                    seed=TEXT_TASK_SEED)[kind]
        data["infilling"][kind] = report
        for bps in s["bytes_per_step"]:
            scale = f"{report[bps]['random']['exact']['n']} spans, {bps} byte(s) per step"
            for planner, name in PLANNER_LABELS.items():
                r = report[bps][planner]
                quantity = f"{label}: {name} (%)"
                rows.append(ctx.compare(
                    quantity if bps == 1 else f"{quantity}, {bps} bytes/step",
                    round(100 * r["exact"]["rate"], 2),
                    published=TEXT_PUBLISHED[quantity] if bps == 1 else None, scale=scale,
                    note=f"exact match, 95% CI {100 * r['exact']['ci_low']:.1f}–"
                         f"{100 * r['exact']['ci_high']:.1f}; file parses "
                         f"{100 * r['parses']['rate']:.1f}% "
                         f"({100 * r['parses']['ci_low']:.1f}–"
                         f"{100 * r['parses']['ci_high']:.1f}); bytes right "
                         f"{100 * r['byte_acc']['mean']:.1f}%; scale gap: {TEXT_SCALE}"))
            for better in ("top_prob", "top_margin"):
                rows.append(_effect_row(
                    ctx, f"{label}: {PLANNER_LABELS[better]} − vanilla (points)"
                    + ("" if bps == 1 else f", {bps} bytes/step"),
                    _as_solved(report[bps][better]["exact"]),
                    _as_solved(report[bps]["random"]["exact"]),
                    TEXT_PUBLISHED[f"{label}: {PLANNER_LABELS[better]} (%)"]
                    - TEXT_PUBLISHED[f"{label}: vanilla (%)"], scale))
    ppl = evaluate_perplexity(model, judge, planners, steps_grid=s["sample_steps"],
                              n=s["n_samples"], seed=TEXT_SAMPLE_SEED)
    data["perplexity"] = ppl
    data["reference"] = held_out_perplexity(judge, held_out, s["n_samples"],
                                            seed=TEXT_SAMPLE_SEED)
    for steps in s["sample_steps"]:
        vanilla, margin = ppl[steps]["random"], ppl[steps]["top_margin"]
        rows.append(ctx.compare(
            f"gen. perplexity, {steps} steps: top margin − vanilla", round(
                margin["perplexity"] - vanilla["perplexity"], 3),
            published="lower (Fig. 3)", scale=f"{s['n_samples']} samples of 256 bytes",
            note=f"vanilla {vanilla['perplexity']:.2f} ({vanilla['ci_low']:.2f}–"
                 f"{vanilla['ci_high']:.2f}), top margin {margin['perplexity']:.2f} "
                 f"({margin['ci_low']:.2f}–{margin['ci_high']:.2f}) per byte under our causal "
                 f"judge; unigram entropy {vanilla['entropy']:.2f} vs {margin['entropy']:.2f} "
                 f"bits; held-out text {data['reference']['perplexity']:.2f}",
            rule=Direction(-1, ci=(margin["ci_low"] - vanilla["ci_high"],
                                   margin["ci_high"] - vanilla["ci_low"]))))
    _perplexity_figure(ctx, ppl, data["reference"])
    return Outcome(comparisons=rows, data=data, notes=notes)


def _as_solved(rate: dict) -> dict:
    return {"solved": rate["rate"], "ci_low": rate["ci_low"], "ci_high": rate["ci_high"]}


def _perplexity_figure(ctx: RunContext, ppl: dict, reference: dict) -> None:
    fig, (ax, bx) = new_figure(ncols=2, size=(9, 3.6))
    grid = sorted(ppl)
    for p, label in PLANNER_LABELS.items():
        mid = [ppl[g][p]["perplexity"] for g in grid]
        err = [[m - ppl[g][p]["ci_low"] for g, m in zip(grid, mid, strict=True)],
               [ppl[g][p]["ci_high"] - m for g, m in zip(grid, mid, strict=True)]]
        ax.errorbar(grid, mid, yerr=err, marker="o", capsize=3, label=label)
        bx.plot(grid, [ppl[g][p]["entropy"] for g in grid], marker="o", label=label)
    ax.axhline(reference["perplexity"], color="grey", ls="--", label="held-out text")
    bx.axhline(reference["entropy"], color="grey", ls="--", label="held-out text")
    ax.set(xlabel="sampling steps", ylabel="perplexity per byte (causal judge)", xscale="log",
           title="Generative perplexity (Fig. 3)")
    bx.set(xlabel="sampling steps", ylabel="unigram entropy (bits)", xscale="log",
           title="Sample diversity")
    for a in (ax, bx):
        a.set_xticks(grid, [str(g) for g in grid])
        a.minorticks_off()
    legend_outside(bx, "below")
    ctx.save_figure(fig, "generative_perplexity")


def _train_text_models(s: dict, seed: int):
    """The MDM and its causal judge, trained from scratch as the shipped ones were: each phase
    a warm restart of the one before."""
    from icml25.mdm.text_data import load_corpus
    from icml25.mdm.text_mdm import default_model_config, train_text
    from icml25.nn import TrainConfig

    corpus = load_corpus("train")
    models = []
    for causal, (phases, sizes) in ((False, s["mdm"]), (True, s["judge"])):
        model = None
        for steps, warmup in phases:
            with tempfile.TemporaryDirectory() as run:
                cfg = TrainConfig(steps=steps, batch_size=s["batch_size"], warmup_steps=warmup,
                                  seed=seed, out_dir=run)
                model, _ = train_text(corpus, cfg, default_model_config(causal=causal, **sizes),
                                      init=model)
        models.append(model.eval())
    return models
