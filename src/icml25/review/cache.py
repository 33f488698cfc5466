"""The view cache: facts and loaded rows kept between requests, never served stale.

What it holds, per worker process and database engine: the loaded :class:`Bundle` of each
submission, and per-account facts (venue roles, the submissions one authors or is assigned to).
It decides nothing: every page still asks :mod:`icml25.review.authority` about every field.

Why it is never stale: the database carries the versions.

* ``submissions.version`` is bumped in the same transaction as every change to a submission or
  to what hangs off it (reviews, author ratings, rebuttals, posts, bids, conflicts, meta-review,
  decision);
* ``view_epoch`` (one row) changes in the same transaction as every change to accounts,
  memberships, venues, authors, assignments, tokens, new or deleted submissions and any bulk
  statement on those tables; a new epoch drops every entry.

The bumps are SQLAlchemy session events (:func:`_collect`, :func:`_bump`) on every ORM
session, so no service has to remember them. A reader reads the versions *before* it loads
rows and files what it loaded under the versions it read: the rows are then at least as new
as their label, and a write acknowledged to anyone before a request started is seen by it (its
bump committed with it). Without the epoch row (a database emptied by ``TRUNCATE``, until its
first write) nothing is cached. ``ICML25_VIEW_CACHE=0`` turns the cache off (the bumps stay).
"""

from __future__ import annotations

import random
import threading
import weakref
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, event, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import ORMExecuteState, Session

from icml25.review import models as m

if TYPE_CHECKING:
    from icml25.review.visibility import Bundle

# changes to these bump the submission they belong to
_PER_SUBMISSION = (m.Review, m.DiscussionPost, m.MetaReview, m.Decision, m.Bid, m.Conflict)
_PER_REVIEW = (m.Feedback, m.Rebuttal)
# changes to these change facts about accounts or the shape of venues: a new epoch
_GLOBAL = (m.User, m.Membership, m.Venue, m.SubmissionAuthor, m.Assignment,
           m.SeniorAreaChair, m.Subreviewer)
_CACHED_TABLES = frozenset(c.__tablename__ for c in (
    *_PER_SUBMISSION, *_PER_REVIEW, *_GLOBAL, m.Submission, m.ApiToken))
_MARKS = "icml25_view_cache_marks"
MAX_ENTRIES = 20_000  # per engine; beyond it the cache starts afresh


class ViewCache:
    """One worker's cache for one database: ``(epoch, key) -> value`` entries."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._epoch: int | None = None
        self._bundles: dict[int, tuple[int, Bundle]] = {}  # submission id -> (version, bundle)
        self._facts: dict[tuple, Any] = {}

    def _sync(self, epoch: int) -> None:
        if epoch != self._epoch or len(self._bundles) + len(self._facts) > MAX_ENTRIES:
            with self._lock:
                if epoch != self._epoch or len(self._bundles) + len(self._facts) > MAX_ENTRIES:
                    self._bundles, self._facts, self._epoch = {}, {}, epoch

    def bundle(self, epoch: int, sub_id: int, version: int) -> Bundle | None:
        if epoch != self._epoch:
            return None
        hit = self._bundles.get(sub_id)
        return hit[1] if hit is not None and hit[0] == version else None

    def earlier_bundle(self, epoch: int, sub_id: int) -> Bundle | None:
        """The bundle filed for ``sub_id`` in this epoch, whatever its version: its authors,
        assignments and users are still current (a change to those is a new epoch), the rest
        may not be."""
        if epoch != self._epoch:
            return None
        hit = self._bundles.get(sub_id)
        return hit[1] if hit is not None else None

    def put_bundle(self, epoch: int, sub_id: int, version: int, bundle: Bundle) -> None:
        self._sync(epoch)
        if epoch == self._epoch:
            self._bundles[sub_id] = (version, bundle)

    def fact(self, epoch: int, key: tuple) -> Any:
        return self._facts.get(key) if epoch == self._epoch else None

    def put_fact(self, epoch: int, key: tuple, value: Any) -> None:
        self._sync(epoch)
        if epoch == self._epoch:
            self._facts[key] = value


_CACHES: weakref.WeakKeyDictionary[Engine, ViewCache] = weakref.WeakKeyDictionary()
_CACHES_LOCK = threading.Lock()


def cache_for(db: Session) -> ViewCache:
    """The cache of the engine ``db`` is bound to."""
    engine = db.get_bind()
    engine = getattr(engine, "engine", engine)
    cache = _CACHES.get(engine)
    if cache is None:
        with _CACHES_LOCK:
            cache = _CACHES.setdefault(engine, ViewCache())
    return cache


EPOCH = select(m.ViewEpoch.value).where(m.ViewEpoch.id == 1).scalar_subquery()
_EPOCH_QUERY = select(EPOCH)


def epoch(db: Session) -> int | None:
    """The database's epoch now (None: no epoch row; cache nothing)."""
    return db.connection().execute(_EPOCH_QUERY).scalar()


