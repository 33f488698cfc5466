"""The command line's error contract: one line naming the extra on a core-only
install, `missing-score` and `missing_score` alike, and exit codes that say a command failed."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from icml25.core import load_experiments, select

EASY = "530070000600195000098000060800060003400803001700020006060000280000419005000080079"


def _icml25_without(blocked: list[str], args: list[str]) -> subprocess.CompletedProcess:
    """Run the CLI in a fresh interpreter where ``blocked`` modules cannot be imported -- what a
    core-only install (`pip install icml25`) sees."""
    code = ("import sys\n"
            f"for name in {blocked!r}: sys.modules[name] = None\n"
            "from icml25.cli import main\n"
            f"main({args!r})\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize(("blocked", "args", "extra"), [
    (["torch"], ["mdm", "solve", EASY], "torch"),
    (["torch"], ["missing-score", "graph", "nothing.csv"], "torch"),
    (["fastapi"], ["review", "demo"], "review"),
])
def test_a_missing_extra_is_one_line_naming_it(blocked, args, extra):
    r = _icml25_without(blocked, args)
    assert r.returncode != 0
    assert "Traceback" not in r.stderr, r.stderr
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and f"icml25[{extra}]" in lines[0]


def test_subsystem_names_accept_dash_and_underscore():
    load_experiments()
    assert select(["missing-score"]) == select(["missing_score"]) != []
    r = subprocess.run([sys.executable, "-m", "icml25", "missing_score", "--help"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "graph" in r.stdout


def test_mdm_solve_fails_when_every_input_is_rejected(tmp_path):
    from typer.testing import CliRunner

    from icml25.mdm.cli import app

    out = CliRunner().invoke(app, ["solve", "123"])
    assert out.exit_code == 1 and out.stdout.startswith("error: ")
    ok = CliRunner().invoke(app, ["solve", EASY, "--steps", "5"])
    assert ok.exit_code == 0, ok.output


def test_collab_reward_fails_when_no_candidate_gets_a_reward(tmp_path):
    pytest.importorskip("openai")
    from typer.testing import CliRunner

    from icml25.collab.cli import app

    conv = tmp_path / "conv.json"
    conv.write_text(json.dumps({"task": "Say hi", "reference": "hi", "history": [
        {"role": "user", "content": "Say hi"}], "candidates": ["hi"],
        "metric": {"type": "bleu", "reference": "hi"}}))
    out = CliRunner().invoke(app, ["reward", str(conv), "--model",
                                   "openai:foo@http://127.0.0.1:9/v1", "--retries", "1",
                                   "--timeout", "2", "--samples", "1", "--window", "1"])
    assert out.exit_code == 1, out.output
    assert "no candidate got a reward" in out.output
    fine = CliRunner().invoke(app, ["reward", str(conv), "--samples", "1", "--window", "1"])
    assert fine.exit_code == 0, fine.output
    conv.write_text(json.dumps({"history": [], "candidates": ["hi"], "metric": {"type": "bleu"}}))
    bad = CliRunner().invoke(app, ["reward", str(conv)])
    assert bad.exit_code == 2 and "a 'bleu' metric needs 'reference'" in bad.output
