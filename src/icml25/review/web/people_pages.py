"""Pages of people and mail: the chairs' invitations page (one by one, CSV upload, resend,
revoke, remind all), the invitee's page behind the link (accept, creating an account, or
decline), password reset, the account page (addresses, affiliations, publication list, mail
preference), conflicts with their reasons and overrides, bulk mail with its preview, and the
site admins' mail log. Routes parse a form, call one service method, render or redirect; the
services ask the authority. Every form carries the CSRF token (checked by ``C``)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, File, Form, UploadFile
from fastapi.responses import HTMLResponse, Response
from starlette.concurrency import run_in_threadpool

from icml25.review.authority import public
from icml25.review.errors import NotFound, ServiceError
from icml25.review.web.deps import C, back, render


def people_pages() -> APIRouter:  # noqa: C901 - one place for the pages
    r = APIRouter()

    # ------------------------------------------------------------------ chairs: invitations
    @r.get("/v/{slug}/invitations", response_class=HTMLResponse)
    def invitations_page(c: C, slug: str, status: str = "") -> Response:
        v = c.svc.venue(slug)
        rows = c.svc.list_invitations(v, status)
        return render(c, "invitations.html", v=v, rows=rows, shown=status,
                      counts=_counts(c.svc.list_invitations(v)))

    @r.post("/v/{slug}/invitations")
    def invite_one(c: C, slug: str, email: Annotated[str, Form()],
                   name: Annotated[str, Form()], role: Annotated[str, Form()],
                   quota: Annotated[str, Form()] = "") -> Response:
        v = c.svc.venue(slug)
        c.svc.invite(v, [{"email": email, "name": name, "role": role,
                          "quota": quota.strip() or None}])
        return back(f"/v/{slug}/invitations", f"Invitation sent to {email.strip().lower()}.")

    @r.post("/v/{slug}/invitations/csv")
    async def invite_csv(c: C, slug: str,
                         csv: Annotated[UploadFile | None, File()] = None) -> Response:
        data = (await csv.read(c.settings.max_request_bytes + 1)).decode(
            "utf-8", errors="replace") if csv is not None and csv.filename else ""
        v = await run_in_threadpool(c.svc.venue, slug)
        out = await run_in_threadpool(c.svc.import_invitations, v, data)
        return back(f"/v/{slug}/invitations", f"{out['rows']} invitations are being sent "
                    f"(job {out['job_id']}; reload to follow).")

    @r.post("/v/{slug}/invitations/{inv_id}/resend")
    def resend(c: C, slug: str, inv_id: int) -> Response:
        row = c.svc.resend_invitation(c.svc.venue(slug), inv_id)
        return back(f"/v/{slug}/invitations", f"A new link was sent to {row['email']}.")

    @r.post("/v/{slug}/invitations/{inv_id}/revoke")
    def revoke(c: C, slug: str, inv_id: int) -> Response:
        c.svc.revoke_invitation(c.svc.venue(slug), inv_id)
        return back(f"/v/{slug}/invitations", "Invitation revoked; its link no longer works.")

    @r.post("/v/{slug}/invitations/remind")
    def remind(c: C, slug: str) -> Response:
        n = c.svc.remind_invitations(c.svc.venue(slug))
        return back(f"/v/{slug}/invitations", f"Reminded {n} pending invitee(s).")

    # ------------------------------------------------------------------ the invitee
    @r.get("/invitations/{token}", response_class=HTMLResponse)
    def invitation_page(c: C, token: str) -> Response:
        try:
            info = c.svc.invitation_by_token(token)
        except (ServiceError, NotFound) as exc:
            return render(c, "invitation.html", status=404, error=str(exc), token=token)
        return render(c, "invitation.html", info=info, token=token)

    @r.post("/invitations/{token}/accept")
    def accept(c: C, token: str, name: Annotated[str, Form()] = "",
               password: Annotated[str, Form()] = "",
               quota: Annotated[str, Form()] = "") -> Response:
        q = int(quota) if quota.strip().lstrip("-").isdigit() else None
        out = c.svc.accept_invitation(token, name=name, password=password, quota=q)
        return back("/" if c.user else "/login",
                    f"Welcome to the committee ({out['role']})."
                    + (" Your account is ready: log in." if out["account_created"] else ""))

    @r.post("/invitations/{token}/decline")
    def decline(c: C, token: str, reason: Annotated[str, Form()] = "") -> Response:
        c.svc.decline_invitation(token, reason)
        return back("/login", "You declined the invitation. Thank you for answering.")

    # ------------------------------------------------------------------ password reset
    @r.get("/forgot-password", response_class=HTMLResponse)
    def forgot_page(c: C) -> Response:
        public()
        return render(c, "password_reset.html", stage="ask")

    @r.post("/forgot-password")
    def forgot(c: C, email: Annotated[str, Form()]) -> Response:
        c.svc.request_password_reset(email, ip=c.ip)
        return back("/login", "If an account uses this address, a link to reset its "
                    "password was sent to it; it is valid for one hour.")

    @r.get("/reset-password", response_class=HTMLResponse)
    def reset_page(c: C, token: str = "") -> Response:
        public()
        return render(c, "password_reset.html", stage="set", token=token)

    @r.post("/reset-password")
    def reset(c: C, token: Annotated[str, Form()], password: Annotated[str, Form()]) -> Response:
        c.svc.reset_password(token, password)
        return back("/login", "Your password was changed and every session ended: log in "
                    "with the new one.")

    # ------------------------------------------------------------------ the account
    @r.get("/account", response_class=HTMLResponse)
    def account(c: C) -> Response:
        return render(c, "account.html", emails=c.svc.my_emails(),
                      affiliations=c.svc.affiliations(), publications=c.svc.publications(),
                      preference=c.user.mail_preference if c.user else "immediate")

    @r.post("/account/emails")
    def add_email(c: C, email: Annotated[str, Form()]) -> Response:
        c.svc.add_email(email)
        return back("/account", "We sent a confirmation link to that address.")

    @r.post("/account/affiliations")
    def add_affiliation(c: C, institution: Annotated[str, Form()],
                        domain: Annotated[str, Form()],
                        start_year: Annotated[str, Form()] = "",
                        end_year: Annotated[str, Form()] = "") -> Response:
        c.svc.add_affiliation(institution, domain, _year(start_year), _year(end_year))
        return back("/account", "Affiliation added; your conflicts were updated.")

    @r.post("/account/affiliations/{aid}/remove")
    def remove_affiliation(c: C, aid: int) -> Response:
        c.svc.remove_affiliation(aid)
        return back("/account", "Affiliation removed.")

    @r.post("/account/publications")
    async def publications(c: C, file: Annotated[UploadFile | None, File()] = None) -> Response:
        text = (await file.read(c.settings.max_request_bytes + 1)).decode(
            "utf-8", errors="replace") if file is not None and file.filename else ""
        out = await run_in_threadpool(c.svc.upload_publications, text)
        return back("/account", f"{out['publications']} publications read; your conflicts "
                    "and affinities were updated.")

    @r.post("/account/mail-preference")
    def preference(c: C, mail_preference: Annotated[str, Form()]) -> Response:
        c.svc.set_mail_preference(mail_preference)
        return back("/account", "Mail preference saved.")

    # ------------------------------------------------------------------ conflicts
    @r.get("/v/{slug}/conflicts", response_class=HTMLResponse)
    def conflicts_page(c: C, slug: str, submission: int | None = None) -> Response:
        v = c.svc.venue(slug)
        return render(c, "conflicts.html", v=v, rows=c.svc.venue_conflicts(v, submission),
                      submission=submission, members=c.svc.members(v),
                      without=c.svc.members_without_publications(v))

    @r.post("/v/{slug}/conflicts/override")
    def override(c: C, slug: str, submission: Annotated[int, Form()],
                 user_id: Annotated[int, Form()], conflicted: Annotated[str, Form()],
                 reason: Annotated[str, Form()]) -> Response:
        c.svc.override_conflict(submission, user_id, conflicted == "yes", reason)
        return back(f"/v/{slug}/conflicts?submission={submission}", "Conflict updated.")

    # ------------------------------------------------------------------ bulk mail, mail log
    @r.get("/v/{slug}/mail", response_class=HTMLResponse)
    def mail_page(c: C, slug: str) -> Response:
        v = c.svc.venue(slug)
        c.svc.bulk_mail(v, to={}, subject="-", body="-", dry_run=True)  # chairs only
        return render(c, "bulk_mail.html", v=v, form={})

    @r.post("/v/{slug}/mail", response_class=HTMLResponse)
    def mail(c: C, slug: str, subject: Annotated[str, Form()], body: Annotated[str, Form()],
             role: Annotated[str, Form()] = "", area: Annotated[str, Form()] = "",
             status: Annotated[str, Form()] = "", send: Annotated[str, Form()] = "") -> Response:
        v = c.svc.venue(slug)
        to = {k: val for k, val in (("role", role), ("area", area), ("status", status)) if val}
        if send == "yes":
            out = c.svc.bulk_mail(v, to=to, subject=subject, body=body, dry_run=False)
            return back(f"/v/{slug}/mail", f"Sending to {out['recipients']} recipient(s) "
                        f"(job {out['job_id']}).")
        preview = c.svc.bulk_mail(v, to=to, subject=subject, body=body, dry_run=True)
        return render(c, "bulk_mail.html", v=v, preview=preview,
                      form={"subject": subject, "body": body, **to})

    @r.get("/admin/mail", response_class=HTMLResponse)
    def mail_log(c: C, page: int = 1, to: str = "", status: str = "") -> Response:
        return render(c, "mail_log.html", log=c.svc.mail_log(page=page, to=to, status=status),
                      to=to, shown=status)

    return r


def _year(text: str) -> int | None:
    text = (text or "").strip()
    if not text:
        return None
    if not text.isdigit():
        raise ServiceError("years are written like 2021")
    return int(text)


def _counts(rows: list[dict]) -> dict[str, int]:
    out = {"pending": 0, "accepted": 0, "declined": 0, "expired": 0}
    for x in rows:
        out[x["status"]] += 1
    return out
