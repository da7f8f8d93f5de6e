"""kube's LimitRanger for pods: Container defaults and min/max, in kube's words."""

from __future__ import annotations

from kcp_apiserver.embedding import Obj, kube_type
from kcp_sim_cluster.api.limits import ANNOTATION, apply_defaults, violations


def limit_range(**item: object) -> Obj:
    return {"metadata": {"name": "r"}, "spec": {"limits": [{"type": "Container", **item}]}}


def pod(*containers: Obj) -> Obj:
    return {"metadata": {"name": "p"}, "spec": {"containers": list(containers)}, "status": {"qosClass": "BestEffort"}}


def test_defaults_fill_only_what_a_container_leaves_out_and_are_noted() -> None:
    admitted = pod({"name": "a", "resources": {"limits": {"cpu": "2"}}}, {"name": "b"})
    apply_defaults(admitted, [limit_range(default={"cpu": "1", "memory": "1Gi"}, defaultRequest={"cpu": "100m"})])
    a, b = admitted["spec"]["containers"]
    assert a["resources"] == {"limits": {"cpu": "2", "memory": "1Gi"}, "requests": {"cpu": "100m"}}
    assert b["resources"] == {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "100m"}}
    assert admitted["metadata"]["annotations"][ANNOTATION] == (
        "LimitRanger plugin set: cpu request for container a; memory limit for container a; "
        "cpu request for container b; cpu, memory limit for container b")
    assert admitted["status"]["qosClass"] == "Burstable"


def test_min_and_max_are_checked_with_kubes_messages() -> None:
    ranges = [limit_range(min={"memory": "64Mi"}, max={"cpu": "1"})]
    assert violations(pod({"name": "a", "resources": {"requests": {"memory": "32Mi"}, "limits": {"cpu": "1500m"}}}),
                      ranges) == ["minimum memory usage per Container is 64Mi, but request is 32Mi",
                                  "maximum cpu usage per Container is 1, but limit is 1500m"]
    assert violations(pod({"name": "a"}), ranges) == [
        "minimum memory usage per Container is 64Mi.  No request is specified",
        "maximum cpu usage per Container is 1.  No limit is specified"]
    assert violations(pod({"name": "a", "resources": {"requests": {"memory": "64Mi"}, "limits": {"cpu": "1"}}}),
                      ranges) == []


def test_a_container_items_default_comes_from_its_max() -> None:
    rules = kube_type("", "v1", "LimitRange")
    assert rules is not None and rules.default is not None
    obj = limit_range(max={"cpu": "2"})
    rules.default(obj)
    assert obj["spec"]["limits"][0]["default"] == obj["spec"]["limits"][0]["defaultRequest"] == {"cpu": "2"}
