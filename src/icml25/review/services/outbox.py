"""The mail outbox: e-mails are queued in the database with the change that causes them
(see ``Service._mail``), each with a ``mail.send`` job (icml25/review/jobs.py) that delivers
it; :meth:`Outbox.send_outbox` sends what is still waiting at once (``icml25 review
send-mail``), and :meth:`Outbox.mail_log` shows every e-mail in full to site admins."""

from __future__ import annotations

import smtplib

from sqlalchemy import func, select

from icml25.review import models as m
from icml25.review.authority import Action
from icml25.review.errors import NotFound
from icml25.review.jobs import build_message, enqueue, message_id
from icml25.review.services.base import Service, utcnow

WAITING = ("queued", "unsent", "failed")


class Outbox(Service):
    """The mail outbox and the admin mail log."""

    def send_outbox(self) -> int:
        """Send every e-mail not yet sent over SMTP (when ``smtp_host`` is set), each under its
        own ``Message-ID``; returns how many. Their jobs then find them sent and skip them."""
        if not self.settings.smtp_host:
            return 0
        pending = self.db.scalars(select(m.Email).where(
            m.Email.sent_at.is_(None), m.Email.status.in_(WAITING)).order_by(m.Email.id)).all()
        if not pending:
            return 0
        with smtplib.SMTP(self.settings.smtp_host, self.settings.smtp_port, timeout=30) as smtp:
            for e in pending:
                smtp.send_message(build_message(self.settings, e))
                e.sent_at, e.status, e.last_error = utcnow(), "sent", ""
                e.attempts += 1
                self.db.commit()  # one by one: a crash resends at most the one in flight
        return len(pending)

    def mail_log(self, *, page: int = 1, per_page: int = 50, to: str = "",
                 status: str = "") -> dict:
        """Every e-mail of the platform, newest first, in full (site admins).

        Parameters
        ----------
        page, per_page : int
            Which page of the log.
        to : str
            Only mail to addresses containing this text.
        status : str
            Only mail in this state (queued, sent, unsent, failed, digest, off).

        Returns
        -------
        dict
            ``{"total", "page", "pages", "mails": [{id, to, subject, body, status, ...}]}``.
        """
        self.check(Action.VIEW_MAIL_LOG)
        where = m.Email.id.is_not(None)
        if to:
            where &= m.Email.to_addr.contains(to.strip().lower())
        if status:
            where &= m.Email.status == status
        total = self.db.scalar(select(func.count()).select_from(m.Email).where(where)) or 0
        pages = max(1, -(-total // per_page))
        page = min(max(1, int(page)), pages)
        rows = self.db.scalars(select(m.Email).where(where).order_by(m.Email.id.desc())
                               .offset((page - 1) * per_page).limit(per_page)).all()
        return {"total": total, "page": page, "pages": pages,
                "mails": [mail_row(e, body=True) for e in rows]}

    def retry_mail(self, email_id: int) -> None:
        """Queue a failed or unsent e-mail again, under the same ``Message-ID`` (site
        admins)."""
        self.check(Action.VIEW_MAIL_LOG)
        e = self.db.get(m.Email, email_id)
        if e is None:
            raise NotFound("no such e-mail")
        if e.status == "sent":
            return
        e.status, e.last_error = "queued", ""
        e.message_id = e.message_id or message_id(self.settings)
        enqueue(self.db, "mail.send", {"message_id": e.message_id}, venue_id=e.venue_id)
        self._audit(e.venue_id, "mail.retry", f"email:{e.id}")
        self._commit()


def mail_row(e: m.Email, body: bool = False) -> dict:
    """One e-mail as the outbox and the mail log show it."""
    row = {"id": e.id, "to": e.to_addr, "subject": e.subject, "status": e.status,
           "sent": e.sent_at is not None, "attempts": e.attempts, "error": e.last_error,
           "message_id": e.message_id or "",
           "created_at": e.created_at.isoformat(timespec="seconds") if e.created_at else ""}
    if body:
        row["body"] = e.body
    return row
