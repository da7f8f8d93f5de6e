"""A deleted SyncTarget's teardown lifts its syncer's finalizer from every object assigned to it: by the
assignment label and by its state label (the splitter places a Deployment's ConfigMaps, Services and classes
that way), each object once."""

from __future__ import annotations

from typing import Any

from kcp_cluster_controller.teardown import release_upstream

FINALIZER = "workload.kcp.io/syncer-east"


def configmap(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "labels": labels,
                         "finalizers": [FINALIZER, "other"]}}


class Kcp:
    """Lists by label selector (`key=value`) and records patches."""

    def __init__(self, items: list[dict[str, Any]]) -> None:
        self.items = items
        self.patched: list[tuple[str, Any]] = []

    def resource(self, api_version: str, plural: str, *, namespaced: bool) -> Kcp:
        return self

    async def list(self, *, label_selector: str) -> dict[str, Any]:
        key, value = label_selector.split("=")
        return {"items": [i for i in self.items if i["metadata"]["labels"].get(key) == value]}

    async def patch(self, name: str, body: Any, **_: Any) -> dict[str, Any]:
        self.patched.append((name, body[1]["value"]))
        return {}


async def test_objects_placed_by_either_label_are_released_once_each() -> None:
    kcp = Kcp([configmap("assigned", {"workloads.kcp.io/cluster": "east"}),
               configmap("placed", {"state.workload.kcp.io/east": "Sync"}),
               configmap("both", {"workloads.kcp.io/cluster": "east", "state.workload.kcp.io/east": "Sync"}),
               configmap("elsewhere", {"state.workload.kcp.io/west": "Sync"})])
    released = await release_upstream(kcp, ("configmaps",), "east")  # type: ignore[arg-type]
    assert released == 3
    assert sorted(kcp.patched) == [("assigned", ["other"]), ("both", ["other"]), ("placed", ["other"])]
