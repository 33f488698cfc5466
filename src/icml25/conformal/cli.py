"""``icml25 conformal``: posterior risk bounds and threshold calibration from CSV files."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated

import typer

from icml25.core.cli_options import DropNA, on_missing_option
from icml25.core.table import read_table, resolve_on_missing

app = typer.Typer(help="Conformal prediction as Bayesian quadrature: risk bounds and calibration.",
                  no_args_is_help=True, add_completion=False, rich_markup_mode=None,
                  pretty_exceptions_enable=False)

AlphaOpt = Annotated[float, typer.Option(help="Target risk alpha, in (0, 1).")]
BetaOpt = Annotated[float, typer.Option(help="Credibility / confidence beta, in (0, 1).")]
BoundOpt = Annotated[float, typer.Option(help="B, the largest possible loss.")]


def _plain(value):
    """JSON-safe: infinities become the strings 'inf' / '-inf', NumPy scalars plain numbers."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def _emit(obj: dict, warnings: tuple[str, ...] | list[str] = ()) -> None:
    """Print ``obj`` as JSON; the first warning also goes into it and to stderr."""
    if warnings:
        obj = {**obj, "warning": warnings[0]}
        typer.echo(f"warning: {warnings[0]}", err=True)
    typer.echo(json.dumps(_plain(obj), indent=2))


def _fail(msg: str) -> None:
    typer.echo(f"error: {msg}", err=True)
    raise typer.Exit(code=2)


OnMissing = on_missing_option(
    "error", "keep is refused: every loss, score, label and feature used must be a number.")
_NO_KEEP = "the conformal methods need a number in every cell they use"


def _policy(on_missing: str | None, dropna: bool) -> str:
    """--on-missing / --dropna resolved (default error; keep refused)."""
    try:
        return resolve_on_missing(on_missing, dropna, default="error", no_keep=_NO_KEEP)
    except ValueError as exc:
        _fail(str(exc))
    return "error"


def _read_table(path: Path, header_row: bool | None = None):
    """The file as an :class:`icml25.core.table.Table` (delimiter, decimal mark, BOM, quotes and
    missing tokens handled by the shared reader; the first row is a header if ``header_row``,
    None: if any of its cells is not a number)."""
    try:
        return read_table(path, header=header_row)
    except (OSError, ValueError) as exc:
        _fail(str(exc))


def _column_name(table, column: str) -> str:
    """A column of ``table`` by name, else by 0-based index (negative counts from the end)."""
    if column in table.columns:
        return column
    try:
        return table.columns[int(column)]
    except (ValueError, IndexError):
        shown = table.columns if table.has_header else f"{len(table.columns)} columns, no header"
        _fail(f"no column {column!r} in {table.path} ({shown})")
    return column


def _numeric(table, names: list[str] | None, policy: str):
    """The columns ``names`` (None: all) as floats after the missing-value policy; errors name
    the line, column and value; dropped rows are reported on stderr."""
    try:
        sel = table.numeric(names, on_missing=policy)
    except ValueError as exc:
        _fail(str(exc))
    if sel.dropped_lines:
        typer.echo(sel.dropped_report(), err=True)
    return sel


def _read_column(path: Path, column: str | None, policy: str = "error"):
    """One number per line, or one column (by name or 0-based index) of a table, as floats."""
    table = _read_table(path)
    if column is None:
        if len(table.columns) > 1:
            _fail(f"{path} has several columns; choose one with --column")
        name = table.columns[0]
    else:
        name = _column_name(table, column)
    return _numeric(table, [name], policy).column(name)


