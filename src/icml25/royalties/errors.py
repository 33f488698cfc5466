"""The one error type the royalties room raises for bad input."""

from __future__ import annotations


class RoyaltyInputError(ValueError):
    """Bad input at the boundary: empty corpora, unreadable files, a pool that is not a positive
    amount, too many holders for the exact path, and the like. The message says what to fix."""
