"""Shared APIs with the real kubectl (1.32 and 1.35) against a real kcp: a provider workspace exports
widgets.example.io (an APIResourceSchema through an APIExport); consumers that bind it serve widgets as if they
had the CRD (discovery, defaults, validation, apply, get), others do not; binding needs `bind` on the export;
one group/resource is bound once per workspace and no CRD may take it meanwhile; two exports' objects are
stored apart by identity; deleting a binding deletes its objects."""

from __future__ import annotations

import hashlib
import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_process_lifecycle import ExternalEtcd

from kcp_process import KcpServer, free_port, kubectl_1_35, kubectl_at, run_kubectl, token_auth

USERS = {"team-b-token": ("team-b-lead", "team-b")}


def widget_schema(name: str = "v1.widgets.example.io", extra: dict[str, Any] | None = None) -> dict[str, Any]:
    spec_props: dict[str, Any] = {"size": {"type": "integer", "default": 3, "maximum": 10},
                                  "color": {"type": "string", "enum": ["red", "blue"]}, **(extra or {})}
    return {"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIResourceSchema", "metadata": {"name": name},
            "spec": {"group": "example.io", "scope": "Namespaced",
                     "names": {"kind": "Widget", "listKind": "WidgetList", "plural": "widgets", "singular": "widget"},
                     "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                                   "additionalPrinterColumns": [{"name": "Size", "type": "integer",
                                                                 "jsonPath": ".spec.size"}],
                                   "schema": {"type": "object", "properties": {
                                       "spec": {"type": "object", "properties": spec_props,
                                                "x-kubernetes-validations": [{
                                                    "rule": "!has(self.color) || self.color != 'blue' || self.size <= 5",
                                                    "message": "blue widgets are small"}]},
                                       "status": {"type": "object", "properties": {"phase": {"type": "string"}}}}}}]}}


def export(name: str, *schemas: str) -> dict[str, Any]:
    return {"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport", "metadata": {"name": name},
            "spec": {"latestResourceSchemas": list(schemas)}}


def binding(name: str, path: str, export_name: str = "widgets") -> str:
    return json.dumps({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIBinding", "metadata": {"name": name},
                       "spec": {"reference": {"export": {"path": path, "name": export_name}}}})


def widget(name: str, namespace: str = "default", **spec: Any) -> str:
    return json.dumps({"apiVersion": "example.io/v1", "kind": "Widget",
                       "metadata": {"name": name, "namespace": namespace}, "spec": spec})


@pytest.fixture(scope="module")
def etcd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ExternalEtcd]:
    """An etcd of the test's own, so that where objects are stored can be read key by key."""
    server = ExternalEtcd(tmp_path_factory.mktemp("api-bindings-etcd"))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def kcp(tmp_path_factory: pytest.TempPathFactory, etcd: ExternalEtcd) -> Iterator[KcpServer]:
    root = tmp_path_factory.mktemp("kcp-api-bindings")
    server = KcpServer(root, free_port(), [*token_auth(root, USERS), "--etcd-servers", etcd.url])
    server.start()
    yield server
    assert server.stop() == 0, server.log_tail()


def etcd_keys(etcd: ExternalEtcd, prefix: str) -> list[str]:
    etcdctl = Path(etcd.binary).with_name("etcdctl")
    out = subprocess.run([str(etcdctl), "--endpoints", etcd.url, "get", prefix, "--prefix", "--keys-only"],
                         capture_output=True, text=True, check=True, timeout=20).stdout
    return [line for line in out.splitlines() if line]


def kubectl(kcp: KcpServer, cluster: str, *args: str, token: str | None = None, check: bool = True,
            input_text: str | None = None) -> subprocess.CompletedProcess[str]:
    flags = ["--server", f"{kcp.url}/clusters/{cluster}"] + (["--token", token] if token else [])
    return run_kubectl(kcp, *flags, *args, check=check, input_text=input_text)


