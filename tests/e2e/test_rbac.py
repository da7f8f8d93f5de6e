"""RBAC per logical cluster with the real kubectl: identities from a --token-auth-file and service-account
tokens from `kubectl create token`, rights from Roles and bindings, kube's 403 wording, default roles,
aggregation, escalation, reviews, impersonation, strangers and the wildcard rule."""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator

import pytest
import yaml

from kcp_process import KcpServer, free_port, run_kubectl

USERS = {  # token -> (user, groups)
    "alice-token": ("alice", ""),
    "bob-token": ("bob", "devs"),
    "carol-token": ("carol", ""),
    "dora-token": ("dora", ""),
    "erin-token": ("erin", ""),
    "frank-token": ("frank", ""),
    "gina-token": ("gina", "ops,auditors"),
    "hank-token": ("hank", ""),
    "ivy-token": ("ivy", ""),
    "jack-token": ("jack", ""),
}
SYNC_TARGETS_CRD = {  # kcp's own CRD: a tenant may never write it, whatever it impersonates
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "synctargets.workload.kcp.io"},
    "spec": {"group": "workload.kcp.io", "scope": "Cluster", "names": {"plural": "synctargets", "kind": "SyncTarget"},
             "versions": [{"name": "v1alpha1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                 "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}


@pytest.fixture(scope="module")
def kcp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KcpServer]:
    root = tmp_path_factory.mktemp("kcp-rbac")
    tokens = root / "tokens.csv"
    tokens.write_text("".join(f'{token},{user},uid-{user}' + (f',"{groups}"' if groups else "") + "\n"
                              for token, (user, groups) in USERS.items()))
    server = KcpServer(root, free_port(), ["--token-auth-file", str(tokens), "--compaction-interval", "0"])
    server.start()
    yield server
    assert server.stop() == 0, server.log_tail()


@pytest.fixture
def cluster() -> str:
    return f"rbac-{uuid.uuid4().hex[:8]}"


def kubectl(kcp: KcpServer, cluster: str, *args: str, token: str | None = None, check: bool = True,
            input_text: str | None = None) -> subprocess.CompletedProcess[str]:
    flags = ["--server", f"{kcp.url}/clusters/{cluster}"]
    if token is not None:
        flags += ["--token", token]
    return run_kubectl(kcp, *flags, *args, check=check, input_text=input_text)


def eventually(check: Callable[[], bool], timeout: float = 15.0) -> None:
    """RBAC objects reach the authorizer through a watch: wait for the condition, with a deadline."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.1)


def can(kcp: KcpServer, cluster: str, token: str, *args: str) -> bool:
    return kubectl(kcp, cluster, *args, token=token, check=False).returncode == 0


def test_forbidden_then_allowed_after_a_rolebinding(kcp: KcpServer, cluster: str) -> None:
    kubectl(kcp, cluster, "create", "configmap", "c1", "--from-literal=a=b")
    denied = kubectl(kcp, cluster, "get", "configmaps", "-n", "default", token="alice-token", check=False)
    assert denied.returncode == 1
    assert ('configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the '
            'namespace "default"') in denied.stderr
    kubectl(kcp, cluster, "create", "role", "cm-reader", "--verb=get,list", "--resource=configmaps")
    kubectl(kcp, cluster, "create", "rolebinding", "alice-reads", "--role=cm-reader", "--user=alice")
    eventually(lambda: can(kcp, cluster, "alice-token", "get", "configmaps", "-n", "default"))
    assert "c1" in kubectl(kcp, cluster, "get", "configmap", "c1", "-o", "name", token="alice-token").stdout
    # the Role grants reads in its namespace only, and no writes
    other = kubectl(kcp, cluster, "get", "configmaps", "-n", "kube-system", token="alice-token", check=False)
    assert 'cannot list resource "configmaps" in API group "" in the namespace "kube-system"' in other.stderr
    write = kubectl(kcp, cluster, "create", "configmap", "c2", token="alice-token", check=False)
    assert 'User "alice" cannot create resource "configmaps"' in write.stderr
    # and only in its own logical cluster
    elsewhere = kubectl(kcp, f"{cluster}-other", "get", "configmaps", token="alice-token", check=False)
    assert "forbidden" in elsewhere.stderr


def test_group_subject_and_clusterrole_in_a_rolebinding(kcp: KcpServer, cluster: str) -> None:
    kubectl(kcp, cluster, "create", "clusterrole", "secret-reader", "--verb=get,list", "--resource=secrets")
    kubectl(kcp, cluster, "create", "rolebinding", "devs-read", "--clusterrole=secret-reader", "--group=devs")
    eventually(lambda: can(kcp, cluster, "bob-token", "get", "secrets"))
    assert not can(kcp, cluster, "bob-token", "get", "secrets", "-n", "kube-system")
    assert not can(kcp, cluster, "alice-token", "get", "secrets")


def test_resource_names_limit_a_rule(kcp: KcpServer, cluster: str) -> None:
    for name in ("allowed", "other"):
        kubectl(kcp, cluster, "create", "configmap", name)
    kubectl(kcp, cluster, "create", "role", "one-cm", "--verb=get", "--resource=configmaps",
            "--resource-name=allowed")
    kubectl(kcp, cluster, "create", "rolebinding", "carol-one", "--role=one-cm", "--user=carol")
    eventually(lambda: can(kcp, cluster, "carol-token", "get", "configmap", "allowed"))
    denied = kubectl(kcp, cluster, "get", "configmap", "other", token="carol-token", check=False)
    assert ('configmaps "other" is forbidden: User "carol" cannot get resource "configmaps" in API group "" in '
            'the namespace "default"') in denied.stderr
    assert not can(kcp, cluster, "carol-token", "get", "configmaps")  # a list names no object


def test_default_roles_in_every_cluster_and_aggregation_into_view(kcp: KcpServer, cluster: str) -> None:
    shown = json.loads(kubectl(kcp, cluster, "get", "clusterrole", "cluster-admin", "-o", "json").stdout)
    assert shown["rules"][0] == {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}
    names = kubectl(kcp, cluster, "get", "clusterroles", "-o", "name").stdout.split()
    assert {"clusterrole.rbac.authorization.k8s.io/" + n for n in ("admin", "edit", "view")} <= set(names)
    binding = json.loads(kubectl(kcp, cluster, "get", "clusterrolebinding", "cluster-admin", "-o", "json").stdout)
    assert binding["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                                    "name": "system:masters"}]
    kubectl(kcp, cluster, "create", "rolebinding", "dora-views", "--clusterrole=view", "--user=dora")
    eventually(lambda: can(kcp, cluster, "dora-token", "get", "configmaps"))
    assert not can(kcp, cluster, "dora-token", "get", "leases")
    kubectl(kcp, cluster, "apply", "-f", "-", input_text=json.dumps({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "leases-view", "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
        "rules": [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "list"]}]}))
    eventually(lambda: can(kcp, cluster, "dora-token", "get", "leases"))
    view = json.loads(kubectl(kcp, cluster, "get", "clusterrole", "view", "-o", "json").stdout)
    assert {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "list"]} in view["rules"]
    # edit aggregates view: the tenant's rule reaches it too, in this cluster only
    edit = json.loads(kubectl(kcp, cluster, "get", "clusterrole", "edit", "-o", "json").stdout)
    assert any(r.get("resources") == ["leases"] for r in edit["rules"])
    elsewhere = json.loads(kubectl(kcp, f"{cluster}-b", "get", "clusterrole", "view", "-o", "json").stdout)
    assert not any(r.get("resources") == ["leases"] for r in elsewhere["rules"])


def test_kubes_bootstrap_roles_in_admin_and_in_another_cluster_with_aggregated_rules(kcp: KcpServer,
                                                                                    cluster: str) -> None:
    """issue 28 item 4: kube's ~70 ClusterRoles, as `kubectl get clusterroles` shows them, in every logical cluster."""
    for where in ("admin", cluster):
        names = kubectl(kcp, where, "get", "clusterroles", "-o", "name").stdout.split()
        assert len(names) >= 60, names
        assert {f"clusterrole.rbac.authorization.k8s.io/{n}" for n in (
            "system:controller:deployment-controller", "system:kube-scheduler", "system:node",
            "system:heapster", "system:aggregate-to-edit")} <= set(names)
        table = kubectl(kcp, where, "get", "clusterroles", "--chunk-size=7").stdout.splitlines()
        assert table[0].split() == ["NAME", "CREATED", "AT"] and len(table) - 1 == len(names)
    admin = yaml.safe_load(kubectl(kcp, cluster, "get", "clusterrole", "admin", "-o", "yaml").stdout)
    assert admin["metadata"]["labels"] == {"kubernetes.io/bootstrapping": "rbac-defaults"}
    assert admin["metadata"]["annotations"]["rbac.authorization.kubernetes.io/autoupdate"] == "true"
    assert admin["aggregationRule"] == {"clusterRoleSelectors": [
        {"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-admin": "true"}}]}
    covers = [r for r in admin["rules"] if "apps" in r["apiGroups"] and "deployments" in r["resources"]]
    assert {"create", "delete", "patch", "update", "get", "list", "watch"} <= {v for r in covers for v in r["verbs"]}
    binding = json.loads(kubectl(kcp, cluster, "get", "clusterrolebinding", "system:controller:job-controller",
                                 "-o", "json").stdout)
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "job-controller", "namespace": "kube-system"}]


