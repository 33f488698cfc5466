"""Conflicts of interest that are found and explained.

A committee member is conflicted with a paper when they author it; when the authors declare
their address or domain; when they share an institution domain with an author (any of their
verified addresses, or an affiliation of the last ``conflict_years`` years); when they
co-authored a paper with an author (their uploaded publication list, same window, or another
submission of the venue); when they declare it themselves; or when a chair says so. A chair
may also lift a conflict; both with a reason in the audit log.

The work is incremental: adding a member computes that member's conflicts alone (the venue's
papers indexed once by address, domain and author name), and a new or changed paper computes
its own from the few members an index lookup finds. Recomputing the whole venue is the job
``conflicts.venue``.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field

from sqlalchemy import delete, insert, or_, select

from icml25.review import models as m
from icml25.review.authority import Action, authorize, facts_for, may
from icml25.review.errors import NotAllowed, NotFound, ServiceError
from icml25.review.jobs import JobRun, enqueue
from icml25.review.people import name_key, this_year
from icml25.review.services.base import PUBLIC_DOMAINS, Service, clean_text, domain
from icml25.review.workflow import Phase

REASON_LIMIT = 200


@dataclass
class Profile:
    """What one person's conflicts are computed from."""

    user_id: int
    emails: set[str] = field(default_factory=set)
    domains: dict[str, str] = field(default_factory=dict)  # domain -> reason
    coauthors: dict[str, tuple[str, int | None]] = field(default_factory=dict)  # key -> paper
    venue_coauthors: dict[str, int] = field(default_factory=dict)  # e-mail -> submission no.


@dataclass
class PaperFacts:
    """What one paper's conflicts are computed from."""

    id: int
    number: int
    submitter_id: int
    emails: set[str] = field(default_factory=set)
    domains: set[str] = field(default_factory=set)
    name_keys: set[str] = field(default_factory=set)
    declared: set[str] = field(default_factory=set)


def reasons_for(p: Profile, paper: PaperFacts) -> list[str]:
    """Every reason ``p`` is conflicted with ``paper`` (empty: none).

    Examples
    --------
    >>> prof = Profile(1, {"a@uni.edu"}, {"uni.edu": "same institution: uni.edu"},
    ...                {"bo park": ("On Review", 2024)})
    >>> paper = PaperFacts(7, 3, 2, {"c@lab.org"}, {"lab.org"}, {"bo park"}, {"@uni.edu"})
    >>> reasons_for(prof, paper)
    ['same institution: uni.edu', 'co-authored "On Review" (2024)']
    """
    out = []
    if p.user_id == paper.submitter_id or p.emails & paper.emails:
        return ["author"]
    if p.emails & paper.declared:
        out.append("declared by authors")
    for d, why in sorted(p.domains.items()):
        if d in paper.domains or "@" + d in paper.declared:
            out.append(why)
    for k in sorted(paper.name_keys & p.coauthors.keys()):
        title, year = p.coauthors[k]
        out.append(f'co-authored "{title}"' + (f" ({year})" if year else ""))
    for e in sorted(paper.emails & p.venue_coauthors.keys()):
        out.append(f"co-author of submission #{p.venue_coauthors[e]}")
    return out


def join_reasons(reasons: list[str]) -> str:
    text = "; ".join(dict.fromkeys(reasons))
    return text if len(text) <= REASON_LIMIT else text[:REASON_LIMIT - 1] + "…"


def _declared(text: str) -> set[str]:
    return {t.strip().lower() for t in re.split(r"[,;\s]+", text or "") if t.strip()}


