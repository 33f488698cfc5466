"""The subsystem guides' examples run as written, like the README's (``test_readme.py``).

Every fenced ```python and ```bash block of the guides below runs in a fresh process in an
empty folder, unless the line just above it says why not (``<!-- not run: REASON -->``) or
marks it ``<!-- slow -->`` (runs under ``pytest -m slow``). The review platform's examples get
a review home of their own in the temporary folder, never the reader's ``~/.icml25-review``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from test_readme import blocks

DOCS = Path(__file__).resolve().parents[1] / "docs"
GUIDES = ["index.md", "install.md", "conformal.md", "worstoff.md", "worstoff-levers.md",
          "royalties.md", "royalties-evidence.md", "missing_score.md", "missing_score-practice.md",
          "mdm.md", "mdm-decoder.md", "creativity.md", "collab.md", "collab-online.md",
          "review.md",
          "review-chairs.md", "review-operators.md", "review-onboarding.md", "nn.md", "nn-gpu.md",
          "reproduce.md"]
#: pages whose examples a test of their own runs
CHECKED_ELSEWHERE = {"conformal-practice.md": "tests/conformal/test_conformal_practice_doc.py"}


def test_every_page_of_the_site_is_checked():
    """A new guide page joins GUIDES, so its examples run too (notes are not run: they record
    measurements, each with its command)."""
    assert sorted(p.name for p in DOCS.glob("*.md")) == sorted([*GUIDES, *CHECKED_ELSEWHERE])


def _params():
    out = []
    for name in GUIDES:
        for lang, code, marker, line in blocks((DOCS / name).read_text(encoding="utf-8")):
            if marker.startswith("<!-- not run:"):
                continue
            marks = [pytest.mark.slow] if marker == "<!-- slow -->" else []
            out.append(pytest.param(lang, code, id=f"{name}:{line}-{lang}", marks=marks))
    return out


@pytest.mark.parametrize("name", GUIDES)
def test_every_skipped_block_says_why(name):
    found = blocks((DOCS / name).read_text(encoding="utf-8"))
    assert found, f"{name} has no example"
    for _, _, marker, line in found:
        assert marker in ("", "<!-- slow -->") or re.fullmatch(
            r"<!-- not run: \S.*\S -->", marker), (name, line, marker)


@pytest.mark.parametrize(("lang", "code"), _params())
def test_guide_block_runs(lang, code, tmp_path):
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "ICML25_NO_PROGRESS": "1", "MPLBACKEND": "Agg",
           "ICML25_REVIEW_HOME": str(tmp_path / "review-home"), "ICML25_ARGON2_TIME_COST": "1",
           "ICML25_ARGON2_MEMORY_KIB": "8192"}
    env.pop("ICML25_DATABASE_URL", None)
    env.pop("ICML25_UPLOAD_DIR", None)
    cmd = [sys.executable, "-c", code] if lang == "python" else [
        "bash", "-euo", "pipefail", "-c", code]
    r = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
