"""The repository speaks of itself: no text says how or when it was made.

Docs, data READMEs, benchmarks, RESULTS, code, comments and test names describe the code and its
results. Work sessions, people at work and tracker numbers mean nothing to a reader who cannot
open them, so a line that names one fails this test with its file and line number.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HISTORY = re.compile(
    r"\bsessions? [0-9]|\bthe lead\b|helper-[0-9]|\bissue[ -]?[0-9]{1,3}\b|engineers'",
    re.IGNORECASE,
)
BINARY = {".png", ".jpg", ".npz", ".safetensors", ".pt", ".gz", ".ico", ".woff", ".woff2", ".pdf"}


def _tracked_files() -> list[Path]:
    """The files under version control (a clean clone's files), else every file but caches."""
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                             check=True).stdout
        names = [n for n in out.decode().split("\0") if n]
    except (OSError, subprocess.CalledProcessError):
        skip = {".git", ".venv", "site", "results", "runs", "__pycache__"}
        names = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*")
                 if p.is_file() and not skip & set(p.relative_to(ROOT).parts)]
    return [ROOT / n for n in names if Path(n).suffix.lower() not in BINARY]


def test_history_words_in_lines_are_found():
    for line in ("as in session 3", "the lead's commit", "issue 29, point 6", "issue-22 rows",
                 "other engineers' runs", "helper-3 measured"):
        assert HISTORY.search(line), line
    for line in ("a database session", "the helper function", "tissue 12", "the leader"):
        assert not HISTORY.search(line), line


def test_no_file_speaks_of_how_the_project_was_made():
    found = []
    for path in _tracked_files():
        if path == Path(__file__).resolve():  # its own examples of what is looked for
            continue
        if not path.exists():  # deleted in the working tree, not yet committed
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if HISTORY.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:120]}")
    assert not found, "history in the repository's text:\n" + "\n".join(found)