def test_editing_a_default_role_makes_the_clusters_own_copy(kcp: KcpServer, cluster: str) -> None:
    kubectl(kcp, cluster, "label", "clusterrole", "view", "team=tenant")
    mine = json.loads(kubectl(kcp, cluster, "get", "clusterrole", "view", "-o", "json").stdout)
    assert mine["metadata"]["labels"]["team"] == "tenant"
    theirs = json.loads(kubectl(kcp, f"{cluster}-b", "get", "clusterrole", "view", "-o", "json").stdout)
    assert "team" not in theirs["metadata"]["labels"]
    created = kubectl(kcp, cluster, "create", "clusterrole", "edit", "--verb=get", "--resource=configmaps",
                      check=False)
    assert 'clusterroles.rbac.authorization.k8s.io "edit" already exists' in created.stderr


def test_escalation_is_refused_unless_bind_or_escalate(kcp: KcpServer, cluster: str) -> None:
    kubectl(kcp, cluster, "create", "role", "rbac-manager", "--verb=create,get,list,update,patch",
            "--resource=roles,rolebindings,configmaps")
    kubectl(kcp, cluster, "create", "rolebinding", "erin-manages", "--role=rbac-manager", "--user=erin")
    eventually(lambda: can(kcp, cluster, "erin-token", "get", "roles"))
    kubectl(kcp, cluster, "create", "role", "cm-get", "--verb=get", "--resource=configmaps", token="erin-token")
    refused = kubectl(kcp, cluster, "create", "role", "secret-deleter", "--verb=delete", "--resource=secrets",
                      token="erin-token", check=False)
    assert ('roles.rbac.authorization.k8s.io "secret-deleter" is forbidden: user "erin" '
            '(groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n'
            '{APIGroups:[""], Resources:["secrets"], Verbs:["delete"]}') in refused.stderr
    bind = kubectl(kcp, cluster, "create", "rolebinding", "erin-edits", "--clusterrole=edit", "--user=erin",
                   token="erin-token", check=False)
    assert 'rolebindings.rbac.authorization.k8s.io "erin-edits" is forbidden: user "erin"' in bind.stderr
    assert "is attempting to grant RBAC permissions not currently held" in bind.stderr
    # binding a role whose rules erin holds is fine
    kubectl(kcp, cluster, "create", "rolebinding", "carol-cm-get", "--role=cm-get", "--user=carol",
            token="erin-token")
    # `bind` on that ClusterRole, or `escalate` on roles, lifts the check
    kubectl(kcp, cluster, "create", "role", "binder", "--verb=bind", "--resource=clusterroles",
            "--resource-name=edit")
    kubectl(kcp, cluster, "create", "role", "escalator", "--verb=escalate", "--resource=roles")
    kubectl(kcp, cluster, "create", "rolebinding", "erin-binds", "--role=binder", "--user=erin")
    kubectl(kcp, cluster, "create", "rolebinding", "erin-escalates", "--role=escalator", "--user=erin")
    eventually(lambda: can(kcp, cluster, "erin-token", "create", "rolebinding", "erin-edits", "--clusterrole=edit",
                           "--user=erin"))
    eventually(lambda: can(kcp, cluster, "erin-token", "create", "role", "secret-deleter", "--verb=delete",
                           "--resource=secrets"))


