"""kube's controller history for StatefulSets and DaemonSets: one revision per template, renumbered on return."""

from __future__ import annotations

from typing import Any

from kcpcommon.controllerhistory import REVISION_LABEL, controlled_by, plan_history


def daemon_set(image: str, **annotations: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "agent", "namespace": "ops", "uid": "u-1",
                         "annotations": {"kcp.io/cluster": "root", **annotations}},
            "spec": {"revisionHistoryLimit": 2, "template": {"metadata": {"labels": {"app": "agent"}},
                                                             "spec": {"containers": [{"name": "a", "image": image}]}}}}


def made(plan: Any) -> dict[str, Any]:
    assert plan.create is not None
    return {**plan.create, "metadata": {**plan.create["metadata"], "uid": plan.create["metadata"]["name"]}}


def test_a_new_template_gets_the_next_revision_with_the_sets_change_cause_and_a_restoring_patch() -> None:
    first = daemon_set("agent:1", **{"kubernetes.io/change-cause": "kubectl apply --record"})
    rev1 = made(plan_history(first, first["spec"]["template"], "h1", []))
    assert rev1["metadata"]["name"] == "agent-h1" and rev1["revision"] == 1
    assert rev1["metadata"]["labels"] == {"app": "agent", REVISION_LABEL: "h1"}
    assert rev1["metadata"]["annotations"] == {"kubernetes.io/change-cause": "kubectl apply --record"}
    assert rev1["data"]["spec"]["template"]["$patch"] == "replace"
    assert rev1["data"]["spec"]["template"]["spec"]["containers"][0]["image"] == "agent:1"
    assert controlled_by(rev1, first)
    assert "$patch" not in first["spec"]["template"]  # the set's own template is not touched
    second = daemon_set("agent:2")
    rev2 = made(plan_history(second, second["spec"]["template"], "h2", [rev1]))
    assert rev2["revision"] == 2 and "annotations" not in rev2["metadata"]
    # nothing to do while the current template is the newest revision
    unchanged = plan_history(second, second["spec"]["template"], "h2", [rev1, rev2])
    assert unchanged.create is None and unchanged.renumber is None and unchanged.delete == []


def test_a_template_that_returns_renumbers_its_revision_and_the_oldest_beyond_the_limit_go() -> None:
    owner = daemon_set("agent:1")
    revs = [{"metadata": {"name": f"agent-h{n}", "uid": f"r{n}", "labels": {REVISION_LABEL: f"h{n}"}}, "revision": n}
            for n in (1, 2, 3, 4)]
    back = plan_history(owner, owner["spec"]["template"], "h2", revs)  # rollback to revision 2's template
    assert back.create is None and back.renumber is revs[1] and back.number == 5
    assert [r["metadata"]["name"] for r in back.delete] == ["agent-h1"]  # limit 2 beside the current one
    kept = plan_history(owner, owner["spec"]["template"], "h2", revs, in_use={"h1"})
    assert kept.delete == []  # still running somewhere
