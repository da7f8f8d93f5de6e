"""Shared APIs decided without a server: what a binding gets (bound, or Ready=False with the reason), the
schemas' validation and storage by identity, and the admission that refuses binding without `bind` and a CRD
of a bound type, and schema evolution (which new schema may replace a bound one; a binding that moves to it or
stays, saying why; the export's condition naming the consumers held back)."""

from __future__ import annotations

import copy
import hashlib
from typing import Any

import pytest

from kcp_apiserver.apiextensions.crd import CRD
from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import RequestContext, RequestInfo, UserInfo
from kcp_apiserver.apis.admission import BindPermission, BoundCRDs, TerminatingBindings
from kcp_apiserver.apis.evolution import incompatibilities
from kcp_apiserver.apis.reconcile_binding import Bind, NotReady, decide, wanted_status
from kcp_apiserver.apis.reconcile_export import bindings_condition, wanted_identity
from kcp_apiserver.apis.schemas import bound_resources, schema_causes
from kcp_apiserver.apis.serving import BoundAPIs
from kcp_apiserver.apis.types import API_BINDING, API_RESOURCE_SCHEMA, identity_hash
from kcp_apiserver.rbac.authorizer import RBACAuthorizer
from kcp_apiserver.rbac.policy import PolicyIndex
from kcp_apiserver.registry.admission import CREATE, Attributes
from kcp_apiserver.registry.builtin import BUILTINS
from kcp_apiserver.registry.catalog import Catalog

BOB = UserInfo("bob", groups=("system:authenticated",))
IDENTITY = identity_hash("provider", "widgets", "uid-1")


