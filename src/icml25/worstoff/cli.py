"""``icml25 worstoff``: prediction vs access for targeting the worst-off."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import numpy as np
import typer

from icml25.core.cli_options import DropNA, on_missing_option

app = typer.Typer(
    help="Value of prediction vs access in identifying the worst-off (PAR).",
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)


def _fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code=2)


@app.command("par")
def par_cmd(
    alpha: Annotated[float, typer.Option(help="Screening capacity (fraction screened).")],
    beta: Annotated[float, typer.Option(help="Target fraction (the worst-off).")],
    r2: Annotated[float, typer.Option(help="R^2 of the predictor.")],
    d_alpha: Annotated[float, typer.Option(help="Step in capacity.")] = 0.01,
    d_r2: Annotated[float, typer.Option(help="Step in R^2.")] = 0.01,
    cost_ratio: Annotated[float | None, typer.Option(
        help="Cost of one access step / cost of one prediction step: prints the decision.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Value, PAR and local PAR of the Gaussian model at one point."""
    from icml25.worstoff.theory import dvalue_dalpha, dvalue_dr2, local_par, par, value

    try:
        pr = par(alpha, beta, r2, d_alpha, d_r2)  # validates every argument first
        out = {
            "alpha": alpha, "beta": beta, "r2": r2, "d_alpha": d_alpha, "d_r2": d_r2,
            "value": value(alpha, beta, r2),
            "value_more_access": value(alpha + d_alpha, beta, r2) if alpha + d_alpha < 1
            else 1.0,
            "value_better_prediction": value(alpha, beta, min(r2 + d_r2, 1.0)),
            "par": pr,
            "local_par": local_par(alpha, beta, r2),
            "dvalue_dalpha": dvalue_dalpha(alpha, beta, r2),
            "dvalue_dr2": dvalue_dr2(alpha, beta, r2),
        }
    except ValueError as exc:
        raise _fail(str(exc)) from None
    if cost_ratio is not None:
        out["cost_ratio"] = cost_ratio
        out["decision"] = "expand access" if cost_ratio < out["par"] else "improve prediction"
    if as_json:
        typer.echo(json.dumps(out))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table("quantity", "value", title=f"alpha={alpha:g}, beta={beta:g}, R2={r2:g}")
    for key, v in out.items():
        table.add_row(key, f"{v:.6g}" if isinstance(v, float) else str(v))
    Console().print(table)
    typer.echo("Rule: expand access iff (cost of access step / cost of prediction step) < PAR.")


@app.command()
def heatmap(
    beta: Annotated[float, typer.Option(help="Target fraction.")] = 0.2,
    out: Annotated[Path, typer.Option("-o", "--out", help="PNG to write.")] = Path(
        "par_heatmap.png"),
    step: Annotated[float, typer.Option(help="d_alpha = d_r2.")] = 0.01,
    grid: Annotated[int, typer.Option(min=10, max=1000, help="Grid points per axis.")] = 150,
    cost_ratio: Annotated[float, typer.Option(help="Scale of the second panel.")] = 0.25,
) -> None:
    """PAR heatmap over (alpha, R^2) for one beta (the paper's Figure 2)."""
    from icml25.core import save_figure
    from icml25.worstoff.plots import par_heatmap

    if not 0 < beta < 1:
        raise _fail(f"beta must lie in (0, 1), got {beta}")
    if not 0 < step < 0.5:
        raise _fail(f"step must lie in (0, 0.5), got {step}")
    fig, _ = par_heatmap(beta, d=step, grid=grid, cost_ratio=cost_ratio)
    path = save_figure(fig, out)
    typer.echo(f"wrote {path}")


_NO_KEEP = "recall and PAR need an outcome and a prediction on every row"
OnMissing = on_missing_option("error", f"keep is refused: {_NO_KEEP}.")


def _read_columns(path: Path, columns: list[str], on_missing: str | None, dropna: bool):
    """The numeric columns of a CSV/TSV/Parquet file (icml25.core.read_table), after the
    missing-value policy; exits with a message naming line, column and value on bad input."""
    from icml25.core.table import read_table, resolve_on_missing

    try:
        policy = resolve_on_missing(on_missing, dropna, default="error", no_keep=_NO_KEEP)
        table = read_table(path)
        return table.numeric(columns, on_missing=policy)
    except (OSError, ValueError) as exc:
        raise _fail(str(exc)) from None


