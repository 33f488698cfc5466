"""Authorisation matrix through the service layer, on a real database: each role (including a
conflicted chair, a conflicted reviewer and a chair of another venue) x each action x each phase.
Plus conflicts, auto-assignment, the feedback aggregate and role-dependent exports."""

from __future__ import annotations

from sqlalchemy import select

from icml25.review import models as m
from icml25.review.demo import DEMO_PASSWORD, Cast, populate_venue
from icml25.review.service import ReviewService, ServiceError
from icml25.review.workflow import PHASE_ORDER, NotAllowed, Phase, Role

CAST = Cast()
P = Phase


def expected(persona: str, action: str, phase: Phase) -> bool:
    """The issue's rules, stated independently of the implementation."""
    rules = {
        "view": persona in ("chair", "ac", "rev_assigned", "author")
        or (persona == "rev_unassigned" and phase is P.BIDDING),
        "pdf": persona in ("chair", "ac", "rev_assigned", "author"),
        "bid": persona == "rev_unassigned" and phase is P.BIDDING,
        "assign": persona == "chair" and phase in (P.BIDDING, P.ASSIGNMENT, P.REVIEWING),
        "review": persona == "rev_assigned" and phase is P.REVIEWING,
        "feedback": persona == "author" and phase is P.FEEDBACK,
        "rebuttal": persona == "author" and phase is P.REBUTTAL,
        "discuss": persona in ("chair", "ac", "rev_assigned") and phase is P.DISCUSSION,
        "meta": persona == "ac" and phase is P.META_REVIEW,
        "decide": persona == "chair" and phase is P.DECISION,
        "ratings": persona in ("chair", "chair_conflicted"),
        "admin": persona in ("chair", "chair_conflicted"),
        "add_member": persona in ("chair", "chair_conflicted"),
        "advance": False,  # only attempted by non-chairs (a chair would move the venue)
    }
    return rules[action]


def _user(db, email):
    return db.scalar(select(m.User).where(m.User.email == email))


def test_authorisation_matrix_on_the_database(db, settings):
    base = ReviewService(db, settings)
    # a chair of another venue, a chair and a reviewer sharing an author's institution
    other = base.create_user("other@elsewhere.example", "Other Chair", DEMO_PASSWORD,
                             is_admin=True)
    base.as_user(other).create_venue("other", "Another venue")
    base.create_user("chair2@uni-b.example", "Conflicted Chair", DEMO_PASSWORD)
    base.create_user("reviewer5@uni-a.example", "Conflicted Reviewer", DEMO_PASSWORD)
    results: dict[str, int] = {"checked": 0}

    def on_phase(phase: Phase) -> None:
        venue = db.scalar(select(m.Venue).where(m.Venue.slug == "authz"))
        db.refresh(venue)
        chair = base.as_user(_user(db, CAST.chair))
        if phase is P.SUBMISSION:
            chair.add_member(venue, "chair2@uni-b.example", Role.CHAIR)
            chair.add_member(venue, "reviewer5@uni-a.example", Role.REVIEWER)
        sub = db.scalar(select(m.Submission).where(m.Submission.venue_id == venue.id,
                                                   m.Submission.number == 2))
        b = base.bundle(sub.id)
        assigned = [a.user_id for a in b.assignments if a.role == "reviewer"]
        reviewer_ids = [_user(db, e).id for e in CAST.reviewers]
        spare = next(u for u in reviewer_ids if u not in assigned)
        personas = {
            "chair": _user(db, CAST.chair).id,
            "chair_conflicted": _user(db, "chair2@uni-b.example").id,
            "rev_unassigned": spare,
            "rev_conflicted": _user(db, "reviewer5@uni-a.example").id,
            "author": _user(db, CAST.authors[0]).id,
            "outsider": other.id,
        }
        if assigned:
            personas["rev_assigned"] = assigned[0]
            personas["ac"] = _user(db, CAST.ac).id
        reviews = sorted(b.reviews, key=lambda r: r.id)
        n = PHASE_ORDER.index(phase)

        def attempts(svc: ReviewService, persona: str) -> dict:
            acts = {
                "view": lambda: svc.submission_page(sub.id),
                "pdf": lambda: svc.pdf(sub.id),
                "bid": lambda: svc.bid(sub.id, 1),
                "assign": lambda: (svc.assign(sub.id, spare), chair.unassign(sub.id, spare)),
                "review": lambda: svc.save_review(sub.id, summary="s", strengths="s",
                                                  questions="q", weaknesses="w", score=4,
                                                  confidence=2),
                "discuss": lambda: svc.post_discussion(sub.id, "a post"),
                "meta": lambda: svc.write_metareview(sub.id, "meta", "accept"),
                "decide": lambda: svc.decide(sub.id, "reject"),
                "ratings": lambda: svc.ratings(venue),
                "admin": lambda: svc.admin_page(venue),
                "add_member": lambda: svc.add_member(venue, f"new{n}-{persona}@new.example",
                                                    "reviewer"),
            }
            if len(reviews) >= 2:
                acts["feedback"] = lambda: svc.give_feedback(reviews[1].id, comprehension=2,
                                                             constructiveness=4)
                acts["rebuttal"] = lambda: svc.write_rebuttal(reviews[0].id, "a reply")
            return acts

        for persona, uid in personas.items():
            base.create_user(f"new{n}-{persona}@new.example", "New Member", DEMO_PASSWORD)
            svc = base.as_user(db.get(m.User, uid))
            acts = attempts(svc, persona)
            if persona not in ("chair", "chair_conflicted"):
                acts["advance"] = lambda svc=svc: svc.advance_phase(venue)
            for action, fn in acts.items():
                try:
                    fn()
                    got = True
                except NotAllowed:
                    got = False
                    db.rollback()
                assert got == expected(persona, action, phase), (persona, action, phase.value)
                results["checked"] += 1
        db.refresh(venue)
        assert venue.phase == phase.value

    populate_venue(db, settings, "authz", P.NOTIFICATION, on_phase=on_phase)
    assert results["checked"] > 500


