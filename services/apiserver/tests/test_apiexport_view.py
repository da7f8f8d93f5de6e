"""An APIExport's virtual workspace decided without a server: its URL, which types and objects it shows (the
export's own, of consumers whose binding is Bound), and who may use it (`apiexports/content` in the provider)."""

from __future__ import annotations

from typing import Any

import pytest

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import ExportRef, RequestContext, UserInfo
from kcp_apiserver.apis.exportview import ExportViews
from kcp_apiserver.apis.serving import BoundAPIs
from kcp_apiserver.apis.types import identity_hash
from kcp_apiserver.filters.authorization import forbidden_message, judged
from kcp_apiserver.filters.requestinfo import parse, split_apiexport
from kcp_apiserver.rbac.authorizer import RBACAuthorizer
from kcp_apiserver.rbac.policy import PolicyIndex
from kcp_apiserver.registry.builtin import BUILTINS
from kcp_apiserver.registry.catalog import Catalog
from kcpcommon.keys import ObjectKey

IDENTITY = identity_hash("provider", "widgets", "uid-1")
OTHER_IDENTITY = identity_hash("elsewhere", "widgets", "uid-2")
BOB = UserInfo("bob", groups=("system:authenticated",))


def test_the_view_url_names_the_export_and_then_a_consumer_or_all_of_them() -> None:
    export, rest = split_apiexport("/services/apiexport/root:provider/widgets/clusters/*/apis/example.io/v1/widgets")
    assert (export, rest) == (ExportRef("root:provider", "widgets"), "/clusters/*/apis/example.io/v1/widgets")
    info = parse("GET", rest, watch_param=True)
    assert (info.cluster, info.wildcard, info.verb, info.group, info.resource) == (
        "*", True, "watch", "example.io", "widgets")
    export, rest = split_apiexport(
        "/services/apiexport/root:provider/widgets/clusters/root:first/apis/example.io/v1/namespaces/default/"
        "widgets/a/status")
    info = parse("PATCH", rest, watch_param=False)
    assert (info.cluster, info.verb, info.namespace, info.name, info.subresource) == (
        "root:first", "patch", "default", "a", "status")
    assert split_apiexport("/clusters/root/apis") == (None, "/clusters/root/apis")  # not the view: as it was


@pytest.mark.parametrize("path", ["/services/apiexport/", "/services/apiexport/provider",
                                  "/services/apiexport/provider/widgets", "/services/apiexport/provider/widgets/apis",
                                  "/services/apiexport/*/widgets/clusters/*/apis"])
def test_a_view_url_without_an_export_and_a_cluster_is_not_found(path: str) -> None:
    with pytest.raises(st.APIError) as missing:
        split_apiexport(path)
    assert missing.value.code == 404


def test_a_bad_provider_cluster_name_is_a_bad_request() -> None:
    with pytest.raises(st.APIError) as bad:
        split_apiexport("/services/apiexport/Not_A_Cluster/widgets/clusters/*/apis")
    assert bad.value.code == 400