def _fmt_ci(ci, digits: str = ".3f") -> str:
    def f(v) -> str:
        return "inf" if v == float("inf") else "nan" if v != v else format(v, digits)

    return f"[{f(ci[0])}, {f(ci[1])}]"


@app.command()
def evaluate(
    data: Annotated[Path, typer.Argument(
        help="CSV/TSV (or Parquet) file with outcome and prediction columns.")],
    outcome: Annotated[str, typer.Option(help="Outcome column.")],
    prediction: Annotated[str, typer.Option(help="Prediction column.")],
    baseline: Annotated[str | None, typer.Option(
        help="A simpler model's prediction column (for Delta-alpha*).")] = None,
    beta: Annotated[list[float] | None, typer.Option(
        help="Target fraction(s); repeat the option (default 0.05, 0.15, 0.25).")] = None,
    higher_is_worse: Annotated[bool, typer.Option(
        help="Higher outcomes are worse (e.g. unemployment duration).")] = False,
    d_alpha: Annotated[float, typer.Option(help="Capacity step for PAR.")] = 0.1,
    d_r2: Annotated[float, typer.Option(help="R^2 step for PAR.")] = 0.1,
    n_boot: Annotated[int, typer.Option(
        "--n-boot", min=10, help="Bootstrap resamples for the intervals.")] = 1000,
    level: Annotated[float, typer.Option(
        min=0.5, max=0.999, help="Confidence level of the percentile intervals.")] = 0.95,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the bootstrap.")] = 0,
    smooth: Annotated[float, typer.Option(
        min=0.0, max=0.5, help="Bandwidth (in alpha) of the smoothed PAR curve and its "
                               "bootstrap band; 0 skips it.")] = 0.05,
    out: Annotated[Path, typer.Option("--out", help="Folder for the figures and report.html.")]
    = Path(
        "worstoff-evaluation"),
    on_missing: OnMissing = None,
    dropna: DropNA = False,
    recalibrate: Annotated[bool, typer.Option(
        "--recalibrate/--no-recalibrate",
        help="Put the predictions on the outcome's scale first (least-squares line of the "
             "outcome on the prediction; the ranking is unchanged) so that R2, the better "
             "model and the PAR do not depend on the predictions' units.")] = True,
    as_json: Annotated[bool, typer.Option(
        "--json", help="Print the figures and their intervals as JSON (each *_ci key holds "
                       "a low, high pair).")]
    = False,
) -> None:
    """Recall curves, capacity for a target recall, empirical PAR (and Delta-alpha*) for your
    own outcomes and predictions, with seeded percentile-bootstrap intervals and a smoothed PAR
    curve with a band; prints a table (or JSON) and writes figures and an HTML report."""
    import numpy as np
    from rich.console import Console
    from rich.table import Table

    from icml25.core import save_figure
    from icml25.worstoff.empirical import empirical_value, r2_score, recalibration
    from icml25.worstoff.plots import (
        annotate_warnings,
        delta_alpha_curves,
        par_curves,
        recall_curves,
        smoothed_par_curves,
    )
    from icml25.worstoff.uncertainty import (
        bootstrap_delta_alpha_star,
        bootstrap_evaluation,
        predictor_problems,
        smoothed_par,
    )

    beta = beta or [0.05, 0.15, 0.25]
    cols = [outcome, prediction] + ([baseline] if baseline else [])
    sel = _read_columns(data, cols, on_missing, dropna)
    y = sel.column(outcome)
    yhat = sel.column(prediction)
    base = sel.column(baseline) if baseline else None
    lower = not higher_is_worse
    alphas = np.round(np.arange(0.05, min(0.95, 1 - d_alpha) + 1e-9, 0.05), 2)
    grid = np.linspace(0, 1, 201)
    targets = [0.5, 0.75, 0.9]
    try:
        for b in beta:
            if not 0 < b < 1:
                raise ValueError(f"beta must lie in (0, 1), got {b}")
        r2_raw = r2_score(y, yhat)
        intercept, slope, applied = recalibration(y, yhat) if recalibrate else (0.0, 1.0,
                                                                                 False)
        yhat = intercept + slope * yhat  # the ranking (every recall) is unchanged
        if base is not None and recalibrate:
            a0, b0, _ = recalibration(y, base)
            base = a0 + b0 * base
        r2 = r2_score(y, yhat)
        problems = predictor_problems(y, yhat)
        evals = {b: bootstrap_evaluation(y, yhat, alphas, b, d_alpha, d_r2,
                                         recall_targets=targets, n_boot=n_boot, level=level,
                                         seed=seed, lower_is_worse=lower, warn=False,
                                         recalibrate=False)
                 for b in beta}
        smooths = {}
        if smooth > 0:
            top = 1 - d_alpha
            fine = np.linspace(0.02, top - 0.02, 60) if top > 0.05 else np.array([top / 2])
            at = np.unique(np.concatenate([fine, alphas[alphas <= top + 1e-12]]))
            smooths = {b: smoothed_par(y, yhat, b, d_alpha, d_r2, alphas=at, bandwidth=smooth,
                                       n_boot=n_boot, level=level, seed=seed,
                                       lower_is_worse=lower, warn=False, recalibrate=False)
                       for b in beta}
        recall = {b: empirical_value(y, yhat, grid, b, lower_is_worse=lower) for b in beta}
        curves = {f"prediction (R2={r2:.3f})": recall}
        stars = {}
        if base is not None:
            curves[f"baseline (R2={r2_score(y, base):.3f})"] = {
                b: empirical_value(y, base, grid, b, lower_is_worse=lower) for b in beta}
            # (Delta-alpha*, its interval) per beta
            stars = {b: bootstrap_delta_alpha_star(y, yhat, base, alphas, b, n_boot=n_boot,
                                                   level=level, seed=seed,
                                                   lower_is_worse=lower)
                     for b in beta}
    except ValueError as exc:
        raise _fail(str(exc)) from None

    for problem in problems:
        typer.echo(f"warning: {problem}", err=True)
    out.mkdir(parents=True, exist_ok=True)
    regime = f"R2 = {r2:.3f}"
    flag = " (MEANINGLESS: see warnings)" if problems else ""
    figs = {"recall_vs_alpha": recall_curves(grid, curves, title="Recall on the worst-off"),
            "par": par_curves(alphas, {regime: {b: e.par for b, e in evals.items()}},
                              bands={regime: {b: e.par_ci for b, e in evals.items()}},
                              title=f"Empirical PAR, steps {d_alpha:g}/{d_r2:g}, "
                                    f"{level:.0%} bootstrap band" + flag)}
    if smooths:
        figs["par_smoothed"] = smoothed_par_curves(
            smooths, {b: (e.alphas, e.par) for b, e in evals.items()},
            title=f"Smoothed PAR (bandwidth {smooth:g}), {regime}, {level:.0%} bootstrap band"
                  f"; points: raw PAR" + flag)
    if stars:
        figs["delta_alpha_star"] = delta_alpha_curves(
            alphas, {b: v for b, (v, _) in stars.items()},
            title="Extra capacity the baseline needs")
    written = [save_figure(annotate_warnings(fig, problems), out / name)
               for name, fig in figs.items()]
    written.append(_html_report(out / "report.html", data, y.size, r2, evals, smooths, stars,
                                problems, sel, level=level, n_boot=n_boot, seed=seed,
                                higher_is_worse=higher_is_worse, figures=list(written)))
    recal = {"requested": recalibrate, "applied": applied, "intercept": intercept,
             "slope": slope, "r2_raw": r2_raw}
    if as_json:
        r2_ci = next(iter(evals.values())).r2_ci
        doc = {
            "n": int(y.size), "rows": sel.to_dict(), "r2": r2,
            "r2_ci": [float(r2_ci[0]), float(r2_ci[1])], "recalibration": recal,
            "worst_off": "highest" if higher_is_worse else "lowest",
            "n_boot": n_boot, "level": level, "seed": seed,
            "meaningful": not problems, "warnings": problems,
            "betas": [],
            "figures": [str(p) for p in written],
        }
        for b, ev in evals.items():
            d = ev.to_dict()
            for k in ("n", "n_boot", "level", "seed", "r2", "r2_ci", "recalibration"):
                d.pop(k)
            if stars:
                v, vci = stars[b]
                d["delta_alpha_star"] = [None if not np.isfinite(x) else float(x) for x in v]
                d["delta_alpha_star_ci"] = [[None if not np.isfinite(x) else float(x)
                                             for x in row] for row in vci]
            if smooths:
                d["par_smooth"] = smooths[b].to_dict()
            doc["betas"].append(d)
        typer.echo(json.dumps(doc, indent=2))
        return

    import sys

    console = Console(width=None if sys.stdout.isatty() else 200)
    if sel.dropped_lines:
        console.print(sel.dropped_report())
    r2_ci = next(iter(evals.values())).r2_ci
    console.print(f"n = {y.size:,}, R2 = {r2:.4f} {_fmt_ci(r2_ci, '.4f')}, worst-off = "
                  f"{'highest' if higher_is_worse else 'lowest'} outcomes; intervals: "
                  f"{level:.0%} percentile bootstrap, {n_boot} resamples, seed {seed}")
    if applied:
        console.print(f"predictions recalibrated onto the outcome's scale: outcome ~ "
                      f"{intercept:.4g} + {slope:.4g} x prediction (raw R2 {r2_raw:.4f}; "
                      "ranking unchanged; --no-recalibrate uses them as given)")
    if problems:
        console.print("The PAR is meaningless for this predictor (see the warnings); it is "
                      "shown for completeness only and no lever is recommended.")
    for b, ev in evals.items():
        cap = " / ".join(f"{c:.3f} {_fmt_ci(ci)}"
                         for c, ci in zip(ev.capacity, ev.capacity_ci, strict=True))
        sm = smooths.get(b)
        kind = f"smoothed PAR (bandwidth {smooth:g})" if sm is not None else "PAR"
        par_head = kind + (" MEANINGLESS" if problems else "")
        table = Table("alpha", "recall", "recall CI", f"recall at +{d_alpha:g} (CI)",
                      f"recall, R2+{d_r2:g} (CI)", f"{par_head} (CI)",
                      *(["what the interval supports (equal costs)"] if not problems else []),
                      *(["Delta-alpha* (CI)"] if stars else []),
                      title=f"beta = {b:g}; capacity for 50/75/90% recall: {cap}")
        verdicts = _row_verdicts(ev, sm)
        for i, a in enumerate(alphas):
            row = [f"{a:.2f}", f"{ev.recall[i]:.3f}", _fmt_ci(ev.recall_ci[i]),
                   f"{ev.recall_more_access[i]:.3f} {_fmt_ci(ev.recall_more_access_ci[i])}",
                   f"{ev.recall_better_prediction[i]:.3f} "
                   f"{_fmt_ci(ev.recall_better_prediction_ci[i])}",
                   _par_cell(ev, sm, i)]
            if not problems:
                row.append(verdicts[i])
            if stars:
                row.append(f"{stars[b][0][i]:.3f} {_fmt_ci(stars[b][1][i])}")
            table.add_row(*row)
        console.print(table)
    if not problems:
        console.print(f"PAR: the recall a capacity step of {d_alpha:g} buys over the recall "
                      f"an R2 step of {d_r2:g} buys"
                      + (f", averaged over neighbouring capacities (bandwidth {smooth:g})"
                         if smooths else "") +
                      ". 'expand access' when the whole interval is above 1, 'improve "
                      "prediction' when it is below 1, 'unclear' when it contains 1, 'neither' "
                      "when recall is saturated. With unequal costs, expand access iff "
                      "cost(access step) / cost(prediction step) < PAR. The raw per-alpha "
                      "PAR is in the JSON output and report.html.")
    for path in written:
        console.print(f"wrote {path}")


