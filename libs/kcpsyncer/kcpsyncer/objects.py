"""Reading objects as the API returns them: plain mappings, any of whose fields may be missing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Obj = Mapping[str, Any]
# kind -> where the pod template of a kind that makes pods is (a CronJob's one level deeper)
POD_TEMPLATES: dict[str, tuple[str, ...]] = {
    "Deployment": ("spec", "template"), "ReplicaSet": ("spec", "template"), "StatefulSet": ("spec", "template"),
    "DaemonSet": ("spec", "template"), "Job": ("spec", "template"), "ReplicationController": ("spec", "template"),
    "CronJob": ("spec", "jobTemplate", "spec", "template"),
}
# kind -> where the claim templates of a kind that makes PersistentVolumeClaims are (a list of templates)
CLAIM_TEMPLATES: dict[str, tuple[str, ...]] = {"StatefulSet": ("spec", "volumeClaimTemplates")}


def meta(obj: Obj) -> Mapping[str, Any]:
    found = obj.get("metadata")
    return found if isinstance(found, Mapping) else {}


def finalizers(obj: Obj) -> list[str]:
    return [str(f) for f in meta(obj).get("finalizers") or []]


def deleting(obj: Obj) -> bool:
    return bool(meta(obj).get("deletionTimestamp"))

