"""deploy/helm/kcp, tested three ways with helm 4: `helm lint`, `helm template` for several value sets
(asserting the rendered objects), and installed with `helm install --wait` into a running
kcp-sim-cluster acting as the host cluster (its kubelet marks the pods Ready), then upgraded,
scaled and uninstalled. Values that break values.schema.json fail at lint and at install, naming
the field. The chart's generated credentials are also proved to start a real kcp-apiserver."""

from __future__ import annotations

import base64
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from repo_layout import REPO
from test_helm import Helm, helm_binary

from kcp_process import KcpServer, free_port, run_kubectl, sim_cluster_command, sim_cluster_env

CHART = REPO / "deploy" / "helm" / "kcp"
NAMESPACE = "kcp-system"


def helm_raw(tmp: Path, *args: str, kubeconfig: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = Helm(tmp, kubeconfig or tmp / "none").env
    extra = ["--kubeconfig", str(kubeconfig)] if kubeconfig else []
    return subprocess.run([helm_binary(), *extra, *args], capture_output=True, text=True, timeout=180, env=env)


def render(tmp: Path, *sets: str) -> list[dict[str, Any]]:
    args = [a for s in sets for a in ("--set", s)]
    result = helm_raw(tmp, "template", "rel", str(CHART), "--namespace", NAMESPACE, *args)
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def find(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    for obj in objects:
        if obj["kind"] == kind and obj["metadata"]["name"] == name:
            return obj
    raise AssertionError(f"no {kind} {name} in {[(o['kind'], o['metadata']['name']) for o in objects]}")


def env_of(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in container.get("env", [])}


def pod_specs(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o["spec"]["template"]["spec"] for o in objects if o["kind"] in ("Deployment", "StatefulSet")]


def test_lint_passes(tmp_path: Path) -> None:
    result = helm_raw(tmp_path, "lint", "--strict", str(CHART))
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(("value", "field"), [
    ("etcd.replicas=2", "/etcd/replicas"),
    ("apiserver.replicas=0", "/apiserver/replicas"),
    ("clusterController.syncerMode=sideways", "/clusterController/syncerMode"),
    ("deploymentSplitter.replicsa=2", "replicsa"),
    ("deploymentSplitter.shards=0", "/deploymentSplitter/shards"),
    ("podSecurityContext.runAsNonRoot=false", "/podSecurityContext/runAsNonRoot"),
])
def test_values_breaking_the_schema_fail_lint_naming_the_field(tmp_path: Path, value: str, field: str) -> None:
    result = helm_raw(tmp_path, "lint", str(CHART), "--set", value)
    assert result.returncode != 0
    assert field in result.stdout + result.stderr


def test_defaults_render_one_etcd_member_and_one_replica_each(tmp_path: Path) -> None:
    objects = render(tmp_path)
    etcd = find(objects, "StatefulSet", "rel-kcp-etcd")
    assert etcd["spec"]["replicas"] == 1
    command = etcd["spec"]["template"]["spec"]["containers"][0]["command"]
    initial = next(a for a in command if a.startswith("--initial-cluster="))
    assert initial.count("=http://") == 1
    assert etcd["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"] == "1Gi"
    apiserver = find(objects, "Deployment", "rel-kcp-apiserver")
    assert apiserver["spec"]["replicas"] == 1
    env = env_of(apiserver["spec"]["template"]["spec"]["containers"][0])
    assert env["KCP_APISERVER_ETCD_SERVERS"] == "http://rel-kcp-etcd-0.rel-kcp-etcd-peers.kcp-system.svc:2379"
    service = find(objects, "Service", "rel-kcp-apiserver")
    assert service["spec"]["ports"][0]["port"] == 6443
    for name in ("rel-kcp-cluster-controller", "rel-kcp-deployment-splitter"):
        deployment = find(objects, "Deployment", name)
        assert deployment["spec"]["replicas"] == 1
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        assert container["command"] == [name.removeprefix("rel-")]
        prefix = "KCP_" + name.removeprefix("rel-kcp-").upper().replace("-", "_")
        assert env_of(container)[f"{prefix}_LEADER_ELECT"] == "true"
        assert env_of(container)[f"{prefix}_KUBECONFIG"] == "/etc/kcp/admin.kubeconfig"
        assert container["resources"]["requests"]["cpu"] == "100m"


def test_every_pod_runs_as_non_root_with_health_probes(tmp_path: Path) -> None:
    objects = render(tmp_path)
    specs = pod_specs(objects)
    assert len(specs) == 4
    for spec in specs:
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["securityContext"]["runAsUser"] != 0
        for container in spec["containers"]:
            assert container["securityContext"]["allowPrivilegeEscalation"] is False
            assert "readinessProbe" in container and "livenessProbe" in container
    kcp_pods = [s for s in specs if s["containers"][0]["name"] != "etcd"]
    for spec in kcp_pods:
        container = spec["containers"][0]
        assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
        assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"


def test_three_etcd_members_know_each_other(tmp_path: Path) -> None:
    objects = render(tmp_path, "etcd.replicas=3")
    etcd = find(objects, "StatefulSet", "rel-kcp-etcd")
    assert etcd["spec"]["replicas"] == 3
    assert etcd["spec"]["podManagementPolicy"] == "Parallel"
    command = etcd["spec"]["template"]["spec"]["containers"][0]["command"]
    initial = next(a for a in command if a.startswith("--initial-cluster="))
    assert [m.split("=")[0] for m in initial.removeprefix("--initial-cluster=").split(",")] == [
        "rel-kcp-etcd-0", "rel-kcp-etcd-1", "rel-kcp-etcd-2"]
    env = env_of(find(objects, "Deployment", "rel-kcp-apiserver")["spec"]["template"]["spec"]["containers"][0])
    assert len(env["KCP_APISERVER_ETCD_SERVERS"].split(",")) == 3


def test_external_etcd_renders_no_statefulset(tmp_path: Path) -> None:
    objects = render(tmp_path, "etcd.external.endpoints={http://etcd-a:2379,http://etcd-b:2379}")
    assert not [o for o in objects if o["kind"] == "StatefulSet"]
    assert not [o for o in objects if o["metadata"]["name"] == "rel-kcp-etcd-peers"]
    env = env_of(find(objects, "Deployment", "rel-kcp-apiserver")["spec"]["template"]["spec"]["containers"][0])
    assert env["KCP_APISERVER_ETCD_SERVERS"] == "http://etcd-a:2379,http://etcd-b:2379"


def test_replicas_are_set_per_component_and_share_one_credentials_secret(tmp_path: Path) -> None:
    objects = render(tmp_path, "apiserver.replicas=3", "clusterController.replicas=2",
                     "deploymentSplitter.replicas=4", "deploymentSplitter.resources.limits.memory=1Gi")
    assert find(objects, "Deployment", "rel-kcp-apiserver")["spec"]["replicas"] == 3
    assert find(objects, "Deployment", "rel-kcp-cluster-controller")["spec"]["replicas"] == 2
    splitter = find(objects, "Deployment", "rel-kcp-deployment-splitter")
    assert splitter["spec"]["replicas"] == 4
    assert splitter["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"] == "1Gi"
    secrets = [o for o in objects if o["kind"] == "Secret"]
    assert [s["metadata"]["name"] for s in secrets] == ["rel-kcp-pki"]
    assert set(secrets[0]["data"]) == {"ca.crt", "ca.key", "apiserver.crt", "apiserver.key", "admin.token",
                                       "service-account.key", "admin.kubeconfig"}
    volumes = find(objects, "Deployment", "rel-kcp-apiserver")["spec"]["template"]["spec"]["volumes"]
    assert {"name": "pki", "secret": {"secretName": "rel-kcp-pki", "defaultMode": 0o400}} in volumes


def test_shards_render_one_deployment_per_shard_each_with_its_replicas_and_shard_flags(tmp_path: Path) -> None:
    objects = render(tmp_path, "deploymentSplitter.shards=2", "deploymentSplitter.replicas=2",
                     "clusterController.shards=3")
    for component, prefix, shards, replicas in [("deployment-splitter", "KCP_DEPLOYMENT_SPLITTER", 2, 2),
                                                ("cluster-controller", "KCP_CLUSTER_CONTROLLER", 3, 1)]:
        deployments = [o for o in objects if o["kind"] == "Deployment"
                       and o["metadata"]["labels"]["app.kubernetes.io/component"] == component]
        assert [d["metadata"]["name"] for d in deployments] == [f"rel-kcp-{component}-shard-{i}" for i in range(shards)]
        selectors = []
        for index, deployment in enumerate(deployments):
            assert deployment["spec"]["replicas"] == replicas  # every shard has its standbys
            env = env_of(deployment["spec"]["template"]["spec"]["containers"][0])
            assert (env[f"{prefix}_SHARDS"], env[f"{prefix}_SHARD_INDEX"]) == (str(shards), str(index))
            assert env[f"{prefix}_LEADER_ELECT"] == "true"
            selector = deployment["spec"]["selector"]["matchLabels"]
            assert selector.items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
            selectors.append(selector)
        assert all(a != b and not a.items() <= b.items() for a in selectors for b in selectors if a is not b)
    unsharded = render(tmp_path)
    for component in ("deployment-splitter", "cluster-controller"):
        env = env_of(find(unsharded, "Deployment", f"rel-kcp-{component}")["spec"]["template"]["spec"]["containers"][0])
        assert not [name for name in env if "SHARD" in name]  # one shard: the Lease keeps the component's name


def test_pull_mode_syncer_rbac(tmp_path: Path) -> None:
    objects = render(tmp_path)
    role = find(objects, "ClusterRole", "rel-kcp-syncer-installer")
    granted = {(g, r) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]}
    for needed in [("", "namespaces"), ("", "serviceaccounts"), ("", "serviceaccounts/token"), ("", "secrets"),
                   ("rbac.authorization.k8s.io", "clusterroles"), ("rbac.authorization.k8s.io", "clusterrolebindings"),
                   ("apps", "deployments"), ("apps", "deployments/status")]:
        assert needed in granted
    binding = find(objects, "ClusterRoleBinding", "rel-kcp-syncer-installer")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "rel-kcp-syncer-installer",
                                    "namespace": NAMESPACE}]
    assert not [o for o in render(tmp_path, "pullSyncerRBAC.create=false") if o["kind"] == "ClusterRole"]


