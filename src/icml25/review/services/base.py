"""What every service shares: the per-request :class:`Context` (database session, settings,
actor and the actor's :class:`~icml25.review.authority.Principal`, loaded once), audit and mail
helpers, and the loading of venues and submission bundles.

Services know nothing of HTTP. They ask :mod:`icml25.review.authority` before every change and
build every read with :mod:`icml25.review.visibility`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import replace
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import bindparam, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from icml25.review import models as m
from icml25.review.authority import (
    Action,
    Facts,
    Principal,
    Viewer,
    authorize,
    sees_every_submission,
)
from icml25.review.cache import EPOCH, ViewCache, cache_for, clean, epoch
from icml25.review.db import Settings
from icml25.review.errors import NotFound, ServiceError
from icml25.review.forms import DEFAULT_VERSION, from_json
from icml25.review.security import make_hasher
from icml25.review.visibility import Bundle
from icml25.review.workflow import Phase, Role, at_least

if TYPE_CHECKING:
    from icml25.review.service import ReviewService

# Mail domains shared by unrelated people never imply a conflict.
PUBLIC_DOMAINS = frozenset({
    "gmail.com", "googlemail.com", "outlook.com", "hotmail.com", "yahoo.com", "icloud.com",
    "qq.com", "163.com", "126.com", "protonmail.com", "proton.me", "live.com", "aol.com",
})
EMAIL_RE = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
LIMITS = {"title": 300, "abstract": 5000, "keywords": 500, "text": 20000, "name": 200}


def utcnow() -> datetime:
    return datetime.now(UTC)


def timeline_of(venue: m.Venue) -> dict[str, str]:
    try:
        return json.loads(venue.timeline or "{}")
    except ValueError:
        return {}


def aware(dt: datetime) -> datetime:
    # SQLite returns naive datetimes; they were stored as UTC
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def clean_text(value: str | None, field: str, limit: str = "text", required: bool = True) -> str:
    value = (value or "").replace("\r\n", "\n").strip()
    if required and not value:
        raise ServiceError(f"{field} is required")
    if len(value) > LIMITS[limit]:
        raise ServiceError(f"{field} is too long (at most {LIMITS[limit]} characters)")
    return value


def clean_int(value: object, field: str, lo: int, hi: int) -> int:
    try:
        v = int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ServiceError(f"{field} must be a whole number from {lo} to {hi}") from None
    if not lo <= v <= hi:
        raise ServiceError(f"{field} must be from {lo} to {hi}")
    return v


def domain(email: str) -> str:
    return email.rsplit("@", 1)[-1].strip().lower()


def is_verified(user: m.User | None) -> bool:
    return user is not None and user.email_verified_at is not None


class Context:
    """One request's (or one script's) database session, settings and actor."""

    def __init__(self, db: Session, settings: Settings, actor: m.User | None) -> None:
        self.db, self.settings, self.actor = db, settings, actor
        self.authored: dict[int, set[int]] = {}  # venue id -> submissions the actor authors

    @cached_property
    def cache(self) -> ViewCache | None:
        """This worker's view cache for the database (None: turned off in the settings)."""
        return cache_for(self.db) if self.settings.view_cache else None

    @cached_property
    def epoch(self) -> int | None:
        """The database's epoch when this context first asked (None: cache nothing); facts
        read after it are at least as new. Forgotten at every commit."""
        return epoch(self.db) if self.cache is not None else None

    def cached_fact(self, key: tuple, compute):  # noqa: ANN001, ANN201
        """A fact about accounts (roles, authorships, assignments) from the cache, or
        ``compute()`` filed under the epoch read before it."""
        e = self.epoch
        if e is None or not clean(self.db):
            return compute()
        value = self.cache.fact(e, key)
        if value is None:
            value = compute()
            self.cache.put_fact(e, key, value)
        return value

    def refresh_fact(self, key: tuple, value) -> None:  # noqa: ANN001
        """Replace a cached fact after a write that changed it but not the epoch."""
        e = self.__dict__.get("epoch")
        if e is not None and self.cache is not None:
            self.cache.put_fact(e, key, value)

    @cached_property
    def hasher(self):  # noqa: ANN201
        return make_hasher(self.settings.argon2_time_cost, self.settings.argon2_memory_kib)

    @cached_property
    def principal(self) -> Principal:
        """The actor's account facts and roles in every venue: one query per request."""
        user = self.actor
        if user is None:
            return Principal()

        def load() -> dict[int, frozenset[Role]]:
            roles: dict[int, set[Role]] = defaultdict(set)
            for venue_id, role in self.db.execute(_ROLES, {"uid": user.id}):
                roles[venue_id].add(Role(role))
            return {v: frozenset(r) for v, r in roles.items()}

        def load_oversees() -> dict[int, frozenset[int]]:
            acs: dict[int, set[int]] = defaultdict(set)
            for venue_id, ac in self.db.execute(_OVERSEES, {"uid": user.id}):
                acs[venue_id].add(ac)
            return {v: frozenset(a) for v, a in acs.items()}

        roles = dict(self.cached_fact(("roles", user.id), load))
        # only a senior area chair oversees anyone: others pay no query for it
        oversees = (dict(self.cached_fact(("oversees", user.id), load_oversees))
                    if any(Role.SAC in r for r in roles.values()) else {})
        # the account's own facts (admin, verified) come from the row loaded this request
        return Principal(user.id, is_admin=bool(user.is_admin), verified=is_verified(user),
                         roles=roles, oversees=oversees)

    def account_facts(self, phase: Phase = Phase.SUBMISSION) -> Facts:
        """Facts about the actor alone (no venue): logged in, verified, site admin."""
        p = self.principal
        return Facts(phase=phase, logged_in=p.user_id is not None, verified=p.verified,
                     is_admin=p.is_admin)

    def forget_roles(self) -> None:
        """Drop the cached principal (and authorships) after a membership or author change."""
        self.__dict__.pop("principal", None)
        self.__dict__.pop("epoch", None)
        self.authored.clear()


