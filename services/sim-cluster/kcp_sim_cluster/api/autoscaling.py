"""autoscaling HorizontalPodAutoscalers: one storage (the v2 shape), served as autoscaling/v2 and /v1 (and
/v2beta2 by 1.25), the versions whose schema the chosen release ships, v2 preferred as in kube. kube's
defaults and validation are kcp_apiserver.kubetypes' (on the v2 shape); the printer columns are kube's."""

from __future__ import annotations

from typing import Any

from kcp_apiserver.embedding import AGE, NAME, Column, Obj, Resource, hpaversions, kube_resource
from kcp_sim_cluster.api.strategy import kube_strategy

MAX_LISTED_METRICS = 2


def _current(statuses: list[Any], i: int, key: str, path: tuple[str, ...]) -> Any:
    """The i-th current metric's value at `path` below its `key` source, as kube pairs spec and status by index."""
    if i >= len(statuses) or not isinstance(statuses[i], dict):
        return None
    value: Any = statuses[i].get(key)
    for part in path:
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _metric_text(metric: Obj, i: int, statuses: list[Any]) -> str:
    kind = metric.get("type")
    key = hpaversions.SOURCES.get(str(kind))
    source = metric.get(key) if key else None
    if key is None or not isinstance(source, dict):
        return "<unknown type>"
    target = source.get("target") or {}
    if key in ("external", "object"):
        field = "averageValue" if target.get("averageValue") is not None else "value"
        current = _current(statuses, i, key, ("current", field))
        suffix = " (avg)" if field == "averageValue" else ""
        return f"{current if current is not None else '<unknown>'}/{target.get(field)}{suffix}"
    if key == "pods":
        current = _current(statuses, i, key, ("current", "averageValue"))
        return f"{current if current is not None else '<unknown>'}/{target.get('averageValue')}"
    name = source.get("name", "")
    if key == "containerResource":
        name = f"{name} of container \"{source.get('container', '')}\""  # kube's wording for a container's metric
    if target.get("averageValue") is not None:
        current = _current(statuses, i, key, ("current", "averageValue"))
        return f"{name}: {current if current is not None else '<unknown>'}/{target['averageValue']}"
    used = _current(statuses, i, key, ("current", "averageUtilization"))
    wanted = target.get("averageUtilization")
    return (f"{name}: {f'{used}%' if used is not None else '<unknown>'}/"
            f"{f'{wanted}%' if wanted is not None else '<auto>'}")


def metrics_text(hpa: Obj) -> str:
    """kube's TARGETS cell: `cpu: 50%/80%` per metric, two at most, then `+ N more...`."""
    obj = hpaversions.as_v2(hpa)
    specs = [m for m in (obj.get("spec") or {}).get("metrics") or [] if isinstance(m, dict)]
    if not specs:
        return "<none>"
    statuses = list((obj.get("status") or {}).get("currentMetrics") or [])
    listed = [_metric_text(m, i, statuses) for i, m in enumerate(specs)]
    text = ", ".join(listed[:MAX_LISTED_METRICS])
    if len(listed) > MAX_LISTED_METRICS:
        text += f" + {len(listed) - MAX_LISTED_METRICS} more..."
    return text


def _reference(hpa: Obj) -> str:
    ref = (hpa.get("spec") or {}).get("scaleTargetRef") or {}
    return f"{ref.get('kind', '')}/{ref.get('name', '')}"


def _min_pods(hpa: Obj) -> str:
    low = (hpa.get("spec") or {}).get("minReplicas")
    return "<unset>" if low is None else str(low)


COLUMNS = (
    NAME,
    Column("Reference", "string", _reference, "scaleTargetRef points to the target resource to scale, and is used "
           "to the pods for which metrics should be collected, as well as to actually change the replica count."),
    Column("Targets", "string", metrics_text, "metrics contains the specifications for which to use to calculate "
           "the desired replica count (the maximum replica count across all metrics will be used)."),
    Column("MinPods", "string", _min_pods, "minReplicas is the lower limit for the number of replicas to which the "
           "autoscaler can scale down."),
    Column("MaxPods", "string", lambda o: int((o.get("spec") or {}).get("maxReplicas") or 0),
           "maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up."),
    Column("Replicas", "string", lambda o: int((o.get("status") or {}).get("currentReplicas") or 0),
           "currentReplicas is current number of replicas of pods managed by this autoscaler, as last seen by the "
           "autoscaler."),
    AGE,
)

# served version -> how it converts to and from storage (None: it is the stored shape)
VERSIONS = {"v2": None, "v1": (hpaversions.to_v2, hpaversions.to_v1),
            "v2beta2": (hpaversions.renamed(hpaversions.V2), hpaversions.renamed("autoscaling/v2beta2"))}


def _empty_status(hpa: Obj) -> None:
    hpa["status"] = {"desiredReplicas": 0}  # kube v2 omits an empty currentReplicas


def resources(release: str) -> tuple[Resource, ...]:
    """Each version `release` ships a schema for (kube serves v2beta2 until 1.25), v2 first: kube's preferred."""
    strategy = kube_strategy("autoscaling", "v2", "HorizontalPodAutoscaler", release, on_create=_empty_status)
    served = []
    for version, conversion in VERSIONS.items():
        extra: dict[str, Any] = {}
        if conversion is not None:
            extra = {"to_storage": conversion[0], "from_storage": conversion[1], "storage_version": "v2"}
        try:
            served.append(kube_resource("autoscaling", version, "HorizontalPodAutoscaler", "horizontalpodautoscalers",
                                        namespaced=True, release=release, short_names=("hpa",), categories=("all",),
                                        has_status=True, tracks_generation=True, columns=COLUMNS, strategy=strategy,
                                        **extra))
        except LookupError:  # not served by this release
            continue
    return tuple(served)
