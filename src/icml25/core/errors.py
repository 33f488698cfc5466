"""One clear error for a missing optional dependency ("extra")."""

from __future__ import annotations

import importlib
from types import ModuleType


class MissingExtraError(ImportError):
    """Raised when a subsystem needs an optional extra that is not installed."""


def require_extra(module: str, extra: str) -> ModuleType:
    """Import ``module`` or raise one message naming the extra that provides it.

    >>> np = require_extra("numpy", "core")
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        raise MissingExtraError(
            f"'{module}' is not installed; it comes with the '{extra}' extra: "
            f"pip install 'icml25[{extra}]'"
        ) from exc
