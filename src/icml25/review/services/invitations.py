"""Invitations to a venue's committee: one by one or from a CSV file (checked whole, then
imported as a job), each answered through a single-use link that also proves the address, so
an invitee without an account creates one from it. Chairs see every invitation's state,
resend, revoke and remind all pending invitees at once."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select

from icml25.review import models as m
from icml25.review.authority import Action, Facts, authorize, facts_for
from icml25.review.errors import NotFound, ServiceError
from icml25.review.jobs import JobRun, enqueue
from icml25.review.people import InviteRow, check_invitation_rows, parse_invitation_csv
from icml25.review.security import hash_password, new_secret, token_hash
from icml25.review.services.base import Service, aware, clean_text, utcnow
from icml25.review.workflow import Phase, Role

#: CSV files up to this many rows are imported at once; larger ones by an import job
IMPORT_AT_ONCE = 200


def invitation_status(inv: m.Invitation) -> str:
    """pending, accepted, declined or expired (a pending invitation past its date)."""
    if inv.status == "pending" and aware(inv.expires_at) < utcnow():
        return "expired"
    return inv.status


class Invitations(Service):
    """Invitations and members' quotas."""

    def _manage(self, venue: m.Venue) -> None:
        authorize(Action.MANAGE_MEMBERS, facts_for(self.viewer(venue), None, Phase(venue.phase)))

    def _check_new(self, venue: m.Venue, rows: list[InviteRow]) -> None:
        """Refuse rows already invited (and not declined) or already members, by line."""
        emails = sorted({r.email for r in rows})
        invited: set[tuple[str, str]] = set()
        members: set[tuple[str, str]] = set()
        for i in range(0, len(emails), 500):
            chunk = emails[i:i + 500]
            invited |= set(self.db.execute(select(m.Invitation.email, m.Invitation.role).where(
                m.Invitation.venue_id == venue.id, m.Invitation.email.in_(chunk),
                m.Invitation.status != "declined")).all())
            members |= set(self.db.execute(select(m.User.email, m.Membership.role).join(
                m.Membership, m.Membership.user_id == m.User.id).where(
                m.Membership.venue_id == venue.id, m.User.email.in_(chunk))).all())
        errors = []
        for r in rows:
            if (r.email, r.role) in members:
                errors.append(f"line {r.line}: {r.email} is already a {r.role} of this venue")
            elif (r.email, r.role) in invited:
                errors.append(f"line {r.line}: {r.email} is already invited as {r.role}")
        if errors:
            raise ServiceError("; ".join(errors[:50]))

    def _issue(self, venue: m.Venue, inv: m.Invitation, *, reminder: bool = False) -> None:
        """A fresh single-use link for ``inv`` (earlier links stop working) and its e-mail."""
        secret = new_secret()
        inv.token_hash = token_hash(secret)
        inv.expires_at = utcnow() + timedelta(days=self.settings.invitation_days)
        inv.sent_count = (inv.sent_count or 0) + 1
        link = f"{self.settings.public_url.rstrip('/')}/invitations/{secret}"
        role = {"reviewer": "a reviewer", "ac": "an area chair",
                "sac": "a senior area chair"}.get(inv.role, inv.role)
        subject = (f"[{venue.name}] Reminder: invitation to serve as {role}" if reminder
                   else f"[{venue.name}] Invitation to serve as {role}")
        self._mail(venue.id, inv.email, subject,
                   f"Dear {inv.name},\n\nthe program chairs of {venue.name} invite you to serve "
                   f"as {role}. Accept or decline (with a reason, if you like) at\n\n{link}\n\n"
                   f"The link works once and until {inv.expires_at.date().isoformat()}. "
                   "If you have no account, you create one there: the link proves that this "
                   "address is yours.")

    def _create(self, venue: m.Venue, r: InviteRow, *, look: bool = True) -> m.Invitation:
        inv = m.Invitation(venue_id=venue.id, email=r.email, name=r.name, role=r.role,
                           affiliation=r.affiliation, quota=r.quota, status="pending",
                           reason="", sent_count=0, token_hash="",
                           invited_by=self.actor.id if self.actor else None,
                           expires_at=utcnow())
        # a declined invitation may be renewed: the old row makes room
        old = self.db.scalar(select(m.Invitation).where(
            m.Invitation.venue_id == venue.id, m.Invitation.email == r.email,
            m.Invitation.role == r.role)) if look else None
        if old is not None:
            self.db.delete(old)
            self.db.flush()
        self._issue(venue, inv)
        self.db.add(inv)
        return inv

    def invite(self, venue: m.Venue, rows: list[dict]) -> list[dict]:
        """Invite people (chairs): ``[{"email", "name", "role", "affiliation"?, "quota"?}]``;
        all rows are checked first and nothing is created if one is bad. Returns the
        created rows."""
        self._manage(venue)
        checked = check_invitation_rows(
            [(i, r.get("email"), r.get("name"), r.get("role"), r.get("affiliation") or "",
              "" if r.get("quota") is None else str(r.get("quota")))
             for i, r in enumerate(rows, 1)], venue.max_load, what="invitation")
        self._check_new(venue, checked)
        created = [self._create(venue, r) for r in checked]
        self.db.flush()
        self._audit(venue.id, "invitation.create", f"venue:{venue.id}", n=len(created),
                    emails=[c.email for c in created][:20])
        self._commit()
        return [self._row(inv) for inv in created]

    def import_invitations(self, venue: m.Venue, text: str) -> dict:
        """Import a CSV file ``email,name,role[,affiliation][,quota]`` (chairs). The whole file
        is checked first: a bad row is reported with its line number and nothing is applied.
        Then an ``invitations.import`` job creates the invitations and queues their mail;
        returns ``{"job_id", "rows"}``."""
        self._manage(venue)
        rows = parse_invitation_csv(text, venue.max_load)
        self._check_new(venue, rows)
        job = enqueue(self.db, "invitations.import", {"venue_id": venue.id, "csv": text,
                                                      "actor_id": self.actor.id},
                      venue_id=venue.id, created_by=self.actor.id)
        self._audit(venue.id, "invitation.import", f"venue:{venue.id}", rows=len(rows))
        self._commit()
        return {"job_id": job.id, "rows": len(rows)}

    def run_invitation_import(self, venue_id: int, text: str, run: JobRun) -> dict:
        """The ``invitations.import`` job: creates the invitations in chunks, committing its
        progress; a rerun after a crash skips the rows already created."""
        venue = self.venue(venue_id)
        rows = parse_invitation_csv(text, venue.max_load)
        created = 0
        for start in range(0, len(rows), 500):
            chunk = rows[start:start + 500]
            have = {(x.email, x.role): x for x in self.db.scalars(select(m.Invitation).where(
                m.Invitation.venue_id == venue.id,
                m.Invitation.email.in_([r.email for r in chunk])))}
            for r in chunk:
                old = have.get((r.email, r.role))
                if old is not None and old.status != "declined":
                    continue  # created by an earlier try of this job
                if old is not None:
                    self.db.delete(old)
                    self.db.flush()
                self._create(venue, r, look=False)
                created += 1
            run.progress(start + len(chunk), len(rows))
        return {"created": created, "rows": len(rows)}

    def _row(self, inv: m.Invitation) -> dict:
        return {"id": inv.id, "email": inv.email, "name": inv.name, "role": inv.role,
                "affiliation": inv.affiliation, "quota": inv.quota,
                "status": invitation_status(inv), "reason": inv.reason,
                "sent_count": inv.sent_count, "user_id": inv.user_id,
                "expires_at": aware(inv.expires_at).isoformat(timespec="seconds"),
                "answered_at": (aware(inv.answered_at).isoformat(timespec="seconds")
                                if inv.answered_at else None)}

    def list_invitations(self, venue: m.Venue, status: str = "") -> list[dict]:
        """Every invitation of the venue with its state (chairs)."""
        authorize(Action.VIEW_ADMIN, facts_for(self.viewer(venue), None, Phase(venue.phase)))
        rows = [self._row(inv) for inv in self.db.scalars(select(m.Invitation).where(
            m.Invitation.venue_id == venue.id).order_by(m.Invitation.id))]
        return [r for r in rows if not status or r["status"] == status]

    def _venue_invitation(self, venue: m.Venue, inv_id: int) -> m.Invitation:
        self._manage(venue)
        inv = self.db.get(m.Invitation, inv_id)
        if inv is None or inv.venue_id != venue.id:
            raise NotFound("no such invitation")
        return inv

    def resend_invitation(self, venue: m.Venue, inv_id: int) -> dict:
        """A fresh link for a pending or expired invitation (chairs)."""
        inv = self._venue_invitation(venue, inv_id)
        if inv.status != "pending":
            raise ServiceError(f"this invitation was {inv.status} already")
        self._issue(venue, inv)
        self._audit(venue.id, "invitation.resend", f"invitation:{inv.id}")
        self._commit()
        return self._row(inv)

    def revoke_invitation(self, venue: m.Venue, inv_id: int) -> None:
        """Withdraw a pending invitation: its link stops working (chairs)."""
        inv = self._venue_invitation(venue, inv_id)
        if inv.status != "pending":
            raise ServiceError(f"this invitation was {inv.status} already")
        self.db.delete(inv)
        self._audit(venue.id, "invitation.revoke", f"invitation:{inv_id}", email=inv.email)
        self._commit()

    def remind_invitations(self, venue: m.Venue) -> int:
        """Remind every pending invitee (expired ones too) with a fresh link (chairs);
        returns how many."""
        self._manage(venue)
        pending = self.db.scalars(select(m.Invitation).where(
            m.Invitation.venue_id == venue.id, m.Invitation.status == "pending")).all()
        for inv in pending:
            self._issue(venue, inv, reminder=True)
        self._audit(venue.id, "invitation.remind", f"venue:{venue.id}", n=len(pending))
        self._commit()
        return len(pending)

    # ------------------------------------------------------------------ the invitee
    def _by_token(self, token: str) -> m.Invitation:
        authorize(Action.ANSWER_INVITATION, Facts(phase=Phase.SUBMISSION, logged_in=False))
        inv = self.db.scalar(select(m.Invitation).where(
            m.Invitation.token_hash == token_hash(token or "")))
        if inv is None:
            raise NotFound("this invitation link is not valid (it was replaced by a newer "
                           "one, or revoked)")
        return inv

    def _open(self, inv: m.Invitation) -> None:
        state = invitation_status(inv)
        if state != "pending":
            raise ServiceError(f"this invitation was {state} already; the link works once")

    def invitation_by_token(self, token: str) -> dict:
        """What a link invites to (for the invitee's page; no login)."""
        inv = self._by_token(token)
        venue = self.db.get(m.Venue, inv.venue_id)
        return {"venue": venue.name, "slug": venue.slug, "role": inv.role, "name": inv.name,
                "email": inv.email, "status": invitation_status(inv),
                "has_account": self._account_of(inv.email) is not None,
                "max_quota": venue.max_load, "quota": inv.quota}

    def _account_of(self, email: str) -> m.User | None:
        user = self.db.scalar(select(m.User).where(m.User.email == email))
        if user is None:
            user = self.db.scalar(select(m.User).join(
                m.UserEmail, m.UserEmail.user_id == m.User.id).where(
                m.UserEmail.email == email, m.UserEmail.verified_at.is_not(None)))
        return user

    def accept_invitation(self, token: str, *, name: str = "", password: str = "",
                          quota: int | None = None) -> dict:
        """Accept through the link (no login: the link proves the address). Without an
        account for the address, ``password`` (and optionally ``name``) create one, verified.
        The member's conflicts are computed for them alone."""
        inv = self._by_token(token)
        self._open(inv)
        venue = self.db.get(m.Venue, inv.venue_id)
        if quota is not None and not 0 <= int(quota) <= venue.max_load:
            raise ServiceError(f"quota must be from 0 to the venue's maximum {venue.max_load}")
        user = self._account_of(inv.email)
        created = False
        if user is None:
            if not password:
                raise ServiceError("choose a password to create your account")
            try:
                pw = hash_password(self.hasher, password)
            except ValueError as exc:
                raise ServiceError(str(exc)) from None
            user = m.User(email=inv.email, name=clean_text(name or inv.name, "name", "name"),
                          affiliation=inv.affiliation, password_hash=pw,
                          email_verified_at=utcnow())
            self.db.add(user)
            self.db.flush()
            created = True
            self.svc.accounts._link_authorship(user)
        elif user.email == inv.email and user.email_verified_at is None:
            user.email_verified_at = utcnow()  # the link proves the address
            self.svc.accounts._link_authorship(user)
        role = Role(inv.role)
        ms = self.db.scalar(select(m.Membership).where(
            m.Membership.venue_id == venue.id, m.Membership.user_id == user.id,
            m.Membership.role == role.value))
        if ms is None:
            ms = m.Membership(venue_id=venue.id, user_id=user.id, role=role.value)
            self.db.add(ms)
        ms.quota = quota if quota is not None else inv.quota
        inv.status, inv.answered_at, inv.user_id = "accepted", utcnow(), user.id
        self.db.flush()
        self.svc.conflicts.update_member_conflicts(venue, user.id)
        self.ctx.forget_roles()
        self._audit(venue.id, "invitation.accept", f"invitation:{inv.id}", user=user.id,
                    account_created=created)
        self._commit()
        return {"status": "accepted", "venue": venue.slug, "role": role.value,
                "user_id": user.id, "account_created": created}

    def decline_invitation(self, token: str, reason: str = "") -> dict:
        """Decline through the link, with an optional reason (no login)."""
        inv = self._by_token(token)
        self._open(inv)
        inv.status, inv.answered_at = "declined", utcnow()
        inv.reason = clean_text(reason, "reason", required=False)[:2000]
        self._audit(inv.venue_id, "invitation.decline", f"invitation:{inv.id}")
        self._commit()
        return {"status": "declined"}

    def set_my_quota(self, venue: m.Venue, quota: int) -> int:
        """Declare the most papers one takes in ``venue`` (at most its maximum load)."""
        user = self._require_login()
        rows = self.db.scalars(select(m.Membership).where(
            m.Membership.venue_id == venue.id, m.Membership.user_id == user.id,
            m.Membership.role.in_([Role.REVIEWER.value, Role.AC.value]))).all()
        if not rows:
            raise ServiceError("only reviewers and area chairs of the venue declare a quota")
        if not 0 <= int(quota) <= venue.max_load:
            raise ServiceError(f"quota must be from 0 to the venue's maximum {venue.max_load}")
        for ms in rows:
            ms.quota = int(quota)
        self._audit(venue.id, "member.quota", f"user:{user.id}", quota=int(quota))
        self._commit()
        return int(quota)
