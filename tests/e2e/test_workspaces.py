"""Workspaces with the real kubectl against a real kcp: a Workspace in a parent makes a child logical cluster
(`parent:name`) that becomes Ready with its LogicalCluster `cluster`; deleting it removes the child and
everything in it, nested workspaces first; the creator is the child's admin and others need `access`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from test_process_lifecycle import ExternalEtcd

from kcp_process import KcpServer, free_port, kubectl_1_35, kubectl_at, kubectl_binary, run_kubectl

USERS = {"team-a-token": ("team-a-lead", "team-a"), "stranger-token": ("stranger", "")}


@pytest.fixture(scope="module")
def etcd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ExternalEtcd]:
    """An etcd of the test's own, so that what a deleted workspace leaves in it can be read key by key."""
    server = ExternalEtcd(tmp_path_factory.mktemp("workspaces-etcd"))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def kcp(tmp_path_factory: pytest.TempPathFactory, etcd: ExternalEtcd) -> Iterator[KcpServer]:
    root = tmp_path_factory.mktemp("kcp-workspaces")
    tokens = root / "tokens.csv"
    tokens.write_text("".join(f'{token},{user},uid-{user}' + (f',"{groups}"' if groups else "") + "\n"
                              for token, (user, groups) in USERS.items()))
    server = KcpServer(root, free_port(), ["--token-auth-file", str(tokens), "--etcd-servers", etcd.url])
    server.start()
    yield server
    assert server.stop() == 0, server.log_tail()


def etcd_keys(etcd: ExternalEtcd) -> list[str]:
    etcdctl = Path(etcd.binary).with_name("etcdctl")
    out = subprocess.run([str(etcdctl), "--endpoints", etcd.url, "get", "/registry/", "--prefix", "--keys-only"],
                         capture_output=True, text=True, check=True, timeout=20).stdout
    return [line for line in out.splitlines() if line]


@pytest.fixture
def parent() -> str:
    return f"root-{uuid.uuid4().hex[:8]}"


def kubectl(kcp: KcpServer, cluster: str, *args: str, token: str | None = None, check: bool = True,
            input_text: str | None = None) -> subprocess.CompletedProcess[str]:
    flags = ["--server", f"{kcp.url}/clusters/{cluster}"] + (["--token", token] if token else [])
    return run_kubectl(kcp, *flags, *args, check=check, input_text=input_text)


def can(kcp: KcpServer, cluster: str, token: str, *args: str) -> bool:
    return kubectl(kcp, cluster, *args, token=token, check=False).returncode == 0


