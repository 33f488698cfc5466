"""The errors of the review platform, each meant for the user and mapped to one HTTP status
(see :data:`HTTP_STATUS`, used by the web layer's exception handlers)."""

from __future__ import annotations


class ServiceError(ValueError):
    """Invalid input (the message is meant for the user)."""


class NotFound(LookupError):
    """The object does not exist (or is not visible to the actor)."""


class NotAllowed(PermissionError):
    """An action the actor may not perform (the message says why).

    Parameters
    ----------
    *args
        The message, as for the built-in exception.

    Examples
    --------
    >>> from icml25.review import Action, Facts, NotAllowed, Phase, authorize
    >>> try:
    ...     authorize(Action.ADVANCE_PHASE, Facts(Phase.REVIEWING))
    ... except NotAllowed as exc:
    ...     print(type(exc).__name__, isinstance(exc, PermissionError))
    NotAllowed True
    """


class TransitionError(ValueError):
    """A phase change the process does not allow (the message says why).

    Parameters
    ----------
    *args
        The message, as for the built-in exception.

    Examples
    --------
    >>> from icml25.review import PhaseFacts, TransitionError, check_transition
    >>> try:
    ...     check_transition("submission", "reviewing", PhaseFacts())
    ... except TransitionError as exc:
    ...     print(exc)
    cannot move from 'submission' to 'reviewing'; the next phase is 'bidding'
    """


class LoginFailed(PermissionError):
    """Wrong e-mail or password."""


class LoginThrottled(PermissionError):
    """Too many failed logins recently."""


class UploadError(ValueError):
    """An uploaded file was refused (the message is meant for the user)."""


class AssignmentError(ValueError):
    """The assignment constraints cannot be met (the message says which).

    Parameters
    ----------
    *args
        The message, as for ``ValueError``.

    Examples
    --------
    >>> from icml25.review import AssignmentError, AssignmentProblem, solve_assignment
    >>> p = AssignmentProblem.build(2, 3, [0, 0, 1, 1], [0, 1, 0, 1], [1, 1, 1, 1], k=2,
    ...                             max_load=1)
    >>> try:
    ...     solve_assignment(p)
    ... except AssignmentError as exc:
    ...     print(exc)
    4 reviews needed but reviewers can take at most 3 (raise max_load or add reviewers)
    """


HTTP_STATUS: dict[type[Exception], int] = {
    NotAllowed: 403, NotFound: 404, ServiceError: 400, UploadError: 400, AssignmentError: 400,
    TransitionError: 409, LoginFailed: 401, LoginThrottled: 429,
}
