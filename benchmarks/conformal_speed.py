"""Issue 27 point 7: the two synthetic tables at full scale, as whole processes, old code vs new.

Runs ``python -m icml25 reproduce conformal-binomial --full`` and
``... conformal-heteroskedastic --full`` as separate processes, alternating an older checkout
(``--old-src``, e.g. a ``git worktree add /tmp/conf-old d5a7074``) and this one, ``--repeats``
times, and records wall times and old/new ratios measured side by side on the same machine
(the machine's load moves both). It also times the bare start-up of such a process (importing
every subsystem's experiments, which ``reproduce`` does before running anything) so that the
part this subsystem controls can be read off.

The target (issue 27): both processes <= 10.5 s together on an idle 2-core machine, i.e. 30x the
official code's 315 s (aim 60x, 5.25 s).

    .venv/bin/python benchmarks/conformal_speed.py --old-src /tmp/conf-old/src [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EXPERIMENTS = ("conformal-binomial", "conformal-heteroskedastic")
OFFICIAL_S = 315.0
STARTUP = "from icml25.core import load_experiments; load_experiments()"


def run(src: str | None, args: list[str], env_extra: dict) -> float:
    env = dict(os.environ, **env_extra)
    if src:
        env["PYTHONPATH"] = src
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"failed: {args}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return wall


def load() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old-src", default=None, help="src/ folder of the older checkout")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", default="1", help="OMP/BLAS threads in every process")
    ap.add_argument("--json", default=None, help="write the raw timings here")
    a = ap.parse_args()
    here = str(Path(__file__).resolve().parents[1] / "src")
    sides = {"new": here}
    if a.old_src:
        sides = {"old": a.old_src, "new": here}
    env = {"OMP_NUM_THREADS": a.threads, "OPENBLAS_NUM_THREADS": a.threads,
           "MKL_NUM_THREADS": a.threads}
    times: dict[str, dict[str, list[float]]] = {s: {e: [] for e in (*EXPERIMENTS, "startup")}
                                                 for s in sides}
    loads = []
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(a.repeats):
            for side, src in sides.items():
                loads.append(load())
                times[side]["startup"].append(run(src, ["-c", STARTUP], env))
                for exp in EXPERIMENTS:
                    out = Path(tmp) / f"{side}-{rep}"
                    times[side][exp].append(run(src, ["-m", "icml25", "reproduce", exp, "--full",
                                                      "--out", str(out)], env))
            print(f"repeat {rep + 1}/{a.repeats} done (load {loads[-1]:.1f})", flush=True)
    print(f"\nmedian wall time over {a.repeats} alternating repeats, {a.threads} BLAS thread(s), "
          f"load average {min(loads):.1f}-{max(loads):.1f}")
    print(f"{'':26s}" + "".join(f"{s:>10s}" for s in sides) + ("   old/new" if "old" in sides
                                                                else ""))
    med = {s: {k: statistics.median(v) for k, v in d.items()} for s, d in times.items()}
    for s in sides:
        med[s]["both"] = med[s][EXPERIMENTS[0]] + med[s][EXPERIMENTS[1]]
        med[s]["both minus start-up"] = med[s]["both"] - 2 * med[s]["startup"]
    for key in (*EXPERIMENTS, "both", "startup", "both minus start-up"):
        line = f"{key:26s}" + "".join(f"{med[s][key]:10.2f}" for s in sides)
        if "old" in sides:
            line += f"{med['old'][key] / med['new'][key]:10.2f}"
        print(line)
    both = med["new"]["both"]
    print(f"\nnew, both processes: {both:.2f} s = {OFFICIAL_S / both:.1f}x the official 315 s "
          f"(target <= 10.5 s, 30x; aim 5.25 s, 60x)")
    if a.json:
        Path(a.json).write_text(json.dumps({"times": times, "median": med, "loads": loads},
                                           indent=2))


if __name__ == "__main__":
    main()
