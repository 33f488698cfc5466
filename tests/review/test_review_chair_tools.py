"""Chair, reviewer and author tools of the web UI: ratings are never
recorded by default, scores show their scale, the admin page speaks in words and pages its logs."""

from __future__ import annotations

import re

from review_helpers import csrf_of, service_as, web_login
from sqlalchemy import func, select

from icml25.review import models as m
from icml25.review.demo import DEMO_PASSWORD, Cast, populate_venue
from icml25.review.scales import CONFIDENCE, SCORE
from icml25.review.workflow import Phase

CAST = Cast()


def test_a_rating_form_submitted_without_choosing_records_nothing(client, db, settings):
    venue = populate_venue(db, settings, "rate", Phase.FEEDBACK)
    sub = db.scalar(select(m.Submission).where(m.Submission.venue_id == venue.id,
                                               m.Submission.number == 2))
    web_login(client, CAST.authors[1], DEMO_PASSWORD)
    page = client.get(f"/s/{sub.id}").text
    form = page[page.index('action="/r/'):]
    form = form[:form.index("</form>")]
    assert "selected disabled" in form and 'value="3" selected' not in form
    assert form.count("required") >= 2
    rid = int(re.search(r'action="/r/(\d+)/feedback"', page).group(1))
    before = db.scalar(select(func.count()).select_from(m.Feedback))
    r = client.post(f"/r/{rid}/feedback", data={"csrf_token": csrf_of(page)})
    assert r.status_code == 400 and "comprehension" in r.text
    assert db.scalar(select(func.count()).select_from(m.Feedback)) == before


def test_scores_show_their_scale(client, db, settings):
    venue = populate_venue(db, settings, "scale", Phase.REBUTTAL)
    sub = db.scalar(select(m.Submission).where(m.Submission.venue_id == venue.id))
    web_login(client, CAST.chair, DEMO_PASSWORD)
    text = client.get(f"/s/{sub.id}").text
    # each value with its label, and the scale's two ends
    score = re.search(r"Score: <strong>(\d+)</strong> / 10 \(([a-z ]+)\)", text)
    assert score and score.group(2) == SCORE.label(int(score.group(1)))
    conf = re.search(r"Confidence: <strong>(\d)</strong> / 5 \(([a-z ,]+)\)", text)
    assert conf and conf.group(2) == CONFIDENCE.label(int(conf.group(1)))
    assert "1 = very strong reject … 10 = award quality" in text


def test_the_review_form_preselects_no_score_and_requires_one_to_submit(client, db, settings):
    venue = populate_venue(db, settings, "noscore", Phase.ASSIGNMENT)
    chair = service_as(db, settings, CAST.chair)
    chair.advance_phase(venue)  # reviewing, nothing written yet
    a = db.scalar(select(m.Assignment).join(m.Submission).where(
        m.Submission.venue_id == venue.id, m.Assignment.role == "reviewer"))
    email = db.get(m.User, a.user_id).email
    web_login(client, email, DEMO_PASSWORD)
    page = client.get(f"/s/{a.submission_id}").text
    for name in ("score", "confidence"):
        select_html = page[page.index(f'<select id="{name}"'):]
        select_html = select_html[:select_html.index("</select>")]
        assert "required" in select_html.split(">")[0]
        assert select_html.count("selected") == 1 and '<option value="" selected>' in select_html
    assert "10 — award quality" in page and "formnovalidate" in page  # drafts may be partial
    form = {"csrf_token": csrf_of(page), "summary": "s", "strengths": "t", "questions": "q",
            "weaknesses": "w", "score": "", "confidence": ""}
    assert client.post(f"/s/{a.submission_id}/review", data=form | {"action": "submit"}
                       ).status_code == 400
    assert client.post(f"/s/{a.submission_id}/review", data=form | {"action": "draft"}
                       ).status_code == 200
    review = db.scalar(select(m.Review).where(m.Review.submission_id == a.submission_id,
                                              m.Review.reviewer_id == a.user_id))
    assert review is not None and not review.submitted and review.score is None