@app.command()
def bound(
    losses: Annotated[Path, typer.Argument(help="File with one loss per line, or a CSV.")],
    alpha: AlphaOpt = 0.1,
    beta: BetaOpt = 0.95,
    bound: BoundOpt = 1.0,
    column: Annotated[str | None, typer.Option(help="CSV column (name or 0-based index).")] = None,
    draws: Annotated[int, typer.Option(min=1, help="Monte Carlo draws (no closed form).")] = 10_000,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the Monte Carlo draws.")] = 0,
    on_missing: OnMissing = None,
    dropna: DropNA = False,
) -> None:
    """Posterior of the risk bound L+ and the decision Pr(L+ <= alpha) >= beta, as JSON."""
    from icml25.conformal import RiskPosterior, minimum_calibration_size

    values = _read_column(losses, column, _policy(on_missing, dropna)).tolist()
    try:
        post = RiskPosterior(values, bound, n_draws=draws, random_state=seed)
        n_min = minimum_calibration_size(alpha, beta, "bq", bound)
    except ValueError as exc:
        _fail(str(exc))
    out = post.summary(alpha=alpha, beta=beta)
    out["var"] = float(post.var)
    out["min_n"] = n_min
    ok = out["prob_below_alpha"] >= beta
    out["decision"] = (
        f"certified: Pr(risk <= {alpha:g}) = {out['prob_below_alpha']:.4f} >= {beta:g}" if ok else
        f"not certified: Pr(risk <= {alpha:g}) = {out['prob_below_alpha']:.4f} < {beta:g}"
        + (f" (n={post.n} is below the minimum {n_min} even for all-zero losses)"
           if post.n < n_min else ""))
    out["certified"] = ok
    _emit(out)


@app.command("calibrate")
def calibrate_cmd(
    table: Annotated[Path, typer.Argument(
        help="CSV: one row per calibration point, one column per lambda (header = lambda "
             "values); or, with --scores, one nonconformity score per row.")],
    alpha: AlphaOpt = 0.1,
    beta: BetaOpt = 0.95,
    bound: BoundOpt = 1.0,
    method: Annotated[str, typer.Option(help="bq, crc, rcps or split.")] = "bq",
    scores: Annotated[bool, typer.Option(
        "--scores", help="The file holds scores; predict {y : score <= lambda}.")] = False,
    lambdas: Annotated[str | None, typer.Option(
        help="Comma-separated lambdas if the CSV has no header.")] = None,
    direction: Annotated[str, typer.Option(help="auto, decreasing or increasing.")] = "auto",
    concentration: Annotated[str, typer.Option(help="RCPS bound: hb or hoeffding.")] = "hb",
    draws: Annotated[int, typer.Option(min=1, help="Monte Carlo draws.")] = 10_000,
    column: Annotated[str | None, typer.Option(help="Score column (with --scores).")] = None,
    on_missing: OnMissing = None,
    dropna: DropNA = False,
) -> None:
    """Choose lambda from calibration losses (or scores) and print the decision as JSON."""
    import warnings

    import numpy as np

    from icml25.conformal import InfeasibleRiskWarning, calibrate, calibrate_scores

    policy = _policy(on_missing, dropna)
    caught: list[str] = []
    try:
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always", InfeasibleRiskWarning)
            if scores:
                res = calibrate_scores(_read_column(table, column, policy).tolist(), alpha, beta,
                                       method, bound, concentration=concentration,
                                       n_draws=draws)
            else:
                tab = _read_table(table, header_row=lambdas is None)
                if lambdas is not None:
                    grid = [float(v) for v in lambdas.split(",")]
                else:
                    try:  # with ';' or tab between cells, a ',' is a decimal mark
                        grid = [float(v.replace(",", ".") if tab.delimiter != "," else v)
                                for v in tab.columns]
                    except ValueError:
                        _fail("the header must hold the lambda values (or pass --lambdas)")
                arr = _numeric(tab, None, policy).X
                res = calibrate(arr, np.array(grid), alpha, beta, method, bound,
                                direction=direction, concentration=concentration,
                                n_draws=draws)
            caught = [str(w.message) for w in rec if issubclass(w.category, InfeasibleRiskWarning)]
    except ValueError as exc:
        _fail(str(exc))
    out = res.summary()
    _emit(out, warnings=caught)


@app.command("min-n")
def min_n(
    alpha: AlphaOpt = 0.1,
    beta: BetaOpt = 0.95,
    bound: BoundOpt = 1.0,
    method: Annotated[str, typer.Option(help="bq, crc, rcps or split.")] = "bq",
    concentration: Annotated[str, typer.Option(help="RCPS bound: hb or hoeffding.")] = "hb",
) -> None:
    """Smallest calibration set for which the request can succeed at all."""
    from icml25.conformal import minimum_calibration_size

    try:
        n = minimum_calibration_size(alpha, beta, method, bound, concentration)
    except ValueError as exc:
        _fail(str(exc))
    _emit({"method": method, "alpha": alpha, "beta": beta, "bound": bound, "min_n": n})