def test_conflicts_from_domains_and_declarations_are_respected(db, settings):
    base = ReviewService(db, settings)
    base.create_user("colleague@uni-a.example", "Colleague", DEMO_PASSWORD)
    base.create_user("coauthor@gmail.com", "Past Coauthor", DEMO_PASSWORD)
    base.create_user("stranger@gmail.com", "Stranger", DEMO_PASSWORD)
    venue = populate_venue(db, settings, "conf", P.SUBMISSION, n_papers=0)
    chair = base.as_user(_user(db, CAST.chair))
    for e in ("colleague@uni-a.example", "coauthor@gmail.com", "stranger@gmail.com"):
        chair.add_member(venue, e, Role.REVIEWER)
    author = base.as_user(_user(db, CAST.authors[0]))
    sub = author.submit(venue, title="T", abstract="A", declared_conflicts="coauthor@gmail.com",
                        authors=[{"name": "A1", "email": CAST.authors[0]}])
    reasons = {db.get(m.User, c.user_id).email: c.reason for c in db.scalars(
        select(m.Conflict).where(m.Conflict.submission_id == sub.id))}
    assert reasons["colleague@uni-a.example"] == "institution domain uni-a.example"
    assert reasons["coauthor@gmail.com"] == "declared by authors"
    assert "stranger@gmail.com" not in reasons  # a shared public mail domain is no conflict
    chair.advance_phase(venue)  # bidding
    colleague = base.as_user(_user(db, "colleague@uni-a.example"))
    try:
        colleague.bid(sub.id, 2)
        raise AssertionError("a conflicted reviewer could bid")
    except NotAllowed:
        db.rollback()
    try:
        chair.assign(sub.id, _user(db, "colleague@uni-a.example").id)
        raise AssertionError("a conflicted reviewer was assigned")
    except ServiceError as exc:
        assert "conflicted" in str(exc)
    chair.advance_phase(venue)  # assignment
    n_new = chair.auto_assign(venue)
    assigned = {a.user_id for a in base.bundle(sub.id).assignments}
    assert n_new == venue.reviews_per_paper == len(assigned)
    conflicted = {_user(db, e).id for e in reasons}
    assert not assigned & conflicted


