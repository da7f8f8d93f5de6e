"""The root dir's credentials: a CA, a serving certificate, the admin token, admin.kubeconfig.

Generated on first start and reused after, so clients keep working across restarts.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class Credentials:
    ca_cert: Path
    serving_cert: Path
    serving_key: Path
    admin_token: str


def _write_private(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    os.chmod(path, 0o600)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _new_ca(cert_path: Path, key_path: Path) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(_name("kcp-ca")).issuer_name(_name("kcp-ca"))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_private(key_path, _key_pem(key))


def _new_serving(ca_cert_path: Path, ca_key_path: Path, cert_path: Path, key_path: Path, hosts: list[str]) -> None:
    ca_cert = x509.load_pem_x509_certificate(ca_cert_path.read_bytes())
    ca_key = serialization.load_pem_private_key(ca_key_path.read_bytes(), None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = []
    for host in hosts:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            sans.append(x509.DNSName(host))
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(_name("kcp-apiserver")).issuer_name(ca_cert.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=825))
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_private(key_path, _key_pem(key))


def _covers(cert_path: Path, hosts: list[str]) -> bool:
    cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    names = {str(v) for v in sans.get_values_for_type(x509.IPAddress)} | set(sans.get_values_for_type(x509.DNSName))
    return set(hosts) <= names


def ensure_credentials(root: Path, hosts: list[str]) -> Credentials:
    """Create what is missing under root; keep what exists."""
    root.mkdir(parents=True, exist_ok=True)
    ca_cert, ca_key = root / "ca.crt", root / "ca.key"
    cert, key = root / "apiserver.crt", root / "apiserver.key"
    token_file = root / "admin.token"
    if not ca_cert.exists() or not ca_key.exists():
        _new_ca(ca_cert, ca_key)
        cert.unlink(missing_ok=True)
    if not cert.exists() or not key.exists() or not _covers(cert, hosts):
        _new_serving(ca_cert, ca_key, cert, key, hosts)
    if not token_file.exists():
        _write_private(token_file, secrets.token_urlsafe(32).encode())
    return Credentials(ca_cert, cert, key, token_file.read_text().strip())


def write_kubeconfig(path: Path, server: str, creds: Credentials) -> None:
    """admin (current), user (/clusters/user) and cross-cluster (/clusters/*) contexts, one token."""
    import base64

    ca_data = base64.b64encode(creds.ca_cert.read_bytes()).decode()
    clusters = [("admin", server), ("user", f"{server}/clusters/user"), ("cross-cluster", f"{server}/clusters/*")]
    config = {
        "apiVersion": "v1", "kind": "Config", "preferences": {},
        "clusters": [{"name": n, "cluster": {"server": url, "certificate-authority-data": ca_data}}
                     for n, url in clusters],
        "users": [{"name": "admin", "user": {"token": creds.admin_token}}],
        "contexts": [{"name": n, "context": {"cluster": n, "user": "admin"}} for n, _ in clusters],
        "current-context": "admin",
    }
    _write_private(path, yaml.safe_dump(config, sort_keys=False).encode())
