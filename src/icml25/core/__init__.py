"""Plumbing every subsystem may use: seeding, progress, result records, figures, the
``reproduce`` registry and the report writer. Imports nothing heavy (no torch, no web stack)."""

from icml25.core.errors import MissingExtraError, require_extra
from icml25.core.figures import legend_outside, new_figure, save_figure
from icml25.core.progress import progress_enabled, track
from icml25.core.records import Comparison, ExperimentResult, JsonRecord, Outcome
from icml25.core.registry import (
    Experiment,
    RunContext,
    experiment,
    load_experiments,
    registered,
    run_experiment,
    select,
)
from icml25.core.report import load_results, write_report
from icml25.core.seeding import make_rng, seed_everything
from icml25.core.stats import clopper_pearson
from icml25.core.table import Table, TableError, read_table

__all__ = [
    "Comparison",
    "Experiment",
    "ExperimentResult",
    "clopper_pearson",
    "JsonRecord",
    "MissingExtraError",
    "Outcome",
    "RunContext",
    "Table",
    "TableError",
    "experiment",
    "load_experiments",
    "legend_outside",
    "load_results",
    "make_rng",
    "new_figure",
    "progress_enabled",
    "registered",
    "require_extra",
    "run_experiment",
    "save_figure",
    "seed_everything",
    "read_table",
    "select",
    "track",
    "write_report",
]
