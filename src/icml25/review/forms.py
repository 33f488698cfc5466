"""Configurable, versioned review forms per venue (pure).

A venue's review form is the paper's six fixed fields (:data:`CORE_FIELDS`: summary, strengths
and questions in stage 1; weaknesses, score and confidence in stage 2 -- what the two-stage
release is about, so they stay) plus the fields its chairs add. Each added field has a kind
(:data:`KINDS`: text, a score on a labelled scale, a choice, a checkbox), whether it is
required, the stage it belongs to (1: released to authors first; 2: after they rated) and who
may read it (:class:`Audience`). The authority decides each reading
(``Action.VIEW_REVIEW_FIELD``); this module only describes and validates.

Forms are versioned: saving a form writes a new version and never changes an old one; a review
keeps the version it was written against (``reviews.form_version``; 0 is the built-in default,
the fixed form) and is rendered with it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from enum import StrEnum

from icml25.review.scales import CONFIDENCE, SCORE, Scale

KINDS = ("text", "score", "choice", "checkbox")
DEFAULT_VERSION = 0  # the built-in form: the six core fields and nothing else
MAX_FIELDS = 20
MAX_TEXT = 20_000  # like every other review text
KEY_RE = re.compile(r"^[a-z][a-z0-9_]{0,31}$")


class Audience(StrEnum):
    """Who may read an added field (the authority applies it, with the field's stage)."""

    AUTHORS = "authors"  # the authors too, under the two-stage rule; and the committee
    COMMITTEE = "committee"  # the paper's reviewers (after their own), area chair, chairs
    CHAIRS = "chairs"  # the paper's area chair and program chairs only


AUDIENCE_LABELS = {
    Audience.AUTHORS: "authors (stage rule applies), reviewers and chairs",
    Audience.COMMITTEE: "reviewers, area chair and chairs (never authors)",
    Audience.CHAIRS: "area chair and program chairs only",
}
KIND_LABELS = {"text": "Text", "score": "Score (labelled scale)", "choice": "Choice",
               "checkbox": "Checkbox"}


class FormError(ValueError):
    """A review form definition or an answer that does not fit its form."""


@dataclass(frozen=True)
class FormField:
    """One field of a review form. ``options``: the labels of a score's values from ``low``
    up, or a choice's options."""

    key: str
    label: str
    kind: str = "text"
    stage: int = 1
    required: bool = False
    audience: str = Audience.AUTHORS.value
    help: str = ""
    options: tuple[str, ...] = ()
    low: int = 1

    @property
    def scale(self) -> Scale:
        return Scale(self.label, self.options, low=self.low)

    def show(self, value: object) -> str:
        """An answer as a reader sees it: '3 / 4 (good)', 'yes', the option, the text."""
        if value is None or value == "":
            return "—"
        if self.kind == "score":
            return self.scale.show(int(value))  # type: ignore[arg-type]
        if self.kind == "checkbox":
            return "yes" if value else "no"
        return str(value)

    def as_dict(self) -> dict:
        return asdict(self) | {"options": list(self.options)}


# the paper's fixed form (stage and audience are the two-stage release itself)
CORE_FIELDS: tuple[FormField, ...] = (
    FormField("summary", "Summary", required=True),
    FormField("strengths", "Strengths", required=True),
    FormField("questions", "Questions for the authors", required=True),
    FormField("weaknesses", "Weaknesses", stage=2, required=True),
    FormField("score", "Overall score", "score", 2, True, options=SCORE.labels),
    FormField("confidence", "Confidence", "score", 2, True, options=CONFIDENCE.labels),
)
CORE_KEYS = frozenset(f.key for f in CORE_FIELDS)


# ---------------------------------------------------------------------- definitions
def clean_fields(rows: Iterable[Mapping[str, object]]) -> tuple[FormField, ...]:
    """Validate the chair's added fields once (FormError naming the field and the fault)."""
    rows = list(rows)
    if len(rows) > MAX_FIELDS:
        raise FormError(f"a form adds at most {MAX_FIELDS} fields, not {len(rows)}")
    out, seen = [], set()
    for i, row in enumerate(rows, 1):
        fld = _clean_field(row, i)
        if fld.key in seen:
            raise FormError(f"field {i}: the key '{fld.key}' is used twice")
        seen.add(fld.key)
        out.append(fld)
    return tuple(out)


def _clean_field(row: Mapping[str, object], i: int) -> FormField:
    where = f"field {i}"
    key = str(row.get("key") or "").strip()
    if not KEY_RE.match(key):
        raise FormError(f"{where}: the key is 1-32 of a-z, 0-9, '_', starting with a letter")
    if key in CORE_KEYS:
        raise FormError(f"{where}: '{key}' is a field of every form already")
    where = f"field '{key}'"
    label = str(row.get("label") or "").strip()
    if not 1 <= len(label) <= 200:
        raise FormError(f"{where}: the label is 1-200 characters")
    kind = str(row.get("kind") or "")
    if kind not in KINDS:
        raise FormError(f"{where}: the kind is one of {', '.join(KINDS)}")
    stage = row.get("stage", 1)
    if stage not in (1, 2, "1", "2") or isinstance(stage, bool):
        raise FormError(f"{where}: the stage is 1 or 2")
    audience = str(row.get("audience") or Audience.AUTHORS.value)
    if audience not in set(Audience):
        raise FormError(f"{where}: visible to one of {', '.join(a.value for a in Audience)}")
    required = row.get("required", False)
    if not isinstance(required, bool):
        raise FormError(f"{where}: required is true or false")
    help_text = str(row.get("help") or "").strip()
    if len(help_text) > 500:
        raise FormError(f"{where}: the help text is at most 500 characters")
    raw_options = row.get("options") or ()
    if isinstance(raw_options, str | bytes):
        raise FormError(f"{where}: options are a list")
    options = tuple(str(o).strip() for o in raw_options)  # type: ignore[union-attr]
    low = row.get("low", 1)
    if not isinstance(low, int) or isinstance(low, bool) or not -10 <= low <= 10:
        raise FormError(f"{where}: the scale starts at a whole number from -10 to 10")
    if kind == "score" and not 2 <= len(options) <= 10:
        raise FormError(f"{where}: a score needs 2-10 labels, one per value")
    if kind == "choice" and not 2 <= len(options) <= 12:
        raise FormError(f"{where}: a choice needs 2-12 options")
    if kind in ("text", "checkbox") and options:
        raise FormError(f"{where}: a {kind} field has no options")
    if any(not 1 <= len(o) <= 100 for o in options) or len(set(options)) != len(options):
        raise FormError(f"{where}: options are distinct, 1-100 characters each")
    return FormField(key, label, kind, int(stage), required, audience, help_text, options,
                     low if kind == "score" else 1)  # type: ignore[arg-type]


def to_json(fields: Iterable[FormField]) -> str:
    return json.dumps([f.as_dict() for f in fields])


def from_json(text: str) -> tuple[FormField, ...]:
    """The added fields of one stored version (stored only after :func:`clean_fields`)."""
    return tuple(FormField(**(d | {"options": tuple(d.get("options", ()))}))
                 for d in json.loads(text or "[]"))


def split_options(text: str) -> list[str]:
    """The page's one-line options ('poor | fair | good') as a list."""
    return [o.strip() for o in (text or "").split("|") if o.strip()]


# ---------------------------------------------------------------------- answers
def clean_answers(fields: Iterable[FormField], raw: Mapping[str, object], *,
                  submit: bool) -> dict[str, object]:
    """A review's answers to the added fields, checked against the form it is written with.
    Missing answers are empty; required ones must be given to submit (a draft may be partial,
    but what it holds must fit)."""
    fields = tuple(fields)
    known = {f.key for f in fields}
    if unknown := sorted(set(raw) - known):
        raise FormError(f"this review form has no field '{unknown[0]}'")
    out: dict[str, object] = {}
    for f in fields:
        value = _clean_answer(f, raw.get(f.key))
        if submit and f.required and (value is None or value == "" or value is False):
            raise FormError(f"{f.label} is required")
        out[f.key] = value
    return out


def _clean_answer(f: FormField, value: object) -> object:
    if f.kind == "checkbox":
        if value in (None, "", False, "0", "false", "off"):
            return False
        if value in (True, "1", "true", "on", "yes"):
            return True
        raise FormError(f"{f.label} is checked or not")
    if value is None or (isinstance(value, str) and not value.strip()):
        return None if f.kind == "score" else ""
    if f.kind == "score":
        try:
            v = int(value)  # type: ignore[call-overload]
        except (TypeError, ValueError):
            v = None
        if v is None or isinstance(value, bool) or not f.low <= v <= f.scale.high:
            raise FormError(f"{f.label} is a whole number from {f.low} to {f.scale.high}")
        return v
    text = str(value).replace("\r\n", "\n").strip()
    if f.kind == "choice" and text not in f.options:
        raise FormError(f"{f.label} is one of: {', '.join(f.options)}")
    if len(text) > MAX_TEXT:
        raise FormError(f"{f.label} is too long (at most {MAX_TEXT} characters)")
    return text


def answers_of(text: str | None) -> dict[str, object]:
    """A review's stored answers."""
    return json.loads(text or "{}")


# ---------------------------------------------------------------------- the chair's page
EDITOR_BLANK_ROWS = 3  # empty rows the page offers for new fields


def rows_from_form(form: Mapping[str, str]) -> list[dict]:
    """The page's rows (``f<i>_key``, ``f<i>_label``, ...; a row with neither key nor label,
    or with ``f<i>_remove`` ticked, is skipped) as the rows :func:`clean_fields` checks."""
    indices = sorted({int(k[1:].split("_", 1)[0]) for k in form
                      if re.match(r"^f\d{1,3}_", k)})
    rows = []
    for i in indices:
        row = {name: str(form.get(f"f{i}_{name}") or "").strip() for name in _ROW_INPUTS}
        if row["remove"] or not (row["key"] or row["label"]):
            continue
        low = row["low"] or "1"
        if not re.fullmatch(r"-?\d{1,2}", low):
            raise FormError(f"field '{row['key']}': the scale starts at a whole number")
        rows.append(row | {"stage": row["stage"] or "1", "required": bool(row["required"]),
                           "options": split_options(row["options"]), "low": int(low)})
        del rows[-1]["remove"]
    return rows


_ROW_INPUTS = ("key", "label", "kind", "stage", "required", "audience", "help", "options",
               "low", "remove")
