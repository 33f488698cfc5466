"""Progress bars for long work (rich), quiet when output is not a terminal."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")


def progress_enabled() -> bool:
    """Bars show on an interactive terminal unless ICML25_NO_PROGRESS is set."""
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
    """Iterate with a rich progress bar on stderr (or silently when disabled)."""
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
