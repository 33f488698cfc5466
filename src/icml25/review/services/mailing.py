"""Jobs and mail to people: a job's status, bulk mail to a filtered group of a venue (with the
exact recipient list and one rendered message before anything is sent), the daily digest of
held notifications, and reminders for late reviews."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, date, datetime, timedelta

from sqlalchemy import func, select

from icml25.review import models as m
from icml25.review.authority import Action, Facts, authorize, facts_for
from icml25.review.errors import NotFound, ServiceError
from icml25.review.jobs import JobRun, enqueue, enqueue_once, job_view
from icml25.review.people import render_template
from icml25.review.services.base import Service, clean_text, timeline_of
from icml25.review.workflow import Phase, Role, deadline_end

BULK_STATUSES = ("reviews_missing", "not_bid", "invitation_pending", "no_publications")
BULK_ROLES = ("reviewer", "ac", "sac", "chair", "author")
#: days before and after the reviewing deadline on which late reviewers are reminded
REMINDER_DAYS = (-3, -1, 1, 3, 7)


class Mailing(Service):
    """Job status, bulk mail, digests and reminders."""

    # ------------------------------------------------------------------ jobs
    def job(self, job_id: int) -> dict:
        """A job's status and progress (its creator, the venue's chairs, site admins)."""
        user = self._require_login()
        job = self.db.get(m.Job, job_id)
        if job is None:
            raise NotFound("no such job")
        roles = self.roles(job.venue_id) if job.venue_id else frozenset()
        authorize(Action.VIEW_JOB, Facts(
            phase=Phase.SUBMISSION, venue_roles=roles, logged_in=True,
            verified=self.ctx.principal.verified, is_admin=bool(user.is_admin),
            own_job=job.created_by == user.id))
        return job_view(job)

    # ------------------------------------------------------------------ bulk mail
    def _bulk_recipients(self, venue: m.Venue, to: dict) -> list[dict]:
        unknown = set(to) - {"role", "area", "status"}
        if unknown:
            raise ServiceError(f"unknown filter keys {sorted(unknown)}; use role, area, status")
        role = (to.get("role") or "").strip().lower()
        area = (to.get("area") or "").strip().lower()
        status = (to.get("status") or "").strip().lower()
        if role and role not in BULK_ROLES:
            raise ServiceError(f"role must be one of {', '.join(BULK_ROLES)}")
        if status and status not in BULK_STATUSES:
            raise ServiceError(f"status must be one of {', '.join(BULK_STATUSES)}")
        people: dict[str, dict] = {}
        if status == "invitation_pending":
            q = select(m.Invitation).where(m.Invitation.venue_id == venue.id,
                                           m.Invitation.status == "pending")
            if role:
                q = q.where(m.Invitation.role == role)
            now = datetime.now(UTC)
            for inv in self.db.scalars(q):
                exp = inv.expires_at if inv.expires_at.tzinfo else inv.expires_at.replace(
                    tzinfo=UTC)
                if exp >= now:
                    people[inv.email] = {"email": inv.email, "name": inv.name,
                                         "role": inv.role, "user_id": inv.user_id,
                                         "missing_reviews": 0}
            return sorted(people.values(), key=lambda p: p["email"])
        if role == "author":
            rows = self.db.execute(select(m.User.id, m.User.email, m.User.name).join(
                m.SubmissionAuthor, m.SubmissionAuthor.user_id == m.User.id).join(
                m.Submission, m.Submission.id == m.SubmissionAuthor.submission_id).where(
                m.Submission.venue_id == venue.id, m.Submission.status == "active").distinct())
            members = [(uid, email, name, "author") for uid, email, name in rows]
        else:
            q = select(m.User.id, m.User.email, m.User.name, m.Membership.role).join(
                m.Membership, m.Membership.user_id == m.User.id).where(
                m.Membership.venue_id == venue.id)
            if role:
                q = q.where(m.Membership.role == role)
            members = list(self.db.execute(q))
        missing: dict[int, int] = defaultdict(int)
        for uid, n in self.db.execute(
                select(m.Assignment.user_id, func.count()).join(
                    m.Submission, m.Submission.id == m.Assignment.submission_id).outerjoin(
                    m.Review, (m.Review.submission_id == m.Assignment.submission_id)
                    & (m.Review.reviewer_id == m.Assignment.user_id)).where(
                    m.Submission.venue_id == venue.id, m.Assignment.role == Role.REVIEWER.value,
                    m.Submission.status == "active",
                    (m.Review.id.is_(None)) | (m.Review.submitted.is_(False)))
                .group_by(m.Assignment.user_id)):
            missing[uid] = n
        bidders = set(self.db.scalars(select(m.Bid.user_id).join(
            m.Submission, m.Submission.id == m.Bid.submission_id).where(
            m.Submission.venue_id == venue.id).distinct())) if status == "not_bid" else set()
        with_pubs = set(self.db.scalars(select(m.Publication.user_id).distinct())) \
            if status == "no_publications" else set()
        area_of = self._areas(venue) if area else {}
        for uid, email, name, r in members:
            if status == "reviews_missing" and not missing.get(uid):
                continue
            if status == "not_bid" and uid in bidders:
                continue
            if status == "no_publications" and uid in with_pubs:
                continue
            if area and area not in area_of.get(uid, ""):
                continue
            p = people.setdefault(email, {"email": email, "name": name, "role": r,
                                          "user_id": uid, "missing_reviews": missing.get(uid, 0)})
            if r not in p["role"].split(","):
                p["role"] += "," + r
        return sorted(people.values(), key=lambda p: p["email"])

    def _areas(self, venue: m.Venue) -> dict[int, str]:
        """A member's area: the keywords of the papers they are assigned (lower case)."""
        out: dict[int, list[str]] = defaultdict(list)
        for uid, kw in self.db.execute(select(m.Assignment.user_id, m.Submission.keywords).join(
                m.Submission, m.Submission.id == m.Assignment.submission_id).where(
                m.Submission.venue_id == venue.id)):
            out[uid].append((kw or "").lower())
        return {u: " ".join(v) for u, v in out.items()}

    def bulk_mail(self, venue: m.Venue, *, to: dict, subject: str, body: str,
                  dry_run: bool = True) -> dict:
        """Mail a filtered group of the venue (chairs).

        ``to`` holds ``role`` (reviewer, ac, sac, chair, author), ``area`` (a keyword of
        the papers assigned to them) and ``status`` (reviews_missing, not_bid,
        invitation_pending, no_publications: no publication list, so no affinity).
        ``subject`` and ``body`` may use ``{name}``, ``{email}``,
        ``{venue}``, ``{role}``, ``{missing_reviews}`` and ``{link}``. With ``dry_run``
        nothing is sent: the answer is the exact recipient list and the first recipient's
        rendered message. Else a ``mail.bulk`` job sends to the same filter and the answer is
        its ``job_id``.
        """
        authorize(Action.SEND_BULK_MAIL, facts_for(self.viewer(venue), None, Phase(venue.phase)))
        subject = clean_text(subject, "subject", "title")
        body = clean_text(body, "body")
        recipients = self._bulk_recipients(venue, to or {})
        first = recipients[0] if recipients else {"email": "", "name": "", "role": "",
                                                  "missing_reviews": 0}
        preview = {"subject": self._render(venue, subject, first),
                   "body": self._render(venue, body, first)}
        if dry_run:
            return {"recipients": [{"email": r["email"], "name": r["name"], "role": r["role"]}
                                   for r in recipients], "preview": preview}
        if not recipients:
            raise ServiceError("no one matches this filter")
        job = enqueue(self.db, "mail.bulk", {"venue_id": venue.id, "to": to, "subject": subject,
                                             "body": body, "actor_id": self.actor.id},
                      venue_id=venue.id, created_by=self.actor.id)
        self._audit(venue.id, "mail.bulk", f"venue:{venue.id}", to=to, subject=subject,
                    recipients=len(recipients))
        self._commit()
        return {"job_id": job.id, "recipients": len(recipients)}

    def _render(self, venue: m.Venue, template: str, person: dict) -> str:
        link = f"{self.settings.public_url.rstrip('/')}/v/{venue.slug}"
        return render_template(template, {**person, "venue": venue.name, "link": link})

    def run_bulk_mail(self, payload: dict, run: JobRun) -> dict:
        """The ``mail.bulk`` job: one e-mail per recipient, each with its idempotency key, so
        a rerun after a crash queues none twice."""
        venue = self.venue(payload["venue_id"])
        people = self._bulk_recipients(venue, payload.get("to") or {})
        done = 0
        for i, p in enumerate(people, 1):
            key = f"bulk:{run.job.id}:{p['email']}"
            if self.db.scalar(select(m.Job.id).where(m.Job.idempotency_key == key)) is None:
                e = self._mail(venue.id, p["email"], self._render(venue, payload["subject"], p),
                               self._render(venue, payload["body"], p))
                self.db.flush()
                job = self.db.scalar(select(m.Job).where(
                    m.Job.idempotency_key == "mail:" + e.message_id))
                job.idempotency_key = key  # one mail per recipient and bulk job, ever
                done += 1
            if i % 200 == 0:
                run.progress(i, len(people))
        return {"queued": done, "recipients": len(people)}

    # ------------------------------------------------------------------ digests, reminders
    def send_digests(self) -> dict:
        """Bundle each person's held notifications into one e-mail (the ``mail.digest``
        job)."""
        held = self.db.scalars(select(m.Email).where(m.Email.status == "digest")
                               .order_by(m.Email.id)).all()
        by_addr: dict[str, list[m.Email]] = defaultdict(list)
        for e in held:
            by_addr[e.to_addr].append(e)
        for addr, mails in by_addr.items():
            parts = [f"* {e.subject}\n\n{e.body}" for e in mails]
            self._mail(None, addr, f"Your daily digest ({len(mails)} notifications)",
                       "\n\n".join(parts))
            for e in mails:
                e.status = "digested"
        self.db.flush()
        return {"digests": len(by_addr), "notifications": len(held)}

    def send_late_reminders(self, day: str | None = None) -> dict:
        """Remind reviewers with missing reviews N days before and after the reviewing
        deadline (``REMINDER_DAYS``); one e-mail per reviewer, venue and day."""
        today = date.fromisoformat(day) if day else datetime.now(UTC).date()
        sent = 0
        for venue in self.db.scalars(select(m.Venue).where(m.Venue.phase.in_(
                [Phase.REVIEWING.value, Phase.FEEDBACK.value]))):
            deadline = timeline_of(venue).get(Phase.REVIEWING.value)
            if not deadline:
                continue
            # counted from the deadline's own day (a date deadline ends at 24:00 of it)
            offset = (today - (deadline_end(deadline) - timedelta(microseconds=1)).date()).days
            if offset not in REMINDER_DAYS:
                continue
            root = self.svc.as_user(None)
            for p in root.mailing._bulk_recipients(venue, {"role": "reviewer",
                                                          "status": "reviews_missing"}):
                when = (f"in {-offset} day(s)" if offset < 0 else f"{offset} day(s) ago")
                self._mail(venue.id, p["email"], f"[{venue.name}] Reminder: "
                           f"{p['missing_reviews']} review(s) missing",
                           f"Dear {p['name']},\n\nthe reviewing deadline of {venue.name} is "
                           f"{deadline} ({when}); {p['missing_reviews']} of your reviews are "
                           "not submitted yet.", essential=False)
                sent += 1
        self.db.flush()
        return {"reminders": sent, "day": today.isoformat()}


def schedule_daily(maker, settings) -> None:  # noqa: ANN001
    """Enqueue today's digest and late-review reminders once (idempotency keys carry the
    date, so every worker may call this on every poll)."""
    day = datetime.now(UTC).date().isoformat()
    db = maker()
    try:
        if db.scalar(select(m.Email.id).where(m.Email.status == "digest")
                                   .limit(1)) is not None:
            enqueue_once(db, "mail.digest", {}, key=f"digest:{day}")
        enqueue_once(db, "reminders.late", {"day": day}, key=f"reminders:{day}")
    finally:
        db.close()


def daily_scheduler(maker, settings, every: float = 60.0):  # noqa: ANN001, ANN201
    """A callable for the worker's idle step: :func:`schedule_daily` at most every ``every``
    seconds."""
    last = [datetime.min.replace(tzinfo=UTC)]

    def tick() -> None:
        now = datetime.now(UTC)
        if now - last[0] >= timedelta(seconds=every):
            last[0] = now
            schedule_daily(maker, settings)
    return tick