def schema(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "uid": "schema-uid"},
            "spec": {"group": "example.io", "scope": "Namespaced", "names": {"kind": "Widget", "plural": "widgets"},
                     "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                         "type": "object", "x-kubernetes-preserve-unknown-fields": True}}]}}


class Schemas:
    """The schemas' informer, as much of it as BoundAPIs reads."""

    def __init__(self) -> None:
        self.indexer = {ObjectKey("provider", "", "v1.widgets.example.io"): schema("v1.widgets.example.io"),
                        ObjectKey("elsewhere", "", "v1.widgets.example.io"): schema("v1.widgets.example.io")}


def bound(cluster: str, provider: str = "provider", identity: str = IDENTITY, phase: str = "Bound",
          name: str = "widgets") -> dict[str, Any]:
    return {"metadata": {"name": name, "annotations": {"kcp.io/cluster": cluster}},
            "spec": {"reference": {"export": {"path": provider, "name": "widgets"}}},
            "status": {"phase": phase, "apiExportClusterName": provider, "boundResources": [
                {"group": "example.io", "resource": "widgets",
                 "schema": {"name": "v1.widgets.example.io", "identityHash": identity}}]}}


def claiming(cluster: str, *claims: tuple[str, str]) -> dict[str, Any]:
    """A Bound binding of `cluster` that accepted these (group, resource) claims of the export."""
    binding = bound(cluster)
    binding["status"]["appliedPermissionClaims"] = [{"group": g, "resource": r, "all": True} for g, r in claims]
    return binding


def widget(cluster: str) -> dict[str, Any]:
    return {"metadata": {"name": "w", "namespace": "default", "annotations": {"kcp.io/cluster": cluster}}}


class Exports:
    """The exports' informer, as much of it as BoundAPIs reads."""

    def __init__(self, identity: str = IDENTITY) -> None:
        self.indexer = {ObjectKey("provider", "", "widgets"): {
            "metadata": {"name": "widgets"}, "spec": {"latestResourceSchemas": ["v1.widgets.example.io"]},
            "status": {"identityHash": identity} if identity else {}}}


@pytest.fixture
def apis() -> BoundAPIs:
    apis = BoundAPIs(informers=None, catalog=Catalog(BUILTINS))  # type: ignore[arg-type]
    apis._schemas = Schemas()  # type: ignore[assignment]
    apis._exports_informer = Exports()  # type: ignore[assignment]
    return apis


def test_before_any_consumer_binds_the_view_serves_the_exports_declared_types_across_none(apis: BoundAPIs) -> None:
    views = ExportViews(apis)
    declared = views.resources("provider", "widgets")
    assert [(r.group, r.version, r.plural, r.identity) for r in declared] == [
        ("example.io", "v1", "widgets", IDENTITY)]
    assert views.resources("provider", "widgets") is declared  # built once per state of the export and schemas
    assert views.resource("provider", "widgets", "*", "example.io", "v1", "widgets") is declared[0]
    assert views.resource("provider", "widgets", "first", "example.io", "v1", "widgets") is None
    assert views.resources("provider", "gadgets") == []
    apis._exports_informer = Exports(identity="")  # type: ignore[assignment]
    assert views.resources("provider", "widgets") == []  # no identity yet: nothing to serve


def test_the_view_serves_the_exports_type_for_its_bound_consumers_only(apis: BoundAPIs) -> None:
    views = ExportViews(apis)
    apis._observe(bound("first"), False)
    apis._observe(bound("second"), False)
    apis._observe(bound("waiting", phase="Binding"), False)  # not Bound yet: not a consumer
    apis._observe(bound("third", provider="elsewhere", identity=OTHER_IDENTITY), False)  # another export's
    assert views.consumers("provider", "widgets") == {"first", "second"}
    assert [(r.group, r.version, r.plural, r.identity) for r in views.resources("provider", "widgets")] == [
        ("example.io", "v1", "widgets", IDENTITY)]
    everywhere = views.resource("provider", "widgets", "*", "example.io", "v1", "widgets")
    assert everywhere is not None and everywhere.identity == IDENTITY  # never the other export's storage
    assert everywhere.prefix == f"/registry/example.io/widgets:{IDENTITY}/"
    first = views.resource("provider", "widgets", "first", "example.io", "v1", "widgets")
    assert first is not None and first.identity == IDENTITY
    for cluster in ("third", "waiting", "nobody"):  # not bound to this export: 404
        assert views.resource("provider", "widgets", cluster, "example.io", "v1", "widgets") is None
    assert views.resource("provider", "widgets", "*", "", "v1", "configmaps") is None  # the consumers' own types
    assert views.resource("provider", "gadgets", "*", "example.io", "v1", "widgets") is None


def test_lists_and_watches_show_the_current_consumers_objects_only(apis: BoundAPIs) -> None:
    views = ExportViews(apis)
    apis._observe(bound("first"), False)
    apis._observe(bound("second"), False)
    shown = views.shows("provider", "widgets", views.resources("provider", "widgets")[0])
    assert [shown(widget(c)) for c in ("first", "second", "third")] == [True, True, False]
    apis._observe(bound("second"), True)  # unbound while a watch runs: its objects leave the view at once
    assert [shown(widget(c)) for c in ("first", "second")] == [True, False]
    assert views.resource("provider", "widgets", "second", "example.io", "v1", "widgets") is None
    apis._observe(bound("first", phase="Binding"), False)
    assert views.consumers("provider", "widgets") == set()
    assert views.resource("provider", "widgets", "first", "example.io", "v1", "widgets") is None
    assert [r.identity for r in views.resources("provider", "widgets")] == [IDENTITY]  # the export's, declared


def grant(index: PolicyIndex, cluster: str, rule: dict[str, Any]) -> None:
    meta = {"name": "granted", "annotations": {"kcp.io/cluster": cluster}}
    index.observe_cluster_role({"kind": "ClusterRole", "metadata": meta, "rules": [rule]}, False)
    index.observe_binding({"kind": "ClusterRoleBinding", "metadata": meta, "subjects": [
        {"kind": "User", "name": "bob"}], "roleRef": {"kind": "ClusterRole", "name": "granted"}}, False)


def view_context(verb: str, cluster: str = "*", export: str = "widgets") -> RequestContext:
    info = parse("GET", f"/clusters/{cluster}/apis/example.io/v1/widgets", watch_param=verb == "watch")
    return RequestContext(info, user=BOB, export=ExportRef("provider", export))


def test_the_view_is_authorized_by_the_exports_content_in_the_provider() -> None:
    index = PolicyIndex()
    rbac = RBACAuthorizer(index)
    checked = judged(view_context("list"))
    assert (checked.info.cluster, checked.info.verb, checked.info.group, checked.info.resource,
            checked.info.subresource, checked.info.name) == (
        "provider", "list", "apis.kcp.io", "apiexports", "content", "widgets")
    assert forbidden_message(checked) == (
        'apiexports.apis.kcp.io "widgets" is forbidden: User "bob" cannot list resource "apiexports/content" in API '
        'group "apis.kcp.io" at the cluster scope')
    grant(index, "first", {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]})  # a consumer's admin
    assert not rbac.decide(BOB, judged(view_context("list", "first")).info).allowed
    grant(index, "provider", {"apiGroups": ["apis.kcp.io"], "resources": ["apiexports/content"],
                              "resourceNames": ["widgets"], "verbs": ["list", "watch"]})
    assert rbac.decide(BOB, judged(view_context("list")).info).allowed
    assert rbac.decide(BOB, judged(view_context("watch", "first")).info).allowed
    assert not rbac.decide(BOB, judged(view_context("list", export="gadgets")).info).allowed  # another export
    plain = view_context("list")
    plain.export = None
    assert judged(plain) is plain  # any other request is judged as itself


