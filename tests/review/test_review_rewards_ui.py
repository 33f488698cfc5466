"""Reviewer rewards in the UI and the demo's closed venue (point 9): the
quality score and its parts, badges, credential downloads, the public verification page and
reviewer profiles."""

from __future__ import annotations

import json

from review_helpers import csrf_of, service_as, web_login
from sqlalchemy import func, select

from icml25.review import models as m
from icml25.review.demo import (
    DEMO_PASSWORD,
    REWARDS_CAST,
    Cast,
    populate_rewards_venue,
    populate_venue,
)
from icml25.review.workflow import Phase

CAST = Cast()


def _n_author_ratings(db, user_id: int, venue_id: int) -> int:
    return db.scalar(select(func.count()).select_from(m.Feedback).join(
        m.Review, m.Review.id == m.Feedback.review_id).join(
        m.Submission, m.Submission.id == m.Review.submission_id).where(
        m.Review.reviewer_id == user_id, m.Submission.venue_id == venue_id))


def test_the_demo_closed_venue_has_quality_scores_and_badges(db, settings):
    venue = populate_rewards_venue(db, settings, "closed")
    tiers = dict(db.execute(select(m.Badge.tier, func.count()).where(
        m.Badge.venue_id == venue.id).group_by(m.Badge.tier)).all())
    assert tiers.get("top-10", 0) >= 1 and tiers.get("top-30", 0) >= tiers["top-10"] + 1
    shown = 0
    for email in REWARDS_CAST.reviewers:
        mine = service_as(db, settings, email).my_rewards()
        [v] = [v for v in mine["venues"] if v["slug"] == "closed"]
        u = db.scalar(select(m.User).where(m.User.email == email))
        n = _n_author_ratings(db, u.id, venue.id)
        assert v["quality"]["available"] == (n >= 3), (email, n, v["quality"])
        shown += v["quality"]["available"]
        assert sorted(b["tier"] for b in v["badges"]) == sorted(db.scalars(
            select(m.Badge.tier).where(m.Badge.venue_id == venue.id, m.Badge.user_id == u.id)))
    assert shown >= 6  # most reviewers see their score: the reward side is populated


def test_a_reviewer_sees_parts_and_badges_and_anyone_verifies_a_credential(
        client, db, settings):
    venue = populate_venue(db, settings, "rw", Phase.NOTIFICATION, n_papers=4, rate_all=True,
                           close=True)
    badge = db.scalar(select(m.Badge).where(m.Badge.venue_id == venue.id,
                                            m.Badge.tier == "top-10"))
    holder = db.get(m.User, badge.user_id)
    web_login(client, holder.email, DEMO_PASSWORD)
    page = client.get("/me/rewards")
    assert page.status_code == 200 and "Top 10% reviewer" in page.text
    # a rank badge is never held while its owner's score is withheld
    assert "A: authors' ratings of your reviews" in page.text
    assert "Not shown yet" not in page.text
    got = client.get(f"/me/badges/{badge.id}/credential.json")
    assert got.status_code == 200 and "attachment" in got.headers["content-disposition"]
    doc = got.json()
    assert doc["credential"]["badge"] == "top-10" and doc["credential"]["reviewer"]["id"] == \
        holder.id
    other = db.scalar(select(m.Badge).where(m.Badge.user_id != holder.id))
    assert client.get(f"/me/badges/{other.id}/credential.json").status_code == 404
    assert client.get("/me/badges/999999/credential.json").status_code == 404
    # the public profile lists the badge; anyone may look
    profile = client.get(f"/reviewers/{holder.id}")
    assert profile.status_code == 200 and "top-10" in profile.text
    assert holder.email not in profile.text
    author = db.scalar(select(m.User).where(m.User.email == CAST.authors[0]))
    assert client.get(f"/reviewers/{author.id}").status_code == 404
    # verification by an anonymous visitor
    from fastapi.testclient import TestClient

    anon = TestClient(client.app)
    form = anon.get("/verify")
    assert form.status_code == 200
    ok = anon.post("/verify", data={"csrf_token": csrf_of(form.text),
                                    "credential": got.text})
    assert ok.status_code == 200 and "✓ Valid credential" in ok.text
    assert holder.name in ok.text
    forged = json.loads(got.text)
    forged["credential"]["badge"] = "top-10" if badge.tier != "top-10" else "top-1"
    bad = anon.post("/verify", data={"csrf_token": csrf_of(form.text),
                                     "credential": json.dumps(forged)})
    assert "✗ Not valid" in bad.text and "✓" not in bad.text
    junk = anon.post("/verify", data={"csrf_token": csrf_of(form.text),
                                      "credential": "not json"})
    assert junk.status_code == 200 and "not a badge credential" in junk.text
    assert anon.post("/verify", data={"csrf_token": csrf_of(form.text),
                                      "credential": ""}).status_code == 400
    assert anon.get("/me/rewards", follow_redirects=False).status_code in (401, 403)


def test_quality_is_withheld_before_notification_and_the_profile_can_be_made_public(
        client, db, settings):
    populate_venue(db, settings, "early", Phase.DISCUSSION, n_papers=4, rate_all=True)
    web_login(client, CAST.reviewers[0], DEMO_PASSWORD)
    page = client.get("/me/rewards").text
    assert "Not shown yet: feedback is shown after notification" in page
    assert "None yet: badges are awarded when the chairs close the venue" in page
    me = db.scalar(select(m.User).where(m.User.email == CAST.reviewers[0]))
    assert client.get(f"/reviewers/{me.id}").status_code == 404
    r = client.post("/me/profile", data={"csrf_token": csrf_of(page), "public": "1"})
    assert r.status_code == 200 and "now public" in r.text
    assert client.get(f"/reviewers/{me.id}").status_code == 200
