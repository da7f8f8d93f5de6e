"""The syncer's pure parts: namespace mapping, the apply body (stripping, provenance), up-to-date and status diffs."""

from __future__ import annotations

import json
from types import SimpleNamespace

from kcpcommon.keys import key_for
from kcpcommon.store import Indexer
from kcpsyncer import downstream_namespace, syncer_finalizer
from kcpsyncer.autoscalers import AUTOSCALERS, Autoscalers
from kcpsyncer.discovery import APIType, split
from kcpsyncer.names import SPEC_HASH_ANNOTATION, namespace_locator, owner
from kcpsyncer.transform import (
    contains,
    downstream_object,
    keep_scale_owners,
    merge_patch,
    scaled_downstream,
    status_patch,
    up_to_date,
)

UPSTREAM = {
    "apiVersion": "v1", "kind": "Service",
    "metadata": {
        "name": "web", "namespace": "default", "uid": "u-1", "resourceVersion": "42", "generation": 3,
        "creationTimestamp": "2026-01-01T00:00:00Z", "managedFields": [{"manager": "kubectl"}],
        "ownerReferences": [{"kind": "Deployment", "name": "x", "uid": "o"}], "finalizers": ["f"],
        "deletionGracePeriodSeconds": 0, "labels": {"app": "web", "workloads.kcp.io/cluster": "east"},
        "annotations": {"kcp.io/cluster": "root:org", "note": "kept",
                        "kubectl.kubernetes.io/last-applied-configuration": "{}"}},
    "spec": {"ports": [{"port": 80}], "selector": {"app": "web"}},
    "status": {"loadBalancer": {}},
}


def body() -> dict:
    return downstream_object(UPSTREAM, api_version="v1", kind="Service", namespace="kcp-x",
                             logical_cluster="root:org", sync_target="east")


def test_namespaces_map_stably_per_logical_cluster_and_namespace() -> None:
    a = downstream_namespace("root:org", "default")
    assert a == downstream_namespace("root:org", "default")  # stable across processes (no salted hash)
    assert a.startswith("kcp-") and len(a) <= 63 and a == a.lower()
    assert a != downstream_namespace("root:other", "default")
    assert a != downstream_namespace("root:org", "prod")
    assert downstream_namespace("a", "bc") != downstream_namespace("ab", "c")  # no ambiguity at the seam
    assert json.loads(namespace_locator("root:org", "default")) == {"logicalCluster": "root:org",
                                                                    "namespace": "default"}


def test_owner_label_value_and_finalizer_are_valid_names() -> None:
    value = owner("root:org", "east")
    assert len(value) <= 63 and value.isalnum()
    assert value != owner("root:org", "west") and value != owner("root:other", "east")
    assert syncer_finalizer("east") == "workload.kcp.io/syncer-east"


def test_server_set_metadata_and_status_are_stripped() -> None:
    meta = body()["metadata"]
    assert set(meta) == {"name", "namespace", "labels", "annotations"}
    assert meta["namespace"] == "kcp-x"
    assert "status" not in body()
    assert "kcp.io/cluster" not in meta["annotations"]
    assert "kubectl.kubernetes.io/last-applied-configuration" not in meta["annotations"]
    assert body()["spec"] == {**UPSTREAM["spec"], "ports": [{"port": 80, "protocol": "TCP"}]}  # kube's default named


def test_provenance_is_kept_in_labels_and_annotations() -> None:
    meta = body()["metadata"]
    assert meta["labels"]["app"] == "web"
    assert meta["labels"]["syncer.kcp.io/owner"] == owner("root:org", "east")
    assert meta["annotations"]["note"] == "kept"
    assert meta["annotations"]["syncer.kcp.io/upstream-cluster"] == "root:org"
    assert meta["annotations"]["syncer.kcp.io/upstream-namespace"] == "default"
    assert meta["annotations"]["syncer.kcp.io/upstream-name"] == "web"


def test_fields_the_physical_cluster_owns_are_never_sent() -> None:
    # the Service's clusterIP is not upstream, so it is not in the apply: server-side apply leaves it alone
    assert "clusterIP" not in body()["spec"]
    assert "type" not in body()["spec"]


def service_body(**spec: object) -> dict:
    upstream = {**UPSTREAM, "spec": {"ports": [{"port": 80, "nodePort": 30080}], "selector": {"app": "web"}, **spec}}
    return downstream_object(upstream, api_version="v1", kind="Service", namespace="kcp-x",
                             logical_cluster="root:org", sync_target="east")


