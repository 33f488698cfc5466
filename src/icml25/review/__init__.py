"""A conference review platform built on two-stage author feedback (Kim, Lee & Lee, ICML 2025).

Pure parts import nothing heavy: :mod:`~icml25.review.workflow` (the process state machine),
:mod:`~icml25.review.authority` (the one authority for who may see and do what),
:mod:`~icml25.review.matching` (optimal assignment at scale), :mod:`~icml25.review.affinity`
(TF-IDF), :mod:`~icml25.review.rewards` (quality score, badges, impact),
:mod:`~icml25.review.credentials` (Ed25519) and :mod:`~icml25.review.simulation`. The platform
itself (models, services, web app) needs the ``review`` extra: ``pip install 'icml25[review]'``.
"""

from icml25.review.authority import Action, Facts, allowed, authorize, may
from icml25.review.credentials import CredentialError
from icml25.review.credentials import sign as sign_credential
from icml25.review.credentials import verify as verify_credential
from icml25.review.matching import AssignmentError
from icml25.review.matching import Problem as AssignmentProblem
from icml25.review.matching import quality as assignment_quality
from icml25.review.matching import solve as solve_assignment
from icml25.review.rewards import award_badges, impact_scores, quality_score
from icml25.review.workflow import (
    PHASE_ORDER,
    NotAllowed,
    Phase,
    PhaseFacts,
    Role,
    TransitionError,
    check_transition,
    next_phase,
    stage1_released,
    stage2_released,
)

__all__ = [
    "PHASE_ORDER",
    "Action",
    "AssignmentError",
    "AssignmentProblem",
    "CredentialError",
    "assignment_quality",
    "award_badges",
    "impact_scores",
    "quality_score",
    "sign_credential",
    "solve_assignment",
    "verify_credential",
    "Facts",
    "NotAllowed",
    "Phase",
    "PhaseFacts",
    "Role",
    "TransitionError",
    "allowed",
    "authorize",
    "may",
    "check_transition",
    "create_app",
    "next_phase",
    "stage1_released",
    "stage2_released",
]


def create_app(*args, **kwargs):  # noqa: ANN002, ANN003, ANN201
    """Build the platform's ASGI app: pages at ``/``, the JSON API at ``/api/v1``
    (see :func:`icml25.review.web.create_app`).

    Parameters
    ----------
    settings : icml25.review.settings.Settings or None, default=None
        Runtime settings; None reads them from the ``ICML25_*`` environment
        (``Settings.from_env``).
    engine : sqlalchemy.engine.Engine or None, default=None
        The database engine; None makes one from ``settings.database_url``.

    Returns
    -------
    ASGI application
        The FastAPI app wrapped in admission control and security headers; its
        ``state.settings`` and ``state.engine`` hold what it runs with.

    Raises
    ------
    icml25.core.errors.MissingExtraError
        When the ``review`` extra (FastAPI) is not installed.

    Examples
    --------
    >>> from fastapi.testclient import TestClient
    >>> from icml25.review import create_app
    >>> from icml25.review.settings import Settings
    >>> app = create_app(Settings.from_env(review_home=".", tick_seconds=0))
    >>> client = TestClient(app)
    >>> client.get("/login").status_code
    200
    >>> client.get("/api/v1/venues").status_code  # the API needs a personal access token
    403
    """
    from icml25.core import require_extra

    require_extra("fastapi", "review")
    from icml25.review.web import create_app as _create

    return _create(*args, **kwargs)
