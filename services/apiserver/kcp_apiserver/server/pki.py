"""The root dir's credentials: a CA, a serving certificate, the admin token, admin.kubeconfig,
the service-account token signing key, and the embedded etcd's mutual TLS material.

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
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kcp_apiserver.storage.etcd_client import TLSFiles

SERVER_AUTH = ExtendedKeyUsageOID.SERVER_AUTH
CLIENT_AUTH = ExtendedKeyUsageOID.CLIENT_AUTH


@dataclass(frozen=True)
class Credentials:
    ca_cert: Path
    serving_cert: Path
    serving_key: Path
    admin_token: str
    service_account_key: Path  # RSA, PEM: signs service-account tokens


@dataclass(frozen=True)
class EtcdCredentials:
    """The embedded etcd's own CA, its serving (and peer) certificate, and the apiserver's client certificate."""

    directory: Path
    ca_cert: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path

    @property
    def server(self) -> TLSFiles:
        """What etcd serves with: its certificate, and the CA its clients' certificates must chain to."""
        return TLSFiles(str(self.ca_cert), str(self.server_cert), str(self.server_key))

    @property
    def client(self) -> TLSFiles:
        """What the apiserver connects with."""
        return TLSFiles(str(self.ca_cert), str(self.client_cert), str(self.client_key))


def _write_private(path: Path, data: bytes) -> None:
    """Write `data` readable by the owner only, from the first byte on (no window with the umask's mode)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        os.fchmod(out.fileno(), 0o600)  # an existing file keeps its mode through O_CREAT
        out.write(data)


def _private_dir(path: Path) -> Path:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(path, 0o700)
    return path


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _new_ca(cert_path: Path, key_path: Path, common_name: str = "kcp-ca", *, private: bool = False) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(_name(common_name)).issuer_name(_name(common_name))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
            .sign(key, hashes.SHA256()))
    _write_cert(cert_path, cert, private=private)
    _write_private(key_path, _key_pem(key))


def _write_cert(path: Path, cert: x509.Certificate, *, private: bool) -> None:
    pem = cert.public_bytes(serialization.Encoding.PEM)
    if private:
        _write_private(path, pem)
    else:
        path.write_bytes(pem)


def _issue(ca_cert_path: Path, ca_key_path: Path, cert_path: Path, key_path: Path, *, common_name: str,
           hosts: list[str], usages: list[x509.ObjectIdentifier], private: bool = False) -> None:
    """A leaf certificate signed by the CA, for `hosts` (IPs or DNS names) and the given extended key usages."""
    ca_cert = x509.load_pem_x509_certificate(ca_cert_path.read_bytes())
    ca_key = serialization.load_pem_private_key(ca_key_path.read_bytes(), None)
    # a CA handed in (the Helm chart's, made by helm's genCA) may be RSA; the ones made here are EC
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey)
    key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = []
    for host in hosts:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            sans.append(x509.DNSName(host))
    now = datetime.datetime.now(datetime.UTC)
    builder = (x509.CertificateBuilder().subject_name(_name(common_name)).issuer_name(ca_cert.subject)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=825))
               .add_extension(x509.ExtendedKeyUsage(usages), critical=False))
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    _write_cert(cert_path, builder.sign(ca_key, hashes.SHA256()), private=private)
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
        _issue(ca_cert, ca_key, cert, key, common_name="kcp-apiserver", hosts=hosts, usages=[SERVER_AUTH])
    if not token_file.exists():
        _write_private(token_file, secrets.token_urlsafe(32).encode())
    sa_key = root / "service-account.key"
    if not sa_key.exists():
        _write_private(sa_key, _rsa_key_pem())
    return Credentials(ca_cert, cert, key, token_file.read_text().strip(), sa_key)


def _rsa_key_pem() -> bytes:
    """RSA 2048 as kubeadm's sa.key: kube's tokens are RS256, which every OIDC consumer can check."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def load_rsa_key(path: Path) -> rsa.RSAPrivateKey:
    key = serialization.load_pem_private_key(path.read_bytes(), None)
    if not isinstance(key, rsa.RSAPrivateKey):
        raise ValueError(f"{path}: the service-account signing key must be an RSA private key")
    return key


ETCD_HOSTS = ["127.0.0.1", "localhost", "::1"]


def ensure_etcd_credentials(root: Path) -> EtcdCredentials:
    """The embedded etcd's mutual TLS material in `root/etcd-pki` (mode 0700, every file 0600).

    A CA of its own, not the apiserver's: a certificate that CA signs opens every tenant's data,
    so it signs nothing but etcd's serving certificate and the apiserver's client certificate.
    The serving certificate also carries clientAuth, since etcd dials itself (its gRPC gateway)
    and its peers with it.
    """
    pki = _private_dir(root / "etcd-pki")
    creds = EtcdCredentials(pki, pki / "ca.crt", pki / "server.crt", pki / "server.key",
                            pki / "client.crt", pki / "client.key")
    ca_key = pki / "ca.key"
    if not creds.ca_cert.exists() or not ca_key.exists():
        _new_ca(creds.ca_cert, ca_key, "kcp-etcd-ca", private=True)
        creds.server_cert.unlink(missing_ok=True)
        creds.client_cert.unlink(missing_ok=True)
    if not creds.server_cert.exists() or not creds.server_key.exists() or not _covers(creds.server_cert, ETCD_HOSTS):
        _issue(creds.ca_cert, ca_key, creds.server_cert, creds.server_key, common_name="kcp-etcd",
               hosts=ETCD_HOSTS, usages=[SERVER_AUTH, CLIENT_AUTH], private=True)
    if not creds.client_cert.exists() or not creds.client_key.exists():
        _issue(creds.ca_cert, ca_key, creds.client_cert, creds.client_key, common_name="kcp-apiserver-etcd-client",
               hosts=[], usages=[CLIENT_AUTH], private=True)
    return creds


def write_kubeconfig(path: Path, server: str, creds: Credentials) -> None:
    """admin (current), user (/clusters/user) and cross-cluster (/clusters/*) contexts, one token."""
    write_contexts_kubeconfig(path, [("admin", server), ("user", f"{server}/clusters/user"),
                                     ("cross-cluster", f"{server}/clusters/*")], creds)


def write_contexts_kubeconfig(path: Path, contexts: list[tuple[str, str]], creds: Credentials) -> None:
    """One context (and cluster entry) per (name, server URL), the first current; the admin token, the CA."""
    import base64

    ca_data = base64.b64encode(creds.ca_cert.read_bytes()).decode()
    config = {
        "apiVersion": "v1", "kind": "Config", "preferences": {},
        "clusters": [{"name": n, "cluster": {"server": url, "certificate-authority-data": ca_data}}
                     for n, url in contexts],
        "users": [{"name": "admin", "user": {"token": creds.admin_token}}],
        "contexts": [{"name": n, "context": {"cluster": n, "user": "admin"}} for n, _ in contexts],
        "current-context": contexts[0][0],
    }
    _write_private(path, yaml.safe_dump(config, sort_keys=False).encode())
