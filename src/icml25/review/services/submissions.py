"""Submissions and conflicts: creating and editing submissions, authors, PDFs, automatic
conflicts, and the submission page."""

from __future__ import annotations

import re
from dataclasses import asdict
from pathlib import Path

from sqlalchemy import delete, func, select

from icml25.review import models as m
from icml25.review.authority import Action, Viewer, authorize, facts_for
from icml25.review.decisions import types_of
from icml25.review.errors import NotAllowed, NotFound, ServiceError
from icml25.review.people import name_key
from icml25.review.security import check_pdf
from icml25.review.services.base import EMAIL_RE, PUBLIC_DOMAINS, Service, clean_text, domain
from icml25.review.services.forms import review_draft
from icml25.review.visibility import Bundle, can, listing_item, submission_view, venue_view
from icml25.review.workflow import Phase


class Submissions(Service):
    """Submissions and conflicts."""

    def submit(self, venue: m.Venue, *, title: str, abstract: str, keywords: str = "",
               authors: list[dict], declared_conflicts: str = "",
               pdf: bytes | None = None) -> m.Submission:
        """Create a submission with ordered authors (the submitter must be one of them)."""
        user = self._require_login()
        authorize(Action.SUBMIT, facts_for(self.viewer(venue), None, Phase(venue.phase)))
        clean_authors = self._clean_authors(authors)
        if user.email not in {a["email"] for a in clean_authors}:
            raise ServiceError("include yourself (your account's e-mail) among the authors")
        number = (self.db.scalar(select(func.max(m.Submission.number)).where(
            m.Submission.venue_id == venue.id)) or 0) + 1
        sub = m.Submission(venue_id=venue.id, number=number,
                           title=clean_text(title, "title", "title"),
                           abstract=clean_text(abstract, "abstract", "abstract"),
                           keywords=clean_text(keywords, "keywords", "keywords", required=False),
                           declared_conflicts=clean_text(declared_conflicts, "declared conflicts",
                                                    required=False),
                           submitter_id=user.id)
        self.db.add(sub)
        self.db.flush()
        self._set_authors(sub, clean_authors)
        if pdf is not None:
            self._store_pdf(venue, sub, pdf)
        self.db.flush()
        self.recompute_conflicts(sub)
        self._audit(venue.id, "submission.create", f"submission:{sub.id}")
        for a in clean_authors:
            self._mail(venue.id, a["email"], f"[{venue.name}] Submission #{number} received",
                       f"Submission #{number} was received.", sub.id)
        self._commit()
        return sub

    def _clean_authors(self, authors: list[dict]) -> list[dict]:
        out = []
        for a in authors:
            name = (a.get("name") or "").strip()
            email = (a.get("email") or "").strip().lower()
            if not name and not email:
                continue
            if not EMAIL_RE.match(email):
                raise ServiceError(f"author '{name}' needs a valid e-mail address")
            out.append({"name": clean_text(name, "author name", "name"), "email": email,
                        "affiliation": clean_text(a.get("affiliation"), "affiliation", "name",
                                             required=False)})
        if not out:
            raise ServiceError("at least one author is required")
        if len({a["email"] for a in out}) != len(out):
            raise ServiceError("each author appears once")
        return out

    def _set_authors(self, sub: m.Submission, authors: list[dict]) -> None:
        self.db.execute(delete(m.SubmissionAuthor).where(
            m.SubmissionAuthor.submission_id == sub.id))
        for i, a in enumerate(authors):
            # only a verified owner of the address becomes a co-author (else anyone could
            # register a co-author's address and read the submission)
            uid = self.db.scalar(select(m.User.id).where(
                m.User.email == a["email"], m.User.email_verified_at.is_not(None)))
            self.db.add(m.SubmissionAuthor(submission_id=sub.id, position=i, user_id=uid,
                                           name_key=name_key(a["name"]), **a))
        self.db.flush()
        self.db.expire(sub, ["authors"])

    def _store_pdf(self, venue: m.Venue, sub: m.Submission, data: bytes) -> None:
        check_pdf(data, venue.max_pdf_bytes)
        path, digest = self._store_upload(venue, str(sub.number), data, "pdf")
        sub.pdf_path, sub.pdf_sha256, sub.pdf_size = path, digest, len(data)

    def update_submission(self, sub_id: int, *, title: str | None = None,
                          abstract: str | None = None, keywords: str | None = None,
                          authors: list[dict] | None = None, pdf: bytes | None = None) -> None:
        """Edit a submission during the submission phase (authors only)."""
        b = self.bundle(sub_id)
        authorize(Action.EDIT_SUBMISSION, facts_for(self.viewer(b.venue), b))
        sub = b.submission
        if title is not None:
            sub.title = clean_text(title, "title", "title")
        if abstract is not None:
            sub.abstract = clean_text(abstract, "abstract", "abstract")
        if keywords is not None:
            sub.keywords = clean_text(keywords, "keywords", "keywords", required=False)
        if authors is not None:
            self._set_authors(sub, self._clean_authors(authors))
        if pdf is not None:
            self._store_pdf(b.venue, sub, pdf)
        self.recompute_conflicts(sub)
        self._audit(b.venue.id, "submission.update", f"submission:{sub.id}")
        self._commit()

    def withdraw(self, sub_id: int) -> None:
        """Withdraw a submission (authors, before decisions)."""
        b = self.bundle(sub_id)
        authorize(Action.WITHDRAW, facts_for(self.viewer(b.venue), b))
        b.submission.status = "withdrawn"
        self._audit(b.venue.id, "submission.withdraw", f"submission:{sub_id}")
        self._commit()

    def pdf(self, sub_id: int) -> Path:
        """Path of the PDF, if the actor may download it."""
        b = self.bundle(sub_id)
        authorize(Action.DOWNLOAD_PDF, facts_for(self.viewer(b.venue), b))
        if not b.submission.pdf_path:
            raise NotFound("no PDF uploaded")
        return Path(b.submission.pdf_path)

    def recompute_conflicts(self, sub: m.Submission) -> None:
        """This paper's conflicts (and no other paper's): authors themselves, institution
        domains, co-authorship, declarations (see :mod:`.conflicts`)."""
        self.svc.conflicts.update_paper_conflicts(sub)

    def conflict_sources(self, sub: m.Submission) -> tuple[set[str], set[str], set[str]]:
        """What conflicts are computed from: the authors' addresses, their institutions'
        domains (public mail domains excluded) and the addresses or domains declared."""
        emails = set(self.db.scalars(select(m.SubmissionAuthor.email).where(
            m.SubmissionAuthor.submission_id == sub.id)))
        domains = {domain(e) for e in emails} - PUBLIC_DOMAINS
        declared = {t.strip().lower() for t in re.split(r"[,;\s]+", sub.declared_conflicts or "")
                    if t.strip()}
        return emails, domains, declared

    def submission_page(self, sub_id: int) -> dict:
        """The actor's view of one submission, plus the actions open to them."""
        b = self.read_bundle(sub_id)
        viewer = self.viewer(b.venue)
        view = submission_view(viewer, b)
        if view is None:
            raise NotAllowed("you have no access to this submission")
        view["venue_view"] = venue_view(viewer, b.venue,
                                        authored=viewer.user_id in b.author_user_ids())
        view["can"] = (self._open_actions(viewer, b) | self.svc.roles.role_actions(viewer, b)
                       | self.svc.camera_ready.file_actions(viewer, b))
        return view

    def _open_actions(self, viewer: Viewer, b: Bundle) -> dict:
        can_do = {a.value: can(viewer, a, b) for a in (
            Action.EDIT_SUBMISSION, Action.WITHDRAW, Action.BID, Action.ASSIGN,
            Action.WRITE_REVIEW, Action.POST_DISCUSSION, Action.WRITE_METAREVIEW,
            Action.DECIDE)}
        can_do["feedback_on"] = [r.id for r in b.reviews
                                 if can(viewer, Action.GIVE_FEEDBACK, b, review=r)
                                 and r.id not in b.feedback]
        can_do["rebut_on"] = [r.id for r in b.reviews
                              if can(viewer, Action.WRITE_REBUTTAL, b, review=r)]
        own = next((r for r in b.reviews if r.reviewer_id == viewer.user_id), None)
        if can_do["write_review"]:
            can_do["my_review"] = review_draft(own)
            can_do["review_form"] = self.svc.forms.form_to_write(b.venue, own)
        if can_do["decide"]:
            can_do["decision_types"] = [asdict(t) for t in types_of(b.venue.decision_types)]
        if can_do["bid"]:
            can_do["my_bid"] = b.bids.get(viewer.user_id, 0)
        return can_do

    def venue_submissions(self, venue: m.Venue) -> list[dict]:
        """Short views of every submission the actor may see in ``venue``."""
        viewer = self.viewer(venue)
        out = []
        for b in self.visible_candidates(venue):
            v = submission_view(viewer, b)
            if v is not None:
                out.append(listing_item(v))
        return out


def conflict_reason(u: m.User, sub: m.Submission, author_emails: set[str], domains: set[str],
                    declared: set[str]) -> str | None:
    """Why account ``u`` is conflicted with ``sub`` (None: it is not)."""
    d = domain(u.email)
    if u.email in author_emails or u.id == sub.submitter_id:
        return "author"
    if u.email in declared:
        return "declared by authors"
    if d in domains or ("@" + d) in declared:
        return f"institution domain {d}"
    return None
