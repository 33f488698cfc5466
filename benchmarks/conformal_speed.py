"""The two synthetic tables at full scale, as whole processes, old code vs new.

Runs ``python -m icml25 reproduce conformal-binomial --full`` and
``... conformal-heteroskedastic --full`` as separate processes, alternating an older checkout
(``--old-src``, e.g. a ``git worktree add /tmp/conf-old d5a7074``) and this one, ``--repeats``
times, and records wall times and old/new ratios measured side by side on the same machine
(the machine's load moves both). It also times the bare start-up of such a process (importing
every subsystem's experiments, which ``reproduce`` does before running anything) so that the
part this subsystem controls can be read off.

The target: both processes <= 10.5 s together on an idle 2-core machine, i.e. 30x the
official code's 315 s (aim 60x, 5.25 s).

    .venv/bin/python benchmarks/conformal_speed.py --old-src /tmp/conf-old/src [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EXPERIMENTS = ("conformal-binomial", "conformal-heteroskedastic")
OFFICIAL_S = 315.0
STARTUP = "from icml25.core import load_experiments; load_experiments()"


def run(src: str | None, args: list[str], env_extra: dict) -> tuple[float, float]:
    """(wall seconds, CPU seconds = user + sys of the child) of one process."""
    env = dict(os.environ, **env_extra)
    if src:
        env["PYTHONPATH"] = src
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"failed: {args}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


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
    keys = (*EXPERIMENTS, "startup")
    times = {s: {k: [] for k in keys} for s in sides}
    cpus = {s: {k: [] for k in keys} for s in sides}
    loads = []
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(a.repeats):
            for side, src in sides.items():
                loads.append(load())
                w, c = run(src, ["-c", STARTUP], env)
                times[side]["startup"].append(w)
                cpus[side]["startup"].append(c)
                for exp in EXPERIMENTS:
                    out = Path(tmp) / f"{side}-{rep}"
                    w, c = run(src, ["-m", "icml25", "reproduce", exp, "--full", "--out",
                                     str(out)], env)
                    times[side][exp].append(w)
                    cpus[side][exp].append(c)
            print(f"repeat {rep + 1}/{a.repeats} done (load {loads[-1]:.1f})", flush=True)
    print(f"\nmedian over {a.repeats} alternating repeats, {a.threads} BLAS thread(s), load "
          f"average {min(loads):.1f}-{max(loads):.1f}. CPU = user + sys of the process: on a "
          "loaded machine it is the better estimate of the wall time on an idle one (the work "
          "is single-threaded).")
    med = {}
    for label, data in (("wall", times), ("cpu", cpus)):
        med[label] = {s: {k: statistics.median(v) for k, v in d.items()} for s, d in data.items()}
        for s in sides:
            m = med[label][s]
            m["both"] = m[EXPERIMENTS[0]] + m[EXPERIMENTS[1]]
            m["both minus start-up"] = m["both"] - 2 * m["startup"]
        print(f"\n{label} seconds" + " " * 14 + "".join(f"{s:>10s}" for s in sides)
              + ("   old/new" if "old" in sides else ""))
        for key in (*EXPERIMENTS, "both", "startup", "both minus start-up"):
            line = f"{key:26s}" + "".join(f"{med[label][s][key]:10.2f}" for s in sides)
            if "old" in sides:
                line += f"{med[label]['old'][key] / med[label]['new'][key]:10.2f}"
            print(line)
    for label in ("wall", "cpu"):
        both = med[label]["new"]["both"]
        print(f"new, both processes, {label}: {both:.2f} s = {OFFICIAL_S / both:.1f}x the official "
              "315 s (target <= 10.5 s, 30x; aim 5.25 s, 60x)")
    if a.json:
        Path(a.json).write_text(json.dumps({"wall": times, "cpu": cpus, "median": med,
                                            "loads": loads},
                                           indent=2))


if __name__ == "__main__":
    main()
