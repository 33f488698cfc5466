"""One tabular reader for every room: CSV/TSV (and Parquet when pyarrow is installed).

What it handles, so rooms need not:

* the delimiter (``,`` ``;`` or tab) and the decimal mark (``.`` or ``,``) are sniffed; both can
  be forced;
* a UTF-8 byte-order mark, quoted fields (with embedded delimiters or newlines), blank lines;
* missing-value tokens (case-insensitive): the empty cell, ``NA``, ``N/A``, ``NaN``, ``null``,
  ``None``, ``?``;
* a per-column type report (numeric / text / empty, with counts of missing cells);
* errors that name the row as a user counts lines in the file (1-based, the header is line 1),
  the column and the offending value;
* a policy for missing values: ``on_missing="error" | "drop" | "keep"`` with a report of the
  rows dropped.

>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "t.csv"
>>> _ = p.write_text("\\ufeffy;p\\n1,5;2\\nNA;3\\n4;5,25\\n", encoding="utf-8")
>>> t = read_table(p)
>>> t.delimiter, t.decimal, t.columns
(';', ',', ['y', 'p'])
>>> sel = t.numeric(["y", "p"], on_missing="drop")
>>> sel.X.tolist(), sel.dropped_lines
([[1.5, 2.0], [4.0, 5.25]], [3])
"""

from __future__ import annotations

import csv
import dataclasses
import io
import re
from pathlib import Path

import numpy as np

__all__ = [
    "MISSING_TOKENS",
    "ON_MISSING",
    "NumericSelection",
    "Table",
    "TableError",
    "read_table",
    "resolve_on_missing",
]

MISSING_TOKENS = frozenset({"", "na", "n/a", "nan", "null", "none", "?"})
ON_MISSING = ("error", "drop", "keep")
_DELIMITERS = ("\t", ";", ",")
_COMMA_DECIMAL = re.compile(r"^[+-]?\d*,\d+(?:[eE][+-]?\d+)?$")
_DOT_DECIMAL = re.compile(r"^[+-]?\d*\.\d+(?:[eE][+-]?\d+)?$")


class TableError(ValueError):
    """A malformed table, or a cell that breaks the requested policy (names row/column/value).

    A subclass of :class:`ValueError`.

    Parameters
    ----------
    *args : object
        The message (as for any exception).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.csv"
    >>> _ = p.write_text("a,b\\n1,2\\n3\\n")
    >>> try:
    ...     read_table(p)
    ... except TableError as err:
    ...     print(type(err).__name__, isinstance(err, ValueError))
    TableError True
    """


def _is_missing(cell: str) -> bool:
    return cell.strip().lower() in MISSING_TOKENS


@dataclasses.dataclass
class NumericSelection:
    """Numeric columns chosen from a :class:`Table` after the missing-value policy.

    ``X`` (n_kept, k) float with NaN for missing cells (only under ``on_missing="keep"``),
    ``names`` the k columns, ``lines`` the file line of each kept row, ``dropped_lines`` the
    lines dropped under ``on_missing="drop"`` and ``missing_by_column`` the count of missing
    cells per selected column before dropping.
    """

    X: np.ndarray
    names: list[str]
    lines: list[int]
    dropped_lines: list[int]
    missing_by_column: dict[str, int]
    n_rows: int
    column_types: list[dict] = dataclasses.field(default_factory=list)

    def column(self, name: str) -> np.ndarray:
        return self.X[:, self.names.index(name)]

    def dropped_report(self, max_lines: int = 10) -> str:
        """One line for a user: how many rows were dropped, which, and for which columns."""
        if not self.dropped_lines:
            return f"no rows dropped ({self.n_rows} rows)"
        shown = ", ".join(map(str, self.dropped_lines[:max_lines]))
        more = f", ... ({len(self.dropped_lines) - max_lines} more)" \
            if len(self.dropped_lines) > max_lines else ""
        by = ", ".join(f"{c} {k}" for c, k in self.missing_by_column.items() if k)
        return (f"dropped {len(self.dropped_lines)} of {self.n_rows} rows with a missing value "
                f"(line(s) {shown}{more}; missing cells by column: {by})")

    def to_dict(self) -> dict:
        return {"n_rows": self.n_rows, "n_used": len(self.lines),
                "dropped_lines": self.dropped_lines, "missing_by_column": self.missing_by_column,
                "column_types": self.column_types}


