"""The GPU scripts' data paths measured on this CPU, beside the rate a GPU would consume them at
(an ESTIMATE from FLOP counts, not a GPU measurement).

Each path is the batch function its script trains with (``scripts/gpu/*.sh``), timed without
the move to the device: Zebra's 512-puzzle batches (the per-puzzle path, ``zebra.augment`` +
``encode_batch``, against the vectorised ``augmented_batch``, alternating in every round),
Sudoku's 1,024-board batches from the shipped ``data/mdm/sudoku-train-*.npz`` (numpy against
``SudokuBoards``' torch gathers, which run on the GPU there and on this CPU here; on a GPU the
CPU's share is only the draws, timed apart as ``sudoku-gpu-draws``), and creativity's
64 training rows plus the 32 fresh replay answers of a Line step (the lookup stage's batches are
the same function at 64; one answer at a time against the vectorised causal batch).

The estimate: a GPU step of the paper-size model takes FLOPs/example x batch; at
``--fraction`` (default 0.4, the target) of ``--peak`` (default 790e12, the bf16 matmul rate the
device notes give for the lent GPUs), the GPU consumes peak x fraction / (FLOPs per example)
examples/s. ``headroom`` = the data path's examples/s on ONE core of this machine / that
demand: above 1, the data path keeps up without worker processes.

Usage:
  OMP_NUM_THREADS=1 .venv/bin/python benchmarks/gpu_data_path.py [--rounds 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]


def per_second(fn, seconds: float) -> float:
    """Calls of ``fn`` per second over at least ``seconds`` (after one untimed call)."""
    fn()
    calls, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds or calls < 3:
        fn()
        calls += 1
    return calls / elapsed


def zebra_paths(n_puzzles: int):
    from icml25.mdm import zebra
    from icml25.mdm.zebra_mdm import ZebraTable, _size_classes, augmented_batch, encode_batch

    puzzles = zebra.generate_dataset(n_puzzles, seed=10)
    classes = _size_classes(puzzles)
    weights = np.array([len(c) for c in classes], dtype=float) / n_puzzles
    table = ZebraTable.from_puzzles(puzzles)
    rng = np.random.default_rng(0)
    widths: list[int] = []

    def members():
        return rng.choice(classes[rng.choice(len(classes), p=weights)], 512)

    def old():
        return encode_batch([zebra.augment(puzzles[i], rng) for i in members()])

    def new():
        tokens, _ = augmented_batch(table, members(), rng)
        widths.append(tokens.shape[1])
        return tokens

    return old, new, widths


def sudoku_paths():
    """numpy (``sudoku_batch``) and torch (``SudokuBoards``, here on the CPU; on a GPU its
    gathers run there) batches of 1,024 boards."""
    from icml25.mdm import sudoku
    from icml25.mdm.sudoku_data import SudokuBoards, sudoku_batch

    parts = [sudoku.load_dataset(p) for p in sorted((ROOT / "data/mdm").glob("sudoku-train-*"))]
    puzzles = np.concatenate([p for p, _ in parts])
    solutions = np.concatenate([s for _, s in parts])
    gen = torch.Generator().manual_seed(0)
    boards = SudokuBoards(puzzles, solutions)

    def cpu_share():  # what stays on the CPU when the boards are on a GPU: the draws
        torch.randint(0, len(puzzles), (1024,), generator=gen)
        rng = np.random.default_rng(int(torch.randint(0, 2**62, (1,), generator=gen)))
        return sudoku.augment_maps(rng, 1024)

    return (lambda: sudoku_batch(puzzles, solutions, 1024, gen),
            lambda: boards.batch(1024, gen), cpu_share)


def creativity_paths():
    from icml25.creativity.lookup import _looped_lookup_batch, lookup_batch
    from icml25.creativity.methods import build_rows, get_method
    from icml25.creativity.tasks import generate, make_task

    task = make_task("line", 0)
    method = get_method("ntp")
    vocab = method.vocab(task)
    data = generate(task, seed_len=10)
    rows = build_rows("line", data.train, vocab, "ntp", np.random.default_rng(0))
    width = rows["inputs"].shape[1]
    rng, gen = np.random.default_rng(0), torch.Generator().manual_seed(0)

    def main():
        return method.batch(rows, torch.randint(len(rows["inputs"]), (64,), generator=gen), gen,
                            vocab)

    def old():
        main()
        return _looped_lookup_batch(task, vocab, "ntp", 10, 32, width, rng, gen)

    def new():
        main()
        return lookup_batch(task, vocab, "ntp", 10, 32, width, rng, gen)

    return old, new, width


def paper_models(zebra_width: float, line_width: int):
    """(name, FLOPs per example, batch) of each script's paper-size model."""
    from icml25.creativity.methods import get_method
    from icml25.creativity.tasks import make_task
    from icml25.creativity.training import TrainSettings, model_config
    from icml25.mdm.sudoku_mdm import default_model_config as sudoku_config
    from icml25.mdm.zebra_mdm import default_model_config as zebra_config
    from icml25.nn import Transformer

    def per_token(cfg):
        return Transformer(cfg).flops_per_token()

    task = make_task("line", 0)
    m = get_method("ntp")
    line = model_config(task, m, m.vocab(task), 10, TrainSettings(
        d_model=768, n_layers=12, n_heads=12, token_shift=True, layer_shift=True), line_width)
    # a creativity step: 64 training rows and 32 replay rows through the same body
    return [("mdm-sudoku", per_token(sudoku_config(d_model=384, n_layers=3, n_heads=12)) * 81,
             1024),
            ("mdm-zebra", per_token(zebra_config(cell_embeddings=True, d_model=512, n_layers=6,
                                                 n_heads=8)) * zebra_width, 512),
            ("creativity-line", per_token(line) * line_width * 96 / 64, 64)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=2.0, help="per path and round")
    ap.add_argument("--zebra-puzzles", type=int, default=300)
    ap.add_argument("--peak", type=float, default=790e12)
    ap.add_argument("--fraction", type=float, default=0.4)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(1)
    z_old, z_new, widths = zebra_paths(args.zebra_puzzles)
    c_old, c_new, line_width = creativity_paths()
    s_old, s_new, s_draws = sudoku_paths()
    rounds = []
    for k in range(args.rounds):
        pairs = [("zebra", z_old, z_new), ("creativity", c_old, c_new), ("sudoku", s_old, s_new)]
        row = {}
        for name, old, new in pairs:
            order = [("old", old), ("new", new)] if k % 2 == 0 else [("new", new), ("old", old)]
            for label, fn in order:  # alternate, so drift hits both alike
                row[f"{name}-{label}"] = per_second(fn, args.seconds)
        row["sudoku-gpu-draws"] = per_second(s_draws, args.seconds)
        rounds.append(row)
        print(f"round {k + 1}: " + ", ".join(f"{n} {r:.1f}/s" for n, r in row.items()),
              flush=True)
    med = {n: statistics.median(r[n] for r in rounds) for n in rounds[0]}
    ratios = {n: [r[f"{n}-new"] / r[f"{n}-old"] for r in rounds]
              for n in ("zebra", "creativity", "sudoku")}
    # Sudoku on a GPU: the gathers run there; the CPU makes only the draws
    batches_per_s = {"mdm-sudoku": med["sudoku-gpu-draws"], "mdm-zebra": med["zebra-new"],
                     "creativity-line": med["creativity-new"]}
    estimate = []
    for name, flops, batch in paper_models(float(np.mean(widths)), line_width):
        demand = args.peak * args.fraction / flops  # examples/s the GPU would consume
        supply = batches_per_s[name] * batch
        estimate.append({"script": name, "flops_per_example": flops, "batch": batch,
                         "gpu_examples_per_s_estimate": demand,
                         "gpu_step_ms_estimate": 1e3 * batch / demand,
                         "data_examples_per_s_one_core": supply, "headroom": supply / demand})
    result = {"rounds": rounds, "median_per_s": med,
              "new_over_old": {n: {"per_round": r, "median": statistics.median(r)}
                               for n, r in ratios.items()},
              "zebra_tokens_per_row": float(np.mean(widths)), "peak": args.peak,
              "fraction": args.fraction, "estimate": estimate}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print("\nbatches/s (median of rounds), one core:")
    for n, r in med.items():
        print(f"  {n:16s} {r:8.1f}")
    for n, r in ratios.items():
        print(f"{n}: new / old per round {', '.join(f'{x:.1f}' for x in r)}; "
              f"median {statistics.median(r):.1f}x")
    print(f"\nESTIMATE at {args.fraction:.0%} of {args.peak / 1e12:.0f} TFLOP/s bf16 "
          "(from FLOP counts, not measured on a GPU):")
    for e in estimate:
        print(f"  {e['script']:16s} {e['flops_per_example'] / 1e9:8.2f} GFLOP/example, step "
              f"{e['gpu_step_ms_estimate']:6.1f} ms at batch {e['batch']}: the GPU needs "
              f"{e['gpu_examples_per_s_estimate']:9,.0f} ex/s; one core makes "
              f"{e['data_examples_per_s_one_core']:9,.0f} (headroom {e['headroom']:.1f}x)")


if __name__ == "__main__":
    main()