class UsesContext:
    """The request's session, settings and actor, read through ``self.ctx``."""

    ctx: Context

    @property
    def db(self) -> Session:
        return self.ctx.db

    @property
    def settings(self) -> Settings:
        return self.ctx.settings

    @property
    def actor(self) -> m.User | None:
        return self.ctx.actor


class Service(UsesContext):
    """Base of the services: shared state through :class:`Context`, shared helpers."""

    def __init__(self, root: ReviewService) -> None:
        self.svc = root  # the facade, to reach the other services
        self.ctx = root.ctx

    @property
    def hasher(self):  # noqa: ANN201
        return self.ctx.hasher

    def check(self, action: Action) -> None:
        """Ask the authority about an account-level action (no venue): raises NotAllowed."""
        authorize(action, self.ctx.account_facts())

    def _require_login(self) -> m.User:
        """The actor, after the authority agrees they may use their own account."""
        authorize(Action.USE_ACCOUNT, self.ctx.account_facts())
        return self.actor  # type: ignore[return-value]

    def _audit(self, venue_id: int | None, action: str, target: str = "", *,
               of_submission: int | None = None, **detail: object) -> None:
        kind, _, ident = target.partition(":")
        sub_id = of_submission
        if sub_id is not None:
            pass
        elif kind == "submission":
            sub_id = int(ident)
        elif kind == "review":
            review = self.db.get(m.Review, int(ident))
            sub_id = review.submission_id if review else None
        self.db.add(m.AuditEvent(venue_id=venue_id, actor_id=self.actor.id if self.actor else None,
                                 submission_id=sub_id, action=action, target=target,
                                 detail=json.dumps(detail, default=str)))

    def _mail(self, venue_id: int | None, to: str, subject: str, body: str,
              submission_id: int | None = None, *, essential: bool = True) -> m.Email:
        """Queue an e-mail in the outbox with the change that causes it: the row (readable in
        the mail log, with its ``Message-ID``) and a ``mail.send`` job that delivers it.

        Non-essential mail (notifications) follows the recipient's preference: ``off`` keeps
        it in the log unsent, ``digest`` holds it for the daily digest."""
        from icml25.review.jobs import enqueue, message_id

        status = "queued"
        if not essential:
            pref = self.db.scalar(select(m.User.mail_preference).where(m.User.email == to))
            status = {"off": "off", "digest": "digest"}.get(pref or "immediate", "queued")
        e = m.Email(venue_id=venue_id, submission_id=submission_id, to_addr=to,
                    subject=subject, body=body, message_id=message_id(self.settings),
                    status=status, attempts=0, last_error="")
        self.db.add(e)
        if status == "queued":
            enqueue(self.db, "mail.send", {"message_id": e.message_id},
                    key="mail:" + e.message_id, venue_id=venue_id)
        return e

    def _notify(self, venue: m.Venue, sub_id: int | None, user_ids, subject: str,
                body: str) -> None:  # noqa: ANN001
        """A notification (non-essential: each person's mail preference applies) to the
        accounts ``user_ids``, never to the actor. Bodies name no one (double blind)."""
        ids = set(user_ids) - {self.actor.id if self.actor else None}
        if not ids:
            return
        link = f"{self.settings.public_url.rstrip('/')}/s/{sub_id}" if sub_id else ""
        for email in self.db.scalars(select(m.User.email).where(m.User.id.in_(sorted(ids)))):
            self._mail(venue.id, email, f"[{venue.name}] {subject}",
                       body + (f"\n\n{link}" if link else ""), sub_id, essential=False)

    def _store_upload(self, venue: m.Venue, stem: str, data: bytes, ext: str) -> tuple[str, str]:
        """Write an upload checked by the caller under the venue's folder, named by its
        content; returns (path, SHA-256)."""
        digest = hashlib.sha256(data).hexdigest()
        folder = Path(self.settings.upload_dir) / venue.slug
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{stem}-{digest[:16]}.{ext}"
        path.write_bytes(data)
        return str(path), digest

    def _commit(self) -> None:
        self.ctx.authored.clear()  # a write may change who authors what
        self.ctx.__dict__.pop("epoch", None)  # and facts read before it are older
        try:
            self.db.commit()
        except IntegrityError as exc:
            self.db.rollback()
            raise ServiceError("that conflicts with existing data (duplicate?)") from exc

    # ------------------------------------------------------------------ who is looking
    def roles(self, venue_id: int, user_id: int | None = None) -> frozenset[Role]:
        """The venue roles of a user (default: the actor, from the per-request principal)."""
        if user_id is None or (self.actor is not None and user_id == self.actor.id):
            return self.ctx.principal.roles.get(venue_id, frozenset())
        rows = self.db.scalars(select(m.Membership.role).where(
            m.Membership.venue_id == venue_id, m.Membership.user_id == user_id))
        return frozenset(Role(r) for r in rows)

    def viewer(self, venue: m.Venue) -> Viewer:
        """The actor as a viewer of ``venue``."""
        return self.ctx.principal.at(venue.id)

    # ------------------------------------------------------------------ loading
    def venue(self, venue: int | str) -> m.Venue:
        """A venue by id or slug."""
        if isinstance(venue, int) or (isinstance(venue, str) and venue.isdigit()):
            v = self.db.get(m.Venue, int(venue))
        else:
            v = self.db.scalar(select(m.Venue).where(m.Venue.slug == venue))
        if v is None:
            raise NotFound("no such venue")
        return v

    def bundle(self, sub_id: int) -> Bundle:
        """Load one submission with everything about it."""
        found = self.db.execute(_SUBMISSION_ROWS.add_columns(m.Venue).join(
            m.Venue, m.Venue.id == m.Submission.venue_id).where(
            m.Submission.id == int(sub_id))).first()
        if found is None:
            raise NotFound("no such submission")
        return self._bundles(found[3], [found[:3]])[0]

    def bundles(self, venue: m.Venue, ids: Iterable[int] | None = None) -> list[Bundle]:
        """Every submission of a venue (or those of ``ids`` in it), loaded, by number."""
        where = m.Submission.venue_id == venue.id
        if ids is not None:
            ids = list(ids)
            if not ids:
                return []
            where &= m.Submission.id.in_(ids)
        return self._bundles(venue, self.db.execute(_SUBMISSION_ROWS.where(where).order_by(
            m.Submission.number)).all())

    def authored_ids(self, venue: m.Venue) -> set[int]:
        """Ids of the venue's submissions the actor submitted or co-authors (verified)."""
        if self.actor is None:
            return set()
        memo = self.ctx.authored
        if venue.id in memo:
            return memo[venue.id]
        uid = self.actor.id
        memo[venue.id] = set(self.ctx.cached_fact(("authored", uid, venue.id), lambda: frozenset(
            self.db.scalars(_AUTHORED, {"uid": uid, "vid": venue.id}))))
        return memo[venue.id]

    def visible_candidates(self, venue: m.Venue) -> list[Bundle]:
        """Bundles of the submissions the actor might see: every one when the authority says
        so, else only those they author or are assigned to (the rest is never loaded)."""
        if sees_every_submission(self.viewer(venue), Phase(venue.phase)):
            return self.read_bundles(venue)
        if self.actor is None:
            return []
        uid = self.actor.id
        assigned = self.ctx.cached_fact(("assigned", uid), lambda: frozenset(
            self.db.scalars(_ASSIGNED, {"uid": uid})))
        overseen = self.viewer(venue).oversees
        if overseen:  # a senior area chair: the papers of the area chairs they oversee
            assigned = assigned | self.ctx.cached_fact(("overseen", uid, venue.id), lambda: (
                frozenset(self.db.scalars(_OF_ACS, {"acs": sorted(overseen)}))))
        return self.read_bundles(venue, self.authored_ids(venue) | assigned)

    # ------------------------------------------------------------------ loading, read only
    def read_bundle(self, sub_id: int) -> Bundle:
        """:meth:`bundle` for pages that only read: from the view cache when it is current.
        Never change the rows of a bundle from here (they are shared between requests)."""
        cache = self.ctx.cache
        if cache is None or not clean(self.db):
            return self.bundle(sub_id)
        found = self.db.connection().execute(_VERSION_OF, {"sid": int(sub_id)}).first()
        if found is None:
            raise NotFound("no such submission")
        return self._cached_bundle(int(sub_id), *found)

    def read_review_bundle(self, review_id: int) -> tuple[m.Review, Bundle]:
        """:meth:`_review_bundle` for reading and for checks before a write: the review and
        its bundle from the view cache when current (read only: load what you change)."""
        if self.ctx.cache is None or not clean(self.db):
            return self._review_bundle(review_id)
        found = self.db.connection().execute(_VERSION_OF_REVIEW, {"rid": int(review_id)}).first()
        if found is None:
            raise NotFound("no such review")
        b = self._cached_bundle(*found)
        r = next((r for r in b.reviews if r.id == int(review_id)), None)
        if r is None:  # deleted since
            raise NotFound("no such review")
        return r, b

    def _cached_bundle(self, sub_id: int, venue_id: int, version: int,
                       e: int | None) -> Bundle:
        cache = self.ctx.cache
        if e is None:
            venue = self.db.get(m.Venue, venue_id)
        else:
            self.ctx.__dict__.setdefault("epoch", e)  # read now: a valid label for facts
            venue = cache.fact(e, ("venue", venue_id))
            if venue is None:
                venue = self._side_venue(venue_id)
                cache.put_fact(e, ("venue", venue_id), venue)
        hit = cache.bundle(e, sub_id, version) if e is not None else None
        if hit is not None:
            return replace(hit, venue=venue)
        earlier = cache.earlier_bundle(e, sub_id) if e is not None else None
        b = self._side_load(venue, [sub_id], {sub_id: earlier} if earlier else None)[0]
        if e is not None:
            cache.put_bundle(e, sub_id, version, b)
        return b

    def read_bundles(self, venue: m.Venue, ids: Iterable[int] | None = None) -> list[Bundle]:
        """:meth:`bundles` for pages that only read: from the view cache where current."""
        cache = self.ctx.cache
        if cache is None or not clean(self.db):
            return self.bundles(venue, ids)
        if ids is None:
            rows = self.db.connection().execute(_VERSIONS_IN_VENUE, {"vid": venue.id}).all()
        else:
            ids = sorted(set(ids))
            if not ids:
                return []
            rows = self.db.connection().execute(_VERSIONS_OF, {"vid": venue.id,
                                                               "ids": ids}).all()
        out: dict[int, Bundle] = {}
        missing = []
        for sid, version, e in rows:
            hit = cache.bundle(e, sid, version) if e is not None else None
            if hit is not None:
                out[sid] = replace(hit, venue=venue)
            else:
                missing.append((sid, version, e))
        if missing:
            earlier = {sid: b for sid, _, e in missing if e is not None
                       and (b := cache.earlier_bundle(e, sid)) is not None}
            loaded = self._side_load(venue, [x[0] for x in missing], earlier)
            for b, (sid, version, e) in zip(loaded, missing, strict=True):
                out[sid] = b
                if e is not None:
                    cache.put_bundle(e, sid, version, b)
        return [out[sid] for sid, _, _ in rows]  # by number, like bundles()

    def _side_venue(self, venue_id: int) -> m.Venue:
        side = Session(bind=self.db.connection(), expire_on_commit=False, autoflush=False)
        try:
            venue = side.get(m.Venue, venue_id)
        finally:
            side.close()
        if venue is None:
            raise NotFound("no such venue")
        return venue

    def _side_load(self, venue: m.Venue, ids: list[int],
                   earlier: dict[int, Bundle] | None = None) -> list[Bundle]:
        """Bundles of ``ids`` (in that order) loaded in this transaction but outside the
        request's session, so that the cached rows are never tied to (or expired by) it;
        ``earlier``: cached bundles of this epoch to take the epoch-guarded rows from."""
        side = Session(bind=self.db.connection(), expire_on_commit=False, autoflush=False)
        try:
            rows = side.execute(_SUBMISSION_ROWS.where(m.Submission.id.in_(ids))).all()
            by_id = {r[0].id: r for r in rows}
            return load_bundles(side, venue, [by_id[i] for i in ids], earlier)
        finally:
            side.close()

    def _review_bundle(self, review_id: int) -> tuple[m.Review, Bundle]:
        r = self.db.get(m.Review, int(review_id))
        if r is None:
            raise NotFound("no such review")
        return r, self.bundle(r.submission_id)

    def _bundles(self, venue: m.Venue, rows) -> list[Bundle]:  # noqa: ANN001
        return load_bundles(self.db, venue, rows)


