"""kubeproto must read and write kube's protobuf bodies as kube's Go code does.

The messages under test are built independently of the module: the test
declares a proto2 subset of kube's generated.proto files (same field numbers),
compiles it with grpc_tools.protoc, fills messages with the generated classes
and wraps them in the ``k8s\\x00`` + runtime.Unknown envelope.  Bodies that
kubectl v1.32 really sent are checked byte for byte, and, when kubectl is
installed, captured live and compared with ``kubectl ... --dry-run=client -o
json``.
"""

from __future__ import annotations

import base64
import copy
import http.server
import importlib.util
import json
import os
import shutil
import subprocess
import threading
import types
from pathlib import Path
from typing import Any

import pytest
from grpc_tools import protoc  # test-only dependency: grpcio-tools

from kcp_apiserver.apimachinery import kubeproto
from kcp_apiserver.apimachinery.status import APIError

# Field numbers from k8s.io/apimachinery/pkg/runtime, .../apis/meta/v1,
# k8s.io/api/{core,coordination,rbac,events}/v1 generated.proto.
KUBE_SUBSET = """
syntax = "proto2";
package kubetest;

message TypeMeta { optional string apiVersion = 1; optional string kind = 2; }
message Unknown {
  optional TypeMeta typeMeta = 1;
  optional bytes raw = 2;
  optional string contentEncoding = 3;
  optional string contentType = 4;
}

message Time { optional int64 seconds = 1; optional int32 nanos = 2; }
message FieldsV1 { optional bytes Raw = 1; }
message ManagedFieldsEntry {
  optional string manager = 1;
  optional string operation = 2;
  optional string apiVersion = 3;
  optional Time time = 4;
  optional string fieldsType = 6;
  optional FieldsV1 fieldsV1 = 7;
  optional string subresource = 8;
}
message OwnerReference {
  optional string kind = 1;
  optional string name = 3;
  optional string uid = 4;
  optional string apiVersion = 5;
  optional bool controller = 6;
  optional bool blockOwnerDeletion = 7;
}
message ObjectMeta {
  optional string name = 1;
  optional string generateName = 2;
  optional string namespace = 3;
  optional string selfLink = 4;
  optional string uid = 5;
  optional string resourceVersion = 6;
  optional int64 generation = 7;
  optional Time creationTimestamp = 8;
  optional Time deletionTimestamp = 9;
  optional int64 deletionGracePeriodSeconds = 10;
  map<string, string> labels = 11;
  map<string, string> annotations = 12;
  repeated OwnerReference ownerReferences = 13;
  repeated string finalizers = 14;
  repeated ManagedFieldsEntry managedFields = 17;
}
message LabelSelectorRequirement {
  optional string key = 1;
  optional string operator = 2;
  repeated string values = 3;
}
message LabelSelector {
  map<string, string> matchLabels = 1;
  repeated LabelSelectorRequirement matchExpressions = 2;
}
message Preconditions { optional string uid = 1; optional string resourceVersion = 2; }
message DeleteOptions {
  optional int64 gracePeriodSeconds = 1;
  optional Preconditions preconditions = 2;
  optional bool orphanDependents = 3;
  optional string propagationPolicy = 4;
  repeated string dryRun = 5;
}

message NamespaceCondition {
  optional string type = 1;
  optional string status = 2;
  optional Time lastTransitionTime = 4;
  optional string reason = 5;
  optional string message = 6;
}
message NamespaceSpec { repeated string finalizers = 1; }
message NamespaceStatus { optional string phase = 1; repeated NamespaceCondition conditions = 2; }
message Namespace {
  optional ObjectMeta metadata = 1;
  optional NamespaceSpec spec = 2;
  optional NamespaceStatus status = 3;
}
message ConfigMap {
  optional ObjectMeta metadata = 1;
  map<string, string> data = 2;
  map<string, bytes> binaryData = 3;
  optional bool immutable = 4;
}
message Secret {
  optional ObjectMeta metadata = 1;
  map<string, bytes> data = 2;
  optional string type = 3;
  map<string, string> stringData = 4;
  optional bool immutable = 5;
}
message ObjectReference {
  optional string kind = 1;
  optional string namespace = 2;
  optional string name = 3;
  optional string uid = 4;
  optional string apiVersion = 5;
  optional string resourceVersion = 6;
  optional string fieldPath = 7;
}
message LocalObjectReference { optional string name = 1; }
message ServiceAccount {
  optional ObjectMeta metadata = 1;
  repeated ObjectReference secrets = 2;
  repeated LocalObjectReference imagePullSecrets = 3;
  optional bool automountServiceAccountToken = 4;
}
message EventSource { optional string component = 1; optional string host = 2; }
message EventSeries { optional int32 count = 1; optional Time lastObservedTime = 2; }
message Event {
  optional ObjectMeta metadata = 1;
  optional ObjectReference involvedObject = 2;
  optional string reason = 3;
  optional string message = 4;
  optional EventSource source = 5;
  optional Time firstTimestamp = 6;
  optional Time lastTimestamp = 7;
  optional int32 count = 8;
  optional string type = 9;
  optional Time eventTime = 10;
  optional EventSeries series = 11;
  optional string action = 12;
  optional ObjectReference related = 13;
  optional string reportingComponent = 14;
  optional string reportingInstance = 15;
}
message EventsV1Event {
  optional ObjectMeta metadata = 1;
  optional Time eventTime = 2;
  optional EventSeries series = 3;
  optional string reportingController = 4;
  optional string reportingInstance = 5;
  optional string action = 6;
  optional string reason = 7;
  optional ObjectReference regarding = 8;
  optional ObjectReference related = 9;
  optional string note = 10;
  optional string type = 11;
  optional EventSource deprecatedSource = 12;
  optional Time deprecatedFirstTimestamp = 13;
  optional Time deprecatedLastTimestamp = 14;
  optional int32 deprecatedCount = 15;
}

message LeaseSpec {
  optional string holderIdentity = 1;
  optional int32 leaseDurationSeconds = 2;
  optional Time acquireTime = 3;
  optional Time renewTime = 4;
  optional int32 leaseTransitions = 5;
  optional string strategy = 6;
  optional string preferredHolder = 7;
}
message Lease { optional ObjectMeta metadata = 1; optional LeaseSpec spec = 2; }

message PolicyRule {
  repeated string verbs = 1;
  repeated string apiGroups = 2;
  repeated string resources = 3;
  repeated string resourceNames = 4;
  repeated string nonResourceURLs = 5;
}
message Role { optional ObjectMeta metadata = 1; repeated PolicyRule rules = 2; }
message AggregationRule { repeated LabelSelector clusterRoleSelectors = 1; }
message ClusterRole {
  optional ObjectMeta metadata = 1;
  repeated PolicyRule rules = 2;
  optional AggregationRule aggregationRule = 3;
}
message Subject {
  optional string kind = 1;
  optional string apiGroup = 2;
  optional string name = 3;
  optional string namespace = 4;
}
message RoleRef { optional string apiGroup = 1; optional string kind = 2; optional string name = 3; }
message RoleBinding {
  optional ObjectMeta metadata = 1;
  repeated Subject subjects = 2;
  optional RoleRef roleRef = 3;
}

// Namespace with an extra field kube does not have: decoders must skip it.
message NamespaceWithExtras {
  optional ObjectMeta metadata = 1;
  optional string future = 99;
  optional fixed64 futureFixed = 100;
  optional fixed32 futureFixed32 = 101;
  optional int64 futureVarint = 102;
}
"""

