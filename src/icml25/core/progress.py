"""Progress bars for long work (rich), quiet when output is not a terminal."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")


def progress_enabled() -> bool:
    """Bars show on an interactive terminal unless ICML25_NO_PROGRESS is set.

    Returns
    -------
    bool
        True when stderr is a terminal and ``ICML25_NO_PROGRESS`` is unset or empty.

    Examples
    --------
    >>> import os
    >>> from unittest import mock
    >>> with mock.patch.dict(os.environ, {"ICML25_NO_PROGRESS": "1"}):
    ...     progress_enabled()
    False
    """
    if os.environ.get("ICML25_NO_PROGRESS"):
        return False
    return sys.stderr.isatty()


def track(
    iterable: Iterable[T],
    description: str = "working",
    total: int | None = None,
    *,
    enabled: bool | None = None,
) -> Iterator[T]:
    """Iterate with a rich progress bar on stderr (or silently when disabled).

    Parameters
    ----------
    iterable : iterable
        The items to go through.
    description : str, default="working"
        Label of the bar.
    total : int or None, default=None
        Number of items (default: ``len(iterable)`` when it has one).
    enabled : bool or None, default=None
        Show the bar (None: as :func:`progress_enabled` says).

    Returns
    -------
    iterator
        The items of ``iterable``, unchanged and in order.

    Examples
    --------
    >>> [x * x for x in track(range(4), "squaring", enabled=False)]
    [0, 1, 4, 9]
    """
    if not (progress_enabled() if enabled is None else enabled):
        yield from iterable
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    if total is None and hasattr(iterable, "__len__"):
        total = len(iterable)  # type: ignore[arg-type]
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(description, total=total)
        for item in iterable:
            yield item
            bar.advance(task)


class LiveView:
    """Progress of a run of many experiments and their cells: one rich live table on a
    terminal (state, cells done / total, cached, failed, running, elapsed, ETA), plain lines
    otherwise (``ICML25_NO_PROGRESS=1`` or output not a terminal).

    Parameters
    ----------
    live : bool, optional
        Force the live table on or off (default: :func:`progress_enabled`).
    stream : file, optional
        Where plain lines go (default: standard error).

    Examples
    --------
    >>> import io
    >>> from icml25.core.cells import CellStats
    >>> out = io.StringIO()
    >>> view = LiveView(live=False, stream=out)
    >>> view.start(["demo"], "this process")
    >>> view.cells("demo", CellStats(total=2, done=2, cached=1))
    >>> view.stop()
    >>> "demo: cells 2/2 (1 cached, 0 failed)" in out.getvalue()
    True
    """

    def __init__(self, live: bool | None = None, stream=None):
        import threading

        self.live_enabled = progress_enabled() if live is None else live
        self.stream = stream if stream is not None else sys.stderr
        self._rows: dict[str, dict] = {}
        self._lock = threading.Lock()
        self._live = None
        self._executor = ""
        self._printed: dict[str, int] = {}

    def start(self, names: list[str], executor: str) -> None:
        import time

        self._t0 = time.perf_counter()
        self._executor = executor
        for name in names:
            self._rows[name] = {"state": "waiting", "total": 0, "done": 0, "cached": 0,
                                "failed": 0, "running": 0, "t0": None, "wall": None}
        if self.live_enabled:
            from rich.console import Console
            from rich.live import Live

            self._live = Live(self._render(), console=Console(stderr=True),
                              refresh_per_second=2, transient=False,
                              get_renderable=self._render)
            self._live.start()
        else:
            self._line(f"running {len(names)} experiment(s) on {executor}")

    def _line(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    def started(self, name: str) -> None:
        import time

        with self._lock:
            row = self._rows.setdefault(name, {"total": 0, "done": 0, "cached": 0,
                                               "failed": 0, "running": 0, "wall": None})
            row.update(state="running", t0=time.perf_counter())
        if not self.live_enabled:
            self._line(f"{name}: started")

    def cells(self, name: str, stats) -> None:
        with self._lock:
            row = self._rows.get(name)
            if row is None:
                return
            row.update(total=stats.total, done=stats.done, cached=stats.cached,
                       failed=stats.failed, running=stats.running)
        if self.live_enabled or not stats.total:
            return
        step = max(1, stats.total // 10)  # plain lines: about every tenth of the cells
        if stats.done == stats.total or stats.done - self._printed.get(name, -step) >= step:
            self._printed[name] = stats.done
            self._line(f"{name}: cells {stats.done}/{stats.total} ({stats.cached} cached, "
                       f"{stats.failed} failed)")

    def finished(self, name: str, record) -> None:
        with self._lock:
            row = self._rows.setdefault(name, {})
            cached = record.cells_total and record.cells_cached == record.cells_total
            row.update(state=("cached" if cached else record.result.status),
                       wall=record.wall_s, total=record.cells_total, failed=record.cells_failed,
                       cached=record.cells_cached, done=record.cells_total, running=0)
        if not self.live_enabled:
            self._line(f"{name}: {row['state']} in {record.wall_s:.1f} s (cells "
                       f"{record.cells_total}, {record.cells_cached} cached, "
                       f"{record.cells_failed} failed)")

    def _render(self):
        import time

        from rich.table import Table

        now = time.perf_counter()
        table = Table(title=f"icml25 reproduce on {self._executor}", title_justify="left",
                      expand=False)
        table.add_column("experiment", no_wrap=True, overflow="fold")
        for col in ("state", "cells", "cached", "failed", "busy", "time", "ETA"):
            table.add_column(col, no_wrap=True, min_width=len(col))
        with self._lock:
            rows = [(name, dict(row)) for name, row in self._rows.items()]
        for name, row in rows:
            state = row.get("state", "waiting")
            style = {"ok": "green", "cached": "cyan", "failed": "red",
                     "running": "yellow"}.get(state, "dim")
            t0 = row.get("t0")
            elapsed = row["wall"] if row.get("wall") is not None else (
                now - t0 if t0 is not None else None)
            computed = row["done"] - row["cached"]
            left = row["total"] - row["done"]
            eta = ""
            if state == "running" and computed > 0 and left > 0 and elapsed:
                eta = f"{elapsed / computed * left:.0f} s"
            table.add_row(name, f"[{style}]{state}[/]",
                          f"{row['done']}/{row['total']}" if row["total"] else "",
                          str(row["cached"] or ""), str(row["failed"] or ""),
                          str(row["running"] or ""),
                          "" if elapsed is None else f"{elapsed:.0f} s", eta)
        done = sum(r["done"] for _, r in rows)
        total = sum(r["total"] for _, r in rows)
        table.caption = (f"{now - self._t0:.0f} s; cells {done}/{total}, "
                         f"{sum(r['cached'] for _, r in rows)} cached, "
                         f"{sum(r['failed'] for _, r in rows)} failed")
        return table

    def stop(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
