"""kcp's initializing virtual workspace with the real kubectl against a real kcp: an initializer's controller
identity (no admin: only `initialize` on its WorkspaceType) lists and watches the LogicalClusters waiting for it
through `/services/initializingworkspaces/<path>:<name>/clusters/*`, sets a new workspace up through
`clusters/<logical cluster>` (a namespace, a ConfigMap), lifts its initializer there, and the workspace becomes
Ready: the watch then says DELETED and the cluster's URL under the view answers 403. A user without
`initialize` gets 403; an unknown initializer and a malformed URL are 404."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from syncer_fixtures import eventually

from kcp_process import (
    KcpServer,
    OutputLines,
    free_port,
    kubectl_binary,
    kubectl_following,
    run_kubectl,
    stop_process,
    token_auth,
)

CONTROLLER, NOSY = "initializer-token", "nosy-token"
USERS = {CONTROLLER: ("team-initializer", "initializers"), NOSY: ("nosy", "others")}
CLUSTER_ANNOTATION = "kcp.io/cluster"
LOGICAL_CLUSTERS = "/apis/core.kcp.io/v1alpha1/logicalclusters"


@pytest.fixture(scope="module")
def kcp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KcpServer]:
    root = tmp_path_factory.mktemp("kcp-initializing-vw")
    server = KcpServer(root, free_port(), token_auth(root, USERS))
    server.start()
    yield server
    assert server.stop() == 0, server.log_tail()


@pytest.fixture
def parent(kcp: KcpServer) -> str:
    name = f"root-{uuid.uuid4().hex[:8]}"
    kubectl(kcp, name, "get", "namespaces")
    return name


def kubectl(kcp: KcpServer, cluster: str, *args: str, check: bool = True,
            input_text: str | None = None) -> subprocess.CompletedProcess[str]:
    return run_kubectl(kcp, "--server", f"{kcp.url}/clusters/{cluster}", *args, check=check, input_text=input_text)


def view(kcp: KcpServer, initializer: str, cluster: str, *args: str, token: str = CONTROLLER,
         check: bool = True) -> subprocess.CompletedProcess[str]:
    """kubectl with the initializer's virtual workspace of `cluster` (or `*`) as its server."""
    return run_kubectl(kcp, "--server", f"{kcp.url}/services/initializingworkspaces/{initializer}/clusters/{cluster}",
                       "--token", token, *args, check=check)


def direct(kcp: KcpServer, path: str, token: str) -> tuple[int, Any]:
    """A GET with the test's own client: the status code and the decoded answer."""
    return kcp.get_json(path, token)


def watch(kcp: KcpServer, initializer: str) -> tuple[subprocess.Popen[str], OutputLines]:
    """`kubectl get logicalclusters -w` through the view: one line per event, `<TYPE> <logical cluster>`."""
    return kubectl_following(
        kubectl_binary(), kcp.kubeconfig, "--server",
        f"{kcp.url}/services/initializingworkspaces/{initializer}/clusters/*", "--token", CONTROLLER,
        "get", "logicalclusters", "-w", "--output-watch-events",
        "-o", "jsonpath={.type} {.object.metadata.annotations.kcp\\.io/cluster}{\"\\n\"}")


def waiting(kcp: KcpServer, initializer: str) -> list[str]:
    """The logical clusters the view lists, as their kcp.io/cluster annotation names them."""
    items = json.loads(view(kcp, initializer, "*", "get", "logicalclusters", "-o", "json").stdout)["items"]
    return sorted(i["metadata"]["annotations"][CLUSTER_ANNOTATION] for i in items)


def apply(kcp: KcpServer, cluster: str, obj: dict[str, Any]) -> None:
    kubectl(kcp, cluster, "apply", "-f", "-", input_text=json.dumps(obj))


def workspace_type(kcp: KcpServer, cluster: str, name: str, **spec: Any) -> None:
    apply(kcp, cluster, {"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "WorkspaceType",
                         "metadata": {"name": name}, "spec": spec})


def workspace(kcp: KcpServer, cluster: str, name: str, type_name: str) -> None:
    apply(kcp, cluster, {"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": name},
                         "spec": {"type": {"name": type_name}}})


def phase(kcp: KcpServer, cluster: str, name: str) -> str:
    return kubectl(kcp, cluster, "get", "workspace", name, "-o", "jsonpath={.status.phase}").stdout


