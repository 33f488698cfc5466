"""MkDocs hooks: the pages of the site that are generated, never written by hand.

- ``api/<room>.md``: one page per subsystem, one entry per name in the room's ``__all__``
  (rendered by mkdocstrings from the docstring of the object the name points to);
- ``cli.md``: every ``icml25`` command with its usage, help and options, walked from the Typer
  app (``typer.main.get_command``);
- ``<!-- verdicts: ROOM -->`` in a page becomes the table of that subsystem's published-vs-ours
  rows, read from the result records in ``docs/reproduce/records/`` (``make docs-records``
  refreshes them from a run of ``icml25 reproduce``).

Everything here runs at build time only; ``mkdocs build --strict`` fails on any warning.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import logging
import re
from pathlib import Path

#: a warning here fails ``mkdocs build --strict`` like MkDocs' own
log = logging.getLogger("mkdocs.plugins.icml25")

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "icml25"
RECORDS = ROOT / "docs" / "reproduce" / "records"

#: room -> (title in the nav, extra to install; None: the core install)
ROOMS: dict[str, tuple[str, str | None]] = {
    "conformal": ("conformal", None),
    "worstoff": ("worstoff", None),
    "royalties": ("royalties", None),
    "missing_score": ("missing_score", "torch"),
    "mdm": ("mdm", "torch"),
    "creativity": ("creativity", "torch"),
    "collab": ("collab", "llm"),
    "review": ("review", "review"),
    "nn": ("nn", "torch"),
    "core": ("core", None),
}


# --------------------------------------------------------------------------- API reference
def _defined_in(room: str, name: str) -> str | None:
    """Dotted module of ``room`` whose source assigns ``name`` at top level (constants)."""
    pkg = SRC / room
    files = sorted(pkg.rglob("*.py"), key=lambda p: (p.name == "__init__.py", str(p)))
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            targets = (node.targets if isinstance(node, ast.Assign)
                       else [node.target] if isinstance(node, ast.AnnAssign) else [])
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                rel = path.relative_to(SRC.parent).with_suffix("")
                parts = list(rel.parts)
                if parts[-1] == "__init__":
                    parts.pop()
                return ".".join(parts)
    return None


def api_entries(room: str) -> list[tuple[str, str, str]]:
    """``(name, kind, dotted path of its definition)`` for each name in ``icml25.<room>.__all__``.

    ``kind`` is ``class``, ``function`` or ``constant``. Importing the room resolves lazily
    exported names (``icml25.mdm`` loads its torch modules on first use).
    """
    module = importlib.import_module(f"icml25.{room}")
    out = []
    for name in module.__all__:
        obj = getattr(module, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            kind = "class" if inspect.isclass(obj) else "function"
            path = f"{obj.__module__}.{obj.__qualname__}"
        else:
            kind = "constant"
            where = _defined_in(room, name)
            if where is None:
                raise ValueError(f"icml25.{room}.{name}: no top-level assignment found")
            path = f"{where}.{name}"
        out.append((name, kind, path))
    return out


def api_page(room: str) -> str:
    """Markdown of the API page of ``room`` (mkdocstrings directives, grouped by kind)."""
    module = importlib.import_module(f"icml25.{room}")
    doc = inspect.getdoc(module) or ""
    first = doc.split("\n\n")[0].replace("\n", " ")
    extra = ROOMS[room][1]
    install = (f"`pip install 'icml25[{extra}]'`" if extra else "`pip install icml25` (core)")
    lines = [f"# `icml25.{room}`", "", first, "", f"Install: {install}. "
             f"Every name below is importable as `from icml25.{room} import NAME`; "
             "each entry below is rendered from its docstring.", ""]
    entries = api_entries(room)
    for kind, title in (("class", "Classes"), ("function", "Functions"),
                        ("constant", "Registries and constants")):
        chosen = [e for e in entries if e[1] == kind]
        if not chosen:
            continue
        lines += [f"## {title}", ""]
        for _, _, path in sorted(chosen, key=lambda e: e[0].lower()):
            lines += [f"::: {path}", ""]
    return "\n".join(lines)


# --------------------------------------------------------------------------- CLI reference
def cli_command():
    """The ``icml25`` command group with every subsystem's real sub-app mounted (Typer's own
    click classes: duck-typed here, never ``isinstance`` against the ``click`` package)."""
    import typer

    from icml25 import cli

    group = typer.main.get_command(cli.get_app([]))
    for module in cli.SUBAPPS:
        name = module.replace("_", "-")
        real = typer.main.get_command(cli.get_app([name]))
        group.commands[name] = real.commands[name]
    cli.quiet_flags(group)
    return group


def _option_row(param, ctx) -> str:
    record = param.get_help_record(ctx)
    if record is None:  # an argument
        names = f"`{param.human_readable_name}`"
        helptext = getattr(param, "help", "") or ""
    else:
        names = ", ".join(f"`{n.strip()}`" for n in record[0].split(", "))
        helptext = record[1]
    helptext = helptext.replace("|", "\\|").replace("\n", " ")
    return f"| {names} | {helptext} |"


def _cli_sections(cmd, path: list[str], parent, level: int) -> list[str]:
    ctx = cmd.context_class(cmd, info_name=path[-1], parent=parent)
    full = " ".join(path)
    out = [f"{'#' * min(level, 6)} `{full}`", ""]
    helptext = inspect.cleandoc(cmd.help or "").replace("\b\n", "")
    if helptext:
        out += [helptext, ""]
    out += ["```text", " ".join(cmd.collect_usage_pieces(ctx)).join(
        [f"Usage: {full} ", ""]), "```", ""]
    params = [p for p in cmd.get_params(ctx)
              if not getattr(p, "hidden", False) and p.name != "help"]
    if params:
        out += ["| option | description |", "|---|---|"]
        out += [_option_row(p, ctx) for p in params]
        out += [""]
    if hasattr(cmd, "commands"):
        for name in sorted(cmd.commands):
            sub = cmd.commands[name]
            if getattr(sub, "hidden", False):
                continue
            out += _cli_sections(sub, [*path, name], ctx, level + 1)
    return out


def cli_page() -> str:
    """Markdown of the CLI reference, walked from the Typer app."""
    head = ["# CLI reference", "",
            "Generated from the `icml25` Typer app when the site is built; "
            "`icml25 COMMAND --help` prints the same text.", ""]
    return "\n".join(head + _cli_sections(cli_command(), ["icml25"], None, 2))


# --------------------------------------------------------------------------- verdicts
_MARKER = re.compile(r"<!-- verdicts: ([\w-]+) -->")


def _cell(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list):
        return "[" + ", ".join(_cell(v) for v in value) + "]"
    return str(value).replace("|", "\\|").replace("\n", " ")


def load_records(room: str) -> list[dict]:
    """The committed result records of ``room``'s experiments, by experiment name."""
    out = []
    for path in sorted(RECORDS.glob("*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        if record.get("subsystem") == room:
            out.append(record)
    return out


def verdict_table(room: str) -> str:
    """Markdown: each experiment of ``room`` with its rows (quantity, published, ours, verdict)."""
    records = load_records(room)
    if not records:
        log.warning(f"no result records for {room!r} in {RECORDS}; run `make docs-records`")
        return f"*No result records for {room} yet: `make docs-records` writes them.*"
    lines = []
    for rec in records:
        when = rec.get("started_at") or ""
        lines += [f"**`{rec['name']}`** — {rec.get('reproduces', '')} "
                  f"({rec.get('mode', '')} scale, seed {rec.get('seed', 0)}"
                  f"{', ' + when[:10] if when else ''}; "
                  f"rerun: `icml25 reproduce {rec['name']} --{rec.get('mode', 'quick')}`)", ""]
        rows = rec.get("comparisons") or []
        if not rows:
            lines += [f"No comparison rows (status: {rec.get('status', '?')}).", ""]
            continue
        lines += ["| quantity | published | ours | verdict | scale |", "|---|---|---|---|---|"]
        for c in rows:
            lines.append(f"| {_cell(c.get('quantity'))} | {_cell(c.get('published'))} | "
                         f"{_cell(c.get('ours'))} | **{_cell(c.get('verdict'))}** | "
                         f"{_cell(c.get('scale'))} |")
        lines.append("")
    return "\n".join(lines)


VERDICTS = ("agrees", "within scale gap", "falls short", "contradicts", "not comparable")


def summary_table() -> str:
    """Markdown: per experiment, how many rows reach each verdict (problems first)."""
    records = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(RECORDS.glob("*.json"))]
    if not records:
        log.warning(f"no result records in {RECORDS}; run `make docs-records`")
        return "*No result records yet: `make docs-records` writes them.*"
    lines = ["| experiment | subsystem | " + " | ".join(VERDICTS) + " | run |",
             "|---|---|" + "---|" * len(VERDICTS) + "---|"]
    for rec in records:
        counts = [sum(c.get("verdict") == v for c in rec.get("comparisons", [])) for v in VERDICTS]
        cells = [str(n) if n else "·" for n in counts]
        lines.append(f"| `{rec['name']}` | {rec['subsystem']} | " + " | ".join(cells)
                     + f" | {rec.get('mode', '')}, {(rec.get('started_at') or '')[:10]} |")
    return "\n".join(lines)


def figure_gallery(room: str) -> str:
    """Markdown images of every committed figure of ``room``'s experiments."""
    lines = []
    for rec in load_records(room):
        for fig in rec.get("figures", []):
            path = RECORDS.parent / "figures" / rec["name"] / Path(fig).name
            if path.is_file():
                rel = path.relative_to(ROOT / "docs").as_posix()
                lines.append(f"![{rec['name']}: {path.stem}]({rel}){{ width=\"420\" }}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- MkDocs events
def _nav_paths(nav) -> set[str]:
    out: set[str] = set()
    for item in nav if isinstance(nav, list) else [nav]:
        if isinstance(item, str):
            out.add(item)
        elif isinstance(item, dict):
            for value in item.values():
                out |= _nav_paths(value)
    return out


def complete_nav(nav: list, docs_dir: Path) -> list:
    """``nav`` with the pages it does not list yet: every note under ``notes/`` (newest first)
    in *Notes*, and every other top-level guide page in *Guides*, after the guide whose name
    starts its own (``mdm-planners.md`` after ``mdm.md``)."""
    listed = _nav_paths(nav)
    for item in nav:
        if not isinstance(item, dict):
            continue
        (title, section), = item.items()
        if title == "Notes" and isinstance(section, list):
            notes = sorted((p.relative_to(docs_dir).as_posix()
                            for p in (docs_dir / "notes").glob("*.md") if p.name != "index.md"),
                           reverse=True)
            section += [n for n in notes if n not in listed]
        if title == "Guides" and isinstance(section, list):
            for page in sorted(p.name for p in docs_dir.glob("*.md")):
                if page in listed:
                    continue
                stem = page.removesuffix(".md")
                at = len(section)
                for i, entry in enumerate(section):
                    path = next(iter(entry.values())) if isinstance(entry, dict) else entry
                    if isinstance(path, str) and stem.startswith(path.removesuffix(".md") + "-"):
                        at = i + 1
                        while at < len(section) and _starts(section[at], path):
                            at += 1
                section.insert(at, page)
    return nav


def _starts(entry, guide: str) -> bool:
    path = next(iter(entry.values())) if isinstance(entry, dict) else entry
    return isinstance(path, str) and path.startswith(guide.removesuffix(".md") + "-")


def on_config(config):
    config["nav"] = complete_nav(config["nav"], Path(config["docs_dir"]))
    return config


def on_files(files, config):
    from mkdocs.structure.files import File

    for room in ROOMS:
        files.append(File.generated(config, f"api/{room}.md", content=api_page(room)))
    files.append(File.generated(config, "cli.md", content=cli_page()))
    return files


_SUMMARY = "<!-- verdicts-summary -->"
_FIGURES = re.compile(r"<!-- figures: ([\w-]+) -->")


def on_page_markdown(markdown, page, config, files):
    markdown = markdown.replace(_SUMMARY, summary_table()) if _SUMMARY in markdown else markdown
    markdown = _FIGURES.sub(lambda m: figure_gallery(m.group(1)), markdown)
    return _MARKER.sub(lambda m: verdict_table(m.group(1)), markdown)