def clean(db: Session) -> bool:
    """Whether ``db``'s transaction has changed nothing the cache holds (else its reads must
    not be cached: they could show a change that is rolled back)."""
    return _MARKS not in db.info and not (db.new or db.dirty or db.deleted)


# ---------------------------------------------------------------------- the bumps
def _marks(session: Session) -> dict:
    return session.info.setdefault(_MARKS, {"global": False, "subs": set(), "reviews": set()})


@event.listens_for(Session, "after_flush")
def _collect(session: Session, _ctx) -> None:  # noqa: ANN001
    """Note what the flush changed (the lists still show the flushed objects here)."""
    marks = None
    for objs, kind in ((session.new, "new"), (session.dirty, "dirty"),
                       (session.deleted, "deleted")):
        for obj in objs:
            if not isinstance(obj, m.Base) or obj.__tablename__ not in _CACHED_TABLES:
                continue
            if kind == "dirty" and not session.is_modified(obj, include_collections=False):
                continue
            marks = marks or _marks(session)
            if isinstance(obj, _PER_SUBMISSION):
                marks["subs"].add(obj.submission_id)
            elif isinstance(obj, _PER_REVIEW):
                marks["reviews"].add(obj.review_id)
            elif isinstance(obj, m.Submission) and kind == "dirty":
                marks["subs"].add(obj.id)
            elif isinstance(obj, m.ApiToken):
                # a used token only records its last use; a revoked one must stop working
                marks["global"] |= kind == "deleted"
            else:
                marks["global"] = True


@event.listens_for(Session, "do_orm_execute")
def _bulk(state: ORMExecuteState) -> None:
    """A bulk UPDATE / DELETE / INSERT on a cached table: a new epoch."""
    if state.is_update or state.is_delete or getattr(state, "is_insert", False):
        table = getattr(state.statement, "table", None)
        if table is not None and getattr(table, "name", None) in _CACHED_TABLES:
            _marks(state.session)["global"] = True


@event.listens_for(Session, "before_commit")
def _bump(session: Session) -> None:
    """Write the versions in the committing transaction (subs first, then the epoch, always in
    that order, so two commits never wait on each other's bumps)."""
    session.flush()  # the commit's own flush runs after this hook: collect its changes now
    if _MARKS not in session.info:
        return
    marks = session.info[_MARKS]
    conn = session.connection()
    subs, reviews = sorted(marks["subs"]), sorted(marks["reviews"])
    if subs or reviews:
        which = m.Submission.id.in_(subs)
        if reviews:
            which |= m.Submission.id.in_(select(m.Review.submission_id).where(
                m.Review.id.in_(reviews)).scalar_subquery())
        conn.execute(update(m.Submission).where(which)
                     .values(version=m.Submission.version + 1))
    if marks["global"]:
        value = random.getrandbits(62)
        dialect = conn.dialect.name
        ins = (postgresql.insert if dialect == "postgresql" else sqlite.insert)(m.ViewEpoch)
        conn.execute(ins.values(id=1, value=value).on_conflict_do_update(
            index_elements=[m.ViewEpoch.id], set_={"value": value}))
    session.info.pop(_MARKS, None)


@event.listens_for(Session, "after_commit")
@event.listens_for(Session, "after_rollback")
def _forget(session: Session) -> None:
    session.info.pop(_MARKS, None)
