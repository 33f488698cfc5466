"""The service layer: every action and every read of the platform goes through here.

:class:`ReviewService` is a thin facade over the services split by concern (each in
:mod:`icml25.review.services`): ``accounts``, ``venues``, ``submissions``, ``reviewing``,
``bidding``, ``assignments``, ``workbench``, ``dashboards``, ``decisions``, ``rewards``,
``reward_views``, ``forms``, ``outbox``, ``camera_ready``, ``roles``, ``mailing``,
``invitations``, ``conflicts`` and ``identity``. They share one per-request context
(database session, settings, actor and the actor's roles, loaded once).
Each method asks
:mod:`icml25.review.authority` before it changes anything, writes an audit event and queues
notification e-mails; reads return dictionaries built by :mod:`icml25.review.visibility`.

``svc.submissions.submit(...)`` and ``svc.submit(...)`` are the same call: the facade forwards
every public method name to the one service that defines it.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from icml25.review import models as m
from icml25.review.db import Settings
from icml25.review.errors import (  # noqa: F401 (re-exported: the errors services raise)
    LoginFailed,
    LoginThrottled,
    NotAllowed,
    NotFound,
    ServiceError,
)
from icml25.review.services.accounts import Accounts
from icml25.review.services.assignments import Assignments
from icml25.review.services.base import Context, Service, UsesContext
from icml25.review.services.bidding import Bidding
from icml25.review.services.camera_ready import CameraReady
from icml25.review.services.conflicts import Conflicts
from icml25.review.services.dashboards import Dashboards
from icml25.review.services.decisions import Decisions
from icml25.review.services.forms import ReviewForms
from icml25.review.services.identity import Identity
from icml25.review.services.invitations import Invitations
from icml25.review.services.mailing import Mailing
from icml25.review.services.outbox import Outbox
from icml25.review.services.reviewing import Reviewing
from icml25.review.services.reward_views import RewardViews
from icml25.review.services.rewards import Rewards
from icml25.review.services.roles import Roles
from icml25.review.services.submissions import Submissions
from icml25.review.services.venues import Venues
from icml25.review.services.workbench import Workbench

SERVICES: dict[str, type[Service]] = {
    "accounts": Accounts, "venues": Venues, "submissions": Submissions,
    "reviewing": Reviewing, "assignments": Assignments, "rewards": Rewards, "outbox": Outbox,
    "bidding": Bidding, "workbench": Workbench, "dashboards": Dashboards,
    "reward_views": RewardViews, "decisions": Decisions, "forms": ReviewForms,
    "camera_ready": CameraReady, "roles": Roles, "mailing": Mailing,
    "invitations": Invitations, "conflicts": Conflicts, "identity": Identity,
}


def _public_methods(cls: type) -> set[str]:
    return {n for n in vars(cls) if not n.startswith("_") and callable(getattr(cls, n))}


def _routing() -> dict[str, str]:
    """Public method name -> the service that defines it (shared base methods -> 'venues')."""
    route: dict[str, str] = {n: "venues" for n in _public_methods(Service)}
    for attr, cls in SERVICES.items():
        for name in _public_methods(cls):
            if name in route and route[name] != "venues":
                raise TypeError(f"{name} is defined by two services")
            route[name] = attr
    return route


ROUTING = _routing()


class ReviewService(UsesContext):
    """All actions and reads, performed as ``actor`` (None = anonymous)."""

    accounts: Accounts
    venues: Venues
    submissions: Submissions
    reviewing: Reviewing
    assignments: Assignments
    bidding: Bidding
    workbench: Workbench
    dashboards: Dashboards
    reward_views: RewardViews
    decisions: Decisions
    forms: ReviewForms
    rewards: Rewards
    outbox: Outbox
    camera_ready: CameraReady
    roles: Roles
    mailing: Mailing
    invitations: Invitations
    conflicts: Conflicts
    identity: Identity

    def __init__(self, db: Session, settings: Settings, actor: m.User | None = None) -> None:
        self.ctx = Context(db, settings, actor)
        for attr, cls in SERVICES.items():
            setattr(self, attr, cls(self))

    def as_user(self, user: m.User | None) -> ReviewService:
        """The same database session and settings, acting as another user (the epoch this
        request read stays a valid label for what it reads next)."""
        other = ReviewService(self.db, self.settings, user)
        if "epoch" in self.ctx.__dict__:
            other.ctx.__dict__["epoch"] = self.ctx.epoch
        return other

    def __getattr__(self, name: str):  # noqa: ANN204
        service = ROUTING.get(name)
        if service is None:
            raise AttributeError(f"ReviewService has no method {name!r}")
        return getattr(self.__dict__[service], name)
