"""Per-target request sums kept from informer events: they match a full recount after every change."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from kcp_deployment_splitter.capacity import requested_by
from kcp_deployment_splitter.load import TargetLoad
from kcp_deployment_splitter.names import ASSIGNMENT_LABEL

from kcpcommon.informer import DeletedFinalStateUnknown
from kcpcommon.keys import CLUSTER_ANNOTATION, key_for, sync_target_key

EAST, WEST = sync_target_key("tenant", "east"), sync_target_key("tenant", "west")


def deployment(name: str, target: str | None, replicas: int, cpu: str = "100m",
               cluster: str = "tenant") -> dict[str, Any]:
    labels = {ASSIGNMENT_LABEL: target} if target else {}
    return {"metadata": {"name": name, "namespace": "default", "labels": labels,
                         "annotations": {CLUSTER_ANNOTATION: cluster}},
            "spec": {"replicas": replicas, "template": {"spec": {"containers": [
                {"name": "main", "resources": {"requests": {"cpu": cpu}}}]}}}}


def test_sums_follow_adds_updates_moves_and_deletes_like_a_recount() -> None:
    load = TargetLoad()
    a, b = deployment("a--east", "east", 2), deployment("b--east", "east", 3, cpu="1")
    load.on_add(a)
    load.on_add(b)
    load.on_add(deployment("root", None, 10))  # a root runs nowhere itself
    load.on_add(deployment("c--east", "east", 4, cluster="other"))  # another logical cluster's east
    assert load.used(EAST) == requested_by([a, b]) == {"cpu": Fraction(32, 10), "pods": 5}
    bigger = deployment("a--east", "east", 5)
    load.on_update(a, bigger)
    assert load.used(EAST) == requested_by([bigger, b])
    moved = deployment("b--east", "west", 3, cpu="1")
    load.on_update(b, moved)
    assert load.used(EAST) == requested_by([bigger])
    assert load.used(WEST) == requested_by([moved])
    load.on_delete(DeletedFinalStateUnknown(key_for(moved), moved))
    load.on_update(bigger, deployment("a--east", "east", 0))
    assert load.used(EAST) == {} and load.used(WEST) == {}
    assert load.used(sync_target_key("other", "east")) == {"cpu": Fraction(4, 10), "pods": 4}


def test_a_root_s_own_children_are_left_out_of_what_the_others_use() -> None:
    load = TargetLoad()
    mine, theirs = deployment("web--east", "east", 2), deployment("api--east", "east", 1)
    load.on_add(mine)
    load.on_add(theirs)
    assert load.used(EAST, excluding=[key_for(mine), key_for(deployment("web--west", "west", 1))]) == \
        requested_by([theirs])


def test_deployments_of_every_workspace_placed_on_one_sync_target_add_up() -> None:
    """Shared compute: team workspaces' shares on compute's `east` take from one allocatable."""
    shared = sync_target_key("compute", "east")
    load = TargetLoad(resolve=lambda cluster, namespace, target: shared if cluster.startswith("team-")
                      else sync_target_key(cluster, target))
    a, b = deployment("web--east", "east", 2, cluster="team-a"), deployment("web--east", "east", 3, cluster="team-b")
    load.on_add(a)
    load.on_add(b)
    load.on_add(deployment("own--east", "east", 7, cluster="tenant"))  # a workspace with its own east
    assert load.used(shared) == requested_by([a, b]) == {"cpu": Fraction(5, 10), "pods": 5}
    assert load.used(shared, excluding=[key_for(a)]) == requested_by([b])
    assert load.used(EAST) == {"cpu": Fraction(7, 10), "pods": 7}
