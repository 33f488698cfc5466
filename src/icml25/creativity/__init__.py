"""Algorithmic creativity (Nagarajan, Wu, Ding & Raghunathan, "Roll the dice & look before you
leap", ICML 2025): four open-ended tasks with an exact creativity scorer (pure Python), and
next-token, teacherless and masked-diffusion training with seed-conditioning (``torch`` extra).

Example::

    from icml25.creativity import generate, make_task, Scorer
    data = generate("line", seed=0)
    report = Scorer(make_task("line", seed=0), data.train).score(my_answers)
    report.creativity, report.memorization
"""

from __future__ import annotations

import importlib

from icml25.creativity.scoring import Judgement, Scorer, ScoreReport, answer_tokens
from icml25.creativity.tasks import (
    TASKS,
    AnswerError,
    Dataset,
    Example,
    Task,
    generate,
    make_seeds,
    make_task,
    parse_line,
    relabel,
)

_TORCH_NAMES = {
    "Vocab": "training",
    "METHODS": "training",
    "TrainSettings": "training",
    "build_rows": "training",
    "train_model": "training",
    "generate_answers": "training",
    "evaluate_model": "training",
    "load_run": "training",
}

__all__ = [  # (grouped: pure names, then the torch names loaded on first use)
    "TASKS", "AnswerError", "Dataset", "Example", "Judgement", "ScoreReport", "Scorer", "Task",
    "answer_tokens", "generate", "make_seeds", "make_task", "parse_line", "relabel",
    "METHODS", "TrainSettings", "Vocab", "build_rows", "evaluate_model", "generate_answers",
    "load_run", "train_model",
]


def __getattr__(name: str):
    if name in _TORCH_NAMES:
        from icml25.core.errors import require_extra

        require_extra("torch", "torch")
        return getattr(importlib.import_module(f"icml25.creativity.{_TORCH_NAMES[name]}"), name)
    raise AttributeError(f"module 'icml25.creativity' has no attribute {name!r}")
