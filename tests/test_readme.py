"""The README's examples run as written.

Every fenced ```python and ```bash block runs, each in a fresh process in an empty folder,
unless the line just above it says why not: ``<!-- not run: REASON -->`` (it needs the
reader's own data, an LLM endpoint, or a long training run), or ``<!-- slow -->`` (runs
under ``pytest -m slow``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
_BLOCK = re.compile(r"(?:^(<!--[^\n]*-->)\n)?^```(python|bash)\n(.*?)^```", re.M | re.S)


def blocks(text: str) -> list[tuple[str, str, str, int]]:
    """``(language, code, marker, line)`` of each python/bash block, marker '' when none."""
    return [(m.group(2), m.group(3), (m.group(1) or "").strip(),
             text.count("\n", 0, m.start(2)) + 1) for m in _BLOCK.finditer(text)]


def _params():
    out = []
    for lang, code, marker, line in blocks(README.read_text(encoding="utf-8")):
        if marker.startswith("<!-- not run:"):
            continue
        marks = [pytest.mark.slow] if marker == "<!-- slow -->" else []
        out.append(pytest.param(lang, code, id=f"README.md:{line}-{lang}", marks=marks))
    return out


def test_every_skipped_block_says_why():
    found = blocks(README.read_text(encoding="utf-8"))
    assert len(found) >= 8
    for _, _, marker, line in found:
        assert marker in ("", "<!-- slow -->") or re.fullmatch(
            r"<!-- not run: \S.*\S -->", marker), (line, marker)
    assert sum(lang == "python" and not m for lang, _, m, _ in found) >= 2  # run by default


def test_the_block_parser_honours_markers():
    text = ("```python\nprint(1)\n```\n<!-- not run: needs x -->\n```bash\nfalse\n```\n"
            "<!-- slow -->\n```bash\ntrue\n```\n")
    assert [(lang, m) for lang, _, m, _ in blocks(text)] == [
        ("python", ""), ("bash", "<!-- not run: needs x -->"), ("bash", "<!-- slow -->")]


@pytest.mark.parametrize(("lang", "code"), _params())
def test_readme_block_runs(lang, code, tmp_path):
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "ICML25_NO_PROGRESS": "1", "MPLBACKEND": "Agg"}
    cmd = [sys.executable, "-c", code] if lang == "python" else [
        "bash", "-euo", "pipefail", "-c", code]
    r = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
