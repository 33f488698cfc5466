"""``icml25 conformal``: posterior risk bounds and threshold calibration from CSV files."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Annotated

import typer

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


def _emit(obj: dict) -> None:
    typer.echo(json.dumps(_plain(obj), indent=2))


def _fail(msg: str) -> None:
    typer.echo(f"error: {msg}", err=True)
    raise typer.Exit(code=2)


def _read_table(path: Path, header_row: bool | None = None
                ) -> tuple[list[str] | None, list[list[str]]]:
    """Rows of a CSV; the first row is a header if ``header_row`` (None: if not numeric)."""
    if not path.exists():
        _fail(f"no such file: {path}")
    with path.open(newline="") as fh:
        rows = [r for r in csv.reader(fh) if r and any(c.strip() for c in r)]
    if not rows:
        _fail(f"{path} is empty")
    if header_row is None:
        try:
            [float(c) for c in rows[0]]
            header_row = False
        except ValueError:
            header_row = True
    if header_row:
        return [c.strip() for c in rows[0]], rows[1:]
    return None, rows


def _read_column(path: Path, column: str | None) -> list[float]:
    """One number per line, or one column (by name or 0-based index) of a CSV."""
    header, rows = _read_table(path)
    if column is None:
        j = 0
        if any(len(r) > 1 for r in rows):
            _fail(f"{path} has several columns; choose one with --column")
    elif header is not None and column in header:
        j = header.index(column)
    else:
        try:
            j = int(column)
        except ValueError:
            _fail(f"no column {column!r} in {path} (header: {header})")
    try:
        return [float(r[j]) for r in rows]
    except (ValueError, IndexError):
        _fail(f"{path}: column {j} must hold one number per row")
    return []


@app.command()
def bound(
    losses: Annotated[Path, typer.Argument(help="File with one loss per line, or a CSV.")],
    alpha: AlphaOpt = 0.1,
    beta: BetaOpt = 0.95,
    bound: BoundOpt = 1.0,
    column: Annotated[str | None, typer.Option(help="CSV column (name or 0-based index).")] = None,
    draws: Annotated[int, typer.Option(min=1, help="Monte Carlo draws (no closed form).")] = 10_000,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the Monte Carlo draws.")] = 0,
) -> None:
    """Posterior of the risk bound L+ and the decision Pr(L+ <= alpha) >= beta, as JSON."""
    from icml25.conformal import RiskPosterior, minimum_calibration_size

    values = _read_column(losses, column)
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
) -> None:
    """Choose lambda from calibration losses (or scores) and print the decision as JSON."""
    import warnings

    import numpy as np

    from icml25.conformal import InfeasibleRiskWarning, calibrate, calibrate_scores

    caught: list[str] = []
    try:
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always", InfeasibleRiskWarning)
            if scores:
                res = calibrate_scores(_read_column(table, column), alpha, beta, method, bound,
                                       concentration=concentration, n_draws=draws)
            else:
                header, rows = _read_table(table, header_row=lambdas is None)
                if lambdas is not None:
                    grid = [float(v) for v in lambdas.split(",")]
                else:
                    try:
                        grid = [float(v) for v in header]
                    except ValueError:
                        _fail("the header must hold the lambda values (or pass --lambdas)")
                try:
                    arr = np.array([[float(c) for c in r] for r in rows])
                except ValueError:
                    _fail(f"{table}: every cell must be a number")
                res = calibrate(arr, np.array(grid), alpha, beta, method, bound,
                                direction=direction, concentration=concentration,
                                n_draws=draws)
            caught = [str(w.message) for w in rec if issubclass(w.category, InfeasibleRiskWarning)]
    except ValueError as exc:
        _fail(str(exc))
    out = res.summary()
    if caught:
        out["warning"] = caught[0]
        typer.echo(f"warning: {caught[0]}", err=True)
    _emit(out)


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
) -> None:
    """The paper's false-negative-rate experiment (Table 3) on your own score file."""
    from icml25.conformal.data import load_multilabel_scores
    from icml25.conformal.simulate import MethodSpec, run_multilabel

    try:
        s, y = load_multilabel_scores(score_file)
        methods = (MethodSpec("CRC", "crc"), MethodSpec("RCPS", "rcps"),
                   MethodSpec("BQ", "bq", n_draws=4_000))
        out = run_multilabel(s, y, n_cal, trials, alpha, beta, methods, rng=seed)
    except (ValueError, FileNotFoundError) as exc:
        _fail(str(exc))
    _emit({k: out[k]["summary"].row() for k in ("CRC", "RCPS", "BQ")})