def test_an_initializer_s_controller_sets_up_and_lifts_a_workspace_through_the_view(kcp: KcpServer,
                                                                                  parent: str) -> None:
    workspace_type(kcp, parent, "team", initializer=True)
    workspace_type(kcp, parent, "other", initializer=True)
    apply(kcp, parent, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                        "metadata": {"name": "initialize-team"},
                        "rules": [{"apiGroups": ["tenancy.kcp.io"], "resources": ["workspacetypes"],
                                   "resourceNames": ["team"], "verbs": ["initialize"]}]})
    kubectl(kcp, parent, "create", "clusterrolebinding", "team-initializer", "--clusterrole=initialize-team",
            "--user=team-initializer")
    initializer = f"{parent}:team"
    # the controller starts before any workspace waits: nothing listed, and its watch is open
    eventually(lambda: view(kcp, initializer, "*", "get", "logicalclusters", check=False).returncode == 0,
               "the controller may use its view once its grant is followed")
    assert waiting(kcp, initializer) == []
    watcher, events = watch(kcp, initializer)
    try:
        workspace(kcp, parent, "alpha", "team")
        workspace(kcp, parent, "beta", "other")  # waits for another initializer: never in this view
        workspace(kcp, parent, "plain", "universal")  # no initializer: Ready at once
        child = f"{parent}:alpha"
        events.wait_for(f"ADDED {child}")
        eventually(lambda: phase(kcp, parent, "beta") == "Initializing" and phase(kcp, parent, "plain") == "Ready",
                   "beta waits for its own initializer, plain is Ready")
        assert waiting(kcp, initializer) == [child]
        lc = json.loads(view(kcp, initializer, "*", "get", "logicalclusters", "-o", "json").stdout)["items"][0]
        assert lc["status"]["phase"] == "Initializing" and lc["status"]["initializers"] == [initializer]

        # inside the waiting workspace: the controller sets it up with the owner's rights, which it has nowhere else
        denied = kubectl(kcp, child, "get", "namespaces", "--token", CONTROLLER, check=False)
        assert denied.returncode == 1 and "Forbidden" in denied.stderr, denied.stderr
        view(kcp, initializer, child, "create", "namespace", "team-tools")
        view(kcp, initializer, child, "create", "configmap", "settings", "-n", "team-tools", "--from-literal=k=v")
        # RBAC too: granting `admin` passes the escalation check only with the owner's rights, not the controller's
        view(kcp, initializer, child, "create", "rolebinding", "tools-admin", "--clusterrole=admin",
             "--user=team-lead", "-n", "team-tools")
        assert "namespace/team-tools" in view(kcp, initializer, child, "get", "namespaces", "-o", "name").stdout
        assert phase(kcp, parent, "alpha") == "Initializing"

        # a user without `initialize`: 403 across clusters and inside the workspace
        for cluster, path in (("*", LOGICAL_CLUSTERS), (child, "/api/v1/namespaces")):
            code, answer = direct(kcp, f"/services/initializingworkspaces/{initializer}/clusters/{cluster}{path}",
                                  NOSY)
            assert (code, answer["kind"], answer["reason"]) == (403, "Status", "Forbidden"), answer
            assert ('workspacetypes.tenancy.kcp.io "team" is forbidden: User "nosy" cannot initialize resource '
                    '"workspacetypes"') in answer["message"], answer
        refused = view(kcp, initializer, child, "get", "configmaps", "-A", token=NOSY, check=False)
        assert refused.returncode == 1 and "Forbidden" in refused.stderr, refused.stderr
        # the controller's grant names its own type only: another initializer's view is 403 to it
        code, answer = direct(kcp, f"/services/initializingworkspaces/{parent}:other/clusters/*{LOGICAL_CLUSTERS}",
                              CONTROLLER)
        assert (code, answer["reason"]) == (403, "Forbidden"), answer

        # of the LogicalCluster the view only lifts its own initializer (kcp's rule), whatever the owner may do
        lift = ("patch", "logicalcluster", "cluster", "--subresource=status", "--type=merge", "-p")
        added = view(kcp, initializer, child, *lift, json.dumps({"status": {"initializers": [initializer, "x:y"]}}),
                     check=False)
        assert added.returncode == 1 and f'only removing the "{initializer}" initializer' in added.stderr, added.stderr
        deleted = view(kcp, initializer, child, "delete", "logicalcluster", "cluster", check=False)
        assert deleted.returncode == 1 and "MethodNotAllowed" in deleted.stderr, deleted.stderr
        assert phase(kcp, parent, "alpha") == "Initializing"

        # the controller lifts its initializer through the view: the workspace becomes Ready, the watch says DELETED
        view(kcp, initializer, child, *lift, json.dumps({"status": {"initializers": []}}))
        events.wait_for(f"DELETED {child}")
        kubectl(kcp, parent, "wait", "workspace/alpha", "--for=jsonpath={.status.phase}=Ready", "--timeout=30s")
        assert not any(f"{parent}:beta" in line or f"{parent}:plain" in line for line in events.lines), events.lines
    finally:
        stop_process(watcher)
    assert waiting(kcp, initializer) == []
    code, answer = direct(kcp, f"/services/initializingworkspaces/{initializer}/clusters/{child}/api/v1/namespaces",
                          CONTROLLER)
    assert (code, answer["kind"], answer["reason"]) == (403, "Status", "Forbidden"), answer
    assert f'initializer "{initializer}" cannot access this workspace' in answer["message"], answer
    gone = view(kcp, initializer, child, "get", "configmaps", "-n", "team-tools", check=False)
    assert gone.returncode == 1 and "Forbidden" in gone.stderr, gone.stderr
    # what it set up is the workspace's own
    assert kubectl(kcp, child, "get", "configmap", "settings", "-n", "team-tools",
                   "-o", "jsonpath={.data.k}").stdout == "v"
    assert kubectl(kcp, child, "get", "rolebinding", "tools-admin", "-n", "team-tools",
                   "-o", "jsonpath={.subjects[0].name}").stdout == "team-lead"


def test_an_unknown_initializer_or_a_malformed_view_url_is_not_found(kcp: KcpServer, parent: str) -> None:
    for path in (f"/services/initializingworkspaces/{parent}:nope/clusters/*{LOGICAL_CLUSTERS}",
                 f"/services/initializingworkspaces/{parent}:nope/clusters/{parent}/api/v1/namespaces",
                 f"/services/initializingworkspaces/system:apibindings/clusters/*{LOGICAL_CLUSTERS}",
                 f"/services/initializingworkspaces/team/clusters/*{LOGICAL_CLUSTERS}",
                 f"/services/initializingworkspaces/{parent}:team{LOGICAL_CLUSTERS}"):
        code, answer = direct(kcp, path, kcp.token)
        assert (code, answer["kind"], answer["reason"]) == (404, "Status", "NotFound"), (path, answer)
