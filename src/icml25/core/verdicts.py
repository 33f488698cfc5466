"""How a reproduction row is judged against the paper: one small rule object per kind of claim.

Every :class:`~icml25.core.records.Comparison` carries a verdict, one of :data:`VERDICTS`, computed
by the rule the experiment states when it builds the row (``ctx.compare(..., rule=...)``). A row
without a rule is ``not comparable``: the report counts it, but never as agreement. The rules:

- :class:`Close` — a number that should match: within ``tol`` agrees, within ``gap`` is
  ``within scale gap`` (our smaller scale explains it), beyond that ``falls short``.
- :class:`Overlap` — our 95% interval against the published value (or interval), or against
  ``value`` when the paper states the number in words ("no effect": ``value=0``).
- :class:`AtLeast` / :class:`AtMost` — a target or a bound: meeting it agrees.
- :class:`Direction` — a claim about the sign of an effect (``ours`` is the effect, e.g. A - B):
  the claimed sign agrees, the opposite sign ``contradicts``; an effect inside ``margin`` of zero
  (or an interval that straddles zero) is ``within scale gap`` (inconclusive at our scale), or
  agrees with ``or_equal=True`` (claims of "at least as good" or "no gain").
- :class:`NoGain` — a claim that an effect is absent: a clear gain contradicts it, a clear
  loss falls short of the parity the paper saw.
- :class:`Same` — a categorical answer (the best method): equal agrees, different contradicts.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

AGREES = "agrees"
WITHIN_GAP = "within scale gap"
FALLS_SHORT = "falls short"
CONTRADICTS = "contradicts"
NOT_COMPARABLE = "not comparable"
VERDICTS = (AGREES, WITHIN_GAP, FALLS_SHORT, CONTRADICTS, NOT_COMPARABLE)
# Order in which the report lists rows: problems first.
SEVERITY = {CONTRADICTS: 0, FALLS_SHORT: 1, WITHIN_GAP: 2, NOT_COMPARABLE: 3, AGREES: 4}


def _number(x: Any) -> float | None:
    if isinstance(x, bool) or x is None:
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(v) else v


def _interval(x: Any) -> tuple[float, float] | None:
    if isinstance(x, (list, tuple)) and len(x) == 2:
        lo, hi = _number(x[0]), _number(x[1])
        if lo is not None and hi is not None:
            return (min(lo, hi), max(lo, hi))
    return None


def _miss(distance: float, gap: float | None) -> str:
    """A miss by ``distance``: within the scale gap when ``gap`` allows it, else falls short."""
    return WITHIN_GAP if gap is not None and distance <= gap else FALLS_SHORT


@dataclasses.dataclass(frozen=True)
class Close:
    """``|ours - published| <= tol`` agrees; ``<= gap``: within the scale gap; else falls short."""

    tol: float
    gap: float | None = None

    def judge(self, ours: Any, published: Any) -> str:
        a, b = _number(ours), _number(published)
        if a is None or b is None:
            return NOT_COMPARABLE
        d = abs(a - b)
        return AGREES if d <= self.tol else _miss(d, self.gap)

    def describe(self) -> str:
        gap = f"; within {self.gap:g}: scale gap" if self.gap is not None else ""
        return f"agrees within {self.tol:g}{gap}"


@dataclasses.dataclass(frozen=True)
class Overlap:
    """Our interval ``ci`` against the published value or interval: overlap agrees."""

    ci: Sequence[float]
    gap: float | None = None  # distance beyond which a miss falls short, not a scale gap
    # The number a claim names (e.g. 0 for "no effect") when ``published`` states it in words.
    value: float | None = None

    def judge(self, ours: Any, published: Any) -> str:
        mine = _interval(list(self.ci))
        theirs = _interval(published) if self.value is None else (self.value, self.value)
        if theirs is None:
            b = _number(published)
            theirs = None if b is None else (b, b)
        if mine is None or theirs is None:
            return NOT_COMPARABLE
        if mine[0] <= theirs[1] and theirs[0] <= mine[1]:
            return AGREES
        return _miss(max(theirs[0] - mine[1], mine[0] - theirs[1]), self.gap)

    def describe(self) -> str:
        what = "the published value" if self.value is None else f"{self.value:g}"
        gap = f"; within {self.gap:g}: scale gap" if self.gap is not None else ""
        return f"agrees when our 95% interval overlaps {what}{gap}"


@dataclasses.dataclass(frozen=True)
class AtLeast:
    """A target: ``ours >= target`` (the published value when ``target`` is None) agrees."""

    target: float | None = None
    gap: float | None = None

    def judge(self, ours: Any, published: Any) -> str:
        a = _number(ours)
        t = self.target if self.target is not None else _number(published)
        if a is None or t is None:
            return NOT_COMPARABLE
        return AGREES if a >= t else _miss(t - a, self.gap)

    def describe(self) -> str:
        t = "the published value" if self.target is None else f"{self.target:g}"
        return f"agrees when at least {t}"


@dataclasses.dataclass(frozen=True)
class AtMost:
    """A bound: ``ours <= bound`` (the published value when ``bound`` is None) agrees."""

    bound: float | None = None
    gap: float | None = None

    def judge(self, ours: Any, published: Any) -> str:
        a = _number(ours)
        t = self.bound if self.bound is not None else _number(published)
        if a is None or t is None:
            return NOT_COMPARABLE
        return AGREES if a <= t else _miss(a - t, self.gap)

    def describe(self) -> str:
        t = "the published value" if self.bound is None else f"{self.bound:g}"
        return f"agrees when at most {t}"


@dataclasses.dataclass(frozen=True)
class Direction:
    """A claim on an effect's sign; ``ours`` is the effect (e.g. A - B), ``sign`` the claimed one.

    With ``ci`` the effect is decided by its interval (straddling zero: inconclusive); without
    it, by ``margin``. Inconclusive is reported as ``within scale gap``.
    """

    sign: int = 1
    margin: float = 0.0
    ci: Sequence[float] | None = None
    # "at least as good" / "no gain" claims: an effect indistinguishable from zero agrees too.
    or_equal: bool = False

    def __post_init__(self) -> None:
        if self.sign not in (1, -1):
            raise ValueError(f"sign must be +1 or -1, got {self.sign!r}")

    def judge(self, ours: Any, published: Any) -> str:
        if self.ci is not None:
            iv = _interval(list(self.ci))
            if iv is None:
                return NOT_COMPARABLE
            lo, hi = iv[0] * self.sign, iv[1] * self.sign
            lo, hi = min(lo, hi), max(lo, hi)
            return AGREES if lo > 0 else CONTRADICTS if hi < 0 else self._tie()
        a = _number(ours)
        if a is None:
            return NOT_COMPARABLE
        a *= self.sign
        return AGREES if a > self.margin else CONTRADICTS if a < -self.margin else self._tie()

    def _tie(self) -> str:
        return AGREES if self.or_equal else WITHIN_GAP

    def describe(self) -> str:
        if self.or_equal:
            word = "not negative" if self.sign > 0 else "not positive"
        else:
            word = "positive" if self.sign > 0 else "negative"
        how = "its 95% interval" if self.ci is not None else f"margin {self.margin:g}"
        return f"agrees when the effect is {word} ({how})"


@dataclasses.dataclass(frozen=True)
class NoGain:
    """A claim that an effect is absent ("no gain": A ≈ B); ``ours`` is the effect A - B.

    Our 95% interval ``ci`` holding zero agrees; an interval above zero (a gain the paper says
    is not there) contradicts the claim; one below zero falls short (the parity the paper saw
    is not reached: A does worse here).
    """

    ci: Sequence[float]

    def judge(self, ours: Any, published: Any) -> str:
        iv = _interval(list(self.ci))
        if iv is None:
            return NOT_COMPARABLE
        return CONTRADICTS if iv[0] > 0 else FALLS_SHORT if iv[1] < 0 else AGREES

    def describe(self) -> str:
        return ("agrees when our 95% interval holds 0; above: contradicts; below: falls "
                "short")


@dataclasses.dataclass(frozen=True)
class Same:
    """A categorical answer: equal to the published one agrees, different contradicts."""

    def judge(self, ours: Any, published: Any) -> str:
        if ours is None or published is None:
            return NOT_COMPARABLE
        same = str(ours).strip().lower() == str(published).strip().lower()
        return AGREES if same else CONTRADICTS

    def describe(self) -> str:
        return "agrees when the same answer"


def judge(rule: Any, ours: Any, published: Any) -> str:
    """The verdict of ``rule`` (None: not comparable) on one row."""
    if rule is None:
        return NOT_COMPARABLE
    verdict = rule.judge(ours, published)
    if verdict not in VERDICTS:  # a user-defined rule must speak the same language
        raise ValueError(f"rule {rule!r} returned {verdict!r}; expected one of {VERDICTS}")
    return verdict


def tally(verdicts: Sequence[str]) -> dict[str, int]:
    """Counts per verdict, in :data:`VERDICTS` order, zeros included."""
    return {v: sum(1 for x in verdicts if x == v) for v in VERDICTS}
