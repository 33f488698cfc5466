"""Speed of the Sudoku/Zebra engines: generation per puzzle, grading, augmentation throughput.

Run: ``.venv/bin/python benchmarks/mdm_sudoku_generate.py [--easy 100 --hard 30 --zebra 30]``

Prints per-puzzle generation times (one core), the clue-count distribution of easy puzzles
beside Radcliffe's (19-31 clues, mostly 23-26), augmentation boards/s against the >= 100k/s
target, and -- when the optional `dokusan` package (the solver Shah et al. used) is importable --
its generator's time per puzzle and its verdict on our easy/hard split, side by side.
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np

from icml25.mdm import sudoku as S
from icml25.mdm import zebra as Z


def _timed(fn, n: int) -> tuple[list, float]:
    t0 = time.perf_counter()
    out = [fn(i) for i in range(n)]
    return out, (time.perf_counter() - t0) / max(n, 1)


def _dokusan():
    try:
        from dokusan import exceptions, generators, solvers
        from dokusan.boards import BoxSize, Sudoku
    except ImportError:
        return None

    def solvable(p: np.ndarray) -> bool:
        board = Sudoku.from_list(p.reshape(9, 9).tolist(), box_size=BoxSize(3, 3))
        try:
            for _ in solvers.steps(board):
                pass
        except exceptions.Unsolvable:
            return False
        return True

    def generate() -> None:
        generators.random_sudoku(avg_rank=150)

    return solvable, generate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--easy", type=int, default=100)
    ap.add_argument("--hard", type=int, default=30)
    ap.add_argument("--zebra", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print(f"machine: {platform.machine()} {platform.processor() or ''}, one core")

    seqs = np.random.SeedSequence(args.seed).spawn(args.easy + args.hard)
    easy, t_easy = _timed(lambda i: S.generate(np.random.default_rng(seqs[i]), "easy"), args.easy)
    print(f"easy Sudoku: {t_easy:.3f} s/puzzle (target < 0.5 s)")
    clues = np.array([int((p > 0).sum()) for p, _ in easy])
    share = np.mean((clues >= 23) & (clues <= 26))
    print(
        f"  clues min/median/max {clues.min()}/{np.median(clues):.0f}/{clues.max()}, "
        f"share in 23-26: {share:.0%}  (Radcliffe: 19-31, mostly 23-26)"
    )
    grades = [S.grade(p) for p, _ in easy]
    used = {t: np.mean([g.techniques[t] > 0 for g in grades]) for t in S.TECHNIQUES}
    print("  share of easy puzzles using each technique:")
    print("   " + ", ".join(f"{t} {v:.0%}" for t, v in used.items()))
    _, t_grade = _timed(lambda i: S.grade(easy[i][0]), len(easy))
    print(f"  grade(): {t_grade * 1e3:.1f} ms/puzzle")

    hard, t_hard = _timed(
        lambda i: S.generate(np.random.default_rng(seqs[args.easy + i]), "hard"), args.hard
    )
    hclues = np.array([int((p > 0).sum()) for p, _ in hard])
    print(
        f"hard Sudoku: {t_hard:.3f} s/puzzle, clues min/median/max "
        f"{hclues.min()}/{np.median(hclues):.0f}/{hclues.max()}"
    )

    P = np.stack([p for p, _ in easy])
    Sol = np.stack([s for _, s in easy])
    rng = np.random.default_rng(args.seed)
    idx = rng.integers(0, len(P), 4096)
    bp, bs = P[idx], Sol[idx]
    S.augment(bp, bs, rng)
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < 2.0:
        S.augment(bp, bs, rng)
        n += len(bp)
    rate = n / (time.perf_counter() - t0)
    print(f"augment: {rate / 1e3:.0f}k boards/s at batch 4096 (target >= 100k)")

    for size in ((3, 3), (4, 4), (5, 5), (6, 6)):
        zs = np.random.SeedSequence(args.seed).spawn(args.zebra)
        zp, t_z = _timed(
            lambda i, s=size, zs=zs: Z.generate_puzzle(np.random.default_rng(zs[i]), *s), args.zebra
        )
        n_clues = np.mean([len(p.clues) for p in zp])
        plen = max(len(Z.encode(p)[0]) for p in zp)
        print(
            f"zebra {size[0]}x{size[1]}: {t_z:.3f} s/puzzle, {n_clues:.1f} clues, "
            f"prompt <= {plen} tokens"
        )

    dok = _dokusan()
    if dok is None:
        print("reference: `dokusan` not installed; skip the side-by-side (notes: ~0.15 s/puzzle)")
        return
    solvable, dgen = dok
    _, t_ref = _timed(lambda i: dgen(), 20)
    print(
        f"reference dokusan.generators.random_sudoku(avg_rank=150): {t_ref:.3f} s/puzzle; "
        f"ratio ours/ref = {t_easy / t_ref:.2f}"
    )
    agree_easy = np.mean([solvable(p) for p, _ in easy])
    agree_hard = np.mean([not solvable(p) for p, _ in hard])
    print(
        f"dokusan's 7-technique solver: solves {agree_easy:.0%} of our easy puzzles, "
        f"fails {agree_hard:.0%} of our hard ones"
    )


if __name__ == "__main__":
    main()