RBAC = "rbac.authorization.k8s.io/v1"

# 2024-05-06T07:08:09Z
T_SECONDS = 1714979289


@pytest.fixture(scope="module")
def pb(tmp_path_factory: pytest.TempPathFactory) -> types.ModuleType:
    workdir = tmp_path_factory.mktemp("kubeproto")
    (workdir / "kube_subset.proto").write_text(KUBE_SUBSET)
    well_known = Path(protoc.__file__).parent / "_proto"
    status = protoc.main(["protoc", f"-I{workdir}", f"-I{well_known}", f"--python_out={workdir}",
                          str(workdir / "kube_subset.proto")])
    assert status == 0, "protoc failed to compile the kube subset"
    spec = importlib.util.spec_from_file_location("kube_subset_pb2", workdir / "kube_subset_pb2.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def envelope(pb: types.ModuleType, api_version: str, kind: str, message: Any) -> bytes:
    unknown = pb.Unknown(typeMeta=pb.TypeMeta(apiVersion=api_version, kind=kind),
                         raw=message.SerializeToString(), contentEncoding="", contentType="")
    return b"k8s\x00" + unknown.SerializeToString()


def t(pb: types.ModuleType, seconds: int, nanos: int | None = None) -> Any:
    stamp = pb.Time(seconds=seconds)
    if nanos is not None:
        stamp.nanos = nanos
    return stamp


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def check_round_trip(obj: dict[str, Any]) -> None:
    """encode -> decode gives the input back, and encoding is stable."""
    encoded = kubeproto.encode(obj)
    assert encoded.startswith(b"k8s\x00")
    decoded = kubeproto.decode(encoded)
    assert decoded == obj
    assert kubeproto.encode(decoded) == encoded


# ------------------------------------------------------------------- decoding


def test_namespace(pb: types.ModuleType) -> None:
    ns = pb.Namespace(
        metadata=pb.ObjectMeta(name="team-a", labels={"env": "prod", "tier": ""}),
        spec=pb.NamespaceSpec(finalizers=["kubernetes"]),
        status=pb.NamespaceStatus(phase="Active", conditions=[pb.NamespaceCondition(
            type="NamespaceDeletionDiscoveryFailure", status="False",
            lastTransitionTime=t(pb, T_SECONDS), reason="ResourcesDiscovered", message="All resources")]),
    )
    obj = kubeproto.decode(envelope(pb, "v1", "Namespace", ns))
    assert obj == {
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "team-a", "labels": {"env": "prod", "tier": ""}, "creationTimestamp": None},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active", "conditions": [{
            "type": "NamespaceDeletionDiscoveryFailure", "status": "False",
            "lastTransitionTime": "2024-05-06T07:08:09Z", "reason": "ResourcesDiscovered",
            "message": "All resources"}]},
    }
    assert list(obj)[:2] == ["apiVersion", "kind"]
    check_round_trip(obj)


