"""Reviewer rewards: the quality formula, badges at venue close, Ed25519 credentials (a tampered
credential fails), and the platform flow (AC ratings, close, profile, verify endpoint and CLI);
plus the chair's assignment proposal (TF-IDF affinity, pins, forbids, institutions)."""

from __future__ import annotations

import copy
import json

import pytest
from review_helpers import (
    fast_settings,  # noqa: F401  (fixtures come from conftest)
    service_as,
)
from sqlalchemy import select
from typer.testing import CliRunner

from icml25.review import models as m
from icml25.review.credentials import CredentialError, new_keypair, sign, verify
from icml25.review.demo import Cast, populate_venue
from icml25.review.rewards import ReviewFacts, award_badges, quality_score, venue_scores
from icml25.review.service import ReviewService, ServiceError
from icml25.review.workflow import NotAllowed, Phase


def test_quality_formula_and_missing_parts():
    rows = [ReviewFacts(1, author_rating=5, ac_rating=3, on_time=True),
            ReviewFacts(1, author_rating=3, ac_rating=None, on_time=False)]
    q = quality_score(rows)
    # A = mean((5-1)/4, (3-1)/4) = 0.75; C = 0.5; T = 0.5
    assert q.quality == pytest.approx(100 * (0.5 * 0.75 + 0.3 * 0.5 + 0.2 * 0.5))
    only_time = quality_score([ReviewFacts(2, on_time=True)])
    assert only_time.quality == pytest.approx(100.0) and only_time.author is None
    with pytest.raises(ValueError):
        quality_score([])


def test_badges_top10_top30_and_on_time():
    rows = [ReviewFacts(u, author_rating=1 + 4 * u / 19, on_time=u >= 3)
            for u in range(20) for _ in range(3)]  # three rated reviews each
    badges = award_badges(venue_scores(rows))
    top10 = {u for u, b in badges.items() if "top-10" in b}
    top30 = {u for u, b in badges.items() if "top-30" in b}
    assert top10 == {19, 18} and top30 == {19, 18, 17, 16, 15, 14}
    assert {u for u, b in badges.items() if "on-time" in b} == set(range(3, 20))
    # ties at the cut share the badge; reviewers below min_reviews get no tier badge
    tied = award_badges(venue_scores([ReviewFacts(u, author_rating=4) for u in range(5)]),
                        min_reviews=2)
    assert all(b == ["on-time"] for b in tied.values())


def test_no_rank_badge_while_the_score_is_withheld_from_its_owner():
    """Under 3 author ratings a reviewer's own page withholds the score (to protect the
    raters); a public "top 10 %" would reveal it, so no rank badge either."""
    best = [ReviewFacts(0, author_rating=5)] * 2  # two excellent ratings only
    rest = [ReviewFacts(u, author_rating=2 + u % 3) for u in range(1, 11) for _ in range(3)]
    badges = award_badges(venue_scores(best + rest))
    assert badges[0] == ["on-time"]
    top10 = {u for u, b in badges.items() if "top-10" in b}
    assert top10 and 0 not in top10
    # the reviewer's own page withholds the same score, by the same rule
    from icml25.review.authority import Viewer
    from icml25.review.visibility import quality_view
    from icml25.review.workflow import Phase, Role

    score = venue_scores(best)[0]
    view = quality_view(Viewer(0, frozenset({Role.REVIEWER}), verified=True),
                        Phase.NOTIFICATION, score, score.n_author_ratings)
    assert view["available"] is False and "fewer than 3" in view["reason"]
    third = venue_scores(best + [ReviewFacts(0, author_rating=5)])
    assert "top-10" in award_badges({**venue_scores(rest), **third})[0]


def test_credential_signs_and_any_tampering_fails():
    priv, pub = new_keypair()
    claims = {"type": "ReviewerBadge", "badge": "top-10", "quality": 91.5,
              "venue": {"slug": "v", "name": "V"}, "reviewer": {"id": 3, "name": "Ada"}}
    doc = sign(claims, priv, pub)
    assert verify(doc, pub).claims == claims
    assert verify(json.dumps(doc), pub).claims["badge"] == "top-10"
    for path, value in [(("badge",), "top-30"), (("quality",), 99.0),
                        (("reviewer", "name"), "Eve"), (("venue", "slug"), "w")]:
        bad = copy.deepcopy(doc)
        target = bad["credential"]
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        with pytest.raises(CredentialError, match="tampered"):
            verify(bad, pub)
    bad = copy.deepcopy(doc)
    bad["credential"]["extra"] = 1
    with pytest.raises(CredentialError):
        verify(bad, pub)
    other_priv, other_pub = new_keypair()
    with pytest.raises(CredentialError, match="different key"):
        verify(sign(claims, other_priv, other_pub), pub)
    forged = sign(claims, other_priv, other_pub)
    forged["proof"]["key_id"] = doc["proof"]["key_id"]  # claim the venue's key id
    with pytest.raises(CredentialError, match="tampered"):
        verify(forged, pub)


