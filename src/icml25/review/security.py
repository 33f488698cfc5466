"""Passwords (argon2), random secrets, token hashing and PDF upload checks."""

from __future__ import annotations

import hashlib
import hmac
import io
import math
import secrets
import zipfile

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


ZIP_MAX_EXPANSION = 20  # the files of a zip may unpack to at most 20 x its size limit
ZIP_MAX_FILES = 2000


def check_zip(data: bytes, max_bytes: int) -> int:
    """Refuse anything that is not a readable zip archive within the size limit; returns the
    number of files in it.

    Checked by content, not by name: the zip signature, a readable central directory, no
    encrypted member, no absolute or ``..`` path, at most :data:`ZIP_MAX_FILES` entries
    unpacking to at most :data:`ZIP_MAX_EXPANSION` times the limit (declared sizes, checked
    before anything is unpacked), and every member's CRC-32 right (each is read once, never
    beyond its declared size).
    """
    if not data:
        raise UploadError("the uploaded file is empty")
    if len(data) > max_bytes:
        raise UploadError(f"the archive is too large ({format_size(len(data), up=True)}); the "
                          f"limit is {format_size(max_bytes)}")
    if not data.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        raise UploadError("the file is not a zip archive (it does not start with PK)")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            infos = z.infolist()
            _check_members(infos, max_bytes)
            bad = z.testzip()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, ValueError,
            NotImplementedError) as exc:
        raise UploadError(f"the zip archive cannot be read ({exc})") from None
    if bad is not None:
        raise UploadError(f"the zip archive is damaged (bad checksum of '{bad}')")
    return sum(1 for i in infos if not i.is_dir())


def _check_members(infos: list[zipfile.ZipInfo], max_bytes: int) -> None:
    if len(infos) > ZIP_MAX_FILES:
        raise UploadError(f"the zip archive has {len(infos)} entries (at most {ZIP_MAX_FILES})")
    if sum(i.file_size for i in infos) > ZIP_MAX_EXPANSION * max_bytes:
        raise UploadError("the zip archive unpacks to more than "
                          f"{format_size(ZIP_MAX_EXPANSION * max_bytes)}")
    for i in infos:
        if i.flag_bits & 0x1:
            raise UploadError(f"the zip archive has an encrypted file ('{i.filename}')")
        parts = i.filename.replace("\\", "/").split("/")
        if i.filename.startswith(("/", "\\")) or ".." in parts or ":" in parts[0]:
            raise UploadError(f"the zip archive has an unsafe path ('{i.filename}')")


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