def test_minimal_namespace_gets_kube_json_shape(pb: types.ModuleType) -> None:
    # Go structs: spec/status are values (always in JSON), creationTimestamp a zero Time (null).
    obj = kubeproto.decode(envelope(pb, "v1", "Namespace", pb.Namespace(metadata=pb.ObjectMeta(name="x"))))
    assert obj == {"apiVersion": "v1", "kind": "Namespace",
                   "metadata": {"name": "x", "creationTimestamp": None}, "spec": {}, "status": {}}


def test_object_meta(pb: types.ModuleType) -> None:
    fields = {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}, "f:data": {"f:k": {}}}
    meta = pb.ObjectMeta(
        name="cm", generateName="cm-", namespace="default", uid="1234-abcd", resourceVersion="42",
        generation=9_007_199_254_740_993, creationTimestamp=t(pb, T_SECONDS, 999_999_999),
        deletionTimestamp=t(pb, T_SECONDS + 30), deletionGracePeriodSeconds=0,
        labels={"app": "web"}, annotations={"note": "héllo", "empty": ""},
        ownerReferences=[
            pb.OwnerReference(apiVersion="apps/v1", kind="ReplicaSet", name="rs", uid="u-1",
                              controller=True, blockOwnerDeletion=False),
            pb.OwnerReference(apiVersion="v1", kind="Pod", name="p", uid=""),
        ],
        finalizers=["a/b", "c"],
        managedFields=[pb.ManagedFieldsEntry(
            manager="kubectl-create", operation="Update", apiVersion="v1", time=t(pb, T_SECONDS),
            fieldsType="FieldsV1", fieldsV1=pb.FieldsV1(Raw=json.dumps(fields).encode()))],
    )
    obj = kubeproto.decode(envelope(pb, "v1", "ConfigMap", pb.ConfigMap(metadata=meta)))
    assert obj["metadata"] == {
        "name": "cm", "generateName": "cm-", "namespace": "default", "uid": "1234-abcd",
        "resourceVersion": "42", "generation": 9_007_199_254_740_993,
        "creationTimestamp": "2024-05-06T07:08:09Z",  # metav1.Time drops sub-seconds in JSON
        "deletionTimestamp": "2024-05-06T07:08:39Z",
        "deletionGracePeriodSeconds": 0,  # a pointer: present means present, even when 0
        "labels": {"app": "web"}, "annotations": {"note": "héllo", "empty": ""},
        "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u-1",
             "controller": True, "blockOwnerDeletion": False},
            {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": ""},  # no omitempty on these four
        ],
        "finalizers": ["a/b", "c"],
        "managedFields": [{"manager": "kubectl-create", "operation": "Update", "apiVersion": "v1",
                           "time": "2024-05-06T07:08:09Z", "fieldsType": "FieldsV1", "fieldsV1": fields}],
    }
    check_round_trip(obj)


def test_configmap_data_and_binary_data(pb: types.ModuleType) -> None:
    cm = pb.ConfigMap(metadata=pb.ObjectMeta(name="cfg", namespace="ns"),
                      data={"a.txt": "hello\nworld", "empty": ""},
                      binaryData={"blob": b"\x00\xff\xfe binary", "none": b""}, immutable=False)
    obj = kubeproto.decode(envelope(pb, "v1", "ConfigMap", cm))
    assert obj == {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cfg", "namespace": "ns", "creationTimestamp": None},
        "immutable": False,
        "data": {"a.txt": "hello\nworld", "empty": ""},
        "binaryData": {"blob": b64(b"\x00\xff\xfe binary"), "none": ""},
    }
    check_round_trip(obj)


def test_secret_data_is_base64(pb: types.ModuleType) -> None:
    secret = pb.Secret(metadata=pb.ObjectMeta(name="s", namespace="ns"),
                       data={"password": b"s3cr3t", "bin": bytes(range(256))},
                       stringData={"plain": "text"}, type="kubernetes.io/basic-auth", immutable=True)
    obj = kubeproto.decode(envelope(pb, "v1", "Secret", secret))
    assert obj == {
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "s", "namespace": "ns", "creationTimestamp": None},
        "immutable": True,
        "data": {"password": "czNjcjN0", "bin": b64(bytes(range(256)))},
        "stringData": {"plain": "text"}, "type": "kubernetes.io/basic-auth",
    }
    check_round_trip(obj)