def test_feedback_aggregate_only_after_notification_and_three_ratings(db, settings):
    cast = Cast(reviewers=CAST.reviewers[:3])
    seen = {}

    def on_phase(phase: Phase) -> None:
        if phase in (P.DECISION, P.NOTIFICATION):
            venue = db.scalar(select(m.Venue).where(m.Venue.slug == "agg"))
            db.refresh(venue)
            for e in cast.reviewers:
                seen[(phase, e)] = ReviewService(db, settings, _user(db, e)).my_feedback(venue)

    populate_venue(db, settings, "agg", P.NOTIFICATION, cast=cast, n_papers=3,
                   on_phase=on_phase)
    # every reviewer reviews every paper; paper 1 is fully rated, papers 2-3 have their first
    # review rated, so the reviewer holding those has 3 ratings and the others 1
    counts = {}
    for e in cast.reviewers:
        uid = _user(db, e).id
        counts[e] = len(db.scalars(select(m.Feedback).join(m.Review).where(
            m.Review.reviewer_id == uid)).all())
    assert sorted(counts.values()) == [1, 1, 3]
    for e, n in counts.items():
        assert not seen[(P.DECISION, e)]["available"]
        after = seen[(P.NOTIFICATION, e)]
        assert after["available"] == (n >= 3)
        if n >= 3:
            fb = db.scalars(select(m.Feedback).join(m.Review).where(
                m.Review.reviewer_id == _user(db, e).id)).all()
            mean = sum(f.comprehension for f in fb) / len(fb)
            assert after["mean_comprehension"] == round(mean, 2) and after["n_ratings"] == 3
            assert set(after) == {"available", "n_ratings", "mean_comprehension",
                                  "mean_constructiveness", "n_llm_flags"}


def test_exports_follow_the_viewer(db, settings):
    venue = populate_venue(db, settings, "exp", P.FEEDBACK)
    as_chair = ReviewService(db, settings, _user(db, CAST.chair)).export(venue)
    as_author = ReviewService(db, settings, _user(db, CAST.authors[0])).export(venue)
    as_rev = ReviewService(db, settings, _user(db, CAST.reviewers[0])).export(venue)
    assert as_chair["ratings"] and "ratings" not in as_author and "ratings" not in as_rev
    assert all("authors" in s for s in as_chair["submissions"])
    assert all("authors" not in s for s in as_rev["submissions"])
    assert all("reviewer_name" not in r for s in as_author["submissions"]
               for r in s["reviews"])
    assert any("reviewer_name" in r for s in as_chair["submissions"] for r in s["reviews"])


def test_withdrawn_submissions_leave_the_process(db, settings):
    venue = populate_venue(db, settings, "wd", P.SUBMISSION)
    base = ReviewService(db, settings)
    author = base.as_user(_user(db, CAST.authors[0]))
    sub = db.scalar(select(m.Submission).where(m.Submission.venue_id == venue.id,
                                               m.Submission.number == 1))
    author.withdraw(sub.id)
    assert db.get(m.Submission, sub.id).status == "withdrawn"
    chair = base.as_user(_user(db, CAST.chair))
    chair.advance_phase(venue)
    chair.advance_phase(venue)
    chair.auto_assign(venue)
    assert not base.bundle(sub.id).assignments  # nobody reviews a withdrawn paper
    audit = [a.action for a in db.scalars(select(m.AuditEvent).where(
        m.AuditEvent.venue_id == venue.id))]
    assert "submission.withdraw" in audit and audit.count("phase.advance") == 2


def test_a_conflicted_chair_learns_nothing_about_their_paper(db, settings):
    """A program chair who is also an author sees no reviews, reviewer names, ratings, outbox
    mail or audit events of their own paper, while a non-conflicted chair does."""
    base = ReviewService(db, settings)
    base.create_user("chair2@uni-b.example", "Conflicted Chair", DEMO_PASSWORD)

    def on_phase(phase: Phase) -> None:
        if phase is P.SUBMISSION:
            venue = db.scalar(select(m.Venue).where(m.Venue.slug == "cc"))
            base.as_user(_user(db, CAST.chair)).add_member(venue, "chair2@uni-b.example",
                                                           Role.CHAIR)

    venue = populate_venue(db, settings, "cc", P.FEEDBACK, on_phase=on_phase)
    conflicted = base.as_user(_user(db, "chair2@uni-b.example"))
    clean = base.as_user(_user(db, CAST.chair))
    admin_c, admin_ok = conflicted.admin_page(venue), clean.admin_page(venue)
    assert admin_c["ratings"] == [] and admin_ok["ratings"]
    assert not any("Please review" in e["subject"] for e in admin_c["outbox"])
    assert any("Please review" in e["subject"] for e in admin_ok["outbox"])
    assert not any(a["target"].startswith(("submission:", "review:")) for a in admin_c["audit"])
    assert conflicted.venue_submissions(venue) == []
    exported = conflicted.export(venue)
    assert exported["submissions"] == [] and exported["ratings"] == []
