"""Figures shared by the reproductions and the CLI. Each function returns a matplotlib figure."""

from __future__ import annotations

import numpy as np
from scipy.special import ndtri

from icml25.core import new_figure
from icml25.worstoff.theory import par, policy_curve, value

__all__ = ["par_heatmap", "figure1", "recall_curves", "par_curves", "delta_alpha_curves"]


def par_heatmap(beta: float, *, d: float = 0.01, grid: int = 100, cost_ratio: float = 0.25):
    """PAR over (alpha, R^2) for one beta, as in the paper's Figures 2 and 7.

    Left: PAR; right: PAR times ``cost_ratio`` (access relatively more expensive). Colours are
    clipped to [0.5, 2] on a log scale; the dotted line is PAR = 1, the purple line V = 0.9.
    Returns ``(fig, data)`` with the grids.
    """
    from matplotlib.colors import LogNorm
    from matplotlib.ticker import NullFormatter

    alphas = np.linspace(0.01, 0.99 - d, grid)
    r2s = np.linspace(0.01, 0.99 - d, grid)
    A, R = np.meshgrid(alphas, r2s)
    P = np.asarray(par(A, beta, R, d, d))
    V = np.asarray(value(A, beta, R))
    fig, axes = new_figure(1, 2, size=(10.0, 4.2), constrained_layout=True)
    norm = LogNorm(vmin=0.5, vmax=2.0)
    for ax, scale, title in ((axes[0], 1.0, "PAR"),
                             (axes[1], cost_ratio, f"{cost_ratio:g} x PAR (cost-adjusted)")):
        Z = np.clip(P * scale, 0.5, 2.0)
        mesh = ax.pcolormesh(A, R, Z, cmap="RdBu_r", norm=norm, shading="auto")
        ax.contour(A, R, P * scale, levels=[1.0], colors="k", linestyles=":", linewidths=1.5)
        ax.contour(A, R, V, levels=[0.9], colors="#7B2CBF", linewidths=1.5)
        ax.axvline(beta, color="0.3", lw=0.8, ls="--")
        ax.set_xlabel(r"screening capacity $\alpha$")
        ax.set_ylabel(r"prediction quality $R^2$")
        ax.set_title(f"{title}, beta = {beta:g}, steps {d:g}")
        ax.grid(False)
    cbar = fig.colorbar(mesh, ax=axes, shrink=0.9, ticks=[0.5, 0.75, 1.0, 1.5, 2.0])
    cbar.ax.yaxis.set_minor_formatter(NullFormatter())
    cbar.ax.set_yticklabels(["<=0.5", "0.75", "1", "1.5", ">=2"])
    cbar.set_label("red: expand access; blue: improve prediction")
    fig.text(0.01, -0.04, "dotted: PAR = 1   purple: V = 0.9   dashed: alpha = beta",
             fontsize=9)
    return fig, {"alpha": alphas, "r2": r2s, "par": P, "value": V}


def figure1(alpha: float = 0.2, beta: float = 0.2, r2: float = 0.25, step: float = 0.2):
    """The paper's Figure 1: policy curves and recall for the base policy, more access, and
    better prediction."""
    cases = [("base", alpha, r2, "#000000"), (f"access +{step:g}", alpha + step, r2, "#D55E00"),
             (f"prediction +{step:g}", alpha, r2 + step, "#0072B2")]
    fig, (ax0, ax1) = new_figure(1, 2, size=(10.0, 3.8), constrained_layout=True)
    y = np.linspace(-3.5, 3.5, 400)
    b = float(ndtri(beta))
    for label, a, r, color in cases:
        v = value(a, beta, r)
        ax0.plot(y, policy_curve(y, a, r), color=color,
                 label=f"{label}: alpha={a:g}, R2={r:g}, V={v:.3f}")
    ax0.axvspan(-3.5, b, color="0.85", zorder=0)
    ax0.text(b - 0.1, 0.02, f"worst-off (lowest {beta:g})", ha="right", va="bottom", fontsize=9)
    ax0.set_xlabel("standardised outcome y")
    ax0.set_ylabel(r"P(screened | Y = y)")
    ax0.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=1)
    ax0.set_title("Policy curves")
    grid = np.linspace(0.005, 0.995, 300)
    ax1.plot(grid, value(grid, beta, r2), color="#000000", label=f"R2 = {r2:g}")
    ax1.plot(grid, value(grid, beta, r2 + step), color="#0072B2", label=f"R2 = {r2 + step:g}")
    for _label, a, r, color in cases:
        ax1.plot([a], [value(a, beta, r)], "o", color=color, ms=7)
        ax1.annotate(f"{value(a, beta, r):.3f}", (a, value(a, beta, r)),
                     textcoords="offset points", xytext=(6, -12), fontsize=9, color=color)
    ax1.set_xlabel(r"screening capacity $\alpha$")
    ax1.set_ylabel(f"recall on worst-off V (beta = {beta:g})")
    ax1.set_title("Value of the policy")
    ax1.legend(fontsize=8, loc="lower right")
    return fig


