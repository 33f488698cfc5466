"""Helpers of the scripts in this folder (scripts/gpu/*.sh): the training rate of a calibration
run, the steps that fit a time budget, and the result record (evaluation, achieved FLOP/s
against a bf16 matmul peak measured in the same run, the checkpoint packed for the trip back).

  python3 scripts/gpu/summarize.py rate RUN                    # examples/s of RUN's last log row
  python3 scripts/gpu/summarize.py steps RATE BATCH SECONDS     # steps that fit SECONDS
  python3 scripts/gpu/summarize.py result --system S --run RUN --eval EVAL.json --out OUT ...
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from pathlib import Path

PART_BYTES = 15 * 2**20  # files that come back from a device machine: at most 16 MiB each
MAX_PARTS = 2


def log_rows(run: Path) -> list[dict]:
    return [json.loads(x) for x in (run / "train_log.jsonl").read_text().splitlines() if x]


def cmd_rate(args) -> None:
    print(f"{log_rows(Path(args.run))[-1]['examples_per_s']:.1f}")


def cmd_steps(args) -> None:
    """Steps of BATCH examples that fit SECONDS at RATE examples/s, with 10% held back."""
    print(max(args.minimum, int(0.9 * args.seconds * args.rate / args.batch)))


def pack_checkpoint(model_dir: Path, out: Path) -> dict:
    """Copy config.json, training.json and model.safetensors (split into parts of at most 15 MiB
    when larger; reassemble with ``cat model.safetensors.* > model.safetensors``) to ``out``,
    unless the weights need more than MAX_PARTS parts."""
    for name in ("config.json", "training.json"):
        if (model_dir / name).exists():
            shutil.copy(model_dir / name, out / name)
    weights = model_dir / "model.safetensors"
    size = weights.stat().st_size
    if size <= PART_BYTES:
        shutil.copy(weights, out / "model.safetensors")
        return {"checkpoint_bytes": size, "checkpoint_parts": 1}
    parts = -(-size // PART_BYTES)
    if parts > MAX_PARTS:
        return {"checkpoint_bytes": size, "checkpoint_parts": 0,
                "checkpoint_note": f"{size / 1e6:.0f} MB: too large to come back in "
                                   f"{MAX_PARTS} files of 15 MiB; kept in {model_dir}"}
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


def cmd_result(args) -> None:
    import torch

    from icml25.nn import Transformer, matmul_peak_flops, training_flops

    run, out = Path(args.run), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    model = Transformer.load(run / "model")
    rows = log_rows(run)
    rates = [r["examples_per_s"] for r in rows[1:]] or [rows[-1]["examples_per_s"]]
    rate = statistics.median(rates)  # the first row holds start-up (and compilation)
    tokens = args.tokens or (zebra_tokens(Path(args.zebra_data)) if args.zebra_data
                             else model.cfg.seq_len)
    achieved = training_flops(model, rate * tokens)
    device = torch.device(args.device)
    start = time.perf_counter()
    peak = matmul_peak_flops(args.peak_size, device=device, dtype=torch.bfloat16)
    record = {
        "system": args.system, "device": args.device,
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else
        device.type, "torch": torch.__version__, "params": model.num_params(),
        "train_seconds": args.train_seconds, "steps": rows[-1]["step"],
        "examples_per_s_median": rate, "tokens_per_example": tokens,
        "achieved_flops": achieved, "bf16_matmul_peak_flops": peak,
        "peak_size": args.peak_size, "peak_seconds": time.perf_counter() - start,
        "utilisation": achieved / peak, "final_log_row": rows[-1],
        "eval": json.loads(Path(args.eval).read_text()) if args.eval else None,
        "command": " ".join(sys.argv),
    }
    record |= pack_checkpoint(run / "model", out)
    shutil.copy(run / "train_log.jsonl", out / "train_log.jsonl")
    (out / "result.json").write_text(json.dumps(record, indent=2))
    print(json.dumps({k: v for k, v in record.items() if k != "final_log_row"}, indent=2))


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(required=True)
    p = sub.add_parser("rate")
    p.add_argument("run")
    p.set_defaults(fn=cmd_rate)
    p = sub.add_parser("steps")
    p.add_argument("rate", type=float)
    p.add_argument("batch", type=int)
    p.add_argument("seconds", type=float)
    p.add_argument("--minimum", type=int, default=100)
    p.set_defaults(fn=cmd_steps)
    p = sub.add_parser("result")
    p.add_argument("--system", required=True)
    p.add_argument("--run", required=True)
    p.add_argument("--eval")
    p.add_argument("--out", required=True)
    p.add_argument("--device", default="cuda")
    p.add_argument("--tokens", type=int, default=None, help="per example (default: seq_len)")
    p.add_argument("--zebra-data", help="Zebra: count tokens from these training puzzles")
    p.add_argument("--train-seconds", type=float, default=None)
    p.add_argument("--peak-size", type=int, default=8192)
    p.set_defaults(fn=cmd_result)
    args = ap.parse_args()
    args.fn(args)


if __name__ == "__main__":
    main()
