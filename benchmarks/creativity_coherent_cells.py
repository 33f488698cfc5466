"""The claims' cells at a coherent scale: Line / Circle at the full setting (10,000 lines),
each model started from the chain-start lookup stage (``icml25.creativity.lookup``, one shared
start per task and layout, as the paper's runs share GPT-2), then LP-FT on the method's own
objective with replay of the lookup (``--replay-weight``, default 1). One cell = one (task,
cell, training seed); each is resumable (rerun the same command after a kill) and writes
ROOT/<task>-<cell>-s<seed>.json with its learning curve, the reported step (where creativity
saturates on the curve) and its evaluations there on 1,024 fresh prompts per decoding.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/creativity_coherent_cells.py \\
        --task line --cell ntp-seed --seed 0 --root runs/R --steps 6000
    .venv/bin/python benchmarks/creativity_coherent_cells.py --summary --root runs/R \\
        [--figures docs/creativity/cells]

``--ship NAME`` also copies the reported checkpoint (with a card) into the package.
"""

from __future__ import annotations

import argparse
import dataclasses
import fcntl
import json
import math
import shlex
import shutil
import sys
from pathlib import Path

import numpy as np
import torch

from icml25.creativity.lookup import pretrain_lookup
from icml25.creativity.scoring import Scorer
from icml25.creativity.seeds import SeedSummary, difference, summarize
from icml25.creativity.tasks import generate, make_task
from icml25.creativity.training import (
    TrainSettings,
    evaluate_model,
    load_snapshot,
    saturation_step,
    train_model,
)


@dataclasses.dataclass(frozen=True)
class Cell:
    method: str
    seed_len: int
    decodings: tuple[float, ...]  # temperatures; 0 = greedy on fresh seeds
    lookup: bool = True  # start from the lookup stage (else from scratch, at FROM_SCRATCH_LR)


CELLS = {
    "ntp-seed": Cell("ntp", 10, (0.0, 0.5, 1.0)),
    "teacherless-seed": Cell("teacherless", 10, (0.0, 0.5, 1.0)),
    "ntp-null": Cell("ntp", 0, (0.5, 1.0, 2.0)),
    "diffusion-null": Cell("diffusion", 0, (0.5, 1.0)),  # the paper's diffusion: no seeds
    # The lookup stage has no layout for uniform noise: this cell trains from scratch.
    "diffusion-uniform-null": Cell("diffusion-uniform", 0, (1.0,), lookup=False),
}
ARCH = {"d_model": 64, "n_layers": 6, "n_heads": 4, "token_shift": True, "layer_shift": True}
N_EVAL = 1024
FROM_SCRATCH_LR = 1e-3  # the lookup stage's own lr, for a cell without a pretrained start


def label(temp: float) -> str:
    return "greedy" if temp == 0 else f"T={temp}"


