"""The real kubectl, unmodified, with validation on (its defaults), against kcp."""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml

from kcp_process import KcpServer, OutputLines, kubectl_binary, run_kubectl

pytestmark = pytest.mark.usefixtures("kubectl_version")  # every test with kubectl 1.32 and with 1.35


@pytest.fixture
def ns(kcp: KcpServer, unique: str) -> str:
    name = f"kc-{unique}"
    run_kubectl(kcp, "create", "namespace", name)
    return name


def test_get_namespaces_works_with_tls_verified(kcp: KcpServer) -> None:
    out = run_kubectl(kcp, "get", "namespaces").stdout
    assert out.splitlines()[0].split() == ["NAME", "STATUS", "AGE"]
    assert any(line.split()[:2] == ["default", "Active"] for line in out.splitlines()[1:])


def test_api_resources_lists_the_builtin_types(kcp: KcpServer) -> None:
    out = run_kubectl(kcp, "api-resources").stdout
    for expected in ("configmaps", "secrets", "namespaces", "leases", "clusterroles", "customresourcedefinitions"):
        assert expected in out


def test_create_configmap_and_secret_and_read_them_back(kcp: KcpServer, ns: str) -> None:
    run_kubectl(kcp, "-n", ns, "create", "configmap", "cfg", "--from-literal=a=1")
    run_kubectl(kcp, "-n", ns, "create", "secret", "generic", "sec", "--from-literal=pw=s3cret")
    cm = json.loads(run_kubectl(kcp, "-n", ns, "get", "configmap", "cfg", "-o", "json").stdout)
    assert cm["data"] == {"a": "1"}
    pw = run_kubectl(kcp, "-n", ns, "get", "secret", "sec", "-o", "jsonpath={.data.pw}").stdout
    assert pw == "czNjcmV0"
    table = run_kubectl(kcp, "-n", ns, "get", "configmaps").stdout
    assert table.splitlines()[0].split() == ["NAME", "DATA", "AGE"]
    assert table.splitlines()[1].split()[:2] == ["cfg", "1"]


def test_apply_reports_created_unchanged_configured(kcp: KcpServer, ns: str) -> None:
    manifest = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app", "namespace": ns},
                "data": {"a": "1"}}
    first = run_kubectl(kcp, "apply", "-f", "-", input_text=yaml.safe_dump(manifest)).stdout
    assert "configmap/app created" in first
    second = run_kubectl(kcp, "apply", "-f", "-", input_text=yaml.safe_dump(manifest)).stdout
    assert "configmap/app unchanged" in second
    manifest["data"] = {"a": "2", "b": "3"}
    third = run_kubectl(kcp, "apply", "-f", "-", input_text=yaml.safe_dump(manifest)).stdout
    assert "configmap/app configured" in third
    got = json.loads(run_kubectl(kcp, "-n", ns, "get", "cm", "app", "-o", "json").stdout)
    assert got["data"] == {"a": "2", "b": "3"}
    assert "kubectl.kubernetes.io/last-applied-configuration" in got["metadata"]["annotations"]


def test_apply_with_an_unknown_field_is_refused_by_server_side_validation(kcp: KcpServer, ns: str) -> None:
    manifest = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "typo", "namespace": ns},
                "data": {"a": "1"}, "dta": {"b": "2"}}
    result = run_kubectl(kcp, "apply", "-f", "-", input_text=yaml.safe_dump(manifest), check=False)
    assert result.returncode != 0
    assert 'unknown field "dta"' in result.stderr


def test_delete_waits_until_gone(kcp: KcpServer, ns: str) -> None:
    run_kubectl(kcp, "-n", ns, "create", "configmap", "bye")
    out = run_kubectl(kcp, "-n", ns, "delete", "configmap", "bye").stdout
    assert 'configmap "bye" deleted' in out
    missing = run_kubectl(kcp, "-n", ns, "get", "configmap", "bye", check=False)
    assert missing.returncode != 0 and "NotFound" in missing.stderr


