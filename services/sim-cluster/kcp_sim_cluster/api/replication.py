"""core/v1 ReplicationControllers (status and scale, as kube serves them) and PodTemplates (plain storage);
their defaults and validation are kcp_apiserver.kubetypes'."""

from __future__ import annotations

from kcp_apiserver.embedding import (
    CONTAINERS,
    IMAGES,
    NAME,
    REPLICA_SET,
    BuiltinScale,
    Column,
    Obj,
    Resource,
    kube_resource,
)
from kcp_sim_cluster.api.strategy import kube_strategy

# An RC's selector is a plain label map, which the Scale's status.selector cannot render as a LabelSelector.
RC_SCALE = BuiltinScale(selector_path="")


def _labels_text(labels: object) -> str:
    """labels.FormatLabels: `k=v` joined by commas, `<none>` when empty."""
    if not isinstance(labels, dict) or not labels:
        return "<none>"
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def _template_labels(obj: Obj) -> str:
    template = (obj.get("template") or {}).get("metadata") or {}
    return _labels_text(template.get("labels"))


RC_COLUMNS = (*REPLICA_SET[:-1], Column("Selector", "string", lambda o: _labels_text((o.get("spec") or {}).get(
    "selector")), "The label selector for the replication controller.", priority=1))

def _as_workload(obj: Obj) -> Obj:
    return {"spec": {"template": obj.get("template") or {}}}


POD_TEMPLATE_COLUMNS = (
    Column("Template", "string", NAME.cell, NAME.description, format="name"),
    Column("Containers", "string", lambda o: CONTAINERS.cell(_as_workload(o)), CONTAINERS.description),
    Column("Images", "string", lambda o: IMAGES.cell(_as_workload(o)), IMAGES.description),
    Column("Pod Labels", "string", _template_labels, "Labels of the pods the template makes."),
)


def resources(release: str) -> tuple[Resource, ...]:
    return (
        kube_resource("", "v1", "ReplicationController", "replicationcontrollers", namespaced=True, release=release,
                      short_names=("rc",), categories=("all",), has_status=True, tracks_generation=True,
                      columns=RC_COLUMNS, scale=RC_SCALE,
                      strategy=kube_strategy("", "v1", "ReplicationController", release,
                                             on_create=lambda o: o.__setitem__("status", {"replicas": 0}))),
        kube_resource("", "v1", "PodTemplate", "podtemplates", namespaced=True, release=release,
                      columns=POD_TEMPLATE_COLUMNS, strategy=kube_strategy("", "v1", "PodTemplate", release)),
    )
