"""kube's printer columns for imported types, as CRD additionalPrinterColumns.

kube's built-in types print server-side columns (`kubectl get services` shows TYPE, CLUSTER-IP...).
A CRD can only declare columns as JSONPaths, so the columns kube computes from several fields
(a Deployment's READY `8/15`, a Service's PORT(S) `443:32062/TCP`, or its EXTERNAL-IP with every
ingress address: a JSONPath column shows its first match only) cannot be written down: for those kinds
(Deployments, StatefulSets, ReplicaSets, DaemonSets, Services) no columns are declared and kcp's
server prints kube's own. The others get kube's columns where a JSONPath says the same thing.
"""

from __future__ import annotations

from typing import Any

Column = dict[str, Any]


def _col(name: str, path: str, description: str, type_: str = "string", priority: int = 0) -> Column:
    column: Column = {"name": name, "type": type_, "jsonPath": path, "description": description}
    if priority:
        column["priority"] = priority
    return column


AGE = _col("Age", ".metadata.creationTimestamp", "", "date")

COLUMNS: dict[tuple[str, str], list[Column]] = {
    ("", "PersistentVolumeClaim"): [
        _col("Status", ".status.phase", "The phase of the claim"),
        _col("Volume", ".spec.volumeName", "The volume bound to the claim"),
        _col("Capacity", ".status.capacity.storage", "The capacity of the bound volume"),
        _col("Access Modes", ".status.accessModes", "The access modes of the bound volume"),
        _col("StorageClass", ".spec.storageClassName", "The storage class of the claim"),
        AGE,
    ],
    ("batch", "Job"): [
        _col("Completions", ".status.succeeded", "The pods that completed successfully", "integer"),
        _col("Active", ".status.active", "The pods running", "integer", priority=1),
        AGE,
    ],
    ("networking.k8s.io", "Ingress"): [
        _col("Class", ".spec.ingressClassName", "The ingress class"),
        _col("Hosts", ".spec.rules[*].host", "The hosts the rules match"),
        _col("Address", ".status.loadBalancer.ingress[*].ip", "The load balancer's addresses"),
        AGE,
    ],
    ("storage.k8s.io", "StorageClass"): [
        _col("Provisioner", ".provisioner", "The provisioner of the class's volumes"),
        _col("ReclaimPolicy", ".reclaimPolicy", "What becomes of a released volume"),
        _col("VolumeBindingMode", ".volumeBindingMode", "When claims are provisioned and bound"),
        _col("AllowVolumeExpansion", ".allowVolumeExpansion", "Whether claims may grow", "boolean"),
        AGE,
    ],
    ("scheduling.k8s.io", "PriorityClass"): [
        _col("Value", ".value", "The priority of the class's pods", "integer"),
        _col("Global-Default", ".globalDefault", "Whether pods without a class get this one", "boolean"),
        AGE,
        _col("PreemptionPolicy", ".preemptionPolicy", "Whether the class's pods preempt lower ones"),
    ],
    ("networking.k8s.io", "IngressClass"): [
        _col("Controller", ".spec.controller", "The controller that handles the class"),
        _col("Parameters", ".spec.parameters.name", "The resource with the class's parameters"),
        AGE,
    ],
    ("node.k8s.io", "RuntimeClass"): [
        _col("Handler", ".handler", "The runtime handler of the class's pods"),
        AGE,
    ],
}


def printer_columns(group: str, kind: str) -> list[Column] | None:
    """The columns to declare for an imported kind, or None to leave printing to the server."""
    columns = COLUMNS.get((group, kind))
    return [dict(c) for c in columns] if columns else None