def kubectl_135(kcp: KcpServer, cluster: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return kubectl_at(kubectl_1_35(), kcp.kubeconfig, "--server", f"{kcp.url}/clusters/{cluster}", *args, stdin=stdin)


def create_workspace(kcp: KcpServer, parent: str, name: str) -> str:
    ws = json.dumps({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": name}})
    kubectl(kcp, parent, "create", "-f", "-", input_text=ws)
    kubectl(kcp, parent, "wait", f"workspace/{name}", "--for=jsonpath={.status.phase}=Ready", "--timeout=20s")
    return f"{parent}:{name}"


def provide(kcp: KcpServer, cluster: str, schema: dict[str, Any] | None = None) -> str:
    """widgets.example.io exported as `widgets` from `cluster`; the export's identity."""
    schema = schema or widget_schema()
    kubectl(kcp, cluster, "apply", "-f", "-", input_text=json.dumps(schema))
    kubectl(kcp, cluster, "apply", "-f", "-", input_text=json.dumps(export("widgets", schema["metadata"]["name"])))
    kubectl(kcp, cluster, "wait", "apiexport/widgets", "--for=jsonpath={.status.identityHash}", "--timeout=20s")
    return kubectl(kcp, cluster, "get", "apiexport", "widgets", "-o", "jsonpath={.status.identityHash}").stdout


def bind(kcp: KcpServer, cluster: str, provider: str, name: str = "widgets") -> None:
    kubectl(kcp, cluster, "create", "-f", "-", input_text=binding(name, provider))
    kubectl(kcp, cluster, "wait", f"apibinding/{name}", "--for=condition=Ready", "--timeout=20s")


def ready_condition(kcp: KcpServer, cluster: str, name: str) -> dict[str, Any]:
    kubectl(kcp, cluster, "wait", f"apibinding/{name}", "--for=jsonpath={.status.conditions[0].status}=False",
            "--timeout=20s")
    found = json.loads(kubectl(kcp, cluster, "get", "apibinding", name, "-o", "json").stdout)
    return next(c for c in found["status"]["conditions"] if c["type"] == "Ready")  # type: ignore[no-any-return]


@pytest.fixture
def parent(kcp: KcpServer) -> str:
    name = f"root-{uuid.uuid4().hex[:8]}"
    kubectl(kcp, name, "get", "namespaces")  # a flat logical cluster holding this test's workspaces
    return name


def test_two_consumers_bind_an_export_and_serve_widgets_as_if_they_had_the_crd(kcp: KcpServer,
                                                                               parent: str) -> None:
    provider = create_workspace(kcp, parent, "provider")
    identity = provide(kcp, provider)
    first, second, stranger = (create_workspace(kcp, parent, n) for n in ("first", "second", "stranger"))
    bind(kcp, first, provider)
    bind(kcp, second, provider)
    bound = json.loads(kubectl(kcp, first, "get", "apibinding", "widgets", "-o", "json").stdout)["status"]
    assert bound["phase"] == "Bound"
    assert bound["boundResources"] == [{"group": "example.io", "resource": "widgets", "storageVersions": ["v1"],
                                        "schema": {"name": "v1.widgets.example.io", "identityHash": identity,
                                                   "UID": bound["boundResources"][0]["schema"]["UID"]}}]
    assert "widgets" in kubectl(kcp, first, "api-resources", "--api-group=example.io").stdout
    assert "size" in kubectl(kcp, first, "explain", "widgets.spec").stdout  # OpenAPI from the bound schema
    table = kubectl(kcp, first, "get", "apibindings").stdout.splitlines()
    assert [line.split()[:5] for line in table] == [["NAME", "EXPORT", "PATH", "PHASE", "READY"],
                                                    ["widgets", "widgets", provider, "Bound", "True"]]
    kubectl(kcp, first, "apply", "-f", "-", input_text=widget("small", color="red"))
    got = yaml.safe_load(kubectl(kcp, first, "get", "widget", "small", "-n", "default", "-o", "yaml").stdout)
    assert got["spec"] == {"color": "red", "size": 3}  # the schema's default
    too_big = kubectl(kcp, first, "apply", "-f", "-", input_text=widget("big", size=20), check=False)
    assert too_big.returncode == 1
    assert 'The Widget "big" is invalid: spec.size: Invalid value: 20: spec.size in body should be less than or ' \
           "equal to 10" in too_big.stderr  # kubectl's words for a 422
    green = kubectl(kcp, first, "create", "-f", "-", input_text=widget("green", color="green"), check=False)
    assert 'spec.color: Unsupported value: "green": supported values: "red", "blue"' in green.stderr
    blue = kubectl(kcp, first, "apply", "-f", "-", input_text=widget("blue", color="blue", size=7), check=False)
    assert "blue widgets are small" in blue.stderr  # the schema's CEL rule
    kubectl(kcp, first, "apply", "--server-side", "-f", "-", input_text=widget("small", color="blue"))
    owners = json.loads(kubectl(kcp, first, "get", "widget", "small", "-n", "default", "-o", "json",
                                "--show-managed-fields").stdout)["metadata"]["managedFields"]
    assert any(m["manager"] == "kubectl" and m["operation"] == "Apply" for m in owners), owners  # server-side apply
    # kubectl 1.35 (watch-list, aggregated discovery) in the second consumer: its own widgets only
    applied = kubectl_135(kcp, second, "apply", "-f", "-", stdin=widget("other", size=7))
    assert applied.returncode == 0, applied.stderr
    table = kubectl_135(kcp, second, "get", "widgets", "-n", "default")
    assert table.stdout.split("\n")[0].split() == ["NAME", "SIZE"], table.stdout  # the schema's columns
    assert [line.split()[:2] for line in table.stdout.strip().splitlines()[1:]] == [["other", "7"]]
    waited = kubectl_135(kcp, second, "wait", "widget/other", "-n", "default", "--for=jsonpath={.spec.size}=7",
                         "--timeout=10s")
    assert waited.returncode == 0, waited.stderr
    assert kubectl(kcp, first, "get", "widgets", "-A", "-o", "name").stdout.split() == ["widget.example.io/small"]
    for run in (lambda *a: kubectl(kcp, stranger, *a, check=False), lambda *a: kubectl_135(kcp, stranger, *a)):
        missing = run("get", "widgets")
        assert missing.returncode == 1
        assert 'the server doesn\'t have a resource type "widgets"' in missing.stderr


def test_two_providers_widgets_are_stored_apart_by_the_exports_identity(kcp: KcpServer, etcd: ExternalEtcd,
                                                                       parent: str) -> None:
    one, two = create_workspace(kcp, parent, "one"), create_workspace(kcp, parent, "two")
    first_identity = provide(kcp, one)
    second_identity = provide(kcp, two, widget_schema(extra={"shape": {"type": "string"}}))
    assert first_identity != second_identity
    kubectl(kcp, two, "patch", "apiexport", "widgets", "--subresource=status", "--type=merge",
            "-p", json.dumps({"status": {"identityHash": first_identity}}))  # a provider claiming another's identity
    kubectl(kcp, two, "wait", "apiexport/widgets", f"--for=jsonpath={{.status.identityHash}}={second_identity}",
            "--timeout=20s")  # is put back: only the server sets it
    consumer_one, consumer_two = create_workspace(kcp, parent, "uses-one"), create_workspace(kcp, parent, "uses-two")
    bind(kcp, consumer_one, one)
    bind(kcp, consumer_two, two)
    unknown = kubectl(kcp, consumer_one, "apply", "-f", "-", input_text=widget("w", shape="round"), check=False)
    assert 'unknown field "spec.shape"' in unknown.stderr  # each consumer is served its own export's schema
    kubectl(kcp, consumer_one, "apply", "-f", "-", input_text=widget("w"))
    kubectl(kcp, consumer_two, "apply", "-f", "-", input_text=widget("w", shape="round"))
    second = yaml.safe_load(kubectl(kcp, consumer_two, "get", "widget", "w", "-n", "default", "-o", "yaml").stdout)
    assert second["spec"] == {"shape": "round", "size": 3}
    assert etcd_keys(etcd, f"/registry/example.io/widgets:{first_identity}/{consumer_one}/") == [
        f"/registry/example.io/widgets:{first_identity}/{consumer_one}/default/w"]
    assert etcd_keys(etcd, f"/registry/example.io/widgets:{second_identity}/{consumer_two}/") == [
        f"/registry/example.io/widgets:{second_identity}/{consumer_two}/default/w"]
    assert not etcd_keys(etcd, "/registry/example.io/widgets/")  # nothing outside an identity
    # across clusters, each export's widgets are named by its identity (kcp's `widgets:<identityHash>`)
    for identity, consumer, shape in ((first_identity, consumer_one, None), (second_identity, consumer_two, "round")):
        code, listed = kcp.get_json(f"/clusters/*/apis/example.io/v1/widgets:{identity}")
        assert code == 200, listed
        assert [(w["metadata"]["annotations"]["kcp.io/cluster"], w["spec"].get("shape")) for w in listed["items"]
                if w["metadata"]["annotations"]["kcp.io/cluster"] in (consumer_one, consumer_two)] == [
            (consumer, shape)]
    assert kcp.get_json(f"/clusters/*/apis/example.io/v1/widgets:{'0' * 64}")[0] == 404  # no such identity
    assert kcp.get_json(f"/clusters/*/api/v1/configmaps:{first_identity}")[0] == 404  # a built-in has none


def test_a_workspace_binds_one_group_resource_once_and_no_crd_may_take_it(kcp: KcpServer, parent: str) -> None:
    one, two = create_workspace(kcp, parent, "one"), create_workspace(kcp, parent, "two")
    provide(kcp, one)
    provide(kcp, two)
    consumer = create_workspace(kcp, parent, "consumer")
    bind(kcp, consumer, one, "first")
    kubectl(kcp, consumer, "create", "-f", "-", input_text=binding("second", two))
    cond = ready_condition(kcp, consumer, "second")
    assert cond["reason"] == "NamingConflict"
    assert cond["message"] == 'widgets.example.io is already bound in this workspace by APIBinding "first"'
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets.example.io"},
           "spec": {"group": "example.io", "scope": "Namespaced",
                    "names": {"kind": "Widget", "plural": "widgets"},
                    "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                        "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}
    refused = kubectl(kcp, consumer, "create", "-f", "-", input_text=json.dumps(crd), check=False)
    assert refused.returncode == 1
    assert ('Operation cannot be fulfilled on customresourcedefinitions.apiextensions.k8s.io "widgets.example.io": '
            'widgets.example.io is bound in this workspace by APIBinding "first"') in refused.stderr
    kubectl(kcp, consumer, "delete", "apibinding", "first", "--timeout=30s")  # the second takes its place
    kubectl(kcp, consumer, "wait", "apibinding/second", "--for=condition=Ready", "--timeout=30s")
    # a workspace with a CRD of its own first: the binding waits, naming the CRD
    local = create_workspace(kcp, parent, "local")
    kubectl(kcp, local, "create", "-f", "-", input_text=json.dumps(crd))
    kubectl(kcp, local, "create", "-f", "-", input_text=binding("widgets", one))
    cond = ready_condition(kcp, local, "widgets")
    assert cond["reason"] == "NamingConflict"
    assert "CustomResourceDefinition \"widgets.example.io\"" in cond["message"]
    kubectl(kcp, local, "delete", "crd", "widgets.example.io", "--timeout=30s")
    kubectl(kcp, local, "wait", "apibinding/widgets", "--for=condition=Ready", "--timeout=30s")


def test_binding_needs_bind_on_the_export(kcp: KcpServer, parent: str) -> None:
    provider = create_workspace(kcp, parent, "provider")
    provide(kcp, provider)
    consumer = create_workspace(kcp, parent, "team-b")
    kubectl(kcp, consumer, "create", "clusterrolebinding", "team-b-admin", "--clusterrole=cluster-admin",
            "--group=team-b")
    denied = kubectl(kcp, consumer, "create", "-f", "-", input_text=binding("widgets", provider),
                     token="team-b-token", check=False)
    assert denied.returncode == 1
    assert (f'apibindings.apis.kcp.io "widgets" is forbidden: User "team-b-lead" cannot bind APIExport "widgets" '
            f'of workspace "{provider}": binding it needs verb "bind" on apiexports.apis.kcp.io "widgets" there'
            ) in denied.stderr
    assert not kubectl(kcp, consumer, "get", "apibindings", "-o", "name").stdout  # nothing was stored
    binder = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "bind-widgets"},
              "rules": [{"apiGroups": ["apis.kcp.io"], "resources": ["apiexports"], "resourceNames": ["widgets"],
                         "verbs": ["bind"]}]}
    kubectl(kcp, provider, "create", "-f", "-", input_text=json.dumps(binder))
    kubectl(kcp, provider, "create", "clusterrolebinding", "team-b-binds", "--clusterrole=bind-widgets",
            "--group=team-b")
    kubectl(kcp, consumer, "create", "-f", "-", input_text=binding("widgets", provider), token="team-b-token")
    kubectl(kcp, consumer, "wait", "apibinding/widgets", "--for=condition=Ready", "--timeout=20s",
            token="team-b-token")
    kubectl(kcp, consumer, "apply", "-f", "-", input_text=widget("mine"), token="team-b-token")


def test_deleting_a_binding_deletes_its_objects_and_its_type(kcp: KcpServer, etcd: ExternalEtcd, parent: str,
                                                            tmp_path: Path) -> None:
    provider = create_workspace(kcp, parent, "provider")
    identity = provide(kcp, provider)
    consumer, neighbour = create_workspace(kcp, parent, "consumer"), create_workspace(kcp, parent, "neighbour")
    bind(kcp, consumer, provider)
    bind(kcp, neighbour, provider)
    kubectl(kcp, consumer, "create", "namespace", "apps")
    for name, namespace in (("a", "default"), ("b", "default"), ("c", "apps")):
        kubectl(kcp, consumer, "apply", "-f", "-", input_text=widget(name, namespace))
    kubectl(kcp, neighbour, "apply", "-f", "-", input_text=widget("kept"))
    held = json.loads(widget("held", "apps"))
    held["metadata"]["finalizers"] = ["example.io/hold"]
    kubectl(kcp, consumer, "create", "-f", "-", input_text=json.dumps(held))
    assert len(etcd_keys(etcd, f"/registry/example.io/widgets:{identity}/{consumer}/")) == 4
    kubectl(kcp, consumer, "delete", "apibinding", "widgets", "--wait=false")
    kubectl(kcp, consumer, "wait", "widget/held", "-n", "apps", "--for=jsonpath={.metadata.deletionTimestamp}",
            "--timeout=20s")  # as kube does with a terminating CRD: still served, so its finalizer can finish...
    refused = kubectl(kcp, consumer, "create", "-f", "-", input_text=widget("late"), check=False)
    assert 'create not allowed while APIBinding "widgets" is being deleted' in refused.stderr  # ...but no new ones
    assert kubectl(kcp, consumer, "get", "apibinding", "widgets", "-o", "name").stdout.strip()
    kubectl(kcp, consumer, "patch", "widget", "held", "-n", "apps", "--type=merge", "-p",
            '{"metadata":{"finalizers":null}}')
    kubectl(kcp, consumer, "wait", "apibinding/widgets", "--for=delete", "--timeout=30s")
    assert not etcd_keys(etcd, f"/registry/example.io/widgets:{identity}/{consumer}/")
    assert "widgets" not in kubectl(kcp, consumer, "api-resources", "--api-group=example.io").stdout
    # a kubectl that discovers afresh (this one cached widgets while they were served) finds no such type
    missing = kubectl(kcp, consumer, "get", "widgets", "-A", "--cache-dir", str(tmp_path), check=False)
    assert 'the server doesn\'t have a resource type "widgets"' in missing.stderr
    assert kubectl(kcp, neighbour, "get", "widgets", "-o", "name").stdout.split() == ["widget.example.io/kept"]
    kubectl(kcp, parent, "delete", "workspace", "neighbour", "--timeout=30s")  # its binding and widgets go with it
    assert not etcd_keys(etcd, f"/registry/example.io/widgets:{identity}/{neighbour}/")
    assert not etcd_keys(etcd, f"/registry/apis.kcp.io/apibindings/{neighbour}/")


def test_an_export_s_new_schema_reaches_every_binding_unless_it_would_break_one(kcp: KcpServer,
                                                                                 parent: str) -> None:
    """Schema evolution: a compatible schema (a new field) is rolled out to both consumers, and their widgets
    keep the new field; an incompatible one (`color` dropped) leaves each on what it had, saying why on the
    binding, and the export names both consumers it would break. Their widgets stay whole."""
    provider = create_workspace(kcp, parent, "provider")
    provide(kcp, provider)
    consumers = [create_workspace(kcp, parent, n) for n in ("first", "second")]
    for consumer in consumers:
        bind(kcp, consumer, provider)
        kubectl(kcp, consumer, "create", "-f", "-", input_text=widget("w", color="red"))

    v2 = widget_schema("v2.widgets.example.io", extra={"shape": {"type": "string"}})
    kubectl(kcp, provider, "apply", "-f", "-", input_text=json.dumps(v2))
    kubectl(kcp, provider, "apply", "-f", "-", input_text=json.dumps(export("widgets", "v2.widgets.example.io")))
    for consumer in consumers:
        kubectl(kcp, consumer, "wait", "apibinding/widgets", "--timeout=20s",
                "--for=jsonpath={.status.boundResources[0].schema.name}=v2.widgets.example.io")
        kubectl(kcp, consumer, "patch", "widget", "w", "--type=merge", "-p", '{"spec":{"shape":"round"}}')
        assert kubectl(kcp, consumer, "get", "widget", "w", "-o", "jsonpath={.spec.shape}").stdout == "round"
        up_to_date = kubectl(kcp, consumer, "get", "apibinding", "widgets", "-o",
                             "jsonpath={.status.conditions[?(@.type=='BindingUpToDate')].status}").stdout
        assert up_to_date == "True"

    v3 = widget_schema("v3.widgets.example.io", extra={"shape": {"type": "string"}})
    del v3["spec"]["versions"][0]["schema"]["properties"]["spec"]["properties"]["color"]
    v3["spec"]["versions"][0]["schema"]["properties"]["spec"]["x-kubernetes-validations"] = []
    kubectl(kcp, provider, "apply", "-f", "-", input_text=json.dumps(v3))
    kubectl(kcp, provider, "apply", "-f", "-", input_text=json.dumps(export("widgets", "v3.widgets.example.io")))
    kubectl(kcp, provider, "wait", "apiexport/widgets", "--timeout=20s",
            "--for=jsonpath={.status.conditions[?(@.type=='BindingsUpToDate')].status}=False")
    condition = json.loads(kubectl(kcp, provider, "get", "apiexport", "widgets", "-o",
                                   "jsonpath={.status.conditions[?(@.type=='BindingsUpToDate')]}").stdout)
    assert condition["reason"] == "IncompatibleSchema"
    assert condition["message"].startswith(f"2 consumer(s) keep their schema, the latest would break them: "
                                           f"{consumers[0]}, {consumers[1]}; ")
    assert "v1: field .spec.color is removed" in condition["message"]
    for consumer in consumers:
        found = json.loads(kubectl(kcp, consumer, "get", "apibinding", "widgets", "-o", "json").stdout)
        assert found["status"]["boundResources"][0]["schema"]["name"] == "v2.widgets.example.io"
        held = next(c for c in found["status"]["conditions"] if c["type"] == "BindingUpToDate")
        assert (held["status"], held["reason"]) == ("False", "IncompatibleSchema")
        assert held["message"] == ('widgets.example.io stays on APIResourceSchema "v2.widgets.example.io": '
                                   '"v3.widgets.example.io" would break it (v1: field .spec.color is removed)')
        assert kubectl(kcp, consumer, "get", "widget", "w", "-o", "jsonpath={.spec.color}").stdout == "red"

    kubectl(kcp, provider, "apply", "-f", "-", input_text=json.dumps(export("widgets", "v2.widgets.example.io")))
    kubectl(kcp, provider, "wait", "apiexport/widgets", "--timeout=20s",  # back on v2: nobody is held back
            "--for=jsonpath={.status.conditions[?(@.type=='BindingsUpToDate')].status}=True")


def test_two_exports_given_one_identity_secret_share_an_identity(kcp: KcpServer, parent: str) -> None:
    """kcp's `spec.identity.secretRef`: the identity is the sha256 of the Secret's `key`; an export naming a
    Secret that is not there says so and gets its identity once the Secret comes."""
    one, two = create_workspace(kcp, parent, "one"), create_workspace(kcp, parent, "two")
    key = "a shared identity key"
    for cluster in (one, two):
        kubectl(kcp, cluster, "apply", "-f", "-", input_text=json.dumps(widget_schema()))
    kubectl(kcp, one, "create", "secret", "generic", "widgets-identity", f"--from-literal=key={key}")
    with_secret = export("widgets", "v1.widgets.example.io")
    with_secret["spec"]["identity"] = {"secretRef": {"namespace": "default", "name": "widgets-identity"}}
    for cluster in (one, two):
        kubectl(kcp, cluster, "apply", "-f", "-", input_text=json.dumps(with_secret))
    kubectl(kcp, one, "wait", "apiexport/widgets", "--for=condition=IdentityValid", "--timeout=20s")
    expected = hashlib.sha256(key.encode()).hexdigest()
    assert kubectl(kcp, one, "get", "apiexport", "widgets", "-o", "jsonpath={.status.identityHash}").stdout == expected
    kubectl(kcp, two, "wait", "apiexport/widgets", "--for=condition=IdentityValid=False", "--timeout=20s")
    missing = json.loads(kubectl(kcp, two, "get", "apiexport", "widgets", "-o",
                                 "jsonpath={.status.conditions[?(@.type=='IdentityValid')]}").stdout)
    assert missing["reason"] == "IdentityNotFound"
    assert missing["message"] == ('Secret "default/widgets-identity" named by spec.identity.secretRef does not '
                                  'exist')
    kubectl(kcp, two, "create", "secret", "generic", "widgets-identity", f"--from-literal=key={key}")
    kubectl(kcp, two, "wait", "apiexport/widgets", "--for=condition=IdentityValid", "--timeout=30s")
    assert kubectl(kcp, two, "get", "apiexport", "widgets", "-o", "jsonpath={.status.identityHash}").stdout == expected
