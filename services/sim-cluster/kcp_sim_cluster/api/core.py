"""core/v1 types a cluster runs workloads with: Pods (status, binding, eviction, log), Services,
Endpoints, Nodes and PersistentVolumeClaims."""

from __future__ import annotations

import re

from kcp_apiserver.apimachinery.status import Cause
from kcp_apiserver.apimachinery.validation import invalid, required
from kcp_apiserver.registry.builtin.declare import kube_resource
from kcp_apiserver.registry.resource import Obj, Resource
from kcp_sim_cluster.api import columns, defaults, pods
from kcp_sim_cluster.api import validation as v
from kcp_sim_cluster.api.strategy import KubeStrategy, spec

# -- pods ---------------------------------------------------------------------------------------


def _pod_status(pod: Obj) -> None:
    pod["status"] = {"phase": "Pending", "qosClass": defaults.qos_class(spec(pod))}


def validate_pod(pod: Obj) -> list[Cause]:
    return v.pod_spec(pod.get("spec"), "spec")


def validate_pod_update(pod: Obj, old: Obj) -> list[Cause]:
    return v.pod_update(spec(pod), spec(old))


class PodStrategy(KubeStrategy):
    """A pod's spec is fixed once created, but binding sets its nodeName (kube's binding REST writes it
    without the update validation)."""

    def validate_subresource_update(self, subresource: str, obj: Obj, old: Obj) -> list[Cause]:
        if subresource == "binding":
            return self.validate(obj)
        return super().validate_subresource_update(subresource, obj, old)


POD_STRATEGY = PodStrategy(defaults.pod, validate_pod, validate_update=validate_pod_update, on_create=_pod_status)

# -- services -----------------------------------------------------------------------------------


DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
DNS1035_MESSAGE = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
                   "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
                   "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")


def validate_service(svc: Obj) -> list[Cause]:
    s = spec(svc)
    kind = s.get("type") or "ClusterIP"
    causes: list[Cause] = []
    name = str((svc.get("metadata") or {}).get("name") or "")
    if name and len(name) > 63:  # a Service's name is also a DNS label
        causes.append(invalid("metadata.name", name, "must be no more than 63 characters"))
    if name and not DNS1035_LABEL.match(name):
        causes.append(invalid("metadata.name", name, DNS1035_MESSAGE))
    if kind not in v.SERVICE_TYPES:
        causes.append(v.unsupported("spec.type", kind, v.SERVICE_TYPES))
    ports = [p for p in s.get("ports") or [] if isinstance(p, dict)]
    if kind == "ExternalName":
        if not s.get("externalName"):
            causes.append(required("spec.externalName"))
    elif not ports and s.get("clusterIP") != "None":
        causes.append(required("spec.ports"))
    names: set[str] = set()
    for i, port in enumerate(ports):
        path = f"spec.ports[{i}]"
        name = port.get("name") or ""
        if len(ports) > 1 and not name:
            causes.append(required(f"{path}.name"))
        elif name in names:
            causes.append(Cause("FieldValueDuplicate", f'Duplicate value: "{name}"', f"{path}.name"))
        names.add(name)
        number = port.get("port")
        if not isinstance(number, int) or not 0 < number < 65536:
            causes.append(invalid(f"{path}.port", number if number is not None else 0,
                                  "must be between 1 and 65535, inclusive"))
        if port.get("protocol") not in v.PROTOCOLS:
            causes.append(v.unsupported(f"{path}.protocol", port.get("protocol"), v.PROTOCOLS))
        if kind == "ClusterIP" and port.get("nodePort"):
            causes.append(Cause("FieldValueForbidden", "Forbidden: may not be used when `type` is 'ClusterIP'",
                                f"{path}.nodePort"))
    affinity = s.get("sessionAffinity")
    if affinity not in ("None", "ClientIP"):
        causes.append(v.unsupported("spec.sessionAffinity", affinity, ("ClientIP", "None")))
    return causes


SERVICE_STRATEGY = KubeStrategy(defaults.service, validate_service,
                                on_create=lambda svc: svc.__setitem__("status", {"loadBalancer": {}}))

# -- nodes, endpoints, claims -------------------------------------------------------------------


def validate_claim(pvc: Obj) -> list[Cause]:
    s = spec(pvc)
    causes: list[Cause] = []
    if not s.get("accessModes") and not s.get("dataSource"):
        causes.append(required("spec.accessModes", "at least 1 access mode is required"))
    requests = (s.get("resources") or {}).get("requests") if isinstance(s.get("resources"), dict) else None
    if not isinstance(requests, dict) or "storage" not in requests:
        causes.append(required("spec.resources[storage]"))
    return causes


def validate_claim_update(pvc: Obj, old: Obj) -> list[Cause]:
    def fixed(s: Obj) -> Obj:
        out = {k: val for k, val in s.items() if k not in ("resources", "volumeAttributesClassName", "volumeName")}
        return out

    if fixed(spec(pvc)) != fixed(spec(old)):
        return [Cause("FieldValueForbidden", "Forbidden: spec is immutable after creation except "
                                             "resources.requests and volumeAttributesClassName for bound claims",
                      "spec")]
    return []


def _claim_status(pvc: Obj) -> None:
    pvc["status"] = {"phase": "Pending"}


def resources(release: str) -> tuple[Resource, ...]:
    return (
        kube_resource("", "v1", "Pod", "pods", namespaced=True, release=release, short_names=("po",),
                      categories=("all",), has_status=True, strategy=POD_STRATEGY, columns=columns.POD,
                      field_selectors=("spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
                                       "spec.serviceAccountName", "spec.hostNetwork", "status.phase",
                                       "status.podIP", "status.nominatedNodeName"),
                      actions=(pods.BINDING, pods.eviction(pdb_resource(release)), pods.LOG)),
        kube_resource("", "v1", "Service", "services", namespaced=True, release=release, short_names=("svc",),
                      categories=("all",), has_status=True, strategy=SERVICE_STRATEGY, columns=columns.SERVICE),
        kube_resource("", "v1", "Endpoints", "endpoints", namespaced=True, release=release, short_names=("ep",),
                      singular="endpoints", strategy=KubeStrategy(defaults.endpoints), columns=columns.ENDPOINTS),
        kube_resource("", "v1", "Node", "nodes", namespaced=False, release=release, short_names=("no",),
                      has_status=True, strategy=KubeStrategy(defaults.node), columns=columns.NODE,
                      field_selectors=("spec.unschedulable",)),
        kube_resource("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", namespaced=True,
                      release=release, short_names=("pvc",), has_status=True,
                      strategy=KubeStrategy(defaults.persistent_volume_claim, validate_claim,
                                            validate_update=validate_claim_update, on_create=_claim_status),
                      columns=columns.PERSISTENT_VOLUME_CLAIM),
    )


def pdb_resource(release: str) -> Resource:
    from kcp_sim_cluster.api import policy

    return policy.pod_disruption_budgets(release)
