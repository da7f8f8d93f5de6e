"""The embedded etcd's mutual TLS material: a CA of its own, private files, reused across restarts."""

from __future__ import annotations

import stat
from pathlib import Path

from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kcp_apiserver.server.pki import ensure_credentials, ensure_etcd_credentials


def _cert(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def _usages(cert: x509.Certificate) -> set[x509.ObjectIdentifier]:
    return set(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value)


def test_every_file_is_readable_by_the_owner_only_in_a_private_directory(tmp_path: Path) -> None:
    creds = ensure_etcd_credentials(tmp_path)
    assert stat.S_IMODE(creds.directory.stat().st_mode) == 0o700
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in creds.directory.iterdir()}
    assert set(modes) == {"ca.crt", "ca.key", "server.crt", "server.key", "client.crt", "client.key"}
    assert set(modes.values()) == {0o600}, modes


def test_loosened_modes_are_tightened_on_the_next_start(tmp_path: Path) -> None:
    creds = ensure_etcd_credentials(tmp_path)
    creds.directory.chmod(0o755)
    ensure_etcd_credentials(tmp_path)
    assert stat.S_IMODE(creds.directory.stat().st_mode) == 0o700


def test_the_etcd_ca_is_not_the_apiservers_and_signs_a_server_and_a_client_certificate(tmp_path: Path) -> None:
    ensure_credentials(tmp_path, ["127.0.0.1"])
    creds = ensure_etcd_credentials(tmp_path)
    ca = _cert(creds.ca_cert)
    assert ca.subject != _cert(tmp_path / "ca.crt").subject
    server, client = _cert(creds.server_cert), _cert(creds.client_cert)
    assert server.issuer == ca.subject and client.issuer == ca.subject
    server.verify_directly_issued_by(ca)
    client.verify_directly_issued_by(ca)
    # etcd dials itself and its peers with its serving certificate, so it is a client certificate too
    assert _usages(server) == {ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH}
    assert _usages(client) == {ExtendedKeyUsageOID.CLIENT_AUTH}
    sans = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert {str(ip) for ip in sans.get_values_for_type(x509.IPAddress)} >= {"127.0.0.1"}
    assert "localhost" in sans.get_values_for_type(x509.DNSName)
    assert client.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "kcp-apiserver-etcd-client"


def test_credentials_are_reused_and_a_new_ca_reissues_both_certificates(tmp_path: Path) -> None:
    first = ensure_etcd_credentials(tmp_path)
    before = {p.name: p.read_bytes() for p in first.directory.iterdir()}
    assert {p.name: p.read_bytes() for p in ensure_etcd_credentials(tmp_path).directory.iterdir()} == before
    (first.directory / "ca.key").unlink()
    again = ensure_etcd_credentials(tmp_path)
    ca = _cert(again.ca_cert)
    _cert(again.server_cert).verify_directly_issued_by(ca)
    _cert(again.client_cert).verify_directly_issued_by(ca)
    assert again.server_cert.read_bytes() != before["server.crt"]