def test_rewards_flow_close_profile_and_verify(db, settings, client, tmp_path, monkeypatch):
    cast = Cast()

    def hook(phase):
        chair = service_as(db, settings, cast.chair)
        venue = chair.venue("rw")
        if phase is Phase.SUBMISSION:
            chair.set_timeline(venue, {"reviewing": "2999-01-01"})
        if phase is Phase.DECISION:
            ac = service_as(db, settings, cast.ac)
            for i, r in enumerate(db.scalars(select(m.Review).order_by(m.Review.id))):
                ac.rate_review(r.id, 1 + i % 5)
            author = service_as(db, settings, cast.authors[0])
            r0 = db.scalars(select(m.Review)).first()
            with pytest.raises(NotAllowed):
                author.rate_review(r0.id, 5)
            with pytest.raises(NotAllowed):  # badges only at notification
                chair.close_venue(venue)

    # 8 papers x 3 reviews over 4 reviewers (max load 6): every reviewer has 6 reviews, all
    # rated by the authors, so every score may be disclosed and rank badges awarded
    populate_venue(db, settings, "rw", Phase.NOTIFICATION, on_phase=hook, n_papers=8,
                   rate_all=True)
    chair = service_as(db, settings, cast.chair)
    venue = chair.venue("rw")
    scores = chair.quality_scores(venue)
    assert len(scores) == len(cast.reviewers)
    assert all(s["timeliness_part"] == 1.0 and s["ac_part"] is not None for s in scores)
    counts = chair.close_venue(venue)
    assert counts["on-time"] == 4 and counts["top-10"] >= 1 and counts["top-30"] >= 2
    assert chair.close_venue(venue) == counts  # idempotent
    assert db.scalar(select(m.Badge).where(m.Badge.tier == "top-10")) is not None
    n_badges = len(db.scalars(select(m.Badge)).all())
    assert n_badges == sum(counts.values())
    with pytest.raises(NotAllowed):
        service_as(db, settings, cast.reviewers[0]).quality_scores(venue)
    # a reviewer sees the formula, and their own numbers only over >= 3 author ratings
    mine = [service_as(db, settings, e).my_quality(venue) for e in cast.reviewers]
    assert all("0.5 A + 0.3 C + 0.2 T" in q["formula"] for q in mine)
    assert any(not q["available"] for q in mine) or all("quality" in q for q in mine)
    best = scores[0]["user_id"]
    user = db.get(m.User, best)
    svc = ReviewService(db, settings).as_user(user)
    creds = svc.my_badges()
    assert {c["credential"]["badge"] for c in creds} >= {"top-10", "on-time"}
    top = next(c for c in creds if c["credential"]["badge"] == "top-10")
    assert svc.verify_credential(top)["valid"] is True
    bad = copy.deepcopy(top)
    bad["credential"]["reviewer"]["name"] = "Somebody Else"
    assert svc.verify_credential(bad)["valid"] is False
    profile = ReviewService(db, settings).reviewer_profile(best)
    assert {b["badge"] for b in profile["badges"]} >= {"top-10", "on-time"}
    assert "email" not in json.dumps(profile) and "quality" not in profile["badges"][0]
    # public endpoints: key, verify, profile (no token needed)
    key = client.get("/api/v1/venues/rw/public-key").json()
    assert key["algorithm"] == "Ed25519" and len(key["public_key"]) == 64
    assert client.post("/api/v1/credentials/verify", json=top).json()["valid"] is True
    r = client.post("/api/v1/credentials/verify", json=bad).json()
    assert r["valid"] is False and "tampered" in r["reason"]
    assert client.get(f"/api/v1/reviewers/{best}/profile").json()["name"] == user.name
    # CLI: verify against the published key, offline
    from icml25.review import cli as review_cli

    f_ok, f_bad = tmp_path / "ok.json", tmp_path / "bad.json"
    f_ok.write_text(json.dumps(top))
    f_bad.write_text(json.dumps(bad))
    runner = CliRunner()
    res = runner.invoke(review_cli.app, ["verify", str(f_ok), "--public-key", key["public_key"]])
    assert res.exit_code == 0 and "valid" in res.output, res.output
    res = runner.invoke(review_cli.app, ["verify", str(f_bad), "--public-key",
                                         key["public_key"]])
    assert res.exit_code == 1 and "INVALID" in res.output


