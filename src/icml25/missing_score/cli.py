"""``icml25 missing-score``: a sparse dependency graph from a CSV with missing values."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from icml25.core.cli_options import DropNA, on_missing_option

app = typer.Typer(help="Score matching and sparse graphical models from data with missing "
                  "values (Givens, Liu & Reeve, ICML 2025).", no_args_is_help=True)

OnMissing = on_missing_option(
    "keep", "keep hands missing cells to the estimator, which is made for them; drop fits on "
            "the complete rows only.")


@app.callback()
def _root() -> None:
    """Score matching and sparse graphical models from data with missing values."""


@app.command()
def graph(
    data: Annotated[Path, typer.Argument(
        help="CSV/TSV (or Parquet) file; empty cells, NA, NaN, null, ? are missing.")],
    method: Annotated[str, typer.Option(help="iw, variational, em, zeroed or complete.")] = "iw",
    alpha: Annotated[str, typer.Option(
        help="L1 penalty: 'auto' (default) chooses it along the path by --selection "
             "(MissingScoreGGMCV); a number fixes it.")] = "auto",
    selection: Annotated[str, typer.Option(
        help="How --alpha auto chooses: ebic (extended BIC of the observed-data Gaussian "
             "likelihood, one path fit; default), cv (Shao's cross-validation: each path "
             "point's edge set refitted by Gaussian likelihood on one of --cv folds and scored "
             "on the others by the held-out score-matching loss of the observed coordinates, "
             "preconditioned by the fold's covariance; the minimum) or cv-1se (the sparsest "
             "penalty within one standard error of that minimum) or stars (StARS stability "
             "selection: the path on --stars-subsamples row subsamples that keep their "
             "missing cells; the densest penalty whose edge instability stays under "
             "--stars-beta; about that many times the cost of ebic).")] = "ebic",
    stars_beta: Annotated[float, typer.Option(
        min=0.001, max=0.499, help="StARS instability bound (Liu et al.'s 0.05).")] = 0.05,
    stars_subsamples: Annotated[int, typer.Option(
        min=2, help="StARS row subsamples (each of 10 sqrt(n) rows, at most 80%).")] = 20,
    transform: Annotated[str, typer.Option(
        help="none | nonparanormal: replace each column's observed values by rank-based "
             "normal scores before fitting (skewed or heavy-tailed variables).")] = "none",
    ebic_gamma: Annotated[float, typer.Option(
        min=0.0, help="Extended-BIC gamma (0 = BIC; larger = sparser).")] = 0.5,
    cv: Annotated[int, typer.Option(min=2, help="Folds for --selection cv / cv-1se.")] = 5,
    cv_repeats: Annotated[int | None, typer.Option(
        min=1, help="K-fold splits (fresh shuffles) whose held-out losses --selection cv / "
                    "cv-1se averages, so the choice depends less on one split (default: "
                    "MissingScoreGGMCV's n_repeats).")] = None,
    cv_scheme: Annotated[str, typer.Option(
        help="shao (refit on one fold, score on the others; default) or kfold (refit on the "
             "others, score on one; needs fewer rows per fold).")] = "shao",
    n_alphas: Annotated[int | None, typer.Option(
        min=1, help="Penalties on the path (default 20 with --alpha auto, 30 otherwise).")]
    = None,
    positive_definite: Annotated[str, typer.Option(
        help="none | shift | eigen: project the precision onto positive-definite matrices "
             "(shift keeps the graph).")] = "none",
    seed: Annotated[int, typer.Option(min=0, help="Random seed.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the edge list as JSON.")] = False,
    figure: Annotated[Path | None, typer.Option(
        help="Where to write the graph + path figure (default: <data>_graph.png).")] = None,
    no_figure: Annotated[bool, typer.Option("--no-figure", help="Skip the figure.")] = False,
    on_missing: OnMissing = None,
    dropna: DropNA = False,
) -> None:
    """Estimate a sparse Gaussian graphical model from DATA without imputing it first."""
    import warnings

    import numpy as np

    from icml25.core.table import resolve_on_missing
    from icml25.missing_score.selection import SELECTIONS

    if selection not in SELECTIONS:
        typer.echo(f"error: --selection must be one of {', '.join(SELECTIONS)}, got "
                   f"{selection!r}", err=True)
        raise typer.Exit(2)
    from icml25.missing_score.io import read_table_with_missing

    try:
        sel = read_table_with_missing(data, resolve_on_missing(on_missing, dropna,
                                                               default="keep"))
    except (OSError, ValueError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    X, names = sel.X, sel.names
    if sel.dropped_lines:
        typer.echo(sel.dropped_report(), err=True)
    from icml25.missing_score import MissingScoreGGM, MissingScoreGGMCV

    pd = None if positive_definite == "none" else positive_definite
    from icml25.missing_score.transforms import TRANSFORMS

    tf = None if transform == "none" else transform
    if tf not in TRANSFORMS:
        typer.echo(f"error: --transform must be none or nonparanormal, got {transform!r}",
                   err=True)
        raise typer.Exit(2)
    auto = alpha.strip().lower() == "auto"
    if auto:
        extra = {} if cv_repeats is None else {"n_repeats": cv_repeats}
        est = MissingScoreGGMCV(method=method, alphas=n_alphas or 20, cv=cv,
                                selection=selection, ebic_gamma=ebic_gamma, scheme=cv_scheme,
                                stars_beta=stars_beta, stars_subsamples=stars_subsamples,
                                marginal_transform=tf, positive_definite=pd,
                                random_state=seed, **extra)
    else:
        try:
            alpha_value = float(alpha)
            if not alpha_value >= 0:
                raise ValueError
        except ValueError:
            typer.echo(f"error: --alpha must be 'auto' or a number >= 0, got {alpha!r}",
                       err=True)
            raise typer.Exit(2) from None
        est = MissingScoreGGM(method=method, alpha=alpha_value, n_alphas=n_alphas or 30,
                              marginal_transform=tf, positive_definite=pd, random_state=seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            est.fit(X)
        except (ValueError, TypeError, FloatingPointError) as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from exc
    for w in caught:
        if issubclass(w.category, UserWarning):
            typer.echo(f"warning: {w.message}", err=True)
    cv_report = None
    if auto:
        alpha_used = est.alpha_
        cv_report = {"selection": selection, "alphas": [float(a) for a in est.cv_alphas_]}
        if selection == "ebic":
            r = est.ebic_results_
            cv_report.update({"gamma": ebic_gamma, "ebic": _floats(r["ebic"]),
                              "n_edges": [int(k) for k in r["n_edges"]]})
        elif selection == "stars":
            r = est.stars_results_
            cv_report.update({"beta": r["beta"], "subsamples": r["n_subsamples"],
                              "subsample_size": r["subsample_size"],
                              "instability": _floats(r["instability"])})
        else:
            cv_report.update({"folds": cv, "repeats": est.n_repeats, "refit": est.refit,
                              "preconditioner": est.preconditioner, "scheme": est.scheme,
                              "mean_test_loss": _floats(est.cv_results_["mean_test_loss"]),
                              "std_test_loss": _floats(est.cv_results_["std_test_loss"])})
        est = est.best_estimator_
    else:
        alpha_used = alpha_value
    Pstd = est.precision_ * np.outer(est.scale_, est.scale_)
    d = len(names)
    pcorr = -Pstd / np.sqrt(np.outer(np.abs(np.diag(Pstd)), np.abs(np.diag(Pstd))))
    edges = [
        {"source": names[i], "target": names[j], "score": round(float(est.edge_scores_[i, j]), 6),
         "partial_correlation": round(float(pcorr[i, j]), 4)}
        for i in range(d) for j in range(i + 1, d) if abs(Pstd[i, j]) > est.threshold
    ]
    edges.sort(key=lambda e: -e["score"])
    fig_path = None
    if not no_figure:
        fig_path = (figure or data.with_name(data.stem + "_graph")).with_suffix(".png")
        _figure(est, names, pcorr, fig_path, alpha_used, cv_report)
    if as_json:
        typer.echo(json.dumps({"method": method, "alpha": alpha_used, "transform": tf,
                               "alpha_selection": selection if auto else "fixed",
                               "selection": cv_report,
                               # the key of earlier versions, for CV selections
                               "cv": cv_report if auto and selection in ("cv", "cv-1se")
                               else None,
                               "n_samples": int(X.shape[0]), "rows": sel.to_dict(),
                               "positive_definite_shift": float(est.pd_shift_),
                               "nodes": names, "edges": edges,
                               "figure": str(fig_path) if fig_path else None}, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    reps = "" if not auto or selection in ("ebic", "stars") or cv_report.get("repeats", 1) == 1 \
        else f" x {cv_report['repeats']} splits"
    how = {"ebic": f"extended BIC, gamma={ebic_gamma:g}",
           "stars": f"StARS, beta={stars_beta:g}, {stars_subsamples} subsamples",
           "cv": f"{cv}-fold{reps} {cv_scheme} CV",
           "cv-1se": f"{cv}-fold{reps} {cv_scheme} CV, one-SE rule"}.get(selection, selection)
    chosen = f"alpha={alpha_used:.4g}" + (f" (chosen by {how})" if auto else "")
    tf_note = f", {tf} transform" if tf else ""
    table = Table(title=f"{len(edges)} edge(s), method={method}{tf_note}, {chosen}, "
                  f"{X.shape[0]} rows, {np.isnan(X).mean():.0%} missing")
    for col in ("source", "target", "score", "partial corr."):
        table.add_column(col)
    for e in edges:
        table.add_row(e["source"], e["target"], f"{e['score']:.4f}",
                      f"{e['partial_correlation']:+.3f}")
    console = Console()
    console.print(table)
    if fig_path:
        console.print(f"figure: {fig_path}")


def _floats(values) -> list:
    """JSON-ready floats (inf / nan -> None)."""
    return [float(v) if v == v and abs(v) != float("inf") else None for v in values]


def _figure(est, names, pcorr, path: Path, alpha_used: float, cv_report=None) -> None:
    import numpy as np

    from icml25.core import new_figure, save_figure

    if cv_report:
        fig, (ax1, ax2, ax3) = new_figure(ncols=3, size=(16, 5))
    else:
        fig, (ax1, ax2) = new_figure(ncols=2, size=(11, 5))
    d = len(names)
    ang = 2 * np.pi * np.arange(d) / d
    xy = np.c_[np.cos(ang), np.sin(ang)]
    S = est.edge_scores_
    top = S.max() if S.max() > 0 else 1.0
    Pstd = est.precision_ * np.outer(est.scale_, est.scale_)
    for i in range(d):
        for j in range(i + 1, d):
            if abs(Pstd[i, j]) > est.threshold:
                ax1.plot(*xy[[i, j]].T, color="tab:red" if pcorr[i, j] < 0 else "tab:blue",
                         lw=0.5 + 3 * S[i, j] / top, alpha=0.7)
    ax1.scatter(*xy.T, s=60, color="black", zorder=3)
    for k, name in enumerate(names if d <= 40 else []):
        ax1.annotate(name, xy[k] * 1.12, ha="center", va="center", fontsize=8)
    ax1.set(title="edges at the final penalty (width = score)", aspect="equal")
    ax1.axis("off")
    iu = np.triu_indices(d, 1)
    paths = np.abs(est.path_ * np.outer(est.scale_, est.scale_))[:, iu[0], iu[1]]
    ax2.plot(est.alphas_, paths, lw=0.8)
    ax2.set(xscale="log", xlabel="L1 penalty", ylabel="|precision entry| (standardised)",
            title="regularisation path")
    ax2.axvline(alpha_used, color="k", ls=":", lw=1)
    ax2.invert_xaxis()
    if cv_report:
        if cv_report["selection"] == "ebic":
            ax3.plot(cv_report["alphas"], cv_report["ebic"], marker="o", ms=3)
            ax3.set(ylabel="extended BIC", title=f"extended BIC, gamma={cv_report['gamma']:g} "
                                                 "(likelihood refit)")
        elif cv_report["selection"] == "stars":
            ax3.plot(cv_report["alphas"], cv_report["instability"], marker="o", ms=3)
            ax3.axhline(cv_report["beta"], color="tab:red", ls="--", lw=1)
            ax3.set(ylabel="edge instability", title=f"StARS, {cv_report['subsamples']} "
                                                     f"subsamples of {cv_report['subsample_size']}")
        else:
            m, sd = np.asarray(cv_report["mean_test_loss"]), np.asarray(cv_report["std_test_loss"])
            ax3.errorbar(cv_report["alphas"], m, yerr=sd / np.sqrt(cv_report["folds"]),
                         marker="o", ms=3, capsize=2)
            ax3.set(ylabel="mean held-out loss (+- 1 s.e.)",
                    title=f"{cv_report['folds']}-fold CV, {cv_report['selection']} "
                          f"({cv_report['refit']} refit)")
        ax3.axvline(alpha_used, color="k", ls=":", lw=1, label=f"chosen {alpha_used:.3g}")
        ax3.set(xscale="log", xlabel="L1 penalty")
        ax3.invert_xaxis()
        from icml25.core.figures import legend_outside

        legend_outside(ax3, "below", fontsize=8)
    save_figure(fig, path)