def test_label_annotate_and_three_patch_types(kcp: KcpServer, ns: str) -> None:
    run_kubectl(kcp, "-n", ns, "create", "configmap", "p", "--from-literal=a=1")
    run_kubectl(kcp, "-n", ns, "label", "configmap", "p", "tier=web")
    run_kubectl(kcp, "-n", ns, "annotate", "configmap", "p", "note=hello")
    run_kubectl(kcp, "-n", ns, "patch", "configmap", "p", "--type=merge", "-p", '{"data":{"b":"2"}}')
    run_kubectl(kcp, "-n", ns, "patch", "configmap", "p", "--type=json",
                "-p", '[{"op":"add","path":"/data/c","value":"3"}]')
    run_kubectl(kcp, "-n", ns, "patch", "configmap", "p", "--type=strategic", "-p", '{"data":{"d":"4"}}')
    got = json.loads(run_kubectl(kcp, "-n", ns, "get", "configmap", "p", "-o", "json").stdout)
    assert got["metadata"]["labels"] == {"tier": "web"}
    assert got["metadata"]["annotations"]["note"] == "hello"
    assert got["data"] == {"a": "1", "b": "2", "c": "3", "d": "4"}
    by_label = run_kubectl(kcp, "-n", ns, "get", "cm", "-l", "tier=web", "-o", "name").stdout.split()
    assert by_label == ["configmap/p"]


def test_output_formats(kcp: KcpServer, ns: str) -> None:
    run_kubectl(kcp, "-n", ns, "create", "configmap", "fmt", "--from-literal=x=y")
    as_yaml = yaml.safe_load(run_kubectl(kcp, "-n", ns, "get", "cm", "fmt", "-o", "yaml").stdout)
    assert as_yaml["data"] == {"x": "y"}
    as_json = json.loads(run_kubectl(kcp, "-n", ns, "get", "cm", "-o", "json").stdout)
    assert as_json["kind"] == "List" and as_json["items"][0]["metadata"]["name"] == "fmt"
    assert run_kubectl(kcp, "-n", ns, "get", "cm", "fmt", "-o", "jsonpath={.data.x}").stdout == "y"


def test_server_side_dry_run_stores_nothing(kcp: KcpServer, ns: str) -> None:
    out = run_kubectl(kcp, "-n", ns, "create", "configmap", "dry", "--dry-run=server").stdout
    assert "(server dry run)" in out
    assert run_kubectl(kcp, "-n", ns, "get", "cm", "dry", check=False).returncode != 0


def test_get_watch_prints_changes(kcp: KcpServer, ns: str) -> None:
    run_kubectl(kcp, "-n", ns, "create", "configmap", "listed-first")
    cmd = [kubectl_binary(), "--kubeconfig", str(kcp.kubeconfig), "-n", ns, "get", "configmaps", "-w",
           "--request-timeout=0"]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as watcher:
        try:
            assert watcher.stdout is not None
            output = OutputLines(watcher.stdout)
            output.wait_for("listed-first")  # listed: kubectl watches from the list's resourceVersion on
            run_kubectl(kcp, "-n", ns, "create", "configmap", "seen-by-watch")
            output.wait_for("seen-by-watch")
        finally:
            watcher.terminate()


def test_contexts_reach_their_logical_clusters(kcp: KcpServer, unique: str) -> None:
    run_kubectl(kcp, "create", "configmap", f"in-user-{unique}", context="user")
    user = run_kubectl(kcp, "get", "cm", "-o", "name", context="user").stdout.split()
    assert f"configmap/in-user-{unique}" in user
    admin = run_kubectl(kcp, "get", "cm", "-o", "name").stdout.split()
    assert f"configmap/in-user-{unique}" not in admin
    across = run_kubectl(kcp, "get", "cm", "-A", "-o", "json", context="cross-cluster").stdout
    clusters = {i["metadata"]["annotations"]["kcp.io/cluster"] for i in json.loads(across)["items"]}
    assert "user" in clusters