def test_binding_a_role_that_does_not_exist_yet_is_not_found(kcp: KcpServer, cluster: str) -> None:
    """Else a later Role of that name, made for someone else, would be granted to hank's binding too."""
    kubectl(kcp, cluster, "create", "secret", "generic", "s", "--from-literal=k=v")
    kubectl(kcp, cluster, "create", "clusterrole", "binding-writer", "--verb=create,get,list,update,patch",
            "--resource=rolebindings,clusterrolebindings")
    kubectl(kcp, cluster, "create", "clusterrolebinding", "hank-writes-bindings", "--clusterrole=binding-writer",
            "--user=hank")
    eventually(lambda: can(kcp, cluster, "hank-token", "get", "rolebindings"))
    role = kubectl(kcp, cluster, "create", "rolebinding", "hank-later", "--role=does-not-exist", "--user=hank",
                   token="hank-token", check=False)
    assert ('error: failed to create rolebinding: roles.rbac.authorization.k8s.io "does-not-exist" not found'
            in role.stderr)
    cluster_role = kubectl(kcp, cluster, "create", "-f", "-", token="hank-token", check=False, input_text=json.dumps({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "hank-later"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "does-not-exist"},
        "subjects": [{"kind": "User", "name": "hank"}]}))
    assert ('Error from server (NotFound): error when creating "STDIN": clusterroles.rbac.authorization.k8s.io '
            '"does-not-exist" not found') in cluster_role.stderr
    # the admin later makes that Role for someone else: hank has no binding to it
    kubectl(kcp, cluster, "create", "role", "does-not-exist", "--verb=get", "--resource=secrets")
    kubectl(kcp, cluster, "create", "rolebinding", "ivy-reads", "--role=does-not-exist", "--user=ivy")
    eventually(lambda: can(kcp, cluster, "ivy-token", "get", "secret", "s"))
    assert not can(kcp, cluster, "hank-token", "get", "secret", "s")
    assert "NotFound" in kubectl(kcp, cluster, "get", "rolebinding", "hank-later", check=False).stderr
    # now it exists, hank still needs its rules (or bind) to bind it
    refused = kubectl(kcp, cluster, "create", "rolebinding", "hank-later", "--role=does-not-exist", "--user=hank",
                      token="hank-token", check=False)
    assert 'rolebindings.rbac.authorization.k8s.io "hank-later" is forbidden: user "hank"' in refused.stderr
    # nor may hank join an existing binding by patch or server-side apply
    patched = kubectl(kcp, cluster, "patch", "rolebinding", "ivy-reads", "--type=json", "-p",
                      '[{"op": "add", "path": "/subjects/-", "value": {"kind": "User", "name": "hank"}}]',
                      token="hank-token", check=False)
    assert 'rolebindings.rbac.authorization.k8s.io "ivy-reads" is forbidden: user "hank"' in patched.stderr
    applied = kubectl(kcp, cluster, "apply", "--server-side", "--force-conflicts", "-f", "-", token="hank-token",
                      check=False, input_text=json.dumps({
                          "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                          "metadata": {"name": "ivy-reads", "namespace": "default"},
                          "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                      "name": "does-not-exist"},
                          "subjects": [{"kind": "User", "name": "hank"}]}))
    assert 'rolebindings.rbac.authorization.k8s.io "ivy-reads" is forbidden: user "hank"' in applied.stderr
    assert not can(kcp, cluster, "hank-token", "get", "secret", "s")
    # `bind` on a name lifts the check, even before the role exists, as in kube
    kubectl(kcp, cluster, "create", "clusterrole", "bind-future", "--verb=bind", "--resource=roles",
            "--resource-name=future")
    kubectl(kcp, cluster, "create", "clusterrolebinding", "hank-binds-future", "--clusterrole=bind-future",
            "--user=hank")
    eventually(lambda: can(kcp, cluster, "hank-token", "create", "rolebinding", "hank-future", "--role=future",
                           "--user=hank"))