@app.command()
def levers(
    data: Annotated[Path, typer.Argument(
        help="CSV/TSV (or Parquet) file with outcome and prediction columns.")],
    outcome: Annotated[str, typer.Option(help="Outcome column.")],
    prediction: Annotated[str, typer.Option(help="Prediction column.")],
    alpha: Annotated[float, typer.Option(help="Current capacity (fraction screened).")],
    budget: Annotated[float, typer.Option(help="Money to spend across the levers.")],
    capacity_cost: Annotated[float | None, typer.Option(
        help="Cost of screening the whole population once more (n x cost per person); "
             "omit to leave the capacity lever out.")] = None,
    prediction_cost: Annotated[float | None, typer.Option(
        help="Cost per unit of R2 of a better model (a 0.05 gain costs 0.05 x this); omit "
             "to leave it out.")] = None,
    subgroup: Annotated[str | None, typer.Option(
        help="A 0/1 column: the people whose predictions the subgroup lever improves.")]
    = None,
    subgroup_cost: Annotated[float | None, typer.Option(
        help="Cost per unit of overall R2 gained by improving the subgroup only.")] = None,
    objective: Annotated[str, typer.Option(
        help="recall (share of the worst-off screened) or crra (mean CRRA welfare gain of "
             "a --benefit transfer to everyone screened; positive outcomes).")] = "recall",
    beta: Annotated[float, typer.Option(help="Worst-off fraction (recall).")] = 0.2,
    benefit: Annotated[float, typer.Option(help="Transfer per screened person (crra).")]
    = 1.0,
    rho: Annotated[float, typer.Option(help="CRRA relative risk aversion (1 = log).")] = 2.0,
    steps: Annotated[int, typer.Option(min=1, max=200, help="Budget resolution.")] = 20,
    higher_is_worse: Annotated[bool, typer.Option(
        help="Higher outcomes are worse (recall only).")] = False,
    recalibrate: Annotated[bool, typer.Option(
        "--recalibrate/--no-recalibrate",
        help="Put the predictions on the outcome's scale first.")] = True,
    on_missing: OnMissing = None,
    dropna: DropNA = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Split a budget across wider screening, a better model and a better model for one
    subgroup; report each lever's equivalent cost."""
    from icml25.worstoff.levers import allocate_budget

    costs = {k: v for k, v in (("capacity", capacity_cost), ("prediction", prediction_cost),
                               ("subgroup", subgroup_cost)) if v is not None}
    if not costs:
        raise _fail("give the cost of at least one lever (--capacity-cost, --prediction-cost, "
                    "--subgroup-cost)")
    if ("subgroup" in costs) != (subgroup is not None):
        raise _fail("--subgroup and --subgroup-cost go together")
    cols = [outcome, prediction] + ([subgroup] if subgroup else [])
    sel = _read_columns(data, cols, on_missing, dropna)
    try:
        res = allocate_budget(
            sel.column(outcome), sel.column(prediction), alpha, budget, costs,
            subgroup=sel.column(subgroup) if subgroup else None, objective=objective,
            beta=beta, benefit=benefit, rho=rho, steps=steps, recalibrate=recalibrate,
            lower_is_worse=not higher_is_worse)
    except ValueError as exc:
        raise _fail(str(exc)) from None
    if as_json:
        typer.echo(json.dumps(res.to_dict(), indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    what = "recall" if objective == "recall" else f"CRRA welfare (rho={rho:g}, b={benefit:g})"
    table = Table("lever", "unit cost", "spend", "amount", f"{what}, whole budget on it",
                  "equivalent cost",
                  title=f"budget {budget:g} at alpha = {alpha:g}: {what} "
                        f"{res.baseline_welfare:.4g} -> {res.welfare:.4g}")
    for k in res.levers:
        eq = res.equivalent_cost[k]
        table.add_row(k, f"{res.unit_costs[k]:g}", f"{res.spend[k]:g}",
                      f"{res.theta[k]:.4g}", f"{res.single_lever_welfare[k]:.4g}",
                      "out of reach" if not np.isfinite(eq) else f"{eq:.4g}")
    console = Console()
    console.print(table)
    console.print("amount: capacity in fraction of the population, prediction/subgroup in "
                  "overall R2. equivalent cost: what the lever alone must be given to reach "
                  "the best split's welfare ('out of reach': not even at its limit).")


def _fmt_par(v: float) -> str:
    if v != v:
        return "undefined"
    return "unbounded" if v == float("inf") else f"{v:.3g}"


def _smooth_index(ev, sm, i: int):
    if sm is None:
        return None
    j = np.flatnonzero(np.isclose(sm.alphas, ev.alphas[i]))
    return int(j[0]) if j.size else None


def _par_cell(ev, sm, i: int) -> str:
    """The smoothed PAR and its interval at row ``i`` (only the raw interval when there is
    no smoothed curve: a raw point estimate jumps between neighbouring capacities)."""
    j = _smooth_index(ev, sm, i)
    if j is None:
        return f"interval {_fmt_ci(ev.par_ci[i], '.3g')}"
    lo, hi = sm.par_ci[j]
    return f"{_fmt_par(sm.par[j])} [{_fmt_par(lo)}, {_fmt_par(hi)}]"


def _row_verdicts(ev, sm) -> list[str]:
    from icml25.worstoff.uncertainty import par_verdict

    out = []
    for i in range(ev.alphas.size):
        j = _smooth_index(ev, sm, i)
        if j is None:
            lo, hi = ev.par_ci[i]
            sat = ev.access_gain_ci[i, 1] <= 0 and ev.prediction_gain_ci[i, 1] <= 0
        else:
            lo, hi = sm.par_ci[j]
            sat = sm.access_gain_ci[j, 1] <= 0 and sm.prediction_gain_ci[j, 1] <= 0
        out.append(par_verdict(lo, hi, saturated=bool(sat)))
    return out


def _html_report(path: Path, data: Path, n: int, r2: float, evals: dict, smooths: dict,
                 stars: dict, problems: list[str], sel, *, level: float, n_boot: int, seed: int,
                 higher_is_worse: bool, figures: list[Path]) -> Path:
    """One page: the warnings first, every figure with its interval, the tables."""
    from html import escape

    import numpy as np

    def ci(pair, digits=".3f"):
        return "[" + ", ".join("inf" if not np.isfinite(v) else format(v, digits)
                               for v in pair) + "]"

    r2_ci = next(iter(evals.values())).r2_ci
    parts = [f"<h1>worstoff evaluate: {escape(str(data))}</h1>",
             f"<p>n = {n:,}, R<sup>2</sup> = {r2:.4f} {ci(r2_ci, '.4f')}; worst-off = "
             f"{'highest' if higher_is_worse else 'lowest'} outcomes; intervals: {level:.0%} "
             f"percentile bootstrap, {n_boot} resamples, seed {seed}.</p>"]
    if sel.dropped_lines:
        parts.append(f"<p>{escape(sel.dropped_report())}</p>")
    if problems:
        parts.append('<div class="warning" style="border:2px solid darkred;padding:.5em;'
                     'color:darkred"><b>The PAR is meaningless for this predictor; no lever is '
                     "recommended.</b><ul>"
                     + "".join(f"<li>{escape(p)}</li>" for p in problems) + "</ul></div>")
    for b, ev in evals.items():
        sm = smooths.get(b)
        head = ["alpha", "recall", "recall CI", "recall one capacity step later (CI)",
                "recall of the better model (CI)", "PAR", "PAR CI"]
        if sm is not None:
            head += ["smoothed PAR", "smoothed PAR CI"]
        if not problems:
            head.append("lever (equal costs)")
        if stars:
            head.append("Delta-alpha* (CI)")
        rows = []
        levers = ev.lever()
        for i, a in enumerate(ev.alphas):
            cells = [f"{a:.2f}", f"{ev.recall[i]:.3f}", ci(ev.recall_ci[i]),
                     f"{ev.recall_more_access[i]:.3f} {ci(ev.recall_more_access_ci[i])}",
                     f"{ev.recall_better_prediction[i]:.3f} "
                     f"{ci(ev.recall_better_prediction_ci[i])}",
                     f"{ev.par[i]:.3g}", ci(ev.par_ci[i], ".3g")]
            if sm is not None:
                j = np.flatnonzero(np.isclose(sm.alphas, a))
                cells += ([f"{sm.par[j[0]]:.3g}", ci(sm.par_ci[j[0]], ".3g")] if j.size
                          else ["", ""])
            if not problems:
                cells.append(str(levers[i]))
            if stars:
                cells.append(f"{stars[b][0][i]:.3f} {ci(stars[b][1][i])}")
            rows.append("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in cells) + "</tr>")
        cap = " / ".join(f"{c:.3f} {ci(x)}"
                         for c, x in zip(ev.capacity, ev.capacity_ci, strict=True))
        targets = "/".join(f"{t:.0%}" for t in ev.recall_targets)
        parts.append(f"<h2>beta = {b:g}</h2><p>capacity for {targets} recall: {cap}</p>"
                     "<table border=1 cellspacing=0 cellpadding=3><tr>"
                     + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr>"
                     + "".join(rows) + "</table>")
    for fig in figures:
        parts.append(f'<p><img src="{escape(fig.name)}" style="max-width:100%"></p>')
    path.write_text("<!doctype html><meta charset=utf-8><title>worstoff evaluate</title>"
                    '<body style="font-family:sans-serif">' + "\n".join(parts)
                    + "</body>\n", encoding="utf-8")
    return path
