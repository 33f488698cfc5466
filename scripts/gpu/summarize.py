"""The result record of a script in this folder (scripts/gpu/*.sh): what was reached, whatever
happened. Called once at the end of every script (also from its SIGTERM / EXIT trap), it reads
the run folders as they are and never fails: a missing or broken piece becomes an entry of
``errors`` and the rest is still written.

  python3 scripts/gpu/summarize.py result --out OUT --system S --stage RUN [--stage RUN ...]
      [--eval EVAL.json] [--tokens N | --zebra-data F] [--extra-rows N] [--status TEXT] ...

The record (``OUT/result.json``): the status and the script's steps (exit code, seconds); per
training stage its steps, planned steps, examples seen, the budget fit (rate measured after
start-up) and whether a time limit stopped it; examples seen in all beside the paper's; for the
last stage the achieved training FLOP/s (from FLOP counts and the measured rate) against a bf16
matmul peak measured in the same run, and their ratio (``utilisation``); the evaluation; the
targets and whether they were reached. The last stage's model comes back too when it fits
(in parts of at most 15 MiB), and its ``train_log.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import sys
import time
import traceback
from pathlib import Path

PART_BYTES = 15 * 2**20  # files that come back from a device machine: at most 16 MiB each
MAX_PARTS = 2
# What each system is expected to reach (the targets of the GPU runs: docs/nn-gpu.md).
TARGETS = {"mdm-sudoku": ("top_margin.solved", 0.895), "mdm-zebra": ("top_margin.solved", 0.90),
           "creativity-line": ("coherence", 0.90)}
UTILISATION_TARGET = 0.40


def log_rows(run: Path) -> list[dict]:
    """The stage's log rows: its train_log.jsonl, else the ones in its last checkpoint."""
    path = run / "train_log.jsonl"
    if path.exists():
        return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    state = run / "checkpoint" / "trainer_state.pt"
    if state.exists():
        import torch

        return list(torch.load(state, map_location="cpu", weights_only=False)["log"])
    return []


def model_dir(run: Path) -> Path | None:
    """The stage's final model, else its last checkpoint (a stage killed before it saved)."""
    for sub in ("model", "checkpoint"):
        if (run / sub / "config.json").exists() and (run / sub / "model.safetensors").exists():
            return run / sub
    return None


def stage_record(run: Path) -> dict:
    """Steps, examples and timing of one training stage folder."""
    rows = log_rows(run)
    train = {}
    for name in ("train_config.json", "config.json"):  # the trainer's; a model's card
        cfg_file = run / "checkpoint" / name
        if cfg_file.exists() and not train:
            train = json.loads(cfg_file.read_text()).get("train", {})
    fit_file = run / "train_budget.json"
    fit = json.loads(fit_file.read_text()) if fit_file.exists() else None
    steps = rows[-1]["step"] if rows else 0
    batch = train.get("batch_size")
    per_step = batch * train.get("grad_accum_steps", 1) if batch else None
    planned = fit["steps"] if fit else train.get("steps")
    rates = [r["examples_per_s"] for r in rows[1:]]  # the first row holds start-up
    return {"name": run.name, "dir": str(run), "steps": steps, "planned_steps": planned,
            "batch": per_step, "examples": steps * per_step if per_step else None,
            "stopped_early": bool(planned) and steps < planned, "budget": fit,
            "examples_per_s_median": statistics.median(rates) if rates else None,
            "final_loss": rows[-1]["loss"] if rows else None}


