"""icml25: the ICML 2025 outstanding papers as installable software.

Each paper is a subpackage ("room"): ``icml25.conformal``, ``icml25.worstoff``, ``icml25.mdm``,
``icml25.creativity``, ``icml25.missing_score``, ``icml25.collab``, ``icml25.review`` and
``icml25.royalties``. Shared plumbing lives in ``icml25.core``; the command line in ``icml25.cli``.
"""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _version

try:
    __version__ = _version("icml25")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
