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
    candidate reply with its MR (``scores``) and the std across samples (``stds``)."""

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
    """Every pair that passes the gap rule, in input order."""
    return [p for t in turns if (p := select_dpo_pair(t, min_gap)) is not None]


def sft_rows(turns: Iterable[ScoredTurn], min_score: float = -math.inf) -> list[dict[str, Any]]:
    """One ``{"messages": prompt + best reply}`` row per conversation: the latest turn of each
    ``conv_id`` (longest prompt), skipping conversations whose best MR is below ``min_score``."""
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
    """Write rows as JSON lines (UTF-8); return the count."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with p.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    return n


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Read JSON lines, naming the line of any malformed record."""
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