def test_service_account(pb: types.ModuleType) -> None:
    sa = pb.ServiceAccount(
        metadata=pb.ObjectMeta(name="builder", namespace="ci"),
        secrets=[pb.ObjectReference(name="builder-token", namespace="ci", kind="Secret", fieldPath="")],
        imagePullSecrets=[pb.LocalObjectReference(name="registry"), pb.LocalObjectReference()],
        automountServiceAccountToken=False,
    )
    obj = kubeproto.decode(envelope(pb, "v1", "ServiceAccount", sa))
    assert obj == {
        "apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": "builder", "namespace": "ci", "creationTimestamp": None},
        "secrets": [{"kind": "Secret", "namespace": "ci", "name": "builder-token"}],
        "imagePullSecrets": [{"name": "registry"}, {}],
        "automountServiceAccountToken": False,
    }
    check_round_trip(obj)


def test_role_with_rules(pb: types.ModuleType) -> None:
    role = pb.Role(metadata=pb.ObjectMeta(name="reader", namespace="ns"), rules=[
        pb.PolicyRule(verbs=["get", "list", "watch"], apiGroups=[""], resources=["pods", "pods/log"]),
        pb.PolicyRule(verbs=["get"], apiGroups=["apps"], resources=["deployments"], resourceNames=["web"]),
    ])
    obj = kubeproto.decode(envelope(pb, RBAC, "Role", role))
    assert obj == {
        "apiVersion": RBAC, "kind": "Role",
        "metadata": {"name": "reader", "namespace": "ns", "creationTimestamp": None},
        "rules": [
            {"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["pods", "pods/log"]},
            {"verbs": ["get"], "apiGroups": ["apps"], "resources": ["deployments"], "resourceNames": ["web"]},
        ],
    }
    check_round_trip(obj)


def test_role_binding_subjects_and_role_ref(pb: types.ModuleType) -> None:
    binding = pb.RoleBinding(
        metadata=pb.ObjectMeta(name="read-pods", namespace="ns"),
        subjects=[pb.Subject(kind="User", apiGroup="rbac.authorization.k8s.io", name="jane"),
                  pb.Subject(kind="ServiceAccount", apiGroup="", name="default", namespace="ns")],
        roleRef=pb.RoleRef(apiGroup="rbac.authorization.k8s.io", kind="Role", name="reader"),
    )
    obj = kubeproto.decode(envelope(pb, RBAC, "RoleBinding", binding))
    assert obj == {
        "apiVersion": RBAC, "kind": "RoleBinding",
        "metadata": {"name": "read-pods", "namespace": "ns", "creationTimestamp": None},
        "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "jane"},
                     {"kind": "ServiceAccount", "name": "default", "namespace": "ns"}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
    }
    check_round_trip(obj)
    crb = kubeproto.decode(envelope(pb, RBAC, "ClusterRoleBinding", pb.RoleBinding(
        metadata=pb.ObjectMeta(name="admins"), roleRef=pb.RoleRef(kind="ClusterRole", name="admin"))))
    # roleRef fields have no omitempty: an empty apiGroup stays.
    assert crb["roleRef"] == {"apiGroup": "", "kind": "ClusterRole", "name": "admin"}
    assert "subjects" not in crb
    check_round_trip(crb)


def test_cluster_role_aggregation(pb: types.ModuleType) -> None:
    role = pb.ClusterRole(metadata=pb.ObjectMeta(name="monitoring"), aggregationRule=pb.AggregationRule(
        clusterRoleSelectors=[pb.LabelSelector(
            matchLabels={"rbac.example.com/aggregate-to-monitoring": "true"},
            matchExpressions=[pb.LabelSelectorRequirement(key="tier", operator="In", values=["a", "b"]),
                              pb.LabelSelectorRequirement(key="x", operator="Exists")])]))
    obj = kubeproto.decode(envelope(pb, RBAC, "ClusterRole", role))
    assert obj == {
        "apiVersion": RBAC, "kind": "ClusterRole",
        "metadata": {"name": "monitoring", "creationTimestamp": None},
        "rules": None,  # `json:"rules"`: a nil slice is null, as kube shows for aggregated roles
        "aggregationRule": {"clusterRoleSelectors": [{
            "matchLabels": {"rbac.example.com/aggregate-to-monitoring": "true"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]},
                                 {"key": "x", "operator": "Exists"}]}]},
    }
    check_round_trip(obj)


