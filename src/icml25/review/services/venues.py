"""Venues and phases: creation, members, timeline, phase changes (by chairs and by deadline),
the venue, admin and dashboard pages, and exports."""

from __future__ import annotations

import json
import re
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from icml25.review import models as m
from icml25.review.authority import Action, authorize, facts_for, may
from icml25.review.errors import ServiceError, TransitionError
from icml25.review.services.base import (
    Service,
    clean_int,
    clean_text,
    is_verified,
    timeline_of,
    utcnow,
)
from icml25.review.services.outbox import mail_row
from icml25.review.visibility import can, ratings_table, submission_view, venue_view
from icml25.review.workflow import (
    PHASE_LABELS,
    Phase,
    PhaseFacts,
    Role,
    check_transition,
    due_transition,
    next_phase,
)

ADMIN_PAGE_SIZE = 25  # outbox and audit rows per admin page


def progress_rows(pf: PhaseFacts) -> list[tuple[str, object]]:
    """The venue's progress in words, for the chairs' page."""
    return [("Active submissions", pf.n_active_submissions),
            ("Submissions without a reviewer", pf.n_unassigned_submissions),
            ("Assigned reviews not yet submitted", pf.n_missing_reviews),
            ("Submissions without a decision", pf.n_undecided_submissions),
            ("Bidding", "on" if pf.bidding_enabled else "off")]


