"""kube's defaulting (SetDefaults_* of core/v1, apps/v1, batch/v1, discovery/v1): what a simulated cluster
stores (so a syncer copying objects down sees what a real cluster would show) and what kcp stores for
kube's types imported from physical clusters.

Each function walks its object once and only sets what is missing; nothing is copied. `minor` is the
Kubernetes release's minor version, for defaults that arrived with a release.
"""

from __future__ import annotations

from typing import Any

from kcp_apiserver.kubetypes.fields import dicts, member
from kcp_apiserver.registry.resource import Obj

DEFAULT_MODE = 0o644  # 420: secret, configMap, downwardAPI and projected volumes
PROBE_DEFAULTS = (("timeoutSeconds", 1), ("periodSeconds", 10), ("successThreshold", 1), ("failureThreshold", 3))
NOT_READY_TOLERATIONS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
DEFAULT_TOLERATION_SECONDS = 300


def _dict(parent: Obj, key: str) -> Obj:
    """parent[key], created when missing; a value of another type is left for validation to refuse (what
    is returned then is detached)."""
    value = parent.get(key)
    if value is None:
        value = parent[key] = {}
    return value if isinstance(value, dict) else {}


def image_pull_policy(image: str) -> str:
    """Always for `:latest` or no tag, IfNotPresent for any other tag or a digest (SetDefaults_Container)."""
    if "@" in image:
        return "IfNotPresent"
    last = image.rsplit("/", 1)[-1]
    tag = last.partition(":")[2]
    return "Always" if not tag or tag == "latest" else "IfNotPresent"


def _probe(probe: Any) -> None:
    if not isinstance(probe, dict):
        return
    for key, value in PROBE_DEFAULTS:
        probe.setdefault(key, value)
    http = probe.get("httpGet")
    if isinstance(http, dict):
        http.setdefault("path", "/")
        http.setdefault("scheme", "HTTP")
    grpc = probe.get("grpc")
    if isinstance(grpc, dict):
        grpc.setdefault("service", "")


def _handler(lifecycle: Any) -> None:
    if not isinstance(lifecycle, dict):
        return
    for hook in ("postStart", "preStop"):
        http = (lifecycle.get(hook) or {}).get("httpGet") if isinstance(lifecycle.get(hook), dict) else None
        if isinstance(http, dict):
            http.setdefault("path", "/")
            http.setdefault("scheme", "HTTP")


def _env(container: Obj) -> None:
    for env in dicts(container.get("env")):
        ref = (env.get("valueFrom") or {}).get("fieldRef") if isinstance(env.get("valueFrom"), dict) else None
        if isinstance(ref, dict):
            ref.setdefault("apiVersion", "v1")


def container(c: Obj, *, pod: bool) -> None:
    """SetDefaults_Container and its parts; for a Pod (not a template) requests default to limits."""
    c.setdefault("imagePullPolicy", image_pull_policy(str(c.get("image") or "")))
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    for port in dicts(c.get("ports")):
        port.setdefault("protocol", "TCP")
    for key in ("livenessProbe", "readinessProbe", "startupProbe"):
        _probe(c.get(key))
    _handler(c.get("lifecycle"))
    _env(c)
    c.setdefault("resources", {})
    if pod and isinstance(c["resources"], dict):
        limits = c["resources"].get("limits")
        if isinstance(limits, dict) and limits:
            requests = _dict(c["resources"], "requests")
            for name, quantity in limits.items():
                requests.setdefault(name, quantity)


def _volume(volume: Obj) -> None:
    sources = [k for k in volume if k != "name"]
    if not sources:
        volume["emptyDir"] = {}
        return
    for key in ("secret", "configMap", "downwardAPI", "projected"):
        source = volume.get(key)
        if isinstance(source, dict):
            source.setdefault("defaultMode", DEFAULT_MODE)
    for ref in dicts((volume.get("downwardAPI") or {}).get("items") if isinstance(volume.get("downwardAPI"),
                                                                                   dict) else None):
        field = ref.get("fieldRef")
        if isinstance(field, dict):
            field.setdefault("apiVersion", "v1")
    host_path = volume.get("hostPath")
    if isinstance(host_path, dict):
        host_path.setdefault("type", "")
    if isinstance(volume.get("emptyDir"), dict) or "emptyDir" in volume:
        volume["emptyDir"] = volume.get("emptyDir") or {}


