"""kube's Priority admission for pods and PriorityClass validation, as pure functions."""

from __future__ import annotations

import pytest

from kcp_apiserver.embedding import APIError, Obj, kube_type, system_class
from kcp_sim_cluster.api import resource
from kcp_sim_cluster.api.priority import admit_pod

PODS = resource("1.35", "", "pods")
RULES = kube_type("scheduling.k8s.io", "v1", "PriorityClass")


def priority_class(name: str, value: int, *, default: bool = False, policy: str = "PreemptLowerPriority") -> Obj:
    return {"metadata": {"name": name}, "value": value, "globalDefault": default, "preemptionPolicy": policy}


def pod(**spec: object) -> Obj:
    return {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}], **spec}}


def test_a_named_class_sets_priority_and_preemption_policy() -> None:
    admitted = pod(priorityClassName="batch")
    admit_pod(PODS, "p", admitted, [priority_class("batch", 10, policy="Never")])
    assert (admitted["spec"]["priority"], admitted["spec"]["preemptionPolicy"]) == (10, "Never")


def test_without_a_class_the_lowest_global_default_applies_else_zero() -> None:
    admitted = pod()
    admit_pod(PODS, "p", admitted, [priority_class("a", 30, default=True), priority_class("b", 20, default=True),
                                    priority_class("c", 5)])
    assert (admitted["spec"]["priorityClassName"], admitted["spec"]["priority"]) == ("b", 20)
    plain = pod()
    admit_pod(PODS, "p", plain, [priority_class("c", 5)])
    assert (plain["spec"]["priority"], plain["spec"]["preemptionPolicy"]) == (0, "PreemptLowerPriority")
    assert "priorityClassName" not in plain["spec"]


@pytest.mark.parametrize(("spec", "message"), [
    ({"priorityClassName": "gone"}, 'pods "p" is forbidden: no PriorityClass with name gone was found'),
    ({"priority": 3}, "the integer value of priority (3) must not be provided in pod spec; priority admission "
                      "controller computed 0 from the given PriorityClass name"),
    ({"priorityClassName": "batch", "preemptionPolicy": "PreemptLowerPriority"},
     "the string value of PreemptionPolicy (PreemptLowerPriority) must not be provided in pod spec"),
])
def test_what_kube_refuses_is_a_403(spec: dict[str, object], message: str) -> None:
    with pytest.raises(APIError) as refused:
        admit_pod(PODS, "p", pod(**spec), [priority_class("batch", 10, policy="Never")])
    assert (refused.value.code, refused.value.reason) == (403, "Forbidden")
    assert message in refused.value.message


def test_a_pod_may_repeat_the_priority_its_class_gives() -> None:
    admitted = pod(priorityClassName="batch", priority=10)
    admit_pod(PODS, "p", admitted, [priority_class("batch", 10)])
    assert admitted["spec"]["priority"] == 10


@pytest.mark.parametrize(("obj", "field", "message"), [
    (priority_class("big", 1_000_000_001), "value",
     "Forbidden: maximum allowed value of a user defined priority is 1000000000"),
    (priority_class("system-mine", 1), "metadata.name",
     "Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: "
     "system-mine is not a known system priority class"),
    (priority_class("system-node-critical", 1), "metadata.name",
     "error: value of system-node-critical PriorityClass must be 2000001000"),
    (priority_class("odd", 1, policy="Sometimes"), "preemptionPolicy",
     'Unsupported value: "Sometimes": supported values: "Never", "PreemptLowerPriority"'),
])
def test_priority_class_validation_uses_kubes_wording(obj: Obj, field: str, message: str) -> None:
    assert RULES is not None and RULES.validate is not None
    causes = RULES.validate(obj)
    assert [c.field for c in causes] == [field]
    assert message in causes[0].message


def test_the_system_classes_are_valid_and_a_value_is_immutable() -> None:
    assert RULES is not None and RULES.validate is not None and RULES.validate_update is not None
    for name in ("system-node-critical", "system-cluster-critical"):
        assert RULES.validate(system_class(name)) == []
    causes = RULES.validate_update(priority_class("a", 2), priority_class("a", 1))
    assert [(c.field, c.message) for c in causes] == [("value", "Forbidden: may not be changed in an update.")]