def recall_curves(alphas, curves: dict[str, dict[float, np.ndarray]], *, theory_r2=None,
                  title: str = "Recall on the worst-off"):
    """Recall vs alpha: ``curves[model][beta]``; optional Gaussian theory at ``theory_r2``."""
    betas = sorted({b for c in curves.values() for b in c})
    fig, axes = new_figure(1, len(betas), size=(3.6 * len(betas), 3.4), constrained_layout=True,
                           squeeze=False)
    styles = ["-", "--", ":"]
    for ax, beta in zip(axes[0], betas, strict=True):
        for (name, c), ls in zip(curves.items(), styles, strict=False):
            ax.plot(alphas, c[beta], ls, label=name)
        if theory_r2 is not None:
            ax.plot(alphas, value(np.clip(alphas, 1e-6, 1 - 1e-6), beta, theory_r2), color="0.5",
                    lw=1, label=f"Gaussian theory, R2={theory_r2:.2f}")
        ax.plot(alphas, alphas, color="0.7", lw=0.8, ls="-.", label="random screening")
        ax.axvline(beta, color="0.3", lw=0.8, ls="--")
        ax.set_title(f"beta = {beta:g}")
        ax.set_xlabel(r"screening capacity $\alpha$")
        ax.set_ylim(0, 1.02)
    axes[0][0].set_ylabel("recall V")
    axes[0][0].legend(fontsize=7, loc="lower right")
    fig.suptitle(title, fontsize=11)
    return fig


def par_curves(alphas, curves: dict[str, dict[float, np.ndarray]], *, title: str,
               bands: dict[str, dict[float, np.ndarray]] | None = None):
    """PAR vs alpha, one panel per R^2 regime (``curves[regime][beta]``), log y-axis; optional
    ``bands[regime][beta]`` ((k, 2) low/high rows, e.g. bootstrap intervals) are shaded."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    regimes = list(curves)
    fig, axes = new_figure(1, len(regimes), size=(3.6 * len(regimes), 3.4),
                           constrained_layout=True, squeeze=False)
    for ax, regime in zip(axes[0], regimes, strict=True):
        for beta, values in sorted(curves[regime].items()):
            v = np.asarray(values, dtype=float)
            (line,) = ax.plot(alphas, np.where(np.isfinite(v) & (v > 0), v, np.nan),
                              label=f"beta={beta:g}")
            band = (bands or {}).get(regime, {}).get(beta)
            if band is not None:
                b = np.asarray(band, dtype=float)
                lo = np.where(b[:, 0] > 0, b[:, 0], np.nan)
                hi = np.where(np.isfinite(b[:, 1]), b[:, 1], np.nan)
                ax.fill_between(alphas, lo, hi, color=line.get_color(), alpha=0.2, lw=0)
        ax.axhline(1.0, color="k", ls=":", lw=1)
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        if any(np.isinf(np.asarray(v, dtype=float)).any() for v in curves[regime].values()):
            ax.text(0.98, 0.97, "missing at small alpha: PAR = inf\n(better prediction adds "
                    "nothing)", transform=ax.transAxes, ha="right", va="top", fontsize=7)
        ax.set_title(regime)
        ax.set_xlabel(r"screening capacity $\alpha$")
    axes[0][0].set_ylabel("PAR (log scale)")
    axes[0][0].legend(fontsize=8)
    fig.suptitle(title, fontsize=11)
    return fig


def delta_alpha_curves(alphas, curves: dict[float, np.ndarray], *, title: str):
    """Delta-alpha* vs alpha per beta: extra screening the simpler model needs."""
    fig, ax = new_figure(size=(5.0, 3.6), constrained_layout=True)
    for beta, d in sorted(curves.items()):
        ax.plot(alphas, d, marker="o", ms=3, label=f"beta={beta:g}")
    ax.set_xlabel(r"screening capacity $\alpha$")
    ax.set_ylabel(r"extra capacity $\Delta\alpha^*$")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    return fig


def smoothed_par_curves(smooth: dict, raw: dict | None = None, *, title: str):
    """The smoothed empirical PAR per beta (``smooth[beta]``: a
    :class:`~icml25.worstoff.uncertainty.SmoothedPAR`) with its bootstrap band, and the raw
    PAR at its own alphas as points (``raw[beta] = (alphas, par)``); log y-axis."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    fig, ax = new_figure(size=(5.4, 3.8), constrained_layout=True)
    for beta, sm in sorted(smooth.items()):
        v = np.asarray(sm.par, dtype=float)
        (line,) = ax.plot(sm.alphas, np.where(np.isfinite(v) & (v > 0), v, np.nan),
                          label=f"beta={beta:g}")
        b = np.asarray(sm.par_ci, dtype=float)
        ax.fill_between(sm.alphas, np.where(b[:, 0] > 0, b[:, 0], np.nan),
                        np.where(np.isfinite(b[:, 1]), b[:, 1], np.nan),
                        color=line.get_color(), alpha=0.2, lw=0)
        if raw and beta in raw:
            a, p = (np.asarray(x, dtype=float) for x in raw[beta])
            ax.plot(a, np.where(np.isfinite(p) & (p > 0), p, np.nan), "o", ms=3,
                    color=line.get_color(), alpha=0.7)
    ax.axhline(1.0, color="k", ls=":", lw=1)
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(r"screening capacity $\alpha$")
    ax.set_ylabel("PAR (log scale)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    return fig


def annotate_warnings(fig, problems: list[str], *, width: int = 110):
    """Write ``problems`` (why the PAR is meaningless) in red across the top of ``fig``, so a
    figure shared without its table still says it."""
    import textwrap

    if not problems:
        return fig
    text = "\n".join(textwrap.fill("WARNING: " + p, width) for p in problems)
    fig.text(0.5, 0.5, text, ha="center", va="center", fontsize=7, color="darkred",
             wrap=True, bbox={"facecolor": "white", "alpha": 0.85, "edgecolor": "darkred"})
    return fig