def test_lease_micro_time(pb: types.ModuleType) -> None:
    lease = pb.Lease(metadata=pb.ObjectMeta(name="kube-scheduler", namespace="kube-system"), spec=pb.LeaseSpec(
        holderIdentity="node-1_abc", leaseDurationSeconds=15,
        acquireTime=t(pb, T_SECONDS, 123_456_789), renewTime=t(pb, T_SECONDS + 1, 5_000),
        leaseTransitions=0))
    obj = kubeproto.decode(envelope(pb, "coordination.k8s.io/v1", "Lease", lease))
    assert obj == {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "kube-scheduler", "namespace": "kube-system", "creationTimestamp": None},
        "spec": {"holderIdentity": "node-1_abc", "leaseDurationSeconds": 15,
                 "acquireTime": "2024-05-06T07:08:09.123456Z",  # truncated, as Go formats it
                 "renewTime": "2024-05-06T07:08:10.000005Z", "leaseTransitions": 0},
    }
    check_round_trip(obj)
    empty = kubeproto.decode(envelope(pb, "coordination.k8s.io/v1", "Lease", pb.Lease()))
    assert empty["spec"] == {}


def test_core_event(pb: types.ModuleType) -> None:
    event = pb.Event(
        metadata=pb.ObjectMeta(name="web.17c", namespace="default"),
        involvedObject=pb.ObjectReference(kind="Pod", namespace="default", name="web", uid="u-9",
                                          apiVersion="v1", resourceVersion="77", fieldPath="spec.containers{web}"),
        reason="Pulled", message="Image pulled", source=pb.EventSource(component="kubelet", host="node-1"),
        firstTimestamp=t(pb, T_SECONDS), lastTimestamp=t(pb, T_SECONDS + 60), count=3, type="Normal",
        eventTime=t(pb, T_SECONDS, 250_000_000), series=pb.EventSeries(count=2, lastObservedTime=t(pb, T_SECONDS)),
        action="Pulling", related=pb.ObjectReference(kind="Node", name="node-1"),
        reportingComponent="kubelet", reportingInstance="node-1",
    )
    obj = kubeproto.decode(envelope(pb, "v1", "Event", event))
    assert obj == {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "web.17c", "namespace": "default", "creationTimestamp": None},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web", "uid": "u-9", "apiVersion": "v1",
                           "resourceVersion": "77", "fieldPath": "spec.containers{web}"},
        "reason": "Pulled", "message": "Image pulled", "source": {"component": "kubelet", "host": "node-1"},
        "firstTimestamp": "2024-05-06T07:08:09Z", "lastTimestamp": "2024-05-06T07:09:09Z", "count": 3,
        "type": "Normal", "eventTime": "2024-05-06T07:08:09.250000Z",
        "series": {"count": 2, "lastObservedTime": "2024-05-06T07:08:09.000000Z"},
        "action": "Pulling", "related": {"kind": "Node", "name": "node-1"},
        "reportingComponent": "kubelet", "reportingInstance": "node-1",
    }
    check_round_trip(obj)
    # A sparse Event: value structs appear, zero times are null, the two
    # reporting fields have no omitempty.
    sparse = kubeproto.decode(envelope(pb, "v1", "Event", pb.Event(metadata=pb.ObjectMeta(name="e"))))
    assert sparse == {
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": "e", "creationTimestamp": None},
        "involvedObject": {}, "source": {}, "firstTimestamp": None, "lastTimestamp": None, "eventTime": None,
        "reportingComponent": "", "reportingInstance": "",
    }
    check_round_trip(sparse)


def test_events_v1_event(pb: types.ModuleType) -> None:
    event = pb.EventsV1Event(
        metadata=pb.ObjectMeta(name="ev", namespace="default"), eventTime=t(pb, T_SECONDS, 1_000),
        series=pb.EventSeries(count=0, lastObservedTime=t(pb, T_SECONDS)),
        reportingController="example.com/ctrl", reportingInstance="ctrl-1", action="Scale", reason="Scaled",
        regarding=pb.ObjectReference(kind="Deployment", name="web", apiVersion="apps/v1"),
        note="scaled to 3", type="Normal", deprecatedCount=0)
    obj = kubeproto.decode(envelope(pb, "events.k8s.io/v1", "Event", event))
    assert obj == {
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "ev", "namespace": "default", "creationTimestamp": None},
        "eventTime": "2024-05-06T07:08:09.000001Z",
        "series": {"count": 0, "lastObservedTime": "2024-05-06T07:08:09.000000Z"},
        "reportingController": "example.com/ctrl", "reportingInstance": "ctrl-1", "action": "Scale",
        "reason": "Scaled", "regarding": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
        "note": "scaled to 3", "type": "Normal", "deprecatedSource": {},
        "deprecatedFirstTimestamp": None, "deprecatedLastTimestamp": None,
    }
    check_round_trip(obj)


@pytest.mark.parametrize("api_version", ["v1", "meta.k8s.io/v1", RBAC])
def test_delete_options(pb: types.ModuleType, api_version: str) -> None:
    opts = pb.DeleteOptions(gracePeriodSeconds=0, preconditions=pb.Preconditions(uid="u-1"),
                            propagationPolicy="Foreground", dryRun=["All"])
    obj = kubeproto.decode(envelope(pb, api_version, "DeleteOptions", opts))
    assert obj == {"apiVersion": api_version, "kind": "DeleteOptions", "gracePeriodSeconds": 0,
                   "preconditions": {"uid": "u-1"}, "propagationPolicy": "Foreground", "dryRun": ["All"]}
    check_round_trip(obj)


