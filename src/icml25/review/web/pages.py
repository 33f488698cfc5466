"""The server-rendered pages (Jinja2, usable without JavaScript). Each route parses its form
with a typed model, calls one service method and renders or redirects; the services ask the
authority, and pages that show no data say so with :func:`~icml25.review.authority.public`."""

from __future__ import annotations

import json
from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, File, Form, Query, UploadFile
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from icml25.review.authority import Action, public
from icml25.review.errors import LoginFailed, LoginThrottled, ServiceError, UploadError
from icml25.review.web.deps import ANON_CSRF_COOKIE, SESSION_COOKIE, C, back, form_answers, render
from icml25.review.web.schemas import (
    AdvanceForm,
    AssignForm,
    BidForm,
    CommitForm,
    DecisionForm,
    FeedbackForm,
    LoginForm,
    MemberForm,
    MetaReviewForm,
    ProposalForm,
    RegisterForm,
    ReviewForm,
    TextForm,
    TokenForm,
    UserForm,
    VenueForm,
)
from icml25.review.workflow import PHASE_LABELS, PHASE_ORDER

MAX_AUTHORS = 8  # author rows on the submission form


def pages() -> APIRouter:
    r = APIRouter()

    @r.get("/", response_class=HTMLResponse)
    def home(c: C) -> Response:
        if c.user is None:
            public()
            return RedirectResponse("/login", status_code=303)
        return render(c, "dashboard.html", venues=c.svc.dashboard())

    @r.get("/login", response_class=HTMLResponse)
    def login_page(c: C) -> Response:
        public()
        return render(c, "login.html")

    @r.post("/login")
    def login(c: C, f: Annotated[LoginForm, Form()]) -> Response:
        public()
        try:
            token, _ = c.svc.login(f.email, f.password, c.ip)
        except LoginFailed as exc:
            return render(c, "login.html", status=401, error=str(exc), email=f.email)
        except LoginThrottled as exc:
            return render(c, "login.html", status=429, error=str(exc), email=f.email)
        resp = RedirectResponse("/", status_code=303)
        s = c.settings
        resp.set_cookie(SESSION_COOKIE, token, httponly=True, samesite="lax",
                        secure=s.secure_cookies, max_age=s.session_hours * 3600)
        resp.delete_cookie(ANON_CSRF_COOKIE)
        return resp

    @r.post("/logout")
    def logout(c: C) -> Response:
        public()
        c.svc.logout(c.request.cookies.get(SESSION_COOKIE))
        resp = RedirectResponse("/login", status_code=303)
        resp.delete_cookie(SESSION_COOKIE)
        return resp

    @r.get("/register", response_class=HTMLResponse)
    def register_page(c: C) -> Response:
        public()
        return render(c, "register.html")

    @r.post("/register")
    def register(c: C, f: Annotated[RegisterForm, Form()]) -> Response:
        public()
        try:
            c.svc.register(f.email, f.name, f.password, f.affiliation)
        except ServiceError as exc:
            return render(c, "register.html", status=400, error=str(exc), email=f.email,
                          name=f.name)
        return back("/login", "Account created. We sent a link to your e-mail address: "
                    "follow it to confirm the address, then log in.")

    @r.get("/verify-email", response_class=HTMLResponse)
    def verify_email(c: C, token: str = "") -> Response:
        public()
        c.svc.verify_email(token)
        return back("/" if c.user else "/login", "Your e-mail address is confirmed.")

    @r.post("/verify-email/resend")
    def resend_verification(c: C) -> Response:
        c.svc.send_verification()
        return back("/", "We sent a new confirmation link to your e-mail address.")

    @r.get("/venues/new", response_class=HTMLResponse)
    def new_venue_page(c: C) -> Response:
        c.svc.check(Action.CREATE_VENUE)
        return render(c, "venue_new.html")

    @r.post("/venues")
    def new_venue(c: C, f: Annotated[VenueForm, Form()]) -> Response:
        v = c.svc.create_venue(f.slug, f.name, reviews_per_paper=f.reviews_per_paper,
                               bidding_enabled=bool(f.bidding))
        return back(f"/v/{v.slug}", "Venue created.")

    @r.get("/v/{slug}", response_class=HTMLResponse)
    def venue_page(c: C, slug: str) -> Response:
        return render(c, "venue.html", v=c.svc.venue_page(c.svc.venue(slug)))

    @r.get("/v/{slug}/submit", response_class=HTMLResponse)
    def submit_page(c: C, slug: str) -> Response:
        page = c.svc.venue_page(c.svc.venue(slug))
        return render(c, "submit.html", v=page, max_authors=MAX_AUTHORS)

    @r.post("/v/{slug}/submit")
    async def submit(c: C, slug: str, title: Annotated[str, Form()],
                     abstract: Annotated[str, Form()], keywords: Annotated[str, Form()] = "",
                     declared_conflicts: Annotated[str, Form()] = "",
                     pdf: Annotated[UploadFile | None, File()] = None) -> Response:
        form = await c.request.form()
        authors = [{"name": str(form.get(f"author_name_{i}", "")),
                    "email": str(form.get(f"author_email_{i}", "")),
                    "affiliation": str(form.get(f"author_affiliation_{i}", ""))}
                   for i in range(MAX_AUTHORS)]
        data = await _read_upload(pdf, c.settings.max_request_bytes)
        # the database work runs in a worker thread, never on the event loop
        sub = await run_in_threadpool(lambda: c.svc.submit(
            c.svc.venue(slug), title=title, abstract=abstract, keywords=keywords,
            authors=authors, declared_conflicts=declared_conflicts, pdf=data))
        return back(f"/s/{sub.id}", f"Submission #{sub.number} received.")

    @r.post("/v/{slug}/advance")
    def advance(c: C, slug: str, f: Annotated[AdvanceForm, Form()]) -> Response:
        ph = c.svc.advance_phase(c.svc.venue(slug), force=bool(f.force))
        return back(f"/v/{slug}", f"The venue is now in phase: {PHASE_LABELS[ph]}.")

    @r.get("/v/{slug}/admin", response_class=HTMLResponse)
    def admin(c: C, slug: str, outbox_page: Annotated[int, Query(ge=1)] = 1,
              audit_page: Annotated[int, Query(ge=1)] = 1) -> Response:
        v = c.svc.venue(slug)
        return render(c, "admin.html", a=c.svc.admin_page(v, outbox_page=outbox_page,
                                                         audit_page=audit_page),
                      v=c.svc.venue_card(v), decision_types=c.svc.decision_types(v),
                      decision_mail=c.svc.decision_mail(v))

    @r.post("/v/{slug}/members")
    def add_member(c: C, slug: str, f: Annotated[MemberForm, Form()]) -> Response:
        c.svc.add_member(c.svc.venue(slug), f.email, f.role)
        return back(f"/v/{slug}/admin", "Member added.")

    @r.post("/v/{slug}/timeline")
    async def timeline(c: C, slug: str) -> Response:
        form = await c.request.form()
        deadlines = {p.value: str(form.get(f"deadline_{p.value}") or "") for p in PHASE_ORDER}
        await run_in_threadpool(lambda: c.svc.set_timeline(c.svc.venue(slug), deadlines))
        return back(f"/v/{slug}/admin", "Timeline saved.")

    @r.post("/v/{slug}/auto-assign")
    def auto(c: C, slug: str) -> Response:
        n = c.svc.auto_assign(c.svc.venue(slug))
        return back(f"/v/{slug}", f"{n} reviewer assignment(s) made.")

    @r.get("/v/{slug}/bids", response_class=HTMLResponse)
    def bids_page(c: C, slug: str, q: str = "", unbid: str = "",
                  sort: str = "affinity") -> Response:
        v = c.svc.venue(slug)
        table = c.svc.bidding_table(v, query=q, only_unbid=bool(unbid), sort=sort)
        return render(c, "bids.html", v=c.svc.venue_card(v), t=table, q=q,
                      unbid=bool(unbid), has_papers=c.svc.has_reviewer_papers())

    @r.post("/v/{slug}/bids")
    async def save_bids(c: C, slug: str) -> Response:
        form = await c.request.form()
        bids = {}
        for key, value in form.items():
            if key.startswith("bid_") and value != "":
                try:
                    bids[int(key[4:])] = int(str(value))
                except ValueError:
                    raise ServiceError(f"{key}: a bid is a whole number from -2 to 2") from None
        n = await run_in_threadpool(lambda: c.svc.save_bids(c.svc.venue(slug), bids))
        keep = urlencode({k: c.request.query_params[k] for k in ("q", "unbid", "sort")
                          if c.request.query_params.get(k)})  # the console's filter stays
        return back(f"/v/{slug}/bids" + (f"?{keep}" if keep else ""), f"{n} bid(s) saved.")

    @r.get("/v/{slug}/assignment", response_class=HTMLResponse)
    def assignment_page(c: C, slug: str) -> Response:
        v = c.svc.venue(slug)
        return render(c, "assignment.html", v=c.svc.venue_card(v), form=ProposalForm(),
                      wb=c.svc.assignment_workbench(v), proposal=None)

    @r.post("/v/{slug}/assignment", response_class=HTMLResponse)
    def propose(c: C, slug: str, f: Annotated[ProposalForm, Form()]) -> Response:
        v = c.svc.venue(slug)
        proposal = c.svc.preview_assignment(v, objective=f.objective, affinity=f.affinity,
                                            bid_weight=f.bid_weight, top_k=f.top_k)
        return render(c, "assignment.html", v=c.svc.venue_card(v), form=f,
                      wb=c.svc.assignment_workbench(v), proposal=proposal)

    @r.post("/v/{slug}/assignment/commit")
    def commit_assignment(c: C, slug: str, f: Annotated[CommitForm, Form()]) -> Response:
        n = c.svc.commit_assignment(c.svc.venue(slug), f.pair_list())
        return back(f"/v/{slug}", f"{n} reviewer assignment(s) made.")

    @r.get("/v/{slug}/export.json")
    def export(c: C, slug: str) -> Response:
        v = c.svc.venue(slug)
        body = json.dumps(c.svc.export(v), indent=2, default=str)
        return Response(body, media_type="application/json", headers={
            "Content-Disposition": f'attachment; filename="{v.slug}.json"'})

    @r.get("/s/{sid}", response_class=HTMLResponse)
    def submission(c: C, sid: int) -> Response:
        page = c.svc.submission_page(sid)
        members = c.svc.assignable_people(sid) if page["can"]["assign"] else []
        return render(c, "submission.html", s=page, members=members)

    @r.post("/s/{sid}/edit")
    async def edit(c: C, sid: int, title: Annotated[str, Form()],
                   abstract: Annotated[str, Form()], keywords: Annotated[str, Form()] = "",
                   pdf: Annotated[UploadFile | None, File()] = None) -> Response:
        data = await _read_upload(pdf, c.settings.max_request_bytes)
        await run_in_threadpool(c.svc.update_submission, sid, title=title, abstract=abstract,
                                keywords=keywords, pdf=data)
        return back(f"/s/{sid}", "Submission updated.")

    @r.get("/s/{sid}/pdf")
    def pdf(c: C, sid: int) -> Response:
        path = c.svc.pdf(sid)
        # a neutral file name: the stored one carries no identities, but keep it generic
        return FileResponse(path, media_type="application/pdf",
                            filename=f"submission-{sid}.pdf")

    @r.post("/s/{sid}/withdraw")
    def withdraw(c: C, sid: int) -> Response:
        c.svc.withdraw(sid)
        return back(f"/s/{sid}", "Submission withdrawn.")

    @r.post("/s/{sid}/bid")
    def bid(c: C, sid: int, f: Annotated[BidForm, Form()]) -> Response:
        c.svc.bid(sid, f.value)
        return back(f"/s/{sid}", "Bid saved.")

    @r.post("/s/{sid}/assign")
    def assign(c: C, sid: int, f: Annotated[AssignForm, Form()]) -> Response:
        c.svc.assign(sid, f.user_id, f.role)
        return back(f"/s/{sid}", "Assigned.")

    @r.post("/s/{sid}/unassign")
    def unassign(c: C, sid: int, f: Annotated[UserForm, Form()]) -> Response:
        c.svc.unassign(sid, f.user_id)
        return back(f"/s/{sid}", "Unassigned.")

    @r.post("/s/{sid}/review")
    async def review(c: C, sid: int, f: Annotated[ReviewForm, Form()]) -> Response:
        answers = await form_answers(c.request)
        await run_in_threadpool(lambda: c.svc.save_review(sid, **f.review_fields(),
                                                          answers=answers))
        return back(f"/s/{sid}", "Review saved.")

    @r.post("/s/{sid}/discussion")
    def discussion(c: C, sid: int, f: Annotated[TextForm, Form()]) -> Response:
        c.svc.post_discussion(sid, f.text)
        return back(f"/s/{sid}", "Posted.")

    @r.post("/s/{sid}/metareview")
    def metareview(c: C, sid: int, f: Annotated[MetaReviewForm, Form()]) -> Response:
        c.svc.write_metareview(sid, f.text, f.recommendation)
        return back(f"/s/{sid}", "Meta-review saved.")

    @r.post("/s/{sid}/decision")
    def decision(c: C, sid: int, f: Annotated[DecisionForm, Form()]) -> Response:
        c.svc.decide(sid, f.outcome)
        return back(f"/s/{sid}", "Decision recorded.")

    @r.post("/r/{rid}/feedback")
    def feedback(c: C, rid: int, f: Annotated[FeedbackForm, Form()]) -> Response:
        c.svc.give_feedback(rid, comprehension=f.comprehension,
                            constructiveness=f.constructiveness,
                            llm_suspected=bool(f.llm_suspected), llm_comment=f.llm_comment)
        return back(f"/s/{c.svc.submission_of_review(rid)}",
                    "Thank you: your rating is recorded.")

    @r.post("/r/{rid}/rebuttal")
    def rebuttal(c: C, rid: int, f: Annotated[TextForm, Form()]) -> Response:
        c.svc.write_rebuttal(rid, f.text)
        return back(f"/s/{c.svc.submission_of_review(rid)}", "Rebuttal saved.")

    @r.get("/tokens", response_class=HTMLResponse)
    def tokens(c: C) -> Response:
        return render(c, "tokens.html", tokens=c.svc.api_tokens())

    @r.post("/tokens")
    def new_token(c: C, f: Annotated[TokenForm, Form()]) -> Response:
        secret = c.svc.create_api_token(f.name)
        return render(c, "tokens.html", tokens=c.svc.api_tokens(), secret=secret)

    @r.post("/tokens/{tid}/revoke")
    def revoke(c: C, tid: int) -> Response:
        c.svc.revoke_api_token(tid)
        return back("/tokens", "Token revoked.")

    return r


async def _read_upload(upload: UploadFile | None, max_bytes: int) -> bytes | None:
    """Read at most ``max_bytes + 1`` bytes (enough for the service to refuse a large file)."""
    if upload is None or not upload.filename:
        return None
    data = await upload.read(max_bytes + 1)
    if not data:
        raise UploadError("the uploaded file is empty")
    return data
