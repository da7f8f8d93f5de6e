"""WorkspaceTypes with the real kubectl against a real kcp: a Workspace's type is resolved and recorded, its
labels added; a type's initializer holds the workspace Initializing until its controller lifts it from the
child's LogicalCluster; a type's defaultAPIBindings are bound before the workspace is Ready; using a type
needs `use` on it, parents and children limit each other, a type never changes, and `kubectl ws create
--type` makes one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from syncer_fixtures import eventually

from kcp_process import KcpServer, free_port, kubectl_binary, run_kubectl, token_auth

USERS = {"team-a-token": ("team-a-lead", "team-a"), "init-token": ("team-initializer", "initializers")}


@pytest.fixture(scope="module")
def kcp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KcpServer]:
    root = tmp_path_factory.mktemp("kcp-workspace-types")
    server = KcpServer(root, free_port(), token_auth(root, USERS))
    server.start()
    yield server
    assert server.stop() == 0, server.log_tail()


@pytest.fixture
def parent() -> str:
    return f"root-{uuid.uuid4().hex[:8]}"


def kubectl(kcp: KcpServer, cluster: str, *args: str, token: str | None = None, check: bool = True,
            input_text: str | None = None) -> subprocess.CompletedProcess[str]:
    flags = ["--server", f"{kcp.url}/clusters/{cluster}"] + (["--token", token] if token else [])
    return run_kubectl(kcp, *flags, *args, check=check, input_text=input_text)


def apply(kcp: KcpServer, cluster: str, obj: dict[str, Any], token: str | None = None) -> None:
    kubectl(kcp, cluster, "apply", "-f", "-", input_text=json.dumps(obj), token=token)


def workspace_type(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "WorkspaceType", "metadata": {"name": name},
            "spec": spec}


def workspace(name: str, type_name: str = "", path: str = "") -> str:
    spec = {"type": {"name": type_name, **({"path": path} if path else {})}} if type_name else {}
    return json.dumps({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": name},
                       "spec": spec})


def get(kcp: KcpServer, cluster: str, *args: str) -> dict[str, Any]:
    return json.loads(kubectl(kcp, cluster, "get", *args, "-o", "json").stdout)


def phase_is(kcp: KcpServer, parent: str, name: str, phase: str) -> dict[str, Any] | None:
    ws = get(kcp, parent, "workspace", name)
    return ws if (ws.get("status") or {}).get("phase") == phase else None


def test_an_initializer_holds_the_workspace_until_its_controller_lifts_it(kcp: KcpServer, parent: str) -> None:
    apply(kcp, parent, workspace_type("team", initializer=True, additionalWorkspaceLabels={"tier": "team"}))
    kubectl(kcp, parent, "create", "-f", "-", input_text=workspace("alpha", "team"))
    ws = eventually(lambda: phase_is(kcp, parent, "alpha", "Initializing"), "alpha Initializing")
    assert ws["spec"]["type"] == {"name": "team", "path": parent}  # resolved in the parent, path filled in
    assert ws["metadata"]["labels"]["tier"] == "team"
    initializer = f"{parent}:team"
    ws = eventually(lambda: [w for w in [get(kcp, parent, "workspace", "alpha")]
                             if "waiting for initializers" in str(w["status"].get("conditions"))],
                    "the workspace says what it waits for")[0]
    assert ws["status"]["initializers"] == [initializer] and ws["status"]["phase"] == "Initializing"
    child = f"{parent}:alpha"
    lc = get(kcp, child, "logicalcluster", "cluster")
    assert lc["spec"]["initializers"] == [initializer] and lc["status"]["initializers"] == [initializer]
    assert lc["metadata"]["annotations"]["internal.tenancy.kcp.io/type"] == initializer
    # the type's initializing controller (its own identity) lifts its initializer once it may `initialize` the type
    kubectl(kcp, child, "create", "namespace", "team-tools")  # what it set up (made by the admin here)
    lift = ("patch", "logicalcluster", "cluster", "--subresource=status", "--type=merge",
            "-p", json.dumps({"status": {"initializers": []}}))
    denied = kubectl(kcp, child, *lift, token="init-token", check=False)
    assert denied.returncode == 1 and "Forbidden" in denied.stderr, denied.stderr
    apply(kcp, parent, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                        "metadata": {"name": "initialize-team"},
                        "rules": [{"apiGroups": ["tenancy.kcp.io"], "resources": ["workspacetypes"],
                                   "resourceNames": ["team"], "verbs": ["initialize"]}]})
    kubectl(kcp, parent, "create", "clusterrolebinding", "team-initializer", "--clusterrole=initialize-team",
            "--user=team-initializer")
    eventually(lambda: kubectl(kcp, child, *lift, token="init-token", check=False).returncode == 0,
               "the initializer lifted by its controller")
    assert kubectl(kcp, child, "get", "namespaces", token="init-token", check=False).returncode == 1  # only that
    ready = eventually(lambda: phase_is(kcp, parent, "alpha", "Ready"), "alpha Ready once lifted")
    assert ready["status"]["initializers"] == []
    assert get(kcp, child, "logicalcluster", "cluster")["status"]["phase"] == "Ready"


def test_a_type_s_default_api_bindings_are_bound_before_its_workspace_is_ready(kcp: KcpServer, parent: str) -> None:
    provider = f"{parent}-provider"
    schema = {"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIResourceSchema",
              "metadata": {"name": "v1.gadgets.example.io"},
              "spec": {"group": "example.io", "scope": "Namespaced",
                       "names": {"kind": "Gadget", "listKind": "GadgetList", "plural": "gadgets",
                                 "singular": "gadget"},
                       "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                           "type": "object", "x-kubernetes-preserve-unknown-fields": True}}]}}
    apply(kcp, provider, schema)
    apply(kcp, provider, {"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport", "metadata": {"name": "gadgets"},
                          "spec": {"latestResourceSchemas": ["v1.gadgets.example.io"]}})
    apply(kcp, parent, workspace_type("with-gadgets", defaultAPIBindings=[{"path": provider, "export": "gadgets"}]))
    kubectl(kcp, parent, "create", "-f", "-", input_text=workspace("beta", "with-gadgets"))
    kubectl(kcp, parent, "wait", "workspace/beta", "--for=jsonpath={.status.phase}=Ready", "--timeout=30s")
    child = f"{parent}:beta"
    binding = get(kcp, child, "apibinding", "gadgets")  # there, and Bound, the moment the workspace is Ready
    assert binding["status"]["phase"] == "Bound"
    assert binding["spec"]["reference"]["export"] == {"path": provider, "name": "gadgets"}
    kubectl(kcp, child, "create", "-f", "-", input_text=json.dumps({
        "apiVersion": "example.io/v1", "kind": "Gadget", "metadata": {"name": "g", "namespace": "default"}}))
    assert get(kcp, child, "gadgets", "g")["metadata"]["name"] == "g"


def test_using_a_type_needs_use_on_it_and_parents_and_children_limit_each_other(kcp: KcpServer,
                                                                                  parent: str) -> None:
    kubectl(kcp, parent, "create", "clusterrole", "workspace-maker", "--verb=create,get,list,watch,patch",
            "--resource=workspaces.tenancy.kcp.io")
    kubectl(kcp, parent, "create", "clusterrolebinding", "team-a-makes", "--clusterrole=workspace-maker",
            "--group=team-a")
    apply(kcp, parent, workspace_type("restricted"))
    denied = kubectl(kcp, parent, "create", "-f", "-", input_text=workspace("r1", "restricted"),
                     token="team-a-token", check=False)
    assert denied.returncode == 1
    assert (f'workspaces.tenancy.kcp.io "r1" is forbidden: unable to use workspace type {parent}:restricted: '
            "missing verb='use' permission on workspacetypes") in denied.stderr
    use = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "use-restricted"},
           "rules": [{"apiGroups": ["tenancy.kcp.io"], "resources": ["workspacetypes"],
                      "resourceNames": ["restricted"], "verbs": ["use"]}]}
    apply(kcp, parent, use)
    kubectl(kcp, parent, "create", "clusterrolebinding", "team-a-uses", "--clusterrole=use-restricted",
            "--group=team-a")
    kubectl(kcp, parent, "create", "-f", "-", input_text=workspace("r1", "restricted"), token="team-a-token")
    kubectl(kcp, parent, "create", "-f", "-", input_text=workspace("u1"), token="team-a-token")  # universal: anyone's
    assert get(kcp, parent, "workspace", "u1")["spec"]["type"] == {"name": "universal", "path": "root"}

    apply(kcp, parent, workspace_type("org", limitAllowedChildren={"types": [{"name": "team", "path": parent}]},
                                      defaultChildWorkspaceType={"name": "team", "path": parent}))
    apply(kcp, parent, workspace_type("team", limitAllowedParents={"types": [{"name": "org", "path": parent}]}))
    refused = kubectl(kcp, parent, "create", "-f", "-", input_text=workspace("t0", "team"), check=False)
    assert f"workspace type {parent}:team is not allowed in a workspace of type root:root" in refused.stderr
    kubectl(kcp, parent, "create", "-f", "-", input_text=workspace("acme", "org"))
    kubectl(kcp, parent, "wait", "workspace/acme", "--for=jsonpath={.status.phase}=Ready", "--timeout=30s")
    org = f"{parent}:acme"
    kubectl(kcp, org, "create", "-f", "-", input_text=workspace("devs"))  # the org's default child type
    assert get(kcp, org, "workspace", "devs")["spec"]["type"] == {"name": "team", "path": parent}
    refused = kubectl(kcp, org, "create", "-f", "-", input_text=workspace("misc", "universal", "root"), check=False)
    assert f"workspace type {parent}:org does not allow a child workspace of type root:universal" in refused.stderr
    unknown = kubectl(kcp, parent, "create", "-f", "-", input_text=workspace("x", "nonesuch"), check=False)
    assert 'workspace type "nonesuch" cannot be resolved' in unknown.stderr
    changed = kubectl(kcp, parent, "patch", "workspace", "u1", "--type=merge", "-p",
                      json.dumps({"spec": {"type": {"name": "restricted", "path": parent}}}), check=False)
    assert changed.returncode == 1 and "spec.type is immutable" in changed.stderr


def test_kubectl_ws_create_takes_a_type(kcp: KcpServer, parent: str, tmp_path: Path) -> None:
    apply(kcp, parent, workspace_type("plain", additionalWorkspaceLabels={"kind": "plain"}))
    config = yaml.safe_load(kcp.kubeconfig.read_text())
    for cluster in config["clusters"]:
        cluster["cluster"]["server"] = f"{kcp.url}/clusters/{parent}"
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "KUBECONFIG": str(kubeconfig)}
    done = subprocess.run([kubectl_binary(), "ws", "create", "p1", "--type", f"{parent}:plain"], capture_output=True,
                          text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    assert f'Workspace "p1" (type {parent}:plain) is ready to use.' in done.stdout
    assert get(kcp, parent, "workspace", "p1")["metadata"]["labels"]["kind"] == "plain"
    missing = subprocess.run([kubectl_binary(), "ws", "create", "p2", "--type", "nonesuch"], capture_output=True,
                             text=True, timeout=60, env=env)
    assert missing.returncode == 1 and 'workspace type "nonesuch" cannot be resolved' in missing.stderr