def test_can_i_and_whoami(kcp: KcpServer, cluster: str) -> None:
    assert kubectl(kcp, cluster, "auth", "can-i", "delete", "secrets").stdout.strip() == "yes"
    denied = kubectl(kcp, cluster, "auth", "can-i", "get", "configmaps", token="gina-token", check=False)
    assert (denied.returncode, denied.stdout.strip()) == (1, "no")
    kubectl(kcp, cluster, "create", "rolebinding", "ops-view", "--clusterrole=view", "--group=ops", "-n", "default")
    eventually(lambda: kubectl(kcp, cluster, "auth", "can-i", "get", "configmaps", token="gina-token",
                               check=False).stdout.strip() == "yes")
    assert kubectl(kcp, cluster, "auth", "can-i", "get", "configmaps", "-n", "kube-system", token="gina-token",
                   check=False).stdout.strip() == "no"
    assert kubectl(kcp, cluster, "auth", "can-i", "create", "configmaps", token="gina-token",
                   check=False).stdout.strip() == "no"
    listed = kubectl(kcp, cluster, "auth", "can-i", "--list", "-n", "default", token="gina-token").stdout
    assert any(line.split()[0] == "configmaps" and "[get list watch]" in line for line in listed.splitlines())
    assert "selfsubjectaccessreviews.authorization.k8s.io" in listed
    assert "secrets" not in listed
    whoami = kubectl(kcp, cluster, "auth", "whoami", "-o", "json", token="gina-token").stdout
    assert json.loads(whoami)["status"]["userInfo"] == {"username": "gina", "uid": "uid-gina",
                                                        "groups": ["ops", "auditors", "system:authenticated"]}
    admin = json.loads(kubectl(kcp, cluster, "auth", "whoami", "-o", "json").stdout)["status"]["userInfo"]
    assert admin["username"] == "kcp-admin" and "system:masters" in admin["groups"]


