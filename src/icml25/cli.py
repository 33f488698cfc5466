"""The ``icml25`` command. Subsystem sub-apps are mounted lazily: ``icml25 --help`` imports no
subsystem, so it stays fast and never loads torch, the web stack or an LLM client.

Only Typer's public API is used: the root app lists each subsystem as a light placeholder (its
one-line help), and ``get_app(argv)`` swaps in the real sub-app of the subsystem being invoked.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Annotated

import typer

from icml25 import __version__

# module -> one-line help. Each is ``icml25.<module>.cli`` exposing a Typer ``app``, mounted as
# ``icml25 <module with - for _>``.
SUBAPPS: dict[str, str] = {
    "conformal": "Conformal prediction as Bayesian quadrature: risk bounds and calibration.",
    "worstoff": "Value of prediction vs access in identifying the worst-off (PAR).",
    "creativity": "Algorithmic creativity: four tasks, exact scorer, NTP/teacherless/diffusion.",
    "collab": "CollabLLM: multiturn-aware rewards, user simulator, DPO data.",
    "review": "Peer-review platform with two-stage author feedback.",
    "royalties": "Shapley royalty shares for training-data creators.",
    "mdm": "Masked diffusion with adaptive unmasking order: Sudoku and Zebra puzzles.",
    "missing_score": "Score matching and sparse graphical models from data with missing values.",
}

app = typer.Typer(
    help="icml25: the ICML 2025 outstanding papers as software you can run.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"icml25 {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[bool, typer.Option(
        "--version", callback=_version, is_eager=True, help="Print the version and exit.")] = False,
) -> None:
    """icml25: the ICML 2025 outstanding papers as software you can run."""


@app.command()
def reproduce(
    names: Annotated[list[str] | None, typer.Argument(
        help="Experiments or whole subsystems to run (default: all).")] = None,
    full: Annotated[bool, typer.Option(
        "--full/--quick", help="Paper scale (--full) or a fast check (--quick, default).")] = False,
    out: Annotated[Path, typer.Option("--out", help="Output folder.")] = Path("results"),
    seed: Annotated[int, typer.Option(min=0, help="Seed for every experiment.")] = 0,
    list_: Annotated[bool, typer.Option(
        "--list", help="List registered experiments and exit.")] = False,
    jobs: Annotated[int | None, typer.Option(
        "--jobs", "-j", min=1,
        help="Local worker processes (default: the cores this process may use).")] = None,
    executor: Annotated[str | None, typer.Option(
        "--executor", envvar="ICML25_EXECUTOR",
        help="A Dask scheduler address (tcp://HOST:PORT) to run the cells on "
             "(needs the 'dask' extra).")] = None,
    fresh: Annotated[bool, typer.Option(
        "--fresh", help="Recompute cells cached in OUT/.cells by an earlier run.")] = False,
) -> None:
    """Run the papers' headline experiments; write results/<name>/ and results/report.html.

    Experiments and their cells run on local processes (--jobs) or a Dask cluster
    (--executor); finished cells are cached, so an interrupted run resumes where it stopped.
    Experiments whose extra is not installed are skipped (and listed); none can run: exit 1.
    """
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from icml25.core import load_experiments, select, write_report
    from icml25.core.errors import MissingExtraError
    from icml25.core.registry import rooms_for
    from icml25.core.registry import unavailable as unavailable_experiments

    console = Console()
    load_experiments(None if list_ else rooms_for(names or []))
    try:
        chosen = select(names or [])
    except KeyError as exc:
        raise typer.BadParameter(exc.args[0], param_hint="NAMES") from None
    except MissingExtraError as exc:
        _fail(str(exc))
    picked = {e.name for e in chosen}
    cannot = [u for u in unavailable_experiments() if not names or u.name in picked]
    if list_:
        _print_list([e for e in chosen if not e.missing_extras()], cannot)
        return
    blocked = [e for e in chosen if e.missing_extras()]
    if blocked and len(blocked) == len(chosen):  # nothing asked for can run: an error
        by_why: dict[str, list[str]] = {}
        for e in blocked:
            by_why.setdefault(e.why_unavailable(), []).append(e.name)
        _fail("; ".join(f"{', '.join(n)} cannot run here: {why}" for why, n in by_why.items()))
    chosen = [e for e in chosen if e not in blocked]
    skipped = {u.name: u.why for u in cannot}  # listed in the report and below the summary

    mode = "full" if full else "quick"
    import time

    from icml25.core.cells import make_executor
    from icml25.core.progress import LiveView
    from icml25.core.scheduler import run_many, write_summary

    if not executor and len(chosen) == 1 and not chosen[0].cells:
        jobs = 1  # one whole experiment: nothing to run side by side, no worker to start
    try:
        pool = make_executor(jobs, executor)
    except (ConnectionError, ValueError) as exc:
        _fail(str(exc))
    summary = Table()
    summary.add_column("experiment", no_wrap=True)  # the name a user types again: never broken
    for column in ("status", "verdicts", "cells", "wall time"):
        summary.add_column(column)
    t0 = time.perf_counter()
    try:
        with pool:
            records = run_many(chosen, mode=mode, seed=seed, out_root=out, executor=pool,
                               fresh=fresh, view=LiveView())
    except KeyboardInterrupt:
        console.print(f"interrupted: finished cells are kept in {out / '.cells'}; the same "
                      "command again computes only the missing ones", markup=False,
                      style="yellow")
        raise typer.Exit(code=130) from None
    wall = time.perf_counter() - t0
    write_summary(out, records, mode=mode, seed=seed, executor=pool.description, wall_s=wall)
    failed = 0
    for rec in records:
        result = rec.result
        failed += result.status != "ok"
        style = "green" if result.status == "ok" else "red"
        cells = f"{rec.cells_total}" + (f", {rec.cells_cached} cached" if rec.cells_cached
                                        else "") + (f", {rec.cells_failed} failed"
                                                    if rec.cells_failed else "")
        summary.add_row(result.name, f"[{style}]{result.status}[/]", _verdicts(result), cells,
                        f"{rec.wall_s:.1f} s")
        if result.error:
            console.print(f"{result.name}:", style="red", markup=False)
            console.print(escape(result.error), style="red", markup=False)
    cached = sum(r.cells_cached for r in records)
    total = sum(r.cells_total for r in records)
    report = write_report(out, unavailable=skipped or None)
    if chosen:
        console.print(summary)
    else:
        console.print("No experiments are registered yet; the report says so.")
    for name, why in skipped.items():
        console.print(f"skipped {name}: {why}", markup=False, style="yellow")
    if chosen:
        console.print(f"cells: {total} ({cached} cached from an earlier run), wall "
                      f"{wall:.1f} s on {pool.description}", markup=False)
    console.print(f"report: {report}", markup=False)
    if failed:
        raise typer.Exit(code=1)


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=1)


def _verdicts(result) -> str:
    """'3 agree, 1 falls short' — the result's verdict counts, problems in colour."""
    from icml25.core.verdicts import tally

    colour = {"agrees": "green", "within scale gap": "yellow", "falls short": "red",
              "contradicts": "bold red", "not comparable": "dim"}
    counts = tally([c.verdict for c in result.comparisons])
    parts = [f"[{colour[v]}]{n} {v}[/]" for v, n in counts.items() if n]
    return ", ".join(parts) or "-"