def workspace(name: str) -> str:
    return json.dumps({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": name}})


def create_ready(kcp: KcpServer, parent: str, name: str, token: str | None = None) -> None:
    kubectl(kcp, parent, "create", "-f", "-", input_text=workspace(name), token=token)
    kubectl(kcp, parent, "wait", f"workspace/{name}", "--for=jsonpath={.status.phase}=Ready", "--timeout=20s",
            token=token)


def test_a_workspace_makes_a_child_logical_cluster_that_becomes_ready(kcp: KcpServer, parent: str) -> None:
    create_ready(kcp, parent, "team-a")
    table = kubectl(kcp, parent, "get", "workspaces").stdout.splitlines()
    assert table[0].split() == ["NAME", "TYPE", "PHASE", "URL", "AGE"]
    assert table[1].split()[:4] == ["team-a", "universal", "Ready", f"{kcp.url}/clusters/{parent}:team-a"]
    ws = json.loads(kubectl(kcp, parent, "get", "workspace", "team-a", "-o", "json").stdout)
    assert ws["spec"]["cluster"] == f"{parent}:team-a"
    lc = json.loads(kubectl(kcp, f"{parent}:team-a", "get", "logicalclusters", "cluster", "-o", "json").stdout)
    assert lc["spec"]["owner"] == {"apiVersion": "tenancy.kcp.io/v1alpha1", "resource": "workspaces",
                                   "name": "team-a", "cluster": parent, "uid": ws["metadata"]["uid"]}
    assert lc["status"]["phase"] == "Ready"
    create_ready(kcp, f"{parent}:team-a", "dev")  # the tree goes on: parent:team-a:dev
    assert "default" in kubectl(kcp, f"{parent}:team-a:dev", "get", "namespaces").stdout
    resources = kubectl(kcp, parent, "api-resources", "--api-group=tenancy.kcp.io").stdout
    assert "workspaces" in resources and "ws" in resources


def test_a_logical_cluster_written_before_is_never_adopted_by_a_workspace(kcp: KcpServer, parent: str) -> None:
    kubectl(kcp, f"{parent}:taken", "create", "configmap", "someone-elses", "-n", "default")  # a flat name
    kubectl(kcp, parent, "create", "-f", "-", input_text=workspace("taken"))
    kubectl(kcp, parent, "wait", "workspace/taken", "--for=jsonpath={.status.conditions[0].reason}=LogicalClusterExists",
            "--timeout=20s")
    ws = json.loads(kubectl(kcp, parent, "get", "workspace", "taken", "-o", "json").stdout)
    assert ws["status"]["phase"] == "Scheduling"
    bindings = kubectl(kcp, f"{parent}:taken", "get", "clusterrolebindings", "-o", "name").stdout.split()
    assert "clusterrolebinding.rbac.authorization.k8s.io/workspace-admin" not in bindings
    kubectl(kcp, parent, "delete", "workspace", "taken", "--timeout=20s")  # goes, and takes nothing with it
    assert kubectl(kcp, f"{parent}:taken", "get", "configmap", "someone-elses", "-n", "default", "-o", "name").stdout


def test_deleting_a_workspace_deletes_its_logical_cluster_and_its_children(kcp: KcpServer, etcd: ExternalEtcd,
                                                                          parent: str) -> None:
    create_ready(kcp, parent, "gone")
    child = f"{parent}:gone"
    create_ready(kcp, child, "nested")
    kubectl(kcp, child, "create", "configmap", "c1", "-n", "default", "--from-literal=a=b")
    kubectl(kcp, f"{child}:nested", "create", "namespace", "apps")
    kubectl(kcp, child, "delete", "workspace", "nested", "--wait=false")  # the grandchild's subtree goes too
    kubectl(kcp, parent, "delete", "workspace", "gone", "--timeout=30s")  # waits until the finalizer is gone
    left = json.loads(kubectl(kcp, "*", "get", "configmaps,namespaces,logicalclusters,workspaces,serviceaccounts",
                              "-A", "-o", "json").stdout)["items"]
    clusters = {item["metadata"]["annotations"]["kcp.io/cluster"] for item in left}
    assert not {c for c in clusters if c == child or c.startswith(f"{child}:")}
    assert parent in clusters  # the parent itself is untouched
    left_keys = [k for k in etcd_keys(etcd) if k.endswith(f"/{child}") or f"/{child}/" in k or f"/{child}:" in k]
    assert not left_keys
    create_ready(kcp, parent, "gone")  # made again under the same name: a fresh cluster
    assert "namespace/default" in kubectl(kcp, child, "get", "namespaces", "-o", "name").stdout.split()
    assert not kubectl(kcp, child, "get", "configmaps", "-n", "default", "--ignore-not-found").stdout


def test_the_creator_is_admin_of_the_child_and_others_need_access(kcp: KcpServer, parent: str) -> None:
    kubectl(kcp, parent, "get", "namespaces")  # the parent logical cluster exists
    denied = kubectl(kcp, parent, "create", "-f", "-", input_text=workspace("team"), token="team-a-token",
                     check=False)
    assert denied.returncode == 1
    assert ('workspaces.tenancy.kcp.io is forbidden: User "team-a-lead" cannot create resource "workspaces" in '
            'API group "tenancy.kcp.io" at the cluster scope') in denied.stderr
    kubectl(kcp, parent, "create", "clusterrole", "workspace-maker", "--verb=create,get,list,watch",
            "--resource=workspaces.tenancy.kcp.io")
    kubectl(kcp, parent, "create", "clusterrolebinding", "team-a-makes", "--clusterrole=workspace-maker",
            "--group=team-a")
    create_ready(kcp, parent, "team", token="team-a-token")
    child = f"{parent}:team"
    create_ready(kcp, parent, "admins-only")  # made by the admin: the team may not enter it, so never sees it
    listed = kubectl(kcp, parent, "get", "workspaces", "-o", "name", token="team-a-token").stdout.split()
    assert listed == ["workspace.tenancy.kcp.io/team"]
    assert len(kubectl(kcp, parent, "get", "workspaces", "-o", "name").stdout.split()) == 2  # the admin sees both
    server, token = ["--server", f"{kcp.url}/clusters/{parent}"], ["--token", "team-a-token"]
    newer = kubectl_at(kubectl_1_35(), kcp.kubeconfig, *server, *token, "get", "workspaces", "-o", "name")
    assert newer.stdout.split() == ["workspace.tenancy.kcp.io/team"], newer.stderr
    waited = kubectl_at(kubectl_1_35(), kcp.kubeconfig, *server, *token, "wait", "workspace/team",  # watch-list
                        "--for=jsonpath={.status.phase}=Ready", "--timeout=10s")
    assert waited.returncode == 0, waited.stderr
    hidden = kubectl_at(kubectl_1_35(), kcp.kubeconfig, *server, *token, "wait", "workspace/admins-only",
                        "--for=jsonpath={.status.phase}=Ready", "--timeout=2s")
    assert hidden.returncode == 1  # the team may get it by name (RBAC), but a filtered watch never shows it
    kubectl(kcp, child, "create", "namespace", "apps", token="team-a-token")  # the creator is admin there
    assert not can(kcp, child, "stranger-token", "get", "namespaces")  # even discovery is closed to it
    entering = run_kubectl(kcp, "--token", "stranger-token", "get", "--raw", f"/clusters/{child}/api/v1/namespaces",
                           check=False)  # from the server's root: kubectl 1.32 and 1.35 agree on that path
    assert entering.returncode == 1
    assert 'namespaces is forbidden: User "stranger" cannot list resource "namespaces"' in entering.stderr
    assert f'access denied to workspace "{child}"' in entering.stderr
    # kcp's convention: `access` on the non-resource URL "/" lets a user in; RBAC decides the rest
    enter = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "enter"},
             "rules": [{"nonResourceURLs": ["/"], "verbs": ["access"]}]}  # `kubectl create clusterrole` refuses the verb
    kubectl(kcp, child, "create", "-f", "-", input_text=json.dumps(enter), token="team-a-token")
    kubectl(kcp, child, "create", "clusterrolebinding", "stranger-enters", "--clusterrole=enter",
            "--user=stranger", token="team-a-token")
    inside = run_kubectl(kcp, "--token", "stranger-token", "get", "--raw", f"/clusters/{child}/api/v1/namespaces",
                         check=False)
    assert 'User "stranger" cannot list resource "namespaces"' in inside.stderr  # in, but no further right
    assert "access denied to workspace" not in inside.stderr
    assert can(kcp, child, "stranger-token", "api-resources")  # discovery is open to it now