def test_the_addresses_kcp_allocated_a_service_stay_in_kcp() -> None:
    spec = service_body(type="NodePort", clusterIP="10.255.3.4", clusterIPs=["10.255.3.4"], ipFamilies=["IPv4"],
                        ipFamilyPolicy="SingleStack")["spec"]
    assert spec == {"type": "NodePort", "ports": [{"port": 80, "protocol": "TCP"}], "selector": {"app": "web"}}


def test_a_headless_service_stays_headless_and_a_dual_stack_request_goes_down() -> None:
    spec = service_body(clusterIP="None", clusterIPs=["None"], ipFamilies=["IPv4", "IPv6"],
                        ipFamilyPolicy="PreferDualStack")["spec"]
    assert spec["clusterIP"] == "None" and spec["clusterIPs"] == ["None"]
    assert spec["ipFamilies"] == ["IPv4", "IPv6"] and spec["ipFamilyPolicy"] == "PreferDualStack"


def test_ports_without_a_protocol_go_down_with_kubes_default_which_kube_1_20_cannot_apply_without() -> None:
    """kube 1.20 answers an apply whose Service or container port omits `protocol` (a list-map key) with a 500."""
    assert body()["spec"]["ports"] == [{"port": 80, "protocol": "TCP"}]
    assert UPSTREAM["spec"]["ports"] == [{"port": 80}]  # the upstream object is left as it is
    udp = downstream_object({**UPSTREAM, "spec": {"ports": [{"port": 53, "protocol": "UDP"}]}}, api_version="v1",
                            kind="Service", namespace="kcp-x", logical_cluster="root:org", sync_target="east")
    assert udp["spec"]["ports"] == [{"port": 53, "protocol": "UDP"}]
    pod_spec = {"initContainers": [{"name": "i", "ports": [{"containerPort": 1}]}],
                "containers": [{"name": "c", "ports": [{"containerPort": 80}, {"containerPort": 53, "protocol": "UDP"}]}]}
    deployment = downstream_object(
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "default"},
         "spec": {"template": {"spec": pod_spec}}},
        api_version="apps/v1", kind="Deployment", namespace="kcp-x", logical_cluster="root:org", sync_target="east")
    template = deployment["spec"]["template"]["spec"]
    assert template["containers"][0]["ports"] == [{"containerPort": 80, "protocol": "TCP"},
                                                  {"containerPort": 53, "protocol": "UDP"}]
    assert template["initContainers"][0]["ports"] == [{"containerPort": 1, "protocol": "TCP"}]


def test_only_services_lose_their_addresses() -> None:
    other = downstream_object({**UPSTREAM, "apiVersion": "example.com/v1", "kind": "Widget",
                               "spec": {"clusterIP": "1.2.3.4"}}, api_version="example.com/v1", kind="Widget",
                              namespace="kcp-x", logical_cluster="root:org", sync_target="east")
    assert other["spec"] == {"clusterIP": "1.2.3.4"}


def test_the_body_does_not_share_state_with_the_upstream_object() -> None:
    applied = body()
    applied["spec"]["ports"].append({"port": 443})
    assert UPSTREAM["spec"]["ports"] == [{"port": 80}]


def test_up_to_date_tolerates_server_defaults_but_not_edits_or_removed_fields() -> None:
    desired = body()
    live = json.loads(json.dumps(desired))
    live["metadata"].update(uid="d-1", resourceVersion="7")
    live["spec"]["clusterIP"] = "10.0.0.7"  # allocated downstream
    live["spec"]["ports"][0]["protocol"] = "TCP"  # defaulted downstream
    live["status"] = {"loadBalancer": {}}
    assert up_to_date(desired, live)
    assert not up_to_date(desired, None)

    edited = json.loads(json.dumps(live))
    edited["spec"]["selector"] = {"app": "hacked"}
    assert not up_to_date(desired, edited)

    changed_upstream = json.loads(json.dumps(UPSTREAM))
    del changed_upstream["spec"]["selector"]  # a removed field: only the recorded hash tells
    newer = downstream_object(changed_upstream, api_version="v1", kind="Service", namespace="kcp-x",
                              logical_cluster="root:org", sync_target="east")
    assert contains(live["spec"], newer["spec"])
    assert not up_to_date(newer, live)


def test_contains_compares_lists_item_by_item() -> None:
    assert contains({"a": [{"x": 1, "y": 2}]}, {"a": [{"x": 1}]})
    assert not contains({"a": [{"x": 1}, {"x": 2}]}, {"a": [{"x": 1}]})
    assert not contains({"a": [{"x": 2}]}, {"a": [{"x": 1}]})
    assert not contains({"a": "1"}, {"a": 1})