def test_generated_credentials_start_a_real_apiserver(tmp_path: Path) -> None:
    """The Secret every replica copies into its root dir: kcp-apiserver takes its CA (helm's, RSA),
    issues itself a serving certificate with it, and accepts the admin kubeconfig's token."""
    secret = find(render(tmp_path), "Secret", "rel-kcp-pki")
    root = tmp_path / "root"
    root.mkdir()
    for key, value in secret["data"].items():
        (root / key).write_bytes(base64.b64decode(value))
        (root / key).chmod(0o600)
    server = KcpServer(root, free_port(), ["--bind-address", "0.0.0.0", "--external-hostname", "rel-kcp-apiserver"])
    server.start()
    try:
        kubeconfig = tmp_path / "chart.kubeconfig"
        kubeconfig.write_bytes(base64.b64decode(secret["data"]["admin.kubeconfig"]))
        result = subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), "--server",
                                 f"https://localhost:{server.port}", "get", "namespace", "default", "-o", "name"],
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "namespace/default"
    finally:
        server.stop()


# -- installed into a simulated host cluster -------------------------------------------------------------


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KcpServer]:
    server = KcpServer(tmp_path_factory.mktemp("host"), free_port(), ["--nodes", "2", "--ready-delay", "0.2"],
                       command=sim_cluster_command(), env=sim_cluster_env())
    server.start()
    try:
        yield server
    finally:
        server.stop()


