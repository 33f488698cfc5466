"""The one error type the royalties room raises for bad input."""

from __future__ import annotations


class RoyaltyInputError(ValueError):
    """Bad input at the boundary: empty corpora, unreadable files, a pool that is not a positive
    amount, too many holders for the exact path, and the like. The message says what to fix.

    A subclass of :class:`ValueError`, so ``except ValueError`` also catches it.

    Parameters
    ----------
    *args : object
        The message (as for any exception).

    Examples
    --------
    >>> from icml25.royalties import FunctionUtility
    >>> try:
    ...     FunctionUtility([], lambda s: 0.0)
    ... except RoyaltyInputError as err:
    ...     print(err)
    a utility needs at least one player
    """
