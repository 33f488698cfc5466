"""The mail outbox: e-mails are queued in the database with the change that causes them
(see ``Service._mail``) and sent by :meth:`Outbox.send_outbox`."""

from __future__ import annotations

import smtplib
from email.message import EmailMessage

from sqlalchemy import select

from icml25.review import models as m
from icml25.review.services.base import Service, utcnow


class Outbox(Service):
    """The mail outbox."""

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
                e.sent_at = utcnow()
        self.db.commit()
        return len(pending)
