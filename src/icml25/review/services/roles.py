"""Roles: senior area chairs over area chairs, and sub-reviewers invited by
a reviewer for one paper.

* A **senior area chair** (venue role ``sac``) oversees the area chairs a program chair puts
  under them (one SAC per AC). On the papers of those ACs they see what the AC sees (reviews
  with their writers, assignments, discussion, meta-review) and manage them: assign and
  unassign reviewers, post in the discussion, rate reviews. Conflicts still apply; author
  identities, individual author ratings, chair notes and decisions stay with the chairs.
* A **sub-reviewer** is invited by an assigned reviewer, by e-mail of a verified account, for
  that one paper. They write **the inviting reviewer's review** (drafts and submission go
  through the inviter's assignment, so a paper keeps one review per assignment and the inviter
  stays answerable for it); the audit log records who wrote. Program chairs and the inviter see
  who they are; everyone else, the paper's area chairs included, sees "Sub-reviewer for
  Reviewer B". A sub-reviewer sees that paper (abstract, PDF, supplementary material) and the
  review they write, nothing else of the venue.

Every decision is the authority's; this module loads, checks input and writes.
"""

from __future__ import annotations

from collections import defaultdict

from sqlalchemy import delete, select

from icml25.review import models as m
from icml25.review.authority import Action, Viewer, authorize, facts_for
from icml25.review.errors import NotFound, ServiceError
from icml25.review.services.base import Service, is_verified
from icml25.review.services.forms import review_draft
from icml25.review.services.submissions import conflict_reason
from icml25.review.visibility import Bundle, can, listing_item, submission_view
from icml25.review.workflow import Phase, Role