def _unavailable_line(why: str) -> str:
    """``UNAVAILABLE: needs the 'torch' extra (pip install 'icml25[torch]')`` from a reason."""
    import re

    m = re.search(r"icml25\[([\w,-]+)\]", why)
    if not m:
        return f"UNAVAILABLE here: {why}"
    return f"UNAVAILABLE here: needs the '{m.group(1)}' extra (pip install 'icml25[{m.group(1)}]')"


def _print_list(chosen, cannot) -> None:
    """Experiments by subsystem, names in full on their own column, wrapped to the terminal."""
    import shutil
    import textwrap

    width = max(shutil.get_terminal_size((100, 24)).columns, 40)
    rows = [(e.subsystem, e.name, e.reproduces, "") for e in chosen]
    rows += [(u.subsystem, u.name, u.reproduces, _unavailable_line(u.why)) for u in cannot]
    if not rows:
        typer.echo("No experiments are registered yet.")
        return
    order = {room: i for i, room in enumerate(SUBAPPS)}
    name_w = min(max(len(r[1]) for r in rows) + 2, width // 2)
    text_w = max(width - name_w - 2, 20)
    head = ("icml25 reproduce NAME runs one (a subsystem name runs its experiments; no name: "
            "all). The settings of --quick and --full are in each record's provenance in "
            "results/report.html.")
    typer.echo("\n".join(textwrap.wrap(head, width)))
    room = None
    for sub, name, what, how in sorted(rows, key=lambda r: (order.get(r[0], 99), r[1])):
        if sub != room:
            typer.echo(f"\n{sub}")
            room = sub
        lines = textwrap.wrap(what, text_w) + textwrap.wrap(how, text_w)
        pad = " " * (name_w + 2)
        if len(name) + 2 > name_w:  # a name longer than the column: alone on its line
            typer.echo(f"  {name}")
            first = pad + (lines[0] if lines else "")
        else:
            first = f"  {name.ljust(name_w)}{lines[0] if lines else ''}"
        typer.echo(first.rstrip())
        for line in lines[1:]:
            typer.echo(pad + line)


def get_app(argv: list[str]) -> typer.Typer:
    """The root app, with the real sub-app of the subsystem named first in ``argv`` (if any)."""
    wanted = next((a for a in argv if not a.startswith("-")), None)
    root = typer.Typer(
        help=app.info.help, no_args_is_help=True, add_completion=False,
        pretty_exceptions_enable=False,
    )
    root.registered_callback = app.registered_callback
    root.registered_commands = list(app.registered_commands)
    for module, help_text in SUBAPPS.items():
        name = module.replace("_", "-")
        if name == wanted:
            sub = importlib.import_module(f"icml25.{module}.cli").app
        else:
            sub = typer.Typer(help=help_text, no_args_is_help=True)
            sub.callback()(_placeholder)
        root.add_typer(sub, name=name, help=help_text)
    return root


def _placeholder() -> None:
    """Loaded on use."""


def quiet_flags(command) -> None:
    """Drop the ``<bool>`` placeholder that the help shows beside every on/off flag, in
    ``command`` and all its sub-commands (a flag takes no value, so there is nothing to type)."""
    params = list(getattr(command, "params", []))
    try:  # --help is made on first use and kept: make it now, to quieten it too
        params.append(command.get_help_option(command.context_class(command)))
    except Exception:  # noqa: BLE001 - only cosmetic: keep the placeholder rather than fail
        pass
    for param in params:
        if getattr(param, "param_type_name", "") == "option" and getattr(param, "is_flag", 0):
            param.metavar = ""
    for sub in getattr(command, "commands", {}).values():
        quiet_flags(sub)


def main(argv: list[str] | None = None) -> None:
    import sys

    from icml25.core.errors import EXTRA_OF, MissingExtraError, extra_message

    argv = list(sys.argv[1:] if argv is None else argv)
    for i, arg in enumerate(argv):  # `missing_score` names the sub-app `missing-score` too
        if not arg.startswith("-"):
            if arg in SUBAPPS:
                argv[i] = arg.replace("_", "-")
            break
    try:
        command = typer.main.get_command(get_app(argv))
        quiet_flags(command)
        command.main(args=argv, prog_name="icml25")
    except MissingExtraError as exc:
        sys.exit(f"error: {exc}")
    except ModuleNotFoundError as exc:
        top = (exc.name or "").split(".")[0]
        if top not in EXTRA_OF:
            raise
        sys.exit(f"error: this command {extra_message(EXTRA_OF[top], top)}")


if __name__ == "__main__":
    main()
