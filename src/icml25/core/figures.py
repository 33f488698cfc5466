"""Figures in one house style, drawn off-screen (Agg) and saved as PNG."""

from __future__ import annotations

from pathlib import Path
from typing import Any

HOUSE_STYLE: dict[str, Any] = {
    "figure.dpi": 110,
    "savefig.dpi": 130,
    "savefig.bbox": "tight",
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "legend.frameon": False,
}
# Okabe–Ito, safe for colour-blind readers.
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"]


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    from cycler import cycler

    style = dict(HOUSE_STYLE, **{"axes.prop_cycle": cycler(color=PALETTE)})
    plt.rcParams.update(style)
    return plt


def new_figure(nrows: int = 1, ncols: int = 1, *, size: tuple[float, float] | None = None, **kw):
    """``(fig, axes)`` like ``plt.subplots`` with the house style applied."""
    plt = _pyplot()
    size = size or (4.2 * ncols, 3.2 * nrows)
    return plt.subplots(nrows, ncols, figsize=size, squeeze=kw.pop("squeeze", True), **kw)


def save_figure(fig, path: str | Path) -> Path:
    """Save ``fig`` as PNG at ``path`` (parents created) and close it."""
    plt = _pyplot()
    path = Path(path).with_suffix(".png")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def legend_outside(ax, where: str = "right", **kw):
    """A legend beside the axes (``where="right"``) or under them (``"below"``), never on the
    data; ``save_figure`` (tight bounding box) keeps it in the PNG. Extra keywords go to
    ``ax.legend``. Returns the legend, or None when nothing is labelled.
    """
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return None
    if where == "right":
        place = {"loc": "upper left", "bbox_to_anchor": (1.02, 1.0), "borderaxespad": 0.0}
    elif where == "below":
        place = {"loc": "upper center", "bbox_to_anchor": (0.5, -0.18),
                 "ncol": min(len(handles), kw.pop("ncol", 3)), "borderaxespad": 0.0}
    else:
        raise ValueError(f"where must be 'right' or 'below', got {where!r}")
    return ax.legend(handles, labels, **{**place, **kw})