def test_merge_patch_sets_changes_and_nulls_removed_keys() -> None:
    assert merge_patch({"a": 1, "b": {"c": 1, "d": 2}}, {"a": 1, "b": {"c": 2}, "e": [1]}) == {
        "b": {"c": 2, "d": None}, "e": [1]}
    assert merge_patch({"a": 1}, {"a": 1}) == {}


def test_status_patch_is_none_when_unchanged_and_a_diff_otherwise() -> None:
    up = {"status": {"replicas": 2, "readyReplicas": 1, "conditions": [{"type": "A"}]}}
    assert status_patch(up, {"status": dict(up["status"])}) is None
    assert status_patch(up, {"spec": {}}) is None  # no status downstream (yet): nothing to say
    assert status_patch(up, {"status": {"replicas": 2, "readyReplicas": 2}}) == {
        "status": {"readyReplicas": 2, "conditions": None}}
    assert status_patch({}, {"status": {"replicas": 1}}) == {"status": {"replicas": 1}}


def test_resource_names_split_into_plural_and_group() -> None:
    assert split("deployments.apps") == ("deployments", "apps")
    assert split("ingresses.networking.k8s.io") == ("ingresses", "networking.k8s.io")
    assert split("services") == ("services", "")


def test_the_client_library_never_logs_response_bodies_even_at_debug() -> None:
    import logging

    from kcpsyncer import keep_bodies_out_of_logs

    logging.getLogger("kubernetes_asyncio").setLevel(logging.DEBUG)
    keep_bodies_out_of_logs()
    assert not logging.getLogger("kubernetes_asyncio.client.rest").isEnabledFor(logging.DEBUG)


def test_observed_generation_is_translated_to_the_upstream_generation() -> None:
    up = {"metadata": {"generation": 7}, "status": {}}
    down = {"metadata": {"generation": 3, "annotations": {"syncer.kcp.io/spec-hash": "h1"}},
            "status": {"observedGeneration": 3, "readyReplicas": 2}}
    # the downstream controller observed a copy of the current upstream spec: upstream generation
    assert status_patch(up, down, "h1") == {"status": {"observedGeneration": 7, "readyReplicas": 2}}
    # a newer upstream spec not applied (or not observed) yet: not observed upstream either
    assert status_patch(up, down, "h2")["status"]["observedGeneration"] == 3
    behind = {**down, "status": {"observedGeneration": 2, "readyReplicas": 2}}
    assert status_patch(up, behind, "h1")["status"]["observedGeneration"] == 2
    ahead = {"metadata": {"generation": 9, "annotations": {"syncer.kcp.io/spec-hash": "h2"}},
             "status": {"observedGeneration": 9}}
    assert status_patch(up, ahead, "h1")["status"]["observedGeneration"] == 6  # never claims the current one


SCALE_ENTRY = {"manager": "horizontal-pod-autoscaler", "operation": "Update", "apiVersion": "autoscaling/v1",
               "subresource": "scale", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}}