@dataclasses.dataclass
class Table:
    """Cells of a table as text, with where they came from (see :func:`read_table`).

    Parameters
    ----------
    path : Path
        The file read.
    columns : list of str
        Column names.
    cells : list of list of str
        One list of stripped cell texts per column.
    lines : list of int
        File line (1-based) where each row starts (the row number for parquet).
    delimiter : str
        The field delimiter.
    decimal : str
        The decimal mark, ``"."`` or ``","``.
    has_header : bool
        Whether the first row was a header.
    kind : str, default="csv"
        ``"csv"`` or ``"parquet"``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.csv"
    >>> _ = p.write_text("x,y\\n1,2\\n3,NA\\n")
    >>> t = read_table(p)
    >>> t.columns, t.n_rows
    (['x', 'y'], 2)
    >>> t.numeric(on_missing="drop").X.tolist()
    [[1.0, 2.0]]
    """

    path: Path
    columns: list[str]
    cells: list[list[str]]  # one list per column, stripped text
    lines: list[int]  # file line (1-based) where each row starts
    delimiter: str
    decimal: str
    has_header: bool
    kind: str = "csv"

    @property
    def n_rows(self) -> int:
        return len(self.lines)

    def _where(self, i: int) -> str:
        return f"line {self.lines[i]}" if self.kind == "csv" else f"row {self.lines[i]}"

    def _parse(self, text: str) -> float | None:
        """float, NaN for a missing token, None if not a number."""
        t = text.strip()
        if t.lower() in MISSING_TOKENS:
            return np.nan
        if self.decimal == ",":
            if "." in t and "," in t:
                return None
            t = t.replace(",", ".")
        try:
            return float(t)
        except ValueError:
            return None

    def check_columns(self, names) -> None:
        missing = [c for c in names if c not in self.columns]
        if missing:
            raise TableError(f"{self.path} has no column(s) {missing}; columns are "
                             f"{self.columns}")

    def column_report(self, names=None) -> list[dict]:
        """Per column (default all, else ``names``): name, type (numeric / text / empty),
        n_missing, n_values and, for a text column, the first non-numeric cell (line, value)."""
        out = []
        for name, col in zip(self.columns, self.cells, strict=True):
            if names is not None and name not in names:
                continue
            n_missing, bad = 0, None
            for i, c in enumerate(col):
                v = self._parse(c)
                if v is None:
                    if bad is None:
                        bad = {"line": self.lines[i], "value": c}
                elif np.isnan(v) and _is_missing(c):
                    n_missing += 1
            kind = "empty" if n_missing == len(col) else ("text" if bad else "numeric")
            rec = {"name": name, "type": kind, "n_missing": n_missing,
                   "n_values": len(col) - n_missing}
            if bad:
                rec["first_non_numeric"] = bad
            out.append(rec)
        return out

    def type_report(self) -> str:
        """The column report as a few lines of text."""
        rows = []
        for r in self.column_report():
            extra = (f", first non-numeric {r['first_non_numeric']['value']!r} on line "
                     f"{r['first_non_numeric']['line']}" if "first_non_numeric" in r else "")
            rows.append(f"{r['name']}: {r['type']}, {r['n_missing']} missing{extra}")
        return "\n".join(rows)

    def numeric(self, names=None, on_missing: str = "error") -> NumericSelection:
        """The columns ``names`` (default all) as floats, applying the missing-value policy.

        ``"error"``: the first missing cell raises, naming line, column and token; ``"drop"``:
        rows with a missing cell in any selected column are dropped (reported in
        ``dropped_lines``); ``"keep"``: missing cells become NaN. A cell that is neither a
        number nor a missing token always raises (line, column, value).
        """
        if on_missing not in ON_MISSING:
            raise TableError(f"on_missing must be one of {ON_MISSING}, got {on_missing!r}")
        names = list(self.columns if names is None else names)
        self.check_columns(names)
        X = np.empty((self.n_rows, len(names)))
        miss = np.zeros((self.n_rows, len(names)), bool)
        for k, name in enumerate(names):
            j = self.columns.index(name)
            for i, c in enumerate(self.cells[j]):
                v = self._parse(c)
                miss[i, k] = _is_missing(c)
                if v is None:
                    raise TableError(
                        f"{self.path}: {self._where(i)}, column {j + 1}: {c!r} is not a number "
                        f"(column {name!r}; leave the cell empty or write NA for a missing "
                        f"value{'; the decimal mark is a comma' if self.decimal == ',' else ''})")
                X[i, k] = v
        by_col = {n: int(miss[:, k].sum()) for k, n in enumerate(names)}
        rows_bad = miss.any(axis=1)
        if on_missing == "error" and rows_bad.any():
            i = int(np.flatnonzero(rows_bad)[0])
            k = int(np.flatnonzero(miss[i])[0])
            token = self.cells[self.columns.index(names[k])][i]
            shown = "an empty cell" if token == "" else repr(token)
            raise TableError(
                f"{self.path}: {self._where(i)}, column {names[k]!r} is missing ({shown}); "
                f"{int(rows_bad.sum())} of {self.n_rows} rows have a missing value in "
                f"{[n for n, c in by_col.items() if c]}. Drop them with on_missing='drop' "
                f"(command line: --on-missing drop, or --dropna)")
        keep = ~rows_bad if on_missing == "drop" else np.ones(self.n_rows, bool)
        if on_missing == "drop" and self.n_rows and not keep.any():
            raise TableError(
                f"{self.path}: every one of the {self.n_rows} rows has a missing value in "
                f"{[n for n, c in by_col.items() if c]} (missing per column: "
                + ", ".join(f"{n} {c}" for n, c in by_col.items()) + "); nothing is left "
                "after dropping them")
        lines = [ln for ln, k in zip(self.lines, keep, strict=True) if k]
        dropped = [ln for ln, k in zip(self.lines, keep, strict=True) if not k]
        types = self.column_report(names)
        return NumericSelection(X[keep], names, lines, dropped, by_col, self.n_rows, types)


