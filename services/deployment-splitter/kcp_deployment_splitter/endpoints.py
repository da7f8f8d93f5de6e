"""Multi-cluster Services: each cluster a Service is placed on gets EndpointSlices for its pods in the others.

A Service in kcp goes to every cluster its namespace's workloads run on (reconcile_dependencies.py), so a pod
on any of them resolves its name. Each cluster's endpoints controller lists only its own pods; the pods of the
others reach kcp as the syncers' mirrors (labelled `state.workload.kcp.io/<source>: Upsync`, with their IP and
Ready condition). From those, kcp keeps per Service and per source cluster one EndpointSlice (the Multi-Cluster
Services API's shape, KEP-1645: labelled `multicluster.kubernetes.io/source-cluster`), placed on every other
cluster the Service is on, where its syncer copies it into the Service's namespace. It is labelled
`kubernetes.io/service-name` with the Service's own name, so that cluster's proxy (kube-proxy, a mesh, the
simulator's data plane) sends the Service's traffic to remote endpoints as to local ones, and managed by
`endpointslice.workload.kcp.io`, which the cluster's own EndpointSlice controller leaves alone. A real cluster
needs a flat network between clusters for those addresses to answer (Submariner, Cilium ClusterMesh, ...).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kcpcommon.keys import ASSIGNMENT_LABEL, STATE_LABEL_PREFIX, STATE_UPSYNC
from kcpcommon.labelselector import selector_matches
from kcpcommon.serviceports import Port, endpoint_ports

from .names import STATE_SYNC, state_label

ENDPOINT_SLICES = ("discovery.k8s.io/v1", "endpointslices")
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"
MANAGED_BY = "endpointslice.workload.kcp.io"
SOURCE_CLUSTER_LABEL = "multicluster.kubernetes.io/source-cluster"

Obj = Mapping[str, Any]


def _meta(obj: Obj) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def selects_pods(service: Obj) -> bool:
    """A Service whose endpoints follow its pods (a selector, not an ExternalName)."""
    spec = service.get("spec") or {}
    return bool(spec.get("selector")) and spec.get("type") != "ExternalName"


def service_targets(service: Obj) -> set[str]:
    """The targets the Service is placed on: its `Sync` state labels and its assignment label."""
    labels = _meta(service).get("labels") or {}
    found = {str(k)[len(STATE_LABEL_PREFIX):] for k, v in labels.items()
             if str(k).startswith(STATE_LABEL_PREFIX) and v == STATE_SYNC}
    if labels.get(ASSIGNMENT_LABEL):
        found.add(str(labels[ASSIGNMENT_LABEL]))
    return found


def source_of(pod: Obj) -> str | None:
    """The cluster a mirrored pod runs on (None: not a syncer's mirror)."""
    for key, value in (_meta(pod).get("labels") or {}).items():
        if str(key).startswith(STATE_LABEL_PREFIX) and value == STATE_UPSYNC:
            return str(key)[len(STATE_LABEL_PREFIX):]
    return None


def selected(service: Obj, pod: Obj) -> bool:
    return selector_matches({"matchLabels": (service.get("spec") or {}).get("selector") or {}},
                            _meta(pod).get("labels") or {})


def _ready(pod: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [] if isinstance(c, Mapping))


def _endpoint(pod: Obj) -> dict[str, Any]:
    meta = _meta(pod)
    terminating = bool(meta.get("deletionTimestamp"))
    ready = _ready(pod)
    endpoint: dict[str, Any] = {
        "addresses": [(pod.get("status") or {}).get("podIP")],
        "conditions": {"ready": ready and not terminating, "serving": ready, "terminating": terminating},
        "targetRef": {"kind": "Pod", "namespace": meta.get("namespace"), "name": meta.get("name")}}
    hostname = (pod.get("spec") or {}).get("hostname")
    if hostname and (pod.get("spec") or {}).get("subdomain"):
        endpoint["hostname"] = hostname
    return endpoint


def endpoint_facts(pod: Obj) -> tuple[Any, ...]:
    """Everything a pod's endpoint shows (its source, address, readiness, ports, labels, going): a status write
    that changes none of it (a container's restart count, a probe time) moves no slice."""
    meta = _meta(pod)
    status = pod.get("status") or {}
    ports = [c.get("ports") for c in (pod.get("spec") or {}).get("containers") or []]
    return (source_of(pod), status.get("podIP"), status.get("phase"), _ready(pod), bool(meta.get("deletionTimestamp")),
            meta.get("labels"), ports, (pod.get("spec") or {}).get("hostname"))


def slice_name(service: str, source: str, index: int = 0) -> str:
    return f"{service}-kcp-{source}" + (f"-{index}" if index else "")


def remote_slices(service: Obj, pods: Iterable[Obj]) -> dict[str, dict[str, Any]]:
    """name -> the EndpointSlice (what kcp holds of it: no uid, no status) for each source cluster of the Service's
    pods, placed on every other target of the Service; none for a source the Service is on alone."""
    if not selects_pods(service):
        return {}
    targets = service_targets(service)
    meta = _meta(service)
    # source -> the pods' ports as they resolve -> endpoints (kube makes one slice per distinct port set)
    groups: dict[str, dict[tuple[Port, ...], list[dict[str, Any]]]] = {}
    for pod in pods:
        source = source_of(pod)
        if source is None or not (pod.get("status") or {}).get("podIP") or not selected(service, pod):
            continue
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        groups.setdefault(source, {}).setdefault(endpoint_ports(service, pod), []).append(_endpoint(pod))
    found: dict[str, dict[str, Any]] = {}
    for source, by_ports in sorted(groups.items()):
        consumers = targets - {source}
        if not consumers:
            continue
        for index, (ports, endpoints) in enumerate(sorted(by_ports.items())):
            name = slice_name(str(meta.get("name")), source, index)
            labels = {SERVICE_NAME_LABEL: meta.get("name"), MANAGED_BY_LABEL: MANAGED_BY,
                      SOURCE_CLUSTER_LABEL: source, **{state_label(t): STATE_SYNC for t in sorted(consumers)}}
            found[name] = {
                "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {"name": name, "namespace": meta.get("namespace"), "labels": labels,
                             "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": meta.get("name"),
                                                  "uid": meta.get("uid"), "controller": True,
                                                  "blockOwnerDeletion": True}]},
                "addressType": "IPv4",
                "endpoints": sorted(endpoints, key=lambda e: (e["addresses"][0], e["targetRef"]["name"])),
                "ports": [{"name": n, "port": p, "protocol": proto} for n, p, proto in ports]}
    return found


def slice_patch(current: Obj, desired: Obj) -> dict[str, Any] | None:
    """The merge patch from `current` (ours, as kcp holds it) to `desired`; None when they agree."""
    labels = _meta(current).get("labels") or {}
    wanted = _meta(desired).get("labels") or {}
    label_changes = {k: v for k, v in wanted.items() if labels.get(k) != v}
    label_changes.update({k: None for k in labels if str(k).startswith(STATE_LABEL_PREFIX) and k not in wanted})
    patch: dict[str, Any] = {}
    if label_changes:
        patch["metadata"] = {"labels": label_changes}
    for field in ("endpoints", "ports"):
        if (current.get(field) or []) != desired[field]:
            patch[field] = desired[field]
    return patch or None
