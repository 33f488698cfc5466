"""Verifiable badge credentials: JSON signed with the venue's Ed25519 key (``cryptography``).

A credential is ``{"credential": {...claims...}, "proof": {...}}``. The signature covers the
canonical JSON of ``credential`` (sorted keys, no spaces, UTF-8), so any change to a claim -- a
name, a tier, a date -- breaks it. The proof names the key by its id (first 16 hex digits of the
SHA-256 of the raw public key); a verifier must check the signature against the venue's
*published* key (``icml25 review public-key`` or ``GET /api/v1/venues/{slug}/public-key``), never
against a key carried inside the credential itself.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass

PROOF_TYPE = "Ed25519Signature"


class CredentialError(ValueError):
    """A credential that does not verify (the message says why).

    Parameters
    ----------
    *args
        The message, as for ``ValueError``.

    Examples
    --------
    >>> from icml25.review import CredentialError, verify_credential
    >>> try:
    ...     verify_credential("{not json", "00" * 32)
    ... except CredentialError as exc:
    ...     print(exc)
    not JSON
    """


def _crypto():  # noqa: ANN202
    from icml25.core import require_extra

    require_extra("cryptography", "review")
    from cryptography.hazmat.primitives.asymmetric import ed25519

    return ed25519


def canonical(obj: object) -> bytes:
    """The bytes that are signed: sorted keys, compact separators, UTF-8."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def new_keypair() -> tuple[str, str]:
    """A fresh Ed25519 key pair as (private, public) raw bytes in hex."""
    ed = _crypto()
    from cryptography.hazmat.primitives import serialization as ser

    key = ed.Ed25519PrivateKey.generate()
    priv = key.private_bytes(ser.Encoding.Raw, ser.PrivateFormat.Raw, ser.NoEncryption())
    pub = key.public_key().public_bytes(ser.Encoding.Raw, ser.PublicFormat.Raw)
    return priv.hex(), pub.hex()


def key_id(public_hex: str) -> str:
    """Short identifier of a public key."""
    return hashlib.sha256(bytes.fromhex(public_hex)).hexdigest()[:16]


def sign(claims: dict, private_hex: str, public_hex: str) -> dict:
    """Sign ``claims`` with the venue's Ed25519 key.

    The signature covers the canonical JSON of ``claims`` (sorted keys, no spaces, UTF-8).

    Parameters
    ----------
    claims : dict
        JSON-serialisable claims (name, badge, venue, date, ...).
    private_hex : str
        The venue's raw private key, 64 hex digits.
    public_hex : str
        The matching public key, 64 hex digits (its id goes into the proof).

    Returns
    -------
    dict
        ``{"credential": claims, "proof": {"type", "key_id", "signature"}}``, the signature in
        base64.

    Raises
    ------
    ValueError
        For a key that is not valid hex of the right length.

    Examples
    --------
    >>> from icml25.review import sign_credential, verify_credential
    >>> from icml25.review.credentials import new_keypair
    >>> private, public = new_keypair()
    >>> doc = sign_credential({"name": "Ada", "badge": "top-10"}, private, public)
    >>> sorted(doc["proof"])
    ['key_id', 'signature', 'type']
    >>> verify_credential(doc, public).claims
    {'name': 'Ada', 'badge': 'top-10'}
    """
    ed = _crypto()
    key = ed.Ed25519PrivateKey.from_private_bytes(bytes.fromhex(private_hex))
    sig = key.sign(canonical(claims))
    return {"credential": claims,
            "proof": {"type": PROOF_TYPE, "key_id": key_id(public_hex),
                      "signature": base64.b64encode(sig).decode()}}


@dataclass(frozen=True)
class Verified:
    """The outcome of a successful verification."""

    claims: dict
    key_id: str


def verify(doc: dict | str, public_hex: str) -> Verified:
    """Check a credential against the venue's published key.

    Parameters
    ----------
    doc : dict or str
        The credential document, or its JSON text.
    public_hex : str
        The venue's published public key, 64 hex digits (never a key carried inside the
        credential itself).

    Returns
    -------
    Verified
        The verified ``claims`` and the ``key_id``.

    Raises
    ------
    CredentialError
        When ``doc`` is not a credential, names another key, or its signature does not match
        (any changed claim breaks it).

    Examples
    --------
    >>> from icml25.review import CredentialError, sign_credential, verify_credential
    >>> from icml25.review.credentials import new_keypair
    >>> private, public = new_keypair()
    >>> doc = sign_credential({"name": "Ada", "badge": "top-10"}, private, public)
    >>> doc["credential"]["badge"] = "top-1"
    >>> try:
    ...     verify_credential(doc, public)
    ... except CredentialError as exc:
    ...     print(exc)
    the signature does not match the credential (tampered?)
    """
    from cryptography.exceptions import InvalidSignature

    ed = _crypto()
    if isinstance(doc, str):
        try:
            doc = json.loads(doc)
        except ValueError:
            raise CredentialError("not JSON") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("credential"), dict) \
            or not isinstance(doc.get("proof"), dict):
        raise CredentialError("a credential has 'credential' and 'proof' objects")
    proof = doc["proof"]
    if proof.get("type") != PROOF_TYPE:
        raise CredentialError(f"unknown proof type {proof.get('type')!r}")
    if proof.get("key_id") != key_id(public_hex):
        raise CredentialError("signed with a different key than the venue's published key")
    try:
        sig = base64.b64decode(proof.get("signature", ""), validate=True)
        ed.Ed25519PublicKey.from_public_bytes(bytes.fromhex(public_hex)).verify(
            sig, canonical(doc["credential"]))
    except (InvalidSignature, ValueError):
        raise CredentialError("the signature does not match the credential (tampered?)") from None
    return Verified(doc["credential"], proof["key_id"])