def test_a_claimed_resource_is_served_for_the_consumers_that_accepted_the_claim_only(apis: BoundAPIs) -> None:
    views = ExportViews(apis)
    apis._observe(claiming("first", ("", "configmaps")), False)
    apis._observe(bound("second"), False)  # bound, but accepted no claim
    configmaps = views.resource("provider", "widgets", "first", "", "v1", "configmaps")
    assert configmaps is not None and (configmaps.plural, configmaps.identity) == ("configmaps", "")
    assert views.resource("provider", "widgets", "second", "", "v1", "configmaps") is None
    assert views.resource("provider", "widgets", "first", "", "v1", "secrets") is None  # not claimed: not in reach
    assert views.resource("provider", "widgets", "*", "", "v1", "configmaps") is configmaps
    assert [(r.group, r.plural) for r in views.resources("provider", "widgets")] == [
        ("example.io", "widgets"), ("", "configmaps")]  # discovery lists the claimed resource after the export's
    shown = views.shows("provider", "widgets", configmaps)
    assert [shown(widget(c)) for c in ("first", "second", "third")] == [True, False, False]
    apis._observe(bound("first"), False)  # the claim rejected later: its objects leave the view at once
    assert shown(widget("first")) is False
    assert views.resource("provider", "widgets", "*", "", "v1", "configmaps") is None

