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
    """A credential that does not verify (the message says why)."""


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
    """Sign ``claims`` with the venue key; returns the credential document."""
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
    """Check ``doc`` against the venue's published key; raise :class:`CredentialError`."""
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
