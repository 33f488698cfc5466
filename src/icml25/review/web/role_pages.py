"""Pages of the later roles and files: camera-ready and supplementary uploads and downloads,
the venue's senior area chairs and camera-ready deadline (chairs), the senior area chair's
console, sub-reviewer invitations and the sub-reviewer's review form. Routes stay thin: parse a
typed form, call one service method, render or redirect; the services ask the authority."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, File, Form, UploadFile
from fastapi.responses import FileResponse, HTMLResponse, Response
from starlette.concurrency import run_in_threadpool

from icml25.review.web.deps import C, back, form_answers, render
from icml25.review.web.schemas import DeadlineForm, InviteForm, ReviewForm, SeniorAcForm


async def _read(upload: UploadFile | None, max_bytes: int) -> bytes:
    """Read at most ``max_bytes + 1`` bytes (enough for the service to refuse a large file)."""
    if upload is None or not upload.filename:
        return b""  # the service asks the authority first, then refuses an empty file
    return await upload.read(max_bytes + 1)


def role_pages() -> APIRouter:
    r = APIRouter()

    @r.post("/s/{sid}/camera-ready")
    async def upload_camera_ready(c: C, sid: int,
                                  pdf: Annotated[UploadFile | None, File()] = None) -> Response:
        data = await _read(pdf, c.settings.max_request_bytes)
        out = await run_in_threadpool(c.svc.upload_camera_ready, sid, data)
        return back(f"/s/{sid}", f"Camera-ready version uploaded ({out['size']}).")

    @r.post("/s/{sid}/supplementary")
    async def upload_supplementary(c: C, sid: int, archive: Annotated[
            UploadFile | None, File()] = None) -> Response:
        data = await _read(archive, c.settings.max_request_bytes)
        out = await run_in_threadpool(c.svc.upload_supplementary, sid, data)
        return back(f"/s/{sid}", f"Supplementary material uploaded ({out['files']} files, "
                                 f"{out['size']}).")

    @r.get("/s/{sid}/camera-ready.pdf")
    def camera_ready(c: C, sid: int) -> Response:
        return FileResponse(c.svc.camera_ready_pdf(sid), media_type="application/pdf",
                            filename=f"camera-ready-{sid}.pdf")

    @r.get("/s/{sid}/supplementary.zip")
    def supplementary(c: C, sid: int) -> Response:
        return FileResponse(c.svc.supplementary_zip(sid), media_type="application/zip",
                            filename=f"supplementary-{sid}.zip")

    @r.get("/v/{slug}/roles", response_class=HTMLResponse)
    def roles_page(c: C, slug: str) -> Response:
        v = c.svc.venue(slug)
        return render(c, "roles.html", v=c.svc.venue_card(v), sacs=c.svc.senior_acs(v))

    @r.post("/v/{slug}/senior-acs")
    def set_senior_ac(c: C, slug: str, f: Annotated[SeniorAcForm, Form()]) -> Response:
        c.svc.set_senior_ac(c.svc.venue(slug), f.user_id, int(f.sac_id) if f.sac_id else None)
        return back(f"/v/{slug}/roles", "Senior area chair saved.")

    @r.post("/v/{slug}/camera-ready-deadline")
    def set_deadline(c: C, slug: str, f: Annotated[DeadlineForm, Form()]) -> Response:
        value = c.svc.set_camera_ready_deadline(c.svc.venue(slug), f.deadline)
        return back(f"/v/{slug}/roles", f"Camera-ready deadline: {value or 'none'}.")

    @r.get("/v/{slug}/senior-ac", response_class=HTMLResponse)
    def console(c: C, slug: str) -> Response:
        return render(c, "senior_ac.html", con=c.svc.senior_ac_console(c.svc.venue(slug)))

    @r.post("/s/{sid}/subreviewers")
    def invite(c: C, sid: int, f: Annotated[InviteForm, Form()]) -> Response:
        c.svc.invite_subreviewer(sid, f.email)
        return back(f"/s/{sid}", "Sub-reviewer invited (they were sent an e-mail).")

    @r.post("/s/{sid}/subreviewers/{xid}/revoke")
    def revoke(c: C, sid: int, xid: int) -> Response:
        c.svc.revoke_subreviewer(sid, xid)
        return back(f"/s/{sid}", "Sub-reviewer revoked.")

    @r.post("/s/{sid}/subreview")
    async def subreview(c: C, sid: int, f: Annotated[ReviewForm, Form()]) -> Response:
        answers = await form_answers(c.request)
        await run_in_threadpool(lambda: c.svc.save_delegated_review(
            sid, **f.review_fields(), answers=answers))
        return back(f"/s/{sid}", "Review saved (for the reviewer who invited you).")

    return r
