"""What a core-only install (`pip install icml25`, no extras) sees: every command that needs an
extra fails with one line naming it, commands that need none still work, and `reproduce --list`
marks each experiment that cannot run here with its extra.

The extras are hidden by an import hook that refuses their modules (as if never installed);
A slow test (`-m slow`) also builds a real core-only environment with `pip install .`.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from icml25.core import Outcome, experiment
from icml25.core.registry import unregister

EASY = "530070000600195000098000060800060003400803001700020006060000280000419005000080079"

# Runs each command in one fresh interpreter with every extra's modules hidden; prints, per
# command, [exit code or SystemExit message, stderr tail, traceback or ""].
_PROBE = r"""
import contextlib, importlib.abc, io, json, sys, traceback
from icml25.core.errors import EXTRA_OF

class _Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in EXTRA_OF:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, _Hide())
from icml25.cli import main

out = []
for args in json.loads(sys.argv[1]):
    err, code, tb = io.StringIO(), 0, ""
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            main(args)
        except SystemExit as exc:
            code = exc.code if exc.code is not None else 0
        except BaseException:
            tb = traceback.format_exc()
    out.append([code, err.getvalue()[-500:], tb])
print(json.dumps(out))
"""


def _core_only(commands: list[list[str]], cwd) -> list[tuple]:
    r = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(commands)], cwd=cwd,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return [tuple(x) for x in json.loads(r.stdout.splitlines()[-1])]


def _needing(tmp_path) -> list[tuple[list[str], str]]:
    """Every command that needs an extra, with arguments that get it past its own checks."""
    t = str(tmp_path)
    (tmp_path / "x.csv").write_text("a,b\n1,2\n")
    return [
        (["creativity", "train", "--task", "line", "--out", t + "/m"], "torch"),
        (["creativity", "evaluate", t], "torch"),
        (["mdm", "solve", EASY], "torch"),
        (["mdm", "train"], "torch"),
        (["mdm", "evaluate"], "torch"),
        (["mdm", "export", t, t + "/x"], "torch"),
        (["missing-score", "graph", t + "/x.csv"], "torch"),
        (["missing_score", "graph", t + "/x.csv"], "torch"),
        (["review", "init"], "review"),
        (["review", "demo"], "review"),
        (["review", "serve"], "review"),
        (["review", "backup"], "review"),
        (["review", "tick"], "review"),
        (["review", "send-mail"], "review"),
        (["review", "public-key", "v"], "review"),
        (["reproduce", "mdm"], "torch"),
        (["reproduce", "missing-score"], "torch"),
        (["reproduce", "review-outcome-bias"], "review"),
    ]


def test_every_command_that_needs_an_extra_says_so_in_one_line(tmp_path):
    cases = _needing(tmp_path)
    for (args, extra), (code, err, tb) in zip(cases, _core_only([a for a, _ in cases],
                                                               tmp_path), strict=True):
        assert not tb, (args, tb)
        message = code if isinstance(code, str) else err.strip()
        assert code != 0, args
        lines = [x for x in message.splitlines() if x.strip()]
        assert len(lines) == 1, (args, message)
        assert lines[0].startswith("error: ") and f"pip install 'icml25[{extra}]'" in lines[0], (
            args, lines[0])


def test_commands_without_an_extra_still_work_core_only(tmp_path):
    runs = _core_only([["--help"], ["conformal", "min-n", "--help"],
                       ["royalties", "demo", "--out", str(tmp_path / "demo")],
                       ["mdm", "generate", "--out", str(tmp_path / "p.txt"), "--n", "3"],
                       ["review", "simulate", "--help"]], tmp_path)
    for code, err, tb in runs:
        assert not tb and code == 0, (code, err, tb)
    assert (tmp_path / "demo").is_dir() and (tmp_path / "p.txt").exists()


def test_reproduce_list_marks_each_unavailable_experiment_with_its_extra(tmp_path):
    probe = _PROBE.replace("contextlib.redirect_stdout(io.StringIO())",
                           "contextlib.nullcontext()")
    r = subprocess.run([sys.executable, "-c", probe, json.dumps([["reproduce", "--list"]])],
                       capture_output=True, text=True, timeout=300, env={
                           **__import__("os").environ, "COLUMNS": "80"})
    listing = r.stdout.rsplit("\n[[", 1)[0]
    assert max(len(x) for x in listing.splitlines()) <= 80
    entries: dict[str, str] = {}
    name = None
    for line in listing.splitlines():
        if line.startswith("  ") and not line.startswith("   "):  # "  name   what it does"
            name, _, rest = line.strip().partition(" ")
            entries[name] = rest
        elif line.startswith("   ") and name:
            entries[name] += " " + line
        else:
            name = None

    def block(name):
        return " ".join(entries[name].split())
    for name in ("mdm-sudoku", "mdm-zebra", "creativity-construction", "creativity-discovery",
                 "missing_score-star-auc"):
        assert "UNAVAILABLE here: needs the 'torch' extra (pip install 'icml25[torch]')" in (
            block(name)), block(name)
    assert "needs the 'review' extra" in block("review-outcome-bias")
    assert "UNAVAILABLE" not in block("review-simulated-conference")
    assert "UNAVAILABLE" not in block("conformal-binomial")


@pytest.fixture
def toy_needing_torch(monkeypatch):
    from icml25.core import registry

    @experiment("toy-light", subsystem="toy", paper="Toy", reproduces="runs anywhere")
    def light(ctx):
        return Outcome()

    @experiment("toy-heavy", subsystem="toy", paper="Toy", reproduces="needs torch",
                requires=("torch",))
    def heavy(ctx):
        return Outcome()

    monkeypatch.setattr(registry, "extra_installed", lambda extra: extra != "torch")
    yield
    unregister("toy-light")
    unregister("toy-heavy")


def test_reproduce_skips_what_cannot_run_and_fails_when_nothing_can(tmp_path,
                                                                   toy_needing_torch):
    from typer.testing import CliRunner

    from icml25.cli import app

    both = CliRunner().invoke(app, ["reproduce", "toy", "--out", str(tmp_path)])
    assert both.exit_code == 0, both.output
    assert "skipped toy-heavy: needs the 'torch' extra" in both.output
    assert not (tmp_path / "toy-heavy").exists() and (tmp_path / "toy-light").is_dir()
    report = (tmp_path / "report.html").read_text()
    assert "toy-heavy" in report and "icml25[torch]" in report
    heavy = CliRunner().invoke(app, ["reproduce", "toy-heavy", "--out", str(tmp_path)])
    assert heavy.exit_code == 1
    assert "error: toy-heavy cannot run here: needs the 'torch' extra" in heavy.output


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_a_real_core_only_install(tmp_path):
    """`pip install .` into a fresh venv (no extras): the commands that need an extra say which,
    in one line, with no traceback; a core command runs."""
    import os
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    venv = tmp_path / "core"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
           "--disable-pip-version-check"]
    subprocess.run([*pip, str(root)], check=True, timeout=1500)
    icml25 = str(venv / "bin" / "icml25")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}

    def run(*args):
        return subprocess.run([icml25, *args], capture_output=True, text=True, cwd=tmp_path,
                              env=env, timeout=300)

    for args, extra in ((["mdm", "solve", EASY], "torch"), (["review", "demo"], "review"),
                        (["collab", "evaluate-lm"], "torch")):
        r = run(*args)
        assert r.returncode != 0, args
        assert "Traceback" not in r.stderr and f"icml25[{extra}]" in r.stderr, (args, r.stderr)
    listing = run("reproduce", "--list")
    assert listing.returncode == 0 and "UNAVAILABLE" in listing.stdout
    assert "icml25[torch]" in listing.stdout
    ok = run("worstoff", "--help")
    assert ok.returncode == 0