def test_kubectl_ws_creates_enters_and_walks_the_tree(kcp: KcpServer, parent: str, tmp_path: Path) -> None:
    config = yaml.safe_load(kcp.kubeconfig.read_text())
    for cluster in config["clusters"]:
        cluster["cluster"]["server"] = f"{kcp.url}/clusters/{parent}"
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    env = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", "KUBECONFIG": str(kubeconfig)}

    def ws(*args: str) -> str:
        done = subprocess.run([kubectl_binary(), "ws", *args], capture_output=True, text=True, timeout=60,
                              env={**os.environ, **env})
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert ws() == f'Current workspace is "{parent}".\n'
    assert "is ready to use" in ws("create", "team-x", "--enter")
    assert ws() == f'Current workspace is "{parent}:team-x".\n'
    ws("create", "dev")
    ws("use", "dev")
    namespaces = subprocess.run([kubectl_binary(), "get", "namespaces", "-o", "name"], capture_output=True,
                                text=True, env={**os.environ, **env}, check=True).stdout  # kubectl follows
    assert "namespace/default" in namespaces.split()
    assert ws("..") == f'Current workspace is "{parent}:team-x".\n'
    assert ws("-") == f'Current workspace is "{parent}:team-x:dev".\n'
    ws(f":{parent}")
    assert ws("tree") == f"{parent}\n└── team-x\n    └── dev\n"
    missing = subprocess.run([kubectl_binary(), "ws", "use", "nowhere"], capture_output=True, text=True,
                             env={**os.environ, **env})
    assert missing.returncode == 1 and f'workspace "{parent}:nowhere" not found' in missing.stderr


def test_a_workspace_with_a_thousand_objects_goes_whole_its_children_first(kcp: KcpServer, etcd: ExternalEtcd,
                                                                          parent: str) -> None:
    """Issue 24's acceptance: 1,000 ConfigMaps in 10 namespaces and a nested workspace; deleting the workspace
    finishes, its nested workspace's LogicalCluster goes before its own, and etcd holds no key of either."""
    create_ready(kcp, parent, "big")
    big = f"{parent}:big"
    create_ready(kcp, big, "inner")
    kubectl(kcp, f"{big}:inner", "create", "configmap", "inside", "-n", "default")
    for n in range(10):
        kubectl(kcp, big, "create", "namespace", f"ns-{n}")
        kubectl(kcp, big, "apply", "-f", "-", input_text=json.dumps({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i}", "namespace": f"ns-{n}"},
             "data": {"n": str(i)}} for i in range(100)]}))

    def keys_of(cluster: str) -> list[str]:
        return [k for k in etcd_keys(etcd) if k.endswith(f"/{cluster}") or f"/{cluster}/" in k]

    assert len([k for k in keys_of(big) if "/configmaps/" in k]) >= 1000
    code, listed = kcp.get_json("/clusters/*/apis/core.kcp.io/v1alpha1/logicalclusters")
    assert code == 200, listed
    since = listed["metadata"]["resourceVersion"]
    kubectl(kcp, parent, "delete", "workspace", "big", "--timeout=120s")
    assert keys_of(big) == [] and keys_of(f"{big}:inner") == []
    watch = urllib.request.Request(
        f"{kcp.url}/clusters/*/apis/core.kcp.io/v1alpha1/logicalclusters?watch=1&resourceVersion={since}"
        "&timeoutSeconds=2", headers={"Authorization": f"Bearer {kcp.token}"})
    with urllib.request.urlopen(watch, context=kcp.ssl_context(), timeout=30) as answer:
        events = [json.loads(line) for line in answer.read().decode().splitlines()]
    gone = [e["object"]["metadata"]["annotations"]["kcp.io/cluster"] for e in events if e["type"] == "DELETED"]
    assert gone.index(f"{big}:inner") < gone.index(big), gone