def test_negative_and_large_integers(pb: types.ModuleType) -> None:
    meta = pb.ObjectMeta(name="n", generation=-5, deletionGracePeriodSeconds=-(2**63))
    obj = kubeproto.decode(envelope(pb, "v1", "ConfigMap", pb.ConfigMap(metadata=meta)))
    assert obj["metadata"]["generation"] == -5
    assert obj["metadata"]["deletionGracePeriodSeconds"] == -(2**63)
    lease = pb.Lease(spec=pb.LeaseSpec(leaseDurationSeconds=-1, leaseTransitions=2**31 - 1))
    spec = kubeproto.decode(envelope(pb, "coordination.k8s.io/v1", "Lease", lease))["spec"]
    assert spec == {"leaseDurationSeconds": -1, "leaseTransitions": 2**31 - 1}
    check_round_trip(obj)


def test_unknown_fields_are_skipped(pb: types.ModuleType) -> None:
    extra = pb.NamespaceWithExtras(metadata=pb.ObjectMeta(name="x"), future="?", futureFixed=7,
                                   futureFixed32=9, futureVarint=-1)
    obj = kubeproto.decode(envelope(pb, "v1", "Namespace", extra))
    assert obj["metadata"] == {"name": "x", "creationTimestamp": None}


def test_default_kind_for_an_envelope_without_one(pb: types.ModuleType) -> None:
    body = envelope(pb, "", "", pb.Namespace(metadata=pb.ObjectMeta(name="x")))
    assert kubeproto.decode(body, api_version="v1", kind="Namespace")["metadata"]["name"] == "x"
    with pytest.raises(APIError) as err:
        kubeproto.decode(body)
    assert err.value.code == 400


# ------------------------------------------------------- encoding, cross-checked


def test_encoded_bytes_parse_with_protoc_classes(pb: types.ModuleType) -> None:
    obj = {
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "s", "namespace": "ns", "labels": {"b": "2", "a": "1"},
                     "creationTimestamp": "2024-05-06T09:08:09+02:00",
                     "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "uid": "u"}]},
        "data": {"k": b64(b"\x01\x02")}, "type": "Opaque", "immutable": False,
    }
    body = kubeproto.encode(obj)
    unknown = pb.Unknown()
    unknown.ParseFromString(body[4:])
    assert (unknown.typeMeta.apiVersion, unknown.typeMeta.kind) == ("v1", "Secret")
    assert unknown.HasField("contentEncoding") and unknown.contentEncoding == ""
    secret = pb.Secret()
    secret.ParseFromString(unknown.raw)
    assert secret.metadata.name == "s" and secret.metadata.namespace == "ns"
    assert dict(secret.metadata.labels) == {"a": "1", "b": "2"}
    assert secret.metadata.creationTimestamp.seconds == T_SECONDS
    assert secret.metadata.ownerReferences[0].uid == "u"
    assert dict(secret.data) == {"k": b"\x01\x02"}
    assert secret.type == "Opaque"
    assert secret.HasField("immutable") and secret.immutable is False
    # gogo writes value (non-pointer) fields even when empty, as kubectl does.
    assert secret.metadata.HasField("generateName") and secret.metadata.generateName == ""
    assert not secret.metadata.HasField("deletionTimestamp")
    assert kubeproto.decode(body)["metadata"]["creationTimestamp"] == "2024-05-06T07:08:09Z"

    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
             "spec": {"renewTime": "2024-05-06T07:08:09.123456Z", "leaseTransitions": 0}}
    parsed = pb.Lease()
    unknown.ParseFromString(kubeproto.encode(lease)[4:])
    parsed.ParseFromString(unknown.raw)
    assert (parsed.spec.renewTime.seconds, parsed.spec.renewTime.nanos) == (T_SECONDS, 123_456_000)
    assert parsed.spec.HasField("leaseTransitions") and not parsed.spec.HasField("holderIdentity")


def test_round_trip_lists_and_status() -> None:
    items = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "creationTimestamp": None},
              "data": {"x": "1"}}]
    cm_list = {"apiVersion": "v1", "kind": "ConfigMapList",
               "metadata": {"resourceVersion": "10", "continue": "abc", "remainingItemCount": 3},
               "items": [{k: v for k, v in item.items() if k not in ("apiVersion", "kind")} for item in items]}
    check_round_trip(cm_list)
    status = {"apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure",
              "message": 'namespaces "x" not found', "reason": "NotFound",
              "details": {"name": "x", "kind": "namespaces"}, "code": 404}
    check_round_trip(status)


