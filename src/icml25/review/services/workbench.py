"""The chairs' assignment workbench: the current assignment, pins and forbids, and a preview
of the matcher's proposal per paper and per reviewer, with a constraint report checked here
from the proposed pairs (not taken from the solver) and a comparison with the current one.

Nothing here writes: pins and forbids are set by ``Assignments.set_pair_constraint`` and a
proposal is written by ``Assignments.commit_assignment``.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from sqlalchemy import select

from icml25.review import models as m
from icml25.review.authority import Action
from icml25.review.services.assignments import institution_key
from icml25.review.services.base import Service
from icml25.review.visibility import Bundle, can
from icml25.review.workflow import Role


class Workbench(Service):
    """Read-only views for the assignment workbench (chairs)."""

    def _assignable(self, venue: m.Venue) -> list[Bundle]:
        """Active submissions the actor may assign reviewers to (asks the authority)."""
        self.svc.assignments.check_assignment(venue)
        viewer = self.viewer(venue)
        return [b for b in self.bundles(venue)
                if b.submission.status == "active" and can(viewer, Action.ASSIGN, b)]

    def _reviewers(self, venue: m.Venue) -> list[m.User]:
        return list(self.db.scalars(select(m.User).join(
            m.Membership, m.Membership.user_id == m.User.id).where(
            m.Membership.venue_id == venue.id, m.Membership.role == Role.REVIEWER.value)
            .order_by(m.User.name)))

    def _constraints(self, bundles: list[Bundle]) -> dict[tuple[int, int], str]:
        ids = [b.submission.id for b in bundles]
        rows = self.db.scalars(select(m.PairConstraint).where(
            m.PairConstraint.submission_id.in_(ids))) if ids else []
        return {(pc.submission_id, pc.user_id): pc.kind for pc in rows}

    def assignment_workbench(self, venue: m.Venue) -> dict:
        """The current assignment per paper, reviewer loads, pins and forbids, and the
        choices of the pin/forbid form (chairs; papers they are conflicted with are left out)."""
        bundles = self._assignable(venue)
        reviewers = self._reviewers(venue)
        names = {u.id: u.name for u in reviewers}
        current = _current_pairs(bundles)
        loads = Counter(uid for _, uid in current)
        number = {b.submission.id: b.submission.number for b in bundles}
        constraints = [{"submission_id": sid, "number": number[sid], "user_id": uid,
                        "name": names.get(uid, str(uid)), "kind": kind}
                       for (sid, uid), kind in sorted(self._constraints(bundles).items(),
                                                      key=lambda kv: (number[kv[0][0]],
                                                                      kv[0][1]))]
        return {
            "reviews_per_paper": venue.reviews_per_paper, "max_load": venue.max_load,
            "papers": [{"submission_id": b.submission.id, "number": b.submission.number,
                        "title": b.submission.title,
                        "reviewers": [names.get(uid, str(uid)) for sid, uid in current
                                      if sid == b.submission.id]} for b in bundles],
            "reviewers": [{"user_id": u.id, "name": u.name, "load": loads.get(u.id, 0)}
                          for u in reviewers],
            "constraints": constraints,
            "n_current_pairs": len(current),
        }

    def preview_assignment(self, venue: m.Venue, **options: object) -> dict:
        """The matcher's proposal (``Assignments.propose_assignment`` options) per paper and
        per reviewer, its constraint report and its comparison with the current assignment."""
        proposal = self.svc.assignments.propose_assignment(venue, **options)
        bundles = {b.submission.id: b for b in self._assignable(venue)}
        reviewers = {u.id: u for u in self._reviewers(venue)}
        constraints = self._constraints(list(bundles.values()))
        current = set(_current_pairs(bundles.values()))
        kept = Counter(uid for _, uid in current)
        caps = dict(zip(reviewers, self.svc.assignments.load_caps(
            venue, list(reviewers), [kept.get(u, 0) for u in reviewers]).tolist(), strict=True))
        pairs = proposal["pairs"]
        for p in pairs:
            key = (p["submission_id"], p["user_id"])
            p["status"] = ("current" if key in current else
                           "pinned" if constraints.get(key) == "pin" else "new")
        return proposal | {
            "by_paper": _by_paper(pairs, bundles),
            "loads": _loads(pairs, current, reviewers, caps),
            "report": constraint_report(pairs, bundles, reviewers, constraints,
                                        venue.reviews_per_paper, venue.max_load, caps),
            "compare": _compare(pairs, current),
        }


def _current_pairs(bundles) -> list[tuple[int, int]]:  # noqa: ANN001
    return [(b.submission.id, a.user_id) for b in bundles for a in b.assignments
            if a.role == Role.REVIEWER]


def _by_paper(pairs: list[dict], bundles: dict[int, Bundle]) -> list[dict]:
    grouped: dict[int, list[dict]] = defaultdict(list)
    for p in pairs:
        grouped[p["submission_id"]].append(p)
    out = []
    for sid, b in sorted(bundles.items(), key=lambda kv: kv[1].submission.number):
        rows = sorted(grouped.get(sid, []), key=lambda p: -p["affinity"])
        out.append({"submission_id": sid, "number": b.submission.number,
                    "title": b.submission.title, "reviewers": rows,
                    "total_affinity": round(sum(p["affinity"] for p in rows), 4)})
    return out


def _loads(pairs: list[dict], current: set[tuple[int, int]], reviewers: dict[int, m.User],
           caps: dict[int, int]) -> list[dict]:
    proposed = Counter(p["user_id"] for p in pairs)
    now = Counter(uid for _, uid in current)
    return [{"user_id": uid, "name": u.name, "current": now.get(uid, 0),
             "proposed": proposed.get(uid, 0), "max_load": caps[uid]}
            for uid, u in sorted(reviewers.items(), key=lambda kv: kv[1].name)]


def constraint_report(pairs: list[dict], bundles: dict[int, Bundle],
                      reviewers: dict[int, m.User], constraints: dict[tuple[int, int], str],
                      k: int, max_load: int, caps: dict[int, int] | None = None) -> list[dict]:
    """Each rule of the venue checked on the proposed pairs: {rule, ok, detail}; ``caps``
    are the reviewers' own loads (their quotas) where lower than ``max_load``."""
    caps = caps or {}
    chosen = {(p["submission_id"], p["user_id"]) for p in pairs}
    per_paper = Counter(sid for sid, _ in chosen)
    loads = Counter(uid for _, uid in chosen)
    short = sorted(bundles[sid].submission.number for sid in bundles if per_paper[sid] != k)
    over = sorted(reviewers[uid].name for uid, n in loads.items()
                  if n > caps.get(uid, max_load) and uid in reviewers)
    conflicted = sorted(bundles[sid].submission.number for sid, uid in chosen
                        if sid in bundles and (uid in bundles[sid].conflict_user_ids
                                               or uid in bundles[sid].author_user_ids()))
    forbidden = sorted(pair for pair, kind in constraints.items()
                       if kind == "forbid" and pair in chosen)
    missing_pins = sorted(pair for pair, kind in constraints.items()
                          if kind == "pin" and pair not in chosen)
    shared = sorted(bundles[sid].submission.number for sid, n in _institution_clashes(
        chosen, reviewers).items() if n and sid in bundles)
    return [
        _rule(f"every paper has {k} reviewers", short, "short or over: #"),
        _rule(f"no reviewer above the maximum load ({max_load}) or their quota", over,
              "over: "),
        _rule("no conflicted reviewer", conflicted, "conflicted pairs on #"),
        _rule("no forbidden pair", forbidden, "forbidden pairs proposed: "),
        _rule("every pinned pair kept", missing_pins, "pins left out: "),
        _rule("at most one reviewer per institution per paper", shared, "shared on #"),
    ]


