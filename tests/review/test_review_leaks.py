"""Leak scan: at every phase, crawl every page and API response an author, each reviewer and the
area chair can reach, and look for things they must not see (marker strings planted in the
data): stage-2 text before the authors rated, reviewer identities for authors, author identities
for reviewers and area chairs, individual ratings for anyone but chairs; and of the fields the
venue's review form adds, a stage-2 one before the authors rated, a committee one for authors,
a chairs' one for authors and other reviewers."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient
from review_helpers import web_login
from sqlalchemy import select

from icml25.review import models as m
from icml25.review.demo import DEMO_PASSWORD, Cast, default_text, populate_venue
from icml25.review.service import ReviewService
from icml25.review.web import create_app
from icml25.review.workflow import PHASE_ORDER, Phase

CAST = Cast()
AUTHOR_DOMAINS = ("uni-a.example", "uni-b.example")
REVIEWER_DOMAINS = ("r1-uni.example", "r2-uni.example", "r3-uni.example", "r4-lab.example")


def marker_text(kind: str, **ctx: object) -> str:
    """Demo texts with greppable markers in everything that must stay hidden from someone."""
    marks = {
        "weaknesses": "ZZWEAK-P{paper}-R{rev} the evaluation is thin",
        "reviewer_name": "ZZREVNAME{i}",
        "author_name": "ZZAUTHNAME{i}",
        "affiliation": "ZZAFFIL{i}",
        "llm_comment": "ZZRATECOMMENT-P{paper}",
        "post": "ZZPOST-P{paper} discussion",
        "meta": "ZZMETA-P{paper} meta-review",
        "answer": "ZZANS-{key}-U{i}-P{paper}-",  # the added fields of the review form
    }
    return marks[kind].format(**ctx) if kind in marks else default_text(kind, **ctx)


# the venue's review form adds a stage-2 field for authors, a committee and a chairs' field
LEAK_FORM = (
    {"key": "later", "label": "After rating", "kind": "text", "stage": 2},
    {"key": "committee", "label": "For the committee", "kind": "text", "audience": "committee"},
    {"key": "chairs", "label": "For the chairs", "kind": "text", "audience": "chairs"},
)
HREF = re.compile(r'href="(/[^"#]*)"')


def crawl(client: TestClient, extra: list[str]) -> dict[str, str]:
    """Every same-site page reachable from the dashboard by links, plus ``extra`` URLs."""
    seen: dict[str, str] = {}
    queue = ["/", *extra]
    while queue:
        url = queue.pop()
        if url in seen or url.startswith("/api/v1/docs"):
            continue
        r = client.get(url)
        assert r.status_code < 500, (url, r.status_code)
        if r.headers.get("content-type", "").startswith("application/pdf"):
            seen[url] = ""
            continue
        seen[url] = r.text
        if r.headers.get("content-type", "").startswith("text/html"):
            queue.extend(u.replace("&amp;", "&") for u in HREF.findall(r.text))
    return seen


def api_dump(client: TestClient, token: str, slug: str, sub_ids: list[int]) -> dict[str, str]:
    h = {"Authorization": f"Bearer {token}"}
    urls = ["/api/v1/me", "/api/v1/venues", f"/api/v1/venues/{slug}",
            f"/api/v1/venues/{slug}/export", f"/api/v1/venues/{slug}/my-feedback",
            *(f"/api/v1/submissions/{i}" for i in sub_ids)]
    out = {}
    for u in urls:
        r = client.get(u, headers=h)
        assert r.status_code < 500, (u, r.status_code)
        out[u] = r.text
    return out


def assert_absent(pages: dict[str, str], needles: list[str], who: str, phase: Phase) -> None:
    for url, body in pages.items():
        for n in needles:
            assert n not in body, f"{who} sees {n!r} at {url} in phase {phase}"


def test_leak_scan_every_phase(db, settings, engine):
    clients: dict[str, TestClient] = {}
    tokens: dict[str, str] = {}
    checked = {"pages": 0, "phases": 0}
    app = create_app(settings, engine)

    def viewers() -> dict[str, str]:
        v = {"author": CAST.authors[0], "ac": CAST.ac}
        v.update({f"reviewer{i + 1}": e for i, e in enumerate(CAST.reviewers)})
        return v

    def on_phase(phase: Phase) -> None:
        venue = db.scalar(select(m.Venue).where(m.Venue.slug == "leaky"))
        db.refresh(venue)
        sub_ids = sorted(db.scalars(select(m.Submission.id).where(
            m.Submission.venue_id == venue.id)))
        numbers = {i: n for i, n in db.execute(select(m.Submission.id, m.Submission.number))}
        if not clients:
            for name, email in viewers().items():
                c = TestClient(app)
                web_login(c, email, DEMO_PASSWORD)
                clients[name] = c
                user = db.scalar(select(m.User).where(m.User.email == email))
                tokens[name] = ReviewService(db, settings, user).create_api_token("scan")
        extra = [f"/s/{i}" for i in sub_ids] + [f"/s/{i}/pdf" for i in sub_ids] + [
            "/v/leaky", "/v/leaky/export.json", "/v/leaky/admin", "/tokens"]
        for name, c in clients.items():
            if phase_before(phase, Phase.ASSIGNMENT) and name not in ("author", "reviewer1"):
                continue  # nobody is assigned yet: every committee member sees what reviewer1 sees
            pages = crawl(c, extra)
            pages.update(api_dump(c, tokens[name], "leaky", sub_ids))
            checked["pages"] += len(pages)
            never = ["ZZRATECOMMENT"]  # individual ratings: chairs only
            if name == "author":
                never += ["ZZREVNAME", *REVIEWER_DOMAINS, "ZZPOST", "ZZANS-committee",
                          "ZZANS-chairs"]
                if phase is not Phase.NOTIFICATION:
                    never.append("ZZMETA")
                for sid in sub_ids:
                    n = numbers[sid]
                    released = phase in PHASE_ORDER[PHASE_ORDER.index(Phase.REBUTTAL):] or (
                        phase is Phase.FEEDBACK and n == 1)  # paper 1: all reviews rated
                    if not released:
                        never += [f"ZZWEAK-P{n}-", *(f"ZZANS-later-U{j}-P{n}-"
                                                     for j in range(1, 5))]
                        page = pages[f"/s/{sid}"]
                        assert "<h4>Weaknesses</h4>" not in page and "Score:" not in page
                        for rv in c.get(f"/api/v1/submissions/{sid}", headers={
                                "Authorization": f"Bearer {tokens[name]}"}).json()["reviews"]:
                            assert not {"weaknesses", "score", "confidence"} & set(rv)
                    elif phase is not Phase.SUBMISSION and n == 1 and at_or_after(
                            phase, Phase.FEEDBACK):
                        # the scan must be able to see released text, or it proves nothing
                        assert any(f"ZZWEAK-P{n}-" in body for body in pages.values())
                        assert any(f"ZZANS-later-U{j}-P{n}-" in body
                                   for body in pages.values() for j in range(1, 5))
            else:
                never += ["ZZAUTHNAME", "ZZAFFIL", *AUTHOR_DOMAINS]
                if name.startswith("reviewer"):
                    i = int(name[-1])
                    never += [f"ZZREVNAME{j}" for j in range(1, 5) if j != i]
                    never += [d for j, d in enumerate(REVIEWER_DOMAINS, 1) if j != i]
                    never += [f"ZZANS-chairs-U{j}-" for j in range(1, 5) if j != i]
                    if phase is not Phase.NOTIFICATION:
                        never.append("ZZMETA")
            assert_absent(pages, never, name, phase)
        checked["phases"] += 1

    populate_venue(db, settings, "leaky", Phase.NOTIFICATION, text=marker_text,
                   on_phase=on_phase, form=LEAK_FORM)
    assert checked["phases"] == len(PHASE_ORDER)
    assert checked["pages"] > 150
    # the chair, and only the chair, sees the individual ratings and identities
    chair = TestClient(app)
    web_login(chair, CAST.chair, DEMO_PASSWORD)
    admin = chair.get("/v/leaky/admin").text
    assert "ZZRATECOMMENT" in admin and "ZZREVNAME1" in admin
    # every added field reaches the chair (else the scan above proves nothing about them)
    page = chair.get("/v/leaky/export.json").text
    assert all(f"ZZANS-{k}-" in page for k in ("later", "committee", "chairs"))
    # reviewers with fewer than 3 ratings get no aggregate, even after notification
    page = clients["reviewer1"].get("/v/leaky").text
    assert "fewer than 3 ratings" in page


def phase_before(phase: Phase, other: Phase) -> bool:
    return PHASE_ORDER.index(phase) < PHASE_ORDER.index(other)


def at_or_after(phase: Phase, other: Phase) -> bool:
    return PHASE_ORDER.index(phase) >= PHASE_ORDER.index(other)
