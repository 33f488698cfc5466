"""The JSON API of the later roles and files (camera-ready and supplementary material, senior
area chairs, sub-reviewers), added to the ``/api/v1`` app by :func:`add_role_routes`. Every
route calls one service method; the services ask the authority."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse
from starlette.concurrency import run_in_threadpool

from icml25.review.web import schemas as sc
from icml25.review.web.deps import S, one_hop


def add_role_routes(app: FastAPI) -> None:
    @app.put("/venues/{slug}/camera-ready-deadline", response_model=sc.DeadlineIn,
             summary="The camera-ready deadline, YYYY-MM-DD or empty (chairs)")
    @one_hop
    def set_deadline(s: S, slug: str, body: sc.DeadlineIn) -> sc.DeadlineIn:
        return sc.DeadlineIn(deadline=s.set_camera_ready_deadline(s.venue(slug), body.deadline))

    @app.put("/submissions/{sid}/camera-ready", response_model=sc.UploadOut,
             summary="Upload the camera-ready PDF (raw application/pdf body; authors of an "
                     "accepted paper, before the camera-ready deadline)")
    async def upload_camera_ready(s: S, sid: int, request: Request) -> dict:
        data = await request.body()  # capped at max_request_bytes; the service checks the PDF
        return await run_in_threadpool(s.upload_camera_ready, sid, data)

    @app.put("/submissions/{sid}/supplementary", response_model=sc.UploadOut,
             summary="Upload the supplementary material (raw application/zip body; authors, "
                     "with the submission or the camera-ready version)")
    async def upload_supplementary(s: S, sid: int, request: Request) -> dict:
        data = await request.body()
        return await run_in_threadpool(s.upload_supplementary, sid, data)

    @app.get("/submissions/{sid}/camera-ready", response_class=FileResponse,
             summary="Download the camera-ready PDF (whoever may read the paper)")
    @one_hop
    def camera_ready(s: S, sid: int) -> FileResponse:
        return FileResponse(s.camera_ready_pdf(sid), media_type="application/pdf",
                            filename=f"camera-ready-{sid}.pdf")

    @app.get("/submissions/{sid}/supplementary", response_class=FileResponse,
             summary="Download the supplementary material (whoever may read the paper)")
    @one_hop
    def supplementary(s: S, sid: int) -> FileResponse:
        return FileResponse(s.supplementary_zip(sid), media_type="application/zip",
                            filename=f"supplementary-{sid}.zip")

    @app.get("/venues/{slug}/senior-acs", response_model=list[sc.SeniorAcRow],
             summary="Senior area chairs and the area chairs each oversees (chairs)")
    @one_hop
    def senior_acs(s: S, slug: str) -> list[dict]:
        return s.senior_acs(s.venue(slug))

    @app.put("/venues/{slug}/area-chairs/{ac_id}/senior-ac", response_model=sc.Ok,
             summary="Put an area chair under a senior area chair, or under nobody (chairs)")
    @one_hop
    def set_senior_ac(s: S, slug: str, ac_id: int, body: sc.SeniorAcIn) -> sc.Ok:
        s.set_senior_ac(s.venue(slug), ac_id, body.sac_id)
        return sc.Ok()

    @app.get("/venues/{slug}/senior-ac-console", response_model=sc.View,
             summary="A senior area chair's papers, grouped by the area chairs they oversee")
    @one_hop
    def console(s: S, slug: str) -> dict:
        return s.senior_ac_console(s.venue(slug))

    @app.get("/submissions/{sid}/subreviewers", response_model=list[sc.SubreviewerRow],
             summary="Sub-reviewers of a paper: named to chairs and their inviter, "
                     "pseudonymous to the paper's other staff")
    @one_hop
    def subreviewers(s: S, sid: int) -> list[dict]:
        return s.subreviewers(sid)

    @app.post("/submissions/{sid}/subreviewers", status_code=201,
              response_model=sc.SubreviewerOut,
              summary="Invite a sub-reviewer to write your review (assigned reviewers)")
    @one_hop
    def invite(s: S, sid: int, body: sc.InviteIn) -> sc.SubreviewerOut:
        row = s.invite_subreviewer(sid, body.email)
        return sc.SubreviewerOut(id=row.id, user_id=row.user_id)

    @app.delete("/submissions/{sid}/subreviewers/{xid}", response_model=sc.Ok,
                summary="Revoke a sub-reviewer (their inviter or a chair)")
    @one_hop
    def revoke(s: S, sid: int, xid: int) -> sc.Ok:
        s.revoke_subreviewer(sid, xid)
        return sc.Ok()

    @app.post("/submissions/{sid}/delegated-review", response_model=sc.ReviewOut,
              summary="As a sub-reviewer, write the inviting reviewer's review")
    @one_hop
    def delegated_review(s: S, sid: int, body: sc.ReviewIn) -> sc.ReviewOut:
        r = s.save_delegated_review(sid, **body.model_dump())
        return sc.ReviewOut(id=r.id, submitted=r.submitted)
