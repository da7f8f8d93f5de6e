"""Service-account tokens: kube's RS256 JWTs, signed and verified offline; anything not signed by the key,
for another issuer or audience, expired, not yet valid or malformed is refused."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from functools import cache
from typing import Any

import pytest
from aiohttp.test_utils import make_mocked_request
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa

from kcp_apiserver.apimachinery import jwt
from kcp_apiserver.apimachinery.request import AUTHENTICATED, CREDENTIAL_ID
from kcp_apiserver.apimachinery.status import APIError
from kcp_apiserver.endpoints.tokenrequest import validate
from kcp_apiserver.filters.serviceaccount import ServiceAccountAuthenticator
from kcp_apiserver.registry.serviceaccounts import DEFAULT_ISSUER, LEEWAY_SECONDS, ServiceAccountTokens

NOW = 1_800_000_000
NONE_HEADER = b'{"alg":"none"}'
ACCOUNT = {"metadata": {"name": "bot", "namespace": "team", "uid": "0b6f6c1c-0000-4000-8000-000000000001"}}


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@cache
def _rsa_key(n: int) -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def rsa_key(n: int = 0) -> rsa.RSAPrivateKey:
    """Key n, made once per test session."""
    return _rsa_key(n)


def tokens(n: int = 0, **kw: Any) -> ServiceAccountTokens:
    return ServiceAccountTokens(rsa_key(n), **kw)


def parts(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    header, claims, _ = token.split(".")
    return json.loads(b64url_decode(header)), json.loads(b64url_decode(claims))


def resign(token: str, claims: dict[str, Any] | None = None, header: dict[str, Any] | None = None,
           key: rsa.RSAPrivateKey | None = None) -> str:
    """The token with other claims or header, signed again with `key` (default: the issuer's)."""
    old_header, old_claims = parts(token)
    h = b64url(json.dumps(header or old_header).encode())
    c = b64url(json.dumps(claims if claims is not None else old_claims).encode())
    signature = (key or rsa_key()).sign(f"{h}.{c}".encode(), padding.PKCS1v15(), hashes.SHA256())
    return f"{h}.{c}.{b64url(signature)}"


def test_a_token_carries_kubes_claims_and_the_logical_cluster() -> None:
    issuer = tokens()
    token, expires = issuer.issue("root:team", ACCOUNT, [DEFAULT_ISSUER], 3600, now=NOW)
    header, claims = parts(token)
    assert header == {"alg": "RS256", "kid": jwt.key_id(rsa_key().public_key())}
    assert expires == NOW + 3600
    jti = claims.pop("jti")
    assert len(jti) == 36
    assert claims == {"aud": [DEFAULT_ISSUER], "exp": NOW + 3600, "iat": NOW, "iss": DEFAULT_ISSUER,
                      "kcp.io/cluster": "root:team",
                      "kubernetes.io": {"namespace": "team",
                                        "serviceaccount": {"name": "bot", "uid": ACCOUNT["metadata"]["uid"]}},
                      "nbf": NOW, "sub": "system:serviceaccount:team:bot"}
    subject = issuer.verify(token, now=NOW + 10)
    assert subject is not None
    assert (subject.cluster, subject.namespace, subject.name, subject.uid, subject.jti, subject.expires) == (
        "root:team", "team", "bot", ACCOUNT["metadata"]["uid"], jti, NOW + 3600)


def test_the_jwks_key_verifies_a_token_as_an_outside_consumer_would() -> None:
    issuer = tokens()
    token, _ = issuer.issue("admin", ACCOUNT, [DEFAULT_ISSUER], 600, now=NOW)
    (key,) = issuer.jwks()["keys"]
    assert (key["kty"], key["alg"], key["use"], key["kid"], key["e"]) == ("RSA", "RS256", "sig", issuer.kid, "AQAB")
    n = int.from_bytes(base64.urlsafe_b64decode(key["n"] + "=" * (-len(key["n"]) % 4)), "big")
    public = rsa.RSAPublicNumbers(65537, n).public_key()
    signing_input, _, signature = token.rpartition(".")
    public.verify(b64url_decode(signature), signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
    doc = issuer.openid_configuration("https://kcp.example:6443/openid/v1/jwks")
    assert doc == {"issuer": DEFAULT_ISSUER, "jwks_uri": "https://kcp.example:6443/openid/v1/jwks",
                   "response_types_supported": ["id_token"], "subject_types_supported": ["public"],
                   "id_token_signing_alg_values_supported": ["RS256"]}


def _flip(text: str, index: int) -> str:
    return text[:index] + ("A" if text[index] != "A" else "B") + text[index + 1:]


def test_tampered_forged_and_malformed_tokens_are_refused() -> None:
    issuer = tokens()
    token, _ = issuer.issue("admin", ACCOUNT, [DEFAULT_ISSUER], 3600, now=NOW)
    header, claims = parts(token)
    h, c, s = token.split(".")
    escalated = {**claims, "sub": "system:serviceaccount:kube-system:admin"}
    refused = {
        "claims edited, signature kept": f"{h}.{b64url(json.dumps(escalated).encode())}.{s}",
        "signature altered": f"{h}.{c}.{_flip(s, 10)}",
        "payload altered": f"{h}.{_flip(c, 20)}.{s}",
        "signed by another key": resign(token, key=rsa_key(1)),
        "another key's kid": resign(token, header={**header, "kid": "other"}),
        "alg none": f"{b64url(NONE_HEADER)}.{c}.",
        "alg HS256": resign(token, header={"alg": "HS256", "kid": header["kid"]}),
        "two parts": f"{h}.{c}",
        "not base64": f"{h}.{c}.!!!",
        "padded": f"{h}.{c}.{s}==",
        "empty": "",
        "huge": "a." + "b" * jwt.MAX_TOKEN_BYTES + ".c",
        "another issuer": resign(token, {**claims, "iss": "https://elsewhere"}),
        "another audience": resign(token, {**claims, "aud": ["vault"]}),
        "no kubernetes.io claim": resign(token, {k: v for k, v in claims.items() if k != "kubernetes.io"}),
        "no cluster claim": resign(token, {k: v for k, v in claims.items() if k != "kcp.io/cluster"}),
        "subject and account disagree": resign(token, escalated),
        "no expiry": resign(token, {k: v for k, v in claims.items() if k != "exp"}),
        "claims not an object": resign(token, []),  # type: ignore[arg-type]
    }
    for why, bad in refused.items():
        assert issuer.verify(bad, now=NOW + 10) is None, why
    assert issuer.verify(token, now=NOW + 10) is not None


def test_algorithm_confusion_and_another_signers_tokens_are_refused() -> None:
    """`none`, HMAC keyed with our public key (which anyone can fetch from the JWKS), and a token that is
    kube's in every byte but signed by another key under that key's own kid: none of them names a user."""
    issuer = tokens()
    token, _ = issuer.issue("admin", ACCOUNT, [DEFAULT_ISSUER], 3600, now=NOW)
    header, claims = parts(token)
    c = b64url(json.dumps(claims).encode())
    public_pem = rsa_key().public_key().public_bytes(serialization.Encoding.PEM,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo)
    for alg, digest in (("HS256", hashlib.sha256), ("HS384", hashlib.sha384), ("HS512", hashlib.sha512)):
        h = b64url(json.dumps({"alg": alg, "kid": header["kid"]}).encode())
        mac = hmac.new(public_pem, f"{h}.{c}".encode(), digest).digest()
        assert issuer.verify(f"{h}.{c}.{b64url(mac)}", now=NOW + 10) is None, alg
    for none in ({"alg": "none"}, {"alg": "None", "kid": header["kid"]}, {"alg": "none", "typ": "JWT"}):
        assert issuer.verify(f"{b64url(json.dumps(none).encode())}.{c}.", now=NOW + 10) is None, none
    other = tokens(1)
    foreign, _ = other.issue("admin", ACCOUNT, [DEFAULT_ISSUER], 3600, now=NOW)
    assert other.verify(foreign, now=NOW + 10) is not None  # a well-formed token, just not ours
    assert parts(foreign)[0] == {"alg": "RS256", "kid": other.kid} and other.kid != issuer.kid
    assert issuer.verify(foreign, now=NOW + 10) is None
    assert issuer.verify(resign(foreign, header={"alg": "RS256", "kid": issuer.kid}, key=rsa_key(1)),
                         now=NOW + 10) is None
    assert issuer.verify(token, now=NOW + 10) is not None


def test_expiry_and_not_before_allow_kubes_one_minute_leeway() -> None:
    issuer = tokens()
    token, expires = issuer.issue("admin", ACCOUNT, [DEFAULT_ISSUER], 600, now=NOW)
    assert issuer.verify(token, now=expires + LEEWAY_SECONDS) is not None
    assert issuer.verify(token, now=expires + LEEWAY_SECONDS + 1) is None
    assert issuer.verify(token, now=NOW - LEEWAY_SECONDS) is not None
    assert issuer.verify(token, now=NOW - LEEWAY_SECONDS - 1) is None


def test_audiences_must_meet_the_api_servers() -> None:
    issuer = tokens(api_audiences=("api", "https://kcp"))
    for audiences, accepted in ((["api"], True), (["vault", "https://kcp"], True), (["vault"], False)):
        token, _ = issuer.issue("admin", ACCOUNT, audiences, 600, now=NOW)
        assert (issuer.verify(token, now=NOW) is not None) is accepted, audiences
    token, _ = issuer.issue("admin", ACCOUNT, ["api"], 600, now=NOW)
    _, claims = parts(token)
    assert issuer.verify(resign(token, {**claims, "aud": "api"}), now=NOW) is not None  # a single string, as RFC 7519


def test_token_request_durations_and_names_as_kube_validates_them() -> None:
    assert validate({}, "bot", "team") == ([], 3600)
    assert validate({"spec": {"expirationSeconds": 600, "audiences": ["x"]}}, "bot", "team") == (["x"], 600)
    cases = {
        599: "spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes",
        (1 << 32) + 1: "may not specify a duration larger than 2^32 seconds",
    }
    for seconds, message in cases.items():
        with pytest.raises(APIError) as err:
            validate({"spec": {"expirationSeconds": seconds}}, "bot", "team")
        assert err.value.code == 422 and message in err.value.message
        assert err.value.message.startswith('TokenRequest.authentication.k8s.io "bot" is invalid: ')
    with pytest.raises(APIError) as err:
        validate({"metadata": {"name": "other"}}, "bot", "team")
    assert err.value.message == ('TokenRequest.authentication.k8s.io "bot" is invalid: metadata.name: Invalid value: '
                                 '"other": must match the service account name if specified')


class FakeLookup:
    def __init__(self) -> None:
        self.alive_uids = {ACCOUNT["metadata"]["uid"]}
        self.calls = 0

    async def alive(self, cluster: str, namespace: str, name: str, uid: str) -> bool:
        self.calls += 1
        return uid in self.alive_uids


class CountingTokens(ServiceAccountTokens):
    verified = 0

    def verify(self, token: str, now: float | None = None):  # type: ignore[no-untyped-def]
        self.verified += 1
        return super().verify(token, now)


def _request(token: str):  # type: ignore[no-untyped-def]
    return make_mocked_request("GET", "/api", headers={"Authorization": f"Bearer {token}"})


async def test_the_authenticator_names_the_service_account_and_checks_it_on_every_request() -> None:
    issuer = CountingTokens(rsa_key())
    token, _ = issuer.issue("root:team", ACCOUNT, [DEFAULT_ISSUER], 3600)
    authenticator = ServiceAccountAuthenticator(issuer)
    assert await authenticator.authenticate(_request(token)) is None  # not bound to a lookup yet
    lookup = FakeLookup()
    authenticator.bind(lookup)  # type: ignore[arg-type]
    user = await authenticator.authenticate(_request(token))
    assert user is not None
    assert (user.name, user.uid, user.cluster) == ("system:serviceaccount:team:bot", ACCOUNT["metadata"]["uid"],
                                                   "root:team")
    assert user.groups == ("system:serviceaccounts", "system:serviceaccounts:team", AUTHENTICATED)
    assert dict(user.extra)[CREDENTIAL_ID][0].startswith("JTI=")
    assert await authenticator.authenticate(_request(token)) == user
    assert issuer.verified == 1 and lookup.calls == 2  # the signature once, the account every time
    lookup.alive_uids.clear()  # deleted, or recreated with another uid
    assert await authenticator.authenticate(_request(token)) is None
    assert await authenticator.authenticate(_request(token + "x")) is None
    assert await authenticator.authenticate(_request("static-token-not-a-jwt")) is None
    assert issuer.verified == 2


def test_the_signing_key_is_made_once_private_and_rsa(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from kcp_apiserver.server.pki import ensure_credentials, load_rsa_key

    creds = ensure_credentials(tmp_path, ["127.0.0.1"])
    assert (creds.service_account_key.stat().st_mode & 0o777) == 0o600
    key = load_rsa_key(creds.service_account_key)
    assert ensure_credentials(tmp_path, ["127.0.0.1"]).service_account_key.read_bytes() == \
        creds.service_account_key.read_bytes()  # kept across restarts: issued tokens stay valid
    assert key.key_size == 2048
    ec_path = tmp_path / "ec.key"
    ec_path.write_bytes(ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    with pytest.raises(ValueError, match="must be an RSA private key"):
        load_rsa_key(ec_path)
