"""ReplicationControllers: kube's defaults (selector and labels from the template), validation of the
label-map selector against the template, and the replication manager reading that map as a selector."""

from __future__ import annotations

from kcp_sim_cluster.api import resource
from kcp_sim_cluster.controlplane.claims import selector_of

RELEASE = "1.25"


def rc(**spec: object) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "rc", "namespace": "default"},
            "spec": {"template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}, **spec}}


def test_selector_labels_and_replicas_default_from_the_template() -> None:
    obj = rc()
    resource(RELEASE, "", "replicationcontrollers").strategy.prepare_for_create(obj)
    assert obj["spec"]["selector"] == {"app": "web"}  # type: ignore[index]
    assert obj["metadata"]["labels"] == {"app": "web"}  # type: ignore[index]
    assert obj["spec"]["replicas"] == 1  # type: ignore[index]
    assert obj["status"] == {"replicas": 0}


def test_a_selector_that_misses_the_template_is_invalid() -> None:
    strategy = resource(RELEASE, "", "replicationcontrollers").strategy
    obj = rc(selector={"app": "other"})
    strategy.prepare_for_create(obj)
    causes = strategy.validate(obj)
    assert [c.field for c in causes] == ["spec.template.metadata.labels"]
    assert "`selector` does not match template `labels`" in causes[0].message


def test_the_replication_manager_reads_the_label_map_as_a_selector() -> None:
    selector = selector_of(rc(selector={"app": "web"}))
    assert selector is not None
    assert selector.matches({"app": "web", "extra": "x"})
    assert not selector.matches({"app": "other"})


def test_pod_templates_are_served() -> None:
    served = resource(RELEASE, "", "podtemplates")
    assert served.kind == "PodTemplate" and served.namespaced
