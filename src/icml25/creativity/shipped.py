"""The models shipped with the package (``icml25/creativity/checkpoints/<name>``), each a run
folder written by :meth:`~icml25.creativity.training.Run.save` plus ``card.json``: the command
that trained it, its learning curve and its evaluation on 1,024 fresh prompts."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path


def _root() -> Path:
    return Path(str(resources.files("icml25.creativity") / "checkpoints"))


def shipped_names() -> list[str]:
    """Names of the shipped models, e.g. ``line-ntp``."""
    root = _root()
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / "config.json").exists())


def shipped_dir(name: str) -> Path:
    """The folder of shipped model ``name``; a clear error names the ones there are."""
    names = shipped_names()
    if name not in names:
        raise ValueError(f"no shipped creativity model {name!r}; shipped: "
                         f"{', '.join(names) or 'none'}")
    return _root() / name


def shipped_card(name: str) -> dict:
    """The model's card (``card.json``): command, settings, curve, evaluation."""
    path = shipped_dir(name) / "card.json"
    return json.loads(path.read_text()) if path.exists() else {}


def shipped_temperature(name: str) -> float | None:
    """The decoding the card's evaluation used (0 = greedy on fresh seeds; None: the
    method's default)."""
    return shipped_card(name).get("evaluation", {}).get("temperature")
