"""The JSON API of people and mail: jobs, invitations, password reset, further addresses,
affiliations, publication lists, conflicts, bulk mail and the mail log; added to the
``/api/v1`` app by :func:`add_people_routes`. Every route calls one service method; the
services ask the authority."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from icml25.review.web.deps import P, S, one_hop


class _In(BaseModel):
    model_config = ConfigDict(extra="ignore")


class InvitationIn(_In):
    email: str
    name: str
    role: str
    affiliation: str = ""
    quota: int | None = None


class InvitationsIn(_In):
    invitations: list[InvitationIn] = Field(min_length=1, max_length=1000)


class AnswerIn(_In):
    reason: str = ""
    name: str = ""
    password: str = ""
    quota: int | None = None


class EmailIn(_In):
    email: str


class ResetConfirmIn(_In):
    token: str
    password: str


class AffiliationIn(_In):
    institution: str
    domain: str
    start_year: int | None = None
    end_year: int | None = None


class OverrideIn(_In):
    user_id: int
    conflicted: bool
    reason: str


class DeclareIn(_In):
    reason: str = ""


class MailIn(_In):
    to: dict[str, str] = Field(default_factory=dict)
    subject: str
    body: str
    dry_run: bool = True


class PreferenceIn(_In):
    mail_preference: str


class QuotaIn(_In):
    quota: int


RESET_ANSWER = {"detail": "if an account uses this address, a link to reset its password "
                          "was sent to it; it is valid for one hour"}


def add_people_routes(app: FastAPI) -> None:  # noqa: C901 - one place for the routes
    # ------------------------------------------------------------------ jobs and mail
    @app.get("/jobs/{job_id}", summary="A background job: status (queued, running, done, "
                                       "failed) and progress (0 to 1)")
    @one_hop
    def job(s: S, job_id: int) -> dict:
        return s.job(job_id)

    @app.post("/venues/{slug}/mail", summary="Mail a filtered group (chairs); with dry_run "
                                             "the recipients and one rendered message")
    @one_hop
    def bulk_mail(s: S, slug: str, body: MailIn) -> Any:
        out = s.bulk_mail(s.venue(slug), to=body.to, subject=body.subject, body=body.body,
                          dry_run=body.dry_run)
        return out if body.dry_run else JSONResponse(out, status_code=202)

    @app.get("/admin/mail", summary="Every e-mail of the platform in full (site admins)")
    @one_hop
    def mail_log(s: S, page: int = 1, to: str = "", status: str = "") -> dict:
        return s.mail_log(page=page, to=to, status=status)

    @app.post("/admin/mail/{email_id}/retry", summary="Queue an unsent e-mail again, same "
                                                      "Message-ID (site admins)")
    @one_hop
    def retry_mail(s: S, email_id: int) -> dict:
        s.retry_mail(email_id)
        return {"ok": True}

    # ------------------------------------------------------------------ invitations
    @app.post("/venues/{slug}/invitations", status_code=201,
              summary="Invite committee members (chairs); each gets a single-use link")
    @one_hop
    def invite(s: S, slug: str, body: InvitationsIn) -> list[dict]:
        return s.invite(s.venue(slug), [i.model_dump() for i in body.invitations])

    @app.get("/venues/{slug}/invitations", summary="Every invitation and its state (chairs)")
    @one_hop
    def invitations(s: S, slug: str) -> list[dict]:
        return s.list_invitations(s.venue(slug))

    @app.post("/venues/{slug}/invitations/csv", status_code=202,
              summary="Import invitations from CSV (email,name,role[,affiliation][,quota]); "
                      "checked whole first, then run as a job")
    async def invite_csv(s: S, slug: str, request: Request) -> dict:
        text = (await request.body()).decode("utf-8", errors="replace")
        return await run_in_threadpool(lambda: s.import_invitations(s.venue(slug), text))

    @app.post("/venues/{slug}/invitations/{inv_id}/resend",
              summary="Send an invitation again with a fresh link (chairs)")
    @one_hop
    def resend(s: S, slug: str, inv_id: int) -> dict:
        return s.resend_invitation(s.venue(slug), inv_id)

    @app.delete("/venues/{slug}/invitations/{inv_id}",
                summary="Revoke a pending invitation: its link stops working (chairs)")
    @one_hop
    def revoke(s: S, slug: str, inv_id: int) -> dict:
        s.revoke_invitation(s.venue(slug), inv_id)
        return {"ok": True}

    @app.post("/venues/{slug}/invitations/remind",
              summary="Remind every pending invitee (chairs)")
    @one_hop
    def remind(s: S, slug: str) -> dict:
        return {"reminded": s.remind_invitations(s.venue(slug))}

    @app.get("/invitations/{token}", summary="What an invitation link invites to (no login)")
    @one_hop
    def invitation(p: P, token: str) -> dict:
        return p.invitation_by_token(token)

    @app.post("/invitations/{token}/accept", summary="Accept (no login: the link proves the "
              "address; without an account give name and password)")
    @one_hop
    def accept(p: P, token: str, body: AnswerIn | None = None) -> dict:
        b = body or AnswerIn()
        return p.accept_invitation(token, name=b.name, password=b.password, quota=b.quota)

    @app.post("/invitations/{token}/decline", summary="Decline, with an optional reason")
    @one_hop
    def decline(p: P, token: str, body: AnswerIn | None = None) -> dict:
        return p.decline_invitation(token, reason=(body or AnswerIn()).reason)

    @app.put("/venues/{slug}/my-quota", summary="Declare your own quota (at most the venue's "
                                                "maximum)")
    @one_hop
    def my_quota(s: S, slug: str, body: QuotaIn) -> dict:
        return {"quota": s.set_my_quota(s.venue(slug), body.quota)}

    # ------------------------------------------------------------------ accounts
    @app.post("/password-reset", status_code=202,
              summary="Send a reset link (the same answer for every address)")
    def password_reset(p: P, body: EmailIn, request: Request) -> dict:
        p.request_password_reset(body.email, ip=request.client.host if request.client else "")
        return RESET_ANSWER

    @app.post("/password-reset/confirm", summary="Set a new password with the link's token "
                                                  "(single use; ends every session)")
    @one_hop
    def password_reset_confirm(p: P, body: ResetConfirmIn) -> dict:
        p.reset_password(body.token, body.password)
        return {"ok": True}

    @app.get("/me/emails", summary="Your addresses")
    @one_hop
    def my_emails(s: S) -> list[dict]:
        return s.my_emails()

    @app.post("/me/emails", status_code=201, summary="Add an address (a link verifies it)")
    @one_hop
    def add_email(s: S, body: EmailIn) -> dict:
        return s.add_email(body.email)

    @app.put("/me/emails/primary", summary="Make a verified address the primary one")
    @one_hop
    def primary(s: S, body: EmailIn) -> dict:
        s.set_primary_email(body.email)
        return {"ok": True}

    @app.get("/me/affiliations", summary="Your affiliation history")
    @one_hop
    def affiliations(s: S) -> list[dict]:
        return s.affiliations()

    @app.post("/me/affiliations", status_code=201, summary="Add an affiliation (institution, "
                                                           "domain, from-to years)")
    @one_hop
    def add_affiliation(s: S, body: AffiliationIn) -> dict:
        return s.add_affiliation(**body.model_dump())

    @app.delete("/me/affiliations/{aid}", summary="Remove an affiliation")
    @one_hop
    def drop_affiliation(s: S, aid: int) -> dict:
        s.remove_affiliation(aid)
        return {"ok": True}

    @app.post("/me/publications", status_code=201,
              summary="Upload your publication list (BibTeX, or a CSV/JSON export of DBLP, "
                      "OpenReview or Semantic Scholar); replaces the previous one")
    async def publications(s: S, request: Request) -> dict:
        text = (await request.body()).decode("utf-8", errors="replace")
        return await run_in_threadpool(s.upload_publications, text)

    @app.get("/me/publications", summary="Your publication list")
    @one_hop
    def my_publications(s: S) -> list[dict]:
        return s.publications()

    @app.put("/me/mail-preference", summary="immediate, digest or off (non-essential mail)")
    @one_hop
    def preference(s: S, body: PreferenceIn) -> dict:
        s.set_mail_preference(body.mail_preference)
        return {"mail_preference": body.mail_preference}

    # ------------------------------------------------------------------ conflicts
    @app.get("/venues/{slug}/conflicts", summary="Conflicts with their reasons (chairs)")
    @one_hop
    def conflicts(s: S, slug: str, submission: int | None = None) -> list[dict]:
        return s.venue_conflicts(s.venue(slug), submission)

    @app.post("/submissions/{sid}/conflicts/override",
              summary="Set or lift a conflict, with a reason for the audit log (chairs)")
    @one_hop
    def override(s: S, sid: int, body: OverrideIn) -> dict:
        s.override_conflict(sid, body.user_id, body.conflicted, body.reason)
        return {"ok": True}

    @app.post("/submissions/{sid}/conflicts/declare",
              summary="Declare your own conflict with a paper (committee members)")
    @one_hop
    def declare(s: S, sid: int, body: DeclareIn) -> dict:
        s.declare_conflict(sid, body.reason)
        return {"ok": True}

    @app.post("/venues/{slug}/conflicts/recompute", status_code=202,
              summary="Recompute every conflict of the venue as a job (chairs)")
    @one_hop
    def recompute(s: S, slug: str) -> dict:
        return {"job_id": s.start_conflict_recompute(s.venue(slug))}

    @app.get("/venues/{slug}/members-without-publications",
             summary="Reviewers and area chairs with no publication list (chairs)")
    @one_hop
    def without_publications(s: S, slug: str) -> list[dict]:
        return s.members_without_publications(s.venue(slug))
