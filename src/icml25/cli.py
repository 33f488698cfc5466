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
    "mdm": "Masked diffusion with adaptive unmasking order: solve and train Sudoku.",
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
) -> None:
    """Run the papers' headline experiments; write results/<name>/ and results/report.html."""
    from rich.console import Console
    from rich.table import Table

    from icml25.core import load_experiments, run_experiment, select, write_report

    console = Console()
    unavailable = load_experiments()
    try:
        chosen = select(names or [])
    except KeyError as exc:
        raise typer.BadParameter(exc.args[0], param_hint="NAMES") from None

    if list_:
        table = Table("experiment", "subsystem", "reproduces", "quick", "full")
        for exp in chosen:
            table.add_row(exp.name, exp.subsystem, exp.reproduces,
                          _settings(exp.quick), _settings(exp.full))
        console.print(table if chosen else "No experiments are registered yet.")
        for room, why in unavailable.items():
            console.print(f"[yellow]{room} unavailable:[/] {why}")
        return

    mode = "full" if full else "quick"
    summary = Table("experiment", "status", "wall time")
    failed = 0
    for exp in chosen:
        console.print(f"[bold]running[/] {exp.name} ({mode})")
        result = run_experiment(exp, mode=mode, seed=seed, out_root=out)
        failed += result.status != "ok"
        style = "green" if result.status == "ok" else "red"
        summary.add_row(exp.name, f"[{style}]{result.status}[/]", f"{result.wall_time_s:.1f} s")
        if result.error:
            console.print(f"[red]{result.error}[/]")
    report = write_report(out, unavailable=unavailable)
    if chosen:
        console.print(summary)
    else:
        console.print("No experiments are registered yet; the report says so.")
    console.print(f"report: {report}")
    if failed:
        raise typer.Exit(code=1)


def _settings(settings: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in settings.items())


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


# a heavy dependency -> the extra that brings it (for the one-line error on a core-only install)
EXTRA_OF = {
    "torch": "torch", "safetensors": "torch",
    "fastapi": "review", "sqlalchemy": "review", "alembic": "review", "argon2": "review",
    "uvicorn": "review", "jinja2": "review", "psycopg": "review", "ortools": "review",
    "cryptography": "review", "pydantic_settings": "review", "swagger_ui_bundle": "review",
    "multipart": "review", "openai": "llm", "transformers": "llm", "trl": "llm",
    "datasets": "llm", "sacrebleu": "llm", "sympy": "llm",
}


def main(argv: list[str] | None = None) -> None:
    import sys

    from icml25.core.errors import MissingExtraError

    argv = list(sys.argv[1:] if argv is None else argv)
    for i, arg in enumerate(argv):  # `missing_score` names the sub-app `missing-score` too
        if not arg.startswith("-"):
            if arg in SUBAPPS:
                argv[i] = arg.replace("_", "-")
            break
    try:
        get_app(argv)(args=argv, prog_name="icml25")
    except MissingExtraError as exc:
        sys.exit(f"error: {exc}")
    except ModuleNotFoundError as exc:
        top = (exc.name or "").split(".")[0]
        if top not in EXTRA_OF:
            raise
        sys.exit(f"error: this command needs '{top}', which comes with the '{EXTRA_OF[top]}' "
                 f"extra: pip install 'icml25[{EXTRA_OF[top]}]'")


if __name__ == "__main__":
    main()
