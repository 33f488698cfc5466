"""Command-line options shared across rooms, defined once so they read the same everywhere:
those of every command that trains or runs an ``icml25.nn`` model (``icml25 mdm train``,
``icml25 creativity train``, the solve / evaluate commands) and the missing-value policy of
every command that reads a table (``--on-missing`` / ``--dropna``, see
:func:`icml25.core.table.resolve_on_missing`). Plain Typer: importing this loads no torch."""

from __future__ import annotations

from typing import Annotated, Any

import typer

Device = Annotated[str, typer.Option(
    "--device", help="auto (CUDA if present, else CPU) | cpu | cuda | cuda:N | mps. Under "
                     "torchrun each process takes its LOCAL_RANK GPU.")]
Precision = Annotated[str, typer.Option(
    "--precision", help="fp32 | bf16 | fp16: autocast precision of the forward pass (fp16 adds "
                        "a gradient scaler); weights and checkpoints stay fp32.")]
Compile = Annotated[bool, typer.Option(
    "--compile/--no-compile", help="Wrap the model in torch.compile (docs/nn.md: measured, "
                                   "off by default).")]
GradAccum = Annotated[int, typer.Option(
    "--grad-accum", min=1, help="Micro-batches per optimizer step (each of --batch-size): "
                                "the batch a step sees is N x batch size x processes.")]
PresetName = Annotated[str, typer.Option(
    "--preset", help="paper | cpu: the paper's model and batch, or the CPU-sized settings we "
                     "ship (the default). Explicit flags override it (docs/nn.md).")]
MaxSeconds = Annotated[float | None, typer.Option(
    "--max-seconds", min=0.0, help="Stop at the first log step past this wall time, with a "
                                   "checkpoint (for a fixed time budget).")]
BudgetSeconds = Annotated[float | None, typer.Option(
    "--budget-seconds", min=0.0, help="Fit the step count to this training time: the rate is "
                                      "measured after start-up and compilation, then --steps "
                                      "shrinks so the schedule ends on time (docs/nn-gpu.md).")]
CompileMode = Annotated[str | None, typer.Option(
    "--compile-mode", help="torch.compile mode with --compile: default | reduce-overhead (CUDA "
                           "graphs; static shapes) | max-autotune | max-autotune-no-cudagraphs.")]


def on_missing_option(default: str = "error", note: str = "") -> Any:
    """``--on-missing error|drop|keep`` for a command that reads a table, with the command's
    default (what ``None`` resolves to in :func:`icml25.core.table.resolve_on_missing`) and
    ``note``, what the policy means for that command (e.g. that it refuses ``keep``)."""
    return Annotated[str | None, typer.Option(
        "--on-missing", metavar="error|drop|keep",
        help="A row with a missing cell (empty, NA, N/A, NaN, null, None, ?): error stops with "
             "its line and column, drop leaves it out and reports it on stderr, keep passes it "
             f"on as NaN where the command can use it. {note + ' ' if note else ''}"
             f"Default {default}.")]


OnMissing = on_missing_option()
DropNA = Annotated[bool, typer.Option("--dropna", help="Short for --on-missing drop.")]