def test_impersonation_needs_the_impersonate_verb(kcp: KcpServer, cluster: str) -> None:
    as_admin = kubectl(kcp, cluster, "get", "configmaps", "--as=nobody", check=False)
    assert ('configmaps is forbidden: User "nobody" cannot list resource "configmaps" in API group "" in the '
            'namespace "default"') in as_admin.stderr
    whoami = json.loads(kubectl(kcp, cluster, "auth", "whoami", "-o", "json", "--as=nobody",
                                "--as-group=ops").stdout)["status"]["userInfo"]
    assert whoami == {"username": "nobody", "groups": ["ops", "system:authenticated"]}
    assert kubectl(kcp, cluster, "auth", "can-i", "get", "configmaps", "--as=nobody",
                   check=False).stdout.strip() == "no"
    refused = kubectl(kcp, cluster, "get", "configmaps", "--as=nobody", token="frank-token", check=False)
    assert ('users "nobody" is forbidden: User "frank" cannot impersonate resource "users" in API group "" at the '
            'cluster scope') in refused.stderr
    kubectl(kcp, cluster, "create", "clusterrole", "impersonate-nobody", "--verb=impersonate", "--resource=users",
            "--resource-name=nobody")
    kubectl(kcp, cluster, "create", "clusterrolebinding", "frank-impersonates", "--clusterrole=impersonate-nobody",
            "--user=frank")
    eventually(lambda: "nobody" in kubectl(kcp, cluster, "auth", "whoami", "--as=nobody", token="frank-token",
                                           check=False).stdout)
    group = kubectl(kcp, cluster, "get", "configmaps", "--as=nobody", "--as-group=ops", token="frank-token",
                    check=False)
    assert ('groups "ops" is forbidden: User "frank" cannot impersonate resource "groups" in API group "" at the '
            'cluster scope') in group.stderr


def test_a_tenant_admin_impersonates_in_its_own_cluster_only_and_never_system_masters(kcp: KcpServer,
                                                                                      cluster: str) -> None:
    kubectl(kcp, cluster, "create", "clusterrolebinding", "jack-admin", "--clusterrole=cluster-admin", "--user=jack")
    eventually(lambda: "someone" in kubectl(kcp, cluster, "auth", "whoami", "--as=someone", token="jack-token",
                                            check=False).stdout)
    # raw requests (a raw path is the whole path: kubectl drops the server's /clusters/<name>), since kubectl's
    # discovery, impersonated too, would hide the message
    refused = 'users "someone" is forbidden: User "jack" cannot impersonate resource "users"'
    for where in (f"/clusters/{cluster}-other", "/clusters/*", ""):
        denied = run_kubectl(kcp, "--token", "jack-token", "get", "--raw", f"{where}/api/v1/configmaps",
                             "--as=someone", check=False)
        assert refused in denied.stderr, where
    # system:masters is kcp's superuser group: only a grant in admin lets one act as it
    masters = ["--as=root", "--as-group=system:masters"]
    denied = run_kubectl(kcp, "--token", "jack-token", "get", "--raw", f"/clusters/{cluster}/api/v1/secrets", *masters,
                         check=False)
    assert ('groups "system:masters" is forbidden: User "jack" cannot impersonate resource "groups" in API group "" '
            'at the cluster scope') in denied.stderr
    crd = run_kubectl(kcp, "--token", "jack-token", "create", "--raw",
                      f"/clusters/{cluster}/apis/apiextensions.k8s.io/v1/customresourcedefinitions", *masters,
                      "-f", "-", input_text=json.dumps(SYNC_TARGETS_CRD), check=False)
    assert 'groups "system:masters" is forbidden' in crd.stderr
    assert "NotFound" in kubectl(kcp, cluster, "get", "crd", "synctargets.workload.kcp.io", check=False).stderr