@app.command()
def multilabel(
    score_file: Annotated[Path, typer.Argument(
        help=".npz with 'scores' and 'labels' (n x K), or CSV: K score then K label columns.")],
    alpha: AlphaOpt = 0.1,
    beta: BetaOpt = 0.95,
    n_cal: Annotated[int, typer.Option("--n", min=1, help="Calibration set size.")] = 1_000,
    trials: Annotated[int, typer.Option(min=1, help="Random calibration splits.")] = 1_000,
    seed: Annotated[int, typer.Option(min=0)] = 0,
    on_missing: OnMissing = None,
    dropna: DropNA = False,
) -> None:
    """The paper's false-negative-rate experiment (Table 3) on your own score file."""
    import warnings

    from icml25.conformal.data import DroppedRowsWarning, load_multilabel_scores
    from icml25.conformal.simulate import MethodSpec, run_multilabel

    policy = _policy(on_missing, dropna)
    try:
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always", DroppedRowsWarning)
            s, y = load_multilabel_scores(score_file, on_missing=policy)
        for w in rec:
            typer.echo(str(w.message), err=True)
        methods = (MethodSpec("CRC", "crc"), MethodSpec("RCPS", "rcps"),
                   MethodSpec("BQ", "bq", n_draws=4_000))
        out = run_multilabel(s, y, n_cal, trials, alpha, beta, methods, rng=seed)
    except (ValueError, FileNotFoundError) as exc:
        _fail(str(exc))
    _emit({k: out[k]["summary"].row() for k in ("CRC", "RCPS", "BQ")})


