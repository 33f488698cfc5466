"""Fixes: the submission list's "rated" count for area
chairs, and who may publish a reviewer profile (the authority decides; the badge rule has its
test in test_review_rewards.py)."""

from __future__ import annotations

import pytest
from review_helpers import service_as
from sqlalchemy import select

from icml25.review import models as m
from icml25.review.demo import DEMO_PASSWORD, Cast, populate_venue
from icml25.review.errors import NotAllowed
from icml25.review.service import ReviewService
from icml25.review.workflow import Phase

CAST = Cast()


def test_the_rated_count_is_the_same_for_the_area_chair_and_the_chair(db, settings):
    venue = populate_venue(db, settings, "rated", Phase.FEEDBACK)
    n_rated = {s.number: 0 for s in db.scalars(select(m.Submission))}
    for _, sub in db.execute(select(m.Feedback, m.Submission).join(
            m.Review, m.Review.id == m.Feedback.review_id).join(
            m.Submission, m.Submission.id == m.Review.submission_id)):
        n_rated[sub.number] += 1
    assert sorted(n_rated.values()) == [1, 3]  # paper 1 fully rated, paper 2 once
    for email in (CAST.chair, CAST.ac):
        rows = service_as(db, settings, email).venue_page(venue)["submissions"]
        assert {r["number"]: r["progress"]["rated"] for r in rows} == n_rated, email
    # the AC learns which reviews are rated, never the ratings themselves
    page = service_as(db, settings, CAST.ac).submission_page(rows[0]["id"])
    assert all("feedback" not in r for r in page["reviews"])
    # a peer reviewer sees neither
    reviewer = next(a for a in ReviewService(db, settings).bundle(rows[0]["id"]).assignments
                    if a.role == "reviewer")
    peer = service_as(db, settings, db.get(m.User, reviewer.user_id).email)
    assert all("rated" not in r for r in peer.submission_page(rows[0]["id"])["reviews"])


def test_only_a_verified_account_publishes_its_profile(db, settings):
    base = ReviewService(db, settings)
    fresh = base.register("fresh@new.example", "Famous Name", DEMO_PASSWORD)
    with pytest.raises(NotAllowed, match="verify"):
        base.as_user(fresh).set_profile_public(True)
    db.rollback()
    assert not db.get(m.User, fresh.id).profile_public
    ok = base.create_user("ok@new.example", "Verified Person", DEMO_PASSWORD)
    base.as_user(ok).set_profile_public(True)
    assert db.get(m.User, ok.id).profile_public