UPDATE_ENTRY = {"manager": "kubectl-edit", "operation": "Update", "apiVersion": "apps/v1",
                "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}}


def deployment(replicas: int, *entries: dict) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default", "managedFields": list(entries)},
            "spec": {"replicas": replicas, "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}}


def test_replicas_set_through_the_scale_subresource_by_another_manager_are_left_out_of_the_apply() -> None:
    assert scaled_downstream(deployment(5, SCALE_ENTRY))
    assert not scaled_downstream(deployment(5, UPDATE_ENTRY))  # a hand edit is repaired, not adopted
    assert not scaled_downstream(deployment(5, {**SCALE_ENTRY, "manager": "kcp-syncer"}))
    assert not scaled_downstream(deployment(5, {**SCALE_ENTRY, "fieldsV1": {"f:status": {}}}))
    assert not scaled_downstream(None)
    upstream = deployment(2)
    kept = downstream_object(upstream, api_version="apps/v1", kind="Deployment", namespace="kcp-x",
                             logical_cluster="root:org", sync_target="east", scaled_downstream=True)
    applied = downstream_object(upstream, api_version="apps/v1", kind="Deployment", namespace="kcp-x",
                                logical_cluster="root:org", sync_target="east")
    assert "replicas" not in kept["spec"] and applied["spec"]["replicas"] == 2
    assert upstream["spec"]["replicas"] == 2  # the cached upstream object is not touched
    # the hash is of what is applied: leaving replicas out is one more apply, then nothing
    assert kept["metadata"]["annotations"][SPEC_HASH_ANNOTATION] != applied["metadata"]["annotations"][
        SPEC_HASH_ANNOTATION]


def test_an_autoscaled_workload_keeps_its_live_replicas_and_a_scaling_changes_nothing_the_syncer_applies() -> None:
    """kube < 1.22 records no scale write: the apply keeps the live replicas (leaving the field out would reset
    it, the syncer's apply owning it), and the hash leaves them out, so each scaling is not one more apply."""
    upstream = deployment(2)

    def down(live: dict | None, **kw: bool) -> dict:
        return downstream_object(upstream, api_version="apps/v1", kind="Deployment", namespace="kcp-x",
                                 logical_cluster="root:org", sync_target="east", live=live, **kw)

    at_5, at_7 = down(deployment(5), autoscaled=True), down(deployment(7), autoscaled=True)
    assert at_5["spec"]["replicas"] == 5 and at_7["spec"]["replicas"] == 7
    assert at_5["metadata"]["annotations"][SPEC_HASH_ANNOTATION] == at_7["metadata"]["annotations"][
        SPEC_HASH_ANNOTATION]
    assert up_to_date(at_7, {**at_7, "status": {"replicas": 7}})
    plain = down(deployment(5))
    assert plain["spec"]["replicas"] == 2  # no autoscaler: kcp's replicas, taken back
    assert plain["metadata"]["annotations"][SPEC_HASH_ANNOTATION] != at_5["metadata"]["annotations"][
        SPEC_HASH_ANNOTATION]
    # kube >= 1.22 recorded the autoscaler's write: it owns the field, which the apply leaves out as before
    assert "replicas" not in down(deployment(5, SCALE_ENTRY), autoscaled=True, scaled_downstream=True)["spec"]
    assert down(None, autoscaled=True)["spec"]["replicas"] == 2  # nothing live yet: created with kcp's



def test_an_apply_carrying_live_replicas_holds_only_on_the_copy_they_were_read_from() -> None:
    """A cache that has not seen the autoscaler's latest scale would put back the replicas it had: the apply
    carries the live copy's resourceVersion, so the cluster answers 409 instead, and the retry reads again."""
    upstream, live = deployment(2), {**deployment(4), "metadata": {**deployment(4)["metadata"],
                                                                   "resourceVersion": "41"}}

    def down(live: dict | None, **kw: bool) -> dict:
        return downstream_object(upstream, api_version="apps/v1", kind="Deployment", namespace="kcp-x",
                                 logical_cluster="root:org", sync_target="east", live=live, **kw)

    carried = down(live, autoscaled=True)
    assert (carried["spec"]["replicas"], carried["metadata"]["resourceVersion"]) == (4, "41")
    assert "resourceVersion" not in down(live)["metadata"]  # kcp's replicas: nothing read to go stale
    assert "resourceVersion" not in down(live, autoscaled=True, scaled_downstream=True)["metadata"]
    assert carried["metadata"]["annotations"][SPEC_HASH_ANNOTATION] == down(
        {**live, "metadata": {**live["metadata"], "resourceVersion": "42"}}, autoscaled=True)["metadata"][
        "annotations"][SPEC_HASH_ANNOTATION]

def test_an_autoscaler_scales_the_workload_its_scale_target_ref_names_in_its_own_namespace() -> None:
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
           "metadata": {"name": "web", "namespace": "kcp-x"},
           "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}}}
    indexer = Indexer(lambda obj: key_for(obj, cluster="east"))
    indexer.upsert(hpa)
    deployments = APIType("apps/v1", "deployments", "Deployment", True, True)
    autoscalers = APIType("autoscaling/v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", True, True)
    types = {AUTOSCALERS: SimpleNamespace(down=autoscalers, down_informer=SimpleNamespace(indexer=indexer)),
             "deployments.apps": SimpleNamespace(down=deployments),
             "statefulsets.apps": SimpleNamespace(down=APIType("apps/v1", "statefulsets", "StatefulSet", True, True))}
    scalers = Autoscalers(types)  # type: ignore[arg-type]
    assert scalers.scale(deployments, "kcp-x", "web")
    assert not scalers.scale(deployments, "kcp-y", "web")  # another namespace's autoscaler
    assert not scalers.scale(deployments, "kcp-x", "api")
    assert not scalers.scale(APIType("apps/v1", "statefulsets", "StatefulSet", True, True), "kcp-x", "web")
    assert scalers.target_key(hpa) == ("deployments.apps", "web")
    assert not Autoscalers({}).scale(deployments, "kcp-x", "web")  # autoscalers not synced: nothing is


def test_the_cache_transform_keeps_only_the_scale_subresources_managed_fields() -> None:
    cached = keep_scale_owners(deployment(5, UPDATE_ENTRY, SCALE_ENTRY))
    assert cached["metadata"]["managedFields"] == [SCALE_ENTRY] and scaled_downstream(cached)
    plain = keep_scale_owners(deployment(5, UPDATE_ENTRY))
    assert "managedFields" not in plain["metadata"]


def test_a_tenants_class_never_becomes_the_physical_clusters_default() -> None:
    def down(obj: dict) -> dict:
        return downstream_object(obj, api_version=obj["apiVersion"], kind=obj["kind"], namespace=None,
                                 logical_cluster="root:org", sync_target="east", name="kcp-x")
    storage = down({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "provisioner": "p", "metadata": {
        "name": "fast", "annotations": {"storageclass.kubernetes.io/is-default-class": "true", "note": "kept"}}})
    assert "storageclass.kubernetes.io/is-default-class" not in storage["metadata"]["annotations"]
    assert storage["metadata"]["annotations"]["note"] == "kept" and storage["metadata"]["name"] == "kcp-x"
    ingress = down({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "spec": {"controller": "c"},
                    "metadata": {"name": "nginx", "annotations": {"ingressclass.kubernetes.io/is-default-class": "true"}}})
    assert "ingressclass.kubernetes.io/is-default-class" not in ingress["metadata"]["annotations"]
    priority = down({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "value": 10,
                     "globalDefault": True, "metadata": {"name": "high"}})
    assert "globalDefault" not in priority and priority["value"] == 10


def test_contains_compares_quantities_by_value() -> None:
    """A real cluster reads `0.5` back as `500m`: the same request, not a change to apply again."""
    live = {"containers": [{"resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "1"}}}]}
    same = {"containers": [{"resources": {"requests": {"cpu": "0.5", "memory": "1024Mi"}, "limits": {"cpu": "1000m"}}}]}
    more = {"containers": [{"resources": {"requests": {"cpu": "0.5"}, "limits": {"cpu": "1200m"}}}]}
    assert contains(live, same)
    assert not contains(live, more)
    assert not contains({"resources": {"requests": {"cpu": "600m"}}}, {"resources": {"requests": {"cpu": "0.5"}}})
    # only quantity maps: elsewhere text is text
    assert not contains({"labels": {"size": "500m"}}, {"labels": {"size": "0.5"}})


def test_merge_patch_leaves_a_quantity_spelt_otherwise() -> None:
    current = {"capacity": {"storage": "1Gi"}, "phase": "Bound"}
    assert merge_patch(current, {"capacity": {"storage": "1024Mi"}, "phase": "Bound"}) == {}
    assert merge_patch(current, {"capacity": {"storage": "2Gi"}, "phase": "Bound"}) == {"capacity": {"storage": "2Gi"}}


def test_a_statefulset_s_claim_templates_stay_as_the_live_copy_has_them() -> None:
    """kube refuses any change to volumeClaimTemplates after create: the mirror's marks go only on a new one."""
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db", "namespace": "default"},
           "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "db"}},
                    "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": "c"}]}},
                    "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["RWO"]}}]}}

    def body(live: dict | None) -> dict:  # type: ignore[type-arg]
        return downstream_object(sts, api_version="apps/v1", kind="StatefulSet", namespace="kcp-x",
                                 logical_cluster="root", sync_target="east", live=live)

    created = body(None)["spec"]["volumeClaimTemplates"][0]
    assert "syncer.kcp.io/owner" in str(created["metadata"]["labels"])  # a new one is marked for the mirror
    unmarked = [{"metadata": {"name": "data"}, "spec": {"accessModes": ["RWO"], "volumeMode": "Filesystem"}}]
    live = {**sts, "spec": {**sts["spec"], "volumeClaimTemplates": unmarked}}
    assert body(live)["spec"]["volumeClaimTemplates"] == unmarked  # made before the marks: left as it is
    assert body(live)["spec"]["template"]["metadata"]["labels"]["app"] == "db"  # the rest still follows kcp
    without = {**sts, "spec": {k: v for k, v in sts["spec"].items() if k != "volumeClaimTemplates"}}
    assert "volumeClaimTemplates" not in body(without)["spec"]  # none can be added either
