"""One clear error for a missing optional dependency ("extra")."""

from __future__ import annotations

import importlib
from types import ModuleType


class MissingExtraError(ImportError):
    """Raised when a subsystem needs an optional extra that is not installed.

    A subclass of :class:`ImportError`; the message names the extra and the ``pip install``
    line that provides it.

    Parameters
    ----------
    *args : object
        The message (as for any exception).

    Examples
    --------
    >>> try:
    ...     require_extra("nomod_xyz", "torch")
    ... except MissingExtraError as err:
    ...     print(err)
    'nomod_xyz' is not installed; it comes with the 'torch' extra: pip install 'icml25[torch]'
    """


def require_extra(module: str, extra: str) -> ModuleType:
    """Import ``module`` or raise one message naming the extra that provides it.

    Parameters
    ----------
    module : str
        Dotted name of the module to import.
    extra : str
        The ``icml25`` extra that installs it (named in the error).

    Returns
    -------
    types.ModuleType
        The imported module.

    Raises
    ------
    MissingExtraError
        If ``module`` is not installed.

    Examples
    --------
    >>> np = require_extra("numpy", "core")
    >>> np.__name__
    'numpy'
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        raise MissingExtraError(
            f"'{module}' is not installed; it comes with the '{extra}' extra: "
            f"pip install 'icml25[{extra}]'"
        ) from exc


# A heavy dependency -> the extra that brings it (for the one-line error on a core-only install).
EXTRA_OF = {
    "torch": "torch", "safetensors": "torch",
    "fastapi": "review", "sqlalchemy": "review", "alembic": "review", "argon2": "review",
    "uvicorn": "review", "jinja2": "review", "psycopg": "review", "ortools": "review",
    "cryptography": "review", "pydantic_settings": "review", "swagger_ui_bundle": "review",
    "multipart": "review", "openai": "llm", "transformers": "llm", "trl": "llm",
    "datasets": "llm", "sacrebleu": "llm", "sympy": "llm", "distributed": "dask",
}
# An extra -> the modules whose presence says it is installed.
EXTRA_MODULES = {"torch": ("torch", "safetensors"), "review": ("sqlalchemy", "fastapi"),
                 "llm": ("openai", "transformers"), "dask": ("dask", "distributed")}


def extra_message(extra: str, module: str | None = None) -> str:
    """``needs the 'torch' extra: pip install 'icml25[torch]'`` (naming ``module`` if given)."""
    what = f"'{module}', which comes with " if module else ""
    return f"needs {what}the '{extra}' extra: pip install 'icml25[{extra}]'"


def extra_installed(extra: str) -> bool:
    """Whether the modules of ``extra`` can be imported (checked without importing them)."""
    import importlib.util

    def found(module: str) -> bool:
        try:
            return importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a broken or blocked install counts as missing
            return False

    return all(found(m) for m in EXTRA_MODULES.get(extra, ()))
