"""Passwords (argon2), random secrets, token hashing and PDF upload checks."""

from __future__ import annotations

import hashlib
import hmac
import secrets

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError


class UploadError(ValueError):
    """An uploaded file was refused (the message is meant for the user)."""


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


def check_pdf(data: bytes, max_bytes: int) -> None:
    """Refuse anything that is not a PDF by content, or is empty or too large.

    A PDF starts with ``%PDF-`` (after at most 1 KiB of junk, as readers allow) and ends with an
    ``%%EOF`` marker in its last KiB. The file name and the browser's content type are ignored.
    """
    if not data:
        raise UploadError("the uploaded file is empty")
    if len(data) > max_bytes:
        raise UploadError(
            f"the PDF is too large ({len(data) / 1e6:.1f} MB); the limit is "
            f"{max_bytes / 1e6:.1f} MB")
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