def test_encode_rejects_bad_values() -> None:
    with pytest.raises(ValueError):
        kubeproto.encode({"apiVersion": "v1", "kind": "Pod"})
    with pytest.raises(ValueError):
        kubeproto.encode({"apiVersion": "v1", "kind": "Secret", "data": {"k": "not base64!"}})
    with pytest.raises(ValueError):
        kubeproto.encode({"apiVersion": "v1", "kind": "Namespace", "metadata": {"generation": "1"}})
    with pytest.raises(ValueError):
        kubeproto.encode({"apiVersion": "v1", "kind": "Namespace",
                          "metadata": {"creationTimestamp": "yesterday"}})


# ----------------------------------------------------------------------- errors


def status_of(body: bytes) -> APIError:
    with pytest.raises(APIError) as err:
        kubeproto.decode(body)
    return err.value


def test_bad_magic_is_400() -> None:
    err = status_of(b'{"kind":"Namespace"}')
    assert (err.code, err.reason) == (400, "BadRequest")
    assert "expected prefix [107 56 115 0]" in err.message
    assert status_of(b"").code == 400
    assert status_of(b"k8s\x00").code == 400
    assert status_of(b"k8s").code == 400


def test_truncated_data_is_400(pb: types.ModuleType) -> None:
    body = envelope(pb, "v1", "ConfigMap", pb.ConfigMap(metadata=pb.ObjectMeta(name="x"), data={"a": "b"}))
    for cut in (5, 10, len(body) - 1):
        assert status_of(body[:cut]).code == 400
    # A well-formed envelope whose raw object is truncated.
    raw = pb.ConfigMap(metadata=pb.ObjectMeta(name="x"), data={"a": "b"}).SerializeToString()
    unknown = pb.Unknown(typeMeta=pb.TypeMeta(apiVersion="v1", kind="ConfigMap"), raw=raw[:-2])
    assert status_of(b"k8s\x00" + unknown.SerializeToString()).code == 400
    # Wrong wire type for a known field (varint where metadata belongs).
    unknown.raw = b"\x08\x01"
    assert status_of(b"k8s\x00" + unknown.SerializeToString()).code == 400


def test_unknown_kind_is_400(pb: types.ModuleType) -> None:
    err = status_of(envelope(pb, "v1", "Frobnicator", pb.Namespace()))
    assert err.code == 400
    assert err.message == 'no kind "Frobnicator" is registered for version "v1"'
    assert status_of(envelope(pb, "rbac.authorization.k8s.io/v2", "Role", pb.Role())).code == 400


def test_supports() -> None:
    assert kubeproto.supports("v1", "Namespace")
    assert kubeproto.supports(RBAC, "ClusterRoleBindingList")
    assert kubeproto.supports("apps/v1", "DeleteOptions")
    assert not kubeproto.supports("v1", "Pod")


# ------------------------------------------------------------ what kubectl sends

