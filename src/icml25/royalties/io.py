"""Files: reading corpora, baselines and artifacts with clear errors; writing and verifying
statements. (With ``cli``, the only module of the room that touches the file system.)

Layout of a corpora folder: one entry per rights holder, either a text file ``<holder>.txt`` or
a folder ``<holder>/`` of ``*.txt`` documents. Holders are sorted by name so the order (and hence
every statement) does not depend on the file system.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from icml25.royalties.errors import RoyaltyInputError
from icml25.royalties.statements import (
    RoyaltyStatement,
    compute_statement,
    format_cents,
    statement_files,
)

TEXT_SUFFIXES = (".txt", ".md")


def read_text(path: str | Path, what: str = "file") -> str:
    """UTF-8 text of ``path`` or a RoyaltyInputError saying why it cannot be read.

    Parameters
    ----------
    path : str or Path
        The file to read.
    what : str, default="file"
        What the file is, for the error message (e.g. ``"artifact"``).

    Returns
    -------
    str
        The file's text.

    Raises
    ------
    RoyaltyInputError
        If the path is missing, not a regular file, not UTF-8 or unreadable.

    Examples
    --------
    >>> from pathlib import Path
    >>> _ = Path("a.txt").write_text("hello", encoding="utf-8")
    >>> read_text("a.txt")
    'hello'
    >>> try:
    ...     read_text("nope.txt", "artifact")
    ... except RoyaltyInputError as err:
    ...     print(err)
    artifact 'nope.txt' does not exist
    """
    path = Path(path)
    if not path.exists():
        raise RoyaltyInputError(f"{what} {str(path)!r} does not exist")
    if not path.is_file():
        raise RoyaltyInputError(f"{what} {str(path)!r} is not a regular file")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise RoyaltyInputError(f"{what} {str(path)!r} is not UTF-8 text ({exc.reason})") from None
    except OSError as exc:
        raise RoyaltyInputError(f"cannot read {what} {str(path)!r}: {exc.strerror}") from None


def _text_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir()
                  if p.is_file() and p.suffix in TEXT_SUFFIXES and not p.name.startswith("."))


def load_corpora(folder: str | Path) -> dict[str, list[str]]:
    """``{holder: [documents]}`` from a corpora folder (see the module docstring).

    Parameters
    ----------
    folder : str or Path
        A folder of ``<holder>.txt`` files and/or ``<holder>/`` folders of ``.txt`` (or
        ``.md``) documents; hidden entries and other files are ignored.

    Returns
    -------
    dict of str to list of str
        Each holder's documents, holders sorted by name.

    Raises
    ------
    RoyaltyInputError
        If the folder is missing, holds no holders, a holder appears twice, a holder folder
        has no documents, or a holder's corpus is empty.

    Examples
    --------
    >>> from pathlib import Path
    >>> Path("corpora/bob").mkdir(parents=True)
    >>> _ = Path("corpora/bob/d1.txt").write_text("a dog ran", encoding="utf-8")
    >>> _ = Path("corpora/ann.txt").write_text("the cat sat", encoding="utf-8")
    >>> load_corpora("corpora")
    {'ann': ['the cat sat'], 'bob': ['a dog ran']}
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise RoyaltyInputError(f"corpora folder {str(folder)!r} does not exist or is not a folder")
    corpora: dict[str, list[str]] = {}
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith("."):
            continue
        if entry.is_dir():
            files = _text_files(entry)
            if not files:
                raise RoyaltyInputError(f"holder folder {str(entry)!r} has no .txt documents")
            docs = [read_text(p, f"document of holder {entry.name!r}") for p in files]
            name = entry.name
        elif entry.suffix in TEXT_SUFFIXES:
            docs, name = [read_text(entry, "corpus file")], entry.stem
        else:
            continue
        if name in corpora:
            raise RoyaltyInputError(f"holder {name!r} appears twice in {str(folder)!r}")
        if not any(d.strip() for d in docs):
            raise RoyaltyInputError(f"holder {name!r} has an empty corpus ({str(entry)!r})")
        corpora[name] = docs
    if not corpora:
        raise RoyaltyInputError(
            f"no holders found in {str(folder)!r}: expected <holder>.txt files or <holder>/ "
            "folders of .txt documents")
    return corpora


def load_artifacts(path: str | Path) -> dict[str, str]:
    """``{artifact id: text}`` from one file (id = file stem) or a folder of text files.

    Parameters
    ----------
    path : str or Path
        One text file, or a folder of ``.txt``/``.md`` files.

    Returns
    -------
    dict of str to str
        Artifact id (file stem) -> text.

    Raises
    ------
    RoyaltyInputError
        If the file is unreadable, the folder has no text files, or an artifact is empty.

    Examples
    --------
    >>> from pathlib import Path
    >>> _ = Path("poem.txt").write_text("the cat ran", encoding="utf-8")
    >>> load_artifacts("poem.txt")
    {'poem': 'the cat ran'}
    """
    path = Path(path)
    if path.is_dir():
        files = _text_files(path)
        if not files:
            raise RoyaltyInputError(f"artifacts folder {str(path)!r} has no .txt files")
    else:
        files = [path]
    arts = {p.stem: read_text(p, "artifact") for p in files}
    for key, text in arts.items():
        if not text.strip():
            raise RoyaltyInputError(f"artifact {key!r} is empty")
    return arts


