"""Reading a CSV where empty cells or NaN/NA mark missing values (no pandas needed)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

__all__ = ["read_csv_with_missing"]

_MISSING = {"", "na", "nan", "n/a", "null", "none", "?"}


def _cell(text: str) -> float | None:
    t = text.strip()
    if t.lower() in _MISSING:
        return np.nan
    try:
        return float(t)
    except ValueError:
        return None


def read_csv_with_missing(path: str | Path) -> tuple[np.ndarray, list[str]]:
    """Return (X with NaN for missing, column names). A first row with any non-numeric,
    non-missing cell is taken as the header; otherwise columns are named x0, x1, ..."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    with path.open(newline="") as fh:
        sample = fh.read(4096)
        fh.seek(0)
        try:
            dialect = csv.Sniffer().sniff(sample, delimiters=",;\t")
        except csv.Error:
            dialect = csv.excel
        rows = [r for r in csv.reader(fh, dialect) if any(c.strip() for c in r)]
    if not rows:
        raise ValueError(f"{path} is empty")
    header = None
    if any(_cell(c) is None for c in rows[0]):
        header, rows = [c.strip() for c in rows[0]], rows[1:]
    width = len(header) if header else len(rows[0])
    X = np.full((len(rows), width), np.nan)
    for i, row in enumerate(rows):
        if len(row) != width:
            raise ValueError(f"{path}: line {i + 1 + (header is not None)} has {len(row)} "
                             f"fields, expected {width}")
        for j, c in enumerate(row):
            v = _cell(c)
            if v is None:
                raise ValueError(f"{path}: line {i + 1 + (header is not None)}, column {j + 1}:"
                                 f" {c.strip()!r} is not a number (leave the cell empty or write"
                                 " NaN for a missing value)")
            X[i, j] = v
    names = header or [f"x{j}" for j in range(width)]
    return X, names