class PaperIndex:
    """The papers of one venue, indexed by author address, domain, name and declaration."""

    def __init__(self, papers: list[PaperFacts]) -> None:
        self.papers = {p.id: p for p in papers}
        self.by: dict[str, set[int]] = defaultdict(set)
        for p in papers:
            for e in p.emails | p.declared:
                self.by["e:" + e.lstrip("@") if not e.startswith("@") else "d:" + e[1:]].add(p.id)
            for d in p.domains:
                self.by["d:" + d].add(p.id)
            for k in p.name_keys:
                self.by["n:" + k].add(p.id)
            self.by[f"s:{p.submitter_id}"].add(p.id)

    def candidates(self, prof: Profile) -> set[int]:
        emails = prof.emails | prof.venue_coauthors.keys()
        keys = ([f"s:{prof.user_id}"] + ["e:" + e for e in emails]
                + ["d:" + d for d in prof.domains] + ["n:" + k for k in prof.coauthors])
        out: set[int] = set()
        for k in keys:
            out |= self.by.get(k, set())
        return out


class Conflicts(Service):
    """Computing, showing, declaring and overriding conflicts."""

    # ------------------------------------------------------------------ loading
    def _papers(self, venue_id: int, ids: list[int] | None = None) -> list[PaperFacts]:
        q = select(m.Submission.id, m.Submission.number, m.Submission.submitter_id,
                   m.Submission.declared_conflicts).where(m.Submission.venue_id == venue_id)
        if ids is not None:
            q = q.where(m.Submission.id.in_(ids))
        papers = {sid: PaperFacts(sid, n, sub, declared=_declared(dc))
                  for sid, n, sub, dc in self.db.execute(q)}
        aq = select(m.SubmissionAuthor.submission_id, m.SubmissionAuthor.email,
                    m.SubmissionAuthor.name).join(
            m.Submission, m.Submission.id == m.SubmissionAuthor.submission_id).where(
            m.Submission.venue_id == venue_id)
        if ids is not None:
            aq = aq.where(m.SubmissionAuthor.submission_id.in_(ids))
        for sid, email, name in self.db.execute(aq):
            p = papers.get(sid)
            if p is None:
                continue
            p.emails.add(email)
            d = domain(email)
            if d not in PUBLIC_DOMAINS:
                p.domains.add(d)
            k = name_key(name)
            if k:
                p.name_keys.add(k)
        return list(papers.values())

    def profiles(self, venue_id: int, user_ids: list[int]) -> dict[int, Profile]:
        """The conflict profiles of ``user_ids`` (a few queries per 500 people)."""
        out: dict[int, Profile] = {}
        cutoff = this_year() - self.settings.conflict_years
        for i in range(0, len(user_ids), 500):
            ids = user_ids[i:i + 500]
            chunk = {u: Profile(u) for u in ids}
            for uid, email in self.db.execute(select(m.User.id, m.User.email).where(
                    m.User.id.in_(ids))):
                chunk[uid].emails.add(email)
            for uid, email in self.db.execute(select(m.UserEmail.user_id, m.UserEmail.email)
                                              .where(m.UserEmail.user_id.in_(ids),
                                                     m.UserEmail.verified_at.is_not(None))):
                chunk[uid].emails.add(email)
            for prof in chunk.values():
                for e in prof.emails:
                    d = domain(e)
                    if d not in PUBLIC_DOMAINS:
                        prof.domains[d] = f"institution domain {d}"
            for uid, dom, end in self.db.execute(
                    select(m.Affiliation.user_id, m.Affiliation.domain,
                           m.Affiliation.end_year).where(
                        m.Affiliation.user_id.in_(ids),
                        or_(m.Affiliation.end_year.is_(None),
                            m.Affiliation.end_year >= cutoff))):
                if dom in PUBLIC_DOMAINS or dom in chunk[uid].domains:
                    continue
                chunk[uid].domains[dom] = (f"same institution: {dom}"
                                           + (f" until {end}" if end else ""))
            for uid, key, title, year in self.db.execute(
                    select(m.Coauthor.user_id, m.Coauthor.name_key, m.Publication.title,
                           m.Publication.year).join(
                        m.Publication, m.Publication.id == m.Coauthor.publication_id).where(
                        m.Coauthor.user_id.in_(ids),
                        or_(m.Publication.year.is_(None), m.Publication.year >= cutoff))
                    .order_by(m.Publication.year.desc())):
                chunk[uid].coauthors.setdefault(key, (title[:80], year))
            # co-authors on the venue's own submissions
            mine = select(m.SubmissionAuthor.submission_id, m.SubmissionAuthor.user_id).join(
                m.Submission, m.Submission.id == m.SubmissionAuthor.submission_id).where(
                m.Submission.venue_id == venue_id, m.SubmissionAuthor.user_id.in_(ids))
            own = defaultdict(set)
            for sid, uid in self.db.execute(mine):
                own[sid].add(uid)
            if own:
                for sid, number, email in self.db.execute(
                        select(m.SubmissionAuthor.submission_id, m.Submission.number,
                               m.SubmissionAuthor.email).join(
                            m.Submission, m.Submission.id == m.SubmissionAuthor.submission_id)
                        .where(m.SubmissionAuthor.submission_id.in_(list(own)))):
                    for uid in own[sid]:
                        if email not in chunk[uid].emails:
                            chunk[uid].venue_coauthors.setdefault(email, number)
            out.update(chunk)
        return out

    def _declarations(self, venue_id: int, *, user_id: int | None = None,
                      sub_id: int | None = None) -> dict[tuple[int, int], m.ConflictDeclaration]:
        q = select(m.ConflictDeclaration).join(
            m.Submission, m.Submission.id == m.ConflictDeclaration.submission_id).where(
            m.Submission.venue_id == venue_id)
        if user_id is not None:
            q = q.where(m.ConflictDeclaration.user_id == user_id)
        if sub_id is not None:
            q = q.where(m.ConflictDeclaration.submission_id == sub_id)
        return {(d.submission_id, d.user_id): d for d in self.db.scalars(q)}

    def _members(self, venue_id: int) -> set[int]:
        return set(self.db.scalars(select(m.Membership.user_id).where(
            m.Membership.venue_id == venue_id).distinct()))

    @staticmethod
    def _decide(auto: list[str], decl: m.ConflictDeclaration | None) -> str | None:
        if decl is not None and decl.by_chair:
            return (join_reasons([f"chair: {decl.reason}"]) if decl.conflicted else None)
        if decl is not None and decl.conflicted:
            auto = auto + [f"declared by the member: {decl.reason}".rstrip(": ")]
        return join_reasons(auto) if auto else None

    # ------------------------------------------------------------------ computing
    def update_member_conflicts(self, venue: m.Venue, user_id: int,
                                index: PaperIndex | None = None) -> int:
        """Compute one member's conflicts with the venue's papers (nobody else's): the papers
        an index lookup finds by their addresses, domains and co-authors' names, not every
        paper; returns how many."""
        prof = self.profiles(venue.id, [user_id])[user_id]
        decls = self._declarations(venue.id, user_id=user_id)
        if index is None:
            ids = self._candidate_papers(venue.id, prof) | {sid for sid, _ in decls}
            index = PaperIndex(self._papers(venue.id, sorted(ids)) if ids else [])
        return self._write_member(index, prof, decls, venue.id)

    def _candidate_papers(self, venue_id: int, prof: Profile) -> set[int]:
        in_venue = m.Submission.venue_id == venue_id
        by_author = select(m.SubmissionAuthor.submission_id).join(
            m.Submission, m.Submission.id == m.SubmissionAuthor.submission_id).where(in_venue)
        out = set(self.db.scalars(select(m.Submission.id).where(
            in_venue, m.Submission.submitter_id == prof.user_id)))
        emails = sorted(prof.emails | prof.venue_coauthors.keys())
        if emails:
            out |= set(self.db.scalars(by_author.where(m.SubmissionAuthor.email.in_(emails))))
        if prof.domains:
            out |= set(self.db.scalars(by_author.where(or_(*[
                m.SubmissionAuthor.email.like(f"%@{d}") for d in sorted(prof.domains)]))))
        keys = sorted(prof.coauthors)
        for i in range(0, len(keys), 500):
            out |= set(self.db.scalars(by_author.where(
                m.SubmissionAuthor.name_key.in_(keys[i:i + 500]))))
        # declared by the authors: an address of the person, or one of their domains
        needles = [*sorted(prof.emails), *("@" + d for d in sorted(prof.domains))]
        if needles:
            out |= set(self.db.scalars(select(m.Submission.id).where(in_venue, or_(*[
                m.Submission.declared_conflicts.contains(n) for n in needles]))))
        return out

    def _member_rows(self, index: PaperIndex, prof: Profile, decls: dict) -> list[dict]:
        rows = []
        for sid in index.candidates(prof) | {sid for sid, _ in decls}:
            paper = index.papers.get(sid)
            if paper is None:
                continue
            reason = self._decide(reasons_for(prof, paper), decls.get((sid, prof.user_id)))
            if reason:
                rows.append({"submission_id": sid, "user_id": prof.user_id, "reason": reason})
        return rows

    def _write_member(self, index: PaperIndex, prof: Profile, decls: dict,
                      venue_id: int) -> int:
        rows = self._member_rows(index, prof, decls)
        self.db.execute(delete(m.Conflict).where(
            m.Conflict.user_id == prof.user_id,
            m.Conflict.submission_id.in_(select(m.Submission.id).where(
                m.Submission.venue_id == venue_id))))
        if rows:
            self.db.execute(insert(m.Conflict), rows)
        return len(rows)

    def update_paper_conflicts(self, sub: m.Submission) -> int:
        """Compute one paper's conflicts with the venue's members (the candidates an index
        lookup finds, not every member); returns how many."""
        self.db.flush()
        paper = self._papers(sub.venue_id, [sub.id])[0]
        members = self._members(sub.venue_id)
        cands = self._candidate_members(sub.venue_id, paper) & members
        decls = self._declarations(sub.venue_id, sub_id=sub.id)
        cands |= {u for _, u in decls} & members
        profs = self.profiles(sub.venue_id, sorted(cands))
        self.db.execute(delete(m.Conflict).where(m.Conflict.submission_id == sub.id))
        rows = []
        for uid, prof in profs.items():
            reason = self._decide(reasons_for(prof, paper), decls.get((sub.id, uid)))
            if reason:
                rows.append({"submission_id": sub.id, "user_id": uid, "reason": reason})
        if rows:
            self.db.execute(insert(m.Conflict), rows)
        # members among the authors now co-author with the others: their own conflicts
        # change too (theirs alone)
        member_authors = set(self.db.scalars(select(m.SubmissionAuthor.user_id).where(
            m.SubmissionAuthor.submission_id == sub.id,
            m.SubmissionAuthor.user_id.is_not(None)))) & members
        if member_authors:
            venue = self.db.get(m.Venue, sub.venue_id)
            for uid in sorted(member_authors):
                self.update_member_conflicts(venue, uid)
        self.db.flush()
        return len(rows)

    def _candidate_members(self, venue_id: int, paper: PaperFacts) -> set[int]:
        emails = sorted(paper.emails | {e for e in paper.declared if not e.startswith("@")})
        domains = sorted(paper.domains | {e[1:] for e in paper.declared if e.startswith("@")})
        out = {paper.submitter_id}
        if emails:
            out |= set(self.db.scalars(select(m.User.id).where(m.User.email.in_(emails))))
            out |= set(self.db.scalars(select(m.UserEmail.user_id).where(
                m.UserEmail.email.in_(emails))))
        if domains:
            out |= set(self.db.scalars(select(m.User.id).where(
                or_(*[m.User.email.like(f"%@{d}") for d in domains]))))
            out |= set(self.db.scalars(select(m.UserEmail.user_id).where(
                or_(*[m.UserEmail.email.like(f"%@{d}") for d in domains]))))
            out |= set(self.db.scalars(select(m.Affiliation.user_id).where(
                m.Affiliation.domain.in_(domains))))
        if paper.name_keys:
            out |= set(self.db.scalars(select(m.Coauthor.user_id).where(
                m.Coauthor.name_key.in_(sorted(paper.name_keys)))))
        if paper.emails:  # co-authors of these authors on the venue's other submissions
            others = select(m.SubmissionAuthor.submission_id).join(
                m.Submission, m.Submission.id == m.SubmissionAuthor.submission_id).where(
                m.Submission.venue_id == venue_id, m.Submission.id != paper.id,
                m.SubmissionAuthor.email.in_(sorted(paper.emails)))
            out |= {u for u in self.db.scalars(select(m.SubmissionAuthor.user_id).where(
                m.SubmissionAuthor.submission_id.in_(others))) if u is not None}
        return out

    def recompute_venue_conflicts(self, venue_id: int, run: JobRun | None = None) -> dict:
        """Every conflict of a venue, member by member (the ``conflicts.venue`` job; commits
        its progress every 200 members)."""
        venue = self.venue(venue_id)
        index = PaperIndex(self._papers(venue.id))
        members = sorted(self._members(venue.id))
        decls = self._declarations(venue.id)
        by_user: dict[int, dict] = defaultdict(dict)
        for (sid, uid), d in decls.items():
            by_user[uid][(sid, uid)] = d
        total = 0
        # one delete for the venue, then every member's rows; a rerun after a crash starts
        # over from this delete (the job commits its progress chunk by chunk)
        self.db.execute(delete(m.Conflict).where(m.Conflict.submission_id.in_(
            select(m.Submission.id).where(m.Submission.venue_id == venue.id))))
        for i in range(0, len(members), 500):
            chunk = members[i:i + 500]
            rows = []
            for uid, prof in self.profiles(venue.id, chunk).items():
                rows += self._member_rows(index, prof, by_user.get(uid, {}))
            if rows:
                self.db.execute(insert(m.Conflict), rows)
            total += len(rows)
            if run is not None:
                run.progress(i + len(chunk), len(members))
        self.db.flush()
        return {"members": len(members), "papers": len(index.papers), "conflicts": total}

    def start_conflict_recompute(self, venue: m.Venue) -> int:
        """Recompute every conflict of the venue as a job (chairs); returns its id."""
        authorize(Action.MANAGE_MEMBERS, facts_for(self.viewer(venue), None, Phase(venue.phase)))
        job = enqueue(self.db, "conflicts.venue", {"venue_id": venue.id}, venue_id=venue.id,
                      created_by=self.actor.id)
        self._audit(venue.id, "conflicts.recompute", f"venue:{venue.id}")
        self._commit()
        return job.id

    # ------------------------------------------------------------------ reading, overriding
    def venue_conflicts(self, venue: m.Venue, submission_id: int | None = None) -> list[dict]:
        """Conflicts with their reasons (chairs; a paper a chair is conflicted with is left
        out, as everywhere)."""
        viewer = self.viewer(venue)
        authorize(Action.VIEW_ADMIN, facts_for(viewer, None, Phase(venue.phase)))
        ids = None
        if submission_id is not None:
            b = self.read_bundle(submission_id)
            if b.venue.id != venue.id:
                raise NotFound("no such submission in this venue")
            authorize(Action.VIEW_CHAIR_NOTES, facts_for(viewer, b))
            ids = [submission_id]
        else:
            ids = [b.submission.id for b in self.read_bundles(venue)
                   if may(Action.VIEW_CHAIR_NOTES, facts_for(viewer, b))]
        out = []
        for i in range(0, len(ids), 5000):
            for c, num, email, name in self.db.execute(
                    select(m.Conflict, m.Submission.number, m.User.email, m.User.name).join(
                        m.Submission, m.Submission.id == m.Conflict.submission_id).join(
                        m.User, m.User.id == m.Conflict.user_id).where(
                        m.Conflict.submission_id.in_(ids[i:i + 5000]))
                    .order_by(m.Submission.number, m.User.email)):
                out.append({"submission_id": c.submission_id, "number": num,
                            "user_id": c.user_id, "email": email, "name": name,
                            "reason": c.reason})
        return out

    def override_conflict(self, sub_id: int, user_id: int, conflicted: bool,
                          reason: str) -> None:
        """Set (``conflicted``) or lift a conflict between a paper and a member, with a
        reason kept in the audit log (non-conflicted chairs)."""
        b = self.bundle(sub_id)
        f = facts_for(self.viewer(b.venue), b)
        authorize(Action.OVERRIDE_CONFLICT, f)
        authorize(Action.VIEW_CHAIR_NOTES, f)
        reason = clean_text(reason, "reason", "name")
        if user_id not in self._members(b.venue.id):
            raise ServiceError("that account is not a member of this venue")
        if not conflicted and user_id in b.author_user_ids() | {b.submission.submitter_id}:
            raise ServiceError("an author is always conflicted with their paper")
        self._declare(sub_id, user_id, conflicted, True, reason)
        self._audit(b.venue.id, "conflict.override", f"submission:{sub_id}", user=user_id,
                    conflicted=bool(conflicted), reason=reason)
        self.update_paper_conflicts(b.submission)
        self._commit()

    def declare_conflict(self, sub_id: int, reason: str = "") -> None:
        """Declare one's own conflict with a paper of a venue one serves (committee)."""
        user = self._require_login()
        b = self.bundle(sub_id)
        authorize(Action.DECLARE_CONFLICT, facts_for(self.viewer(b.venue), b))
        existing = self.db.scalar(select(m.ConflictDeclaration).where(
            m.ConflictDeclaration.submission_id == sub_id,
            m.ConflictDeclaration.user_id == user.id))
        if existing is not None and existing.by_chair:
            raise NotAllowed("a chair has decided this pair; ask them")
        self._declare(sub_id, user.id, True, False,
                      clean_text(reason, "reason", "name", required=False))
        self._audit(b.venue.id, "conflict.declare", f"submission:{sub_id}", user=user.id)
        self.update_paper_conflicts(b.submission)
        self._commit()

    def _declare(self, sub_id: int, user_id: int, conflicted: bool, by_chair: bool,
                 reason: str) -> None:
        d = self.db.scalar(select(m.ConflictDeclaration).where(
            m.ConflictDeclaration.submission_id == sub_id,
            m.ConflictDeclaration.user_id == user_id))
        if d is None:
            d = m.ConflictDeclaration(submission_id=sub_id, user_id=user_id)
            self.db.add(d)
        d.conflicted, d.by_chair, d.reason = bool(conflicted), by_chair, reason
        d.declared_by = self.actor.id if self.actor else None
        self.db.flush()

    def members_without_publications(self, venue: m.Venue) -> list[dict]:
        """Reviewers and area chairs who uploaded no publication list (chairs): their
        affinities are all 0 until they do."""
        authorize(Action.VIEW_ADMIN, facts_for(self.viewer(venue), None, Phase(venue.phase)))
        have = select(m.Publication.user_id).distinct()
        rows = self.db.execute(select(m.User.id, m.User.email, m.User.name, m.Membership.role)
                               .join(m.Membership, m.Membership.user_id == m.User.id).where(
            m.Membership.venue_id == venue.id, m.Membership.role.in_(["reviewer", "ac"]),
            m.User.id.not_in(have)).order_by(m.User.email))
        return [{"user_id": u, "email": e, "name": n, "role": r} for u, e, n, r in rows]
