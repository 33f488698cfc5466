"""Who a person is: password reset by e-mail, further verified addresses (log in with any),
affiliation history, the publication list (conflicts and affinity) and the mail preference.
Every change that a conflict depends on recomputes that person's conflicts alone, in each
venue they serve."""

from __future__ import annotations

import json
from datetime import timedelta

from sqlalchemy import delete, func, select

from icml25.review import models as m
from icml25.review.authority import Action, Facts, authorize
from icml25.review.errors import NotFound, ServiceError
from icml25.review.people import name_key, parse_publications, this_year
from icml25.review.security import dummy_verify, hash_password, new_secret, token_hash
from icml25.review.services.base import EMAIL_RE, Service, aware, clean_text, utcnow
from icml25.review.workflow import Phase

RESET_MINUTES = 60
PREFERENCES = ("immediate", "digest", "off")
MAX_PUBLICATIONS = 2000


class Identity(Service):
    """Password reset, addresses, affiliations, publications, mail preference."""

    # ------------------------------------------------------------------ password reset
    def _anonymous(self) -> None:
        authorize(Action.RESET_PASSWORD, Facts(phase=Phase.SUBMISSION, logged_in=False))

    def _throttled(self, key: str, limit: int) -> bool:
        since = utcnow() - timedelta(hours=1)
        n = self.db.scalar(select(func.count()).select_from(m.RateEvent).where(
            m.RateEvent.key == key, m.RateEvent.at >= since)) or 0
        self.db.add(m.RateEvent(key=key))
        return n >= limit

    def account_by_address(self, email: str) -> m.User | None:
        """The account that owns ``email`` (its primary or a verified further address)."""
        email = (email or "").strip().lower()
        user = self.db.scalar(select(m.User).where(m.User.email == email))
        if user is None:
            user = self.db.scalar(select(m.User).join(
                m.UserEmail, m.UserEmail.user_id == m.User.id).where(
                m.UserEmail.email == email, m.UserEmail.verified_at.is_not(None)))
        return user

    def request_password_reset(self, email: str, ip: str = "") -> None:
        """Send a single-use reset link valid for one hour to ``email`` if an account uses
        it. The caller answers the same whatever happened (no account enumeration);
        ``reset_max_per_hour`` requests per address (ten times that per client address) are
        served an hour, the rest silently dropped."""
        self._anonymous()
        email = (email or "").strip().lower()[:254]
        limit = self.settings.reset_max_per_hour
        over = self._throttled(f"reset:addr:{email}", limit)
        over = self._throttled(f"reset:ip:{ip[:64]}", 10 * limit) or over
        user = self.account_by_address(email) if EMAIL_RE.match(email) else None
        if user is not None and not over:
            secret = new_secret()
            self.db.add(m.EmailToken(user_id=user.id, purpose="reset", target=email,
                                     token_hash=token_hash(secret),
                                     expires_at=utcnow() + timedelta(minutes=RESET_MINUTES)))
            link = f"{self.settings.public_url.rstrip('/')}/reset-password?token={secret}"
            self._mail(None, email, "Reset your password",
                       f"Someone (we hope you) asked to reset the password of the account of "
                       f"this address. To choose a new one, open\n\n{link}\n\nwithin "
                       f"{RESET_MINUTES} minutes; the link works once. If it was not you, "
                       "ignore this message: your password stays as it is.")
            self._audit(None, "password.reset_request", f"user:{user.id}")
        else:
            dummy_verify(self.hasher)  # about the same time either way
        self.db.commit()

    def reset_password(self, token: str, password: str) -> None:
        """Set a new password with a reset link's token (single use, one hour); every
        session of the account ends and its other reset links stop working."""
        self._anonymous()
        row = self.db.scalar(select(m.EmailToken).where(
            m.EmailToken.token_hash == token_hash(token or ""),
            m.EmailToken.purpose == "reset"))
        if row is None or row.used_at is not None or aware(row.expires_at) < utcnow():
            raise ServiceError("this reset link is invalid, used or expired; ask for a new one")
        user = self.db.get(m.User, row.user_id)
        try:
            user.password_hash = hash_password(self.hasher, password)
        except ValueError as exc:
            raise ServiceError(str(exc)) from None
        now = utcnow()
        for other in self.db.scalars(select(m.EmailToken).where(
                m.EmailToken.user_id == user.id, m.EmailToken.purpose == "reset",
                m.EmailToken.used_at.is_(None))):
            other.used_at = now
        self.db.execute(delete(m.WebSession).where(m.WebSession.user_id == user.id))
        if user.email_verified_at is None and row.target == user.email:
            user.email_verified_at = now  # the link proved the address
        self._audit(None, "password.reset", f"user:{user.id}")
        self._commit()

    # ------------------------------------------------------------------ addresses
    def my_emails(self) -> list[dict]:
        """The actor's addresses: the primary one first."""
        user = self._require_login()
        rows = [{"email": user.email, "primary": True,
                 "verified": user.email_verified_at is not None}]
        for e in self.db.scalars(select(m.UserEmail).where(m.UserEmail.user_id == user.id)
                                 .order_by(m.UserEmail.id)):
            rows.append({"email": e.email, "primary": False, "verified": e.verified_at
                         is not None})
        return rows

    def add_email(self, email: str) -> dict:
        """Add a further address; a single-use link (48 hours) sent to it verifies it."""
        user = self._require_login()
        email = (email or "").strip().lower()
        if not EMAIL_RE.match(email):
            raise ServiceError("please give a valid e-mail address")
        owner = self.db.scalar(select(m.User.id).where(m.User.email == email)) or \
            self.db.scalar(select(m.UserEmail.user_id).where(m.UserEmail.email == email))
        if owner == user.id:
            raise ServiceError("this address is already on your account")
        if owner:
            # the same answer as for a free address: whether an address has an account is never
            # told; its owner learns of the attempt instead
            self._mail(None, email, "Somebody tried to add this address to their account",
                       "An account on this platform tried to add this address. Nothing was "
                       "changed: the address stays with your account. If it was you, log in "
                       "with this address instead.")
            self._audit(None, "email.add_refused", f"user:{user.id}")
            self._commit()
            return {"email": email, "primary": False, "verified": False}
        n = self.db.scalar(select(func.count()).select_from(m.UserEmail).where(
            m.UserEmail.user_id == user.id)) or 0
        if n >= 10:
            raise ServiceError("at most 10 further addresses")
        self.db.add(m.UserEmail(user_id=user.id, email=email))
        secret = new_secret()
        self.db.add(m.EmailToken(user_id=user.id, purpose="email", target=email,
                                 token_hash=token_hash(secret),
                                 expires_at=utcnow() + timedelta(hours=48)))
        link = f"{self.settings.public_url.rstrip('/')}/verify-email?token={secret}"
        self._mail(None, email, "Please confirm this e-mail address",
                   f"{user.name} added this address to their account. To confirm it, open "
                   f"{link} within 48 hours. If it was not you, ignore this message.")
        self._audit(None, "email.add", f"user:{user.id}")
        self._commit()
        return {"email": email, "primary": False, "verified": False}

    def verify_added_email(self, row: m.EmailToken) -> m.User:
        """Mark a further address verified (from :meth:`Accounts.verify_email`)."""
        ue = self.db.scalar(select(m.UserEmail).where(m.UserEmail.email == row.target,
                                                      m.UserEmail.user_id == row.user_id))
        if ue is None:
            raise ServiceError("this address was removed from the account")
        ue.verified_at = utcnow()
        user = self.db.get(m.User, row.user_id)
        # the submissions that list this address become the account's
        for sa in self.db.scalars(select(m.SubmissionAuthor).where(
                m.SubmissionAuthor.email == ue.email, m.SubmissionAuthor.user_id.is_(None))):
            sa.user_id = user.id
        self.db.flush()
        self.refresh_my_conflicts(user.id)
        return user

    def set_primary_email(self, email: str) -> None:
        """Make a verified further address the primary one (the old one stays, verified)."""
        user = self._require_login()
        email = (email or "").strip().lower()
        ue = self.db.scalar(select(m.UserEmail).where(m.UserEmail.user_id == user.id,
                                                      m.UserEmail.email == email))
        if ue is None or ue.verified_at is None:
            raise ServiceError("only a verified address of yours can become the primary one")
        old, verified = user.email, user.email_verified_at
        self.db.delete(ue)
        self.db.flush()
        user.email, user.email_verified_at = email, ue.verified_at
        self.db.add(m.UserEmail(user_id=user.id, email=old, verified_at=verified))
        self._audit(None, "email.primary", f"user:{user.id}")
        self._commit()

    # ------------------------------------------------------------------ affiliations
    def affiliations(self) -> list[dict]:
        """The actor's affiliation history, newest first."""
        user = self._require_login()
        rows = self.db.scalars(select(m.Affiliation).where(m.Affiliation.user_id == user.id))
        out = [{"id": a.id, "institution": a.institution, "domain": a.domain,
                "start_year": a.start_year, "end_year": a.end_year} for a in rows]
        return sorted(out, key=lambda a: -(a["end_year"] or 9999))

    def add_affiliation(self, institution: str, domain: str, start_year: int | None = None,
                        end_year: int | None = None) -> dict:
        """Add an institution (with its mail domain) and the years (``end_year`` None:
        current); the actor's conflicts are recomputed."""
        user = self._require_login()
        institution = clean_text(institution, "institution", "name")
        domain = (domain or "").strip().lower().lstrip("@")
        if not EMAIL_RE.match("x@" + domain) or len(domain) > 120:
            raise ServiceError("give the institution's mail domain, like example.edu")
        now = this_year()
        for y, what in ((start_year, "start"), (end_year, "end")):
            if y is not None and not 1950 <= int(y) <= now + 1:
                raise ServiceError(f"the {what} year must be from 1950 to {now + 1}")
        if start_year and end_year and end_year < start_year:
            raise ServiceError("the end year comes before the start year")
        a = m.Affiliation(user_id=user.id, institution=institution, domain=domain,
                          start_year=start_year, end_year=end_year)
        self.db.add(a)
        self.db.flush()
        self.refresh_my_conflicts(user.id)
        self._audit(None, "affiliation.add", f"user:{user.id}", domain=domain)
        self._commit()
        return {"id": a.id, "institution": institution, "domain": domain,
                "start_year": start_year, "end_year": end_year}

    def remove_affiliation(self, affiliation_id: int) -> None:
        """Remove one entry of the actor's history; their conflicts are recomputed."""
        user = self._require_login()
        a = self.db.get(m.Affiliation, affiliation_id)
        if a is None or a.user_id != user.id:
            raise NotFound("no such affiliation")
        self.db.delete(a)
        self.db.flush()
        self.refresh_my_conflicts(user.id)
        self._audit(None, "affiliation.remove", f"user:{user.id}")
        self._commit()

    # ------------------------------------------------------------------ publications
    def upload_publications(self, text: str) -> dict:
        """Replace the actor's publication list with an uploaded one (BibTeX, or a CSV /
        JSON export of DBLP, OpenReview or Semantic Scholar; parsed here, offline). Its
        co-authors become conflicts; its titles and abstracts feed affinity."""
        user = self._require_login()
        papers = parse_publications(text)
        if len(papers) > MAX_PUBLICATIONS:
            raise ServiceError(f"at most {MAX_PUBLICATIONS} publications")
        old_titles = list(self.db.scalars(select(m.Publication.title).where(
            m.Publication.user_id == user.id)))
        self.db.execute(delete(m.Coauthor).where(m.Coauthor.user_id == user.id))
        self.db.execute(delete(m.Publication).where(m.Publication.user_id == user.id))
        if old_titles:
            self.db.execute(delete(m.ReviewerPaper).where(
                m.ReviewerPaper.user_id == user.id,
                m.ReviewerPaper.title.in_([t[:300] for t in old_titles])))
        own = name_key(user.name)
        n_coauthors = 0
        for p in papers:
            pub = m.Publication(user_id=user.id, title=p.title, year=p.year,
                                abstract=p.abstract, authors=json.dumps(p.authors),
                                source="bibtex" if text.lstrip().startswith("@") else "export")
            self.db.add(pub)
            self.db.flush()
            for key in {name_key(a) for a in p.authors} - {own, ""}:
                self.db.add(m.Coauthor(user_id=user.id, publication_id=pub.id, name_key=key))
                n_coauthors += 1
            self.db.add(m.ReviewerPaper(user_id=user.id, title=p.title[:300],
                                        abstract=p.abstract or p.title))
        self.db.flush()
        self.refresh_my_conflicts(user.id)
        self._audit(None, "publications.upload", f"user:{user.id}", n=len(papers))
        self._commit()
        return {"publications": len(papers), "coauthors": n_coauthors}

    def publications(self) -> list[dict]:
        """The actor's publication list."""
        user = self._require_login()
        return [{"title": p.title, "year": p.year, "authors": json.loads(p.authors)}
                for p in self.db.scalars(select(m.Publication).where(
                    m.Publication.user_id == user.id).order_by(m.Publication.id))]

    # ------------------------------------------------------------------ preference
    def set_mail_preference(self, preference: str) -> None:
        """``immediate``, ``digest`` (one e-mail a day) or ``off`` for non-essential mail
        (notifications); invitations, resets and decisions always come."""
        user = self._require_login()
        if preference not in PREFERENCES:
            raise ServiceError(f"choose one of {', '.join(PREFERENCES)}")
        user.mail_preference = preference
        self._audit(None, "mail.preference", f"user:{user.id}", preference=preference)
        self._commit()

    def refresh_my_conflicts(self, user_id: int) -> None:
        """Recompute one person's conflicts in every venue they serve (nobody else's)."""
        for vid in self.db.scalars(select(m.Membership.venue_id).where(
                m.Membership.user_id == user_id).distinct()):
            self.svc.conflicts.update_member_conflicts(self.db.get(m.Venue, vid), user_id)