def load_bundles(db: Session, venue: m.Venue, rows,  # noqa: ANN001
                 earlier: dict[int, Bundle] | None = None) -> list[Bundle]:
    """Bundles of (submission, meta-review, decision) rows: six more queries (seven from
    the discussion phase on), whatever their number.

    ``earlier``: bundles of some of these submissions read in the current epoch (the view
    cache's entries of an older version). Authors, assignments and accounts change only with a
    new epoch, so theirs are taken over instead of loaded again: a review or a rating written
    since costs four queries to catch up with, not seven."""
    if not rows:
        return []
    subs = [r[0] for r in rows]
    metas = {r[0].id: r[1] for r in rows}
    decisions = {r[0].id: r[2] for r in rows}
    ids = [s.id for s in subs]
    q = _BUNDLE_QUERIES
    run = db.execute
    wanted = set(ids)
    earlier = {i: b for i, b in (earlier or {}).items() if i in wanted}
    fresh = [i for i in ids if i not in earlier]

    authors, assignments, posts = defaultdict(list), defaultdict(list), defaultdict(list)
    subreviewers = defaultdict(list)
    known_users: dict[int, m.User] = {}
    for i, b in earlier.items():
        authors[i], assignments[i] = b.authors, b.assignments
        subreviewers[i] = b.subreviewers
        known_users.update(b.users)
    if fresh:
        for (a,) in run(q["authors"], {"ids": fresh}):
            authors[a.submission_id].append(a)
        for (a,) in run(q["assignments"], {"ids": fresh}):
            assignments[a.submission_id].append(a)
        if at_least(venue.phase, Phase.REVIEWING):  # none is invited before
            for (x,) in run(q["subreviewers"], {"ids": fresh}):
                subreviewers[x.submission_id].append(x)
    sacs: dict[int, set[int]] = defaultdict(set)  # area chair -> their senior area chairs
    if at_least(venue.phase, Phase.DISCUSSION):  # no post exists before
        for (p,) in run(q["posts"], {"ids": ids}):
            posts[p.submission_id].append(p)
        for sac, ac in run(q["sacs"], {"vid": venue.id}):
            sacs[ac].add(sac)
    conflicts, bids = defaultdict(set), defaultdict(dict)
    for sid, uid in run(q["conflicts"], {"ids": ids}):
        conflicts[sid].add(uid)
    for sid, uid, value in run(q["bids"], {"ids": ids}):
        bids[sid][uid] = value
    reviews, fb, reb = defaultdict(list), {}, {}
    for r, f, x in run(q["reviews"], {"ids": ids}):
        reviews[r.submission_id].append(r)
        if f is not None:
            fb[r.id] = f
        if x is not None:
            reb[r.id] = x
    uids = ({a.user_id for v in assignments.values() for a in v}
            | {u for v in conflicts.values() for u in v}
            | {p.user_id for v in posts.values() for p in v}
            | {u for v in bids.values() for u in v}
            | {x.user_id for v in subreviewers.values() for x in v})
    users = {u: known_users[u] for u in uids if u in known_users}
    if unknown := uids - users.keys():
        users.update((u.id, u) for (u,) in run(q["users"], {"ids": list(unknown)}))
    forms = _form_versions(run, venue, {r.form_version for v in reviews.values() for r in v})
    out = []
    for s in subs:
        sub_reviews = reviews[s.id]
        out.append(Bundle(
            venue=venue, submission=s, authors=authors[s.id],
            conflict_user_ids=conflicts[s.id], assignments=assignments[s.id],
            reviews=sub_reviews,
            feedback={r.id: fb[r.id] for r in sub_reviews if r.id in fb},
            rebuttals={r.id: reb[r.id] for r in sub_reviews if r.id in reb},
            posts=posts[s.id], meta_review=metas.get(s.id), decision=decisions.get(s.id),
            users=users, bids=bids[s.id], subreviewers=subreviewers[s.id],
            senior_ac_ids=frozenset().union(*(sacs[a.user_id] for a in assignments[s.id]
                                              if a.role == Role.AC)),
            forms={r.form_version: forms[r.form_version] for r in sub_reviews
                   if r.form_version in forms}))
    return out