class Venues(Service):
    """Venues and phases."""

    def create_venue(self, slug: str, name: str, *, bidding_enabled: bool = True,
                     reviews_per_paper: int = 3, max_load: int = 6,
                     max_pdf_bytes: int = 10 * 1024 * 1024,
                     timeline: dict[str, str] | None = None) -> m.Venue:
        """Create a venue (site admins only); the creator becomes its program chair."""
        user = self._require_login()
        authorize(Action.CREATE_VENUE, self.ctx.account_facts())
        if not re.fullmatch(r"[a-z0-9][a-z0-9-]{1,62}", slug or "") or slug.isdigit():
            raise ServiceError("the short name may use a-z, 0-9 and '-' (2-63 characters, "
                               "not only digits)")
        for ph in (timeline or {}):
            Phase(ph)
        v = m.Venue(slug=slug, name=clean_text(name, "name", "name"), phase=Phase.SUBMISSION.value,
                    bidding_enabled=bidding_enabled,
                    reviews_per_paper=clean_int(reviews_per_paper, "reviews per paper", 1, 20),
                    max_load=clean_int(max_load, "max load", 1, 1000), max_pdf_bytes=max_pdf_bytes,
                    timeline=json.dumps(timeline or {}))
        self.db.add(v)
        try:
            self.db.flush()
        except IntegrityError:
            self.db.rollback()
            raise ServiceError("a venue with this short name exists") from None
        self.db.add(m.Membership(venue_id=v.id, user_id=user.id, role=Role.CHAIR.value))
        self.ctx.forget_roles()
        self._audit(v.id, "venue.create", f"venue:{v.id}", slug=slug)
        self._commit()
        return v

    def add_member(self, venue: m.Venue, email: str, role: Role | str) -> m.Membership:
        """Give an existing account a venue role (chairs only); conflicts are recomputed."""
        authorize(Action.MANAGE_MEMBERS, facts_for(self.viewer(venue), None, Phase(venue.phase)))
        if str(role) not in (Role.CHAIR, Role.SAC, Role.AC, Role.REVIEWER):
            raise ServiceError("roles are chair, sac, ac or reviewer (authors join by "
                               "submitting)")
        role = Role(role)
        user = self.db.scalar(select(m.User).where(m.User.email == (email or "").strip().lower()))
        if user is None:
            raise ServiceError("no account with this e-mail; invite them instead (they create "
                               "their account from the invitation's link)")
        if not is_verified(user):
            # else whoever registered the address first would take the committee seat
            raise ServiceError("this account has not verified its e-mail address yet")
        if role in self.roles(venue.id, user.id):
            raise ServiceError("the user already has this role")
        ms = m.Membership(venue_id=venue.id, user_id=user.id, role=role.value)
        self.db.add(ms)
        self.db.flush()
        self.svc.conflicts.update_member_conflicts(venue, user.id)  # theirs alone
        self.ctx.forget_roles()
        self._audit(venue.id, "member.add", f"user:{user.id}", role=role.value)
        self._mail(venue.id, user.email, f"[{venue.name}] You are a {role.value}",
                   f"You were added to {venue.name} as {role.value}.")
        self._commit()
        return ms

    def set_timeline(self, venue: m.Venue, timeline: dict[str, str]) -> None:
        """Set the venue's phase deadlines (chairs only): {phase: 'YYYY-MM-DD' or ''}."""
        authorize(Action.MANAGE_MEMBERS, facts_for(self.viewer(venue), None, Phase(venue.phase)))
        clean = {}
        for key, value in timeline.items():
            try:
                phase = Phase(key)
            except ValueError:
                raise ServiceError(f"unknown phase '{key}'") from None
            value = (value or "").strip()
            if not value:
                continue
            try:
                datetime.fromisoformat(value)
            except ValueError:
                raise ServiceError(f"the {phase.value} deadline must be a date "
                                   "(YYYY-MM-DD)") from None
            clean[phase.value] = value
        venue.timeline = json.dumps(clean)
        self._audit(venue.id, "venue.timeline", f"venue:{venue.id}", **clean)
        self._commit()

    def members(self, venue: m.Venue) -> list[dict]:
        """Members and roles (chairs only)."""
        authorize(Action.VIEW_ADMIN, facts_for(self.viewer(venue), None, Phase(venue.phase)))
        rows = self.db.execute(select(m.Membership, m.User).join(
            m.User, m.User.id == m.Membership.user_id).where(m.Membership.venue_id == venue.id)
            .order_by(m.Membership.role, m.User.name))
        return [{"user_id": u.id, "name": u.name, "email": u.email, "role": ms.role}
                for ms, u in rows]

    def venues_for_actor(self) -> list[dict]:
        """Venues the actor takes part in, plus venues open for submission."""
        user = self._require_login()
        vs = self.db.scalars(select(m.Venue).order_by(m.Venue.id)).all()
        # venues where the actor is a sub-reviewer of a paper (the paper decides what they see)
        invited = set(self.db.scalars(select(m.Submission.venue_id).join(
            m.Subreviewer, m.Subreviewer.submission_id == m.Submission.id).where(
            m.Subreviewer.user_id == user.id)))
        out = []
        for v in vs:
            viewer = self.viewer(v)
            authored = self.authored_ids(v)
            facts = facts_for(viewer, None, Phase(v.phase), authored_in_venue=bool(authored))
            if (may(Action.VIEW_VENUE_DETAILS, facts) or may(Action.SUBMIT, facts)
                    or v.id in invited):
                out.append(venue_view(viewer, v, authored=bool(authored))
                           | {"n_authored": len(authored)})
        return out

    def _phase_facts(self, venue: m.Venue) -> PhaseFacts:
        subs = self.db.scalars(select(m.Submission).where(
            m.Submission.venue_id == venue.id, m.Submission.status == "active")).all()
        ids = [s.id for s in subs]
        if not ids:
            return PhaseFacts(bidding_enabled=venue.bidding_enabled)
        with_rev = set(self.db.scalars(select(m.Assignment.submission_id).where(
            m.Assignment.submission_id.in_(ids), m.Assignment.role == Role.REVIEWER.value)))
        n_assigned = self.db.scalar(select(func.count()).select_from(m.Assignment).where(
            m.Assignment.submission_id.in_(ids), m.Assignment.role == Role.REVIEWER.value)) or 0
        n_done = self.db.scalar(select(func.count()).select_from(m.Review).where(
            m.Review.submission_id.in_(ids), m.Review.submitted.is_(True))) or 0
        decided = set(self.db.scalars(select(m.Decision.submission_id).where(
            m.Decision.submission_id.in_(ids))))
        return PhaseFacts(bidding_enabled=venue.bidding_enabled, n_active_submissions=len(ids),
                          n_unassigned_submissions=len(set(ids) - with_rev),
                          n_missing_reviews=max(0, n_assigned - n_done),
                          n_undecided_submissions=len(set(ids) - decided))

    def advance_phase(self, venue: m.Venue, target: Phase | str | None = None,
                      force: bool = False) -> Phase:
        """Move the venue to its next phase (chairs only), checking the guards."""
        authorize(Action.ADVANCE_PHASE, facts_for(self.viewer(venue), None, Phase(venue.phase)))
        current = Phase(venue.phase)
        target = Phase(target) if target else next_phase(current, venue.bidding_enabled)
        if target is None:
            raise ServiceError("the venue is in its last phase")
        check_transition(current, target, self._phase_facts(venue), force=force)
        self._move(venue, current, target, force=force)
        return target

    def _move(self, venue: m.Venue, current: Phase, target: Phase, **detail: object) -> None:
        venue.phase = target.value
        self._audit(venue.id, "phase.advance", f"venue:{venue.id}", frm=current.value,
                    to=target.value, **detail)
        self._phase_mail(venue, target)
        self._commit()

    def advance_due(self, now: datetime | None = None) -> list[dict]:
        """Advance every venue whose current phase's deadline has passed (the scheduler's job:
        ``icml25 review tick`` or the server's background loop; needs no actor).

        At the reviewing deadline the venue moves on even with reviews missing (they are late);
        any other failed guard keeps the phase, and the chairs are told once per phase.
        Safe to run from several processes at once: each venue row is locked and re-checked.
        """
        now = now or utcnow()
        report = []
        for venue in self.db.scalars(select(m.Venue).order_by(m.Venue.id)).all():
            if due_transition(venue.phase, timeline_of(venue), now, venue.bidding_enabled) is None:
                continue  # most venues, most minutes: no lock taken
            venue = self.db.get(m.Venue, venue.id, with_for_update=True, populate_existing=True)
            current = Phase(venue.phase)
            target = due_transition(current, timeline_of(venue), now, venue.bidding_enabled)
            if target is None:
                self.db.rollback()
                continue
            row = {"venue": venue.slug, "from": current.value, "to": target.value}
            try:
                check_transition(current, target, self._phase_facts(venue),
                                 force=current is Phase.REVIEWING)
            except TransitionError as exc:
                self._deadline_blocked(venue, current, str(exc))
                report.append(row | {"advanced": False, "reason": str(exc)})
                continue
            self._move(venue, current, target, by="deadline")
            report.append(row | {"advanced": True})
        return report

    def _deadline_blocked(self, venue: m.Venue, phase: Phase, reason: str) -> None:
        seen = self.db.scalars(select(m.AuditEvent.detail).where(
            m.AuditEvent.venue_id == venue.id, m.AuditEvent.action == "phase.deadline_blocked"))
        if any(json.loads(d or "{}").get("phase") == phase.value for d in seen):
            self.db.rollback()
            return
        self._audit(venue.id, "phase.deadline_blocked", f"venue:{venue.id}", phase=phase.value,
                    reason=reason)
        for u in self.db.scalars(select(m.User).join(
                m.Membership, m.Membership.user_id == m.User.id).where(
                m.Membership.venue_id == venue.id, m.Membership.role == Role.CHAIR.value)):
            self._mail(venue.id, u.email, f"[{venue.name}] The {phase.value} deadline passed",
                       f"The venue stays in '{phase.value}' because: {reason}. "
                       "Fix it and advance the phase yourself.")
        self._commit()

    def _phase_mail(self, venue: m.Venue, phase: Phase) -> None:
        # Bodies are generic on purpose: no reviewer or author identities in any e-mail.
        subs = self.db.scalars(select(m.Submission).where(
            m.Submission.venue_id == venue.id, m.Submission.status == "active")).all()
        if phase is Phase.REVIEWING:
            for a, u in self.db.execute(select(m.Assignment, m.User).join(
                    m.User, m.User.id == m.Assignment.user_id).join(
                    m.Submission, m.Submission.id == m.Assignment.submission_id).where(
                    m.Submission.venue_id == venue.id)):
                sub = self.db.get(m.Submission, a.submission_id)
                self._mail(venue.id, u.email, f"[{venue.name}] Please review submission "
                           f"#{sub.number}", f"You are assigned to submission #{sub.number} "
                           f"as {a.role}. Please write both stages of your review.", sub.id)
        texts = {
            Phase.FEEDBACK: ("Reviews (stage 1) are available: please rate them",
                             "Summary, strengths and questions of your reviews are available. "
                             "Please rate each review; weaknesses and scores follow once "
                             "every review is rated."),
            Phase.REBUTTAL: ("Full reviews are available; rebuttal is open",
                             "Weaknesses and scores are now visible; you may reply per review."),
            Phase.NOTIFICATION: ("Decision on your submission",
                                 "The decision and meta-review are available on the platform."),
        }
        if phase in texts:
            subject, body = texts[phase]
            for sub in subs:
                if phase is Phase.NOTIFICATION:
                    body = self._decision_mail(venue, sub)
                for a in self.db.scalars(select(m.SubmissionAuthor).where(
                        m.SubmissionAuthor.submission_id == sub.id)):
                    self._mail(venue.id, a.email, f"[{venue.name}] #{sub.number}: {subject}",
                               body, sub.id)

    def _decision_mail(self, venue: m.Venue, sub: m.Submission) -> str:
        """The venue's decision e-mail for one submission (its template, decisions.py)."""
        from icml25.review.decisions import label_of, render_mail

        outcome = self.db.scalar(select(m.Decision.outcome).where(
            m.Decision.submission_id == sub.id)) or ""
        return render_mail(venue.decision_mail, number=sub.number, title=sub.title,
                           venue=venue.name, decision=label_of(venue.decision_types, outcome))

    def venue_card(self, venue: m.Venue) -> dict:
        """The venue's card as the actor may see it (name, phase, and for members and authors
        its timeline and settings): what the tool pages show above their table, without the
        submission list :meth:`venue_page` builds."""
        self._require_login()
        return venue_view(self.viewer(venue), venue, authored=bool(self.authored_ids(venue)))

    def venue_page(self, venue: m.Venue) -> dict:
        """The venue as the actor may see it: its public card for anyone logged in; timeline
        and the submissions they may see for members and authors; admin facts for chairs."""
        self._require_login()
        viewer = self.viewer(venue)
        authored = bool(self.authored_ids(venue))
        facts = facts_for(viewer, None, Phase(venue.phase), authored_in_venue=authored)
        out = venue_view(viewer, venue, authored=authored)
        out["submissions"] = self.svc.submissions.venue_submissions(venue)
        out["can_submit"] = may(Action.SUBMIT, facts)
        out["is_chair"] = may(Action.ADVANCE_PHASE, facts)
        if out["is_chair"]:
            nxt = next_phase(venue.phase, venue.bidding_enabled)
            out["next_phase"] = nxt.value if nxt else None
            out["next_phase_label"] = PHASE_LABELS[nxt] if nxt else None
        if may(Action.VIEW_FEEDBACK_PANEL, facts):
            out["my_feedback"] = self.svc.reviewing.my_feedback(venue)
        return out

    def ratings(self, venue: m.Venue) -> list[dict]:
        """Individual ratings (program chairs only)."""
        viewer = self.viewer(venue)
        authorize(Action.VIEW_ADMIN, facts_for(viewer, None, Phase(venue.phase)))
        return ratings_table(viewer, self.read_bundles(venue))

    def admin_page(self, venue: m.Venue, *, outbox_page: int = 1, audit_page: int = 1,
                   per_page: int = ADMIN_PAGE_SIZE) -> dict:
        """Members, progress, ratings, and one page each of the outbox and the audit log,
        newest first (chairs only)."""
        viewer = self.viewer(venue)
        authorize(Action.VIEW_ADMIN, facts_for(viewer, None, Phase(venue.phase)))
        # the outbox and audit log of a paper are chair notes: a conflicted chair sees none
        hidden = [b.submission.id for b in self.read_bundles(venue)
                  if not may(Action.VIEW_CHAIR_NOTES, facts_for(viewer, b))]
        mails = (m.Email.venue_id == venue.id) & (
            m.Email.submission_id.is_(None) | m.Email.submission_id.not_in(hidden))
        events = (m.AuditEvent.venue_id == venue.id) & (
            m.AuditEvent.submission_id.is_(None) | m.AuditEvent.submission_id.not_in(hidden))
        outbox, n_mail, outbox_page = self._page(m.Email, mails, outbox_page, per_page)
        audit, n_events, audit_page = self._page(m.AuditEvent, events, audit_page, per_page)
        pf = self._phase_facts(venue)
        return {
            "members": self.members(venue), "ratings": self.ratings(venue),
            "phase_facts": pf.__dict__, "progress": progress_rows(pf),
            "outbox": [mail_row(e) for e in outbox],
            "outbox_total": n_mail, "outbox_page": outbox_page,
            "outbox_pages": max(1, -(-n_mail // per_page)),
            "audit": [{"at": a.at.isoformat(timespec="seconds"), "actor_id": a.actor_id,
                       "action": a.action, "target": a.target, "detail": a.detail}
                      for a in audit],
            "audit_total": n_events, "audit_page": audit_page,
            "audit_pages": max(1, -(-n_events // per_page)),
        }

    def _page(self, model, where, page: int, per_page: int):  # noqa: ANN001, ANN202
        """One page (1-based, newest first) of ``model`` rows; the page is clamped to the last."""
        total = self.db.scalar(select(func.count()).select_from(model).where(where)) or 0
        page = min(max(1, int(page)), max(1, -(-total // per_page)))
        rows = self.db.scalars(select(model).where(where).order_by(model.id.desc())
                               .offset((page - 1) * per_page).limit(per_page)).all()
        return rows, total, page

    def dashboard(self) -> list[dict]:
        """Per venue: roles and what is due next for the actor."""
        user = self._require_login()
        out = []
        for vv in self.venues_for_actor():
            venue = self.db.get(m.Venue, vv["id"])
            viewer = self.viewer(venue)
            todo: list[str] = []
            for b in self.visible_candidates(venue):
                f = facts_for(viewer, b)
                n = b.submission.number
                if can(viewer, Action.WRITE_REVIEW, b) and not f.own_review_submitted:
                    todo.append(f"Write your review of submission #{n}")
                if can(viewer, Action.WRITE_DELEGATED_REVIEW, b):
                    todo.append(f"Write the review of submission #{n} (as a sub-reviewer)")
                for r in b.reviews:
                    if can(viewer, Action.GIVE_FEEDBACK, b, review=r) and r.id not in b.feedback:
                        a = b.assignment_of(r.reviewer_id)
                        todo.append(f"Rate {a.pseudonym if a else 'a review'} on submission #{n}")
                if can(viewer, Action.WRITE_METAREVIEW, b) and b.meta_review is None:
                    todo.append(f"Write the meta-review of submission #{n}")
                if can(viewer, Action.DECIDE, b) and b.decision is None:
                    todo.append(f"Decide submission #{n}")
                if can(viewer, Action.BID, b) and user.id not in b.bids:
                    todo.append(f"Bid on submission #{n}")
            facts = facts_for(viewer, None, Phase(venue.phase))
            if may(Action.ADVANCE_PHASE, facts) and vv["phase"] != Phase.NOTIFICATION:
                todo.append(f"Advance the venue when '{vv['phase_label']}' is done")
            if may(Action.SUBMIT, facts) and not vv["my_roles"]:  # a hint for newcomers
                todo.append("Submission is open")
            out.append(vv | {"todo": todo})
        return out

    def export(self, venue: m.Venue) -> dict:
        """The venue as JSON, as the actor may see it (same visibility rules as the pages)."""
        viewer = self.viewer(venue)
        authored = bool(self.authored_ids(venue)) if self.actor else False
        facts = facts_for(viewer, None, Phase(venue.phase), authored_in_venue=authored)
        authorize(Action.VIEW_VENUE_DETAILS, facts)
        subs = [v for v in (submission_view(viewer, b) for b in self.visible_candidates(venue))
                if v]
        out = {"venue": venue_view(viewer, venue, authored=authored), "submissions": subs,
               "exported_at": utcnow().isoformat(), "as_user": self.actor.email if self.actor
               else None}
        if may(Action.VIEW_ADMIN, facts):
            out["ratings"] = self.ratings(venue)
            out["members"] = self.members(venue)
        elif may(Action.VIEW_FEEDBACK_PANEL, facts):
            out["my_feedback"] = self.svc.reviewing.my_feedback(venue)
        return out
