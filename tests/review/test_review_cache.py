"""The view cache: views run few queries, and a write
acknowledged to anyone is seen at once by every worker (two apps with their own engines and
caches on one database stand for two worker processes).

Each of these failed on the code before the cache (d5a7074): the query counts were 9
(submission view) and 13 (venue view); the staleness tests fail when the version bumps or the
guard against caching uncommitted rows are taken out."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from review_helpers import service_as
from sqlalchemy import event, select

from icml25.review import models as m
from icml25.review.demo import Cast, populate_venue
from icml25.review.web import create_app
from icml25.review.workflow import Phase, Role

CAST = Cast()


class Worker:
    """One app with its own engine (and so its own view cache), counting its statements."""

    def __init__(self, settings) -> None:  # noqa: ANN001
        self.app = create_app(settings)
        self.engine = self.app.state.engine
        self.statements: list[str] = []
        event.listen(self.engine, "before_cursor_execute",
                     lambda conn, cur, stmt, *a: self.statements.append(stmt))
        self.client = TestClient(self.app, base_url="http://t/api/v1")

    def get(self, path: str, token: str):  # noqa: ANN201
        return self.client.get(path, headers={"Authorization": f"Bearer {token}"})

    def post(self, path: str, token: str, body: dict):  # noqa: ANN201
        return self.client.post(path, headers={"Authorization": f"Bearer {token}"}, json=body)

    def count(self, path: str, token: str) -> int:
        self.statements.clear()
        assert self.get(path, token).status_code == 200
        return len(self.statements)

    def close(self) -> None:
        self.client.close()
        self.engine.dispose()


@pytest.fixture
def workers(settings):
    pair = [Worker(settings), Worker(settings)]
    yield pair
    for w in pair:
        w.close()


def _tokens(db, settings) -> dict[str, str]:
    return {e: service_as(db, settings, e).create_api_token("t")
            for e in (CAST.chair, CAST.ac, *CAST.reviewers, *CAST.authors)}


def _assigned(db, venue, k: int = 0) -> tuple[m.User, m.Submission]:
    """The ``k``-th reviewer assigned to the first paper of ``venue``, and that paper."""
    first = db.scalar(select(m.Submission.id).where(m.Submission.venue_id == venue.id)
                      .order_by(m.Submission.number))
    a = db.scalars(select(m.Assignment).where(
        m.Assignment.submission_id == first, m.Assignment.role == Role.REVIEWER)
        .order_by(m.Assignment.id)).all()[k]
    return db.get(m.User, a.user_id), db.get(m.Submission, a.submission_id)


def _reviewing(db, settings, slug: str, n_papers: int):  # noqa: ANN202
    """A venue in the reviewing phase with no review written yet."""
    venue = populate_venue(db, settings, slug, Phase.ASSIGNMENT, n_papers=n_papers)
    service_as(db, settings, CAST.chair).advance_phase(venue)
    return venue


def _review_body(text: str) -> dict:
    return {"summary": text, "strengths": "s", "questions": "q", "weaknesses": "w",
            "score": 4, "confidence": 3, "submit": True}


def test_views_run_few_queries_once_warm(db, settings, workers):
    venue = _reviewing(db, settings, "cq", n_papers=4)
    tokens = _tokens(db, settings)
    user, sub = _assigned(db, venue)
    w = workers[0]
    for path in (f"/submissions/{sub.id}", "/venues/cq"):
        w.get(path, tokens[user.email])  # warm
    # token lookup, then the submission's version (with the epoch); everything else cached
    assert w.count(f"/submissions/{sub.id}", tokens[user.email]) <= 2
    # token, venue, epoch, versions of the reviewer's papers, their feedback panel
    assert w.count("/venues/cq", tokens[user.email]) <= 5
    chair = tokens[CAST.chair]
    w.get("/venues/cq", chair)
    assert w.count("/venues/cq", chair) <= 5


def test_a_write_through_one_worker_is_seen_at_once_by_the_other(db, settings, workers):
    venue = _reviewing(db, settings, "cw", n_papers=3)
    tokens = _tokens(db, settings)
    user, sub = _assigned(db, venue)
    writer = tokens[_assigned(db, venue, 1)[0].email]
    a, b = workers
    tok = tokens[user.email]
    chair = tokens[CAST.chair]
    for w in (a, b):  # both caches warm
        for token in (tok, writer, chair):
            assert w.get(f"/submissions/{sub.id}", token).status_code == 200
        assert w.get("/venues/cw", tok).status_code == 200

    # a review saved through worker a: worker b shows it to its writer and to the chair
    assert a.post(f"/submissions/{sub.id}/review", writer,
                  _review_body("marker-one")).status_code == 200
    for token in (writer, chair):
        texts = [r["summary"] for r in b.get(f"/submissions/{sub.id}", token).json()["reviews"]]
        assert "marker-one" in texts

    # the chair unassigns the reviewer (another session, like a third worker or the CLI):
    # neither worker shows the paper to them any more
    service_as(db, settings, CAST.chair).unassign(sub.id, user.id)
    for w in (a, b):
        assert w.get(f"/submissions/{sub.id}", tok).status_code == 403
        listed = [s["id"] for s in w.get("/venues/cw", tok).json()["submissions"]]
        assert sub.id not in listed

    # a phase change through worker a is on worker b's venue page
    assert a.post("/venues/cw/advance", chair, {"force": True}).status_code == 200
    assert b.get("/venues/cw", chair).json()["phase"] == Phase.FEEDBACK.value

    # a revoked token stops working on both workers at once
    svc = service_as(db, settings, user.email)
    tid = db.scalar(select(m.ApiToken.id).where(m.ApiToken.user_id == user.id))
    svc.revoke_api_token(tid)
    for w in (a, b):
        assert w.get("/me", tok).status_code in (401, 403)


def test_an_author_rating_is_seen_at_once_by_the_chair_on_the_other_worker(db, settings,
                                                                          workers):
    venue = populate_venue(db, settings, "cf", Phase.FEEDBACK, n_papers=2)
    tokens = _tokens(db, settings)
    sub = db.scalar(select(m.Submission).where(m.Submission.venue_id == venue.id,
                                               m.Submission.number == 2))
    author = db.get(m.User, sub.submitter_id)
    a, b = workers
    chair = tokens[CAST.chair]

    def ratings() -> dict:
        return {r["id"]: r.get("feedback") for r in
                b.get(f"/submissions/{sub.id}", chair).json()["reviews"]}

    before = ratings()
    unrated = [rid for rid, fb in before.items() if fb is None]
    assert unrated, before
    rid = unrated[0]
    assert a.post(f"/reviews/{rid}/feedback", tokens[author.email],
                  {"comprehension": 5, "constructiveness": 1}).status_code == 200
    got = ratings()[rid]
    assert got is not None and got["comprehension"] == 5 and got["constructiveness"] == 1


def test_rows_changed_in_an_open_transaction_are_never_cached(db, settings, workers):
    venue = populate_venue(db, settings, "cr", Phase.REVIEWING, n_papers=2)
    tokens = _tokens(db, settings)
    user, sub = _assigned(db, venue)
    original = db.scalar(select(m.Review.summary).where(
        m.Review.submission_id == sub.id, m.Review.reviewer_id == user.id))
    # the same engine as worker a: a page read in a transaction that has changed a review
    # (and is then rolled back) must not leave that change in worker a's cache
    a = workers[0]
    assert a.get(f"/submissions/{sub.id}", tokens[user.email]).status_code == 200
    from icml25.review.db import make_sessionmaker
    from icml25.review.service import ReviewService

    session = make_sessionmaker(a.engine)()
    try:
        r = session.scalar(select(m.Review).where(m.Review.submission_id == sub.id,
                                                  m.Review.reviewer_id == user.id))
        r.summary = "never-committed"
        session.flush()
        svc = ReviewService(session, settings).as_user(session.get(m.User, user.id))
        seen = [x["summary"] for x in svc.submission_page(sub.id)["reviews"]]
        assert "never-committed" in seen  # its own transaction sees its change
        session.rollback()
    finally:
        session.close()
    texts = [x["summary"] for x in
             a.get(f"/submissions/{sub.id}", tokens[user.email]).json()["reviews"]]
    assert "never-committed" not in texts and original in texts


@pytest.mark.parametrize("phase", [Phase.BIDDING, Phase.REVIEWING, Phase.FEEDBACK,
                                   Phase.NOTIFICATION])
def test_cached_and_uncached_views_agree(db, settings, phase):
    slug = f"ce-{phase.value.replace('_', '-')}"
    venue = populate_venue(db, settings, slug, phase, n_papers=3)
    tokens = _tokens(db, settings)
    ids = db.scalars(select(m.Submission.id).where(m.Submission.venue_id == venue.id)).all()
    on = Worker(settings)
    off = Worker(settings.model_copy(update={"view_cache": False}))
    try:
        for email, tok in tokens.items():
            paths = ["/venues/" + slug, f"/venues/{slug}/export"] + [
                f"/submissions/{i}" for i in ids]
            for path in paths * 2:  # the second round is served from the cache
                x, y = on.get(path, tok), off.get(path, tok)
                assert x.status_code == y.status_code, (email, path)
                if x.status_code == 200:
                    jx, jy = x.json(), y.json()
                    for j in (jx, jy):
                        j.pop("exported_at", None)
                    assert jx == jy, (email, path)
    finally:
        on.close()
        off.close()


def test_a_known_token_needs_no_query_and_a_revoked_one_fails_at_once(db, settings, workers):
    _reviewing(db, settings, "ct", n_papers=2)
    tokens = _tokens(db, settings)
    tok = tokens[CAST.reviewers[0]]
    a, b = workers
    for w in (a, b):
        w.get("/me", tok)  # warm: the token's row and owner are now cached
    a.count("/me", tok)
    assert not [s for s in a.statements if "api_tokens" in s]
    assert a.get("/me", tok).json()["email"] == CAST.reviewers[0]

    # revoked through another session (the owner's web page, the CLI): both workers refuse it
    owner = service_as(db, settings, CAST.reviewers[0])
    (token_id,) = [t["id"] for t in owner.api_tokens()]
    owner.revoke_api_token(token_id)
    for w in (a, b):
        assert w.get("/me", tok).status_code == 403  # the API refuses an unknown token

    # a changed account is seen at once through a cached token
    other = tokens[CAST.reviewers[1]]
    assert a.get("/me", other).json()["profile_public"] is False
    service_as(db, settings, CAST.reviewers[1]).set_profile_public(True)
    assert a.get("/me", other).json()["profile_public"] is True


def test_a_newer_version_reloads_only_what_can_have_changed(db, settings, workers):
    """After a review is written elsewhere, a worker catches up without reloading the
    submission's authors, assignments or accounts (those change only with a new epoch), and
    shows exactly what a worker with a cold cache shows."""
    venue = _reviewing(db, settings, "cr", n_papers=2)
    tokens = _tokens(db, settings)
    _, sub = _assigned(db, venue)
    writer = tokens[_assigned(db, venue, 1)[0].email]
    chair = tokens[CAST.chair]
    a, b = workers
    a.get(f"/submissions/{sub.id}", chair)  # warm
    assert b.post(f"/submissions/{sub.id}/review", writer,
                  _review_body("marker-two")).status_code == 200
    a.statements.clear()
    shown = a.get(f"/submissions/{sub.id}", chair).json()
    loaded = " ".join(a.statements)
    assert "FROM submission_authors" not in loaded and "FROM assignments" not in loaded
    assert "FROM reviews" in loaded  # what did change is loaded
    assert "marker-two" in [r["summary"] for r in shown["reviews"]]
    cold = Worker(settings)
    try:
        assert cold.get(f"/submissions/{sub.id}", chair).json() == shown
    finally:
        cold.close()