def get(host: KcpServer, *what: str) -> Any:
    return json.loads(run_kubectl(host, "-n", NAMESPACE, "get", *what, "-o", "json").stdout)


def ready_replicas(host: KcpServer, kind: str, name: str) -> tuple[int, int]:
    obj = get(host, kind, name)
    return obj["spec"]["replicas"], obj["status"].get("readyReplicas", 0)


def test_install_upgrade_scale_and_uninstall(host: KcpServer, tmp_path: Path) -> None:
    helm = Helm(tmp_path, host.kubeconfig)
    bad = helm_raw(tmp_path, "install", "bad", str(CHART), "-n", NAMESPACE, "--create-namespace",
                   "--set", "etcd.replicas=5", kubeconfig=host.kubeconfig)
    assert bad.returncode != 0 and "/etcd/replicas" in bad.stderr
    assert "bad-kcp-etcd" not in run_kubectl(host, "get", "statefulsets", "-A").stdout

    out = helm("install", "kcp", str(CHART), "-n", NAMESPACE, "--create-namespace", "--wait", "--timeout", "240s")
    assert "STATUS: deployed" in out
    assert "admin.kubeconfig" in out  # NOTES tell how to get it
    for kind, name in [("statefulset", "kcp-etcd"), ("deployment", "kcp-apiserver"),
                       ("deployment", "kcp-cluster-controller"), ("deployment", "kcp-deployment-splitter")]:
        assert ready_replicas(host, kind, name) == (1, 1), (kind, name)
    pods = get(host, "pods", "-l", "app.kubernetes.io/instance=kcp")["items"]
    assert len(pods) == 4
    assert all(p["spec"]["securityContext"]["runAsNonRoot"] for p in pods)
    assert all(p["status"]["phase"] == "Running" for p in pods)
    secret = get(host, "secret", "kcp-pki")
    token = base64.b64decode(secret["data"]["admin.token"])
    service = get(host, "service", "kcp-apiserver")
    assert service["spec"]["ports"][0]["port"] == 6443
    assert get(host, "pvc", "data-kcp-etcd-0")["status"]["phase"] == "Bound"

    helm("upgrade", "kcp", str(CHART), "-n", NAMESPACE, "--wait", "--timeout", "240s", "--set", "apiserver.replicas=2")
    assert ready_replicas(host, "deployment", "kcp-apiserver") == (2, 2)
    # the credentials survive an upgrade: clients keep working
    assert base64.b64decode(get(host, "secret", "kcp-pki")["data"]["admin.token"]) == token

    helm("upgrade", "kcp", str(CHART), "-n", NAMESPACE, "--wait", "--timeout", "240s", "--reuse-values",
         "--set", "deploymentSplitter.replicas=3")
    assert ready_replicas(host, "deployment", "kcp-deployment-splitter") == (3, 3)
    assert ready_replicas(host, "deployment", "kcp-cluster-controller") == (1, 1)
    assert ready_replicas(host, "deployment", "kcp-apiserver") == (2, 2)

    helm("upgrade", "kcp", str(CHART), "-n", NAMESPACE, "--wait", "--timeout", "240s", "--reuse-values",
         "--set", "deploymentSplitter.shards=2", "--set", "deploymentSplitter.replicas=2")
    for index in (0, 1):  # two shards of two replicas: four splitter pods
        assert ready_replicas(host, "deployment", f"kcp-deployment-splitter-shard-{index}") == (2, 2)
    names = run_kubectl(host, "-n", NAMESPACE, "get", "deployments", "-o", "name").stdout.split()
    assert "deployment.apps/kcp-deployment-splitter" not in names  # the unsharded one is gone
    splitters = get(host, "pods", "-l", "app.kubernetes.io/component=deployment-splitter,kcp.io/shard")["items"]
    assert sorted(p["metadata"]["labels"]["kcp.io/shard"] for p in splitters) == ["0", "0", "1", "1"]
    history = json.loads(helm("history", "kcp", "-n", NAMESPACE, "-o", "json"))
    assert [h["revision"] for h in history] == [1, 2, 3, 4]

    helm("uninstall", "kcp", "-n", NAMESPACE, "--wait", "--timeout", "120s")
    left = run_kubectl(host, "-n", NAMESPACE, "get", "deployments,statefulsets,services,secrets", "-o", "name").stdout
    assert "kcp-" not in left, left
    assert "kcp-syncer-installer" not in run_kubectl(host, "get", "clusterroles", "-o", "name").stdout


