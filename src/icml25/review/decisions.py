"""A venue's decision types (pure): each a short key stored with the decision, a label shown to
people, and whether it accepts the paper (oral, poster, reject ...). One place validates a
venue's list; the services store it as JSON on the venue."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from functools import lru_cache

KEY_RE = re.compile(r"[a-z][a-z0-9-]{0,15}")
MAX_TYPES = 12


@dataclass(frozen=True)
class DecisionType:
    key: str  # stored in decisions.outcome (at most 16 characters)
    label: str  # what authors and chairs read
    accepted: bool  # whether the paper is in the programme


DEFAULT_TYPES = (DecisionType("accept", "Accept", True), DecisionType("reject", "Reject", False))
DEFAULT_JSON = json.dumps([asdict(t) for t in DEFAULT_TYPES])


class DecisionTypeError(ValueError):
    """A list of decision types that cannot be used (the message says why)."""


def clean_types(rows: list[dict]) -> list[DecisionType]:
    """Validate a list of {key, label, accepted}: 2..12 types, unique keys matching
    ``[a-z][a-z0-9-]{0,15}``, a label of 1..60 characters, at least one accepting and one
    rejecting type."""
    if not isinstance(rows, list) or not 2 <= len(rows) <= MAX_TYPES:
        raise DecisionTypeError(f"give between 2 and {MAX_TYPES} decision types")
    out = []
    for i, row in enumerate(rows, start=1):
        if not isinstance(row, dict):
            raise DecisionTypeError(f"decision type {i}: expected key, label and accepted")
        key = str(row.get("key", "")).strip().lower()
        label = str(row.get("label", "")).strip()
        if not KEY_RE.fullmatch(key):
            raise DecisionTypeError(f"decision type {i}: the key '{key}' must be 1-16 of a-z, "
                                    "0-9 and '-', starting with a letter")
        if not 1 <= len(label) <= 60:
            raise DecisionTypeError(f"decision type '{key}': a label of 1-60 characters")
        if not isinstance(row.get("accepted"), bool):
            raise DecisionTypeError(f"decision type '{key}': say whether it accepts the paper")
        out.append(DecisionType(key, label, row["accepted"]))
    if len({t.key for t in out}) != len(out):
        raise DecisionTypeError("each decision key appears once")
    if not any(t.accepted for t in out) or all(t.accepted for t in out):
        raise DecisionTypeError("at least one type must accept and one must reject")
    return out


def parse_lines(text: str) -> list[dict]:
    """The admin form's text, one type a line: ``key | label | accept`` (or ``reject``)."""
    rows = []
    for n, line in enumerate((text or "").splitlines(), start=1):
        if not line.strip():
            continue
        parts = [p.strip() for p in line.split("|")]
        if len(parts) != 3 or parts[2].lower() not in ("accept", "reject"):
            raise DecisionTypeError(f"line {n}: write 'key | label | accept' or "
                                    "'key | label | reject'")
        rows.append({"key": parts[0], "label": parts[1], "accepted": parts[2].lower() == "accept"})
    return rows


def types_of(stored: str | None) -> list[DecisionType]:
    """A venue's stored list (the default when empty or unreadable)."""
    try:
        return clean_types(json.loads(stored)) if stored else list(DEFAULT_TYPES)
    except (ValueError, TypeError):
        return list(DEFAULT_TYPES)


@lru_cache(maxsize=256)
def accepted_keys(stored: str | None) -> frozenset[str]:
    """The keys of a venue's types that accept the paper (asked for every fact about a decided
    paper, hence remembered per stored list)."""
    return frozenset(t.key for t in types_of(stored) if t.accepted)


def to_json(types: list[DecisionType]) -> str:
    return json.dumps([asdict(t) for t in types])


def label_of(stored: str | None, key: str) -> str:
    """The label of ``key`` in a venue's list (the key itself if no longer listed)."""
    return next((t.label for t in types_of(stored) if t.key == key), key)


# the e-mail authors get at notification; a chair may rewrite it with these fields only
# (nothing that could name a reviewer)
MAIL_FIELDS = ("number", "title", "venue", "decision")
DEFAULT_MAIL = ("Dear authors,\n\nthe decision on submission #{number} \"{title}\" at {venue} "
                "is: {decision}.\n\nThe meta-review is available on the platform.")


def clean_mail(template: str) -> str:
    """Check a decision e-mail template: 1..5000 characters, only ``{number}``, ``{title}``,
    ``{venue}`` and ``{decision}`` as fields (write ``{{`` for a brace)."""
    import string

    template = (template or "").replace("\r\n", "\n").strip()
    if not 1 <= len(template) <= 5000:
        raise DecisionTypeError("the decision e-mail needs 1-5000 characters")
    try:
        parts = [(f, spec, conv) for _, f, spec, conv in string.Formatter().parse(template)
                 if f is not None]
    except ValueError as exc:
        raise DecisionTypeError(f"the decision e-mail has a stray brace ({exc})") from None
    if any(spec or conv for _, spec, conv in parts):
        raise DecisionTypeError("write fields plainly, e.g. {title} (no ':' or '!')")
    fields = [f for f, _, _ in parts]
    unknown = sorted({f for f in fields if f not in MAIL_FIELDS})
    if unknown:
        raise DecisionTypeError(f"unknown field {{{unknown[0]}}}; use "
                                + ", ".join(f"{{{f}}}" for f in MAIL_FIELDS))
    return template


def render_mail(template: str | None, **fields: object) -> str:
    """The e-mail for one submission (the default text when the template is empty)."""
    return (template or DEFAULT_MAIL).format(**{f: fields[f] for f in MAIL_FIELDS})
