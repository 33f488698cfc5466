"""Pages of the chair, reviewer and author tools (issue 29): the assignment workbench's pin and
forbid form. Routes stay thin: parse a typed form, call one service method, render or redirect;
the services ask the authority."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form
from fastapi.responses import Response

from icml25.review.web.deps import C, back
from icml25.review.web.schemas import PairForm


def tool_pages() -> APIRouter:
    r = APIRouter()

    @r.post("/v/{slug}/assignment/pairs")
    def set_pair(c: C, slug: str, f: Annotated[PairForm, Form()]) -> Response:
        c.svc.set_pair_constraint(f.submission_id, f.user_id, f.kind)
        words = {"pin": "Pinned", "forbid": "Forbidden", "none": "Cleared"}
        return back(f"/v/{slug}/assignment", f"{words[f.kind]}: that reviewer and paper.")

    return r
