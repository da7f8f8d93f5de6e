"""RS256 JSON Web Tokens (RFC 7519), the compact form service-account tokens travel in.

Only what kube's service-account tokens need: an RS256 signature under a `kid` that names the key
(kube's key id: the unpadded base64url SHA-256 of the public key's DER), and a JSON claims set.
Time claims are checked by the caller, which knows its clock and leeway.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from typing import Any

import orjson
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

ALGORITHM = "RS256"
MAX_TOKEN_BYTES = 16 * 1024  # a bigger "token" is not one of ours: refused before any decoding


class InvalidToken(Exception):
    """Not a token this key signed: malformed, another algorithm or key, or a bad signature."""


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64url_decode(text: str) -> bytes:
    if "=" in text:
        raise InvalidToken("padded base64url")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as exc:
        raise InvalidToken("bad base64url") from exc


def key_id(public_key: rsa.RSAPublicKey) -> str:
    """kube's `kid`: the unpadded base64url SHA-256 of the public key's PKIX DER."""
    der = public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return b64url(hashlib.sha256(der).digest())


def jwk(public_key: rsa.RSAPublicKey) -> dict[str, str]:
    """The key as a JSON Web Key, in the order kube's /openid/v1/jwks lists its fields."""
    numbers = public_key.public_numbers()

    def unsigned(value: int) -> str:
        return b64url(value.to_bytes((value.bit_length() + 7) // 8, "big"))

    return {"use": "sig", "kty": "RSA", "kid": key_id(public_key), "alg": ALGORITHM,
            "n": unsigned(numbers.n), "e": unsigned(numbers.e)}


def encode(claims: dict[str, Any], private_key: rsa.RSAPrivateKey) -> str:
    header = {"alg": ALGORITHM, "kid": key_id(private_key.public_key())}
    signing_input = f"{b64url(orjson.dumps(header))}.{b64url(orjson.dumps(claims))}"
    signature = private_key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
    return f"{signing_input}.{b64url(signature)}"


def looks_like_jwt(token: str) -> bool:
    """Three dot-separated parts: a cheap test before any crypto (kube asks the same of its tokens)."""
    return token.count(".") == 2 and len(token) <= MAX_TOKEN_BYTES


def decode(token: str, public_key: rsa.RSAPublicKey, kid: str) -> dict[str, Any]:
    """The claims of a token this key signed; raises InvalidToken for anything else."""
    if not looks_like_jwt(token):
        raise InvalidToken("not a JWT")
    header_part, claims_part, signature_part = token.split(".")
    try:
        header = orjson.loads(b64url_decode(header_part))
    except orjson.JSONDecodeError as exc:
        raise InvalidToken("bad header") from exc
    if not isinstance(header, dict) or header.get("alg") != ALGORITHM:
        raise InvalidToken("unsupported algorithm")  # never "none", never HMAC with the public key
    if header.get("kid", kid) != kid:
        raise InvalidToken("unknown key id")
    try:
        public_key.verify(b64url_decode(signature_part), f"{header_part}.{claims_part}".encode(),
                          padding.PKCS1v15(), hashes.SHA256())
    except InvalidSignature as exc:
        raise InvalidToken("bad signature") from exc
    try:
        claims = orjson.loads(b64url_decode(claims_part))
    except orjson.JSONDecodeError as exc:
        raise InvalidToken("bad claims") from exc
    if not isinstance(claims, dict):
        raise InvalidToken("claims are not an object")
    return claims
