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
    """``(fig, axes)`` like ``plt.subplots`` with the house style applied.

    The Agg backend is used (off-screen); the house style sets sizes, grid and an Okabe–Ito
    colour cycle.

    Parameters
    ----------
    nrows : int, default=1
        Rows of subplots.
    ncols : int, default=1
        Columns of subplots.
    size : tuple of (float, float) or None, default=None
        Figure size in inches; None gives 4.2 x 3.2 inches per subplot.
    **kw
        Passed to ``plt.subplots`` (``squeeze``, ``sharex``...).

    Returns
    -------
    fig : matplotlib.figure.Figure
        The figure.
    axes : Axes or numpy.ndarray of Axes
        One Axes, or an array of shape (nrows, ncols) squeezed as by ``plt.subplots``.

    Examples
    --------
    >>> fig, axes = new_figure(1, 2)
    >>> axes.shape, fig.get_size_inches().round(1).tolist()
    ((2,), [8.4, 3.2])
    >>> save_figure(fig, "two").name
    'two.png'
    """
    plt = _pyplot()
    size = size or (4.2 * ncols, 3.2 * nrows)
    return plt.subplots(nrows, ncols, figsize=size, squeeze=kw.pop("squeeze", True), **kw)


def save_figure(fig, path: str | Path) -> Path:
    """Save ``fig`` as PNG at ``path`` (parents created) and close it.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure to save.
    path : str or Path
        Target path; its suffix is replaced by ``.png``.

    Returns
    -------
    Path
        The written PNG file.

    Examples
    --------
    >>> fig, ax = new_figure()
    >>> _ = ax.plot([0, 1], [0, 1])
    >>> path = save_figure(fig, "figs/line.svg")
    >>> str(path), path.is_file()
    ('figs/line.png', True)
    """
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

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The axes whose labelled artists go in the legend.
    where : {"right", "below"}, default="right"
        Beside the axes, or under them (up to ``ncol=3`` columns).
    **kw
        Passed to ``ax.legend``.

    Returns
    -------
    matplotlib.legend.Legend or None
        The legend, or None when no artist has a label.

    Raises
    ------
    ValueError
        For another ``where``.

    Examples
    --------
    >>> fig, ax = new_figure()
    >>> legend_outside(ax) is None
    True
    >>> _ = ax.plot([0, 1], label="ours")
    >>> [t.get_text() for t in legend_outside(ax, "below").get_texts()]
    ['ours']
    >>> save_figure(fig, "legend").suffix
    '.png'
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