def schema(group: str = "example.io", plural: str = "widgets", **props: Any) -> dict[str, Any]:
    return {"metadata": {"name": f"v1.{plural}.{group}", "uid": "schema-uid"},
            "spec": {"group": group, "scope": "Namespaced", "names": {"kind": "Widget", "plural": plural},
                     "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                         "type": "object", "properties": {"spec": {"type": "object", "properties": props}}}}]}}


def binding(path: str = "provider", name: str = "widgets") -> dict[str, Any]:
    return {"metadata": {"name": "b"}, "spec": {"reference": {"export": {"path": path, "name": name}}}}


class Lookups:
    def __init__(self, *, identity: str = IDENTITY, schemas: list[dict[str, Any]] | None = None,
                 claims: dict[tuple[str, str], str] | None = None, crds: tuple[str, ...] = ()) -> None:
        found = schemas if schemas is not None else [schema()]
        listed = [s["metadata"]["name"] for s in found]
        self.exports = {("provider", "widgets"): {"spec": {"latestResourceSchemas": listed},
                                                  "status": {"identityHash": identity} if identity else {}}}
        self.schemas = {("provider", s["metadata"]["name"]): s for s in found}
        self.claims = claims or {}
        self.crds = set(crds)

    def export(self, cluster: str, name: str) -> dict[str, Any] | None:
        return self.exports.get((cluster, name))

    def schema(self, cluster: str, name: str) -> dict[str, Any] | None:
        return self.schemas.get((cluster, name))

    def has_crd(self, cluster: str, name: str) -> bool:
        return name in self.crds

    def claimed_by(self, cluster: str, group: str, resource: str) -> str | None:
        return self.claims.get((group, resource))


def test_a_binding_to_a_ready_export_binds_each_schema_with_the_exports_identity() -> None:
    outcome = decide("consumer", binding(), Lookups(), BUILTINS)
    assert outcome == Bind("provider", [{"group": "example.io", "resource": "widgets", "storageVersions": ["v1"],
                                         "schema": {"name": "v1.widgets.example.io", "UID": "schema-uid",
                                                    "identityHash": IDENTITY}}])
    status = wanted_status({}, outcome)
    assert status["phase"] == "Bound" and status["apiExportClusterName"] == "provider"
    assert [(c["type"], c["status"]) for c in status["conditions"]] == [("Ready", "True"), ("BindingUpToDate", "True")]
    assert wanted_status(status, outcome) == status  # nothing moves when nothing changed


@pytest.mark.parametrize(("case", "lookups", "reason", "message"), [
    ("no export", Lookups(identity=IDENTITY, schemas=[]), "APIExportNotFound",
     'APIExport "missing" not found in workspace "provider"'),
    ("no identity yet", Lookups(identity=""), "APIExportNotReady",
     'APIExport "widgets" of "provider" has no identity yet'),
    ("bound by another binding", Lookups(claims={("example.io", "widgets"): "first"}), "NamingConflict",
     'widgets.example.io is already bound in this workspace by APIBinding "first"'),
    ("a CRD of its own", Lookups(crds=("widgets.example.io",)), "NamingConflict",
     'widgets.example.io is already served in this workspace by CustomResourceDefinition "widgets.example.io"'),
    ("a built-in's storage", Lookups(schemas=[schema("", "configmaps")]), "APIResourceSchemaInvalid",
     'APIResourceSchema "v1.configmaps." cannot be served: the API server stores configmaps itself'),
])
def test_a_binding_that_cannot_be_bound_says_why(case: str, lookups: Lookups, reason: str, message: str) -> None:
    wanted = binding(name="missing") if case == "no export" else binding()
    outcome = decide("consumer", wanted, lookups, BUILTINS)
    assert isinstance(outcome, NotReady)
    assert (outcome.reason, outcome.message) == (reason, message)
    status = wanted_status({}, outcome)
    assert status["phase"] == "Binding"
    assert status["conditions"][0] | {"lastTransitionTime": ""} == {
        "type": "Ready", "status": "False", "reason": reason, "message": message, "lastTransitionTime": ""}


def test_a_missing_schema_is_named() -> None:
    lookups = Lookups()
    lookups.schemas.clear()
    outcome = decide("consumer", binding(), lookups, BUILTINS)
    assert outcome == NotReady("APIResourceSchemaNotFound", 'APIResourceSchema "v1.widgets.example.io" of APIExport '
                                                            '"widgets" not found in workspace "provider"', "provider")


def test_a_bound_binding_stays_bound_when_its_export_goes() -> None:
    bound = wanted_status({}, decide("consumer", binding(), Lookups(), BUILTINS))
    later = wanted_status(bound, NotReady("APIExportNotFound", "gone", "provider"))
    assert later["phase"] == "Bound" and later["boundResources"] == bound["boundResources"]
    assert later["conditions"][0]["status"] == "False"


def test_two_exports_of_one_group_resource_are_stored_apart() -> None:
    other = identity_hash("elsewhere", "widgets", "uid-2")
    (first,) = bound_resources(schema(), IDENTITY, BUILTINS)
    (second,) = bound_resources(schema(), other, BUILTINS)
    assert first.prefix == f"/registry/example.io/widgets:{IDENTITY}/"
    assert second.prefix == f"/registry/example.io/widgets:{other}/"
    assert (first.group, first.plural) == (second.group, second.plural)


def test_a_schema_is_validated_as_a_crd_with_its_own_field_names() -> None:
    assert schema_causes(schema(size={"type": "integer"})) == []
    causes = schema_causes(schema(size={"type": "int"}))
    assert [c.field for c in causes] == ["spec.versions[0].schema.properties[spec].properties[size].type"]
    assert API_RESOURCE_SCHEMA.strategy.validate(schema(size={"type": "int"}))


def test_a_schemas_spec_is_fixed() -> None:
    causes = API_RESOURCE_SCHEMA.strategy.validate_update(schema(size={"type": "string"}), schema())
    assert [(c.field, c.message) for c in causes] == [
        ("spec", "Forbidden: an APIResourceSchema's spec is immutable; publish a new schema instead")]


def test_the_export_a_binding_names_is_fixed() -> None:
    old = binding()
    causes = API_BINDING.strategy.validate_update(binding(name="other"), old)
    assert [(c.field, c.reason) for c in causes] == [("spec.reference", "FieldValueInvalid")]


def bind_attrs(user: UserInfo) -> Attributes:
    ctx = RequestContext(RequestInfo("consumer", "", True, "create", "apis", "apis.kcp.io", "v1alpha1", "",
                                     "apibindings"), user=user)
    return Attributes(ctx, API_BINDING, CREATE, "", "b", binding(), None)


async def test_binding_without_bind_on_the_export_is_forbidden_and_with_it_allowed() -> None:
    index = PolicyIndex()
    plugin = BindPermission(RBACAuthorizer(index))
    with pytest.raises(st.APIError) as refused:
        await plugin.validate(bind_attrs(BOB))
    assert refused.value.code == 403
    assert refused.value.message == (
        'apibindings.apis.kcp.io "b" is forbidden: User "bob" cannot bind APIExport "widgets" of workspace '
        '"provider": binding it needs verb "bind" on apiexports.apis.kcp.io "widgets" there')
    meta = {"name": "binder", "annotations": {"kcp.io/cluster": "provider"}}
    index.observe_cluster_role({"kind": "ClusterRole", "metadata": meta, "rules": [
        {"apiGroups": ["apis.kcp.io"], "resources": ["apiexports"], "resourceNames": ["widgets"],
         "verbs": ["bind"]}]}, False)
    index.observe_binding({"kind": "ClusterRoleBinding", "metadata": meta, "subjects": [
        {"kind": "User", "name": "bob"}], "roleRef": {"kind": "ClusterRole", "name": "binder"}}, False)
    await plugin.validate(bind_attrs(BOB))


async def test_a_crd_of_a_bound_group_resource_is_refused() -> None:
    bound = BoundAPIs(informers=None, catalog=Catalog(BUILTINS))  # type: ignore[arg-type]
    bound.claims["consumer"] = {("example.io", "widgets"): "widgets"}
    plugin = BoundCRDs(CRD.prefix, bound)
    crd = {"metadata": {"name": "widgets.example.io"},
           "spec": {"group": "example.io", "names": {"plural": "widgets", "kind": "Widget"}}}
    ctx = RequestContext(RequestInfo("consumer", "", True, "create"), user=BOB)
    with pytest.raises(st.APIError) as refused:
        await plugin.validate(Attributes(ctx, CRD, CREATE, "", "widgets.example.io", crd, None))
    assert refused.value.code == 409
    assert 'widgets.example.io is bound in this workspace by APIBinding "widgets"' in refused.value.message
    elsewhere = RequestContext(RequestInfo("other", "", True, "create"), user=BOB)
    await plugin.validate(Attributes(elsewhere, CRD, CREATE, "", "widgets.example.io", crd, None))


async def test_a_type_whose_binding_is_being_deleted_takes_no_new_objects() -> None:
    bound = BoundAPIs(informers=None, catalog=Catalog(BUILTINS))  # type: ignore[arg-type]
    bound.claims["consumer"] = {("example.io", "widgets"): "widgets"}
    (res,) = bound_resources(schema(), IDENTITY, BUILTINS)
    plugin = TerminatingBindings(bound)
    ctx = RequestContext(RequestInfo("consumer", "", True, "create"), user=BOB)
    attrs = Attributes(ctx, res, CREATE, "default", "w", {"metadata": {"name": "w"}}, None)
    await plugin.validate(attrs)
    bound.terminating.add(("consumer", "widgets"))
    with pytest.raises(st.APIError) as refused:
        await plugin.validate(attrs)
    assert (refused.value.code, refused.value.message) == (
        405, 'create not allowed while APIBinding "widgets" is being deleted')



def evolved(change: Any = None, name: str = "v2.widgets.example.io", **props: Any) -> dict[str, Any]:
    """`schema()` renamed as its next revision, with `props` in its spec and `change` applied to it."""
    new = schema(**props)
    new["metadata"] = {"name": name, "uid": "schema-uid-2"}
    if change is not None:
        change(new["spec"])
    return new


def spec_of(version: dict[str, Any]) -> dict[str, Any]:
    return version["schema"]["properties"]["spec"]


def two_versions(spec: dict[str, Any]) -> None:
    spec["versions"].append({**copy.deepcopy(spec["versions"][0]), "name": "v2", "storage": False})


@pytest.mark.parametrize(("case", "new"), [
    ("a new field", evolved(color={"type": "string"}, size={"type": "integer"})),
    ("a new version", evolved(two_versions, color={"type": "string"})),
    ("a field kept open", evolved(lambda s: spec_of(s["versions"][0]).update({"x-kubernetes-preserve-unknown-fields": True}))),
])
def test_adding_is_compatible(case: str, new: dict[str, Any]) -> None:
    assert incompatibilities(schema(color={"type": "string"}), new) == []


@pytest.mark.parametrize(("case", "change", "problem"), [
    ("version gone", lambda s: s["versions"][0].update(name="v2"), "version v1 is no longer served"),
    ("version unserved", lambda s: s["versions"][0].update(served=False), "version v1 is no longer served"),
    ("field removed", lambda s: spec_of(s["versions"][0])["properties"].pop("color"),
     "v1: field .spec.color is removed"),
    ("field retyped", lambda s: spec_of(s["versions"][0])["properties"].update(color={"type": "integer"}),
     "v1: field .spec.color changes type from string to integer"),
    ("field required", lambda s: spec_of(s["versions"][0]).update(required=["color"]),
     "v1: field .spec.color becomes required"),
    ("kind", lambda s: s["names"].update(kind="Gadget"), "kind changes from Widget to Gadget"),
    ("scope", lambda s: s.update(scope="Cluster"), "scope changes from Namespaced to Cluster"),
])
def test_what_breaks_a_consumer_is_named(case: str, change: Any, problem: str) -> None:
    assert incompatibilities(schema(color={"type": "string"}), evolved(change, color={"type": "string"})) == [problem]


def bound_on_v1() -> dict[str, Any]:
    """A binding Bound to the export's first schema."""
    bound = binding()
    outcome = decide("consumer", bound, Lookups(schemas=[schema(color={"type": "string"})]), BUILTINS)
    bound["status"] = wanted_status({}, outcome)
    return bound


def test_a_compatible_schema_is_rolled_out_to_a_bound_binding() -> None:
    lookups = Lookups(schemas=[schema(color={"type": "string"}), evolved(color={"type": "string"},
                                                                          size={"type": "integer"})])
    lookups.exports[("provider", "widgets")]["spec"]["latestResourceSchemas"] = ["v2.widgets.example.io"]
    outcome = decide("consumer", bound_on_v1(), lookups, BUILTINS)
    assert isinstance(outcome, Bind) and outcome.held == []
    assert [b["schema"]["name"] for b in outcome.bound_resources] == ["v2.widgets.example.io"]


def test_an_incompatible_schema_leaves_the_binding_on_its_schema_and_says_why() -> None:
    lookups = Lookups(schemas=[schema(color={"type": "string"}), evolved()])  # v2 drops spec.color
    lookups.exports[("provider", "widgets")]["spec"]["latestResourceSchemas"] = ["v2.widgets.example.io"]
    bound = bound_on_v1()
    outcome = decide("consumer", bound, lookups, BUILTINS)
    assert isinstance(outcome, Bind)
    assert outcome.bound_resources == bound["status"]["boundResources"]  # v1, with the export's identity
    assert outcome.bound_resources[0]["schema"]["identityHash"] == IDENTITY
    assert outcome.held == ['widgets.example.io stays on APIResourceSchema "v1.widgets.example.io": '
                            '"v2.widgets.example.io" would break it (v1: field .spec.color is removed)']
    status = wanted_status(bound["status"], outcome)
    up_to_date = next(c for c in status["conditions"] if c["type"] == "BindingUpToDate")
    assert (up_to_date["status"], up_to_date["reason"]) == ("False", "IncompatibleSchema")
    assert next(c for c in status["conditions"] if c["type"] == "Ready")["status"] == "True"


def test_a_type_the_export_stops_offering_stays_bound() -> None:
    lookups = Lookups(schemas=[schema(color={"type": "string"})])
    lookups.exports[("provider", "widgets")]["spec"]["latestResourceSchemas"] = []
    bound = bound_on_v1()
    outcome = decide("consumer", bound, lookups, BUILTINS)
    assert isinstance(outcome, Bind) and outcome.bound_resources == bound["status"]["boundResources"]
    assert outcome.held == ["widgets.example.io stays bound: the export no longer offers it"]


def test_the_export_names_the_consumers_held_back() -> None:
    assert bindings_condition({})[:2] == ("True", "SchemasUpToDate")
    held = {f"root:team-{i:02}": "widgets.example.io stays on ..." for i in range(12)}
    status, reason, message = bindings_condition(held)
    assert (status, reason) == ("False", "IncompatibleSchema")
    assert message.startswith("12 consumer(s) keep their schema, the latest would break them: root:team-00, ")
    assert "root:team-09 and 2 more; widgets.example.io stays on ..." in message


def claim(resource: str, state: str | None = None, group: str = "") -> dict[str, Any]:
    return {"group": group, "resource": resource, "all": True, **({"state": state} if state else {})}


@pytest.mark.parametrize(("answers", "applied", "condition"), [
    ([claim("configmaps", "Accepted"), claim("secrets", "Rejected")], ["configmaps"],
     ("True", "ClaimsApplied", "accepted: configmaps")),
    ([claim("configmaps", "Accepted")], ["configmaps"],
     ("False", "ClaimsPending", "accept or reject in spec.permissionClaims: secrets")),
    ([], [], ("False", "ClaimsPending", "accept or reject in spec.permissionClaims: configmaps, secrets")),
    ([claim("configmaps", "Rejected"), claim("secrets", "Rejected"), claim("widgets", "Accepted", "example.io")], [],
     ("True", "ClaimsApplied", "accepted: none; ignored, the export does not claim them: widgets.example.io")),
])
def test_a_binding_applies_the_export_s_claims_it_accepted(answers: list[dict[str, Any]], applied: list[str],
                                                          condition: tuple[str, str, str]) -> None:
    lookups = Lookups()
    lookups.exports[("provider", "widgets")]["spec"]["permissionClaims"] = [claim("configmaps"), claim("secrets")]
    asking = binding()
    asking["spec"]["permissionClaims"] = answers
    outcome = decide("consumer", asking, lookups, BUILTINS)
    assert isinstance(outcome, Bind)
    status = wanted_status({}, outcome)
    assert [c["resource"] for c in status["exportPermissionClaims"]] == ["configmaps", "secrets"]
    assert [c["resource"] for c in status.get("appliedPermissionClaims", [])] == applied
    found = next(c for c in status["conditions"] if c["type"] == "PermissionClaimsApplied")
    assert (found["status"], found["reason"], found["message"]) == condition
    assert next(c for c in status["conditions"] if c["type"] == "Ready")["status"] == "True"  # bound regardless


def test_a_binding_of_an_export_without_claims_has_no_claims_condition() -> None:
    status = wanted_status({}, decide("consumer", binding(), Lookups(), BUILTINS))
    assert "exportPermissionClaims" not in status and "appliedPermissionClaims" not in status
    assert "PermissionClaimsApplied" not in [c["type"] for c in status["conditions"]]


def test_across_clusters_a_bound_type_is_named_by_its_export_s_identity() -> None:
    """kcp's `<resource>:<identityHash>` under `/clusters/*`: one export's type, never another's or a CRD's."""
    from kcp_apiserver.filters.requestinfo import parse

    info = parse("GET", f"/clusters/*/apis/example.io/v1/widgets:{IDENTITY}", watch_param=False)
    assert (info.resource, info.identity, info.verb) == ("widgets", IDENTITY, "list")
    assert parse("GET", "/clusters/a/apis/example.io/v1/widgets:x", watch_param=False).identity == ""  # `*` only
    other = identity_hash("elsewhere", "widgets", "uid-2")
    catalog = Catalog(BUILTINS)
    (crd,) = bound_resources(schema(), "", BUILTINS)
    (first,) = bound_resources(schema(), IDENTITY, BUILTINS)
    (second,) = bound_resources(schema(), other, BUILTINS)
    catalog.set_crd("a", "widgets.example.io", [crd])
    catalog.set_crd("b", "apibinding:w", [first])
    catalog.set_crd("c", "apibinding:w", [second])
    assert catalog.lookup("*", "example.io", "v1", "widgets", IDENTITY) is first
    assert catalog.lookup("*", "example.io", "v1", "widgets", other) is second
    assert catalog.lookup("*", "example.io", "v1", "widgets") is crd  # no identity: the CRDs' type
    assert catalog.lookup("*", "example.io", "v1", "widgets", "0" * 64) is None
    assert catalog.lookup("*", "", "v1", "configmaps", IDENTITY) is None
    catalog.remove_crd("a", "widgets.example.io")
    assert catalog.lookup("*", "example.io", "v1", "widgets") in (first, second)  # no CRD left: a bound one
    catalog.remove_crd("b", "apibinding:w")
    assert catalog.lookup("*", "example.io", "v1", "widgets", IDENTITY) is None


@pytest.mark.parametrize(("secret", "identity", "reason"), [
    ({"data": {"key": "c2hhcmVk"}}, hashlib.sha256(b"shared").hexdigest(), "IdentityValid"),
    (None, None, "IdentityNotFound"),
    ({"data": {"other": "c2hhcmVk"}}, None, "IdentityInvalid"),
    ({"data": {"key": "not base64!"}}, None, "IdentityInvalid"),
])
async def test_an_export_s_identity_is_the_hash_of_its_secret_s_key(secret: dict[str, Any] | None,
                                                                    identity: str | None, reason: str) -> None:
    async def read(cluster: str, namespace: str, name: str) -> dict[str, Any] | None:
        assert (cluster, namespace, name) == ("provider", "ops", "widgets-identity")
        return secret

    export = {"metadata": {"name": "widgets", "uid": "uid-1"},
              "spec": {"identity": {"secretRef": {"namespace": "ops", "name": "widgets-identity"}}}}
    assert (await wanted_identity("provider", export, read))[:2] == (identity, reason)
    del export["spec"]["identity"]  # no reference: the export's own
    assert (await wanted_identity("provider", export, read))[:2] == (IDENTITY, "IdentityValid")