def _sniff(lines: list[str]) -> str:
    """The delimiter giving a constant field count > 1 on the sample (tab, then ';', then ',');
    a file with one column falls back to ',', or to ';' when, below its first line, every line
    is one decimal-comma number or a missing token (a header, then ``0,5`` lines)."""
    sample = "\n".join(lines)
    best = None
    for delim in _DELIMITERS:
        rows = [r for r in csv.reader(io.StringIO(sample), delimiter=delim) if r]
        counts = {len(r) for r in rows[:-1] or rows}  # the last sample line may be cut
        if len(counts) == 1 and counts.pop() > 1:
            return delim
        widths = [len(r) for r in rows]
        if widths and min(widths) > 1 and (best is None or min(widths) > best[1]):
            best = (delim, min(widths))
    if best:
        return best[0]
    body = [ln.strip() for ln in lines[1:]]
    if body and all(_COMMA_DECIMAL.match(c) or _is_missing(c) for c in body) \
            and any(_COMMA_DECIMAL.match(c) for c in body):
        return ";"
    return ","


def _sniff_decimal(cells: list[list[str]], delimiter: str) -> str:
    if delimiter == ",":
        return "."
    comma = dot = 0
    for col in cells:
        for c in col[:2000]:
            if _COMMA_DECIMAL.match(c):
                comma += 1
            elif _DOT_DECIMAL.match(c):
                dot += 1
    return "," if comma and not dot else "."


def _read_text(path: Path) -> str:
    raw = path.read_bytes()
    for enc in ("utf-8-sig", "utf-16"):
        try:
            text = raw.decode(enc)
        except UnicodeDecodeError:
            continue
        if enc == "utf-16" and not raw.startswith((b"\xff\xfe", b"\xfe\xff")):
            continue
        return text
    return raw.decode("latin-1")


def _looks_numeric(cell: str) -> bool:
    t = cell.strip()
    if t.lower() in MISSING_TOKENS:
        return True
    try:
        float(t.replace(",", "."))
        return True
    except ValueError:
        return False