def _rule(rule: str, broken: list, prefix: str) -> dict:
    detail = prefix + ", ".join(str(x) for x in broken) if broken else "holds"
    return {"rule": rule, "ok": not broken, "detail": detail}


def _institution_clashes(chosen: set[tuple[int, int]],
                         reviewers: dict[int, m.User]) -> dict[int, int]:
    """Per submission: how many proposed reviewers share an institution with another."""
    seen: dict[int, Counter] = defaultdict(Counter)
    for sid, uid in chosen:
        key = institution_key(reviewers[uid]) if uid in reviewers else None
        if key:
            seen[sid][key] += 1
    return {sid: sum(n - 1 for n in c.values() if n > 1) for sid, c in seen.items()}


def _compare(pairs: list[dict], current: set[tuple[int, int]]) -> dict:
    kept = [p for p in pairs if (p["submission_id"], p["user_id"]) in current]
    new = [p for p in pairs if (p["submission_id"], p["user_id"]) not in current]

    def mean(rows: list[dict]) -> float | None:
        return round(sum(p["affinity"] for p in rows) / len(rows), 4) if rows else None

    return {"n_current": len(current), "n_kept": len(kept), "n_new": len(new),
            "n_dropped": len(current - {(p["submission_id"], p["user_id"]) for p in pairs}),
            "mean_affinity_current": mean(kept), "mean_affinity_new": mean(new),
            "papers_changed": len({p["submission_id"] for p in new})}

