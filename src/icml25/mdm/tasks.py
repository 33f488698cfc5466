"""The mdm tasks, one entry each: model config, data, training, evaluation.

``icml25 mdm train`` and ``evaluate`` look a task up here and call it; adding a task touches
this file (and the task's own module) only. Each entry names its ``icml25.nn`` preset and the
training options it understands, so a flag a task does not use is refused at the boundary
instead of silently ignored.

- ``sudoku``     the masked diffusion model on 81-cell boards (``sudoku_mdm``)
- ``sudoku-ar``  the row-major autoregressive baseline (``sudoku_ar``)
- ``zebra``      the masked diffusion model on Einstein puzzles (``zebra_mdm``)
- ``text``       the byte-level masked diffusion model on Python's standard library (``text_mdm``)
- ``text-causal`` the causal byte model that judges its samples (generative perplexity)

The text tasks use the ``mdm-text`` preset family of ``icml25.nn.presets`` (the shipped MDM's
settings; the judge sets its smaller width on the command line, see its card).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

TRAIN_OPTIONS = ("weighting", "min_mask_rate", "cell_embeddings")
EVAL_OPTIONS = ("bytes_per_step",)


@dataclasses.dataclass(frozen=True)
class Task:
    name: str
    preset: str  # the icml25.nn preset family
    options: frozenset[str]  # the TRAIN_OPTIONS this task understands
    model_config: Callable[..., Any]  # (**sizes, [cell_embeddings]) -> TransformerConfig
    load: Callable[[Sequence[Path] | None, int, int], Any]  # (files, n, seed) -> training data
    train: Callable[..., tuple[Any, list[dict]]]  # (data, cfg, model_cfg, *, on_log, init, ...)
    size: Callable[[Any], int]  # base examples in the training data
    evaluate: Callable[..., dict]  # (model, eval data, planners, *, steps, noise, batch_size,
    #                                  [EVAL_OPTIONS it understands])
    held_out: Callable[[Path | None, int, int, str], Any]  # (file, n, seed, difficulty)
    causal: bool = False
    size_name: str = "base_puzzles"  # what ``size`` counts, the card's field name
    default_n: int = 1000  # held-out examples ``evaluate`` uses unless told
    eval_options: frozenset[str] = frozenset()  # the EVAL_OPTIONS this task understands
    causal_variant: str | None = None  # the task ``train --autoregressive`` trains instead


def _sudoku_load(files, n, seed):
    import numpy as np

    from icml25.mdm import sudoku

    if files:
        parts = [sudoku.load_dataset(p) for p in files]
        return (np.concatenate([p for p, _ in parts]), np.concatenate([s for _, s in parts]))
    return sudoku.generate_dataset(n, seed=1000 + seed)


def _sudoku_held_out(file, n, seed, difficulty):
    from icml25.mdm import sudoku

    if file is not None:
        return sudoku.load_dataset(file)
    return sudoku.generate_dataset(n, seed=seed, difficulty=difficulty)


def _sudoku_model_config(**kw):
    from icml25.mdm.sudoku_mdm import default_model_config

    return default_model_config(**kw)


def _sudoku_train(data, cfg, model_cfg, **kw):
    from icml25.mdm.sudoku_mdm import train_sudoku

    return train_sudoku(*data, cfg, model_cfg, **kw)


def _sudoku_evaluate(model, data, planners, *, steps, noise, batch_size):
    from icml25.mdm.sudoku_mdm import evaluate

    return evaluate(model, *data, planners, steps=steps or 50, noise=noise,
                    batch_size=batch_size)


def _ar_model_config(**kw):
    from icml25.mdm.sudoku_ar import default_ar_config

    return default_ar_config(**kw)


def _ar_train(data, cfg, model_cfg, **kw):
    from icml25.mdm.sudoku_ar import train_sudoku_ar

    return train_sudoku_ar(*data, cfg, model_cfg, **kw)


def _zebra_load(files, n, seed):
    from icml25.mdm import zebra

    if files:
        return [p for f in files for p in zebra.load_puzzles(f)]
    return zebra.generate_dataset(n, seed=1000 + seed)


def _zebra_held_out(file, n, seed, difficulty):
    from icml25.mdm import zebra

    return zebra.load_puzzles(file) if file is not None else zebra.generate_dataset(n, seed=seed)


def _zebra_model_config(**kw):
    from icml25.mdm.zebra_mdm import default_model_config

    return default_model_config(**kw)


def _zebra_train(data, cfg, model_cfg, **kw):
    from icml25.mdm.zebra_mdm import train_zebra

    return train_zebra(data, cfg, model_cfg, **kw)


def _zebra_evaluate(model, data, planners, *, steps, noise, batch_size):
    from icml25.mdm.zebra_mdm import evaluate_zebra

    return evaluate_zebra(model, data, planners, steps=steps, noise=noise, batch_size=batch_size)


def _text_load(files, n, seed):
    from icml25.mdm.text_data import load_corpus

    if files:
        raise ValueError("the text task trains on this Python's standard library; it takes no "
                         "--data")
    return load_corpus("train")


@dataclasses.dataclass(frozen=True)
class TextHeldOut:
    """The held-out modules and how many spans (or windows) of them, drawn with ``seed``."""

    corpus: Any
    n: int
    seed: int


def _text_held_out(file, n, seed, difficulty):
    from icml25.mdm.text_data import load_corpus

    if file is not None:
        raise ValueError("the text task evaluates on the standard library's held-out modules; "
                         "it takes no --data")
    return TextHeldOut(load_corpus("held_out"), n, seed)


def _text_model_config(causal=False):
    def make(**kw):
        from icml25.mdm.text_mdm import default_model_config

        return default_model_config(causal=causal, **kw)
    return make


def _text_train(data, cfg, model_cfg, **kw):
    from icml25.mdm.text_mdm import train_text

    return train_text(data, cfg, model_cfg, **kw)


def _text_evaluate(model, data, planners, *, steps, noise, batch_size, bytes_per_step=None):
    """Single- and multi-line infilling of ``data.n`` spans each; a span of L bytes takes
    ceil(L / b) steps for each b in ``bytes_per_step`` (default 1: one byte per step)."""
    from icml25.mdm.text_eval import evaluate_infilling

    if steps is not None:
        raise ValueError("text infilling takes --bytes-per-step, not --steps (a span's steps "
                         "follow from its length)")
    return evaluate_infilling(model, data.corpus, planners, n=data.n, seed=data.seed,
                              bytes_per_step=tuple(bytes_per_step or (1,)), noise=noise,
                              batch_size=batch_size)


def _judge_evaluate(model, data, planners, *, steps, noise, batch_size):
    """The causal judge's perplexity per byte on ``data.n`` held-out windows (planners, steps and
    noise do not apply to it)."""
    from icml25.mdm.text_eval import held_out_perplexity

    return {"held_out": held_out_perplexity(model, data.corpus, data.n, seed=data.seed)}


TASKS: dict[str, Task] = {
    "sudoku": Task("sudoku", "mdm-sudoku", frozenset({"weighting", "cell_embeddings"}),
                   _sudoku_model_config, _sudoku_load, _sudoku_train, lambda d: len(d[0]),
                   _sudoku_evaluate, _sudoku_held_out, causal_variant="sudoku-ar"),
    "sudoku-ar": Task("sudoku-ar", "mdm-sudoku", frozenset(), _ar_model_config, _sudoku_load,
                      _ar_train, lambda d: len(d[0]), _sudoku_evaluate, _sudoku_held_out,
                      causal=True),
    "zebra": Task("zebra", "mdm-zebra", frozenset(TRAIN_OPTIONS), _zebra_model_config,
                  _zebra_load, _zebra_train, len, _zebra_evaluate, _zebra_held_out),
    "text": Task("text", "mdm-text", frozenset(), _text_model_config(), _text_load,
                 _text_train, lambda c: c.n_bytes(), _text_evaluate, _text_held_out,
                 size_name="train_bytes", default_n=100,
                 eval_options=frozenset({"bytes_per_step"}), causal_variant="text-causal"),
    "text-causal": Task("text-causal", "mdm-text", frozenset(), _text_model_config(True),
                        _text_load, _text_train, lambda c: c.n_bytes(), _judge_evaluate,
                        _text_held_out, causal=True, size_name="train_bytes", default_n=64),
}


def get_task(name: str) -> Task:
    try:
        return TASKS[name]
    except KeyError:
        raise ValueError(f"unknown task {name!r}; choose one of {', '.join(TASKS)}") from None


def training_task(name: str, autoregressive: bool = False) -> Task:
    """The task ``icml25 mdm train --task name [--autoregressive]`` trains."""
    task = get_task(name)
    if autoregressive:
        if task.causal_variant is None:
            raise ValueError(f"task {name} has no autoregressive variant; "
                             f"{', '.join(t.name for t in TASKS.values() if t.causal_variant)} do")
        task = get_task(task.causal_variant)
    return task


def check_options(task: Task, *, evaluating: bool = False, **options) -> dict:
    """The ``options`` given (not at their defaults None / False / 0); one the task does not
    understand (for training, or for evaluation when ``evaluating``) raises ValueError naming
    it."""
    given = {k: v for k, v in options.items() if v not in (None, False, 0, 0.0)}
    unknown = sorted(set(given) - (task.eval_options if evaluating else task.options))
    if unknown:
        raise ValueError(f"{', '.join(unknown)} does not apply to task {task.name}")
    return given


def train_task(task: Task, data, cfg, sizes: dict, *, on_log=None, init=None,
               **options) -> tuple[Any, list[dict]]:
    """Build the task's model config from ``sizes`` and the options it understands
    (:func:`check_options`), then train."""
    given = check_options(task, **options)
    model_cfg = task.model_config(**sizes, **({"cell_embeddings": True}
                                              if given.pop("cell_embeddings", False) else {}))
    if init is not None:
        got = (init.cfg.vocab_size, init.cfg.seq_len)
        if init.cfg.causal != task.causal:
            raise ValueError("the model's kind (causal or not) differs from this run's")
        if got != (model_cfg.vocab_size, model_cfg.seq_len):
            raise ValueError(
                f"the model has vocabulary {got[0]} and length {got[1]}; task {task.name} needs "
                f"{model_cfg.vocab_size} and {model_cfg.seq_len}")
    return task.train(data, cfg, model_cfg, on_log=on_log, init=init, **given)


def evaluate_task(task: Task, model, data, planners, *, steps=None, noise=0.0, batch_size=None,
                  **options) -> dict:
    """Evaluate ``model`` on ``data`` (from ``task.held_out``) with the evaluation options the
    task understands (:func:`check_options`)."""
    given = check_options(task, evaluating=True, **options)
    return task.evaluate(model, data, planners, steps=steps, noise=noise, batch_size=batch_size,
                         **given)
