"""A populated demo: one venue in every phase, driven through the service layer only.

:func:`populate_venue` is also what the tests use to walk a venue through the process (with their
own marker texts), so the demo and the tests exercise the same code path.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from icml25.review import models as m
from icml25.review.db import Settings
from icml25.review.security import minimal_pdf
from icml25.review.service import ReviewService
from icml25.review.workflow import PHASE_LABELS, PHASE_ORDER, Phase, Role

DEMO_PASSWORD = "demo-password-2025"


@dataclass(frozen=True)
class Cast:
    """E-mails of the people taking part in one demo venue."""

    chair: str = "chair@venue.example"
    ac: str = "ac@ac-institute.example"
    reviewers: tuple[str, ...] = ("reviewer1@r1-uni.example", "reviewer2@r2-uni.example",
                                  "reviewer3@r3-uni.example", "reviewer4@r4-lab.example")
    authors: tuple[str, ...] = ("author1@uni-a.example", "author2@uni-b.example")


# the closed demo venue: enough reviewers and rated reviews for quality scores and badges
REWARDS_CAST = Cast(reviewers=Cast().reviewers + tuple(
    f"reviewer{i}@r{i}-inst.example" for i in range(5, 9)))
REWARDS_PAPERS = 8


def default_text(kind: str, **ctx: object) -> str:
    """Plausible demo text for one field."""
    samples = {
        "title": "Learning to review reviews, paper {paper}",
        "abstract": "We study paper {paper}: a method, an analysis and experiments.",
        "summary": "The paper proposes a method and evaluates it carefully.",
        "strengths": "Clear writing; a sound analysis; useful experiments.",
        "questions": "How does the method scale with the number of reviewers?",
        "weaknesses": "The evaluation is limited to synthetic data.",
        "rebuttal": "Thank you; we added an experiment on larger instances.",
        "post": "I think the rebuttal addresses my concerns.",
        "meta": "The reviewers agree the paper is sound after the rebuttal.",
        "llm_comment": "",
        "author_name": "Author {i}",
        "affiliation": "University {i}",
        "reviewer_name": "Reviewer Person {i}",
        "answer": "A note on paper {paper} from Reviewer {rev}.",
    }
    return samples[kind].format(**ctx)


# the demo venues' review form: a stage-2 score authors see after rating, and a comment
# only the area chair and chairs read
DEMO_FORM = (
    {"key": "reproducibility", "label": "Reproducibility", "kind": "score", "stage": 2,
     "required": True, "options": ["not reproducible", "partly", "fully"]},
    {"key": "to_area_chair", "label": "Confidential comment to the area chair", "kind": "text",
     "stage": 2, "audience": "chairs"},
)


def demo_answers(fields: Sequence[Mapping], text: Callable[..., str] = default_text,
                 **ctx: object) -> dict[str, object]:
    """Plausible answers to a form's added fields by one reviewer (``ctx``: ``paper``, ``rev``
    their pseudonym's letter, ``i`` their place in the cast); text answers come from
    ``text("answer", key=..., **ctx)``."""
    out: dict[str, object] = {}
    for f in fields:
        pick = int(ctx["paper"]) + ord(str(ctx["rev"]))
        if f["kind"] == "score":
            out[f["key"]] = f.get("low", 1) + pick % len(f["options"])
        elif f["kind"] == "choice":
            out[f["key"]] = f["options"][pick % len(f["options"])]
        elif f["kind"] == "checkbox":
            out[f["key"]] = True
        else:
            out[f["key"]] = text("answer", key=f["key"], **ctx)
    return out


def demo_timeline(today: date) -> dict[str, str]:
    """Deadlines ahead of ``today``, so a served demo stays in its phases (the server advances
    a venue by itself once a deadline passes)."""
    return {"reviewing": str(today + timedelta(days=14)),
            "feedback": str(today + timedelta(days=28))}


def ensure_user(svc: ReviewService, email: str, name: str, password: str = DEMO_PASSWORD,
                admin: bool = False) -> m.User:
    """Return the user with ``email``, creating it if needed."""
    u = svc.db.scalar(select(m.User).where(m.User.email == email))
    return u or svc.as_user(None).create_user(email, name, password, is_admin=admin)


def populate_venue(db: Session, settings: Settings, slug: str, upto: Phase, *,
                   cast: Cast = Cast(), text: Callable[..., str] = default_text,
                   n_papers: int = 2, on_phase: Callable[[Phase], None] | None = None,
                   password: str = DEMO_PASSWORD, rate_all: bool = False,
                   close: bool = False, form: Sequence[Mapping] = ()) -> m.Venue:
    """Create venue ``slug`` and drive it through the process up to (and including the work
    of) phase ``upto``. ``on_phase(phase)`` is called after each phase's work is done.

    By default the authors rate every review of paper 1 and one review of each other paper.
    With ``rate_all`` they rate every review (the later reviewers of the cast get lower
    ratings than the first) and the area chair rates every review too; with ``close`` (and
    ``upto`` = notification) the chair closes the venue, awarding badges with signed
    credentials. ``form``: fields the chair adds to the review form first (the reviewers
    answer them with :func:`demo_answers`)."""
    base = ReviewService(db, settings)
    users = {}
    users["chair"] = ensure_user(base, cast.chair, "Program Chair", password, admin=True)
    users["ac"] = ensure_user(base, cast.ac, "Area Chair Person", password)
    revs = [ensure_user(base, e, text("reviewer_name", i=i + 1), password)
            for i, e in enumerate(cast.reviewers)]
    auths = [ensure_user(base, e, text("author_name", i=i + 1), password)
             for i, e in enumerate(cast.authors)]
    chair = base.as_user(users["chair"])
    venue = chair.create_venue(slug, f"Demo venue ({PHASE_LABELS[upto]})",
                               reviews_per_paper=min(3, len(revs)),
                               timeline=demo_timeline(date.today()))
    chair.add_member(venue, cast.ac, Role.AC)
    if form:
        chair.save_review_form(venue, list(form))
    for e in cast.reviewers:
        chair.add_member(venue, e, Role.REVIEWER)

    subs = []
    for p in range(n_papers):
        author = base.as_user(auths[p % len(auths)])
        authors = [{"name": auths[(p + j) % len(auths)].name,
                    "email": auths[(p + j) % len(auths)].email,
                    "affiliation": text("affiliation", i=(p + j) % len(auths) + 1)}
                   for j in range(len(auths))]
        subs.append(author.submit(venue, title=text("title", paper=p + 1),
                                  abstract=text("abstract", paper=p + 1),
                                  keywords="peer review, feedback", authors=authors,
                                  pdf=minimal_pdf(f"paper {p + 1}")))

    # as in text("reviewer_name", i=); 0 for a reviewer from outside the cast
    cast_place = {u.id: i + 1 for i, u in enumerate(revs)}

    def step(phase: Phase) -> None:
        if phase is Phase.BIDDING:
            for i, r in enumerate(revs):
                for j, s in enumerate(subs):
                    base.as_user(r).bid(s.id, 2 if (i + j) % 2 == 0 else 0)
        elif phase is Phase.ASSIGNMENT:
            chair.auto_assign(venue)
            for s in subs:
                chair.assign(s.id, users["ac"].id, Role.AC)
        elif phase is Phase.REVIEWING:
            for s in subs:
                b = base.bundle(s.id)
                for a in b.assignments:
                    if a.role != Role.REVIEWER:
                        continue
                    ctx = {"paper": s.number, "rev": a.pseudonym[-1]}
                    base.as_user(db.get(m.User, a.user_id)).save_review(
                        s.id, summary=text("summary", **ctx), strengths=text("strengths", **ctx),
                        questions=text("questions", **ctx), weaknesses=text("weaknesses", **ctx),
                        score=3 + (s.number + ord(a.pseudonym[-1])) % 5, confidence=3,
                        answers=demo_answers(form, text, **ctx, i=cast_place.get(a.user_id, 0)))
        elif phase is Phase.FEEDBACK:
            # paper 1: every review rated (stage 2 released); later papers: one review rated
            rank = {u.id: i for i, u in enumerate(revs)}
            for s in subs:
                b = base.bundle(s.id)
                author = base.as_user(db.get(m.User, s.submitter_id))
                todo = b.reviews if (s.number == 1 or rate_all) else b.reviews[:1]
                for k, r in enumerate(todo):
                    if rate_all:  # the cast's first reviewers write the better reviews
                        good = 5 - rank[r.reviewer_id] * 4 // max(len(revs) - 1, 1)
                        comp, cons = good, max(1, good - (k % 2))
                    else:
                        comp, cons = 3 + k % 3, 2 + k % 4
                    author.give_feedback(r.id, comprehension=comp, constructiveness=cons,
                                         llm_suspected=k == 2,
                                         llm_comment=text("llm_comment", paper=s.number))
        elif phase is Phase.REBUTTAL:
            for s in subs:
                author = base.as_user(db.get(m.User, s.submitter_id))
                for r in base.bundle(s.id).reviews[:2]:
                    author.write_rebuttal(r.id, text("rebuttal", paper=s.number))
        elif phase is Phase.DISCUSSION:
            for s in subs:
                b = base.bundle(s.id)
                for a in b.assignments[:2]:
                    base.as_user(db.get(m.User, a.user_id)).post_discussion(
                        s.id, text("post", paper=s.number))
        elif phase is Phase.META_REVIEW:
            for s in subs:
                if rate_all:
                    for r in base.bundle(s.id).submitted_reviews():
                        base.as_user(users["ac"]).rate_review(
                            r.id, 5 - rank_of(r.reviewer_id) * 3 // max(len(revs) - 1, 1))
                base.as_user(users["ac"]).write_metareview(
                    s.id, text("meta", paper=s.number), "accept" if s.number % 2 else "reject")
        elif phase is Phase.DECISION:
            for s in subs:
                chair.decide(s.id, "accept" if s.number % 2 else "reject")
        elif phase is Phase.NOTIFICATION and close:
            chair.close_venue(venue)

    def rank_of(user_id: int) -> int:
        return next(i for i, u in enumerate(revs) if u.id == user_id)

    for phase in PHASE_ORDER:
        if phase is not Phase.SUBMISSION:
            if phase is Phase.BIDDING and not venue.bidding_enabled:
                continue
            chair.advance_phase(venue, phase)
        step(phase)
        if on_phase:
            on_phase(phase)
        if phase is upto:
            break
    return venue


def populate_rewards_venue(db: Session, settings: Settings, slug: str) -> m.Venue:
    """The demo's closed venue: 8 reviewers on 8 papers, every review rated by its authors
    and the area chair, badges awarded (so quality scores, badges and credentials show)."""
    return populate_venue(db, settings, slug, Phase.NOTIFICATION, cast=REWARDS_CAST,
                          n_papers=REWARDS_PAPERS, rate_all=True, close=True)


def build_demo(db: Session, settings: Settings) -> list[tuple[str, str]]:
    """One venue per phase, the last one closed with rewards (8 reviewers, 8 papers, every
    review rated by its authors and the area chair, badges awarded); returns the (e-mail,
    role) logins (password: DEMO_PASSWORD)."""
    for phase in PHASE_ORDER:
        slug = f"demo-{phase.value.replace('_', '-')}"
        if db.scalar(select(m.Venue).where(m.Venue.slug == slug)):
            continue
        if phase is Phase.NOTIFICATION:
            populate_rewards_venue(db, settings, slug)
        else:
            populate_venue(db, settings, slug, phase, form=DEMO_FORM)
    c = REWARDS_CAST
    return ([(c.chair, "program chair (site admin)"), (c.ac, "area chair")]
            + [(e, "reviewer") for e in c.reviewers] + [(e, "author") for e in c.authors])
