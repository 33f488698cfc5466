"""The chairs' submissions table: reviews done of assigned, missing and late
reviewers, mean score and spread, author ratings; search, sort, CSV export; chairs only, and a
conflicted chair sees nothing of their papers."""

from __future__ import annotations

import csv
import io

from review_helpers import service_as, web_login
from sqlalchemy import select

from icml25.review import models as m
from icml25.review.demo import DEMO_PASSWORD, Cast, default_text, populate_venue
from icml25.review.workflow import Phase

CAST = Cast()


def _title(kind: str, **ctx: object) -> str:
    if kind == "title" and ctx["paper"] == 1:
        return "=1+1 spreadsheet formula title"
    return default_text(kind, **ctx)


def _venue_with_a_late_review(db, settings, slug: str):
    """Two papers, three reviewers each; one reviewer of paper 1 never submits; feedback is
    forced open (so that review is late) and the author of paper 1 rates the two reviews."""
    venue = populate_venue(db, settings, slug, Phase.ASSIGNMENT, text=_title)
    chair = service_as(db, settings, CAST.chair)
    chair.advance_phase(venue)  # reviewing
    subs = db.scalars(select(m.Submission).where(m.Submission.venue_id == venue.id)
                      .order_by(m.Submission.number)).all()
    late = None
    for s in subs:
        for k, a in enumerate(a for a in chair.bundle(s.id).assignments if a.role == "reviewer"):
            user = db.get(m.User, a.user_id)
            if s.number == 1 and k == 2:
                late = user
                continue
            service_as(db, settings, user.email).save_review(
                s.id, summary="s", strengths="t", questions="q", weaknesses="w",
                score=3 + 2 * k + s.number, confidence=3)
    chair.advance_phase(venue, force=True)  # feedback: the missing review is late
    author = service_as(db, settings, db.get(m.User, subs[0].submitter_id).email)
    for r in chair.bundle(subs[0].id).submitted_reviews():
        author.give_feedback(r.id, comprehension=4, constructiveness=2, llm_suspected=False)
    return venue, subs, late


def test_the_submissions_table_counts_scores_ratings_and_late_reviewers(client, db, settings):
    venue, subs, late = _venue_with_a_late_review(db, settings, "dash")
    chair = service_as(db, settings, CAST.chair)
    table = chair.submissions_table(venue)
    rows = {r["number"]: r for r in table["rows"]}
    assert table["late_now"] and [r["number"] for r in table["rows"]] == [1, 2]
    one, two = rows[1], rows[2]
    assert (one["reviews_done"], one["reviewers"], one["missing"]) == (2, 3, 1)
    assert one["late"] == [late.name] and two["late"] == [] and two["missing"] == 0
    scores = {s.id: sorted(r.score for r in chair.bundle(s.id).submitted_reviews())
              for s in subs}
    assert one["mean_score"] == round(sum(scores[subs[0].id]) / 2, 2)
    assert one["spread"] == scores[subs[0].id][-1] - scores[subs[0].id][0] == 2
    assert two["spread"] == 4 and one["ratings"] == 2 and two["ratings"] == 0
    assert one["mean_rating"] == 3.0 and one["mean_comprehension"] == 4.0
    assert two["mean_rating"] is None
    # sort and search
    by_missing = chair.submissions_table(venue, sort="missing", descending=True)["rows"]
    assert [r["number"] for r in by_missing] == [1, 2]
    by_spread = chair.submissions_table(venue, sort="spread", descending=True)["rows"]
    assert [r["number"] for r in by_spread] == [2, 1]
    only = chair.submissions_table(venue, query=late.name.lower())["rows"]
    assert [r["number"] for r in only] == [  # reviewer names are searchable
        s.number for s in subs if chair.bundle(s.id).assignment_of(late.id)]
    assert [r["number"] for r in chair.submissions_table(
        venue, query="spreadsheet formula")["rows"]] == [1]
    assert chair.submissions_table(venue, query="#2")["rows"][0]["number"] == 2
    # the page, the CSV and the API
    web_login(client, CAST.chair, DEMO_PASSWORD)
    page = client.get("/v/dash/submissions", params={"sort": "late", "desc": "true"})
    assert page.status_code == 200 and "2 of 3" in page.text and late.name in page.text
    assert 'aria-sort="descending"' in page.text and "late</strong>" in page.text
    assert client.get("/v/dash/submissions", params={"sort": "bogus"}).status_code == 400
    got = client.get("/v/dash/submissions.csv")
    assert got.status_code == 200 and got.headers["content-type"].startswith("text/csv")
    assert "attachment" in got.headers["content-disposition"]
    lines = list(csv.DictReader(io.StringIO(got.text)))
    assert [r["number"] for r in lines] == ["1", "2"]
    assert lines[0]["title"].startswith("'=1+1")  # never run as a formula
    assert lines[0]["late"] == late.name and lines[0]["reviews_done"] == "2"
    assert lines[1]["mean_rating"] == "" and lines[0]["mean_rating"] == "3.0"
    token = chair.create_api_token("t")
    api = client.get("/api/v1/venues/dash/submissions-table",
                     headers={"Authorization": f"Bearer {token}"}, params={"q": "formula"})
    assert api.status_code == 200 and [r["number"] for r in api.json()["rows"]] == [1]


def test_only_chairs_see_the_table_and_conflicted_chairs_none_of_their_papers(
        client, db, settings):
    venue, _, _ = _venue_with_a_late_review(db, settings, "dash2")
    for email in (CAST.ac, CAST.reviewers[0], CAST.authors[0]):
        web_login(client, email, DEMO_PASSWORD)
        assert client.get("/v/dash2/submissions").status_code == 403
        assert client.get("/v/dash2/submissions.csv").status_code == 403
    # a second chair from the authors' institution is conflicted with both papers
    admin = service_as(db, settings, CAST.chair)
    admin.as_user(None).create_user("chair2@uni-a.example", "Second Chair", DEMO_PASSWORD)
    admin.add_member(venue, "chair2@uni-a.example", "chair")
    second = service_as(db, settings, "chair2@uni-a.example")
    assert second.submissions_table(venue)["rows"] == []
    web_login(client, "chair2@uni-a.example", DEMO_PASSWORD)
    text = client.get("/v/dash2/submissions.csv").text
    assert text.strip().splitlines() == [",".join(
        ("number", "title", "status", "decision", "reviews_done", "reviewers", "missing",
         "late", "mean_score", "spread", "ratings", "mean_rating", "area_chair"))]