def test_assignment_proposal_respects_pins_forbids_and_institutions(db, settings):
    base = ReviewService(db, settings)
    chair = base.as_user(base.create_user("pc@conf.example", "PC", "long-password",
                                          is_admin=True))
    venue = chair.create_venue("asg", "Assign", bidding_enabled=False, reviews_per_paper=2,
                               max_load=2)
    topics = ["graph neural networks molecules", "bandit regret bounds",
              "diffusion models for proteins", "privacy differential mechanisms"]
    revs = []
    for j in range(6):  # reviewers 0 and 1 share an institution
        inst = "same-uni" if j < 2 else f"uni{j}"
        u = base.create_user(f"r{j}@{inst}.example", f"R{j}", "long-password")
        base.as_user(u).add_reviewer_paper(f"Work {j}", topics[j % 4] + " analysis")
        chair.add_member(venue, u.email, "reviewer")
        revs.append(u)
    subs = []
    for i, t in enumerate(topics):
        a = base.create_user(f"a{i}@auth{i}.example", f"A{i}", "long-password")
        subs.append(base.as_user(a).submit(venue, title=t, abstract=t + " method",
                                           authors=[{"name": a.name, "email": a.email}]))
    chair.advance_phase(venue)  # assignment
    # paper 0's best reviewers are r0 and r4 (topic 0); r0 and r1 are one institution
    chair.set_pair_constraint(subs[0].id, revs[4].id, "forbid")
    chair.set_pair_constraint(subs[1].id, revs[0].id, "pin")
    prop = chair.propose_assignment(venue)
    pairs = {(p["submission_id"], p["user_id"]) for p in prop["pairs"]}
    assert (subs[0].id, revs[4].id) not in pairs and (subs[1].id, revs[0].id) in pairs
    assert len(pairs) == 8 and prop["quality"]["n_pinned"] == 1
    inst = {u.id: u.email.split("@")[1] for u in revs}
    for s in subs:
        mine = [inst[u] for sid, u in pairs if sid == s.id]
        assert len(mine) == len(set(mine)) == 2
    assert prop["quality"]["load_max"] <= 2
    assert db.scalar(select(m.Assignment)) is None  # a proposal writes nothing
    fair = chair.propose_assignment(venue, objective="fair")
    assert fair["quality"]["min_paper_affinity"] >= prop["quality"]["min_paper_affinity"] - 1e-9
    with pytest.raises(ServiceError, match="forbidden"):
        chair.commit_assignment(venue, [(subs[0].id, revs[4].id)])
    assert db.scalar(select(m.Assignment)) is None  # all or nothing
    assert chair.commit_assignment(venue, sorted(pairs)) == 8
    with pytest.raises(NotAllowed):
        base.as_user(revs[0]).propose_assignment(venue)
    with pytest.raises(ServiceError, match="conflicted"):
        chair.set_pair_constraint(subs[2].id, db.scalar(select(m.User).where(
            m.User.email == "a2@auth2.example")).id, "pin")


def test_impact_formula():
    from icml25.review.rewards import impact_scores

    cites = {1: 0, 2: 10, 3: 100}
    out = impact_scores({7: [3], 8: [1, 2], 9: [4]}, cites)
    import math

    venue = (math.log1p(0) + math.log1p(10) + math.log1p(100)) / 3
    assert out[7]["impact"] == pytest.approx(math.log1p(100) / venue, abs=1e-4)
    assert out[8]["impact"] == pytest.approx(math.log1p(10) / 2 / venue, abs=1e-4)
    assert 9 not in out  # no imported count for the paper reviewed
    with pytest.raises(ValueError):
        impact_scores({1: [1]}, {1: -1})


def test_citation_import_and_impact(db, settings):
    venue = populate_venue(db, settings, "imp", Phase.REBUTTAL, n_papers=2)
    chair = service_as(db, settings, Cast().chair)
    with pytest.raises(ServiceError, match="columns"):
        chair.import_citations(venue, "paper,count\n1,3\n")
    with pytest.raises(ServiceError, match="#9"):
        chair.import_citations(venue, "number,citations\n9,3\n")
    assert chair.import_citations(venue, "number,citations\n1,100\n2,0\n") == 2
    imp = {d["user_id"]: d for d in chair.reviewer_impact(venue)}
    assert imp and all("log(1 + citations)" in d["formula"] for d in imp.values())
    reviewed = {}
    for r in db.scalars(select(m.Review).where(m.Review.submitted.is_(True))):
        reviewed.setdefault(r.reviewer_id, set()).add(
            db.get(m.Submission, r.submission_id).number)
    for uid, nums in reviewed.items():  # only paper 1 has citations
        assert imp[uid]["impact"] == pytest.approx((2.0 if nums == {1} else 1.0)
                                                   if nums != {2} else 0.0, abs=1e-4)
    with pytest.raises(NotAllowed):
        service_as(db, settings, Cast().reviewers[0]).reviewer_impact(venue)
