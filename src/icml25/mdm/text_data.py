"""Text data for the mdm text experiment: the Python standard library's own source, as bytes.

Every Python installation has it and nothing is downloaded. Files are grouped by **top-level
module** (``email/utils.py`` and ``email/parser.py`` are both ``email``), and a hash of the module
name puts each module in ``train`` or ``held_out`` (about 1 in :data:`HELD_OUT_BUCKETS`), so the
split is the same on every machine for the modules it has, and no held-out module's file ever
reaches training. Test suites (``test/``, ``tests/``, ``idle_test/``) and third-party packages are
left out, as are files that are not UTF-8 or do not parse (the parse check of infilling needs
files that parse).

Tokens are bytes (0-255) plus :data:`MASK` and :data:`PAD`: no tokenizer to train, ship or
version, every file encodes losslessly, and exact match and "the file still parses" are judged on
exactly the bytes the model wrote. The price is short context: 256 bytes are ~6 lines of code.

Pure: reading files is the only I/O, and :func:`load_corpus` is its one entry point.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import hashlib
import sysconfig
from pathlib import Path

import numpy as np

MASK, PAD = 256, 257
VOCAB_SIZE = 258
SPLITS = ("train", "held_out")
HELD_OUT_BUCKETS = 8  # one module in 8 is held out
_SKIP_DIRS = {"test", "tests", "idle_test", "__pycache__", "site-packages", "dist-packages"}


def stdlib_root() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def module_of(relative: str) -> str:
    """The top-level module a file belongs to: ``email/utils.py`` -> ``email``."""
    first = Path(relative).parts[0]
    return first.removesuffix(".py")


def split_of(module: str) -> str:
    """``held_out`` for about one module in :data:`HELD_OUT_BUCKETS`, else ``train``; a hash of
    the name, so it is the same on every machine and Python version."""
    digest = int.from_bytes(hashlib.sha256(module.encode()).digest()[:8], "big")
    return "held_out" if digest % HELD_OUT_BUCKETS == 0 else "train"


@dataclasses.dataclass(frozen=True)
class SourceFile:
    path: str  # relative to the stdlib root
    module: str
    text: bytes


@dataclasses.dataclass(frozen=True)
class Corpus:
    """One split's files and their bytes laid end to end (each file ends with a newline)."""

    split: str
    files: tuple[SourceFile, ...]

    @property
    def modules(self) -> list[str]:
        return sorted({f.module for f in self.files})

    def n_bytes(self) -> int:
        return sum(len(f.text) for f in self.files)


def _candidate_paths(root: Path) -> list[Path]:
    paths = []
    for p in root.rglob("*.py"):
        parts = p.relative_to(root).parts
        if not _SKIP_DIRS.intersection(parts):
            paths.append(p)
    return sorted(paths, key=lambda p: p.relative_to(root).as_posix())


def _usable(text: bytes) -> bool:
    try:
        ast.parse(text.decode("utf-8"))
    except (UnicodeDecodeError, SyntaxError, ValueError):
        return False
    return True


def load_corpus(split: str, root: str | Path | None = None) -> Corpus:
    """The ``train`` or ``held_out`` files of the standard library at ``root`` (default: this
    Python's), in path order. Read once per process and folder (every file is parsed to check
    it, which takes seconds; a Corpus is immutable)."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    root = Path(root) if root is not None else stdlib_root()
    if not root.is_dir():
        raise FileNotFoundError(f"no standard library folder at {root}")
    return _load(split, root.resolve())


@functools.lru_cache(maxsize=8)
def _load(split: str, root: Path) -> Corpus:
    files = []
    for p in _candidate_paths(root):
        rel = p.relative_to(root).as_posix()
        module = module_of(rel)
        if split_of(module) != split:
            continue
        text = p.read_bytes()
        if not text.strip() or not _usable(text):
            continue
        files.append(SourceFile(rel, module, text if text.endswith(b"\n") else text + b"\n"))
    if not files:
        raise ValueError(f"no usable {split} files under {root}")
    return Corpus(split, tuple(files))


@dataclasses.dataclass(frozen=True)
class WindowIndex:
    """Where training windows may start: every line start of every file (cut at line ends, so
    a window never begins mid-line), in one flat byte array."""

    data: np.ndarray  # uint8, the files laid end to end
    starts: np.ndarray  # int64, line starts that leave room for a whole window in their file
    ends: np.ndarray  # int64, where each file ends in ``data`` (a window is padded past it)
    seq_len: int


def window_index(corpus: Corpus, seq_len: int) -> WindowIndex:
    """Index the line starts of ``corpus`` from which ``seq_len`` bytes stay inside one file."""
    chunks, starts, offset = [], [], 0
    for f in corpus.files:
        arr = np.frombuffer(f.text, dtype=np.uint8)
        line_starts = np.concatenate([[0], np.flatnonzero(arr == ord("\n")) + 1])
        ok = line_starts[line_starts + seq_len <= len(arr)]
        if len(ok) == 0 and len(arr) >= 1:  # a file shorter than a window: one padded window
            ok = np.array([0])
        starts.append(ok + offset)
        chunks.append(arr)
        offset += len(arr)
    ends = np.cumsum([len(c) for c in chunks]).astype(np.int64)
    return WindowIndex(np.concatenate(chunks), np.concatenate(starts).astype(np.int64), ends,
                       seq_len)


def windows(index: WindowIndex, picks: np.ndarray) -> np.ndarray:
    """``(len(picks), seq_len)`` int64 token windows starting at ``index.starts[picks]``; bytes
    past the end of a file are :data:`PAD`."""
    start = index.starts[picks]
    stop = index.ends[np.searchsorted(index.ends, start, side="right")]
    cols = start[:, None] + np.arange(index.seq_len)[None]
    out = index.data[np.minimum(cols, len(index.data) - 1)].astype(np.int64)
    out[cols >= stop[:, None]] = PAD
    return out


def encode(text: str | bytes) -> list[int]:
    return list(text.encode("utf-8") if isinstance(text, str) else text)


def decode(ids) -> str:
    """Bytes back to text; PAD and MASK are dropped, invalid UTF-8 is replaced."""
    return bytes(int(i) for i in ids if int(i) < 256).decode("utf-8", errors="replace")
