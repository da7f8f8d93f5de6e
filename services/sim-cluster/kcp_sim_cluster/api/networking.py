"""networking.k8s.io/v1 Ingresses and discovery.k8s.io/v1 EndpointSlices."""

from __future__ import annotations

from kcp_apiserver.apimachinery.status import Cause
from kcp_apiserver.apimachinery.validation import invalid, required
from kcp_apiserver.registry.builtin.declare import kube_resource
from kcp_apiserver.registry.resource import Obj, Resource
from kcp_sim_cluster.api import columns, defaults
from kcp_sim_cluster.api import validation as v
from kcp_sim_cluster.api.strategy import KubeStrategy, spec

PATH_TYPES = ("Exact", "ImplementationSpecific", "Prefix")
ADDRESS_TYPES = ("FQDN", "IPv4", "IPv6")


def validate_ingress(ing: Obj) -> list[Cause]:
    s = spec(ing)
    causes: list[Cause] = []
    if not s.get("rules") and not s.get("defaultBackend"):
        causes.append(invalid("spec", "", "either `defaultBackend` or `rules` must be specified"))
    for i, rule in enumerate(s.get("rules") or []):
        for j, path in enumerate(((rule or {}).get("http") or {}).get("paths") or []):
            field = f"spec.rules[{i}].http.paths[{j}]"
            kind = (path or {}).get("pathType")
            if not kind:
                causes.append(required(f"{field}.pathType", "pathType must be specified"))
            elif kind not in PATH_TYPES:
                causes.append(v.unsupported(f"{field}.pathType", kind, PATH_TYPES))
            if not (path or {}).get("backend"):
                causes.append(required(f"{field}.backend"))
    return causes


def validate_slice(eps: Obj) -> list[Cause]:
    kind = eps.get("addressType")
    if not kind:
        return [required("addressType")]
    if kind not in ADDRESS_TYPES:
        return [v.unsupported("addressType", kind, ADDRESS_TYPES)]
    return []


def validate_slice_update(eps: Obj, old: Obj) -> list[Cause]:
    if eps.get("addressType") != old.get("addressType"):
        return [invalid("addressType", eps.get("addressType"), v.IMMUTABLE)]
    return []


def resources(release: str) -> tuple[Resource, ...]:
    return (
        kube_resource("networking.k8s.io", "v1", "Ingress", "ingresses", namespaced=True, release=release,
                      short_names=("ing",), has_status=True, tracks_generation=True, columns=columns.INGRESS,
                      strategy=KubeStrategy(validate=validate_ingress,
                                            on_create=lambda o: o.__setitem__("status", {"loadBalancer": {}}))),
        kube_resource("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", namespaced=True,
                      release=release, columns=columns.ENDPOINT_SLICE,
                      strategy=KubeStrategy(defaults.endpoint_slice, validate_slice,
                                            validate_update=validate_slice_update)),
    )
