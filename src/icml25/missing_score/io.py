"""Reading a table where empty cells or NaN/NA mark missing values: a thin wrapper over the
shared reader :func:`icml25.core.read_table` (delimiter/decimal sniffing, BOM, quotes, Parquet)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["read_csv_with_missing", "read_table_with_missing"]


def read_table_with_missing(path: str | Path, on_missing: str = "keep"):
    """All columns of ``path`` as a :class:`icml25.core.table.NumericSelection` (``X`` with NaN
    for missing cells under ``on_missing="keep"``; rows with a missing cell dropped and
    reported under ``"drop"``; the first missing cell raises under ``"error"``)."""
    from icml25.core.table import read_table

    return read_table(path).numeric(None, on_missing=on_missing)


def read_csv_with_missing(path: str | Path) -> tuple[np.ndarray, list[str]]:
    """Return (X with NaN for missing, column names). A first row with any non-numeric,
    non-missing cell is taken as the header; otherwise columns are named x0, x1, ..."""
    sel = read_table_with_missing(path, "keep")
    return sel.X, sel.names
