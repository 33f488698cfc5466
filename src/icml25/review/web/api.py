"""The JSON API under ``/api/v1`` (personal access tokens; OpenAPI at ``/api/v1/openapi.json``).

Bodies and answers are the typed models of :mod:`.schemas`; views of venues and submissions are
returned as the authority renders them. Every route calls one service method.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

from fastapi import FastAPI, Header, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse
from starlette.concurrency import run_in_threadpool

from icml25.review.authority import public
from icml25.review.errors import NotFound
from icml25.review.web import schemas as sc
from icml25.review.web.deps import P, S, one_hop

DOCS_ASSETS = frozenset({"swagger-ui-bundle.js", "swagger-ui.css", "favicon-32x32.png"})


def api(settings, maker) -> FastAPI:  # noqa: ANN001
    app = FastAPI(title="icml25 review API", version="1", docs_url=None, redoc_url=None,
                  openapi_url=None,
                  description="Personal access tokens (create them at /tokens) go in "
                              "`Authorization: Bearer <token>`. Every response is filtered by "
                              "the same authority as the web pages.")
    app.state.maker, app.state.settings = maker, settings

    @app.get("/openapi.json", include_in_schema=False)
    def openapi() -> JSONResponse:
        public()
        return JSONResponse(app.openapi())

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        public()
        return get_swagger_ui_html(
            openapi_url="/api/v1/openapi.json", title="icml25 review API",
            swagger_js_url="/api/v1/docs/assets/swagger-ui-bundle.js",
            swagger_css_url="/api/v1/docs/assets/swagger-ui.css",
            swagger_favicon_url="/api/v1/docs/assets/favicon-32x32.png")

    @app.get("/docs/assets/{name}", include_in_schema=False)
    def docs_asset(name: str) -> FileResponse:
        # Swagger UI's files from the swagger-ui-bundle-v2 package: the docs work offline
        public()
        if name not in DOCS_ASSETS:
            raise NotFound("no such file")
        from swagger_ui_bundle import swagger_ui_path

        return FileResponse(Path(swagger_ui_path) / name)

    @app.get("/me", summary="The token's user", response_model=sc.MeOut)
    @one_hop
    def me(s: S) -> dict:
        return s.me()

    @app.put("/me/profile", summary="Make your reviewer profile public (or private)",
             response_model=sc.Ok)
    @one_hop
    def set_profile(s: S, body: sc.ProfileIn) -> sc.Ok:
        s.set_profile_public(body.public)
        return sc.Ok()

    @app.get("/venues", summary="Venues you take part in or may submit to",
             response_model=list[sc.View])
    @one_hop
    def venues(s: S) -> list[dict]:
        return s.venues_for_actor()

    @app.get("/venues/{slug}", summary="A venue and the submissions you may see",
             response_model=sc.View)
    @one_hop
    def venue(s: S, slug: str) -> dict:
        return s.venue_page(s.venue(slug))

    @app.get("/venues/{slug}/submissions-table", response_model=sc.View,
             summary="Every submission's progress, searchable and sortable (chairs)")
    @one_hop
    def submissions_table(s: S, slug: str, q: str = "", sort: str = "number",
                          desc: bool = False) -> dict:
        return s.submissions_table(s.venue(slug), query=q, sort=sort, descending=desc)

    @app.get("/venues/{slug}/export", summary="The venue as you may see it",
             response_model=sc.View)
    @one_hop
    def export(s: S, slug: str) -> dict:
        return s.export(s.venue(slug))

    @app.get("/venues/{slug}/my-feedback", summary="Aggregate author feedback on your reviews",
             response_model=sc.View)
    @one_hop
    def my_feedback(s: S, slug: str) -> dict:
        return s.my_feedback(s.venue(slug))

    @app.post("/venues/{slug}/advance", summary="Move the venue to its next phase (chairs)",
              response_model=sc.PhaseOut)
    @one_hop
    def advance(s: S, slug: str, body: sc.AdvanceIn) -> sc.PhaseOut:
        return sc.PhaseOut(phase=s.advance_phase(s.venue(slug), force=body.force).value)

    @app.post("/venues/{slug}/members", status_code=201, summary="Add a member (chairs)",
              response_model=sc.MemberOut)
    @one_hop
    def add_member(s: S, slug: str, body: sc.MemberIn) -> sc.MemberOut:
        ms = s.add_member(s.venue(slug), body.email, body.role)
        return sc.MemberOut(user_id=ms.user_id, role=ms.role)

    @app.put("/venues/{slug}/timeline", summary="Set phase deadlines (chairs)",
             response_model=sc.TimelineOut)
    @one_hop
    def set_timeline(s: S, slug: str, body: dict[str, str]) -> sc.TimelineOut:
        v = s.venue(slug)
        s.set_timeline(v, body)
        return sc.TimelineOut(timeline=json.loads(v.timeline))

    @app.post("/venues/{slug}/auto-assign", summary="Optimal reviewer assignment (chairs); "
              "with 'Prefer: respond-async' a job: 202 with its job_id",
              response_model=sc.NewAssignmentsOut)
    @one_hop
    def auto(s: S, slug: str, prefer: Annotated[str, Header()] = "") -> Any:
        if "respond-async" in prefer.lower():  # RFC 7240: the solve runs on a worker
            return JSONResponse({"job_id": s.start_auto_assign(s.venue(slug))}, status_code=202)
        return sc.NewAssignmentsOut(new_assignments=s.auto_assign(s.venue(slug)))

    @app.post("/venues/{slug}/submissions", status_code=201, summary="Create a submission",
              response_model=sc.CreatedOut)
    @one_hop
    def create(s: S, slug: str, body: sc.SubmissionIn) -> sc.CreatedOut:
        sub = s.submit(s.venue(slug), title=body.title, abstract=body.abstract,
                       keywords=body.keywords, authors=[a.model_dump() for a in body.authors],
                       declared_conflicts=body.declared_conflicts)
        return sc.CreatedOut(id=sub.id, number=sub.number)

    @app.put("/submissions/{sid}/pdf", summary="Upload the PDF (raw application/pdf body)",
             response_model=sc.Ok)
    async def upload(s: S, sid: int, request: Request) -> sc.Ok:
        # the body is already capped at max_request_bytes; the service checks the venue limit
        data = await request.body()
        await run_in_threadpool(s.update_submission, sid, pdf=data)
        return sc.Ok()

    @app.patch("/submissions/{sid}", summary="Edit a submission (authors, submission phase)",
               response_model=sc.Ok)
    @one_hop
    def edit(s: S, sid: int, body: sc.SubmissionEdit) -> sc.Ok:
        s.update_submission(sid, title=body.title, abstract=body.abstract,
                            keywords=body.keywords,
                            authors=[a.model_dump() for a in body.authors]
                            if body.authors is not None else None)
        return sc.Ok()

    @app.post("/submissions/{sid}/withdraw", summary="Withdraw a submission (authors)",
              response_model=sc.Ok)
    @one_hop
    def withdraw(s: S, sid: int) -> sc.Ok:
        s.withdraw(sid)
        return sc.Ok()

    @app.delete("/submissions/{sid}/assignments/{uid}", summary="Unassign (chairs)",
                response_model=sc.Ok)
    @one_hop
    def unassign(s: S, sid: int, uid: int) -> sc.Ok:
        s.unassign(sid, uid)
        return sc.Ok()

    @app.get("/submissions/{sid}", summary="One submission as you may see it",
             response_model=sc.View)
    @one_hop
    def submission(s: S, sid: int) -> dict:
        return s.submission_page(sid)

    @app.post("/submissions/{sid}/bid", summary="Bid on a submission (reviewers, bidding)",
              response_model=sc.Ok)
    @one_hop
    def bid(s: S, sid: int, body: sc.BidIn) -> sc.Ok:
        s.bid(sid, body.value)
        return sc.Ok()

    @app.get("/venues/{slug}/bidding", response_model=sc.View,
             summary="The bidding console: papers you may bid on, with affinity and your bid")
    @one_hop
    def bidding(s: S, slug: str, q: str = "", unbid: bool = False,
                sort: str = "affinity") -> dict:
        return s.bidding_table(s.venue(slug), query=q, only_unbid=unbid, sort=sort)

    @app.put("/venues/{slug}/bids", summary="Save several bids at once (one transaction)",
             response_model=sc.ChangedOut)
    @one_hop
    def save_bids(s: S, slug: str, body: sc.BidsIn) -> sc.ChangedOut:
        return sc.ChangedOut(changed=s.save_bids(s.venue(slug), body.bids))

    @app.post("/submissions/{sid}/assignments", summary="Assign a reviewer or AC (chairs)",
              response_model=sc.AssignmentOut)
    @one_hop
    def assign(s: S, sid: int, body: sc.AssignIn) -> sc.AssignmentOut:
        a = s.assign(sid, body.user_id, body.role)
        return sc.AssignmentOut(id=a.id, pseudonym=a.pseudonym)

    @app.post("/submissions/{sid}/review", summary="Write your review (both stages)",
              response_model=sc.ReviewOut)
    @one_hop
    def review(s: S, sid: int, body: sc.ReviewIn) -> sc.ReviewOut:
        r = s.save_review(sid, **body.model_dump())
        return sc.ReviewOut(id=r.id, submitted=r.submitted, form_version=r.form_version)

    @app.get("/venues/{slug}/review-form", response_model=sc.ReviewFormOut,
             summary="The venue's review form, or an earlier version of it (its committee)")
    @one_hop
    def review_form(s: S, slug: str, version: int | None = None) -> dict:
        return s.review_form(s.venue(slug), version)

    @app.put("/venues/{slug}/review-form", response_model=sc.ReviewFormOut,
             summary="Save the fields added to the fixed ones as the next form version "
                     "(chairs, until reviews go to the authors)")
    @one_hop
    def set_review_form(s: S, slug: str, body: sc.ReviewFormIn) -> dict:
        return s.save_review_form(s.venue(slug), [f.model_dump() for f in body.fields])

    @app.post("/reviews/{rid}/feedback", summary="Rate a review (authors, feedback phase)",
              response_model=sc.Ok)
    @one_hop
    def feedback(s: S, rid: int, body: sc.FeedbackIn) -> sc.Ok:
        s.give_feedback(rid, **body.model_dump())
        return sc.Ok()

    @app.post("/reviews/{rid}/rebuttal", summary="Reply to a review (authors)",
              response_model=sc.Ok)
    @one_hop
    def rebuttal(s: S, rid: int, body: sc.TextIn) -> sc.Ok:
        s.write_rebuttal(rid, body.text)
        return sc.Ok()

    @app.post("/submissions/{sid}/discussion", summary="Post in the pseudonymous discussion",
              response_model=sc.Ok)
    @one_hop
    def discuss(s: S, sid: int, body: sc.TextIn) -> sc.Ok:
        s.post_discussion(sid, body.text)
        return sc.Ok()

    @app.post("/submissions/{sid}/metareview", summary="Write the meta-review (area chair)",
              response_model=sc.Ok)
    @one_hop
    def meta(s: S, sid: int, body: sc.MetaIn) -> sc.Ok:
        s.write_metareview(sid, body.text, body.recommendation)
        return sc.Ok()

    @app.get("/venues/{slug}/decision-types", response_model=list[sc.View],
             summary="The venue's decision types (members and authors)")
    @one_hop
    def decision_types(s: S, slug: str) -> list[dict]:
        return s.decision_types(s.venue(slug))

    @app.put("/venues/{slug}/decision-types", response_model=list[sc.View],
             summary="Replace the venue's decision types, e.g. oral, poster, reject (chairs)")
    @one_hop
    def set_decision_types(s: S, slug: str, body: sc.DecisionTypesIn) -> list[dict]:
        return s.set_decision_types(s.venue(slug), [t.model_dump() for t in body.types])

    @app.put("/venues/{slug}/decision-mail", response_model=sc.DecisionMailIn,
             summary="The e-mail authors get at notification: {number}, {title}, {venue}, "
                     "{decision} (chairs)")
    @one_hop
    def set_decision_mail(s: S, slug: str, body: sc.DecisionMailIn) -> sc.DecisionMailIn:
        return sc.DecisionMailIn(template=s.set_decision_mail(s.venue(slug), body.template))

    @app.put("/venues/{slug}/rebuttal-limit", response_model=sc.RebuttalLimitIn,
             summary="The most characters of one rebuttal, 100-20000 (chairs)")
    @one_hop
    def set_rebuttal_limit(s: S, slug: str, body: sc.RebuttalLimitIn) -> sc.RebuttalLimitIn:
        return sc.RebuttalLimitIn(max_chars=s.set_rebuttal_limit(s.venue(slug), body.max_chars))

    @app.post("/submissions/{sid}/decision", summary="Decide (program chairs)",
              response_model=sc.Ok)
    @one_hop
    def decide(s: S, sid: int, body: sc.DecisionIn) -> sc.Ok:
        s.decide(sid, body.outcome)
        return sc.Ok()

    # ---- assignment at scale, rewards and credentials
    @app.post("/venues/{slug}/assignment/proposal", response_model=sc.View,
              summary="Solve the assignment and show its quality; writes nothing (chairs)")
    @one_hop
    def proposal(s: S, slug: str, body: sc.ProposalIn) -> dict:
        return s.propose_assignment(s.venue(slug), **body.model_dump())

    @app.get("/venues/{slug}/assignment/workbench", response_model=sc.View,
             summary="The current assignment, loads, pins and forbids (chairs)")
    @one_hop
    def workbench(s: S, slug: str) -> dict:
        return s.assignment_workbench(s.venue(slug))

    @app.post("/venues/{slug}/assignment/preview", response_model=sc.View,
              summary="The proposal per paper and reviewer, its constraint report and its "
                      "comparison with the current assignment; writes nothing (chairs)")
    @one_hop
    def preview(s: S, slug: str, body: sc.ProposalIn) -> dict:
        return s.preview_assignment(s.venue(slug), **body.model_dump())

    @app.post("/venues/{slug}/assignment/commit", summary="Write reviewed pairs (chairs)",
              response_model=sc.NewAssignmentsOut)
    @one_hop
    def commit(s: S, slug: str, body: sc.CommitIn) -> sc.NewAssignmentsOut:
        return sc.NewAssignmentsOut(new_assignments=s.commit_assignment(s.venue(slug),
                                                                        body.pairs))

    @app.put("/submissions/{sid}/pairs/{uid}", summary="Pin, forbid or clear a pair (chairs)",
             response_model=sc.Ok)
    @one_hop
    def pair(s: S, sid: int, uid: int, body: sc.PairIn) -> sc.Ok:
        s.set_pair_constraint(sid, uid, body.kind)
        return sc.Ok()

    @app.post("/me/papers", status_code=201, summary="Add one of your past papers",
              response_model=sc.IdOut)
    @one_hop
    def add_paper(s: S, body: sc.PaperIn) -> sc.IdOut:
        return sc.IdOut(id=s.add_reviewer_paper(body.title, body.abstract).id)

    @app.post("/reviews/{rid}/ac-rating", summary="Rate a review 1-5 (area chair)",
              response_model=sc.Ok)
    @one_hop
    def ac_rating(s: S, rid: int, body: sc.RatingIn) -> sc.Ok:
        s.rate_review(rid, body.rating)
        return sc.Ok()

    @app.get("/venues/{slug}/quality", summary="Reviewers' quality scores (chairs)",
             response_model=list[sc.View])
    @one_hop
    def quality(s: S, slug: str) -> list[dict]:
        return s.quality_scores(s.venue(slug))

    @app.get("/venues/{slug}/my-quality", summary="Your quality score and its formula",
             response_model=sc.View)
    @one_hop
    def my_quality(s: S, slug: str) -> dict:
        return s.my_quality(s.venue(slug))

    @app.post("/venues/{slug}/close", summary="Award badges at venue close (chairs)",
              response_model=sc.BadgesOut)
    @one_hop
    def close(s: S, slug: str) -> sc.BadgesOut:
        return sc.BadgesOut(badges=s.close_venue(s.venue(slug)))

    @app.put("/venues/{slug}/citations", summary="Import citation counts, CSV body (chairs)",
             response_model=sc.RowsOut)
    async def citations(s: S, slug: str, request: Request) -> sc.RowsOut:
        text = (await request.body()).decode("utf-8", errors="replace")
        rows = await run_in_threadpool(lambda: s.import_citations(s.venue(slug), text))
        return sc.RowsOut(rows=rows)

    @app.get("/venues/{slug}/impact", summary="Reviewer impact scores (chairs)",
             response_model=list[sc.View])
    @one_hop
    def impact(s: S, slug: str) -> list[dict]:
        return s.reviewer_impact(s.venue(slug))

    @app.get("/me/badges", summary="Your badges as signed credentials",
             response_model=list[sc.View])
    @one_hop
    def my_badges(s: S) -> list[dict]:
        return s.my_badges()

    @app.get("/venues/{slug}/public-key", summary="The venue's credential key (public)",
             response_model=sc.PublicKeyOut)
    @one_hop
    def public_key(p: P, slug: str) -> dict:
        public()
        return p.venue_public_key(p.venue(slug))

    @app.get("/reviewers/{uid}/profile", response_model=sc.ProfileOut,
             summary="Public reviewer profile with badges (opted-in or badged reviewers only)")
    @one_hop
    def profile(p: P, uid: int) -> dict:
        return p.reviewer_profile(uid)

    @app.post("/credentials/verify", summary="Verify a badge credential (public)",
              response_model=sc.VerifyOut)
    @one_hop
    def verify_credential(p: P, body: dict[str, Any]) -> dict:
        public()
        return p.verify_credential(body)

    from icml25.review.web.role_api import add_role_routes  # camera-ready and the later roles

    add_role_routes(app)
    from icml25.review.web.people_api import add_people_routes

    add_people_routes(app)
    return app
