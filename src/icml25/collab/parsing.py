"""Tolerant parsing of the structured (JSON) output that simulators and judges are asked for.

Small models and busy APIs return code fences, prose around the object, single quotes, trailing
commas, Python literals, triple-quoted strings, a bare number, ``null``, or a word where a number
was asked for ("high"). These helpers turn what can be salvaged into values and report the rest as
``None``; they never raise on model output.
"""

from __future__ import annotations

import ast
import json
import math
import re
from typing import Any

_FENCE = re.compile(r"```(?:json|JSON|python)?\s*(.*?)```", re.S)
_TRIPLE = re.compile(r'"""(.*?)"""', re.S)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")


def _balanced_objects(text: str) -> list[str]:
    """Every top-level ``{...}`` span, braces matched outside string literals."""
    spans, depth, start, quote, esc = [], 0, -1, "", False
    for i, ch in enumerate(text):
        if quote:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == quote:
                quote = ""
            continue
        if ch in "\"'" and depth > 0:
            quote = ch
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                spans.append(text[start:i + 1])
    return spans


def _loads(candidate: str) -> Any:
    fixed = _TRIPLE.sub(lambda m: json.dumps(m.group(1)), candidate)
    fixed = _TRAILING_COMMA.sub(r"\1", fixed)
    for attempt in (fixed, candidate):
        try:
            return json.loads(attempt, strict=False)
        except (json.JSONDecodeError, ValueError):
            pass
        try:  # single quotes, True/False/None
            return ast.literal_eval(attempt)
        except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
            pass
    return None


def extract_json_object(text: str | None) -> dict[str, Any] | None:
    """The first JSON object (a ``dict``) found in ``text``, or ``None``.

    A bare scalar such as ``42`` or ``"yes"`` is *not* an object and gives ``None`` (the
    official package turned it into an ``int`` and then crashed calling ``.get`` on it).
    Code fences, prose around the object, single quotes, trailing commas and Python literals
    are tolerated.

    Parameters
    ----------
    text : str or None
        A model's raw output.

    Returns
    -------
    dict or None
        The first object that parses, or ``None``; never raises on model output.

    Examples
    --------
    >>> extract_json_object('Sure! ```json\\n{"response": "hi",}\\n```')
    {'response': 'hi'}
    >>> extract_json_object("42") is None
    True
    """
    if not text or not isinstance(text, str):
        return None
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for chunk in candidates:
        for span in _balanced_objects(chunk) or [chunk.strip()]:
            value = _loads(span)
            if isinstance(value, dict):
                return value
    return None


_WORD_SCORES = {
    "none": 0.0, "no": 0.0, "low": 0.0, "poor": 0.0, "bad": 0.0, "false": 0.0, "incorrect": 0.0,
    "medium": 0.5, "moderate": 0.5, "average": 0.5, "partial": 0.5, "fair": 0.5,
    "high": 1.0, "yes": 1.0, "good": 1.0, "excellent": 1.0, "true": 1.0, "correct": 1.0,
}
_NUMBER = re.compile(r"[-+]?\d*\.?\d+(?:[eE][-+]?\d+)?")
_FRACTION = re.compile(r"([-+]?\d*\.?\d+)\s*/\s*(\d*\.?\d+)")


def parse_score(value: Any, *, lo: float = 0.0, hi: float = 1.0) -> float | None:
    """A judge's score as a float in ``[lo, hi]``, or ``None`` if nothing usable is there.

    Accepts numbers, numeric strings ("0.8", "2/3", "8 out of 10" → scaled when above ``hi``),
    booleans and rating words ("high" → ``hi``, "medium" → midpoint, "low" → ``lo``). On the
    default 0–1 scale a value in ``(10, 100]`` or a percentage reads as a percentage; other
    values are clipped to ``[lo, hi]``.

    Parameters
    ----------
    value : object
        A judge's score: number, string, boolean or ``None``.
    lo : float, default=0.0
        Lower end of the scale.
    hi : float, default=1.0
        Upper end of the scale.

    Returns
    -------
    float or None
        The score in ``[lo, hi]``, or ``None``; never raises on model output.

    Examples
    --------
    >>> parse_score("8 out of 10"), parse_score("75%"), parse_score(True)
    (0.8, 0.75, 1.0)
    >>> parse_score("high"), parse_score("2/3"), parse_score(None)
    (1.0, 0.6666666666666666, None)
    """
    if value is None:
        return None
    if isinstance(value, bool):
        return hi if value else lo
    if isinstance(value, (int, float)):
        x = float(value)
    elif isinstance(value, str):
        s = value.strip().lower()
        if s in _WORD_SCORES:
            return lo + _WORD_SCORES[s] * (hi - lo)
        frac = _FRACTION.search(s)
        if frac and float(frac.group(2)) > 0:
            x = float(frac.group(1)) / float(frac.group(2)) * (hi - lo) + lo
        else:
            m = _NUMBER.search(s)
            if m is None:
                word = next((w for w in re.findall(r"[a-z]+", s) if w in _WORD_SCORES), None)
                return None if word is None else lo + _WORD_SCORES[word] * (hi - lo)
            x = float(m.group(0))
            if "out of" in s or "/10" in s:
                top = _NUMBER.findall(s.split("out of")[-1]) if "out of" in s else ["10"]
                if top and float(top[0]) > 0:
                    x = x / float(top[0]) * (hi - lo) + lo
    else:
        return None
    if not math.isfinite(x):
        return None
    # Above a 0-1 scale: 10 < x <= 100 (or "x%") reads as a percentage; else clip to ``hi``.
    if hi == 1.0 and lo == 0.0 and x > hi and (x > 10 or (isinstance(value, str)
                                                          and "%" in value)) and x <= 100:
        x = x / 100.0
    return min(max(x, lo), hi)
