"""kube's own Table columns for the workload kinds that reach kcp as CRDs.

kcp serves Deployments, ReplicaSets, StatefulSets, DaemonSets and Services as CRDs imported from
physical clusters. Cells like READY `8/15` or a Service's PORT(S) `443:32062/TCP` and EXTERNAL-IP
(every ingress address, `<pending>` while there is none) combine fields, which a CRD's JSONPath
printer columns cannot express (kube prints a JSONPath column's first match only), so a CRD of one
of these well-known kinds that declares no printer columns of its own is printed with kube's columns
(pkg/printers/internalversion) instead of NAME and AGE. The simulated cluster serves Services with
the same columns.
"""

from __future__ import annotations

from typing import Any

from kcp_apiserver.registry.builtin.podcolumns import MIRRORED_POD
from kcp_apiserver.registry.resource import Column, Obj
from kcp_apiserver.registry.tables import AGE, NAME


def _status(obj: Obj, field: str) -> int:
    return int((obj.get("status") or {}).get(field) or 0)


def _desired(obj: Obj) -> int:
    replicas = (obj.get("spec") or {}).get("replicas")
    return 1 if replicas is None else int(replicas)  # kube defaults spec.replicas to 1


def _containers(obj: Obj, field: str) -> str:
    pod_spec = (((obj.get("spec") or {}).get("template") or {}).get("spec") or {})
    return ",".join(str(c.get(field, "")) for c in pod_spec.get("containers") or [])


def format_label_selector(selector: Any) -> str:
    """metav1.FormatLabelSelector: `<none>` for an empty selector, else requirements joined by commas."""
    if not isinstance(selector, dict):
        return "<none>"
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key", ""), expr.get("operator", ""), expr.get("values") or []
        if op == "In":
            parts.append(f"{key} in ({','.join(sorted(values))})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({','.join(sorted(values))})")
        elif op == "Exists":
            parts.append(key)
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(parts) or "<none>"


def _int(name: str, description: str, compute) -> Column:  # type: ignore[no-untyped-def]
    return Column(name, "integer", compute, description)


CONTAINERS = Column("Containers", "string", lambda o: _containers(o, "name"),
                    "Names of each container in the template.", priority=1)
IMAGES = Column("Images", "string", lambda o: _containers(o, "image"),
                "Images referenced by each container in the template.", priority=1)
SELECTOR = Column("Selector", "string", lambda o: format_label_selector((o.get("spec") or {}).get("selector")),
                  "Label selector for pods.", priority=1)

DEPLOYMENT = (
    NAME,
    Column("Ready", "string", lambda o: f"{_status(o, 'readyReplicas')}/{_desired(o)}",
           "Number of the pod with ready state"),
    _int("Up-to-date", "Total number of non-terminated pods targeted by this deployment that have the "
         "desired template spec.", lambda o: _status(o, "updatedReplicas")),
    _int("Available", "Total number of available pods (ready for at least minReadySeconds) targeted by "
         "this deployment.", lambda o: _status(o, "availableReplicas")),
    AGE, CONTAINERS, IMAGES, SELECTOR,
)

REPLICA_SET = (
    NAME,
    _int("Desired", "Number of desired pods.", _desired),
    _int("Current", "Number of actual replicas.", lambda o: _status(o, "replicas")),
    _int("Ready", "Number of ready replicas.", lambda o: _status(o, "readyReplicas")),
    AGE, CONTAINERS, IMAGES, SELECTOR,
)

STATEFUL_SET = (
    NAME,
    Column("Ready", "string", lambda o: f"{_status(o, 'readyReplicas')}/{_desired(o)}",
           "Number of the pod with ready state"),
    AGE, CONTAINERS, IMAGES,
)

DAEMON_SET = (
    NAME,
    _int("Desired", "The total number of nodes that should be running the daemon pod.",
         lambda o: _status(o, "desiredNumberScheduled")),
    _int("Current", "The number of nodes running at least one daemon pod.",
         lambda o: _status(o, "currentNumberScheduled")),
    _int("Ready", "The number of nodes running the daemon pod and ready.", lambda o: _status(o, "numberReady")),
    _int("Up-to-date", "The total number of nodes running the updated daemon pod.",
         lambda o: _status(o, "updatedNumberScheduled")),
    _int("Available", "The number of nodes running the daemon pod and available.",
         lambda o: _status(o, "numberAvailable")),
    Column("Node Selector", "string",
           lambda o: ",".join(f"{k}={v}" for k, v in sorted(
               ((((o.get("spec") or {}).get("template") or {}).get("spec") or {}).get("nodeSelector") or {})
               .items())) or "<none>",
           "The node selector of the daemon pods."),
    AGE, CONTAINERS, IMAGES, SELECTOR,
)


def _service_external_ip(svc: Obj) -> str:
    spec = svc.get("spec") or {}
    service_type = spec.get("type") or "ClusterIP"
    external = [str(ip) for ip in spec.get("externalIPs") or []]
    if service_type == "ExternalName":
        return str(spec.get("externalName") or "<none>")
    if service_type == "LoadBalancer":
        points = ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
        found = [str(p.get("ip") or p.get("hostname")) for p in points if p.get("ip") or p.get("hostname")]
        return ",".join([*found, *external]) or "<pending>"
    return ",".join(external) or "<none>"


def _service_ports(svc: Obj) -> str:
    shown = []
    for port in (svc.get("spec") or {}).get("ports") or []:
        node_port = f":{port['nodePort']}" if port.get("nodePort") else ""
        shown.append(f"{port.get('port')}{node_port}/{port.get('protocol') or 'TCP'}")
    return ",".join(shown) or "<none>"


SERVICE = (
    NAME,
    Column("Type", "string", lambda o: (o.get("spec") or {}).get("type") or "ClusterIP", "The type of the service."),
    Column("Cluster-IP", "string", lambda o: (o.get("spec") or {}).get("clusterIP") or "<none>",
           "The IP address of the service."),
    Column("External-IP", "string", _service_external_ip, "The external IP address of the service."),
    Column("Port(s)", "string", _service_ports, "The ports exposed by the service."),
    AGE,
    Column("Selector", "string", lambda o: ",".join(
        f"{k}={v}" for k, v in sorted(((o.get("spec") or {}).get("selector") or {}).items())) or "<none>",
        "The label selector of the service.", priority=1),
)

KUBE_COLUMNS: dict[tuple[str, str], tuple[Column, ...]] = {
    ("apps", "Deployment"): DEPLOYMENT,
    ("apps", "ReplicaSet"): REPLICA_SET,
    ("apps", "StatefulSet"): STATEFUL_SET,
    ("apps", "DaemonSet"): DAEMON_SET,
    ("", "Service"): SERVICE,
    ("", "Pod"): MIRRORED_POD,  # the pods syncers mirror up (kcpsyncer/upsync.py), with their SyncTarget
}


def kube_columns(group: str, kind: str) -> tuple[Column, ...] | None:
    """kube's columns for a well-known workload kind served as a CRD, or None."""
    return KUBE_COLUMNS.get((group, kind))
