"""Custom decision types per venue: a venue's list is validated
in one place, decisions accept only its keys, authors read the label at notification, a type in
use cannot be dropped, only chairs change the list; migration 0005 keeps accept / reject."""

from __future__ import annotations

import pytest
from review_helpers import csrf_of, service_as, web_login
from sqlalchemy import select

from icml25.review import models as m
from icml25.review.decisions import DEFAULT_TYPES, DecisionTypeError, clean_types, parse_lines
from icml25.review.demo import DEMO_PASSWORD, Cast, populate_venue
from icml25.review.errors import NotAllowed, ServiceError
from icml25.review.workflow import Phase

CAST = Cast()
ORAL_POSTER = [{"key": "oral", "label": "Accept (oral)", "accepted": True},
               {"key": "poster", "label": "Accept (poster)", "accepted": True},
               {"key": "reject", "label": "Reject", "accepted": False}]


@pytest.mark.parametrize("rows, why", [
    ([{"key": "accept", "label": "A", "accepted": True}], "between 2"),
    ([{"key": "Oral!", "label": "A", "accepted": True},
      {"key": "reject", "label": "R", "accepted": False}], "key"),
    ([{"key": "oral", "label": "A", "accepted": True},
      {"key": "oral", "label": "B", "accepted": False}], "once"),
    ([{"key": "oral", "label": "A", "accepted": True},
      {"key": "poster", "label": "B", "accepted": True}], "one must reject"),
    ([{"key": "oral", "label": "", "accepted": True},
      {"key": "reject", "label": "R", "accepted": False}], "label"),
    ([{"key": "oral", "label": "A", "accepted": "yes"},
      {"key": "reject", "label": "R", "accepted": False}], "accepts"),
])
def test_a_list_of_decision_types_is_checked_in_one_place(rows, why):
    with pytest.raises(DecisionTypeError, match=why):
        clean_types(rows)


def test_the_admin_form_lines_parse_into_types():
    rows = parse_lines("oral | Accept (oral) | accept\n\nreject | Reject | REJECT\n")
    assert [t.key for t in clean_types(rows)] == ["oral", "reject"]
    with pytest.raises(DecisionTypeError, match="line 1"):
        parse_lines("oral, Accept")


def test_decisions_use_the_venues_types_and_authors_read_the_label(client, db, settings):
    venue = populate_venue(db, settings, "dt", Phase.META_REVIEW)
    chair = service_as(db, settings, CAST.chair)
    assert chair.decision_types(venue) == [
        {"key": t.key, "label": t.label, "accepted": t.accepted} for t in DEFAULT_TYPES]
    chair.set_decision_types(venue, ORAL_POSTER)
    chair.advance_phase(venue)  # decision
    subs = db.scalars(select(m.Submission).where(m.Submission.venue_id == venue.id)
                      .order_by(m.Submission.number)).all()
    with pytest.raises(ServiceError, match="oral, poster, reject"):
        chair.decide(subs[0].id, "accept")  # no longer a type of this venue
    chair.decide(subs[0].id, "oral")
    with pytest.raises(ServiceError, match="already use 'oral'"):
        chair.set_decision_types(venue, ORAL_POSTER[1:])
    with pytest.raises(NotAllowed):
        service_as(db, settings, CAST.ac).set_decision_types(venue, ORAL_POSTER)
    # the chair's page offers exactly the venue's types, nothing preselected
    web_login(client, CAST.chair, DEMO_PASSWORD)
    page = client.get(f"/s/{subs[1].id}").text
    select_html = page[page.index('<select id="outcome"'):]
    select_html = select_html[:select_html.index("</select>")]
    assert "Accept (poster) (accepts)" in select_html and 'value="accept"' not in select_html
    assert select_html.count(" selected") == 1 and "disabled" in select_html
    r = client.post(f"/s/{subs[1].id}/decision", data={"csrf_token": csrf_of(page),
                                                       "outcome": "poster"})
    assert r.status_code == 200 and "Decision recorded" in r.text
    assert client.post(f"/s/{subs[1].id}/decision", data={
        "csrf_token": csrf_of(page), "outcome": "maybe"}).status_code == 400
    # the admin form
    admin = client.get("/v/dt/admin").text
    assert "oral | Accept (oral) | accept" in admin
    bad = client.post("/v/dt/decision-types", data={"csrf_token": csrf_of(admin),
                                                     "lines": "oral | Oral"})
    assert bad.status_code == 400
    ok = client.post("/v/dt/decision-types", data={
        "csrf_token": csrf_of(admin),
        "lines": "oral | Accept (oral) | accept\nposter | Accept (poster) | accept\n"
                 "spotlight | Accept (spotlight) | accept\nreject | Reject | reject"})
    assert ok.status_code == 200 and "Accept (spotlight)" in ok.text
    # authors see the label at notification; the API answers the same list
    chair.advance_phase(venue)
    author = service_as(db, settings, db.get(m.User, subs[0].submitter_id).email)
    view = author.submission_page(subs[0].id)
    assert view["decision"] == "oral" and view["decision_label"] == "Accept (oral)"
    token = author.create_api_token("t")
    api = client.get("/api/v1/venues/dt/decision-types",
                     headers={"Authorization": f"Bearer {token}"}).json()
    assert [t["key"] for t in api] == ["oral", "poster", "spotlight", "reject"]
    put = client.put("/api/v1/venues/dt/decision-types",
                     headers={"Authorization": f"Bearer {token}"}, json={"types": ORAL_POSTER})
    assert put.status_code == 403