class Roles(Service):
    """Senior area chairs and sub-reviewers."""

    # ------------------------------------------------------------------ senior area chairs
    def set_senior_ac(self, venue: m.Venue, ac_id: int, sac_id: int | None) -> None:
        """Put area chair ``ac_id`` under senior area chair ``sac_id`` (None: under nobody);
        program chairs only. Both must hold those roles in the venue."""
        authorize(Action.MANAGE_MEMBERS, facts_for(self.viewer(venue), None, Phase(venue.phase)))
        if Role.AC not in self.roles(venue.id, int(ac_id)):
            raise ServiceError("that account is not an area chair of this venue")
        self.db.execute(delete(m.SeniorAreaChair).where(
            m.SeniorAreaChair.venue_id == venue.id, m.SeniorAreaChair.ac_id == int(ac_id)))
        if sac_id is not None:
            if Role.SAC not in self.roles(venue.id, int(sac_id)):
                raise ServiceError("that account is not a senior area chair of this venue")
            self.db.add(m.SeniorAreaChair(venue_id=venue.id, sac_id=int(sac_id),
                                          ac_id=int(ac_id)))
        self._audit(venue.id, "member.senior_ac", f"user:{int(ac_id)}", sac=sac_id)
        self._commit()

    def senior_acs(self, venue: m.Venue) -> list[dict]:
        """Each senior area chair with the area chairs they oversee (program chairs)."""
        authorize(Action.VIEW_ADMIN, facts_for(self.viewer(venue), None, Phase(venue.phase)))
        sacs = self._members_with(venue, Role.SAC)
        acs = self._members_with(venue, Role.AC)
        under: dict[int, list[dict]] = defaultdict(list)
        for row in self.db.scalars(select(m.SeniorAreaChair).where(
                m.SeniorAreaChair.venue_id == venue.id)):
            if row.ac_id in acs and row.sac_id in sacs:
                under[row.sac_id].append(acs[row.ac_id])
        placed = {a["user_id"] for rows in under.values() for a in rows}
        return [{**sac, "area_chairs": sorted(under[uid], key=lambda a: a["name"])}
                for uid, sac in sorted(sacs.items(), key=lambda kv: kv[1]["name"])] + (
            [{"user_id": None, "name": "(no senior area chair)", "email": "",
              "area_chairs": [a for uid, a in acs.items() if uid not in placed]}]
            if len(placed) < len(acs) else [])

    def _members_with(self, venue: m.Venue, role: Role) -> dict[int, dict]:
        rows = self.db.execute(select(m.User.id, m.User.name, m.User.email).join(
            m.Membership, m.Membership.user_id == m.User.id).where(
            m.Membership.venue_id == venue.id, m.Membership.role == role.value))
        return {uid: {"user_id": uid, "name": name, "email": email} for uid, name, email in rows}

    def senior_ac_console(self, venue: m.Venue) -> dict:
        """A senior area chair's papers grouped by the area chair they oversee, each with its
        progress (what the submission views show them; a conflicted paper is left out)."""
        viewer = self.viewer(venue)
        if Role.SAC not in viewer.venue_roles:
            authorize(Action.VIEW_ADMIN, facts_for(viewer, None, Phase(venue.phase)))
        groups: dict[str, list[dict]] = defaultdict(list)
        for b in self.visible_candidates(venue):
            if not facts_for(viewer, b).senior_ac:
                continue
            view = submission_view(viewer, b)
            if view is None:
                continue
            item = listing_item(view)
            groups[item.get("progress", {}).get("area_chair") or "(none)"].append(item)
        return {"venue": venue.slug, "name": venue.name,
                "area_chairs": [{"name": ac, "papers": papers}
                                for ac, papers in sorted(groups.items())]}

    def assignable_people(self, sub_id: int) -> list[dict]:
        """Whom the actor may assign to a paper: the venue's reviewers (and, for a program
        chair, area chairs) who are not conflicted with it or already on it."""
        b = self.read_bundle(sub_id)
        viewer = self.viewer(b.venue)
        authorize(Action.ASSIGN, facts_for(viewer, b))
        roles = [Role.REVIEWER] + ([Role.AC] if can(viewer, Action.ASSIGN_AREA_CHAIR, b) else [])
        taken = b.conflict_user_ids | b.author_user_ids() | {a.user_id for a in b.assignments}
        rows = self.db.execute(select(m.User.id, m.User.name, m.Membership.role).join(
            m.Membership, m.Membership.user_id == m.User.id).where(
            m.Membership.venue_id == b.venue.id,
            m.Membership.role.in_([r.value for r in roles])).order_by(m.User.name))
        return [{"user_id": uid, "name": name, "role": role} for uid, name, role in rows
                if uid not in taken]

    # ------------------------------------------------------------------ sub-reviewers
    def invite_subreviewer(self, sub_id: int, email: str) -> m.Subreviewer:
        """An assigned reviewer invites a verified account to write their review of this
        paper (one sub-reviewer per reviewer and paper; never a conflicted account)."""
        b = self.bundle(sub_id)
        authorize(Action.INVITE_SUBREVIEWER, facts_for(self.viewer(b.venue), b))
        if any(x.inviter_id == self.actor.id for x in b.subreviewers):
            raise ServiceError("you already have a sub-reviewer for this paper; revoke them "
                               "first")
        user = self.db.scalar(select(m.User).where(m.User.email == (email or "").strip().lower()))
        why = self._not_invitable(b, user)
        if why:
            # one answer for every reason: telling the reviewer "conflicted" or "already on
            # this paper" would reveal the authors' institution or a co-reviewer's name; the
            # reason goes to the audit log, which the paper's chairs read
            self._audit(b.venue.id, "subreviewer.refused", f"submission:{b.submission.id}",
                        reason=why)
            self._commit()
            raise ServiceError("that account cannot be invited for this paper (it must be a "
                               "verified account with no conflict and no other part in it)")
        row = m.Subreviewer(submission_id=b.submission.id, inviter_id=self.actor.id,
                            user_id=user.id)
        self.db.add(row)
        self.db.flush()
        self._audit(b.venue.id, "subreviewer.invite", f"submission:{b.submission.id}",
                    user=user.id)
        self._mail(b.venue.id, user.email, f"[{b.venue.name}] Please help review submission "
                   f"#{b.submission.number}", "A reviewer invited you as a sub-reviewer of "
                   f"submission #{b.submission.number}. Read it and write the review at "
                   f"{self.settings.public_url.rstrip('/')}/s/{b.submission.id}",
                   b.submission.id)
        self._commit()
        return row

    def _not_invitable(self, b: Bundle, user: m.User | None) -> str | None:
        """Why ``user`` cannot be a sub-reviewer of the paper (None: they can)."""
        if user is None or not is_verified(user):
            return "no verified account"
        if user.id == self.actor.id or b.assignment_of(user.id) is not None:
            return "already assigned to the paper"
        if any(x.user_id == user.id for x in b.subreviewers):
            return "already a sub-reviewer of the paper"
        if user.id in b.conflict_user_ids or conflict_reason(
                user, b.submission, *self.svc.submissions.conflict_sources(b.submission)):
            return "conflicted with the paper"
        return None

    def revoke_subreviewer(self, sub_id: int, subreviewer_id: int) -> None:
        """Withdraw an invitation (the inviting reviewer or a program chair); the review
        written so far stays the inviter's."""
        b = self.bundle(sub_id)
        row = next((x for x in b.subreviewers if x.id == int(subreviewer_id)), None)
        if row is None:  # say so only to those who may see the paper
            authorize(Action.VIEW_SUBMISSION, facts_for(self.viewer(b.venue), b))
            raise NotFound("no such sub-reviewer")
        authorize(Action.VIEW_SUBREVIEWER_IDENTITY, facts_for(self.viewer(b.venue), b,
                                                              subreviewer=row))
        self.db.delete(row)
        self._audit(b.venue.id, "subreviewer.revoke", f"submission:{b.submission.id}",
                    user=row.user_id)
        self._commit()

    def subreviewers(self, sub_id: int) -> list[dict]:
        """A paper's sub-reviewers as the actor may see them (see the module docstring)."""
        b = self.read_bundle(sub_id)
        view = submission_view(self.viewer(b.venue), b)
        if view is None:
            authorize(Action.VIEW_SUBMISSION, facts_for(self.viewer(b.venue), b))
        return view.get("subreviewers", []) if view else []

    def save_delegated_review(self, sub_id: int, **fields: object) -> m.Review:
        """A sub-reviewer drafts or submits the inviting reviewer's review (the same fields
        and checks as :meth:`Reviewing.save_review`, which writes it as the inviter)."""
        b = self.read_bundle(sub_id)
        authorize(Action.WRITE_DELEGATED_REVIEW, facts_for(self.viewer(b.venue), b))
        inviter = self._inviter(b)
        self._audit(b.venue.id, "review.by_subreviewer", f"submission:{b.submission.id}",
                    inviter=inviter.id, submit=bool(fields.get("submit", True)))
        return self.svc.as_user(inviter).save_review(sub_id, **fields)

    def _inviter(self, b: Bundle) -> m.User:
        reviewers = {a.user_id for a in b.assignments if a.role == Role.REVIEWER}
        row = next(x for x in b.subreviewers
                   if x.user_id == self.actor.id and x.inviter_id in reviewers)
        return self.db.get(m.User, row.inviter_id)

    def role_actions(self, viewer: Viewer, b: Bundle) -> dict:
        """The submission page's role actions: invite a sub-reviewer, write as one (with the
        inviter's review so far), assign area chairs."""
        out = {"invite_subreviewer": can(viewer, Action.INVITE_SUBREVIEWER, b),
               "assign_area_chair": can(viewer, Action.ASSIGN_AREA_CHAIR, b),
               "write_delegated_review": can(viewer, Action.WRITE_DELEGATED_REVIEW, b)}
        if out["write_delegated_review"]:
            inviters = {x.inviter_id for x in b.subreviewers if x.user_id == viewer.user_id}
            review = next((r for r in b.reviews if r.reviewer_id in inviters), None)
            out["delegated_review"] = review_draft(review)
            out["review_form"] = self.svc.forms.form_to_write(b.venue, review)
        return out