def _form_versions(run, venue: m.Venue, versions: set[int]) -> dict:  # noqa: ANN001
    """The added fields of the review-form versions some loaded review uses (one query, none
    while every review uses the built-in form). Versions never change once written."""
    versions.discard(DEFAULT_VERSION)
    if not versions:
        return {}
    return {v: from_json(text) for v, text in run(
        _BUNDLE_QUERIES["forms"], {"vid": venue.id, "ids": sorted(versions)})}


# submissions with their (at most one) meta-review and decision
_SUBMISSION_ROWS = (select(m.Submission, m.MetaReview, m.Decision)
                    .outerjoin(m.MetaReview, m.MetaReview.submission_id == m.Submission.id)
                    .outerjoin(m.Decision, m.Decision.submission_id == m.Submission.id))
# The bundle's statements, built once (constructing a statement costs more than running it).
_IDS = bindparam("ids", expanding=True)
_BUNDLE_QUERIES = {
    "authors": select(m.SubmissionAuthor).where(m.SubmissionAuthor.submission_id.in_(_IDS))
    .order_by(m.SubmissionAuthor.position),
    "assignments": select(m.Assignment).where(m.Assignment.submission_id.in_(_IDS))
    .order_by(m.Assignment.id),
    "posts": select(m.DiscussionPost).where(m.DiscussionPost.submission_id.in_(_IDS))
    .order_by(m.DiscussionPost.id),
    "conflicts": select(m.Conflict.submission_id, m.Conflict.user_id)
    .where(m.Conflict.submission_id.in_(_IDS)),
    "bids": select(m.Bid.submission_id, m.Bid.user_id, m.Bid.value)
    .where(m.Bid.submission_id.in_(_IDS)),
    # each review with its (at most one) author rating and rebuttal
    "reviews": select(m.Review, m.Feedback, m.Rebuttal)
    .outerjoin(m.Feedback, m.Feedback.review_id == m.Review.id)
    .outerjoin(m.Rebuttal, m.Rebuttal.review_id == m.Review.id)
    .where(m.Review.submission_id.in_(_IDS)).order_by(m.Review.id),
    "users": select(m.User).where(m.User.id.in_(_IDS)),
    "forms": select(m.ReviewFormVersion.version, m.ReviewFormVersion.fields).where(
        m.ReviewFormVersion.venue_id == bindparam("vid"), m.ReviewFormVersion.version.in_(_IDS)),
    "sacs": select(m.SeniorAreaChair.sac_id, m.SeniorAreaChair.ac_id).where(
        m.SeniorAreaChair.venue_id == bindparam("vid")),
    "subreviewers": select(m.Subreviewer).where(m.Subreviewer.submission_id.in_(_IDS))
    .order_by(m.Subreviewer.id),
}

