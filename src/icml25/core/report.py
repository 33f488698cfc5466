"""One self-contained HTML report (figures inlined) from the ``result.json`` files of a run.

The page opens with what falls short: a summary table with each experiment's verdict counts
(worst experiments first) and a list of every row that contradicts the paper or falls short of
it. Each experiment's section then shows its rows with their verdicts (and chance levels where a
row has one), its notes, its figures at their natural width (click one to enlarge it), and its
provenance — settings, the rerun command, how shipped models were trained — folded away under a
``<details>`` element.
"""

from __future__ import annotations

import base64
import html
import json
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from icml25 import __version__
from icml25.core.records import Comparison, ExperimentResult
from icml25.core.verdicts import (
    AGREES,
    CONTRADICTS,
    FALLS_SHORT,
    NOT_COMPARABLE,
    SEVERITY,
    VERDICTS,
    WITHIN_GAP,
    tally,
)

# verdict -> CSS class
_CLASS = {AGREES: "v-agrees", WITHIN_GAP: "v-gap", FALLS_SHORT: "v-short",
          CONTRADICTS: "v-contra", NOT_COMPARABLE: "v-nc"}

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;max-width:1320px;margin:2em auto;
padding:0 1em;color:#1b1b1b;line-height:1.45}
h1{margin-bottom:.2em} h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:.6em 0} th,td{border:1px solid #ccc;padding:.3em .6em;
text-align:left;vertical-align:top} th{background:#f3f3f3}
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.name{white-space:nowrap}
code,pre{background:#f6f6f6;padding:.1em .3em;border-radius:3px}
pre{padding:.6em;overflow-x:auto;white-space:pre-wrap} .failed{color:#b00020;font-weight:bold}
.ok{color:#00703c} .meta{color:#555} .rule{display:block;color:#666;font-size:.8em}
.v-agrees{background:#e3f4e8;color:#0b5d2a} .v-gap{background:#fff3c4;color:#6b4e00}
.v-short{background:#fde0cf;color:#8f3300} .v-contra{background:#f9d0d5;color:#9b0019}
.v-nc{background:#eeeeee;color:#555} td.zero{color:#bbb;background:none}
.verdict{font-weight:600;white-space:nowrap}
figure{margin:1em 0} figure img{max-width:100%;height:auto;border:1px solid #eee;
cursor:zoom-in} figcaption{color:#555;font-size:.9em}
figure.zoom{position:fixed;inset:0;margin:0;background:rgba(255,255,255,.97);z-index:10;
display:flex;flex-direction:column;align-items:center;justify-content:center;cursor:zoom-out}
figure.zoom img{width:98vw;height:92vh;max-width:none;object-fit:contain;border:0;
cursor:zoom-out}
details{margin:.6em 0} summary{cursor:pointer;color:#333}
.empty{padding:1em;background:#fff8e1} .warn{padding:.6em 1em;background:#fff8e1}
"""
# Click a figure to see it full-window; click again (or press Escape) to put it back.
_JS = """
document.addEventListener('click',e=>{const f=e.target.closest('figure');
if(f){f.classList.toggle('zoom');}});
document.addEventListener('keydown',e=>{if(e.key==='Escape'){
document.querySelectorAll('figure.zoom').forEach(f=>f.classList.remove('zoom'));}});
"""
# A note that says how a model or number was made (a training command, a model card) is
# provenance: folded away with the settings rather than shown beside the results.
_PROVENANCE = re.compile(r"command:|\bicml25 [\w-]+ train\b|\btorchrun\b|--preset\b", re.I)


def load_results(out_root: str | Path) -> list[ExperimentResult]:
    """Every ``<out_root>/*/result.json``, sorted by subsystem then name.

    Files written by an incompatible version (unknown fields, bad JSON) are left out.

    Parameters
    ----------
    out_root : str or Path
        The results folder (one sub-folder per experiment).

    Returns
    -------
    list of ExperimentResult
        The readable results.

    Examples
    --------
    >>> from pathlib import Path
    >>> from icml25.core import ExperimentResult
    >>> Path("results/demo").mkdir(parents=True)
    >>> r = ExperimentResult("demo", "core", "A paper", "Table 1", "quick", 0, {}, "cmd")
    >>> _ = Path("results/demo/result.json").write_text(r.to_json())
    >>> [x.name for x in load_results("results")]
    ['demo']
    """
    results = []
    for path in sorted(Path(out_root).glob("*/result.json")):
        try:
            results.append(ExperimentResult.from_json(path.read_text()))
        except (ValueError, TypeError, json.JSONDecodeError):
            continue  # a result written by an incompatible version: leave it out of the report
    return sorted(results, key=lambda r: (r.subsystem, r.name))


def verdict_counts(result: ExperimentResult) -> dict[str, int]:
    """How many of the result's rows got each verdict (every verdict listed, zeros included)."""
    return tally([c.verdict for c in result.comparisons])


def _worst_first(result: ExperimentResult) -> tuple:
    counts = verdict_counts(result)
    return (result.status == "ok", -counts[CONTRADICTS], -counts[FALLS_SHORT],
            -counts[WITHIN_GAP], -counts[NOT_COMPARABLE], result.subsystem, result.name)


def _short_paper(paper: str) -> str:
    """``Authors (Venue Year)``: the paper's title stays in the section (and the tooltip)."""
    m = re.match(r"[^()]*\([^()]*\)", paper)
    return m.group(0) if m else paper


def _fmt(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _verdict_cell(c: Comparison) -> str:
    e = html.escape
    rule = f"<span class='rule'>{e(c.rule)}</span>" if c.rule else ""
    return (f"<td class='{_CLASS.get(c.verdict, 'v-nc')}'><span class='verdict'>"
            f"{e(c.verdict)}</span>{rule}</td>")


def _figure_tag(path: Path) -> str:
    if not path.exists():
        return f"<p class='failed'>missing figure {html.escape(path.name)}</p>"
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    name = html.escape(path.stem.replace("_", " "))
    return (f"<figure title='click to enlarge'><img alt='{name}' "
            f"src='data:image/png;base64,{data}'><figcaption>{name}</figcaption></figure>")


def _comparison_table(result: ExperimentResult) -> str:
    e = html.escape
    chance = any(c.chance is not None for c in result.comparisons)
    head = ("<tr><th>quantity</th><th>published</th><th>ours</th><th>verdict</th>"
            + ("<th>chance</th>" if chance else "") + "<th>scale</th><th>note</th></tr>")
    rows = []
    for c in result.comparisons:
        extra = f"<td class='n'>{e(_fmt(c.chance))}</td>" if chance else ""
        rows.append(f"<tr><td>{e(c.quantity)}</td><td>{e(_fmt(c.published))}</td>"
                    f"<td class='n'>{e(_fmt(c.ours))}</td>{_verdict_cell(c)}{extra}"
                    f"<td>{e(c.scale)}</td><td>{e(c.note)}</td></tr>")
    return f"<table>{head}{''.join(rows)}</table>"


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
        parts.append(_comparison_table(result))
    notes = [n for n in result.notes if not _PROVENANCE.search(n)]
    provenance = list(result.provenance) + [n for n in result.notes if _PROVENANCE.search(n)]
    if notes:
        parts.append("<ul>" + "".join(f"<li>{e(n)}</li>" for n in notes) + "</ul>")
    if result.error:
        last = result.error.strip().splitlines()[-1]
        parts.append(f"<p class='failed'>{e(last)}</p><details><summary>traceback</summary>"
                     f"<pre class='failed'>{e(result.error)}</pre></details>")
    parts += [_figure_tag(out_root / result.name / f) for f in result.figures]
    settings = ", ".join(f"{k}={v}" for k, v in result.settings.items()) or "defaults"
    made = "".join(f"<li>{e(p)}</li>" for p in provenance)
    parts.append("<details><summary>Provenance: settings, rerun command"
                 + (", how the models were made" if provenance else "") + "</summary>"
                 f"<p class='meta'>Settings: {e(settings)}</p>"
                 f"<p>Rerun: <code>{e(result.command)}</code></p>"
                 + (f"<ul>{made}</ul>" if made else "") + "</details></section>")
    return "\n".join(parts)


def _summary(results: list[ExperimentResult]) -> str:
    e = html.escape
    head = ("<tr><th>experiment</th><th>paper</th><th>status</th>"
            + "".join(f"<th>{e(v)}</th>" for v in VERDICTS)
            + "<th>mode</th><th>wall time</th></tr>")
    rows = []
    for r in sorted(results, key=_worst_first):
        counts = verdict_counts(r)
        cells = "".join(
            f"<td class='n {_CLASS[v] if counts[v] else 'zero'}'>{counts[v]}</td>"
            for v in VERDICTS)
        rows.append(f"<tr><td class='name'><a href='#{e(r.name)}'>{e(r.name)}</a></td>"
                    f"<td title='{e(r.paper)}'>{e(_short_paper(r.paper))}</td>"
                    f"<td class='{e(r.status)}'>{e(r.status)}</td>{cells}<td>{e(r.mode)}</td>"
                    f"<td class='n'>{r.wall_time_s:.1f} s</td></tr>")
    total = tally([c.verdict for r in results for c in r.comparisons])
    foot = ("<tr><th colspan='3'>all comparisons</th>"
            + "".join(f"<th class='n'>{total[v]}</th>" for v in VERDICTS)
            + "<th colspan='2'></th></tr>")
    return f"<table>{head}{''.join(rows)}{foot}</table>"


def _shortfalls(results: list[ExperimentResult]) -> str:
    """Every row that contradicts the paper or falls short of it, worst first."""
    e = html.escape
    bad = [(SEVERITY[c.verdict], r, c) for r in sorted(results, key=_worst_first)
           for c in r.comparisons if c.verdict in (CONTRADICTS, FALLS_SHORT)]
    failed = [r for r in results if r.status != "ok"]
    if not bad and not failed:
        return "<p class='ok'>No comparison contradicts the paper or falls short of it.</p>"
    items = [f"<li><a href='#{e(r.name)}'>{e(r.name)}</a>: <span class='failed'>failed"
             "</span> (no result)</li>" for r in failed]
    items += [f"<li><span class='verdict {_CLASS[c.verdict]}'>{e(c.verdict)}</span> "
              f"<a href='#{e(r.name)}'>{e(r.name)}</a>: {e(c.quantity)} — ours "
              f"{e(_fmt(c.ours))}, published {e(_fmt(c.published))}</li>"
              for _, r, c in sorted(bad, key=lambda t: t[0])]
    return f"<h2 id='shortfalls'>What falls short</h2><ul>{''.join(items)}</ul>"


def write_report(out_root: str | Path, results: Iterable[ExperimentResult] | None = None,
                 unavailable: dict[str, str] | None = None) -> Path:
    """Write ``<out_root>/report.html``; by default from every result.json under ``out_root``.

    Parameters
    ----------
    out_root : str or Path
        The results folder (created if needed); the report is written there.
    results : iterable of ExperimentResult or None, default=None
        The results to show (None: :func:`load_results` of ``out_root``).
    unavailable : dict of str to str or None, default=None
        ``{room: why}`` for rooms that could not run (listed at the end).

    Returns
    -------
    Path
        The written ``report.html``, one self-contained page.

    Examples
    --------
    >>> from icml25.core import Comparison, ExperimentResult
    >>> r = ExperimentResult("demo", "core", "A paper", "Table 1", "quick", 0, {}, "cmd",
    ...                      comparisons=[Comparison("error", 0.1, published=0.12)])
    >>> path = write_report("results", [r])
    >>> path.name, "demo" in path.read_text(encoding="utf-8")
    ('report.html', True)
    """
    out_root = Path(out_root)
    out_root.mkdir(parents=True, exist_ok=True)
    results = load_results(out_root) if results is None else list(results)
    e = html.escape
    now = datetime.now(UTC).isoformat(timespec="seconds")
    body = [f"<h1>icml25 reproduction report</h1><p class='meta'>icml25 {e(__version__)} · "
            f"written {e(now)}</p>"]
    if unavailable:
        body.append("<p class='warn'>Not run here (missing extra): "
                    + "; ".join(f"<b>{e(k)}</b>" for k in unavailable)
                    + " — see <a href='#unavailable'>the end of the page</a>.</p>")
    if results:
        body.append("<p class='meta'>Each comparison's verdict comes from the rule its "
                    "experiment states (shown under the verdict): <i>agrees</i>; <i>within "
                    "scale gap</i> (the difference is what our smaller scale explains, or the "
                    "effect is inconclusive at it); <i>falls short</i>; <i>contradicts</i> (the "
                    "opposite of the paper's claim); <i>not comparable</i> (no published "
                    "counterpart, or nothing to judge at this scale).</p>")
        body.append(_summary(results))
        body.append(_shortfalls(results))
        body += [_section(r, out_root) for r in results]
    else:
        body.append("<p class='empty'>No experiments have been run: none is registered yet, or "
                    "none was selected. <code>icml25 reproduce --list</code> shows what "
                    "exists.</p>")
    if unavailable:
        items = "".join(f"<li><b>{e(k)}</b>: {e(v)}</li>" for k, v in unavailable.items())
        body.append(f"<h2 id='unavailable'>Not run here: an extra is missing</h2><ul>{items}</ul>")
    page = ("<!doctype html><html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>icml25 reproduction report</title><style>{_CSS}</style></head><body>"
            + "\n".join(body) + f"<script>{_JS}</script></body></html>")
    path = out_root / "report.html"
    path.write_text(page, encoding="utf-8")
    return path