def test_admin_page_shows_progress_in_words_and_pages_its_logs(client, db, settings):
    venue = populate_venue(db, settings, "pages", Phase.DISCUSSION)
    n_events = db.scalar(select(func.count()).select_from(m.AuditEvent).where(
        m.AuditEvent.venue_id == venue.id))
    assert n_events > 25  # more than one page
    web_login(client, CAST.chair, DEMO_PASSWORD)
    first = client.get("/v/pages/admin").text
    assert "Submissions without a decision: 2" in first and "bidding enabled" not in first
    assert f"Audit log ({n_events})" in first and "Page 1 of" in first
    rows = lambda html: html[html.index("Audit log ("):].count("<tr><td>")  # noqa: E731
    assert rows(first) == 25
    last = -(-n_events // 25)
    tail = client.get(f"/v/pages/admin?audit_page={last}").text
    assert f"Page {last} of {last}" in tail and rows(tail) == n_events - 25 * (last - 1)
    assert client.get("/v/pages/admin?audit_page=999").status_code == 200  # clamped
    assert client.get("/v/pages/admin?audit_page=0").status_code == 400


def test_chairs_preview_the_optimal_assignment_before_committing_it(client, db, settings):
    # before: the web's only button assigned from bids at once, without a preview
    venue = populate_venue(db, settings, "prev", Phase.ASSIGNMENT)
    chair = service_as(db, settings, CAST.chair)
    for a in db.scalars(select(m.Assignment).where(m.Assignment.role == "reviewer")).all():
        chair.unassign(a.submission_id, a.user_id)  # the demo pre-assigns; start empty
    web_login(client, CAST.chair, DEMO_PASSWORD)
    page = client.get("/v/prev/assignment")
    assert page.status_code == 200 and "Nothing is written until you commit" in page.text
    n_before = db.scalar(select(func.count()).select_from(m.Assignment))
    assert not db.scalar(select(func.count()).select_from(m.Assignment).where(
        m.Assignment.role == "reviewer"))
    r = client.post("/v/prev/assignment", data={"csrf_token": csrf_of(page.text),
                                                "objective": "fair", "bid_weight": "0.5",
                                                "top_k": "50", "affinity": "tfidf"})
    assert r.status_code == 200 and "mean affinity of the chosen pairs" in r.text
    assert db.scalar(select(func.count()).select_from(m.Assignment)) == n_before  # a preview
    pairs = re.search(r'name="pairs" value="([\d:,]*)"', r.text).group(1)
    n_new = len([p for p in pairs.split(",") if p])
    subs = db.scalar(select(func.count()).select_from(m.Submission).where(
        m.Submission.venue_id == venue.id))
    assert n_new == subs * venue.reviews_per_paper  # every paper filled
    done = client.post("/v/prev/assignment/commit", data={"csrf_token": csrf_of(r.text),
                                                         "pairs": pairs})
    assert done.status_code == 200 and "assignment(s) made" in done.text
    reviewers = db.scalar(select(func.count()).select_from(m.Assignment).where(
        m.Assignment.role == "reviewer"))
    assert reviewers == subs * venue.reviews_per_paper
    bad = client.post("/v/prev/assignment/commit", data={"csrf_token": csrf_of(r.text),
                                                        "pairs": "1:x"})
    assert bad.status_code == 400
    web_login(client, CAST.reviewers[0], DEMO_PASSWORD)
    assert client.get("/v/prev/assignment").status_code == 403


def test_reviewers_bid_from_one_table_with_affinity_search_and_a_not_yet_bid_filter(
        client, db, settings):
    # before: bidding meant opening each paper in turn
    from icml25.review.demo import default_text

    topics = ["graph neural networks molecules", "protein folding diffusion",
              "reinforcement learning robots", "conformal prediction calibration"]

    def text(kind: str, **ctx: object) -> str:
        if kind in ("title", "abstract"):
            return f"{kind.title()}: {topics[int(ctx['paper']) - 1]} ({ctx['paper']})"
        return default_text(kind, **ctx)

    venue = populate_venue(db, settings, "bidt", Phase.SUBMISSION, n_papers=4, text=text)
    chair = service_as(db, settings, CAST.chair)
    chair.advance_phase(venue)  # bidding
    rev = service_as(db, settings, CAST.reviewers[0])
    sub_titles = {s.id: s.title for s in db.scalars(select(m.Submission).where(
        m.Submission.venue_id == venue.id))}
    target = next(i for i, t in sub_titles.items() if "conformal" in t)
    rev.add_reviewer_paper("Calibrated conformal prediction", "Conformal calibration of "
                           "prediction sets.")
    web_login(client, CAST.reviewers[0], DEMO_PASSWORD)
    assert "/v/bidt/bids" in client.get("/v/bidt").text
    page = client.get("/v/bidt/bids")
    assert page.status_code == 200
    order = [int(x) for x in re.findall(r'name="bid_(\d+)"', page.text)]
    assert len(order) == 4 and order[0] == target  # most similar first
    word = sub_titles[order[1]].split()[1]
    searched = client.get("/v/bidt/bids", params={"q": word}).text
    assert f'name="bid_{order[1]}"' in searched
    r = client.post("/v/bidt/bids", data={"csrf_token": csrf_of(page.text),
                                          f"bid_{order[0]}": "2", f"bid_{order[1]}": "-1",
                                          f"bid_{order[2]}": ""})
    assert r.status_code == 200 and "2 bid(s) saved" in r.text
    assert {b.submission_id: b.value for b in db.scalars(select(m.Bid).where(
        m.Bid.user_id == rev.actor.id))} == {order[0]: 2, order[1]: -1}
    left = client.get("/v/bidt/bids", params={"unbid": "1"}).text
    assert sorted(int(x) for x in re.findall(r'name="bid_(\d+)"', left)) == sorted(order[2:])
    bad = client.post("/v/bidt/bids", data={"csrf_token": csrf_of(page.text),
                                            f"bid_{order[0]}": "9"})
    assert bad.status_code == 400
    web_login(client, CAST.authors[0], DEMO_PASSWORD)
    assert 'name="bid_' not in client.get("/v/bidt/bids").text  # authors bid on nothing


def test_the_chairs_submission_table_shows_each_papers_progress(client, db, settings):
    # before: number, title, role and status only
    populate_venue(db, settings, "prog", Phase.FEEDBACK)
    web_login(client, CAST.chair, DEMO_PASSWORD)
    page = client.get("/v/prog").text
    assert "Reviews in" in page and "Mean score (1–10)" in page
    api = client.get("/api/v1/venues/prog", headers={
        "Authorization": f"Bearer {service_as(db, settings, CAST.chair).create_api_token('t')}"})
    rows = api.json()["submissions"]
    for row in rows:
        p = row["progress"]
        n = db.scalar(select(func.count()).select_from(m.Review).where(
            m.Review.submission_id == row["id"], m.Review.submitted.is_(True)))
        assert p["submitted"] == n and p["missing"] == p["reviewers"] - n
        assert p["mean_score"] is None or 1 <= p["mean_score"] <= 10
    web_login(client, CAST.reviewers[0], DEMO_PASSWORD)
    assert "Reviews in" not in client.get("/v/prog").text  # reviewers do not see progress


def _bearer(db, settings, email: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {service_as(db, settings, email).create_api_token('t')}"}


def _bidding_venue(db, settings, slug: str):
    from icml25.review.demo import default_text

    topics = ["graph neural networks molecules", "protein folding diffusion",
              "reinforcement learning robots", "conformal prediction calibration"]

    def text(kind: str, **ctx: object) -> str:
        if kind in ("title", "abstract"):
            body = f"{kind.title()}: {topics[int(ctx['paper']) - 1]} ({ctx['paper']})"
            return body + (" Long tail of the abstract." * 20 if kind == "abstract" else "")
        return default_text(kind, **ctx)

    venue = populate_venue(db, settings, slug, Phase.SUBMISSION, n_papers=4, text=text)
    service_as(db, settings, CAST.chair).advance_phase(venue)  # bidding
    return venue


def test_the_bidding_console_sorts_counts_and_shows_whole_abstracts(client, db, settings):
    venue = _bidding_venue(db, settings, "bsort")
    subs = db.scalars(select(m.Submission).where(m.Submission.venue_id == venue.id)).all()
    web_login(client, CAST.reviewers[0], DEMO_PASSWORD)
    by_title = client.get("/v/bsort/bids", params={"sort": "title"}).text
    order = [int(x) for x in re.findall(r'name="bid_(\d+)"', by_title)]
    assert order == [s.id for s in sorted(subs, key=lambda s: s.title.lower())]
    by_number = client.get("/v/bsort/bids", params={"sort": "number"}).text
    assert [int(x) for x in re.findall(r'name="bid_(\d+)"', by_number)] == [
        s.id for s in sorted(subs, key=lambda s: s.number)]
    assert "<details><summary>Abstract</summary>" in by_title
    assert subs[0].abstract in by_title  # the whole abstract, not its first 300 characters
    assert "4 paper(s) to bid on, <strong>4 not yet bid</strong>" in by_title
    assert client.get("/v/bsort/bids", params={"sort": "bogus"}).status_code == 400
    # saving keeps the console's filter and sort
    r = client.post("/v/bsort/bids?sort=title&unbid=1",
                    data={"csrf_token": csrf_of(by_title), f"bid_{order[0]}": "1"},
                    follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/v/bsort/bids?unbid=1&sort=title"
    after = client.get(r.headers["location"]).text
    assert "<strong>3 not yet bid</strong>" in after and f'name="bid_{order[0]}"' not in after


def test_the_bidding_console_in_the_api(client, db, settings):
    _bidding_venue(db, settings, "bapi")
    rev = service_as(db, settings, CAST.reviewers[1])
    rev.add_reviewer_paper("Reinforcement learning for robots", "Robots learn by trial.")
    auth = {"Authorization": f"Bearer {rev.create_api_token('t')}"}
    table = client.get("/api/v1/venues/bapi/bidding", headers=auth).json()
    assert table["n_biddable"] == 4 and table["n_unbid"] == 4 and table["sort"] == "affinity"
    top = table["rows"][0]
    assert "robots" in top["title"] and top["affinity"] > max(r["affinity"]
                                                              for r in table["rows"][1:])
    r = client.put("/api/v1/venues/bapi/bids", headers=auth,
                   json={"bids": {str(top["id"]): 2, str(table["rows"][1]["id"]): -2}})
    assert r.status_code == 200 and r.json() == {"changed": 2}
    left = client.get("/api/v1/venues/bapi/bidding", headers=auth,
                      params={"unbid": "true", "q": "diffusion"}).json()
    assert left["n_unbid"] == 2 and all("diffusion" in row["title"] for row in left["rows"])
    assert all(row["my_bid"] is None for row in left["rows"])
    assert client.put("/api/v1/venues/bapi/bids", headers=auth,
                      json={"bids": {str(top["id"]): 7}}).status_code == 400
    assert client.put("/api/v1/venues/bapi/bids", headers=auth,
                      json={"bids": {"999999": 1}}).status_code == 404
    assert client.get("/api/v1/venues/bapi/bidding", headers=auth,
                      params={"sort": "x"}).status_code == 400
    author = service_as(db, settings, CAST.authors[0])
    a_auth = {"Authorization": f"Bearer {author.create_api_token('t')}"}
    assert client.get("/api/v1/venues/bapi/bidding", headers=a_auth).json()["rows"] == []
    bid_ids = {b.submission_id for b in db.scalars(select(m.Bid).where(
        m.Bid.user_id == rev.actor.id))}
    assert bid_ids == {top["id"], table["rows"][1]["id"]}


def _empty_assignment_venue(db, settings, slug: str):
    venue = populate_venue(db, settings, slug, Phase.ASSIGNMENT)
    chair = service_as(db, settings, CAST.chair)
    for a in db.scalars(select(m.Assignment).join(m.Submission).where(
            m.Submission.venue_id == venue.id, m.Assignment.role == "reviewer")).all():
        chair.unassign(a.submission_id, a.user_id)  # the demo pre-assigns; start empty
    subs = db.scalars(select(m.Submission).where(m.Submission.venue_id == venue.id)
                      .order_by(m.Submission.number)).all()
    revs = [db.scalar(select(m.User).where(m.User.email == e)) for e in CAST.reviewers]
    return venue, chair, subs, revs


def test_the_workbench_previews_pins_forbids_loads_and_a_constraint_report(
        client, db, settings):
    venue, chair, subs, revs = _empty_assignment_venue(db, settings, "wb")
    chair.assign(subs[0].id, revs[3].id)  # one current pair, kept by every proposal
    chair.set_pair_constraint(subs[0].id, revs[0].id, "forbid")
    chair.set_pair_constraint(subs[1].id, revs[0].id, "pin")
    auth = {"Authorization": f"Bearer {chair.create_api_token('t')}"}
    wb = client.get("/api/v1/venues/wb/assignment/workbench", headers=auth).json()
    assert wb["n_current_pairs"] == 1
    assert {(c["number"], c["kind"]) for c in wb["constraints"]} == {(1, "forbid"), (2, "pin")}
    assert {u["name"]: u["load"] for u in wb["reviewers"]}[revs[3].name] == 1
    before = db.scalar(select(func.count()).select_from(m.Assignment))
    p = client.post("/api/v1/venues/wb/assignment/preview", headers=auth,
                    json={"objective": "fair"}).json()
    assert db.scalar(select(func.count()).select_from(m.Assignment)) == before  # writes nothing
    assert all(rule["ok"] for rule in p["report"]), p["report"]
    papers = {row["number"]: row for row in p["by_paper"]}
    names = {n: {r["name"] for r in row["reviewers"]} for n, row in papers.items()}
    assert revs[0].name not in names[1] and revs[0].name in names[2]  # forbid, pin
    assert all(len(v) == venue.reviews_per_paper for v in names.values())
    status = {(r["number"], r["name"]): r["status"] for row in p["by_paper"]
              for r in row["reviewers"]}
    assert status[(1, revs[3].name)] == "current" and status[(2, revs[0].name)] == "pinned"
    assert p["compare"] == p["compare"] | {"n_current": 1, "n_kept": 1,
                                            "n_new": 2 * venue.reviews_per_paper - 1}
    loads = {u["name"]: (u["current"], u["proposed"]) for u in p["loads"]}
    assert sum(v[1] for v in loads.values()) == 2 * venue.reviews_per_paper
    assert loads[revs[3].name][0] == 1
    # the report is checked from the pairs, so it notices a broken rule
    from icml25.review.services.workbench import constraint_report

    bundles = {b.submission.id: b for b in chair.bundles(venue)}
    users = {u.id: u for u in revs}
    bad = [{"submission_id": subs[0].id, "user_id": revs[0].id}]
    report = {r["rule"]: r for r in constraint_report(
        bad, bundles, users, {(subs[0].id, revs[0].id): "forbid",
                              (subs[1].id, revs[0].id): "pin"}, 3, 6)}
    assert not report["no forbidden pair"]["ok"] and not report["every pinned pair kept"]["ok"]
    assert not report["every paper has 3 reviewers"]["ok"]
    assert report["no conflicted reviewer"]["ok"]
    # the page form sets and clears rules; bad input is a 400, non-chairs a 403
    web_login(client, CAST.chair, DEMO_PASSWORD)
    page = client.get("/v/wb/assignment").text
    assert "Pins and forbids" in page and "never assign (forbid)" in page
    r = client.post("/v/wb/assignment/pairs", data={
        "csrf_token": csrf_of(page), "submission_id": subs[1].id, "user_id": revs[0].id,
        "kind": "none"})
    assert r.status_code == 200 and "Cleared" in r.text
    assert not db.scalar(select(m.PairConstraint).where(
        m.PairConstraint.submission_id == subs[1].id))
    assert client.post("/v/wb/assignment/pairs", data={
        "csrf_token": csrf_of(page), "submission_id": subs[1].id, "user_id": revs[0].id,
        "kind": "maybe"}).status_code == 400
    chair_id = db.scalar(select(m.User.id).where(m.User.email == CAST.chair))
    assert client.post("/v/wb/assignment/pairs", data={
        "csrf_token": csrf_of(page), "submission_id": subs[1].id, "user_id": chair_id,
        "kind": "pin"}).status_code == 400  # not a reviewer of the venue
    shown = client.post("/v/wb/assignment", data={"csrf_token": csrf_of(page),
                                                  "objective": "total"}).text
    assert "Constraint report" in shown and "✗" not in shown and "Per reviewer" in shown
    rev_auth = _bearer(db, settings, CAST.reviewers[0])
    assert client.get("/api/v1/venues/wb/assignment/workbench",
                      headers=rev_auth).status_code == 403
    assert client.post("/api/v1/venues/wb/assignment/preview", headers=rev_auth,
                       json={}).status_code == 403
