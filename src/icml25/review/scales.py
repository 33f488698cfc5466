"""The platform's rating scales, each with a label for every value (pure).

One registry, so a page, an e-mail or an export that shows a number shows its scale and the
meaning of that value ("6 / 10 (weak accept)"), and every input offers the same labelled
choices with nothing preselected. The services validate numbers against the same scales.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Scale:
    """A closed integer scale ``low..high`` with one label per value."""

    name: str
    labels: tuple[str, ...]  # labels[0] is the label of ``low``
    low: int = 1

    @property
    def high(self) -> int:
        return self.low + len(self.labels) - 1

    def label(self, value: int) -> str:
        """The label of one value (ValueError outside the scale)."""
        if not self.low <= int(value) <= self.high:
            raise ValueError(f"{self.name} is {self.low}..{self.high}, not {value}")
        return self.labels[int(value) - self.low]

    def legend(self) -> str:
        """The two ends, e.g. '1 = very strong reject … 10 = award quality'."""
        return f"{self.low} = {self.labels[0]} … {self.high} = {self.labels[-1]}"

    def show(self, value: float | int | None) -> str:
        """A value with its scale and, for whole values, its label: '6 / 10 (weak accept)'."""
        if value is None:
            return "—"
        if float(value).is_integer() and self.low <= value <= self.high:
            return f"{int(value)} / {self.high} ({self.label(int(value))})"
        return f"{value} / {self.high}"

    def choices(self) -> list[tuple[int, str]]:
        """(value, 'value — label') for a select, low to high."""
        return [(v, f"{v} — {self.label(v)}") for v in range(self.low, self.high + 1)]


# NeurIPS/ICML-style overall recommendation
SCORE = Scale("overall score", (
    "very strong reject", "strong reject", "reject", "borderline reject", "borderline accept",
    "weak accept", "accept", "strong accept", "very strong accept", "award quality"))
CONFIDENCE = Scale("confidence", (
    "educated guess", "willing to defend, some parts unclear", "fairly confident",
    "confident", "absolutely certain"))
AUTHOR_RATING = Scale("author rating", ("poor", "weak", "fair", "good", "excellent"))
AC_RATING = Scale("area chair rating", ("poor", "weak", "fair", "good", "excellent"))
BID = Scale("bid", ("no", "reluctant", "neutral", "willing", "eager"), low=-2)

SCALES = {"score": SCORE, "confidence": CONFIDENCE, "author_rating": AUTHOR_RATING,
          "ac_rating": AC_RATING, "bid": BID}


def template_globals() -> dict[str, object]:
    """What the page templates need to show and offer the scales."""
    return {"SCALES": SCALES}
