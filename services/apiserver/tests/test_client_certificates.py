"""Client certificates name their user as kube's x509 authenticator reads them: CN the user, each O a group."""

from __future__ import annotations

import hashlib
from types import SimpleNamespace
from typing import Any

from aiohttp.test_utils import make_mocked_request

from kcp_apiserver.apimachinery.request import AUTHENTICATED, CREDENTIAL_ID, UserInfo
from kcp_apiserver.filters.x509 import ClientCertificateAuthenticator, subject_user

# what ssl's getpeercert() returns for "CN=alice, O=dev, O=ops, OU=ignored"
SUBJECT = ((("organizationName", "dev"),), (("organizationName", "ops"),), (("organizationalUnitName", "ignored"),),
           (("commonName", "alice"),))


def test_common_name_is_the_user_and_organizations_are_groups() -> None:
    der = b"certificate bytes"
    user = subject_user(SUBJECT, der)
    assert user == UserInfo("alice", groups=("dev", "ops", AUTHENTICATED),
                            extra=((CREDENTIAL_ID, (f"X509SHA256={hashlib.sha256(der).hexdigest()}",)),))
    assert subject_user(((("commonName", "bob"),),)) == UserInfo("bob", groups=(AUTHENTICATED,))


def test_a_certificate_without_a_common_name_names_no_one() -> None:
    assert subject_user(((("organizationName", "system:masters"),),)) is None
    assert subject_user(()) is None


class FakeTransport:
    def __init__(self, extra: dict[str, Any]) -> None:
        self.extra = extra

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self.extra.get(name, default)


async def test_the_authenticator_reads_the_verified_peer_certificate_of_the_connection() -> None:
    authenticator = ClientCertificateAuthenticator()
    ssl_object = SimpleNamespace(getpeercert=lambda binary_form=False: b"der")
    with_cert = make_mocked_request("GET", "/api", transport=FakeTransport(
        {"peercert": {"subject": SUBJECT}, "ssl_object": ssl_object}))
    user = await authenticator.authenticate(with_cert)
    assert user is not None and user.name == "alice" and user.groups == ("dev", "ops", AUTHENTICATED)
    without = make_mocked_request("GET", "/api", transport=FakeTransport({"peercert": None}))
    assert await authenticator.authenticate(without) is None


def test_the_serving_context_asks_for_certificates_of_the_servers_ca_and_the_client_ca_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import ssl

    from kcp_apiserver.server.cli import external_url, serving_context
    from kcp_apiserver.server.pki import ensure_credentials
    from kcp_apiserver.server.settings import APIServerSettings

    creds = ensure_credentials(tmp_path / "a", ["127.0.0.1"])
    other = ensure_credentials(tmp_path / "b", ["127.0.0.1"])
    ctx = serving_context(APIServerSettings(root_dir=str(tmp_path / "a")), creds)
    assert ctx.verify_mode == ssl.CERT_OPTIONAL  # asked for, not required: tokens still work
    assert len(ctx.get_ca_certs()) == 1
    with_file = serving_context(APIServerSettings(client_ca_file=str(other.ca_cert)), creds)
    assert len(with_file.get_ca_certs()) == 2
    assert external_url(APIServerSettings(bind_address="0.0.0.0", secure_port=7443)) == "https://127.0.0.1:7443"
    assert external_url(APIServerSettings(external_hostname="kcp.example,10.0.0.1")) == "https://kcp.example:6443"
    assert external_url(APIServerSettings(bind_address="::1")) == "https://[::1]:6443"
