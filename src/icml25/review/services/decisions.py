"""A venue's rules for decisions and after: its decision types (oral, poster, reject ...; read
by members, set by chairs, never dropping a type a decision uses; ``Reviewing.decide`` accepts
only these keys) and its rebuttal length limit (``Reviewing.write_rebuttal`` enforces it)."""

from __future__ import annotations

from dataclasses import asdict

from sqlalchemy import select

from icml25.review import models as m
from icml25.review.authority import Action, authorize, facts_for
from icml25.review.decisions import (
    DEFAULT_MAIL,
    DecisionTypeError,
    clean_mail,
    clean_types,
    parse_lines,
    to_json,
    types_of,
)
from icml25.review.errors import ServiceError
from icml25.review.services.base import Service, clean_int
from icml25.review.workflow import Phase


class Decisions(Service):
    """Decision types of a venue."""

    def decision_types(self, venue: m.Venue) -> list[dict]:
        """The venue's decision types (its members and authors)."""
        authorize(Action.VIEW_VENUE_DETAILS, facts_for(
            self.viewer(venue), None, Phase(venue.phase),
            authored_in_venue=bool(self.authored_ids(venue))))
        return [asdict(t) for t in types_of(venue.decision_types)]

    def set_rebuttal_limit(self, venue: m.Venue, max_chars: int) -> int:
        """The most characters of one rebuttal, 100..20000 (chairs); applies to later saves."""
        authorize(Action.MANAGE_MEMBERS, facts_for(self.viewer(venue), None, Phase(venue.phase)))
        venue.max_rebuttal_chars = clean_int(max_chars, "rebuttal limit", 100, 20_000)
        self._audit(venue.id, "venue.rebuttal_limit", f"venue:{venue.id}",
                    max_chars=venue.max_rebuttal_chars)
        self._commit()
        return venue.max_rebuttal_chars

    def decision_mail(self, venue: m.Venue) -> str:
        """The venue's decision e-mail template (chairs)."""
        authorize(Action.VIEW_ADMIN, facts_for(self.viewer(venue), None, Phase(venue.phase)))
        return venue.decision_mail or DEFAULT_MAIL

    def set_decision_mail(self, venue: m.Venue, template: str) -> str:
        """Replace the e-mail authors get at notification (chairs); fields: {number},
        {title}, {venue}, {decision} (the decision's label)."""
        authorize(Action.MANAGE_MEMBERS, facts_for(self.viewer(venue), None, Phase(venue.phase)))
        try:
            venue.decision_mail = clean_mail(template)
        except DecisionTypeError as exc:
            raise ServiceError(str(exc)) from None
        self._audit(venue.id, "venue.decision_mail", f"venue:{venue.id}")
        self._commit()
        return venue.decision_mail

    def set_decision_types(self, venue: m.Venue, rows: list[dict] | str) -> list[dict]:
        """Replace the venue's decision types (chairs): a list of {key, label, accepted} or the
        admin form's lines ``key | label | accept|reject``. A type a decision already uses
        cannot be dropped."""
        authorize(Action.MANAGE_MEMBERS, facts_for(self.viewer(venue), None, Phase(venue.phase)))
        try:
            types = clean_types(parse_lines(rows) if isinstance(rows, str) else rows)
        except DecisionTypeError as exc:
            raise ServiceError(str(exc)) from None
        used = set(self.db.scalars(select(m.Decision.outcome).join(
            m.Submission, m.Submission.id == m.Decision.submission_id).where(
            m.Submission.venue_id == venue.id)))
        dropped = sorted(used - {t.key for t in types})
        if dropped:
            raise ServiceError(f"decisions already use '{dropped[0]}': keep that type")
        venue.decision_types = to_json(types)
        self._audit(venue.id, "venue.decision_types", f"venue:{venue.id}",
                    keys=[t.key for t in types])
        self._commit()
        return [asdict(t) for t in types]
