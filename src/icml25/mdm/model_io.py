"""Checkpoint and training-card I/O for every mdm task, in one place.

A model folder is what ``Transformer.save`` writes (``config.json`` + ``model.safetensors``)
plus ``training.json``, the card: the command that trained it, its scale and a log summary.
Shipped models live in ``icml25/mdm/checkpoints/<task>``.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import numpy as np
import torch

from icml25.nn import Transformer


def shipped_path(task: str) -> Path:
    return Path(str(resources.files("icml25.mdm") / f"checkpoints/{task}"))


def load_model(path: str | Path | None = None, task: str = "sudoku") -> Transformer:
    """Load the shipped checkpoint of ``task`` or a saved model folder, in eval mode.

    Parameters
    ----------
    path : str, pathlib.Path or None, default=None
        A folder saved by ``icml25 mdm train`` / ``Transformer.save`` (a run folder's
        ``model/`` or ``checkpoint/`` is found); None for the shipped checkpoint of ``task``.
    task : str, default="sudoku"
        The shipped model to load when ``path`` is None (``sudoku``, ``sudoku-ar``, ``zebra``,
        ``text``, ``text-causal``).

    Returns
    -------
    icml25.nn.Transformer
        The model, in eval mode.

    Raises
    ------
    FileNotFoundError
        When the shipped checkpoint is missing or ``path`` holds no saved model.

    Examples
    --------
    >>> from icml25.mdm import load_model
    >>> model = load_model()
    >>> model.cfg.seq_len, model.cfg.causal, model.training
    (81, False, False)
    """
    if path is None:
        path = shipped_path(task)
        if not (path / "model.safetensors").exists():
            raise FileNotFoundError(
                f"the shipped {task} checkpoint is missing from this installation; train one with "
                f"`icml25 mdm train --task {task}` and pass its folder")
    path = Path(str(path))
    for sub in ("model", "checkpoint"):
        if not (path / "config.json").exists() and (path / sub / "model.safetensors").exists():
            path = path / sub
    return Transformer.load(path).eval()


def read_card(task: str) -> dict:
    """The ``training.json`` of the shipped ``task`` model."""
    return json.loads((shipped_path(task) / "training.json").read_text())


def describe_card(card: dict) -> str:
    """One paragraph on how a model was trained, from its ``training.json``."""
    state = "finished" if card.get("finished") else "PARTIALLY TRAINED"
    text = (f"Evaluated the shipped checkpoint, {state}: step {card['step']:,} of "
            f"{card['planned_steps']:,} ({card['examples_seen']:,} examples seen). "
            f"Training command: {card['command']}")
    earlier, phase = [], card
    while "started_from" in phase:  # warm restarts nest the card of the model they began with
        phase = phase["started_from"]
        earlier.append(f"a model trained for {phase['step']:,} steps ({phase['command']})")
    if earlier:
        text += (". It is a warm restart of " + ", itself a warm restart of ".join(earlier)
                 + f"; {card['examples_seen_total']:,} examples in all.")
    return text


def write_training_card(directory: Path, command: str, log: list[dict], extra: dict) -> None:
    """The provenance that ships beside a checkpoint: command, scale and a log summary."""
    last = log[-1] if log else {}
    summary = {"command": command, "final": last, **extra}
    if log:
        summary["examples_per_s_median"] = float(np.median([r["examples_per_s"] for r in log]))
        summary["loss_first_last"] = [log[0]["loss"], last["loss"]]
    (Path(directory) / "training.json").write_text(json.dumps(summary, indent=2))


def export_checkpoint(run_dir: str | Path, dest: str | Path, command: str,
                      task: str = "sudoku", started_from: dict | None = None) -> Path:
    """Copy a (possibly unfinished) run's latest weights to ``dest`` with its training card.

    ``started_from`` is the card of the model a warm restart (``train --init``) began with; it
    is kept in the new card, and ``examples_seen_total`` counts both runs.
    """
    run_dir = Path(run_dir)
    ckpt = run_dir / "checkpoint"
    if not (ckpt / "trainer_state.pt").exists():
        raise FileNotFoundError(f"no checkpoint in {run_dir}")
    meta = json.loads((ckpt / "config.json").read_text())
    log = torch.load(ckpt / "trainer_state.pt", weights_only=False)["log"]
    model = Transformer.load(ckpt)
    dest = Path(dest)
    model.save(dest, extra={"task": task, "step": meta["step"], "train": meta["train"]})
    total = meta["train"]["steps"]
    # examples per process (batch x micro-batches); a torchrun run saw world-size times more
    seen = meta["step"] * meta["train"]["batch_size"] * meta["train"].get("grad_accum_steps", 1)
    extra = {"step": meta["step"], "planned_steps": total, "examples_seen": seen,
             "finished": meta["step"] >= total, "params": model.num_params()}
    if started_from is not None:
        before = started_from.get("examples_seen_total", started_from["examples_seen"])
        extra |= {"examples_seen_total": before + seen, "started_from": started_from}
    write_training_card(dest, command, log, extra)
    return dest
