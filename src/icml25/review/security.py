"""Passwords (argon2), random secrets, token hashing and PDF upload checks."""

from __future__ import annotations

import hashlib
import hmac
import math
import secrets

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from icml25.review.errors import UploadError  # noqa: F401 (re-exported)


def make_hasher(time_cost: int = 3, memory_kib: int = 65536) -> PasswordHasher:
    """An argon2id hasher with the given cost."""
    return PasswordHasher(time_cost=time_cost, memory_cost=memory_kib, parallelism=1)


def hash_password(hasher: PasswordHasher, password: str) -> str:
    """argon2id hash of ``password``; refuses passwords shorter than 8 characters."""
    if len(password) < 8:
        raise ValueError("passwords need at least 8 characters")
    return hasher.hash(password)


def verify_password(hasher: PasswordHasher, stored: str, password: str) -> bool:
    """Constant-time check of ``password`` against an argon2 hash (False on any mismatch)."""
    try:
        return hasher.verify(stored, password)
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


# A fixed hash to verify against when the e-mail is unknown, so timing does not reveal accounts.
def dummy_verify(hasher: PasswordHasher) -> None:
    """Spend the same time as a real verification."""
    verify_password(hasher, _dummy_hash(hasher), "not-the-password")


_DUMMY: dict[tuple[int, int], str] = {}


def _dummy_hash(hasher: PasswordHasher) -> str:
    key = (hasher.time_cost, hasher.memory_cost)
    if key not in _DUMMY:
        _DUMMY[key] = hasher.hash(secrets.token_urlsafe(16))
    return _DUMMY[key]


def new_secret(nbytes: int = 32) -> str:
    """URL-safe random secret."""
    return secrets.token_urlsafe(nbytes)


def token_hash(token: str) -> str:
    """SHA-256 hex of a session or API token (tokens are high-entropy, so no salt needed)."""
    return hashlib.sha256(token.encode()).hexdigest()


def same(a: str | None, b: str | None) -> bool:
    """Constant-time string comparison that is False when either side is empty."""
    if not a or not b:
        return False
    return hmac.compare_digest(a.encode(), b.encode())


def format_size(n: int, up: bool = False) -> str:
    """Bytes in binary units, as forms and errors show them: ``10 MiB``, ``10.1 MiB``.

    ``up`` rounds up to the shown precision, so a file just over a limit never reads as the
    limit itself.
    """
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            value = n / size
            value = math.ceil(value * 10) / 10 if up else round(value, 1)
            return f"{value:g} {unit}"
    return f"{n} bytes"


def check_pdf(data: bytes, max_bytes: int) -> None:
    """Refuse anything that is not a PDF by content, or is empty or too large.

    A PDF starts with ``%PDF-`` (after at most 1 KiB of junk, as readers allow) and ends with an
    ``%%EOF`` marker in its last KiB. The file name and the browser's content type are ignored.
    """
    if not data:
        raise UploadError("the uploaded file is empty")
    if len(data) > max_bytes:
        raise UploadError(f"the PDF is too large ({format_size(len(data), up=True)}); the "
                          f"limit is {format_size(max_bytes)}")
    if b"%PDF-" not in data[:1024]:
        raise UploadError("the file is not a PDF (it does not start with %PDF-)")
    if b"%%EOF" not in data[-1024:]:
        raise UploadError("the file is not a complete PDF (no %%EOF marker at its end)")


def minimal_pdf(text: str = "icml25 review demo") -> bytes:
    """A tiny valid one-page PDF (for demos and tests)."""
    safe = text.replace("\\", "").replace("(", "").replace(")", "")[:80]
    stream = f"BT /F1 18 Tf 72 720 Td ({safe}) Tj ET".encode()
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objs, start=1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode()
    for off in offsets:
        out += f"{off:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)
