"""Per-target request sums kept from informer events: they match a full recount after every change."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from kcp_deployment_splitter.capacity import requested_by
from kcp_deployment_splitter.load import TargetLoad
from kcp_deployment_splitter.names import ASSIGNMENT_LABEL

from kcpcommon.informer import DeletedFinalStateUnknown
from kcpcommon.keys import CLUSTER_ANNOTATION, key_for


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
    assert load.used("tenant", "east") == requested_by([a, b]) == {"cpu": Fraction(32, 10), "pods": 5}
    bigger = deployment("a--east", "east", 5)
    load.on_update(a, bigger)
    assert load.used("tenant", "east") == requested_by([bigger, b])
    moved = deployment("b--east", "west", 3, cpu="1")
    load.on_update(b, moved)
    assert load.used("tenant", "east") == requested_by([bigger])
    assert load.used("tenant", "west") == requested_by([moved])
    load.on_delete(DeletedFinalStateUnknown(key_for(moved), moved))
    load.on_update(bigger, deployment("a--east", "east", 0))
    assert load.used("tenant", "east") == {} and load.used("tenant", "west") == {}
    assert load.used("other", "east") == {"cpu": Fraction(4, 10), "pods": 4}


def test_a_root_s_own_children_are_left_out_of_what_the_others_use() -> None:
    load = TargetLoad()
    mine, theirs = deployment("web--east", "east", 2), deployment("api--east", "east", 1)
    load.on_add(mine)
    load.on_add(theirs)
    assert load.used("tenant", "east", excluding=[key_for(mine), key_for(deployment("web--west", "west", 1))]) == \
        requested_by([theirs])
