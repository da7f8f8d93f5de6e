"""RS256 JSON Web Tokens (RFC 7519) as kube's service-account tokens carry them, signed and verified by PyJWT.

What is kube's rather than PyJWT's: the header is `{"alg":"RS256","kid":...}` with no `typ` (go-jose
writes none), the `kid` is the unpadded base64url SHA-256 of the public key's DER, and base64url is the
unpadded form only (go-jose's RawURLEncoding refuses `=`; PyJWT would pad and accept it). Only RS256 is
accepted, so `none` and HMAC keyed with the public key (the classic confusion attack) are refused.
PyJWT checks the issuer and the audiences; the time claims are the caller's, which knows its clock and
go-jose's leeway rule (a token is still valid at exactly `exp + leeway`; PyJWT's is one second stricter).
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

import jwt as pyjwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from jwt.utils import base64url_encode

if TYPE_CHECKING:
    from jwt.types import Options

ALGORITHM = "RS256"
MAX_TOKEN_BYTES = 16 * 1024  # a bigger "token" is not one of ours: refused before any decoding
_TIMES_CHECKED_BY_CALLER: Options = {"verify_exp": False, "verify_nbf": False, "verify_iat": False,
                                     "require": ["iss", "aud"]}


class InvalidToken(Exception):
    """Not a token this key signed: malformed, another algorithm or key, or a bad signature."""


def b64url(data: bytes) -> str:
    return base64url_encode(data).decode()


def key_id(public_key: rsa.RSAPublicKey) -> str:
    """kube's `kid`: the unpadded base64url SHA-256 of the public key's PKIX DER."""
    der = public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return b64url(hashlib.sha256(der).digest())


def jwk(public_key: rsa.RSAPublicKey) -> dict[str, str]:
    """The key as a JSON Web Key, with the fields (and in the order) kube's /openid/v1/jwks lists."""
    numbers = RSAAlgorithm.to_jwk(public_key, as_dict=True)
    return {"use": "sig", "kty": "RSA", "kid": key_id(public_key), "alg": ALGORITHM,
            "n": numbers["n"], "e": numbers["e"]}


def encode(claims: dict[str, Any], private_key: rsa.RSAPrivateKey) -> str:
    return pyjwt.encode(claims, private_key, algorithm=ALGORITHM,
                        headers={"kid": key_id(private_key.public_key()), "typ": None})


def looks_like_jwt(token: str) -> bool:
    """Three dot-separated parts: a cheap test before any crypto (kube asks the same of its tokens)."""
    return token.count(".") == 2 and len(token) <= MAX_TOKEN_BYTES


def decode(token: str, public_key: rsa.RSAPublicKey, kid: str, *, issuer: str,
           audiences: tuple[str, ...]) -> dict[str, Any]:
    """The claims of a token this key signed for this issuer and one of these audiences; raises
    InvalidToken for anything else."""
    if not looks_like_jwt(token) or "=" in token:
        raise InvalidToken("not a JWT in unpadded base64url")
    try:
        decoded = pyjwt.decode_complete(token, public_key, algorithms=[ALGORITHM], issuer=issuer,
                                        audience=list(audiences), options=_TIMES_CHECKED_BY_CALLER)
    except pyjwt.PyJWTError as exc:
        raise InvalidToken(str(exc)) from exc
    if decoded["header"].get("kid", kid) != kid:
        raise InvalidToken("unknown key id")
    claims: dict[str, Any] = decoded["payload"]
    return claims
