"""Accounts and sessions: registration with e-mail verification, login (throttled per address
and account), web sessions, personal access tokens and profile settings."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from icml25.review import models as m
from icml25.review.authority import Action, authorize
from icml25.review.errors import LoginFailed, LoginThrottled, NotFound, ServiceError
from icml25.review.security import (
    dummy_verify,
    hash_password,
    new_secret,
    token_hash,
    verify_password,
)
from icml25.review.services.base import (
    EMAIL_RE,
    Service,
    aware,
    clean_text,
    is_verified,
    utcnow,
)

VERIFY_HOURS = 48  # a verification link expires after this long


class Accounts(Service):
    """Accounts and sessions."""

    def create_user(self, email: str, name: str, password: str, affiliation: str = "",
                    is_admin: bool = False, *, verified: bool = True) -> m.User:
        """Create an account (argon2-hashed password).

        This is the operator's path (``icml25 review create-user``, scripts): the address is
        taken as verified and the account is linked to the submissions that list it. People who
        sign up themselves go through :meth:`register`, which verifies the address first.
        """
        email = (email or "").strip().lower()
        if not EMAIL_RE.match(email):
            raise ServiceError("please give a valid e-mail address")
        name = clean_text(name, "name", "name")
        if self.db.scalar(select(m.User).where(m.User.email == email)):
            raise ServiceError("an account with this e-mail already exists")
        try:
            pw = hash_password(self.hasher, password)
        except ValueError as exc:
            raise ServiceError(str(exc)) from None
        user = m.User(email=email, name=name, affiliation=clean_text(affiliation, "affiliation",
                      "name", required=False), password_hash=pw, is_admin=is_admin,
                      email_verified_at=utcnow() if verified else None)
        self.db.add(user)
        self.db.flush()
        if verified:
            self._link_authorship(user)
        self._audit(None, "user.create", f"user:{user.id}", verified=verified)
        self._commit()
        return user

    def register(self, email: str, name: str, password: str, affiliation: str = "") -> m.User:
        """Self-service sign-up: the account starts unverified (it is linked to no submission
        and sees none) and a single-use link valid for 48 hours goes to the address."""
        user = self.create_user(email, name, password, affiliation, verified=False)
        self.send_verification(user)
        return user

    def send_verification(self, user: m.User | None = None) -> None:
        """Queue a fresh verification link for ``user`` (default: the actor)."""
        user = user or self._require_login()
        if is_verified(user):
            raise ServiceError("this e-mail address is already verified")
        secret = new_secret()
        self.db.add(m.EmailToken(user_id=user.id, purpose="verify", token_hash=token_hash(secret),
                                 expires_at=utcnow() + timedelta(hours=VERIFY_HOURS)))
        link = f"{self.settings.public_url.rstrip('/')}/verify-email?token={secret}"
        self._mail(None, user.email, "Please confirm your e-mail address",
                   f"Someone (we hope you) created an account for this address. To confirm it, "
                   f"open {link} within {VERIFY_HOURS} hours. If it was not you, ignore this "
                   "message: the account stays locked out of every submission.")
        self._commit()

    def verify_email(self, secret: str) -> m.User:
        """Follow a verification link: mark the address verified and link the account to the
        submissions that list it as an author."""
        row = self.db.scalar(select(m.EmailToken).where(
            m.EmailToken.token_hash == token_hash(secret or ""),
            m.EmailToken.purpose.in_(("verify", "email"))))
        if row is None or row.used_at is not None or aware(row.expires_at) < utcnow():
            raise ServiceError("this link is invalid or has expired; log in to get a new one")
        row.used_at = utcnow()
        if row.purpose == "email":  # a further address of the account
            user = self.svc.identity.verify_added_email(row)
            self._audit(None, "email.verify", f"user:{user.id}")
            self._commit()
            return user
        user = self.db.get(m.User, row.user_id)
        if not is_verified(user):
            user.email_verified_at = utcnow()
            self._link_authorship(user)
            self._audit(None, "user.verify", f"user:{user.id}")
        self._commit()
        return user

    def _link_authorship(self, user: m.User) -> None:
        links = self.db.scalars(select(m.SubmissionAuthor).where(
            m.SubmissionAuthor.email == user.email, m.SubmissionAuthor.user_id.is_(None))).all()
        for sa in links:
            sa.user_id = user.id
        for sub_id in {sa.submission_id for sa in links}:
            self.svc.submissions.recompute_conflicts(self.db.get(m.Submission, sub_id))

    def me(self) -> dict:
        """The actor's own account."""
        u = self._require_login()
        return {"id": u.id, "email": u.email, "name": u.name,
                "email_verified": is_verified(u), "profile_public": bool(u.profile_public)}

    def set_profile_public(self, public: bool) -> None:
        """Opt in to (or out of) a public reviewer profile (verified accounts: the authority's
        ``PUBLISH_PROFILE``, so no unproven name goes public)."""
        user = self._require_login()
        authorize(Action.PUBLISH_PROFILE, self.ctx.account_facts())
        user.profile_public = bool(public)
        self._audit(None, "profile.public", f"user:{user.id}", public=bool(public))
        self._commit()

    def login(self, email: str, password: str, ip: str = "") -> tuple[str, m.WebSession]:
        """Check the password and open a session; returns (cookie token, session).

        Throttled per (address, account): ``login_max_failures`` wrong passwords for one
        account from one address within the window lock that pair only, so a stranger cannot
        lock the owner out from elsewhere; ``login_max_failures_per_ip`` failures from one
        address over all accounts lock that address.
        """
        email = (email or "").strip().lower()
        s = self.settings
        since = utcnow() - timedelta(minutes=s.login_window_minutes)
        failed = select(func.count()).select_from(m.LoginAttempt).where(
            m.LoginAttempt.ip == ip[:64], m.LoginAttempt.success.is_(False),
            m.LoginAttempt.at >= since)
        fails_pair = self.db.scalar(failed.where(m.LoginAttempt.email == email[:254])) or 0
        fails_ip = self.db.scalar(failed) or 0
        if fails_pair >= s.login_max_failures or (ip and fails_ip >= s.login_max_failures_per_ip):
            raise LoginThrottled(
                f"too many failed logins; try again in {s.login_window_minutes} minutes")
        user = self.svc.identity.account_by_address(email)  # any verified address
        ok = verify_password(self.hasher, user.password_hash, password) if user else False
        if user is None:
            dummy_verify(self.hasher)
        self.db.add(m.LoginAttempt(email=email[:254], ip=ip[:64], success=ok))
        if not ok:
            self.db.commit()
            raise LoginFailed("wrong e-mail or password")
        token = new_secret()
        ws = m.WebSession(token_hash=token_hash(token), user_id=user.id, csrf_token=new_secret(),
                          expires_at=utcnow() + timedelta(hours=s.session_hours))
        self.db.add(ws)
        self.db.commit()
        return token, ws

    def session_user(self, token: str | None) -> tuple[m.User, m.WebSession] | None:
        """The user and session of a cookie token, if valid and not expired."""
        if not token:
            return None
        found = self.db.execute(select(m.WebSession, m.User).join(
            m.User, m.User.id == m.WebSession.user_id).where(
            m.WebSession.token_hash == token_hash(token))).first()
        if found is None or aware(found[0].expires_at) < utcnow():
            return None
        return found[1], found[0]

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
        self.db.add(m.ApiToken(user_id=user.id, name=clean_text(name, "token name", "name"),
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
        """The user a bearer token belongs to.

        The token's row and its owner come from the view cache when current (a revoked token
        or a changed account is a new epoch, so a hit is never stale); the owner is attached
        to this request's session without a query."""
        if not secret:
            return None
        digest = token_hash(secret)
        found = self.ctx.cached_fact(("token", digest), lambda: self._load_token(digest))
        if found is None:
            return None
        token_id, last_used, owner = found
        user = self.db.merge(owner, load=False)
        # record use at most once a minute (no write on every API call)
        now = utcnow()
        if last_used is None or aware(last_used) < now - timedelta(minutes=1):
            t = self.db.get(m.ApiToken, token_id)
            if t is None:  # revoked a moment ago
                return None
            t.last_used_at = now
            self.db.commit()  # a token's last use is no fact the cache keeps: same epoch
            self.ctx.refresh_fact(("token", digest), (token_id, now, owner))
        return user

    def _load_token(self, digest: str) -> tuple[int, datetime | None, m.User] | None:
        """(token id, last use, owner) of a token, loaded outside the request's session so
        that the cached owner is never tied to (or expired by) it."""
        side = Session(bind=self.db.connection(), expire_on_commit=False, autoflush=False)
        try:
            found = side.execute(select(m.ApiToken.id, m.ApiToken.last_used_at, m.User).join(
                m.User, m.User.id == m.ApiToken.user_id).where(
                m.ApiToken.token_hash == digest)).first()
        finally:
            side.close()
        return None if found is None else (found[0], found[1], found[2])