@app.command()
def adaptive(
    scores: Annotated[Path, typer.Argument(
        help="File with one conformity score per line (time order), or a CSV.")],
    alpha: AlphaOpt = 0.1,
    gamma: Annotated[float, typer.Option(
        help="ACI step size (ignored with --aggregated).")] = 0.005,
    window: Annotated[int | None, typer.Option(
        min=1, help="Calibrate on the last WINDOW scores only.")] = None,
    aggregated: Annotated[bool, typer.Option(
        "--aggregated", help="Aggregate experts over a range of step sizes (DtACI-style).")
    ] = False,
    column: Annotated[str | None, typer.Option(help="CSV column (name or 0-based index).")] = None,
    plot: Annotated[Path | None, typer.Option(help="Write a coverage-over-time PNG here.")] = None,
    roll: Annotated[int, typer.Option(min=1, help="Rolling window of the plot.")] = 200,
    on_missing: OnMissing = None,
    dropna: DropNA = False,
) -> None:
    """Adaptive conformal inference over a score series: long-run coverage, as JSON."""
    import numpy as np

    from icml25.conformal.adaptive import (
        AdaptiveConformal,
        AggregatedAdaptiveConformal,
        plot_coverage_over_time,
    )

    values = _read_column(scores, column, _policy(on_missing, dropna))
    try:
        model = (AggregatedAdaptiveConformal(alpha, window=window) if aggregated
                 else AdaptiveConformal(alpha, gamma, window=window))
        res = model.run(values)
    except ValueError as exc:
        _fail(str(exc))
    n_cal = min(500, max(1, values.size // 5))
    q_rank = math.ceil((1 - alpha) * (n_cal + 1))
    fixed = (float(np.mean(values[n_cal:] > np.sort(values[:n_cal])[q_rank - 1]))
             if q_rank <= n_cal and values.size > n_cal else None)
    out = {"steps": int(values.size), "alpha": alpha,
           "method": "aggregated ACI" if aggregated else f"ACI gamma={gamma:g}",
           "coverage": res.coverage, "long_run_error": float(res.errors.mean()),
           "bound": None if math.isnan(res.bound) else res.bound,
           "worst_rolling_coverage": float(res.rolling_coverage(roll)[roll:].min())
           if values.size > roll else None,
           "infinite_intervals": int(np.isinf(res.radius).sum()),
           "fixed_split_error_after_first_scores": fixed}
    if plot is not None:
        errs = {out["method"]: res}
        if fixed is not None:
            q = np.sort(values[:n_cal])[q_rank - 1]
            errs[f"split, calibrated once on the first {n_cal}"] = np.r_[
                np.zeros(n_cal), values[n_cal:] > q]
        ax = plot_coverage_over_time(errs, alpha, window=roll)
        ax.figure.savefig(plot, dpi=120, bbox_inches="tight")
        out["plot"] = str(plot)
    _emit(out)


@app.command()
def precision(
    table: Annotated[Path, typer.Argument(help="CSV with a score column and a 0/1 label column.")],
    alpha: Annotated[float, typer.Option(help="Allowed false-discovery rate (1 - precision).")
                     ] = 0.1,
    delta: Annotated[float, typer.Option(help="Family-wise error level.")] = 0.1,
    procedure: Annotated[str, typer.Option(
        help="fixed_sequence, bonferroni or holm.")] = "bonferroni",
    score_column: Annotated[str, typer.Option(help="Score column (name or index).")] = "0",
    label_column: Annotated[str, typer.Option(help="Label column (name or index).")] = "1",
    n_lambdas: Annotated[int, typer.Option(min=2, help="Candidate thresholds.")] = 50,
    on_missing: OnMissing = None,
    dropna: DropNA = False,
) -> None:
    """Learn-then-test: a score threshold with precision >= 1 - alpha w.p. >= 1 - delta."""
    import warnings

    from icml25.conformal import InfeasibleRiskWarning
    from icml25.conformal.ltt import PrecisionController

    tab = _read_table(table)
    names = [_column_name(tab, score_column), _column_name(tab, label_column)]
    sel = _numeric(tab, list(dict.fromkeys(names)), _policy(on_missing, dropna))
    s, y = sel.column(names[0]), sel.column(names[1])
    caught = []
    try:
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always", InfeasibleRiskWarning)
            ctl = PrecisionController(alpha, delta, procedure=procedure,
                                      n_lambdas=n_lambdas).fit(s, y)
        caught = [str(w.message) for w in rec if issubclass(w.category, InfeasibleRiskWarning)]
    except ValueError as exc:
        _fail(str(exc))
    pos = ctl.predict(s)
    out = {"alpha": alpha, "delta": delta, "procedure": procedure, "lambda": ctl.lambda_,
           "certified_lambdas": ctl.ltt_.valid_lambdas_.tolist(),
           "calibration_precision": float(y[pos].mean()) if pos.any() else None,
           "calibration_positives": int(pos.sum())}
    _emit(out, warnings=caught)


def _is_number(cell: str) -> bool:
    try:
        float(cell.replace(",", "."))
    except ValueError:
        return False
    return True


def _read_with_header(path: Path, header: bool | None):
    """A table whose header row is detected, or forced by ``--header`` / ``--no-header``.

    Detection: a first row of names only is a header, a first row of numbers only is data;
    a first row that mixes both (``y,2020,x3``, or a data row with a text id) is ambiguous and
    refused with a message naming the row and the two options.
    """
    if header is not None:
        return _read_table(path, header_row=header)
    raw = _read_table(path, header_row=False)
    first = [c[0] for c in raw.cells if c]
    numeric = [c for c in first if c == "" or _is_number(c)]
    if numeric and len(numeric) < len(first):
        _fail(f"{path}: cannot tell whether line {raw.lines[0]} ({', '.join(first[:6])}"
              f"{', ...' if len(first) > 6 else ''}) is a header: it mixes names and numbers. "
              "Pass --header (it names the columns) or --no-header (it is data).")
    return _read_table(path, header_row=not numeric)


def _pick(table, column: str, what: str) -> int:
    """0-based index of ``column`` (a name, or a 0-based index; negative counts from the end)."""
    if column in table.columns:
        return table.columns.index(column)
    try:
        j = int(column)
        table.columns[j]
    except (ValueError, IndexError):
        if not table.has_header:
            _fail(f"{table.path} has no header row (its first line is all numbers), so {what} "
                  f"{column!r} must be a 0-based column index (0 to {len(table.columns) - 1}); "
                  "or add a header line, or pass --header")
        _fail(f"no column {column!r} in {table.path} (header: {table.columns}); {what} takes "
              "a name or a 0-based index")
    return j % len(table.columns)


def _row_ids(table, sel, id_col: int | None) -> list[str]:
    """One id per kept row: the ``--id`` column's cell, else the row's line in the file."""
    if id_col is None:
        return [str(line) for line in sel.lines]
    where = {line: i for i, line in enumerate(table.lines)}
    ids = [table.cells[id_col][where[line]] for line in sel.lines]
    seen: set[str] = set()
    dup = next((v for v in ids if v in seen or seen.add(v)), None)
    if dup is not None:
        _fail(f"{table.path}: the id column {table.columns[id_col]!r} repeats {dup!r}; "
              "row ids must be unique")
    return ids


@app.command("cv-plus")
def cv_plus(
    train: Annotated[Path, typer.Argument(help="CSV: features and the target (header optional).")],
    target: Annotated[str, typer.Option(help="Target column: name or 0-based index.")],
    predict: Annotated[Path | None, typer.Option(
        help="CSV of rows to predict (same feature columns). Required.")] = None,
    cv: Annotated[str, typer.Option(help="Folds K (CV+) or 'jackknife+'.")] = "5",
    alpha: AlphaOpt = 0.1,
    method: Annotated[str, typer.Option(help="split (published CV+), crc, bq or rcps.")
                      ] = "split",
    id_column: Annotated[str | None, typer.Option(
        "--id", help="Column (name or 0-based index) holding row ids; it is not a feature. "
                     "Default: rows are keyed by their line in the --predict file.")] = None,
    header: Annotated[bool | None, typer.Option(
        "--header/--no-header", help="Whether the first line names the columns (default: "
                                     "detected; a first line mixing names and numbers is an "
                                     "error).")] = None,
    seed: Annotated[int, typer.Option(min=0)] = 0,
    on_missing: OnMissing = None,
    dropna: DropNA = False,
) -> None:
    """CV+ / jackknife+ intervals with a linear model (no separate calibration set), as JSON.

    ``intervals`` maps each row id of the --predict file (its line number, or its --id value)
    to [lower, upper], so rows dropped by --dropna cannot be mismatched.
    """

    from icml25.conformal import ConformalRegressor

    if predict is None:
        _fail("cv-plus needs --predict FILE: the rows to give intervals for (CV+ refits its "
              "fold models on TRAIN and has nothing to print without them)")
    policy = _policy(on_missing, dropna)
    tab = _read_with_header(train, header)
    j = _pick(tab, target, "--target")
    # --id names a column of the --predict file; a training column of that name is no feature
    k = (tab.columns.index(id_column) if id_column is not None and tab.has_header
         and id_column in tab.columns else None)
    if k == j:
        _fail("--id and --target name the same column")
    feat_idx = [i for i in range(len(tab.columns)) if i not in (j, k)]
    if not feat_idx:
        _fail(f"{train} has no feature column besides the target")
    names = [tab.columns[i] for i in feat_idx]
    sel = _numeric(tab, [*names, tab.columns[j]], policy)
    X, y = sel.X[:, :-1], sel.X[:, -1]
    folds = cv if cv == "jackknife+" else (int(cv) if cv.isdigit() else cv)
    try:
        reg = ConformalRegressor(method=method, alpha=alpha, cv=folds, random_state=seed).fit(X, y)
    except ValueError as exc:
        _fail(str(exc))
    out = {"n": int(y.size), "cv": folds, "method": method, "alpha": alpha,
           "rank": int(reg.cv_rank_), "infinite": bool(reg.cv_rank_ > y.size)}
    ptab = _read_with_header(predict, header)
    pk = None if id_column is None else _pick(ptab, id_column, "--id")
    if tab.has_header and ptab.has_header:
        missing = [f for f in names if f not in ptab.columns]
        if missing:
            _fail(f"{predict} must hold the feature columns {names} (it lacks {missing})")
        pnames = names
    else:  # positional: the features in training order, with or without the target column
        rest = [i for i in range(len(ptab.columns)) if i != pk]
        if len(rest) == len(feat_idx) + 1:
            rest = [c for c in rest if c != rest[j - sum(1 for i in (k,) if i is not None
                                                          and i < j)]]
        if len(rest) != len(feat_idx):
            _fail(f"{predict} has {len(ptab.columns)} columns; without a header on both files "
                  f"it must hold the {len(feat_idx)} features in training order (the target "
                  "column may stay in its place; an --id column is set aside)")
        pnames = [ptab.columns[i] for i in rest]
    psel = _numeric(ptab, pnames, policy)
    ids = _row_ids(ptab, psel, pk)
    iv = reg.predict_interval(psel.X)
    out["id"] = "line" if pk is None else ptab.columns[pk]
    out["intervals"] = dict(zip(ids, iv.tolist(), strict=True))
    _emit(out)