def pretrained_start(task, cell: Cell, root: Path, steps: int) -> Path:
    """The shared lookup stage for this task and layout (trained once, pretraining seed 0)."""
    layout = "diffusion" if cell.method == "diffusion" else "ntp"
    out = root / f"{task.name}-lookup-{layout}-{cell.seed_len}"
    root.mkdir(parents=True, exist_ok=True)
    # Cells run side by side: the first one to need a stage builds it, the others wait for it.
    with open(root / f"{out.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (out / "model" / "config.json").exists():
            _build_lookup(task, layout, cell.seed_len, out, steps)
    return out / "model"


def _build_lookup(task, layout: str, seed_len: int, out: Path, steps: int) -> None:
    s = TrainSettings(method=layout, seed_len=seed_len, steps=steps, lr=1e-3,
                      warmup_steps=200, eval_every=500, seed=0, **ARCH)
    _, report = pretrain_lookup(task, s, out_dir=out, resume=True,
                                on_eval=lambda p: print(json.dumps(p), flush=True))
    if report["stopped_early"]:
        sys.exit("the lookup stage stopped early: rerun")


def run_cell(a) -> dict:
    cell = CELLS[a.cell]
    root = Path(a.root)
    task = make_task(a.task)  # the full setting: 10,000 lines, task seed 0
    data = generate(task, seed_len=cell.seed_len)
    start = pretrained_start(task, cell, root, a.pretrain_steps) if cell.lookup else None
    s = TrainSettings(method=cell.method, seed_len=cell.seed_len, steps=a.steps,
                      lr=a.lr if start else FROM_SCRATCH_LR, warmup_steps=100 if start else 200,
                      min_lr_ratio=a.min_lr_ratio, init_from=str(start) if start else None,
                      head_only_steps=a.head_steps if start else 0, head_lr=3e-3,
                      replay_weight=a.replay_weight if start else 0.0,
                      anchor_weight=a.anchor_weight if start else 0.0,
                      eval_every=500, eval_n=256,
                      checkpoint_every=500, keep_snapshots=True, seed=a.seed,
                      compile=a.compile, **ARCH)
    out = root / f"{a.task}-{a.cell}-s{a.seed}"
    run = train_model(task, data.train, s, out_dir=out, resume=True,
                      on_eval=lambda p: print(json.dumps(p), flush=True))
    if run.stopped_early:
        sys.exit("stopped early: rerun")
    # The paper's rule: report the checkpoint where creativity saturates on the learning curve
    # (256 prompts drawn apart from the 1,024 evaluation prompts below).
    step = saturation_step(run.curve)
    run = load_snapshot(run, out, step)
    scorer = Scorer(task, run.train)
    evals = {label(t): evaluate_model(run, scorer=scorer, n=N_EVAL, temperature=t, seed=a.seed)
             for t in cell.decodings}
    result = {"task": a.task, "cell": a.cell, "method": cell.method, "seed_len": cell.seed_len,
              "seed": a.seed, "command": "OMP_NUM_THREADS=1 .venv/bin/python "
              + shlex.join(sys.argv), "settings": dataclasses.asdict(s),
              "pretrained_start": str(start) if start else None, "curve": run.curve,
              "reported_step": step, "evals": evals}
    (root / f"{a.task}-{a.cell}-s{a.seed}.json").write_text(json.dumps(result, indent=1))
    if a.ship:
        ship(out / "snapshots" / f"step-{step}", out / "model" / "train.txt", a.ship, result,
             start)
    return result


def ship(model_dir: Path, train_txt: Path, name: str, result: dict, start: Path) -> None:
    """Copy the reported snapshot into the package with its training lines and a card."""
    dest = Path(__file__).resolve().parents[1] / "src/icml25/creativity/checkpoints" / name
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(model_dir, dest)
    shutil.copy(train_txt, dest / "train.txt")
    final = json.loads((train_txt.parent / "config.json").read_text())
    cfg = json.loads((dest / "config.json").read_text())
    cfg["creativity"] = final["creativity"]  # what load_run needs: task, method, seeds
    (dest / "config.json").write_text(json.dumps(cfg, indent=2))
    meta = (json.loads((start / "config.json").read_text())["lookup_pretrain"] if start
            else None)
    main_eval = result["evals"].get("greedy") or next(iter(result["evals"].values()))
    card = {"name": name, "task": result["task"], "method": result["method"],
            "seed_len": result["seed_len"], "command": result["command"],
            "pretrained_start": {"what": "icml25.creativity.lookup (chain-start stage, shared "
                                 "by the task's cells of this layout)", **meta} if meta else None,
            "settings": result["settings"], "curve": result["curve"],
            "reported_step": result["reported_step"],
            "evaluation": {"seed": result["seed"], **main_eval},
            "evaluations": result["evals"]}
    (dest / "card.json").write_text(json.dumps(card, indent=1))


def best(results: list[dict]) -> tuple[str, list[dict]]:
    """The decoding with the highest mean creativity over the cell's seeds."""
    labels = results[0]["evals"].keys()
    top = max(labels, key=lambda k: np.mean([r["evals"][k]["creativity"] for r in results]))
    return top, [r["evals"][top] for r in results]


# The paper's claims as differences of cell means (a − b) and the direction that reproduces
# them: +1 "a > b"; 0 "a at least as good as b" (non-inferiority within MARGIN).
CLAIMS = (
    ("multi-token more creative than NTP", "teacherless-seed", "ntp-seed", "creativity", +1),
    ("multi-token more creative than NTP", "diffusion-null", "ntp-seed", "creativity", +1),
    ("multi-token more creative than NTP", "diffusion-uniform-null", "ntp-seed", "creativity",
     +1),
    ("seed-conditioning at least as creative as temperature sampling", "ntp-seed:greedy",
     "ntp-null", "creativity", 0),
    ("at a fixed temperature, adding a seed does not hurt", "ntp-seed:T=0.5", "ntp-null:T=0.5",
     "creativity", 0),
    ("at a fixed temperature, adding a seed does not hurt", "ntp-seed:T=1.0", "ntp-null:T=1.0",
     "creativity", 0),
    ("multi-token memorises less", "ntp-seed", "teacherless-seed", "memorization", +1),
    ("multi-token memorises less", "ntp-seed", "diffusion-null", "memorization", +1),
    ("multi-token memorises less", "ntp-seed", "diffusion-uniform-null", "memorization", +1),
)
MARGIN = 0.02
COHERENCE_BAR = 0.9  # a claim is judged only between cells this coherent


def verdict(lo: float, hi: float, direction: int) -> str:
    """From the Welch 95% interval of a − b."""
    if direction > 0:
        return "reproduced" if lo > 0 else "not reproduced" if hi < 0 else "inconclusive"
    return ("reproduced" if lo > -MARGIN else "not reproduced" if hi < 0
            else "inconclusive")


def _cell_evals(cells: dict, task: str, key: str) -> tuple[str, list[dict]] | None:
    """``cell`` at its best decoding, or ``cell:decoding`` at that one."""
    name, _, dec = key.partition(":")
    rs = cells.get((task, name))
    if not rs:
        return None
    if dec:
        return dec, [r["evals"][dec] for r in rs]
    return best(rs)


def _stat(evs: list[dict], key: str):
    v = [e[key] for e in evs]
    n = [e["n"] for e in evs]
    if len(v) >= 2:
        return summarize(v, n)
    p = v[0]  # one seed: the sampling error alone
    return SeedSummary(p, 0.0, (p * (1 - p) / n[0]) ** 0.5, 1, (p,))


def _text(stat: SeedSummary) -> str:
    if stat.k == 1:
        return f"{stat.mean:.3f} (sampling ± {stat.sampling_se:.3f}; 1 seed)"
    return stat.text()


def summary(root: Path) -> str:
    cells: dict[tuple[str, str], list[dict]] = {}
    for path in sorted(root.glob("*-s[0-9]*.json")):
        r = json.loads(path.read_text())
        cells.setdefault((r["task"], r["cell"]), []).append(r)
    lines = ["| task | cell | best decoding | seeds (reported step) | coherence | creativity "
             "(per seed) | memorization |", "|---|---|---|---|---|---|---|"]
    for (task, cell), rs in sorted(cells.items()):
        dec, evs = best(rs)
        seeds = ", ".join(f"{r['seed']} ({r.get('reported_step', 'final')})" for r in rs)
        per = " / ".join(f"{e['creativity']:.3f}" for e in evs)
        lines.append(f"| {task} | {cell} | {dec} | {seeds} | {_text(_stat(evs, 'coherence'))} "
                     f"| {_text(_stat(evs, 'creativity'))} ({per}) | "
                     f"{_text(_stat(evs, 'memorization'))} |")
    lines += ["", "| task | claim | a − b (Welch 95% interval) | verdict |", "|---|---|---|---|"]
    for task in sorted({t for t, _ in cells}):
        for claim, a, b, key, direction in CLAIMS:
            ea, eb = _cell_evals(cells, task, a), _cell_evals(cells, task, b)
            if ea is None or eb is None:
                continue
            sa, sb = _stat(ea[1], key), _stat(eb[1], key)
            if min(sa.k, sb.k) >= 2:
                diff, (lo, hi) = (d := difference(sa, sb)).diff, d.ci
            else:  # a one-seed side has no spread: the sampling error alone (not judged)
                diff, half = sa.mean - sb.mean, 1.96 * math.hypot(sa.sampling_se, sb.sampling_se)
                lo, hi = diff - half, diff + half
            low = [f"{name} {c:.2f}" for name, (_, evs) in ((a, ea), (b, eb))
                   if (c := float(np.mean([e["coherence"] for e in evs]))) < COHERENCE_BAR]
            if low:
                v = f"not judged: coherence below {COHERENCE_BAR} ({', '.join(low)})"
            elif min(sa.k, sb.k) < 3:
                v = "not judged: fewer than 3 seeds"
            else:
                v = verdict(lo, hi, direction)
            name_a, name_b = a.partition(":")[0], b.partition(":")[0]
            lines.append(f"| {task} | {claim}: {key} {name_a} ({ea[0]}) − {name_b} ({eb[0]}) | "
                         f"{diff:+.3f} [{lo:+.3f}, {hi:+.3f}] | {v} |")
    return "\n".join(lines)


def figures(root: Path, out: Path) -> None:
    """Learning curves (256 validation prompts per point) of every cell, one panel per task
    and rate; each seed a thin line, the reported step marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = [json.loads(p.read_text()) for p in sorted(root.glob("*-s[0-9]*.json"))]
    out.mkdir(parents=True, exist_ok=True)
    keys = ("coherence", "creativity")
    for task in sorted({r["task"] for r in results}):
        fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharex=True)
        mine = [r for r in results if r["task"] == task]
        cells = sorted({r["cell"] for r in mine})
        for color, cell in zip(plt.cm.tab10.colors, cells, strict=False):
            for i, r in enumerate(r for r in mine if r["cell"] == cell):
                steps = [p["step"] for p in r["curve"]]
                at = next(p for p in r["curve"] if p["step"] == r["reported_step"])
                for ax, key in zip(axes, keys, strict=True):
                    ax.plot(steps, [p[key] for p in r["curve"]], color=color, lw=1,
                            label=None if i else cell)
                    ax.plot(at["step"], at[key], "o", color=color, ms=4)
        for ax, key in zip(axes, keys, strict=True):
            ax.set(xlabel="training step (after the lookup start and LP; uniform from scratch)",
                   ylabel=key,
                   title=f"{task}: {key} on 256 validation prompts", ylim=(0, 1))
        axes[0].axhline(0.9, color="grey", lw=0.5, ls=":")
        axes[1].legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(out / f"{task}_cells_curves.png", dpi=110)
        plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--task", choices=["line", "circle"])
    ap.add_argument("--cell", choices=sorted(CELLS))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--pretrain-steps", type=int, default=2500)
    ap.add_argument("--head-steps", type=int, default=1000)
    ap.add_argument("--steps", type=int, default=6000)
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--min-lr-ratio", type=float, default=0.1, help="1: constant lr (paper)")
    ap.add_argument("--replay-weight", type=float, default=1.0,
                    help="go on training the lookup beside the method (TrainSettings)")
    ap.add_argument("--anchor-weight", type=float, default=0.0, help="L2-SP (TrainSettings)")
    ap.add_argument("--compile", action=argparse.BooleanOptionalAction, default=True,
                    help="torch.compile the training step (faster here; --no-compile for eager)")
    ap.add_argument("--ship", default=None, help="copy the model into the package as NAME")
    ap.add_argument("--summary", action="store_true")
    ap.add_argument("--figures", type=Path, default=None, help="with --summary: curves here")
    a = ap.parse_args()
    if a.summary:
        print(summary(Path(a.root)))
        if a.figures:
            figures(Path(a.root), a.figures)
        return
    if a.task is None or a.cell is None:
        ap.error("--task and --cell are needed (or --summary)")
    torch.set_num_threads(1)
    r = run_cell(a)
    print(json.dumps({k: {d: {m: e[m] for m in ("coherence", "creativity", "memorization")}
                          for d, e in r["evals"].items()} for k in ("evals",)}))


if __name__ == "__main__":
    main()
