"""Command-line options shared by every command that trains or runs an ``icml25.nn`` model
(``icml25 mdm train``, ``icml25 creativity train``, the solve / evaluate commands), defined once
so they read the same everywhere. Plain Typer: importing this loads no torch."""

from __future__ import annotations

from typing import Annotated

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