# Bodies captured from kubectl v1.32.4 (`kubectl create ...` against a recording
# server), with the JSON `kubectl create ... --dry-run=client -o json` prints.
KUBECTL_BODIES = [
    ("6b3873000a0f0a02763112094e616d657370616365121b0a130a03666f6f12001a0022002a003200380042001200"
     "1a020a001a002200",
     {"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": "foo", "creationTimestamp": None},
      "spec": {}, "status": {}}),
    ("6b3873000a0f0a0276311209436f6e6669674d617012250a140a02636d12001a026e7322002a0032003800420012"
     "060a016112016212050a016312001a002200",
     {"kind": "ConfigMap", "apiVersion": "v1",
      "metadata": {"name": "cm", "namespace": "ns", "creationTimestamp": None}, "data": {"a": "b", "c": ""}}),
    ("6b3873000a0c0a0276311206536563726574121f0a130a017312001a026e7322002a0032003800420012060a016b"
     "1201761a001a002200",
     {"kind": "Secret", "apiVersion": "v1",
      "metadata": {"name": "s", "namespace": "ns", "creationTimestamp": None}, "data": {"k": "dg=="}}),
    ("6b3873000a140a027631120e536572766963654163636f756e7412160a140a02736112001a026e7322002a003200"
     "380042001a002200",
     {"kind": "ServiceAccount", "apiVersion": "v1",
      "metadata": {"name": "sa", "namespace": "ns", "creationTimestamp": None}}),
    ("6b3873000a2b0a1c726261632e617574686f72697a6174696f6e2e6b38732e696f2f7631120b526f6c6542696e64"
     "696e671284010a140a02726212001a026e7322002a00320038004200122a0a04557365721219726261632e617574"
     "686f72697a6174696f6e2e6b38732e696f1a05616c6963652200121a0a0e536572766963654163636f756e741200"
     "1a02736122026e731a240a19726261632e617574686f72697a6174696f6e2e6b38732e696f1204526f6c651a0172"
     "1a002200",
     {"kind": "RoleBinding", "apiVersion": RBAC,
      "metadata": {"name": "rb", "namespace": "ns", "creationTimestamp": None},
      "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"},
                   {"kind": "ServiceAccount", "name": "sa", "namespace": "ns"}],
      "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"}}),
    ("6b3873000a320a1c726261632e617574686f72697a6174696f6e2e6b38732e696f2f76311212436c757374657252"
     "6f6c6542696e64696e6712710a130a0363726212001a0022002a00320038004200122a0a0547726f757012197262"
     "61632e617574686f72697a6174696f6e2e6b38732e696f1a046465767322001a2e0a19726261632e617574686f72"
     "697a6174696f6e2e6b38732e696f120b436c7573746572526f6c651a04766965771a002200",
     {"kind": "ClusterRoleBinding", "apiVersion": RBAC, "metadata": {"name": "crb", "creationTimestamp": None},
      "subjects": [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "devs"}],
      "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"}}),
    ("6b3873000a2b0a1c726261632e617574686f72697a6174696f6e2e6b38732e696f2f7631120b436c757374657252"
     "6f6c6512250a120a02637212001a0022002a00320038004200120f0a036765742a082f6865616c74687a1a002200",
     {"kind": "ClusterRole", "apiVersion": RBAC, "metadata": {"name": "cr", "creationTimestamp": None},
      "rules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]}),
]


@pytest.mark.parametrize("hex_body,expected", KUBECTL_BODIES, ids=[e["kind"] for _, e in KUBECTL_BODIES])
def test_kubectl_bodies(hex_body: str, expected: dict[str, Any]) -> None:
    body = bytes.fromhex(hex_body.replace(" ", ""))
    assert kubeproto.decode(body) == expected
    assert kubeproto.encode(expected) == body  # byte for byte what kubectl's gogo Marshal wrote


def test_round_trip_does_not_mutate_input() -> None:
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "creationTimestamp": None},
           "data": {"z": "1", "a": "2"}}
    before = copy.deepcopy(obj)
    kubeproto.encode(obj)
    assert obj == before


KUBECTL = shutil.which("kubectl") or ("/usr/bin/kubectl" if os.path.exists("/usr/bin/kubectl") else None)

LIVE_COMMANDS = [
    ["create", "namespace", "live-ns"],
    ["create", "configmap", "cm", "-n", "ns", "--from-literal=a=b", "--from-literal=empty="],
    ["create", "secret", "generic", "s", "-n", "ns", "--from-literal=k=v", "--type=Opaque"],
    ["create", "secret", "docker-registry", "reg", "-n", "ns", "--docker-server=r.example.com",
     "--docker-username=u", "--docker-password=p"],
    ["create", "serviceaccount", "sa", "-n", "ns"],
    ["create", "rolebinding", "rb", "-n", "ns", "--clusterrole=view", "--user=alice", "--group=devs",
     "--serviceaccount=ns:sa"],
    ["create", "clusterrolebinding", "crb", "--clusterrole=view", "--group=devs"],
    ["create", "clusterrole", "cr", "--verb=get", "--non-resource-url=/healthz", "--non-resource-url=/livez"],
]


@pytest.fixture()
def recorder() -> Any:
    captured: list[tuple[str, str, bytes]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            if self.command == "POST":
                captured.append((self.path, self.headers.get("Content-Type", ""), body))
                reply = json.dumps(kubeproto.decode(body)).encode()
                self.send_response(201)
            else:
                reply = b'{"kind":"Status","apiVersion":"v1","status":"Failure","code":404}'
                self.send_response(404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        do_GET = do_POST = _answer

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", captured
    server.shutdown()
    server.server_close()


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
@pytest.mark.parametrize("command", LIVE_COMMANDS, ids=[" ".join(c[1:3]) for c in LIVE_COMMANDS])
def test_live_kubectl_capture(recorder: Any, command: list[str], tmp_path: Path) -> None:
    url, captured = recorder
    assert KUBECTL is not None
    env = {**os.environ, "HOME": str(tmp_path), "KUBECONFIG": str(tmp_path / "none")}
    common = [KUBECTL, f"--server={url}", f"--cache-dir={tmp_path / 'cache'}"]
    dry = subprocess.run([*common, *command, "--dry-run=client", "-o", "json"], env=env,
                         capture_output=True, text=True, timeout=60)
    assert dry.returncode == 0, dry.stderr
    expected = json.loads(dry.stdout)
    run = subprocess.run([*common, *command], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert len(captured) == 1
    _, content_type, body = captured[0]
    assert content_type == "application/vnd.kubernetes.protobuf"
    # the wire always carries metadata's creationTimestamp (an empty message when zero); kubectl up to 1.32 shows
    # a zero one as null, 1.33 and later omit it: the same object
    expected["metadata"].setdefault("creationTimestamp", None)
    assert kubeproto.decode(body) == expected
    assert kubeproto.encode(expected) == body
