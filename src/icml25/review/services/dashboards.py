"""The chairs' submissions table: per paper, reviews done of assigned, missing and late
reviewers, mean score and spread, the authors' ratings and the area chair; searchable,
sortable and exported as CSV.

Every row is derived from the submission view the authority already rendered for the chair
(:func:`~icml25.review.visibility.submission_view`), so the table shows nothing the chair's
pages would not: a paper they are conflicted with is not in it at all.
"""

from __future__ import annotations

import csv
import io
from statistics import fmean

from icml25.review import models as m
from icml25.review.authority import Action, authorize, facts_for
from icml25.review.errors import ServiceError
from icml25.review.services.base import Service, timeline_of, utcnow
from icml25.review.visibility import submission_view
from icml25.review.workflow import Phase, Role, at_least, deadline_end


def _none_last(value: object, number: int) -> tuple:
    return (value is None, value if value is not None else 0, number)


# how the table may be sorted (validated once, in submissions_table)
TABLE_SORTS = {
    "number": lambda r: r["number"],
    "title": lambda r: (r["title"].lower(), r["number"]),
    "done": lambda r: _none_last(r.get("done_share"), r["number"]),
    "missing": lambda r: _none_last(r.get("missing"), r["number"]),
    "late": lambda r: _none_last(len(r["late"]) if "late" in r else None, r["number"]),
    "mean_score": lambda r: _none_last(r.get("mean_score"), r["number"]),
    "spread": lambda r: _none_last(r.get("spread"), r["number"]),
    "rating": lambda r: _none_last(r.get("mean_rating"), r["number"]),
}
CSV_COLUMNS = ("number", "title", "status", "decision", "reviews_done", "reviewers",
               "missing", "late", "mean_score", "spread", "ratings", "mean_rating",
               "area_chair")


class Dashboards(Service):
    """The chairs' dashboards."""

    def submissions_table(self, venue: m.Venue, query: str = "", sort: str = "number",
                          descending: bool = False) -> dict:
        """Every submission's progress (chairs): see the module docstring. ``query`` keeps
        rows whose number, title, keywords, reviewer or area chair names contain every word."""
        if sort not in TABLE_SORTS:
            raise ServiceError(f"sort is one of: {', '.join(TABLE_SORTS)}")
        viewer = self.viewer(venue)
        authorize(Action.VIEW_ADMIN, facts_for(viewer, None, Phase(venue.phase)))
        late_now = self._reviews_late(venue)
        rows = []
        for b in self.visible_candidates(venue):
            view = submission_view(viewer, b)
            if view is not None:
                rows.append(table_row(view, late_now))
        words = query.lower().split()
        rows = [r for r in rows if all(w in r["search_text"] for w in words)]
        rows.sort(key=TABLE_SORTS[sort], reverse=descending)
        for r in rows:
            del r["search_text"]
        return {"rows": rows, "sort": sort, "descending": descending, "query": query,
                "late_now": late_now, "n_total": len(rows)}

    def submissions_csv(self, venue: m.Venue, query: str = "", sort: str = "number",
                        descending: bool = False) -> str:
        """The table as CSV (UTF-8, one header row; cells that a spreadsheet would run as a
        formula are prefixed with a quote)."""
        table = self.submissions_table(venue, query, sort, descending)
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(CSV_COLUMNS)
        for r in table["rows"]:
            writer.writerow([_cell(_csv_value(r, c)) for c in CSV_COLUMNS])
        return out.getvalue()

    def _reviews_late(self, venue: m.Venue) -> bool:
        """Whether a review not submitted now is late: the venue left reviewing, or the
        reviewing deadline passed."""
        if at_least(venue.phase, Phase.FEEDBACK):
            return True
        day = timeline_of(venue).get(Phase.REVIEWING.value)
        return bool(day) and utcnow() > deadline_end(day)


def table_row(view: dict, late_now: bool) -> dict:
    """One row of the table from a submission view (pure)."""
    row = {"id": view["id"], "number": view["number"], "title": view["title"],
           "status": view["status"], "decision": view.get("decision")}
    text = f"#{view['number']} {view['number']} {view['title']} {view.get('keywords', '')}"
    if "assignments" not in view:  # not staff on this paper (a conflicted chair)
        return row | {"hidden": True, "search_text": text.lower()}
    reviewers = [a for a in view["assignments"] if a["role"] == Role.REVIEWER]
    reviews = [r for r in view.get("reviews", []) if r.get("submitted")]
    done = {r["reviewer"] for r in reviews}
    missing = [a["name"] for a in reviewers if a["pseudonym"] not in done]
    scores = [r["score"] for r in reviews if r.get("score") is not None]
    ratings_visible = any("feedback" in r for r in reviews)
    rated = [r["feedback"] for r in reviews if r.get("feedback")]
    ac = next((a["name"] for a in view["assignments"] if a["role"] == Role.AC), None)
    row |= {
        "reviewers": len(reviewers), "reviews_done": len(reviews),
        "done_share": len(reviews) / len(reviewers) if reviewers else None,
        "missing": len(missing), "missing_names": missing,
        "late": missing if late_now else [],
        "mean_score": round(fmean(scores), 2) if scores else None,
        "spread": (max(scores) - min(scores)) if scores else None,
        "ratings": len(rated) if ratings_visible else None,
        "mean_rating": (round(fmean((f["comprehension"] + f["constructiveness"]) / 2
                                    for f in rated), 2) if rated else None),
        "mean_comprehension": round(fmean(f["comprehension"] for f in rated), 2)
        if rated else None,
        "mean_constructiveness": round(fmean(f["constructiveness"] for f in rated), 2)
        if rated else None,
        "llm_flags": sum(1 for f in rated if f["llm_suspected"]),
        "area_chair": ac,
    }
    names = " ".join(a["name"] for a in view["assignments"])
    return row | {"search_text": f"{text} {names}".lower()}


def _csv_value(row: dict, column: str) -> object:
    value = row.get(column)
    if column == "late":
        return "; ".join(value or [])
    return "" if value is None else value


def _cell(value: object) -> object:
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value
