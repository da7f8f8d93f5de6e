"""An APIExport's virtual workspace with the real kubectl against a real kcp: a provider exports widgets, two
consumers bind it, and the provider's controller identity (no admin: only `apiexports/content` of the export in
the provider's workspace) lists and watches widgets across both consumers through
`/services/apiexport/<provider>/widgets/clusters/*` and writes status to one consumer's widget through
`clusters/<consumer>`; a third workspace (its own widgets CRD, its ConfigMaps) is out of reach, and identities
without the content permission, a consumer's own admin among them, get 403."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from test_api_bindings import bind, create_workspace, kubectl, provide, widget

from kcp_process import (
    KcpServer,
    free_port,
    kubectl_1_35,
    kubectl_following,
    run_kubectl,
    stop_process,
    token_auth,
)

CONTROLLER, NOSY, CONSUMER_ADMIN = "widget-controller-token", "nosy-token", "first-admin-token"
USERS = {CONTROLLER: ("widget-controller", "widget-ops"), NOSY: ("nosy", "others"),
         CONSUMER_ADMIN: ("first-admin", "first-admins")}
CLUSTER_ANNOTATION = "kcp.io/cluster"


@pytest.fixture(scope="module")
def kcp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KcpServer]:
    root = tmp_path_factory.mktemp("kcp-apiexport-vw")
    server = KcpServer(root, free_port(), token_auth(root, USERS))
    server.start()
    yield server
    assert server.stop() == 0, server.log_tail()


def apply(kcp: KcpServer, cluster: str, obj: dict[str, Any]) -> None:
    kubectl(kcp, cluster, "apply", "-f", "-", input_text=json.dumps(obj))


def grant_content(kcp: KcpServer, provider: str, user: str) -> None:
    """kcp's rule for an export's controller: verbs on `apiexports/content` named as the export, in the provider's
    workspace (and `access` to enter that workspace at all)."""
    apply(kcp, provider, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                          "metadata": {"name": "widgets-content"},
                          "rules": [{"apiGroups": ["apis.kcp.io"], "resources": ["apiexports/content"],
                                     "resourceNames": ["widgets"], "verbs": ["*"]},
                                    {"nonResourceURLs": ["/"], "verbs": ["access"]}]})
    apply(kcp, provider, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                          "metadata": {"name": "widgets-content"},
                          "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                      "name": "widgets-content"},
                          "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]})


def own_widgets_crd(kcp: KcpServer, cluster: str) -> None:
    """A CRD of the same group/resource as the export's: another storage, which the view must never reach."""
    apply(kcp, cluster, {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.io"},
        "spec": {"group": "example.io", "scope": "Namespaced",
                 "names": {"kind": "Widget", "listKind": "WidgetList", "plural": "widgets", "singular": "widget"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                     "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}})
    kubectl(kcp, cluster, "wait", "crd/widgets.example.io", "--for=condition=Established", "--timeout=20s")


def view(kcp: KcpServer, provider: str, consumer: str, *args: str, token: str = CONTROLLER, check: bool = True,
         input_text: str | None = None) -> subprocess.CompletedProcess[str]:
    """kubectl with the export's virtual workspace of `consumer` (or `*`) as its server."""
    return run_kubectl(kcp, "--server", f"{kcp.url}/services/apiexport/{provider}/widgets/clusters/{consumer}",
                       "--token", token, *args, check=check, input_text=input_text)


def direct(kcp: KcpServer, provider: str, consumer: str, path: str, token: str = CONTROLLER) -> tuple[int, Any]:
    """A GET below the view's URL with the test's own client: the status code and the decoded answer."""
    return kcp.get_json(f"/services/apiexport/{provider}/widgets/clusters/{consumer}{path}", token)


def listed(kcp: KcpServer, provider: str) -> list[tuple[str, str]]:
    items = json.loads(view(kcp, provider, "*", "get", "widgets", "-A", "-o", "json").stdout)["items"]
    return sorted((i["metadata"]["annotations"][CLUSTER_ANNOTATION], i["metadata"]["name"]) for i in items)


@pytest.fixture
def parent(kcp: KcpServer) -> str:
    name = f"root-{uuid.uuid4().hex[:8]}"
    kubectl(kcp, name, "get", "namespaces")
    return name


def test_the_provider_reads_and_writes_its_consumers_widgets_through_the_export_view(kcp: KcpServer,
                                                                                   parent: str) -> None:
    provider = create_workspace(kcp, parent, "provider")
    provide(kcp, provider)
    grant_content(kcp, provider, "widget-controller")
    # the controller starts before anyone binds: the export's types are there, with no widgets
    assert json.loads(view(kcp, provider, "*", "get", "widgets", "-A", "-o", "json").stdout)["items"] == []
    first, second, third = (create_workspace(kcp, parent, n) for n in ("first", "second", "third"))
    bind(kcp, first, provider)
    bind(kcp, second, provider)
    own_widgets_crd(kcp, third)
    kubectl(kcp, first, "apply", "-f", "-", input_text=widget("a", color="red"))
    kubectl(kcp, second, "apply", "-f", "-", input_text=widget("b", size=7))
    kubectl(kcp, third, "apply", "-f", "-", input_text=widget("theirs"))
    kubectl(kcp, third, "create", "configmap", "private", "--from-literal=k=v")

    # across consumers: the export's widgets of both consumers, each with its logical cluster; not the third's
    assert listed(kcp, provider) == [(first, "a"), (second, "b")]
    table = view(kcp, provider, "*", "get", "widgets", "-A").stdout.splitlines()
    assert table[0].split() == ["NAMESPACE", "NAME", "SIZE"]  # the schema's printer columns
    assert sorted(line.split()[:3] for line in table[1:]) == [["default", "a", "3"], ["default", "b", "7"]]
    # discovery lists the export's types only: the consumers' other types are not there
    resources = view(kcp, provider, "*", "api-resources").stdout
    assert "widgets" in resources and "configmaps" not in resources, resources
    missing = view(kcp, provider, "*", "get", "configmaps", "-A", check=False)
    assert 'the server doesn\'t have a resource type "configmaps"' in missing.stderr
    # the consumers' other types are not under the view at all
    code, answer = direct(kcp, provider, "*", "/api/v1/configmaps")
    assert (code, answer["reason"]) == (404, "NotFound"), answer

    # watch across consumers, with kubectl 1.35 (watch-list): a new widget in a consumer arrives, the third's never
    watcher, lines = kubectl_following(
        kubectl_1_35(), kcp.kubeconfig, "--server", f"{kcp.url}/services/apiexport/{provider}/widgets/clusters/*",
        "--token", CONTROLLER, "get", "widgets", "-A", "-w", "-o", "name")
    try:
        lines.wait_for("widget.example.io/b")
        kubectl(kcp, third, "apply", "-f", "-", input_text=widget("theirs-too"))
        kubectl(kcp, second, "apply", "-f", "-", input_text=widget("c"))
        lines.wait_for("widget.example.io/c")
        kubectl(kcp, first, "apply", "-f", "-", input_text=widget("d"))
        lines.wait_for("widget.example.io/d")
        assert not any("theirs" in line for line in lines.lines), lines.lines
    finally:
        stop_process(watcher)

    # one consumer: get, status written through the view (the consumer sees it), create; an unbound one is 404
    assert json.loads(view(kcp, provider, first, "get", "widget", "a", "-n", "default", "-o", "json").stdout
                      )["spec"] == {"color": "red", "size": 3}
    view(kcp, provider, first, "patch", "widget", "a", "-n", "default", "--subresource=status", "--type=merge",
         "-p", json.dumps({"status": {"phase": "Ready"}}))
    assert kubectl(kcp, first, "get", "widget", "a", "-n", "default", "-o", "jsonpath={.status.phase}").stdout == \
        "Ready"
    view(kcp, provider, second, "create", "-f", "-", input_text=widget("from-provider"))
    assert kubectl(kcp, second, "get", "widget", "from-provider", "-n", "default", "-o", "name").stdout.strip() == \
        "widget.example.io/from-provider"
    unbound = view(kcp, provider, third, "get", "widget", "theirs", "-n", "default", check=False)
    assert unbound.returncode == 1 and "NotFound" in unbound.stderr, unbound.stderr
    assert "theirs" not in view(kcp, provider, "*", "get", "widgets", "-A", "-o", "name").stdout

    # without the content permission: 403, for a stranger and for the first consumer's own admin
    kubectl(kcp, first, "create", "clusterrolebinding", "first-admin", "--clusterrole=cluster-admin",
            "--user=first-admin")
    assert kubectl(kcp, first, "get", "widgets", "-A", "-o", "name", token=CONSUMER_ADMIN).stdout.strip() == \
        "\n".join(["widget.example.io/a", "widget.example.io/d"])  # its own workspace: allowed there
    for token, user in ((NOSY, "nosy"), (CONSUMER_ADMIN, "first-admin")):
        for consumer in ("*", first):
            code, denied = direct(kcp, provider, consumer, "/apis/example.io/v1/widgets", token=token)
            assert (code, denied["reason"]) == (403, "Forbidden"), denied
            assert (f'apiexports.apis.kcp.io "widgets" is forbidden: User "{user}" cannot list resource '
                    f'"apiexports/content" in API group "apis.kcp.io"') in denied["message"], denied
        refused = view(kcp, provider, first, "get", "widgets", "-n", "default", token=token, check=False)
        assert refused.returncode == 1 and "Forbidden" in refused.stderr, refused.stderr


def test_the_provider_reaches_a_claimed_resource_only_where_the_consumer_accepted_the_claim(kcp: KcpServer,
                                                                                             parent: str) -> None:
    """Permission claims: the export claims ConfigMaps; `first` accepts, `second` rejects. Through the view the
    controller lists, reads and writes `first`'s ConfigMaps only; when `first` rejects the claim they leave."""
    provider = create_workspace(kcp, parent, "provider")
    provide(kcp, provider)
    apply(kcp, provider, {"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport", "metadata": {"name": "widgets"},
                          "spec": {"latestResourceSchemas": ["v1.widgets.example.io"],
                                   "permissionClaims": [{"group": "", "resource": "configmaps", "all": True}]}})
    grant_content(kcp, provider, "widget-controller")
    first, second = (create_workspace(kcp, parent, n) for n in ("first", "second"))
    for consumer, state in ((first, "Accepted"), (second, "Rejected")):
        apply(kcp, consumer, {"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIBinding",
                              "metadata": {"name": "widgets"},
                              "spec": {"reference": {"export": {"path": provider, "name": "widgets"}},
                                       "permissionClaims": [{"group": "", "resource": "configmaps", "all": True,
                                                             "state": state}]}})
        kubectl(kcp, consumer, "wait", "apibinding/widgets", "--timeout=20s",
                "--for=jsonpath={.status.conditions[?(@.type=='PermissionClaimsApplied')].status}=True")
        kubectl(kcp, consumer, "create", "configmap", "settings", "--from-literal=owner=" + consumer)
    applied = kubectl(kcp, first, "get", "apibinding", "widgets", "-o",
                      "jsonpath={.status.appliedPermissionClaims[*].resource}").stdout
    assert applied == "configmaps"

    def claimed() -> list[str]:
        items = json.loads(view(kcp, provider, "*", "get", "configmaps", "-A", "-o", "json").stdout)["items"]
        return sorted(i["metadata"]["annotations"][CLUSTER_ANNOTATION] for i in items
                      if i["metadata"]["name"] == "settings")

    assert claimed() == [first]
    assert view(kcp, provider, first, "get", "configmap", "settings", "-o", "jsonpath={.data.owner}").stdout == first
    refused = view(kcp, provider, second, "get", "configmap", "settings", check=False)
    assert refused.returncode == 1 and "NotFound" in refused.stderr, refused.stderr
    view(kcp, provider, first, "create", "configmap", "from-provider", "--from-literal=by=controller")
    assert kubectl(kcp, first, "get", "configmap", "from-provider", "-o", "jsonpath={.data.by}").stdout == "controller"
    assert view(kcp, provider, first, "get", "secrets", check=False).returncode == 1  # not claimed: not in reach
    code, resources = direct(kcp, provider, first, "/api/v1")
    assert code == 200 and "configmaps" in [r["name"] for r in resources["resources"]]

    apply(kcp, first, {"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIBinding", "metadata": {"name": "widgets"},
                       "spec": {"reference": {"export": {"path": provider, "name": "widgets"}},
                                "permissionClaims": [{"group": "", "resource": "configmaps", "all": True,
                                                      "state": "Rejected"}]}})
    kubectl(kcp, first, "wait", "apibinding/widgets", "--timeout=20s",
            "--for=jsonpath={.status.conditions[?(@.type=='PermissionClaimsApplied')].message}=accepted: none")
    refused = view(kcp, provider, first, "get", "configmap", "settings", check=False)
    assert refused.returncode == 1 and "NotFound" in refused.stderr, refused.stderr