def test_wildcard_requests_need_a_clusterrolebinding_in_admin(kcp: KcpServer, cluster: str) -> None:
    kubectl(kcp, cluster, "create", "configmap", "everywhere")
    wildcard = ["--context", "cross-cluster", "--token", "frank-token", "get", "configmaps", "-A"]
    refused = run_kubectl(kcp, *wildcard, check=False)
    assert ('configmaps is forbidden: User "frank" cannot list resource "configmaps" in API group "" at the cluster '
            'scope') in refused.stderr
    # grants in other clusters, or namespaced grants in admin, do not reach `*`
    kubectl(kcp, cluster, "create", "clusterrole", "cm-lister", "--verb=list", "--resource=configmaps")
    kubectl(kcp, cluster, "create", "clusterrolebinding", "frank-lists", "--clusterrole=cm-lister", "--user=frank")
    run_kubectl(kcp, "create", "clusterrole", "cm-lister-everywhere", "--verb=list", "--resource=configmaps")
    run_kubectl(kcp, "create", "rolebinding", "frank-lists-default", "--clusterrole=cm-lister-everywhere",
                "--user=frank", "-n", "default")
    eventually(lambda: can(kcp, cluster, "frank-token", "get", "configmaps", "-A"))
    eventually(lambda: run_kubectl(kcp, "--token", "frank-token", "get", "configmaps", check=False).returncode == 0)
    assert run_kubectl(kcp, *wildcard, check=False).returncode == 1
    run_kubectl(kcp, "create", "clusterrolebinding", "frank-lists-everywhere",
                "--clusterrole=cm-lister-everywhere", "--user=frank")
    eventually(lambda: run_kubectl(kcp, *wildcard, check=False).returncode == 0)
    assert "everywhere" in run_kubectl(kcp, *wildcard).stdout


async def test_a_watch_from_now_starts_with_the_default_roles(api, cluster: str) -> None:  # type: ignore[no-untyped-def]
    from api import collect

    path = f"/clusters/{cluster}/apis/rbac.authorization.k8s.io/v1/clusterroles"
    listed = len((await api.get(path)).body["items"])
    assert listed >= 60  # kube's bootstrap ClusterRoles, in a fresh logical cluster
    events = await collect(api, path, {}, listed)
    assert {e["type"] for e in events} == {"ADDED"}
    assert {"cluster-admin", "admin", "edit", "view"} <= {e["object"]["metadata"]["name"] for e in events}
    one = await collect(api, path, {"fieldSelector": "metadata.name=view"}, 1)
    assert one[0]["object"]["metadata"]["name"] == "view"


async def test_clusterrole_lists_page_with_limit_and_continue(api, cluster: str) -> None:  # type: ignore[no-untyped-def]
    """The default ClusterRoles (shared by every logical cluster) page like stored ones (issue 28 item 4)."""
    path = f"/clusters/{cluster}/apis/rbac.authorization.k8s.io/v1/clusterroles"
    own = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "b-tenant"}}
    assert (await api.post(path, own)).status == 201
    everything = [i["metadata"]["name"] for i in (await api.get(path)).body["items"]]
    assert "b-tenant" in everything and "cluster-admin" in everything and everything == sorted(everything)
    pages, token = [], ""
    while True:
        reply = await api.get(path, params={"limit": "4", **({"continue": token} if token else {})})
        assert reply.status == 200, reply.body
        pages.append([i["metadata"]["name"] for i in reply.body["items"]])
        token = reply.body["metadata"].get("continue", "")
        if not token:
            break
        assert reply.body["metadata"]["remainingItemCount"] == len(everything) - sum(map(len, pages))
    assert all(len(p) == 4 for p in pages[:-1]) and 0 < len(pages[-1]) <= 4
    assert [name for p in pages for name in p] == everything