def read_table(path, *, delimiter: str | None = None, decimal: str | None = None,
               header: bool | None = None) -> Table:
    """Read a CSV / TSV (or ``.parquet`` / ``.pq`` with pyarrow) file into a :class:`Table`.

    ``delimiter`` (``","``, ``";"``, ``"\\t"``) and ``decimal`` (``"."`` or ``","``) are sniffed
    when None. ``header=None`` takes the first row as a header when any of its cells is neither
    a number nor a missing token; otherwise columns are named ``x0, x1, ...``. Raises
    :class:`TableError` (a ``ValueError``) for an empty file, ragged rows (naming the line) or
    duplicate column names, and ``FileNotFoundError`` for a missing file.

    Parameters
    ----------
    path : str or Path
        A CSV/TSV text file, or a ``.parquet``/``.pq`` file.
    delimiter : str or None, default=None
        Field delimiter (None: sniffed).
    decimal : {".", ","} or None, default=None
        Decimal mark (None: sniffed).
    header : bool or None, default=None
        Whether the first row is a header (None: guessed).

    Returns
    -------
    Table
        The cells as text; :meth:`Table.numeric` turns columns into floats.

    Raises
    ------
    FileNotFoundError
        If ``path`` is not a file.
    TableError
        For an empty file, ragged rows or duplicate column names.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.csv"
    >>> _ = p.write_text("1;2,5\\n3;4,0\\n")
    >>> t = read_table(p)
    >>> t.columns, t.delimiter, t.decimal, t.has_header
    (['x0', 'x1'], ';', ',', False)
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    if path.suffix.lower() in (".parquet", ".pq"):
        return _read_parquet(path)
    text = _read_text(path)
    if delimiter is None:
        head = [ln for ln in text.splitlines()[:50] if ln.strip()]
        delimiter = _sniff(head)
    if delimiter not in _DELIMITERS:
        raise TableError(f"delimiter must be one of {list(_DELIMITERS)}, got {delimiter!r}")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    rows, lines, last = [], [], 0
    for row in reader:
        start, last = last + 1, reader.line_num
        if not any(c.strip() for c in row):
            continue
        rows.append([c.strip() for c in row])
        lines.append(start)
    if not rows:
        raise TableError(f"{path} is empty")
    if header is None:
        header = not all(_looks_numeric(c) for c in rows[0])
    if header:
        names, header_line = rows[0], lines[0]
        rows, lines = rows[1:], lines[1:]
        if any(n == "" for n in names):
            names = [n or f"x{j}" for j, n in enumerate(names)]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise TableError(f"{path}: line {header_line}: duplicate column name(s) {dup}")
    else:
        names = [f"x{j}" for j in range(len(rows[0]))]
    width = len(names)
    for row, ln in zip(rows, lines, strict=True):
        if len(row) != width:
            raise TableError(f"{path}: line {ln} has {len(row)} fields, expected {width} "
                             f"(delimiter {delimiter!r})")
    cells = [[r[j] for r in rows] for j in range(width)]
    if decimal is None:
        decimal = _sniff_decimal(cells, delimiter)
    if decimal not in (".", ","):
        raise TableError(f"decimal must be '.' or ',', got {decimal!r}")
    if decimal == delimiter:
        raise TableError("the decimal mark and the delimiter cannot both be ','")
    return Table(path, list(names), cells, lines, delimiter, decimal, bool(header))


def _read_parquet(path: Path) -> Table:
    from icml25.core.errors import require_extra

    pq = require_extra("pyarrow.parquet", "parquet")
    tbl = pq.read_table(path)
    names = list(tbl.column_names)
    cells = []
    for name in names:
        col = tbl.column(name).to_pylist()
        cells.append(["" if v is None else repr(float(v)) if isinstance(v, int | float)
                      and not isinstance(v, bool) else str(v) for v in col])
    n = tbl.num_rows
    return Table(path, names, cells, list(range(1, n + 1)), ",", ".", True, kind="parquet")


def resolve_on_missing(on_missing: str | None, dropna: bool = False, *,
                       default: str = "error", no_keep: str | None = None) -> str:
    """The policy a command runs with: ``--dropna`` is short for ``--on-missing drop`` (and
    conflicts with any other explicit choice). A command that cannot use NaN cells passes
    ``no_keep``, the reason, and ``keep`` is refused with it.

    >>> resolve_on_missing(None, True)
    'drop'
    >>> try:
    ...     resolve_on_missing("keep", no_keep="one loss a row")
    ... except TableError as exc:
    ...     print(exc)
    --on-missing keep is not supported here: one loss a row (use --on-missing drop, or --dropna)
    """
    if on_missing is not None and on_missing not in ON_MISSING:
        raise TableError(f"--on-missing must be one of {'|'.join(ON_MISSING)}, got "
                         f"{on_missing!r}")
    if dropna:
        if on_missing not in (None, "drop"):
            raise TableError(f"--dropna means --on-missing drop; it conflicts with "
                             f"--on-missing {on_missing}")
        return "drop"
    policy = on_missing or default
    if policy == "keep" and no_keep:
        raise TableError(f"--on-missing keep is not supported here: {no_keep} (use "
                         f"--on-missing drop, or --dropna)")
    return policy