def pod_spec(spec: Obj, *, pod: bool = False) -> None:
    """SetDefaults_PodSpec and everything under it (containers, volumes), in one walk."""
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    if pod:
        spec.setdefault("enableServiceLinks", True)
    host_network = bool(spec.get("hostNetwork"))
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for c in dicts(spec.get(key)):
            container(c, pod=pod and key != "ephemeralContainers")
            if host_network:
                for port in dicts(c.get("ports")):
                    port.setdefault("hostPort", port.get("containerPort"))
    for volume in dicts(spec.get("volumes")):
        _volume(volume)


def pod_template(template: Any) -> None:
    if isinstance(template, dict):
        pod_spec(_dict(template, "spec"))


def pod(obj: Obj) -> None:
    """A Pod as kube-apiserver stores it: SetDefaults_Pod/PodSpec plus what its default admission plugins
    add (ServiceAccount's name, Priority's priority, DefaultTolerationSeconds' NoExecute tolerations)."""
    spec = _dict(obj, "spec")
    pod_spec(spec, pod=True)
    spec.setdefault("serviceAccountName", spec.get("serviceAccount") or "default")
    spec.setdefault("serviceAccount", spec["serviceAccountName"])
    if not spec.get("priorityClassName"):
        spec.setdefault("priority", 0)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    tolerations = spec.get("tolerations")
    if not isinstance(tolerations, list):
        tolerations = spec["tolerations"] = []
    have = {(t.get("key"), t.get("effect")) for t in dicts(tolerations)}
    tolerates_all = any(not t.get("key") and t.get("operator") == "Exists" and not t.get("effect")
                        for t in dicts(tolerations))
    for key in NOT_READY_TOLERATIONS:
        if not tolerates_all and (key, "NoExecute") not in have and (key, None) not in have:
            tolerations.append({"key": key, "operator": "Exists", "effect": "NoExecute",
                                "tolerationSeconds": DEFAULT_TOLERATION_SECONDS})
    if not tolerations:
        del spec["tolerations"]


def qos_class(spec: Obj) -> str:
    """Guaranteed (every container's requests equal its limits for cpu and memory), BestEffort (none
    set), else Burstable: kube's GetPodQOS."""
    containers = dicts(spec.get("containers")) + dicts(spec.get("initContainers"))
    any_set, guaranteed = False, True
    for c in containers:
        resources = member(c, "resources")
        requests = resources.get("requests") or {}
        limits = resources.get("limits") or {}
        for name in ("cpu", "memory"):
            if name in requests or name in limits:
                any_set = True
            if name not in limits or str(requests.get(name, limits.get(name))) != str(limits[name]):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def deployment(obj: Obj) -> None:
    spec = _dict(obj, "spec")
    spec.setdefault("replicas", 1)
    strategy = _dict(spec, "strategy")
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = _dict(strategy, "rollingUpdate")
        rolling.setdefault("maxUnavailable", "25%")
        rolling.setdefault("maxSurge", "25%")
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    pod_template(spec.get("template"))


def replica_set(obj: Obj) -> None:
    spec = _dict(obj, "spec")
    spec.setdefault("replicas", 1)
    pod_template(spec.get("template"))


def replication_controller(obj: Obj) -> None:
    """kube's SetDefaults_ReplicationController: selector and labels from the template's labels."""
    spec = _dict(obj, "spec")
    template = spec.get("template")
    template_labels = ((template.get("metadata") or {}).get("labels")) if isinstance(template, dict) else None
    if template_labels:
        if not spec.get("selector"):
            spec["selector"] = dict(template_labels)
        if not (obj.get("metadata") or {}).get("labels"):
            _dict(obj, "metadata")["labels"] = dict(template_labels)
    spec.setdefault("replicas", 1)
    pod_template(template)


def persistent_volume_claim_spec(spec: Obj) -> None:
    spec.setdefault("volumeMode", "Filesystem")


def stateful_set(obj: Obj, minor: int) -> None:
    spec = _dict(obj, "spec")
    spec.setdefault("replicas", 1)
    spec.setdefault("podManagementPolicy", "OrderedReady")
    strategy = _dict(spec, "updateStrategy")
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        _dict(strategy, "rollingUpdate").setdefault("partition", 0)
    spec.setdefault("revisionHistoryLimit", 10)
    if minor >= 27:
        retention = _dict(spec, "persistentVolumeClaimRetentionPolicy")
        retention.setdefault("whenDeleted", "Retain")
        retention.setdefault("whenScaled", "Retain")
    for claim in dicts(spec.get("volumeClaimTemplates")):
        claim.setdefault("apiVersion", "v1")
        claim.setdefault("kind", "PersistentVolumeClaim")
        persistent_volume_claim_spec(_dict(claim, "spec"))
        claim.setdefault("status", {"phase": "Pending"})
    pod_template(spec.get("template"))


