"""One self-contained HTML report (figures inlined) from the ``result.json`` files of a run."""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from icml25 import __version__
from icml25.core.records import ExperimentResult

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;max-width:1100px;margin:2em auto;
padding:0 1em;color:#1b1b1b;line-height:1.45}
h1{margin-bottom:.2em} h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:.6em 0} th,td{border:1px solid #ccc;padding:.3em .6em;
text-align:left;vertical-align:top} th{background:#f3f3f3}
code,pre{background:#f6f6f6;padding:.1em .3em;border-radius:3px}
pre{padding:.6em;overflow-x:auto} .failed{color:#b00020;font-weight:bold} .ok{color:#00703c}
.meta{color:#555} figure{display:inline-block;margin:.5em 1em .5em 0}
figure img{max-width:520px;border:1px solid #eee} .empty{padding:1em;background:#fff8e1}
"""


def load_results(out_root: str | Path) -> list[ExperimentResult]:
    """Every ``<out_root>/*/result.json``, sorted by subsystem then name."""
    results = []
    for path in sorted(Path(out_root).glob("*/result.json")):
        try:
            results.append(ExperimentResult.from_json(path.read_text()))
        except (ValueError, TypeError, json.JSONDecodeError):
            continue  # a result written by an incompatible version: leave it out of the report
    return sorted(results, key=lambda r: (r.subsystem, r.name))


def _fmt(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _figure_tag(path: Path) -> str:
    if not path.exists():
        return f"<p class='failed'>missing figure {html.escape(path.name)}</p>"
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    name = html.escape(path.stem.replace("_", " "))
    return (f"<figure><img alt='{name}' src='data:image/png;base64,{data}'>"
            f"<figcaption>{name}</figcaption></figure>")


def _section(result: ExperimentResult, out_root: Path) -> str:
    e = html.escape
    status = f"<span class='{e(result.status)}'>{e(result.status)}</span>"
    parts = [
        f"<section id='{e(result.name)}'><h2>{e(result.name)}</h2>",
        f"<p><b>Paper:</b> {e(result.paper)}<br><b>Reproduces:</b> {e(result.reproduces)}<br>"
        f"<span class='meta'>status {status} · mode {e(result.mode)} · seed {result.seed} · "
        f"wall time {result.wall_time_s:.1f} s · run {e(result.started_at)}</span></p>",
    ]
    if result.comparisons:
        rows = "".join(
            f"<tr><td>{e(c.quantity)}</td><td>{e(_fmt(c.published))}</td>"
            f"<td>{e(_fmt(c.ours))}</td><td>{e(c.scale)}</td><td>{e(c.note)}</td></tr>"
            for c in result.comparisons
        )
        parts.append("<table><tr><th>quantity</th><th>published</th><th>ours</th>"
                     f"<th>scale</th><th>note</th></tr>{rows}</table>")
    if result.notes:
        parts.append("<ul>" + "".join(f"<li>{e(n)}</li>" for n in result.notes) + "</ul>")
    if result.error:
        parts.append(f"<pre class='failed'>{e(result.error)}</pre>")
    parts += [_figure_tag(out_root / result.name / f) for f in result.figures]
    settings = ", ".join(f"{k}={v}" for k, v in result.settings.items()) or "defaults"
    parts.append(f"<p class='meta'>Settings: {e(settings)}</p>"
                 f"<p>Rerun: <code>{e(result.command)}</code></p></section>")
    return "\n".join(parts)


def write_report(out_root: str | Path, results: Iterable[ExperimentResult] | None = None,
                 unavailable: dict[str, str] | None = None) -> Path:
    """Write ``<out_root>/report.html``; by default from every result.json under ``out_root``."""
    out_root = Path(out_root)
    out_root.mkdir(parents=True, exist_ok=True)
    results = load_results(out_root) if results is None else list(results)
    e = html.escape
    now = datetime.now(UTC).isoformat(timespec="seconds")
    body = [f"<h1>icml25 reproduction report</h1><p class='meta'>icml25 {e(__version__)} · "
            f"written {e(now)}</p>"]
    if results:
        rows = "".join(
            f"<tr><td><a href='#{e(r.name)}'>{e(r.name)}</a></td><td>{e(r.paper)}</td>"
            f"<td class='{e(r.status)}'>{e(r.status)}</td><td>{e(r.mode)}</td>"
            f"<td>{r.wall_time_s:.1f} s</td></tr>" for r in results)
        body.append("<table><tr><th>experiment</th><th>paper</th><th>status</th><th>mode</th>"
                    f"<th>wall time</th></tr>{rows}</table>")
        body += [_section(r, out_root) for r in results]
    else:
        body.append("<p class='empty'>No experiments have been run: none is registered yet, or "
                    "none was selected. <code>icml25 reproduce --list</code> shows what "
                    "exists.</p>")
    if unavailable:
        items = "".join(f"<li><b>{e(k)}</b>: {e(v)}</li>" for k, v in unavailable.items())
        body.append(f"<h2>Subsystems not available here</h2><ul>{items}</ul>")
    page = ("<!doctype html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>icml25 reproduction report</title><style>{_CSS}</style></head><body>"
            + "\n".join(body) + "</body></html>")
    path = out_root / "report.html"
    path.write_text(page, encoding="utf-8")
    return path
