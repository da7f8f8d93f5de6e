"""core/v1 validation as kube's strategies run it: Pods, Services, PersistentVolumes and their claims."""

from __future__ import annotations

import re

from kcp_apiserver.apimachinery.status import Cause
from kcp_apiserver.apimachinery.validation import forbidden, invalid, required
from kcp_apiserver.kubetypes import validation as v
from kcp_apiserver.kubetypes.fields import spec
from kcp_apiserver.registry.resource import Obj
from kcpcommon.quantity import try_parse_quantity

DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
DNS1035_MESSAGE = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
                   "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
                   "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")


def validate_replication_controller(rc: Obj) -> list[Cause]:
    """An RC's selector is a plain label map; it is checked as the equivalent set-based selector."""
    s = spec(rc)
    selector = s.get("selector")
    as_set_based = {**s, "selector": {"matchLabels": selector} if selector else None}
    return v.replicas(s) + v.selector_and_template(as_set_based, "replicationcontroller")


def validate_pod(pod: Obj) -> list[Cause]:
    return v.pod_spec(pod.get("spec"), "spec")


def validate_pod_update(pod: Obj, old: Obj) -> list[Cause]:
    return v.pod_update(spec(pod), spec(old))


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
        causes += _service_port(port, f"spec.ports[{i}]", kind, several=len(ports) > 1, names=names)
    affinity = s.get("sessionAffinity")
    if affinity not in ("None", "ClientIP"):
        causes.append(v.unsupported("spec.sessionAffinity", affinity, ("ClientIP", "None")))
    return causes


def _service_port(port: Obj, path: str, kind: str, *, several: bool, names: set[str]) -> list[Cause]:
    causes: list[Cause] = []
    name = port.get("name") or ""
    if several and not name:
        causes.append(required(f"{path}.name"))
    elif name in names:
        causes.append(Cause("FieldValueDuplicate", f'Duplicate value: "{name}"', f"{path}.name"))
    names.add(name)
    number = port.get("port")
    if not isinstance(number, int) or not 0 < number < 65536:
        causes.append(invalid(f"{path}.port", number if number is not None else 0, v.PORT_RANGE))
    if port.get("protocol") not in v.PROTOCOLS:
        causes.append(v.unsupported(f"{path}.protocol", port.get("protocol"), v.PROTOCOLS))
    if kind == "ClusterIP" and port.get("nodePort"):
        causes.append(Cause("FieldValueForbidden", "Forbidden: may not be used when `type` is 'ClusterIP'",
                            f"{path}.nodePort"))
    return causes


def validate_claim(pvc: Obj) -> list[Cause]:
    s = spec(pvc)
    causes: list[Cause] = []
    if not s.get("accessModes") and not s.get("dataSource"):
        causes.append(required("spec.accessModes", "at least 1 access mode is required"))
    requests = (s.get("resources") or {}).get("requests") if isinstance(s.get("resources"), dict) else None
    if not isinstance(requests, dict) or "storage" not in requests:
        causes.append(required("spec.resources[storage]"))
    return causes


ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
RECLAIM_POLICIES = ("Delete", "Recycle", "Retain")
VOLUME_MODES = ("Block", "Filesystem")
# the volume sources a PersistentVolume may name (exactly one)
PERSISTENT_VOLUME_SOURCES = (
    "gcePersistentDisk", "awsElasticBlockStore", "hostPath", "glusterfs", "nfs", "rbd", "quobyte", "iscsi",
    "cinder", "cephfs", "fc", "flocker", "flexVolume", "azureFile", "vsphereVolume", "azureDisk",
    "photonPersistentDisk", "portworxVolume", "scaleIO", "local", "storageos", "csi",
)


def validate_persistent_volume(pv: Obj) -> list[Cause]:
    """ValidatePersistentVolumeSpec's checks a client meets: access modes, a storage capacity, a reclaim
    policy and volume mode kube knows, and exactly one volume source."""
    s = spec(pv)
    causes: list[Cause] = []
    modes = s.get("accessModes") or []
    if not modes:
        causes.append(required("spec.accessModes"))
    causes += [v.unsupported("spec.accessModes", m, ACCESS_MODES) for m in modes if m not in ACCESS_MODES]
    given = s.get("capacity")
    capacity: Obj = given if isinstance(given, dict) else {}
    if not capacity:
        causes.append(required("spec.capacity"))
    causes += [v.unsupported("spec.capacity", name, ("storage",)) for name in capacity if name != "storage"]
    storage = try_parse_quantity(capacity.get("storage", 1))
    if storage is not None and storage <= 0:
        causes.append(invalid("spec.capacity[storage]", capacity["storage"], "must be greater than zero"))
    policy = s.get("persistentVolumeReclaimPolicy")
    if policy is not None and policy not in RECLAIM_POLICIES:
        causes.append(v.unsupported("spec.persistentVolumeReclaimPolicy", policy, RECLAIM_POLICIES))
    mode = s.get("volumeMode")
    if mode is not None and mode not in VOLUME_MODES:
        causes.append(v.unsupported("spec.volumeMode", mode, VOLUME_MODES))
    sources = [name for name in PERSISTENT_VOLUME_SOURCES if s.get(name) is not None]
    if not sources:
        causes.append(required("spec", "must specify a volume type"))
    causes += [forbidden(f"spec.{name}", "may not specify more than 1 volume type") for name in sources[1:]]
    return causes


def validate_claim_update(pvc: Obj, old: Obj) -> list[Cause]:
    def fixed(s: Obj) -> Obj:
        return {k: val for k, val in s.items() if k not in ("resources", "volumeAttributesClassName", "volumeName")}

    if fixed(spec(pvc)) != fixed(spec(old)):
        return [Cause("FieldValueForbidden", "Forbidden: spec is immutable after creation except "
                                             "resources.requests and volumeAttributesClassName for bound claims",
                      "spec")]
    return []