def daemon_set(obj: Obj) -> None:
    spec = _dict(obj, "spec")
    strategy = _dict(spec, "updateStrategy")
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = _dict(strategy, "rollingUpdate")
        rolling.setdefault("maxUnavailable", 1)
        rolling.setdefault("maxSurge", 0)
    spec.setdefault("revisionHistoryLimit", 10)
    pod_template(spec.get("template"))


def job_spec(spec: Obj, minor: int, *, job: bool) -> None:
    """SetDefaults_Job for a Job; a CronJob's jobTemplate only gets its pod template's defaults, as kube."""
    if job:
        if spec.get("completions") is None and spec.get("parallelism") is None:
            spec["completions"] = 1
        spec.setdefault("parallelism", 1)
        if spec.get("backoffLimitPerIndex") is None:
            spec.setdefault("backoffLimit", 6)
        else:
            spec.setdefault("backoffLimit", 2147483647)
        spec.setdefault("completionMode", "NonIndexed")
        spec.setdefault("suspend", False)
        if minor >= 29 and spec.get("podFailurePolicy") is None:
            spec.setdefault("podReplacementPolicy", "TerminatingOrFailed")
    pod_template(spec.get("template"))


def job(obj: Obj, minor: int) -> None:
    job_spec(_dict(obj, "spec"), minor, job=True)


def cron_job(obj: Obj, minor: int) -> None:
    spec = _dict(obj, "spec")
    spec.setdefault("concurrencyPolicy", "Allow")
    spec.setdefault("suspend", False)
    spec.setdefault("successfulJobsHistoryLimit", 3)
    spec.setdefault("failedJobsHistoryLimit", 1)
    template = spec.get("jobTemplate")
    if isinstance(template, dict):
        job_spec(_dict(template, "spec"), minor, job=False)


def service(obj: Obj) -> None:
    """SetDefaults_Service (the cluster IP and IP families come from the allocator)."""
    spec = _dict(obj, "spec")
    spec.setdefault("sessionAffinity", "None")
    spec.setdefault("type", "ClusterIP")
    if spec["sessionAffinity"] == "ClientIP":
        client = _dict(_dict(spec, "sessionAffinityConfig"), "clientIP")
        client.setdefault("timeoutSeconds", 10800)
    for port in dicts(spec.get("ports")):
        port.setdefault("protocol", "TCP")
        if port.get("targetPort") in (None, 0, ""):
            port["targetPort"] = port.get("port")
    kind = spec["type"]
    if kind in ("ClusterIP", "NodePort", "LoadBalancer"):
        spec.setdefault("internalTrafficPolicy", "Cluster")
    if kind in ("NodePort", "LoadBalancer"):
        spec.setdefault("externalTrafficPolicy", "Cluster")
    if kind == "LoadBalancer":
        spec.setdefault("allocateLoadBalancerNodePorts", True)


def endpoints(obj: Obj) -> None:
    for subset in dicts(obj.get("subsets")):
        for port in dicts(subset.get("ports")):
            port.setdefault("protocol", "TCP")


def endpoint_slice(obj: Obj) -> None:
    for port in dicts(obj.get("ports")):
        port.setdefault("protocol", "TCP")
        port.setdefault("name", "")


def node(obj: Obj) -> None:
    status = obj.get("status")
    if isinstance(status, dict) and status.get("capacity") and not status.get("allocatable"):
        status["allocatable"] = dict(status["capacity"])


def persistent_volume_claim(obj: Obj) -> None:
    persistent_volume_claim_spec(_dict(obj, "spec"))


def persistent_volume(obj: Obj) -> None:
    """SetDefaults_PersistentVolume: a volume is kept when released unless told otherwise, and is a file system."""
    spec = _dict(obj, "spec")
    spec.setdefault("persistentVolumeReclaimPolicy", "Retain")
    spec.setdefault("volumeMode", "Filesystem")
    if isinstance(spec.get("hostPath"), dict):
        spec["hostPath"].setdefault("type", "")
    _dict(obj, "status").setdefault("phase", "Pending")


def limit_range(obj: Obj) -> None:
    """SetDefaults_LimitRangeItem: a Container item's default limit is its max, its default request its
    default limit."""
    for item in dicts(_dict(obj, "spec").get("limits") or []):
        if item.get("type") != "Container":
            continue
        default = item.setdefault("default", {})
        for name, value in (item.get("max") or {}).items():
            default.setdefault(name, value)
        request = item.setdefault("defaultRequest", {})
        for name, value in default.items():
            request.setdefault(name, value)
        for key in ("default", "defaultRequest"):
            if not item[key]:
                item.pop(key)
