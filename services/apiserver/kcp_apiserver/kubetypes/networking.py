"""networking.k8s.io/v1 Ingress and discovery.k8s.io/v1 EndpointSlice validation, as kube's strategies run it."""

from __future__ import annotations

from kcp_apiserver.apimachinery.status import Cause
from kcp_apiserver.apimachinery.validation import invalid, required
from kcp_apiserver.kubetypes import validation as v
from kcp_apiserver.kubetypes.fields import spec
from kcp_apiserver.registry.resource import Obj

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
