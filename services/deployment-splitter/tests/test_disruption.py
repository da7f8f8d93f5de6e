"""PodDisruptionBudgets as the floor of available replicas the splitter keeps (disruption.py), kube's rules."""

from __future__ import annotations

from typing import Any

from kcp_deployment_splitter.disruption import floor

LABELS = {"app": "web", "tier": "front"}


def pdb(name: str, *, selector: Any = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = dict(spec)
    if selector is not None:
        body["selector"] = selector
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name}, "spec": body}


WEB = {"matchLabels": {"app": "web"}}


def test_an_integer_min_available_is_the_floor_and_never_more_than_the_replicas() -> None:
    found = floor([pdb("web", selector=WEB, minAvailable=7)], LABELS, 10)
    assert (found.floor, found.budget, found.rule) == (7, "web", "minAvailable: 7")
    assert floor([pdb("web", selector=WEB, minAvailable=12)], LABELS, 10).floor == 10


def test_a_percentage_is_of_the_replicas_rounded_up() -> None:
    assert floor([pdb("web", selector=WEB, minAvailable="50%")], LABELS, 5).floor == 3
    assert floor([pdb("web", selector=WEB, minAvailable="100%")], LABELS, 7).floor == 7


def test_max_unavailable_keeps_the_rest_and_its_percentage_rounds_up_too() -> None:
    assert floor([pdb("web", selector=WEB, maxUnavailable=2)], LABELS, 10).floor == 8
    assert floor([pdb("web", selector=WEB, maxUnavailable="25%")], LABELS, 10).floor == 7  # 2.5 -> 3 unavailable
    assert floor([pdb("web", selector=WEB, maxUnavailable=20)], LABELS, 10).floor == 0
    # both set (kube's API refuses it): the disruption controller reads maxUnavailable
    assert floor([pdb("web", selector=WEB, maxUnavailable=1, minAvailable=2)], LABELS, 10).floor == 9


def test_an_empty_selector_selects_every_pod_and_a_null_one_none() -> None:
    assert floor([pdb("all", selector={}, minAvailable=3)], LABELS, 5).floor == 3
    none = floor([pdb("nothing", minAvailable=3)], LABELS, 5)
    assert none.floor is None and not none.budget


def test_a_budget_for_other_pods_does_not_apply() -> None:
    other = {"matchExpressions": [{"key": "app", "operator": "In", "values": ["db"]}]}
    assert floor([pdb("db", selector=other, minAvailable=3)], LABELS, 5).floor is None
    assert floor([], LABELS, 5).floor is None


def test_the_strictest_of_several_budgets_wins() -> None:
    found = floor([pdb("loose", selector={}, maxUnavailable="50%"), pdb("strict", selector=WEB, minAvailable=9),
                   pdb("middle", selector=WEB, minAvailable="60%")], LABELS, 10)
    assert (found.floor, found.budget, found.rule) == (9, "strict", "minAvailable: 9")


def test_a_malformed_budget_is_ignored_and_says_why() -> None:
    found = floor([pdb("words", selector=WEB, minAvailable="three"), pdb("plain", selector=WEB, minAvailable="3"),
                   pdb("big", selector=WEB, maxUnavailable="150%"), pdb("neg", selector=WEB, minAvailable=-1),
                   pdb("op", selector={"matchExpressions": [{"key": "app", "operator": "Gt"}]}, minAvailable=1),
                   pdb("ok", selector=WEB, minAvailable=2)], LABELS, 5)
    assert (found.floor, found.budget) == (2, "ok")
    assert set(found.ignored) == {"words", "plain", "big", "neg", "op"}
    assert "must be an integer or a percentage" in found.ignored["words"]
    assert "greater than 100%" in found.ignored["big"]
    assert "not a valid label selector operator" in found.ignored["op"]
    only_bad = floor([pdb("words", selector=WEB, minAvailable="three")], LABELS, 5)
    assert only_bad.floor is None and "words" in only_bad.ignored