def write_corpus_tree(folder: str | Path, corpora: dict[str, list[str]], baseline: list[str],
                      artifacts: dict[str, str]) -> dict[str, Path]:
    """Write a scenario as files the CLI reads: corpora/<holder>/doc-NN.txt, baseline.txt,
    artifacts/<id>.txt. Returns the three paths.

    Parameters
    ----------
    folder : str or Path
        Where to write (created if needed).
    corpora : dict of str to list of str
        Each holder's documents.
    baseline : list of str
        Baseline documents, joined by blank lines into ``baseline.txt``.
    artifacts : dict of str to str
        Artifact id -> text.

    Returns
    -------
    dict of str to Path
        ``{"corpora": ..., "baseline": ..., "artifacts": ...}``.

    Examples
    --------
    >>> paths = write_corpus_tree("tree", {"ann": ["the cat sat"]}, ["the end"],
    ...                           {"a1": "the cat"})
    >>> sorted(p.name for p in paths.values())
    ['artifacts', 'baseline.txt', 'corpora']
    >>> load_artifacts(paths["artifacts"])["a1"].strip()
    'the cat'
    """
    folder = Path(folder)
    corp, arts = folder / "corpora", folder / "artifacts"
    for holder, docs in corpora.items():
        (corp / holder).mkdir(parents=True, exist_ok=True)
        for i, doc in enumerate(docs):
            (corp / holder / f"doc-{i + 1:02d}.txt").write_text(doc + "\n", encoding="utf-8")
    arts.mkdir(parents=True, exist_ok=True)
    for key, text in artifacts.items():
        (arts / f"{key}.txt").write_text(text + "\n", encoding="utf-8")
    base = folder / "baseline.txt"
    base.write_text("\n\n".join(baseline) + "\n", encoding="utf-8")
    return {"corpora": corp, "baseline": base, "artifacts": arts}


def write_statement(st: RoyaltyStatement, out_dir: str | Path) -> list[Path]:
    """Write the statement files under ``out_dir``; returns their paths.

    Parameters
    ----------
    st : RoyaltyStatement
        The statement (from :func:`compute_statement`).
    out_dir : str or Path
        Folder to write into (created if needed).

    Returns
    -------
    list of Path
        The written files (those of :func:`statement_files`).

    Examples
    --------
    >>> st = compute_statement({"ann": "the cat sat", "bob": "a dog ran"},
    ...                        {"a1": "the cat sat"}, "10.00", order=2, tokenizer="word")
    >>> sorted(p.name for p in write_statement(st, "out"))[:2]
    ['ann.csv', 'ann.json']
    """
    out = Path(out_dir)
    paths = []
    for rel, text in statement_files(st).items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


def verify_statement(folder: str | Path, corpora: Mapping[str, str | Sequence[str]],
                     artifacts: Mapping[str, str],
                     baseline: str | Sequence[str] | None = None) -> list[str]:
    """Recompute the statement in ``folder`` from its own audit record and the given inputs;
    return the files that differ (empty: reproduced bit for bit).

    Parameters
    ----------
    folder : str or Path
        A folder written by :func:`write_statement`.
    corpora : mapping of str to str or sequence of str
        The holders' corpora the statement was computed from.
    artifacts : mapping of str to str
        The artifacts, by id.
    baseline : str, sequence of str or None, default=None
        The baseline corpus used, if any.

    Returns
    -------
    list of str
        Relative paths of files that are missing or differ; empty when reproduced.

    Raises
    ------
    RoyaltyInputError
        If ``folder`` has no readable statement written by this module.

    Examples
    --------
    >>> corpora, arts = {"ann": "the cat sat", "bob": "a dog ran"}, {"a1": "the cat sat"}
    >>> st = compute_statement(corpora, arts, "10.00", order=2, tokenizer="word")
    >>> _ = write_statement(st, "out")
    >>> verify_statement("out", corpora, arts)
    []
    """
    folder = Path(folder)
    st = json.loads(read_text(folder / "statement.json", "statement"))
    try:
        audit, model, val = st["audit"], st["audit"]["model"], st["audit"]["valuation"]
        weights = audit["money"]["artifact_weights"]
        again = compute_statement(
            corpora, artifacts, format_cents(int(st["pool_cents"])), baseline=baseline,
            period=st["period"], currency=st["currency"], weights=weights,
            order=model["order"], tokenizer=model["tokenizer"], discount=model["discount"],
            method=val["method"], exact_limit=val["exact_limit"],
            groups=val["ownership_groups"], seed=val["seed"], rel_se_tol=val["rel_se_tol"],
            max_permutations=val["max_permutations"],
            # statements written before the evidence rule paid every positive value
            min_evidence=audit.get("evidence", {}).get("min_evidence_nats_per_token", 0.0))
    except (KeyError, TypeError) as exc:
        raise RoyaltyInputError(f"{str(folder)!r} does not hold a statement written by this "
                                f"module (missing {exc})") from None
    differ = []
    for rel, text in statement_files(again).items():
        path = folder / rel
        if not path.is_file() or path.read_bytes() != text.encode("utf-8"):
            differ.append(rel)
    return differ