def pack_checkpoint(model: Path, out: Path) -> dict:
    """Copy config.json, training.json and model.safetensors (split into parts of at most 15 MiB
    when larger; reassemble with ``cat model.safetensors.* > model.safetensors``) to ``out``,
    unless the weights need more than MAX_PARTS parts."""
    for name in ("config.json", "training.json"):
        if (model / name).exists():
            shutil.copy(model / name, out / name)
    weights = model / "model.safetensors"
    size = weights.stat().st_size
    if size <= PART_BYTES:
        shutil.copy(weights, out / "model.safetensors")
        return {"checkpoint_bytes": size, "checkpoint_parts": 1}
    parts = -(-size // PART_BYTES)
    if parts > MAX_PARTS:
        return {"checkpoint_bytes": size, "checkpoint_parts": 0,
                "checkpoint_note": f"{size / 1e6:.0f} MB: too large to come back in "
                                   f"{MAX_PARTS} files of 15 MiB; kept in {model}"}
    data = weights.read_bytes()
    for i in range(parts):
        (out / f"model.safetensors.{i:02d}").write_bytes(data[i * PART_BYTES:(i + 1) * PART_BYTES])
    return {"checkpoint_bytes": size, "checkpoint_parts": parts}


def zebra_tokens(path: Path) -> float:
    """Positions a Zebra training row occupies: 36 answer cells plus the longest prompt of its
    size class (a batch is one class, padded to its longest), averaged over the puzzles."""
    from icml25.mdm import zebra

    longest: dict[tuple[int, int], int] = {}
    sizes = []
    for p in zebra.load_puzzles(path):
        key = (p.n_houses, p.n_attrs)
        longest[key] = max(longest.get(key, 0), len(zebra.encode(p)[0]))
        sizes.append(key)
    return zebra.ANSWER_LEN + statistics.mean(longest[k] for k in sizes)


def _get(record: dict | None, dotted: str):
    for key in dotted.split("."):
        if not isinstance(record, dict) or key not in record:
            return None
        record = record[key]
    return record


class Record(dict):
    """The result being built: ``attempt`` runs one part, an exception becomes an error."""

    def attempt(self, what: str, fn) -> None:
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 -- the record must be written whatever fails
            self.setdefault("errors", []).append(
                f"{what}: {type(exc).__name__}: {exc}"[:500])
            traceback.print_exc(file=sys.stderr)


def cmd_result(args) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rec = Record(system=args.system, status=args.status, device=args.device,
                 script_seconds=args.script_seconds, total_seconds=args.total_seconds,
                 script_steps=[dict(zip(("name", "exit", "seconds"), line.split(), strict=False))
                               for line in (args.steps_done or "").splitlines() if line.strip()],
                 command=" ".join(sys.argv), errors=[])
    stages = [Path(s) for s in args.stage]
    final = stages[-1] if stages else None

    def do_stages() -> None:
        rec["stages"] = [stage_record(s) for s in stages if s.exists()]
        seen = [s["examples"] for s in rec["stages"] if s["examples"]]
        rec["examples_seen"] = sum(seen) if seen else 0
        rec["paper_examples"] = args.paper_examples
        rec["paper_note"] = args.paper_note
        if args.paper_examples:
            rec["examples_fraction_of_paper"] = rec["examples_seen"] / args.paper_examples
        rec["stopped_early"] = any(s["stopped_early"] for s in rec["stages"])

    def do_eval() -> None:
        rec["eval"] = None
        if args.eval:
            path = Path(args.eval)
            if not path.exists() or not path.read_text().strip():
                raise FileNotFoundError(f"no evaluation in {path} (the evaluation did not run "
                                        "or failed: see log.txt)")
            rec["eval"] = json.loads(path.read_text())

    def do_device() -> None:
        import torch

        rec["torch"] = torch.__version__
        device = torch.device(args.device)
        rec["device_name"] = (torch.cuda.get_device_name(device) if device.type == "cuda"
                              else device.type)

    def do_throughput() -> None:
        import torch

        from icml25.nn import Transformer, matmul_peak_flops, training_flops

        where = model_dir(final) if final else None
        if where is None:
            raise FileNotFoundError(f"no model in {final}: training left nothing to measure")
        model = Transformer.load(where)
        rec["params"] = model.num_params()
        stage = stage_record(final)
        fit = stage["budget"]
        per_step = stage["batch"]
        rate, source = stage["examples_per_s_median"], "median of the log rows after the first"
        if rate is None and fit and per_step:
            rate, source = fit["steps_per_s"] * per_step, "the budget's calibration window"
        rows = log_rows(final)
        if rate is None and rows:  # one log row: its window holds the start-up too
            rate, source = rows[-1]["examples_per_s"], "the only log row (start-up included)"
        if rate is None:
            raise ValueError(f"{final} logged no training rate")
        rec["rate_source"] = source
        tokens = args.tokens or (zebra_tokens(Path(args.zebra_data)) if args.zebra_data
                                 else model.cfg.seq_len)
        rows_per_example = 1 + (args.extra_rows / per_step if per_step else 0)
        achieved = training_flops(model, rate * rows_per_example * tokens)
        start = time.perf_counter()
        peak = matmul_peak_flops(args.peak_size, device=torch.device(args.device),
                                 dtype=torch.bfloat16)
        rec.update(examples_per_s=rate, tokens_per_example=tokens,
                   extra_rows_per_step=args.extra_rows, achieved_flops=achieved,
                   bf16_matmul_peak_flops=peak, peak_size=args.peak_size,
                   peak_seconds=time.perf_counter() - start, utilisation=achieved / peak,
                   examples_per_s_calibration=fit["steps_per_s"] * per_step
                   if fit and per_step else None)

    def do_targets() -> None:
        targets = {}
        if args.system in TARGETS:
            key, bar = TARGETS[args.system]
            got = _get(rec.get("eval"), key)
            targets[key] = {"target": bar, "reached": got, "met": got is not None and got >= bar}
        util = rec.get("utilisation")
        targets["utilisation"] = {"target": UTILISATION_TARGET, "reached": util,
                                  "met": util is not None and math.isfinite(util)
                                  and util >= UTILISATION_TARGET}
        rec["targets"] = targets

    def do_files() -> None:
        where = model_dir(final) if final else None
        if where is not None:
            rec.update(pack_checkpoint(where, out))
        if final and (final / "train_log.jsonl").exists():
            shutil.copy(final / "train_log.jsonl", out / "train_log.jsonl")

    for what, fn in (("stages", do_stages), ("evaluation", do_eval), ("device", do_device),
                     ("throughput", do_throughput), ("targets", do_targets),
                     ("files", do_files)):
        rec.attempt(what, fn)
    (out / "result.json").write_text(json.dumps(rec, indent=2, default=str))
    print(json.dumps({k: v for k, v in rec.items() if k not in ("stages", "eval")}, indent=2,
                     default=str))


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(required=True)
    p = sub.add_parser("result")
    p.add_argument("--out", required=True)
    p.add_argument("--system", default="unknown")
    p.add_argument("--stage", action="append", default=[],
                   help="a training stage's run folder, in order; the last is evaluated")
    p.add_argument("--eval")
    p.add_argument("--device", default="cuda")
    p.add_argument("--tokens", type=int, default=None, help="per example (default: seq_len)")
    p.add_argument("--zebra-data", help="Zebra: count tokens from these training puzzles")
    p.add_argument("--extra-rows", type=int, default=0,
                   help="rows a step puts through the model beside its batch (replay)")
    p.add_argument("--paper-examples", type=float, default=None)
    p.add_argument("--paper-note", default=None)
    p.add_argument("--peak-size", type=int, default=8192)
    p.add_argument("--status", default="")
    p.add_argument("--script-seconds", type=float, default=None)
    p.add_argument("--total-seconds", type=float, default=None)
    p.add_argument("--steps-done", default="", help="lines 'name exit seconds'")
    p.set_defaults(fn=cmd_result)
    args = ap.parse_args()
    args.fn(args)


if __name__ == "__main__":
    main()
