"""Schema negotiation: the lowest common denominator, and the fields an older cluster lacks."""

from __future__ import annotations

from typing import Any

import pytest
from kcp_cluster_controller import controller
from kcp_cluster_controller.controller import SyncTargetReconciler, _Downstream
from kcp_cluster_controller.imports import Importer
from kcp_cluster_controller.negotiation import describe, lowest_common_denominator, missing
from kcp_cluster_controller.physical import ImportedType

from kcpcommon import patchmeta
from kcpcommon.errors import APIAlreadyExistsError, APINotFoundError
from kcpcommon.keys import ObjectKey


def pod_template(container: dict[str, Any]) -> dict[str, Any]:
    containers = {"type": "array", "items": {"type": "object", "properties": container}}
    return {"type": "object", "properties": {
        "spec": {"type": "object", "required": ["template"], "properties": {
            "replicas": {"type": "integer"},
            "template": {"type": "object", "properties": {"spec": {"type": "object", "properties": {
                "containers": containers}}}}}},
        "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}}}


OLD = pod_template({"name": {"type": "string"}, "image": {"type": "string"}})
NEW = pod_template({"name": {"type": "string"}, "image": {"type": "string"},
                    "resizePolicy": {"type": "array", "items": {"type": "object"}}})


def test_the_lowest_common_denominator_keeps_only_the_fields_every_cluster_has() -> None:
    lcd = lowest_common_denominator([NEW, OLD])
    container = lcd["properties"]["spec"]["properties"]["template"]["properties"]["spec"]["properties"][
        "containers"]["items"]["properties"]
    assert set(container) == {"name", "image"}
    assert lcd["properties"]["spec"]["required"] == ["template"]
    assert lowest_common_denominator([NEW, OLD]) == lowest_common_denominator([OLD, NEW])


def test_the_older_cluster_lacks_the_pod_specs_resize_policy_and_the_newer_lacks_nothing() -> None:
    assert missing(NEW, OLD) == ["spec.template.spec.containers[*].resizePolicy"]
    assert missing(OLD, NEW) == []
    assert missing(lowest_common_denominator([NEW, OLD]), OLD) == []


def test_a_type_change_is_named() -> None:
    other = pod_template({"name": {"type": "integer"}, "image": {"type": "string"}})
    (problem,) = missing(OLD, other)
    assert problem.startswith("spec.template.spec.containers[*].name (type string")


def test_preserve_unknown_fields_accepts_anything() -> None:
    assert missing(NEW, {"type": "object", "x-kubernetes-preserve-unknown-fields": True}) == []


def test_describe_names_every_field_up_to_the_limit() -> None:
    assert describe(["a", "b", "c"], limit=2) == "a, b and 1 more"


def merged_containers(list_type: dict[str, Any], key: str = "name") -> dict[str, Any]:
    schema = pod_template({"name": {"type": "string"}, "image": {"type": "string"}})
    containers = schema["properties"]["spec"]["properties"]["template"]["properties"]["spec"]["properties"][
        "containers"]
    containers.update({"x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": key, **list_type})
    return schema


def containers_of(schema: dict[str, Any]) -> dict[str, Any]:
    return schema["properties"]["spec"]["properties"]["template"]["properties"]["spec"]["properties"]["containers"]


def test_patch_strategies_survive_negotiation_where_every_cluster_agrees() -> None:
    new = merged_containers({"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]})
    old = merged_containers({})  # kube 1.25 had no list type on containers, only the patch strategy
    lcd = containers_of(lowest_common_denominator([new, old]))
    assert lcd["x-kubernetes-patch-strategy"] == "merge" and lcd["x-kubernetes-patch-merge-key"] == "name"
    assert "x-kubernetes-list-type" not in lcd and "x-kubernetes-list-map-keys" not in lcd
    both = containers_of(lowest_common_denominator([new, new]))
    assert both["x-kubernetes-list-type"] == "map" and both["x-kubernetes-list-map-keys"] == ["name"]
    differ = containers_of(lowest_common_denominator([new, merged_containers({}, key="image")]))
    assert "x-kubernetes-patch-merge-key" not in differ  # no agreement: the list is replaced whole


async def test_the_published_crd_carries_the_patch_strategies_in_an_annotation_not_its_schema() -> None:
    crds = FakeCRDs()
    importer = Importer(lambda cluster: crds)  # type: ignore[arg-type,return-value]
    importer.set_views("org", "new", {"deployments.apps": view(merged_containers({}))})
    await importer.publish("org", "deployments.apps")
    crd = crds.crds["deployments.apps"]
    containers = containers_of(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    assert not any(k.startswith("x-kubernetes-patch") for k in containers)
    meta = patchmeta.decode(crd["metadata"]["annotations"][patchmeta.PATCH_ANNOTATION])
    assert meta == {"spec.template.spec.containers": {"x-kubernetes-patch-strategy": "merge",
                                                      "x-kubernetes-patch-merge-key": "name"}}
    digest = crd["metadata"]["annotations"]["workload.kcp.io/schema-digest"]
    importer.set_views("org", "new", {"deployments.apps": view(merged_containers({}, key="image"))})
    await importer.publish("org", "deployments.apps")  # only the strategies changed: the CRD is rewritten
    assert crds.crds["deployments.apps"]["metadata"]["annotations"]["workload.kcp.io/schema-digest"] != digest


def view(schema: dict[str, Any]) -> ImportedType:
    return ImportedType(resource="deployments.apps", group="apps", version="v1", kind="Deployment",
                        plural="deployments", singular="deployment", namespaced=True, schema=schema)


class FakeCRDs:
    """The CRD endpoints of one logical cluster, in memory."""

    def __init__(self) -> None:
        self.crds: dict[str, dict[str, Any]] = {}

    def resource(self, *args: Any, **kwargs: Any) -> FakeCRDs:
        return self

    async def get(self, name: str) -> dict[str, Any]:
        from kcpcommon.errors import APINotFoundError

        if name not in self.crds:
            raise APINotFoundError("not found", status=404, reason="NotFound")
        return self.crds[name]

    async def create(self, body: dict[str, Any]) -> dict[str, Any]:
        self.crds[body["metadata"]["name"]] = {**body, "metadata": {**body["metadata"], "resourceVersion": "1"}}
        return body

    async def replace(self, body: dict[str, Any]) -> dict[str, Any]:
        self.crds[body["metadata"]["name"]] = body
        return body

    async def delete(self, name: str) -> dict[str, Any]:
        return self.crds.pop(name)


def published_containers(crds: FakeCRDs) -> set[str]:
    schema = crds.crds["deployments.apps"]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return set(schema["properties"]["spec"]["properties"]["template"]["properties"]["spec"]["properties"][
        "containers"]["items"]["properties"])


async def test_the_importer_narrows_names_the_older_cluster_and_widens_again_when_it_leaves() -> None:
    crds = FakeCRDs()
    importer = Importer(lambda cluster: crds)  # type: ignore[arg-type,return-value]
    importer.set_views("org", "new", {"deployments.apps": view(NEW)})
    verdicts = await importer.publish("org", "deployments.apps")
    assert "resizePolicy" in published_containers(crds) and verdicts["new"].missing == ()
    crd = crds.crds["deployments.apps"]
    assert crd["spec"]["versions"][0]["subresources"]["status"] == {}

    importer.set_views("org", "old", {"deployments.apps": view(OLD)})
    verdicts = await importer.publish("org", "deployments.apps")
    assert published_containers(crds) == {"name", "image"}
    assert verdicts["old"].missing == ("spec.template.spec.containers[*].resizePolicy",)
    assert verdicts["new"].missing == ()

    importer.forget("org", "old")
    verdicts = await importer.publish("org", "deployments.apps")
    assert "resizePolicy" in published_containers(crds) and set(verdicts) == {"new"}

    importer.forget("org", "new")
    assert await importer.publish("org", "deployments.apps") == {}
    assert "deployments.apps" not in crds.crds


async def test_a_hand_made_crd_wins_and_imports_are_checked_against_it() -> None:
    crds = FakeCRDs()
    hand_made = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                 "metadata": {"name": "deployments.apps", "resourceVersion": "7"},
                 "spec": {"group": "apps", "versions": [{"name": "v1", "schema": {"openAPIV3Schema": NEW}}]}}
    crds.crds["deployments.apps"] = hand_made
    importer = Importer(lambda cluster: crds)  # type: ignore[arg-type,return-value]
    importer.set_views("org", "old", {"deployments.apps": view(OLD)})
    verdicts = await importer.publish("org", "deployments.apps")
    assert crds.crds["deployments.apps"] is hand_made
    assert verdicts["old"].hand_made and verdicts["old"].missing == ("spec.template.spec.containers[*].resizePolicy",)
    importer.forget("org", "old")
    await importer.publish("org", "deployments.apps")
    assert crds.crds["deployments.apps"] is hand_made  # never deleted: not ours



class RacingCRDs(FakeCRDs):
    """kcp's CRD endpoints, where another writer creates the CRD between our GET and our POST once."""

    def __init__(self) -> None:
        super().__init__()
        self.race_next_create: dict[str, Any] | None = None

    async def create(self, body: dict[str, Any]) -> dict[str, Any]:
        if self.race_next_create is not None:
            self.crds[body["metadata"]["name"]] = self.race_next_create
            self.race_next_create = None
            raise APIAlreadyExistsError("already exists", status=409, reason="AlreadyExists")
        return await super().create(body)

    async def request(self, method: str, path: str) -> dict[str, Any]:
        raise APINotFoundError("not found", status=404, reason="NotFound")  # kcp serves no Deployments itself


class Factory:
    def __init__(self, crds: RacingCRDs) -> None:
        self.crds = crds

    def dynamic(self, cluster: str | None = None) -> RacingCRDs:
        return self.crds


async def test_a_publish_that_raced_another_writer_is_redone_by_the_retry(monkeypatch: pytest.MonkeyPatch) -> None:
    crds = RacingCRDs()
    schemas = {"old": OLD, "new": NEW}

    async def read_type(client: RacingCRDs, resource: str, *_: object) -> Any:
        return view(schemas[client.name])  # type: ignore[attr-defined]

    monkeypatch.setattr(controller, "read_type", read_type)
    reconciler = SyncTargetReconciler(Factory(crds), None, None, heartbeat_interval=2,  # type: ignore[arg-type]
                                      heartbeat_threshold=8, discovery_interval=3600)

    def downstream(name: str) -> _Downstream:
        client = RacingCRDs()
        client.name = name  # type: ignore[attr-defined]
        return _Downstream(name, Factory(client))  # type: ignore[arg-type]

    old, new = ObjectKey("org", "", "old"), ObjectKey("org", "", "new")
    old_downstream, new_downstream = downstream("old"), downstream("new")
    # the older cluster's reconcile publishes its view while the newer one's GET saw no CRD yet
    await reconciler._import(old, old_downstream, ("deployments.apps",))
    crds.race_next_create = crds.crds.pop("deployments.apps")
    with pytest.raises(Exception, match="appeared meanwhile"):
        await reconciler._import(new, new_downstream, ("deployments.apps",))

    await reconciler._import(new, new_downstream, ("deployments.apps",))  # the controller's retry

    assert published_containers(crds) == {"name", "image"}
    assert crds.crds["deployments.apps"]["metadata"]["annotations"]["workload.kcp.io/imported-from"] == "new,old"
    lacking = reconciler.incompatible_fields(old)
    assert lacking == {"deployments.apps": ["spec.template.spec.containers[*].resizePolicy"]}
    assert reconciler._imports_condition(old)["reason"] == "IncompatibleSchema"
    assert reconciler.incompatible_fields(new) == {}
