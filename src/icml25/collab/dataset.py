"""DPO pairs and SFT rows from MR-scored candidates, exported as JSONL in TRL's formats.

Preference rows use TRL's *conversational* preference format, which ``DPOTrainer`` reads
directly::

    {"prompt": [{"role": "user", "content": ...}, ...],
     "chosen": [{"role": "assistant", "content": ...}],
     "rejected": [{"role": "assistant", "content": ...}],
     "score_chosen": 1.2, "score_rejected": 0.4}

SFT rows use the conversational language-modelling format ``{"messages": [...]}`` that
``SFTTrainer`` reads.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from icml25.collab.chat import Message, validate_messages


@dataclass
class ScoredTurn:
    """One point of a conversation: the prompt (history ending in a user message) and each
    candidate reply with its MR (``scores``) and the std across samples (``stds``).

    Parameters
    ----------
    prompt : list of dict
        The history, ``{"role", "content"}`` messages ending with a user message.
    candidates : list of str
        The candidate assistant replies.
    scores : list of float
        The MR of each candidate (NaN when no sample had a finite reward).
    stds : list of float, default=[]
        The std of each candidate's sample rewards (empty if unknown).
    conv_id : str, default=""
        Which conversation the turn belongs to (``sft_rows`` keeps the latest per id).

    Raises
    ------
    ValueError
        If a message is malformed, or ``candidates``, ``scores`` (and non-empty ``stds``)
        differ in length.

    Examples
    --------
    >>> t = ScoredTurn([{"role": "user", "content": "Write a poem."}],
    ...                ["Here it is: ...", "About what, and how long?"], [0.2, 0.9])
    >>> t.candidates[t.scores.index(max(t.scores))]
    'About what, and how long?'
    """

    prompt: list[dict[str, Any]]
    candidates: list[str]
    scores: list[float]
    stds: list[float] = field(default_factory=list)
    conv_id: str = ""

    def __post_init__(self) -> None:
        self.prompt = validate_messages(self.prompt)
        if len(self.candidates) != len(self.scores):
            raise ValueError("candidates and scores must have the same length")
        if self.stds and len(self.stds) != len(self.scores):
            raise ValueError("stds must be empty or match scores")

    @classmethod
    def from_scores(cls, prompt: Sequence[Message], scores: Sequence[Any],
                    conv_id: str = "") -> ScoredTurn:
        """From :class:`~icml25.collab.reward.CandidateScore` objects."""
        return cls(list(prompt), [s.candidate for s in scores], [s.mr for s in scores],
                   [s.std for s in scores], conv_id)


def select_dpo_pair(turn: ScoredTurn, min_gap: float = 0.0) -> dict[str, Any] | None:
    """Chosen = highest-MR candidate, rejected = lowest; ``None`` when the gap is below
    ``min_gap`` or fewer than two candidates have a finite score.

    When the scores tie exactly and ``min_gap`` is 0, the lower-std candidate is chosen (the
    paper-era rule); a tie with equal stds gives no pair.

    Parameters
    ----------
    turn : ScoredTurn
        The scored candidates of one turn.
    min_gap : float, default=0.0
        Smallest MR difference between chosen and rejected.

    Returns
    -------
    dict or None
        A row in TRL's conversational preference format (``prompt``, ``chosen``,
        ``rejected``, ``score_chosen``, ``score_rejected``), or ``None``.

    Raises
    ------
    ValueError
        If ``min_gap`` is negative or not finite.

    Examples
    --------
    >>> t = ScoredTurn([{"role": "user", "content": "Write a poem."}],
    ...                ["Roses are red.", "About what?", "..."], [0.2, 0.9, float("nan")])
    >>> pair = select_dpo_pair(t)
    >>> pair["chosen"], pair["rejected"], pair["score_chosen"]
    ([{'role': 'assistant', 'content': 'About what?'}],
     [{'role': 'assistant', 'content': 'Roses are red.'}], 0.9)
    >>> select_dpo_pair(t, min_gap=1.0) is None
    True
    """
    if min_gap < 0 or not math.isfinite(min_gap):
        raise ValueError("min_gap must be finite and >= 0")
    idx = [i for i, s in enumerate(turn.scores) if s is not None and math.isfinite(s)]
    if len(idx) < 2:
        return None
    best = max(idx, key=lambda i: turn.scores[i])
    worst = min(idx, key=lambda i: turn.scores[i])
    gap = turn.scores[best] - turn.scores[worst]
    if gap < min_gap:
        return None
    if gap == 0:
        stds = turn.stds or [math.nan] * len(turn.scores)
        finite = [i for i in idx if math.isfinite(stds[i])]
        if len(finite) < 2:
            return None
        best = min(finite, key=lambda i: stds[i])
        worst = max(finite, key=lambda i: stds[i])
        if stds[best] == stds[worst]:
            return None
    return {"prompt": turn.prompt,
            "chosen": [{"role": "assistant", "content": turn.candidates[best]}],
            "rejected": [{"role": "assistant", "content": turn.candidates[worst]}],
            "score_chosen": float(turn.scores[best]),
            "score_rejected": float(turn.scores[worst])}


def dpo_rows(turns: Iterable[ScoredTurn], min_gap: float = 0.0) -> list[dict[str, Any]]:
    """Every pair that passes the gap rule, in input order.

    Parameters
    ----------
    turns : iterable of ScoredTurn
        Scored turns, e.g. from :func:`grow_conversation`.
    min_gap : float, default=0.0
        Smallest MR difference between chosen and rejected; see :func:`select_dpo_pair`.

    Returns
    -------
    list of dict
        One preference row per turn that gives a pair.

    Raises
    ------
    ValueError
        If ``min_gap`` is negative or not finite.

    Examples
    --------
    >>> hi = [{"role": "user", "content": "hi"}]
    >>> turns = [ScoredTurn(hi, ["a", "b"], [0.1, 0.5]), ScoredTurn(hi, ["c", "d"], [0.3, 0.3])]
    >>> [(r["chosen"][0]["content"], r["rejected"][0]["content"]) for r in dpo_rows(turns)]
    [('b', 'a')]
    """
    return [p for t in turns if (p := select_dpo_pair(t, min_gap)) is not None]


def sft_rows(turns: Iterable[ScoredTurn], min_score: float = -math.inf) -> list[dict[str, Any]]:
    """One ``{"messages": prompt + best reply}`` row per conversation: the latest turn of each
    ``conv_id`` (longest prompt), skipping conversations whose best MR is below ``min_score``.

    Turns without a ``conv_id`` each count as their own conversation.

    Parameters
    ----------
    turns : iterable of ScoredTurn
        Scored turns of one or more conversations.
    min_score : float, default=-inf
        Smallest best MR a conversation needs to give a row.

    Returns
    -------
    list of dict
        Rows in TRL's conversational language-modelling format ``{"messages": [...]}``.

    Examples
    --------
    >>> u1 = [{"role": "user", "content": "hi"}]
    >>> u2 = [*u1, {"role": "assistant", "content": "Hello!"},
    ...       {"role": "user", "content": "bye"}]
    >>> turns = [ScoredTurn(u1, ["Hello!"], [0.5], conv_id="c1"),
    ...          ScoredTurn(u2, ["Bye!", "Goodbye."], [0.7, 0.2], conv_id="c1")]
    >>> [m["content"] for m in sft_rows(turns)[0]["messages"]]
    ['hi', 'Hello!', 'bye', 'Bye!']
    >>> sft_rows(turns, min_score=0.8)
    []
    """
    latest: dict[str, ScoredTurn] = {}
    for i, t in enumerate(turns):
        key = t.conv_id or f"_{i}"
        if key not in latest or len(t.prompt) > len(latest[key].prompt):
            latest[key] = t
    rows = []
    for t in latest.values():
        finite = [i for i, s in enumerate(t.scores) if math.isfinite(s)]
        if not finite:
            continue
        best = max(finite, key=lambda i: t.scores[i])
        if t.scores[best] >= min_score:
            rows.append({"messages": [*t.prompt,
                                      {"role": "assistant", "content": t.candidates[best]}]})
    return rows


def write_jsonl(rows: Iterable[Mapping[str, Any]], path: str | Path) -> int:
    """Write rows as JSON lines (UTF-8); return the count.

    Parameters
    ----------
    rows : iterable of mapping
        JSON-serialisable records.
    path : str or Path
        The output file (parent folders are created; an existing file is replaced).

    Returns
    -------
    int
        The number of rows written.

    Examples
    --------
    >>> write_jsonl([{"a": 1}, {"a": 2}], "out/rows.jsonl")
    2
    >>> read_jsonl("out/rows.jsonl")
    [{'a': 1}, {'a': 2}]
    """
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with p.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    return n


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Read JSON lines, naming the line of any malformed record.

    Parameters
    ----------
    path : str or Path
        A UTF-8 JSONL file; blank lines are skipped.

    Returns
    -------
    list of dict
        The records, in file order.

    Raises
    ------
    FileNotFoundError
        If ``path`` is not a file.
    ValueError
        If a line is not valid JSON (the message gives ``path:line``).

    Examples
    --------
    >>> from pathlib import Path
    >>> _ = Path("rows.jsonl").write_text('{"a": 1}\\n\\n{"a": 2}\\n', encoding="utf-8")
    >>> read_jsonl("rows.jsonl")
    [{'a': 1}, {'a': 2}]
    >>> _ = Path("bad.jsonl").write_text('{"a": 1}\\n{a: 2}\\n', encoding="utf-8")
    >>> read_jsonl("bad.jsonl")
    Traceback (most recent call last):
    ...
    ValueError: bad.jsonl:2: not valid JSON (Expecting property name enclosed in double quotes)
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"no such file: {p}")
    rows = []
    for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{p}:{i}: not valid JSON ({exc.msg})") from None
    return rows