def test_a_tenants_aggregating_clusterrole_gets_its_rules_written(kcp: KcpServer, cluster: str) -> None:
    kubectl(kcp, cluster, "apply", "-f", "-", input_text=json.dumps({
        "apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "team"},
             "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"team": "x"}}]}},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
             "metadata": {"name": "team-secrets", "labels": {"team": "x"}},
             "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]}]}))

    def rules() -> list[dict[str, object]]:
        return json.loads(kubectl(kcp, cluster, "get", "clusterrole", "team", "-o", "json").stdout).get("rules") or []

    eventually(lambda: rules() == [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}])
    kubectl(kcp, cluster, "delete", "clusterrole", "team-secrets")
    eventually(lambda: rules() == [])


def test_a_bindings_role_ref_cannot_change(kcp: KcpServer, cluster: str) -> None:
    kubectl(kcp, cluster, "create", "rolebinding", "fixed", "--clusterrole=view", "--user=alice")
    changed = kubectl(kcp, cluster, "patch", "rolebinding", "fixed", "--type=merge", "-p",
                      '{"roleRef": {"name": "edit"}}', check=False)
    assert ('The RoleBinding "fixed" is invalid: roleRef: Invalid value: rbac.RoleRef{'
            'APIGroup:"rbac.authorization.k8s.io", Kind:"ClusterRole", Name:"edit"}: cannot change roleRef'
            ) in changed.stderr


def test_a_binding_refers_to_a_kind_of_role_it_can_bind(kcp: KcpServer, cluster: str) -> None:
    for kind, role_kind, supported in (("RoleBinding", "Policy", '"Role", "ClusterRole"'),
                                       ("ClusterRoleBinding", "Role", '"ClusterRole"')):
        created = kubectl(kcp, cluster, "create", "-f", "-", check=False, input_text=json.dumps({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": {"name": "odd"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": "x"},
            "subjects": [{"kind": "User", "name": "alice"}]}))
        assert (f'The {kind} "odd" is invalid: roleRef.kind: Unsupported value: "{role_kind}": supported values: '
                f'{supported}') in created.stderr


def test_a_service_account_token_acts_in_its_own_cluster_only(kcp: KcpServer, cluster: str) -> None:
    kubectl(kcp, cluster, "create", "serviceaccount", "bot")
    token = kubectl(kcp, cluster, "create", "token", "bot").stdout.strip()
    denied = kubectl(kcp, cluster, "get", "configmaps", token=token, check=False)
    assert ('configmaps is forbidden: User "system:serviceaccount:default:bot" cannot list resource "configmaps" in '
            'API group "" in the namespace "default"') in denied.stderr
    kubectl(kcp, cluster, "create", "rolebinding", "bot-views", "--clusterrole=view", "--serviceaccount=default:bot")
    eventually(lambda: can(kcp, cluster, token, "get", "configmaps"))
    whoami = json.loads(kubectl(kcp, cluster, "auth", "whoami", "-o", "json", token=token).stdout)
    assert whoami["status"]["userInfo"]["username"] == "system:serviceaccount:default:bot"
    assert kubectl(kcp, cluster, "auth", "can-i", "list", "configmaps", token=token).stdout.strip() == "yes"
    # the same bindings elsewhere do not make it welcome there: it is a stranger
    other = f"{cluster}-other"
    kubectl(kcp, other, "create", "serviceaccount", "bot")
    kubectl(kcp, other, "create", "clusterrolebinding", "bot-admin", "--clusterrole=cluster-admin",
            "--serviceaccount=default:bot")
    run_kubectl(kcp, "create", "clusterrolebinding", f"bot-everywhere-{cluster}", "--clusterrole=cluster-admin",
                "--serviceaccount=default:bot")
    eventually(lambda: can(kcp, other, kubectl(kcp, other, "create", "token", "bot").stdout.strip(), "get",
                           "secrets"))
    stranger = kubectl(kcp, other, "get", "configmaps", token=token, check=False)
    assert 'User "system:serviceaccount:default:bot" cannot list resource "configmaps"' in stranger.stderr
    wildcard = run_kubectl(kcp, "--context", "cross-cluster", "--token", token, "get", "configmaps", "-A",
                           check=False)
    assert 'cannot list resource "configmaps" in API group "" at the cluster scope' in wildcard.stderr
