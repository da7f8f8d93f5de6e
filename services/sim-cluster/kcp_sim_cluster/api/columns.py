"""kube's Table columns (pkg/printers/internalversion) for the types a simulated cluster serves beyond
kcp's own: what `kubectl get` and `kubectl get -o wide` show for pods, services, nodes and the rest."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kcp_apiserver.embedding import (
    AGE,
    CONTAINERS,
    IMAGES,
    NAME,
    SELECTOR,
    Column,
    Obj,
    format_label_selector,
    human_duration,
    parse_time,
)
from kcp_apiserver.embedding import POD as POD  # kube's Pod columns, the same kcp prints for its mirrored pods
from kcp_apiserver.embedding import SERVICE as SERVICE  # kube's Service columns, the same kcp prints
from kcp_apiserver.embedding import field_at as _get
from kcp_apiserver.embedding import pod_restarts as pod_restarts
from kcp_apiserver.embedding import pod_status as pod_status
from kcp_apiserver.embedding import wide_column as _wide


def _since(value: str | None) -> str:
    when = parse_time(value)
    return human_duration((datetime.now(UTC) - when).total_seconds()) if when else "<unknown>"


# -- services, endpoints, endpointslices --------------------------------------------------------


def _endpoints_cell(ep: Obj) -> str:
    pairs: list[str] = []
    total = 0
    for subset in ep.get("subsets") or []:
        ips = [a.get("ip", "") for a in subset.get("addresses") or []]
        ports = [p.get("port") for p in subset.get("ports") or []]
        count = len(ips) * max(len(ports), 1)
        total += count
        if len(pairs) < 3:
            pairs += [f"{ip}:{p}" for ip in ips for p in ports] if ports else ips
    if not total:
        return "<none>"
    more = total - min(len(pairs), 3)
    return ",".join(pairs[:3]) + (f" + {more} more..." if more > 0 else "")


ENDPOINTS = (
    NAME,
    Column("Endpoints", "string", _endpoints_cell, "Endpoints of the service."),
    AGE,
)


def _slice_ports(eps: Obj) -> str:
    ports = [str(p.get("port")) for p in eps.get("ports") or [] if p.get("port") is not None]
    return ",".join(ports) if ports else "<unset>"


def _slice_endpoints(eps: Obj) -> str:
    addresses = [a for e in eps.get("endpoints") or [] for a in e.get("addresses") or []]
    if not addresses:
        return "<unset>"
    more = len(addresses) - 3
    return ",".join(addresses[:3]) + (f" + {more} more..." if more > 0 else "")


ENDPOINT_SLICE = (
    NAME,
    Column("AddressType", "string", lambda e: e.get("addressType", ""), "The IP protocol for this slice."),
    Column("Ports", "string", _slice_ports, "The ports of this slice."),
    Column("Endpoints", "string", _slice_endpoints, "The endpoints of this slice."),
    AGE,
)

# -- nodes and claims ---------------------------------------------------------------------------


def node_status(node: Obj) -> str:
    conditions = {c.get("type"): c.get("status") for c in _get(node, "status", "conditions") or []}
    ready = conditions.get("Ready")
    status = ["Ready" if ready == "True" else "NotReady" if ready == "False" else "Unknown"]
    if _get(node, "spec", "unschedulable"):
        status.append("SchedulingDisabled")
    return ",".join(status)


def _node_roles(node: Obj) -> str:
    roles = set()
    for key, value in (_get(node, "metadata", "labels") or {}).items():
        if key.startswith("node-role.kubernetes.io/"):
            roles.add(key.removeprefix("node-role.kubernetes.io/"))
        elif key == "kubernetes.io/role" and value:
            roles.add(value)
    return ",".join(sorted(r for r in roles if r)) or "<none>"


def _node_address(node: Obj, kind: str) -> str:
    found = [a.get("address") for a in _get(node, "status", "addresses") or [] if a.get("type") == kind]
    return found[0] if found else "<none>"


def _node_info(field: str) -> Any:
    return lambda n: _get(n, "status", "nodeInfo", field) or "<unknown>"


NODE = (
    NAME,
    Column("Status", "string", node_status, "The status of the node"),
    Column("Roles", "string", _node_roles, "The roles of the node"),
    AGE,
    Column("Version", "string", lambda n: _get(n, "status", "nodeInfo", "kubeletVersion") or "",
           "Kubelet Version reported by the node."),
    _wide("Internal-IP", lambda n: _node_address(n, "InternalIP"), "List of internal IPs for the node."),
    _wide("External-IP", lambda n: _node_address(n, "ExternalIP"), "List of external IPs for the node."),
    _wide("OS-Image", _node_info("osImage"), "OS image reported by the node from /etc/os-release."),
    _wide("Kernel-Version", _node_info("kernelVersion"), "Kernel version reported by the node from "
          "'uname -r'."),
    _wide("Container-Runtime", _node_info("containerRuntimeVersion"), "Container runtime version reported by "
          "the node through runtime remote API."),
)

ACCESS_MODES = {"ReadWriteOnce": "RWO", "ReadOnlyMany": "ROX", "ReadWriteMany": "RWX", "ReadWriteOncePod": "RWOP"}


def _claim_phase(pvc: Obj) -> str:
    if _get(pvc, "metadata", "deletionTimestamp"):
        return "Terminating"
    return _get(pvc, "status", "phase") or ""


def _claim_modes(pvc: Obj) -> str:
    modes = _get(pvc, "status", "accessModes") or []
    return ",".join(ACCESS_MODES.get(m, m) for m in modes)


def _volume_claim(pv: Obj) -> str:
    ref = _get(pv, "spec", "claimRef") or {}
    return f"{ref.get('namespace', '')}/{ref.get('name', '')}" if ref else ""


def _volume_modes(pv: Obj) -> str:
    return ",".join(ACCESS_MODES.get(m, m) for m in _get(pv, "spec", "accessModes") or [])


PERSISTENT_VOLUME = (
    NAME,
    Column("Capacity", "string", lambda v: _get(v, "spec", "capacity", "storage") or "",
           "The capacity of the volume."),
    Column("Access Modes", "string", _volume_modes, "The access modes of the volume."),
    Column("Reclaim Policy", "string", lambda v: _get(v, "spec", "persistentVolumeReclaimPolicy") or "",
           "What happens to the volume when its claim is released."),
    Column("Status", "string", _claim_phase, "The phase of the volume."),
    Column("Claim", "string", _volume_claim, "The claim bound to the volume."),
    Column("StorageClass", "string", lambda v: _get(v, "spec", "storageClassName") or "",
           "The storage class of the volume."),
    Column("VolumeAttributesClass", "string", lambda v: _get(v, "spec", "volumeAttributesClassName") or "<unset>",
           "The volume attributes class of the volume."),
    Column("Reason", "string", lambda v: _get(v, "status", "reason") or "", "Why the volume is in its phase."),
    AGE,
    _wide("VolumeMode", lambda v: _get(v, "spec", "volumeMode") or "", "The volume mode of the volume."),
)
PERSISTENT_VOLUME_CLAIM = (
    NAME,
    Column("Status", "string", _claim_phase, "The status of the claim."),
    Column("Volume", "string", lambda c: _get(c, "spec", "volumeName") or "", "The volume bound to the claim."),
    Column("Capacity", "string", lambda c: _get(c, "status", "capacity", "storage") or "",
           "The capacity of the bound volume."),
    Column("Access Modes", "string", _claim_modes, "The access modes of the bound volume."),
    Column("StorageClass", "string", lambda c: _get(c, "spec", "storageClassName") or "",
           "The storage class of the claim."),
    Column("VolumeAttributesClass", "string",
           lambda c: _get(c, "status", "currentVolumeAttributesClassName") or "<unset>",
           "The volume attributes class of the claim."),
    AGE,
    _wide("VolumeMode", lambda c: _get(c, "spec", "volumeMode") or "", "The volume mode of the claim."),
)

# -- batch --------------------------------------------------------------------------------------


def _job_completions(job: Obj) -> str:
    succeeded = int(_get(job, "status", "succeeded") or 0)
    completions = _get(job, "spec", "completions")
    if completions is not None:
        return f"{succeeded}/{completions}"
    parallelism = int(_get(job, "spec", "parallelism") or 0)
    return f"{succeeded}/1 of {parallelism}" if parallelism > 1 else f"{succeeded}/1"


def _job_duration(job: Obj) -> str:
    start = parse_time(_get(job, "status", "startTime"))
    if start is None:
        return ""
    end = parse_time(_get(job, "status", "completionTime")) or datetime.now(UTC)
    return human_duration((end - start).total_seconds())


def job_status(job: Obj) -> str:
    conditions = {c.get("type"): c.get("status") for c in _get(job, "status", "conditions") or []}
    for kind, shown in (("Complete", "Complete"), ("Failed", "Failed"), ("FailureTarget", "FailureTarget"),
                        ("SuccessCriteriaMet", "SuccessCriteriaMet")):
        if conditions.get(kind) == "True":
            return shown
    if conditions.get("Suspended") == "True":
        return "Suspended"
    if _get(job, "metadata", "deletionTimestamp"):
        return "Terminating"
    return "Running"


def _pod_template_containers(field: str, *path: str) -> Column:
    def cell(obj: Obj) -> str:
        containers = _get(obj, *path, "containers") or []
        return ",".join(str(c.get(field, "")) for c in containers)
    return _wide("Containers" if field == "name" else "Images", cell,
                 "Names of each container in the template." if field == "name"
                 else "Images referenced by each container in the template.")


JOB = (
    NAME,
    Column("Status", "string", job_status, "Status of the job."),
    Column("Completions", "string", _job_completions, "The desired number of successfully finished pods the job "
           "should be run with."),
    Column("Duration", "string", _job_duration, "Time required to complete the job."),
    AGE, CONTAINERS, IMAGES, SELECTOR,
)

CRON_JOB = (
    NAME,
    Column("Schedule", "string", lambda c: _get(c, "spec", "schedule") or "", "The schedule for running the job."),
    Column("Timezone", "string", lambda c: _get(c, "spec", "timeZone") or "<none>",
           "The time zone the schedule is interpreted in."),
    Column("Suspend", "boolean", lambda c: bool(_get(c, "spec", "suspend")),
           "If true, suspend the next execution of the cron job."),
    Column("Active", "integer", lambda c: len(_get(c, "status", "active") or []),
           "The number of currently running jobs."),
    Column("Last Schedule", "string",
           lambda c: _since(_get(c, "status", "lastScheduleTime")) if _get(c, "status", "lastScheduleTime")
           else "<none>", "Information when was the last time the job was successfully scheduled."),
    AGE,
    _pod_template_containers("name", "spec", "jobTemplate", "spec", "template", "spec"),
    _pod_template_containers("image", "spec", "jobTemplate", "spec", "template", "spec"),
    _wide("Selector", lambda c: format_label_selector(_get(c, "spec", "jobTemplate", "spec", "selector")),
          "Label selector for pods."),
)

# -- networking and policy ----------------------------------------------------------------------


def _ingress_hosts(ing: Obj) -> str:
    hosts = [r.get("host") for r in _get(ing, "spec", "rules") or [] if r.get("host")]
    return ",".join(hosts) if hosts else "*"


def _ingress_address(ing: Obj) -> str:
    found = [i.get("ip") or i.get("hostname") for i in _get(ing, "status", "loadBalancer", "ingress") or []]
    return ",".join(f for f in found if f)


def _ingress_ports(ing: Obj) -> str:
    return "80, 443" if _get(ing, "spec", "tls") else "80"


INGRESS = (
    NAME,
    Column("Class", "string", lambda i: _get(i, "spec", "ingressClassName") or "<none>",
           "The name of the IngressClass resource that should be used for additional configuration"),
    Column("Hosts", "string", _ingress_hosts, "Hosts that incoming requests are matched against before the "
           "ingress rule"),
    Column("Address", "string", _ingress_address, "Address is a list containing ingress points for the "
           "load-balancer"),
    Column("Ports", "string", _ingress_ports, "Ports of TLS configurations that open"),
    AGE,
)


def _int_or_na(value: Any) -> str:
    return "N/A" if value is None else str(value)


POD_DISRUPTION_BUDGET = (
    NAME,
    Column("Min Available", "string", lambda p: _int_or_na(_get(p, "spec", "minAvailable")),
           "The minimum number of pods that must be available."),
    Column("Max Unavailable", "string", lambda p: _int_or_na(_get(p, "spec", "maxUnavailable")),
           "The maximum number of pods that may be unavailable."),
    Column("Allowed Disruptions", "integer", lambda p: int(_get(p, "status", "disruptionsAllowed") or 0),
           "Calculated number of pods that may be disrupted at this time."),
    AGE,
)

__all__ = ["CONTAINERS", "IMAGES", "SELECTOR"]

PRIORITY_CLASS = (
    NAME,
    Column("Value", "integer", lambda p: int(_get(p, "value") or 0), "Value is the integer value of this "
           "priority class."),
    Column("Global-Default", "boolean", lambda p: bool(_get(p, "globalDefault")), "GlobalDefault specifies "
           "whether this PriorityClass should be considered as the default priority."),
    AGE,
    Column("PreemptionPolicy", "string", lambda p: _get(p, "preemptionPolicy") or "", "PreemptionPolicy is the "
           "Policy for preempting pods with lower priority."),
)
