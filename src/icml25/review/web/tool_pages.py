"""Pages of the chair, reviewer and author tools: the assignment workbench's pin and
forbid form, the chairs' submissions table and its CSV export, the reviewer's rewards page and
credential downloads, public reviewer profiles and the credential verification page. Routes
stay thin: parse a typed form, call one service method, render or redirect; the services ask
the authority."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form
from fastapi.responses import HTMLResponse, Response
from starlette.concurrency import run_in_threadpool

from icml25.review.authority import public
from icml25.review.errors import ServiceError
from icml25.review.forms import (
    AUDIENCE_LABELS,
    EDITOR_BLANK_ROWS,
    KIND_LABELS,
    FormError,
    rows_from_form,
)
from icml25.review.web.deps import C, back, render
from icml25.review.web.schemas import (
    DecisionMailForm,
    DecisionTypesForm,
    PairForm,
    ProfileForm,
    RebuttalLimitForm,
    VerifyForm,
)


def tool_pages() -> APIRouter:
    r = APIRouter()

    @r.post("/v/{slug}/assignment/pairs")
    def set_pair(c: C, slug: str, f: Annotated[PairForm, Form()]) -> Response:
        c.svc.set_pair_constraint(f.submission_id, f.user_id, f.kind)
        words = {"pin": "Pinned", "forbid": "Forbidden", "none": "Cleared"}
        return back(f"/v/{slug}/assignment", f"{words[f.kind]}: that reviewer and paper.")

    @r.get("/v/{slug}/submissions", response_class=HTMLResponse)
    def submissions_table(c: C, slug: str, q: str = "", sort: str = "number",
                          desc: bool = False) -> Response:
        v = c.svc.venue(slug)
        table = c.svc.submissions_table(v, query=q, sort=sort, descending=desc)
        return render(c, "submissions_table.html", v=c.svc.venue_card(v), t=table)

    @r.get("/v/{slug}/submissions.csv")
    def submissions_csv(c: C, slug: str, q: str = "", sort: str = "number",
                        desc: bool = False) -> Response:
        v = c.svc.venue(slug)
        body = c.svc.submissions_csv(v, query=q, sort=sort, descending=desc)
        return Response(body, media_type="text/csv; charset=utf-8", headers={
            "Content-Disposition": f'attachment; filename="{v.slug}-submissions.csv"'})

    @r.get("/v/{slug}/review-form", response_class=HTMLResponse)
    def review_form(c: C, slug: str, version: int | None = None) -> Response:
        v = c.svc.venue(slug)
        form = c.svc.review_form(v, version)
        return render(c, "review_form.html", v=c.svc.venue_page(v), form=form,
                      added=[f for f in form["fields"] if not f["core"]],
                      blank=EDITOR_BLANK_ROWS, kinds=KIND_LABELS, audiences=AUDIENCE_LABELS)

    @r.post("/v/{slug}/review-form")
    async def save_review_form(c: C, slug: str) -> Response:
        try:
            rows = rows_from_form(dict((await c.request.form()).items()))
        except FormError as exc:
            raise ServiceError(str(exc)) from None
        saved = await run_in_threadpool(lambda: c.svc.save_review_form(c.svc.venue(slug), rows))
        return back(f"/v/{slug}/review-form",
                    f"Review form saved: version {saved['version']}.")

    @r.post("/v/{slug}/decision-types")
    def set_decision_types(c: C, slug: str, f: Annotated[DecisionTypesForm, Form()]) -> Response:
        types = c.svc.set_decision_types(c.svc.venue(slug), f.lines)
        return back(f"/v/{slug}/admin", "Decision types saved: "
                    + ", ".join(t["label"] for t in types) + ".")

    @r.post("/v/{slug}/decision-mail")
    def set_decision_mail(c: C, slug: str, f: Annotated[DecisionMailForm, Form()]) -> Response:
        c.svc.set_decision_mail(c.svc.venue(slug), f.template)
        return back(f"/v/{slug}/admin", "Decision e-mail saved.")

    @r.post("/v/{slug}/rebuttal-limit")
    def set_rebuttal_limit(c: C, slug: str, f: Annotated[RebuttalLimitForm, Form()]) -> Response:
        n = c.svc.set_rebuttal_limit(c.svc.venue(slug), f.max_chars)
        return back(f"/v/{slug}/admin", f"Rebuttals are limited to {n} characters per review.")

    @r.get("/me/rewards", response_class=HTMLResponse)
    def my_rewards(c: C) -> Response:
        return render(c, "rewards.html", r=c.svc.my_rewards())

    @r.get("/me/badges/{bid}/credential.json")
    def badge_credential(c: C, bid: int) -> Response:
        name, body = c.svc.badge_credential(bid)
        return Response(body, media_type="application/json", headers={
            "Content-Disposition": f'attachment; filename="{name}"'})

    @r.post("/me/profile")
    def set_profile(c: C, f: Annotated[ProfileForm, Form()]) -> Response:
        c.svc.set_profile_public(bool(f.public))
        return back("/me/rewards", "Your reviewer profile is now "
                    + ("public." if f.public else "private."))

    @r.get("/reviewers/{uid}", response_class=HTMLResponse)
    def reviewer_profile(c: C, uid: int) -> Response:
        return render(c, "profile.html", p=c.svc.reviewer_profile(uid))

    @r.get("/verify", response_class=HTMLResponse)
    def verify_page(c: C) -> Response:
        public()
        return render(c, "verify.html", result=None, credential="")

    @r.post("/verify", response_class=HTMLResponse)
    def verify(c: C, f: Annotated[VerifyForm, Form()]) -> Response:
        public()
        return render(c, "verify.html", result=c.svc.verify_credential(f.credential),
                      credential=f.credential)

    return r
