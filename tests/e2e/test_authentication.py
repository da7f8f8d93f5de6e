"""Who is asking, with the real kubectl: service-account tokens from `kubectl create token`, client
certificates signed by the root dir's CA or by --client-ca-file, the 401 answers to everything else,
the service-account issuer's OIDC documents, and the audit log.

Not here: a token of logical cluster A used in cluster B or under /clusters/* (a stranger: 403) and
`kubectl auth whoami` belong to the RBAC tests (test_rbac.py); here every identity may read (`view`).
"""

from __future__ import annotations

import base64
import datetime
import json
import socket
import ssl
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from api import Api
from kcp_process import KcpServer, free_port, kubectl_binary, run_kubectl

UNAUTHORIZED = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": "Unauthorized",
                "reason": "Unauthorized", "code": 401}
ISSUER = "https://kubernetes.default.svc"


# -- certificates ----------------------------------------------------------------------------------


def _name(cn: str, orgs: tuple[str, ...] = ()) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn),
                      *(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in orgs)])


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def new_ca(directory: Path, cn: str) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(_name(cn)).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = directory / f"{cn}.crt", directory / f"{cn}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(_pem_key(key))
    return cert_path, key_path


def client_cert(ca: tuple[Path, Path], directory: Path, cn: str, orgs: tuple[str, ...] = ()) -> tuple[Path, Path]:
    """A client certificate (clientAuth) for CN=cn, O=orgs, signed by the CA at `ca`."""
    ca_cert = x509.load_pem_x509_certificate(ca[0].read_bytes())
    ca_key = serialization.load_pem_private_key(ca[1].read_bytes(), None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(_name(cn, orgs)).issuer_name(ca_cert.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    stem = f"{cn}-{uuid.uuid4().hex[:6]}"
    cert_path, key_path = directory / f"{stem}.crt", directory / f"{stem}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(_pem_key(key))
    return cert_path, key_path


def cert_kubeconfig(server: KcpServer, cert: tuple[Path, Path], path: Path) -> Path:
    config = {"apiVersion": "v1", "kind": "Config",
              "clusters": [{"name": "kcp", "cluster": {"server": server.url,
                                                       "certificate-authority": str(server.root / "ca.crt")}}],
              "users": [{"name": "cert", "user": {"client-certificate": str(cert[0]), "client-key": str(cert[1])}}],
              "contexts": [{"name": "cert", "context": {"cluster": "kcp", "user": "cert"}}],
              "current-context": "cert"}
    path.write_text(yaml.safe_dump(config))
    return path


# -- the server --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def other_ca(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return new_ca(tmp_path_factory.mktemp("other-ca"), "other-ca")


@pytest.fixture(scope="module")
def authn(tmp_path_factory: pytest.TempPathFactory, other_ca: tuple[Path, Path]) -> Iterator[KcpServer]:
    """A server with an audit log and a second client CA."""
    root = tmp_path_factory.mktemp("kcp-authn")
    server = KcpServer(root, free_port(), ["--audit-log-path", str(root / "audit.log"),
                                           "--client-ca-file", str(other_ca[0]), "--compaction-interval", "0"])
    server.start()
    grant_view(server)
    yield server
    assert server.stop() == 0, server.log_tail()


def grant_view(server: KcpServer, *where: str) -> None:
    """What is judged here is who is asking, not what RBAC lets it do (test_rbac): every authenticated
    identity may read (`view`) in the logical cluster `where` names (admin by default)."""
    run_kubectl(server, *where, "create", "clusterrolebinding", "authn-tests-view", "--clusterrole=view",
                "--group=system:authenticated")
    wait_for(lambda: run_kubectl(server, *where, "auth", "can-i", "list", "configmaps", "--as=someone",
                                 check=False).stdout.strip() == "yes", "the view binding")


@pytest.fixture
def ns(authn: KcpServer) -> str:
    name = f"au-{uuid.uuid4().hex[:8]}"
    run_kubectl(authn, "create", "namespace", name)
    return name


def claims_of(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def create_token(server: KcpServer, ns: str, name: str, *args: str, context: str | None = None) -> str:
    return run_kubectl(server, "-n", ns, "create", "token", name, *args, context=context).stdout.strip()


def wait_for(condition: Any, what: str, timeout: float = 30.0) -> Any:
    """Poll `condition` until it returns something truthy (the controllers act asynchronously)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"{what}: not within {timeout}s")


def audit_events(server: KcpServer) -> list[dict[str, Any]]:
    path = server.root / "audit.log"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def audit_event(server: KcpServer, audit_id: str) -> dict[str, Any]:
    found = wait_for(lambda: [e for e in audit_events(server) if e["auditID"] == audit_id],
                     f"audit event {audit_id}", timeout=15)
    assert len(found) == 1, found
    return found[0]


async def raw(server: KcpServer, method: str, path: str, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    async with aiohttp.ClientSession() as session:
        reply = await Api(server, session, token="").request(method, path, headers=headers)
        return reply.status, reply.body


# -- service accounts --------------------------------------------------------------------------------


def test_every_namespace_gets_a_default_service_account_and_keeps_it(authn: KcpServer, ns: str) -> None:
    def default_sa(*args: str, context: str | None = None) -> dict[str, Any] | None:
        result = run_kubectl(authn, *args, "get", "serviceaccount", "default", "-o", "json", context=context,
                             check=False)
        return json.loads(result.stdout) if result.returncode == 0 else None

    first = wait_for(lambda: default_sa("-n", ns), f"default service account in {ns}")
    run_kubectl(authn, "-n", ns, "delete", "serviceaccount", "default")
    again = wait_for(lambda: default_sa("-n", ns), f"default service account back in {ns}")
    assert again["metadata"]["uid"] != first["metadata"]["uid"]
    # a logical cluster born on its first write has one in each of its system namespaces too
    cluster = f"sa-{uuid.uuid4().hex[:6]}"
    run_kubectl(authn, "--server", f"{authn.url}/clusters/{cluster}", "create", "namespace", "apps")
    for namespace in ("default", "kube-system", "apps"):
        wait_for(lambda namespace=namespace: default_sa("--server", f"{authn.url}/clusters/{cluster}", "-n", namespace),
                 f"default service account in {cluster}/{namespace}")


def test_kubectl_create_token_issues_a_token_that_kubectl_can_use(authn: KcpServer, ns: str) -> None:
    run_kubectl(authn, "-n", ns, "create", "serviceaccount", "bot")
    sa = json.loads(run_kubectl(authn, "-n", ns, "get", "serviceaccount", "bot", "-o", "json").stdout)
    token = create_token(authn, ns, "bot")
    claims = claims_of(token)
    assert claims["sub"] == f"system:serviceaccount:{ns}:bot"
    assert claims["kubernetes.io"] == {"namespace": ns, "serviceaccount": {"name": "bot", "uid": sa["metadata"]["uid"]}}
    assert claims["kcp.io/cluster"] == "admin"
    assert (claims["iss"], claims["aud"], claims["exp"] - claims["iat"]) == (ISSUER, [ISSUER], 3600)
    run_kubectl(authn, "-n", ns, "create", "configmap", "seen", "--from-literal=a=1")
    out = run_kubectl(authn, "--token", token, "-n", ns, "get", "configmaps", "seen", "-o", "name").stdout
    assert out.strip() == "configmap/seen"
    assert claims_of(create_token(authn, ns, "bot", "--duration", "10m"))["exp"] - claims["iat"] in range(600, 700)
    too_short = run_kubectl(authn, "-n", ns, "create", "token", "bot", "--duration", "5m", check=False)
    assert too_short.returncode != 0
    assert ('TokenRequest.authentication.k8s.io "bot" is invalid: spec.expirationSeconds: Invalid value: 300: may not '
            "specify a duration less than 10 minutes") in too_short.stderr
    missing = run_kubectl(authn, "-n", ns, "create", "token", "nobody", check=False)
    assert 'serviceaccounts "nobody" not found' in missing.stderr
    # a token for another audience is not for this server
    vault = create_token(authn, ns, "bot", "--audience", "vault")
    assert claims_of(vault)["aud"] == ["vault"]
    refused = run_kubectl(authn, "--token", vault, "-n", ns, "get", "configmaps", check=False)
    assert refused.returncode != 0 and "Unauthorized" in refused.stderr


def test_a_token_names_the_logical_cluster_of_its_service_account(authn: KcpServer) -> None:
    cluster = f"tok-{uuid.uuid4().hex[:6]}"
    server = f"{authn.url}/clusters/{cluster}"
    run_kubectl(authn, "--server", server, "-n", "default", "create", "serviceaccount", "robot")
    token = run_kubectl(authn, "--server", server, "-n", "default", "create", "token", "robot").stdout.strip()
    claims = claims_of(token)
    assert claims["kcp.io/cluster"] == cluster and claims["sub"] == "system:serviceaccount:default:robot"
    grant_view(authn, "--server", server)
    run_kubectl(authn, "--server", server, "--token", token, "-n", "default", "get", "serviceaccounts")


def token_review(server: KcpServer, token: str, *where: str, audiences: tuple[str, ...] = ()) -> dict[str, Any]:
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
              "spec": {"token": token, **({"audiences": list(audiences)} if audiences else {})}}
    out = run_kubectl(server, *where, "create", "-f", "-", "-o", "json", input_text=json.dumps(review)).stdout
    return dict(json.loads(out)["status"])


def test_a_token_review_names_who_a_token_proves_to_be_in_its_logical_cluster(authn: KcpServer) -> None:
    """TokenReview as kube answers it (issue 28 item 10): webhooks and kr8s' whoami() rely on it."""
    cluster = f"rev-{uuid.uuid4().hex[:6]}"
    here = ("--server", f"{authn.url}/clusters/{cluster}")
    run_kubectl(authn, *here, "-n", "default", "create", "serviceaccount", "robot")
    token = run_kubectl(authn, *here, "-n", "default", "create", "token", "robot").stdout.strip()
    sa_uid = json.loads(run_kubectl(authn, *here, "-n", "default", "get", "sa", "robot", "-o", "json").stdout)[
        "metadata"]["uid"]
    status = token_review(authn, token, *here)
    assert status["authenticated"] is True and status["audiences"] == [ISSUER]
    assert status["user"]["username"] == "system:serviceaccount:default:robot" and status["user"]["uid"] == sa_uid
    assert set(status["user"]["groups"]) == {"system:serviceaccounts", "system:serviceaccounts:default",
                                             "system:authenticated"}
    elsewhere = token_review(authn, token)  # asked in `admin`: the robot is not an identity there
    assert "authenticated" not in elsewhere and elsewhere["user"] == {} and "another logical cluster" in elsewhere["error"]
    assert "authenticated" not in token_review(authn, token + "x", *here)  # a forged signature proves nothing
    other_audience = token_review(authn, token, *here, audiences=("vault",))
    assert "authenticated" not in other_audience and "vault" in other_audience["error"]
    admin = token_review(authn, authn.token)
    assert admin["authenticated"] is True and "system:masters" in admin["user"]["groups"]
    empty = run_kubectl(authn, "create", "-f", "-", input_text=json.dumps(
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {}}), check=False)
    assert empty.returncode != 0 and "token is required for TokenReview in authentication" in empty.stderr


def test_tokens_of_a_deleted_or_recreated_service_account_are_refused(authn: KcpServer, ns: str) -> None:
    run_kubectl(authn, "-n", ns, "create", "serviceaccount", "ephemeral")
    token = create_token(authn, ns, "ephemeral")
    run_kubectl(authn, "--token", token, "-n", ns, "get", "serviceaccounts")
    run_kubectl(authn, "-n", ns, "delete", "serviceaccount", "ephemeral")
    deleted = run_kubectl(authn, "--token", token, "-n", ns, "get", "serviceaccounts", check=False)
    assert deleted.returncode != 0 and "error: You must be logged in to the server (Unauthorized)" in deleted.stderr
    run_kubectl(authn, "-n", ns, "create", "serviceaccount", "ephemeral")  # same name, another uid
    recreated = run_kubectl(authn, "--token", token, "-n", ns, "get", "serviceaccounts", check=False)
    assert recreated.returncode != 0 and "Unauthorized" in recreated.stderr
    run_kubectl(authn, "--token", create_token(authn, ns, "ephemeral"), "-n", ns, "get", "serviceaccounts")


def test_discovery_lists_the_token_subresource(authn: KcpServer) -> None:
    resources = json.loads(run_kubectl(authn, "get", "--raw", "/api/v1").stdout)["resources"]
    (token,) = [r for r in resources if r["name"] == "serviceaccounts/token"]
    assert (token["group"], token["version"], token["kind"], token["verbs"]) == (
        "authentication.k8s.io", "v1", "TokenRequest", ["create"])


# -- client certificates -----------------------------------------------------------------------------


def test_a_client_certificate_of_the_servers_ca_names_the_user_and_groups(authn: KcpServer, tmp_path: Path) -> None:
    cert = client_cert((authn.root / "ca.crt", authn.root / "ca.key"), tmp_path, "alice", ("dev", "ops"))
    kubeconfig = cert_kubeconfig(authn, cert, tmp_path / "alice.kubeconfig")
    result = subprocess.run([kubectl_binary(), "--kubeconfig", str(kubeconfig), "get", "namespaces", "default",
                             "-o", "name"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "namespace/default"
    events = wait_for(lambda: [e for e in audit_events(authn) if e["user"].get("username") == "alice"
                               and e.get("objectRef", {}).get("name") == "default"], "alice's audit event")
    user = events[-1]["user"]
    assert user["groups"] == ["dev", "ops", "system:authenticated"]
    assert user["extra"]["authentication.kubernetes.io/credential-id"][0].startswith("X509SHA256=")


def test_a_client_certificate_of_client_ca_file_is_accepted(authn: KcpServer, other_ca: tuple[Path, Path],
                                                            tmp_path: Path) -> None:
    cert = client_cert(other_ca, tmp_path, "bob", ("qa",))
    kubeconfig = cert_kubeconfig(authn, cert, tmp_path / "bob.kubeconfig")
    result = subprocess.run([kubectl_binary(), "--kubeconfig", str(kubeconfig), "get", "namespaces", "-o", "name"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "namespace/default" in result.stdout.split()


def test_a_certificate_from_an_unknown_ca_is_refused(authn: KcpServer, tmp_path: Path) -> None:
    """kube-apiserver answers 401; Python's TLS refuses the handshake (see server/cli.py). Either way: no access."""
    stranger_ca = new_ca(tmp_path, "stranger-ca")
    cert = client_cert(stranger_ca, tmp_path, "mallory", ("system:masters",))
    ctx = ssl.create_default_context(cafile=str(authn.root / "ca.crt"))
    ctx.load_cert_chain(str(cert[0]), str(cert[1]))
    answer = b""
    try:
        with socket.create_connection(("127.0.0.1", authn.port), timeout=10) as sock:
            with ctx.wrap_socket(sock, server_hostname="127.0.0.1") as tls:
                tls.sendall(b"GET /api/v1/namespaces HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                answer = tls.recv(4096)
    except (ssl.SSLError, ConnectionError):
        pass  # TLS 1.3: the client learns of the refusal when it reads
    assert answer == b"" or answer.startswith(b"HTTP/1.1 401 "), answer
    kubeconfig = cert_kubeconfig(authn, cert, tmp_path / "mallory.kubeconfig")
    result = subprocess.run([kubectl_binary(), "--kubeconfig", str(kubeconfig), "get", "namespaces"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and "namespace" not in result.stdout


# -- 401 ------------------------------------------------------------------------------------------


def _resign(token: str, claims: dict[str, Any], key: rsa.RSAPrivateKey) -> str:
    header = token.split(".")[0]
    body = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    signature = key.sign(f"{header}.{body}".encode(), padding.PKCS1v15(), hashes.SHA256())
    return f"{header}.{body}.{base64.urlsafe_b64encode(signature).rstrip(b'=').decode()}"


async def test_anything_but_a_known_credential_is_401_with_kubes_status(authn: KcpServer, ns: str) -> None:
    run_kubectl(authn, "-n", ns, "create", "serviceaccount", "bot")
    token = create_token(authn, ns, "bot")
    claims = claims_of(token)
    signing_key = serialization.load_pem_private_key((authn.root / "service-account.key").read_bytes(), None)
    assert isinstance(signing_key, rsa.RSAPrivateKey)
    forger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    header, payload, signature = token.split(".")
    past = int(time.time()) - 7200
    credentials = {
        "no credentials": {},
        "empty bearer": {"Authorization": "Bearer "},
        "unknown token": {"Authorization": "Bearer not-a-token-of-ours"},
        "forged (another key)": {"Authorization": f"Bearer {_resign(token, claims, forger)}"},
        "expired": {"Authorization": "Bearer " + _resign(token, {**claims, "iat": past, "nbf": past,
                                                                  "exp": past + 600}, signing_key)},
        "tampered claims": {"Authorization": "Bearer " + ".".join(
            [header, base64.urlsafe_b64encode(json.dumps({**claims, "sub": "system:admin"}).encode()).rstrip(
                b"=").decode(), signature])},
        "tampered signature": {"Authorization": f"Bearer {header}.{payload}.{signature[:-4]}AAAA"},
        "basic auth": {"Authorization": "Basic " + base64.b64encode(b"admin:admin").decode()},
        "admin token as basic": {"Authorization": "Basic " + base64.b64encode(f"x:{authn.token}".encode()).decode()},
    }
    for why, headers in credentials.items():
        for method, path in (("GET", f"/api/v1/namespaces/{ns}/configmaps"), ("GET", "/openid/v1/jwks"),
                             ("POST", f"/api/v1/namespaces/{ns}/serviceaccounts/bot/token")):
            status, body = await raw(authn, method, path, headers)
            assert (status, body) == (401, UNAUTHORIZED), (why, method, path)
    status, _ = await raw(authn, "GET", f"/api/v1/namespaces/{ns}/configmaps", {"Authorization": f"Bearer {token}"})
    assert status == 200
    result = run_kubectl(authn, "--token", "nonsense", "get", "namespaces", check=False)
    assert result.returncode == 1
    assert result.stderr.strip().endswith("error: You must be logged in to the server (Unauthorized)")
    # the server's logs and the audit log carry no credential
    wait_for(lambda: any(e["responseStatus"]["code"] == 401 and e.get("objectRef", {}).get("namespace") == ns
                         for e in audit_events(authn)), "the 401s in the audit log")
    for text in ((authn.root / "apiserver.log").read_text(), (authn.root / "audit.log").read_text()):
        assert token not in text and signature not in text and authn.token not in text
        assert "not-a-token-of-ours" not in text


# -- OIDC discovery ------------------------------------------------------------------------------------


async def test_the_issuers_openid_documents_verify_its_tokens(authn: KcpServer, ns: str) -> None:
    run_kubectl(authn, "-n", ns, "create", "serviceaccount", "oidc")
    token = create_token(authn, ns, "oidc")
    bearer = {"Authorization": f"Bearer {token}"}
    assert await raw(authn, "GET", "/.well-known/openid-configuration") == (401, UNAUTHORIZED)
    status, config = await raw(authn, "GET", "/.well-known/openid-configuration", bearer)
    assert status == 200
    assert config == {"issuer": ISSUER, "jwks_uri": f"{authn.url}/openid/v1/jwks",
                      "response_types_supported": ["id_token"], "subject_types_supported": ["public"],
                      "id_token_signing_alg_values_supported": ["RS256"]}
    async with aiohttp.ClientSession() as session:
        async with session.get(config["jwks_uri"], headers=bearer, ssl=authn.ssl_context()) as resp:
            assert resp.status == 200 and resp.headers["Content-Type"] == "application/jwk-set+json"
            jwks = json.loads(await resp.read())
    (key,) = jwks["keys"]
    assert key["kid"] == json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))["kid"]
    n = int.from_bytes(base64.urlsafe_b64decode(key["n"] + "=" * (-len(key["n"]) % 4)), "big")
    signing_input, _, signature = token.rpartition(".")
    rsa.RSAPublicNumbers(65537, n).public_key().verify(
        base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4)), signing_input.encode(),
        padding.PKCS1v15(), hashes.SHA256())


# -- audit ---------------------------------------------------------------------------------------------


async def test_an_audit_line_records_the_request(authn: KcpServer, ns: str) -> None:
    run_kubectl(authn, "-n", ns, "create", "serviceaccount", "auditor")
    run_kubectl(authn, "-n", ns, "create", "configmap", "audited", "--from-literal=secret-ish=value")
    token = create_token(authn, ns, "auditor")
    async with aiohttp.ClientSession() as session:
        reply = await Api(authn, session, token=token).get(f"/api/v1/namespaces/{ns}/configmaps/audited",
                                                          headers={"User-Agent": "audit-test/1"})
    assert reply.status == 200
    event = audit_event(authn, reply.headers["Audit-Id"])
    sa = json.loads(run_kubectl(authn, "-n", ns, "get", "serviceaccount", "auditor", "-o", "json").stdout)
    assert event["kind"] == "Event" and event["apiVersion"] == "audit.k8s.io/v1"
    assert (event["level"], event["stage"], event["verb"]) == ("Metadata", "ResponseComplete", "get")
    assert event["requestURI"] == f"/api/v1/namespaces/{ns}/configmaps/audited"
    assert event["user"]["username"] == f"system:serviceaccount:{ns}:auditor"
    assert event["user"]["uid"] == sa["metadata"]["uid"]
    assert event["user"]["groups"] == ["system:serviceaccounts", f"system:serviceaccounts:{ns}",
                                       "system:authenticated"]
    assert event["user"]["extra"]["authentication.kubernetes.io/credential-id"] == [f"JTI={claims_of(token)['jti']}"]
    assert event["sourceIPs"] == ["127.0.0.1"] and event["userAgent"] == "audit-test/1"
    assert event["objectRef"] == {"resource": "configmaps", "namespace": ns, "name": "audited", "apiVersion": "v1"}
    assert event["responseStatus"] == {"metadata": {}, "code": 200}
    assert event["annotations"]["authorization.k8s.io/decision"] == "allow"
    assert event["annotations"]["kcp.io/cluster"] == "admin"
    assert event["requestReceivedTimestamp"] <= event["stageTimestamp"]
    line = json.dumps(event)
    assert token not in line and "value" not in line  # no credentials, no bodies
    # a failed request is recorded with its status, and a caller's Audit-ID is kept
    async with aiohttp.ClientSession() as session:
        reply = await Api(authn, session).get(f"/api/v1/namespaces/{ns}/configmaps/absent",
                                              headers={"Audit-ID": "my-correlation-id"})
    assert reply.status == 404 and reply.headers["Audit-Id"] == "my-correlation-id"
    missing = audit_event(authn, "my-correlation-id")
    assert missing["user"]["username"] == "kcp-admin"
    assert missing["responseStatus"] == {"metadata": {}, "status": "Failure",
                                         "message": 'configmaps "absent" not found', "reason": "NotFound", "code": 404}