# the view cache's read paths: versions (with the epoch) read before any row they label
_VERSION_OF = select(m.Submission.venue_id, m.Submission.version, EPOCH).where(
    m.Submission.id == bindparam("sid"))
_VERSION_OF_REVIEW = select(m.Submission.id, m.Submission.venue_id, m.Submission.version,
                            EPOCH).join(m.Review, m.Review.submission_id == m.Submission.id).where(
    m.Review.id == bindparam("rid"))
_VERSIONS_IN_VENUE = select(m.Submission.id, m.Submission.version, EPOCH).where(
    m.Submission.venue_id == bindparam("vid")).order_by(m.Submission.number)
_VERSIONS_OF = select(m.Submission.id, m.Submission.version, EPOCH).where(
    m.Submission.venue_id == bindparam("vid"), m.Submission.id.in_(_IDS)).order_by(
    m.Submission.number)
# per-account facts
_ROLES = select(m.Membership.venue_id, m.Membership.role).where(
    m.Membership.user_id == bindparam("uid"))
_AUTHORED = select(m.Submission.id).where(
    m.Submission.venue_id == bindparam("vid"), m.Submission.submitter_id == bindparam("uid")
).union(select(m.SubmissionAuthor.submission_id).join(
    m.Submission, m.Submission.id == m.SubmissionAuthor.submission_id).where(
    m.Submission.venue_id == bindparam("vid"), m.SubmissionAuthor.user_id == bindparam("uid")))
# the submissions one is assigned to, or invited to as a sub-reviewer
_ASSIGNED = select(m.Assignment.submission_id).where(
    m.Assignment.user_id == bindparam("uid")).union(
    select(m.Subreviewer.submission_id).where(m.Subreviewer.user_id == bindparam("uid")))
_OVERSEES = select(m.SeniorAreaChair.venue_id, m.SeniorAreaChair.ac_id).where(
    m.SeniorAreaChair.sac_id == bindparam("uid"))
_OF_ACS = select(m.Assignment.submission_id).where(
    m.Assignment.role == Role.AC.value, m.Assignment.user_id.in_(bindparam("acs", expanding=True)))