def test_a_given_tls_secret_is_the_ca_and_serving_certificate_the_apiserver_gets(host: KcpServer,
                                                                                 tmp_path: Path) -> None:
    from kcp_apiserver.server.pki import ensure_credentials

    creds = ensure_credentials(tmp_path / "pki", ["kcp.example.com"])
    namespace = "kcp-given"
    run_kubectl(host, "create", "namespace", namespace)
    run_kubectl(host, "-n", namespace, "create", "secret", "generic", "my-tls",
                f"--from-file=ca.crt={creds.ca_cert}", f"--from-file=ca.key={tmp_path / 'pki' / 'ca.key'}",
                f"--from-file=tls.crt={creds.serving_cert}", f"--from-file=tls.key={creds.serving_key}")
    helm = Helm(tmp_path, host.kubeconfig)
    helm("install", "given", str(CHART), "-n", namespace, "--set", "apiserver.tls.existingSecret=my-tls")
    try:
        pki = json.loads(run_kubectl(host, "-n", namespace, "get", "secret", "given-kcp-pki", "-o", "json").stdout)
        data = {key: base64.b64decode(value) for key, value in pki["data"].items()}
        assert data["ca.crt"] == creds.ca_cert.read_bytes()
        assert data["apiserver.crt"] == creds.serving_cert.read_bytes()
        assert data["apiserver.key"] == creds.serving_key.read_bytes()
        assert data["admin.token"]  # the rest is still generated
    finally:
        helm("uninstall", "given", "-n", namespace, "--wait", "--timeout", "120s")


def test_helm_env_stays_in_tmp(tmp_path: Path) -> None:
    env = Helm(tmp_path, tmp_path / "k").env
    for key in ("HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"):
        assert env[key].startswith(str(tmp_path))
    assert os.environ.get("HOME") != env["HOME"]