def test_chairs_set_decision_types_through_the_api(client, db, settings):
    populate_venue(db, settings, "dtapi", Phase.SUBMISSION)
    token = service_as(db, settings, CAST.chair).create_api_token("t")
    auth = {"Authorization": f"Bearer {token}"}
    r = client.put("/api/v1/venues/dtapi/decision-types", headers=auth,
                   json={"types": ORAL_POSTER})
    assert r.status_code == 200 and [t["key"] for t in r.json()] == ["oral", "poster", "reject"]
    bad = client.put("/api/v1/venues/dtapi/decision-types", headers=auth,
                     json={"types": ORAL_POSTER[:2]})
    assert bad.status_code == 400 and "reject" in bad.json()["detail"]
    assert client.put("/api/v1/venues/dtapi/decision-types", headers=auth,
                      json={"types": [{"key": "x"}]}).status_code == 422


def test_rebuttals_are_held_to_the_venues_length_limit(client, db, settings):
    venue = populate_venue(db, settings, "reb", Phase.REBUTTAL)
    chair = service_as(db, settings, CAST.chair)
    assert venue.max_rebuttal_chars == 5000  # the default
    with pytest.raises(ServiceError, match="from 100 to 20000"):
        chair.set_rebuttal_limit(venue, 50)
    with pytest.raises(NotAllowed):
        service_as(db, settings, CAST.reviewers[0]).set_rebuttal_limit(venue, 200)
    sub = db.scalar(select(m.Submission).where(m.Submission.venue_id == venue.id,
                                               m.Submission.number == 1))
    author_email = db.get(m.User, sub.submitter_id).email
    web_login(client, CAST.chair, DEMO_PASSWORD)
    admin = client.get("/v/reb/admin").text
    r = client.post("/v/reb/rebuttal-limit", data={"csrf_token": csrf_of(admin),
                                                   "max_chars": "200"})
    assert r.status_code == 200 and "limited to 200 characters" in r.text
    web_login(client, author_email, DEMO_PASSWORD)
    page = client.get(f"/s/{sub.id}").text
    assert 'maxlength="200"' in page and "(at most 200 characters)" in page
    review = chair.bundle(sub.id).submitted_reviews()[0]
    too_long = client.post(f"/r/{review.id}/rebuttal", data={"csrf_token": csrf_of(page),
                                                            "text": "x" * 201})
    assert too_long.status_code == 400 and "201 characters" in too_long.text
    ok = client.post(f"/r/{review.id}/rebuttal", data={"csrf_token": csrf_of(page),
                                                      "text": "y" * 200})
    assert ok.status_code == 200
    db.expire_all()
    assert db.scalar(select(m.Rebuttal.text).where(m.Rebuttal.review_id == review.id)) == \
        "y" * 200
    token = chair.create_api_token("t")
    api = client.put("/api/v1/venues/reb/rebuttal-limit", json={"max_chars": 3000},
                     headers={"Authorization": f"Bearer {token}"})
    assert api.status_code == 200 and api.json() == {"max_chars": 3000}


@pytest.mark.parametrize("template, why", [
    ("Dear {reviewer}", "unknown field"), ("a { b", "stray brace"),
    ("{title:>999999}", "plainly"), ("{title.__class__}", "unknown field"), ("", "1-5000")])
def test_a_decision_mail_template_may_use_only_its_fields(template, why):
    from icml25.review.decisions import clean_mail

    with pytest.raises(DecisionTypeError, match=why):
        clean_mail(template)


def test_authors_get_the_venues_decision_mail_at_notification(client, db, settings):
    venue = populate_venue(db, settings, "mail", Phase.META_REVIEW)
    chair = service_as(db, settings, CAST.chair)
    chair.set_decision_types(venue, ORAL_POSTER)
    with pytest.raises(ServiceError, match="unknown field"):
        chair.set_decision_mail(venue, "Reviewed by {reviewer}")
    with pytest.raises(NotAllowed):
        service_as(db, settings, CAST.ac).set_decision_mail(venue, "x")
    web_login(client, CAST.chair, DEMO_PASSWORD)
    admin = client.get("/v/mail/admin").text
    assert "the decision on submission #{number}" in admin  # the default, editable
    r = client.post("/v/mail/decision-mail", data={
        "csrf_token": csrf_of(admin),
        "template": "Paper #{number} ({title}) at {venue}: {decision}. Congratulations?"})
    assert r.status_code == 200 and "Decision e-mail saved" in r.text
    db.expire_all()  # the page wrote through its own session
    chair.advance_phase(venue)  # decision
    subs = db.scalars(select(m.Submission).where(m.Submission.venue_id == venue.id)
                      .order_by(m.Submission.number)).all()
    chair.decide(subs[0].id, "poster")
    chair.decide(subs[1].id, "reject")
    chair.advance_phase(venue)  # notification: the e-mails go to the outbox
    mails = db.scalars(select(m.Email).where(m.Email.venue_id == venue.id,
                                             m.Email.submission_id == subs[0].id,
                                             m.Email.subject.like("%Decision%"))).all()
    authors = {a.email for a in db.scalars(select(m.SubmissionAuthor).where(
        m.SubmissionAuthor.submission_id == subs[0].id))}
    assert {e.to_addr for e in mails} == authors
    assert all(e.body == f"Paper #1 ({subs[0].title}) at {venue.name}: Accept (poster). "
               "Congratulations?" for e in mails)
    other = db.scalar(select(m.Email.body).where(m.Email.submission_id == subs[1].id,
                                                 m.Email.subject.like("%Decision%")))
    assert other.endswith(": Reject. Congratulations?")
    token = chair.create_api_token("t")
    bad = client.put("/api/v1/venues/mail/decision-mail", json={"template": "{x}"},
                     headers={"Authorization": f"Bearer {token}"})
    assert bad.status_code == 400
