"""HorizontalPodAutoscalers as kube serves them: the versions each release serves, the v1 <-> v2
conversion (v1's cpu target, v2's other fields kept in v1's annotations), kube's defaults and validation
and the TARGETS column."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kcp_apiserver.embedding import hpaversions
from kcp_sim_cluster.api import autoscaling, resource, resources

PLURAL = "horizontalpodautoscalers"


def v2_hpa(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                     "maxReplicas": 5, **spec}}


def cpu(utilization: int) -> dict[str, Any]:
    return {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                        "averageUtilization": utilization}}}


PODS_METRIC = {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue",
                                                                              "averageValue": "10"}}}


@pytest.mark.parametrize(("release", "versions"), [("1.25", ["v2", "v1", "v2beta2"]), ("1.26", ["v2", "v1"]),
                                                   ("1.35", ["v2", "v1"])])
def test_each_release_serves_kubes_versions_v2_first(release: str, versions: list[str]) -> None:
    served = [r for r in resources(release) if r.plural == PLURAL]
    assert [r.version for r in served] == versions
    assert all(r.short_names == ("hpa",) and r.categories == ("all",) and r.has_status for r in served)


def test_v1_shows_the_cpu_target_and_keeps_the_rest_in_annotations() -> None:
    stored = v2_hpa(minReplicas=2, metrics=[PODS_METRIC, cpu(50)], behavior={"scaleDown": {
        "stabilizationWindowSeconds": 30}})
    stored["status"] = {"currentReplicas": 3, "desiredReplicas": 4, "conditions": [
        {"type": "AbleToScale", "status": "True", "reason": "ReadyForNewScale"}], "currentMetrics": [
        {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 70,
                                                                     "averageValue": "70m"}}}]}
    v1 = hpaversions.to_v1(stored)
    assert v1["apiVersion"] == "autoscaling/v1"
    assert v1["spec"] == {"scaleTargetRef": stored["spec"]["scaleTargetRef"], "minReplicas": 2, "maxReplicas": 5,
                          "targetCPUUtilizationPercentage": 50}
    assert v1["status"] == {"currentReplicas": 3, "desiredReplicas": 4, "currentCPUUtilizationPercentage": 70}
    notes = v1["metadata"]["annotations"]
    assert json.loads(notes[hpaversions.METRICS_ANNOTATION]) == [
        {"type": "Pods", "pods": {"metricName": "qps", "targetAverageValue": "10"}}]
    assert json.loads(notes[hpaversions.CURRENT_METRICS_ANNOTATION]) == [
        {"type": "Resource", "resource": {"name": "cpu", "currentAverageUtilization": 70,
                                          "currentAverageValue": "70m"}}]
    assert json.loads(notes[hpaversions.BEHAVIOR_ANNOTATION]) == {"scaleDown": {"stabilizationWindowSeconds": 30}}
    assert json.loads(notes[hpaversions.CONDITIONS_ANNOTATION])[0]["reason"] == "ReadyForNewScale"
    assert stored.get("metadata", {}).get("annotations") is None  # the stored object is left alone


def test_what_v1_shows_converts_back_to_the_same_v2_object() -> None:
    stored = v2_hpa(minReplicas=2, metrics=[PODS_METRIC, cpu(50)], behavior={"scaleDown": {
        "stabilizationWindowSeconds": 30}})
    stored["status"] = {"currentReplicas": 3, "desiredReplicas": 4, "currentMetrics": [
        {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 70}}}]}
    assert hpaversions.to_v2(hpaversions.to_v1(stored)) == stored


def test_a_plain_v1_object_becomes_one_cpu_metric() -> None:
    v1 = {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"},
          "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3,
                   "targetCPUUtilizationPercentage": 60},
          "status": {"currentReplicas": 1, "desiredReplicas": 1, "currentCPUUtilizationPercentage": 20}}
    v2 = hpaversions.to_v2(v1)
    assert v2["apiVersion"] == "autoscaling/v2" and "annotations" not in v2["metadata"]
    assert v2["spec"]["metrics"] == [cpu(60)]
    assert v2["status"]["currentMetrics"] == [
        {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 20}}}]


def test_defaults_are_kubes() -> None:
    strategy = resource("1.35", "autoscaling", PLURAL).strategy
    obj = v2_hpa(behavior={"scaleDown": {"stabilizationWindowSeconds": 60}})
    strategy.prepare_for_create(obj)
    spec = obj["spec"]
    assert spec["minReplicas"] == 1
    assert spec["metrics"] == [cpu(80)]
    assert spec["behavior"]["scaleDown"] == {"stabilizationWindowSeconds": 60, "selectPolicy": "Max", "policies": [
        {"type": "Percent", "value": 100, "periodSeconds": 15}]}
    assert spec["behavior"]["scaleUp"]["policies"] == [{"type": "Pods", "value": 4, "periodSeconds": 15},
                                                       {"type": "Percent", "value": 100, "periodSeconds": 15}]
    assert obj["status"] == {"desiredReplicas": 0}
    without = v2_hpa()
    strategy.prepare_for_create(without)
    assert "behavior" not in without["spec"]  # kube fills in a behavior only when one is given


@pytest.mark.parametrize(("spec", "expected"), [
    ({"minReplicas": 0}, [("spec.minReplicas", "Invalid value: 0: must be greater than or equal to 1"),
                          ("spec.metrics", "Forbidden: must specify at least one Object or External metric to support "
                                           "scaling to zero replicas")]),
    ({"minReplicas": 7}, [("spec.maxReplicas", "Invalid value: 5: must be greater than or equal to `minReplicas`")]),
    ({"scaleTargetRef": {"name": "web"}}, [("spec.scaleTargetRef.kind", "Required value")]),
    ({"metrics": [{"type": "Pods"}]},
     [("spec.metrics[0].pods", "Required value: must populate information for the given metric source")]),
    ({"metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                               "averageUtilization": 0}}}]},
     [("spec.metrics[0].resource.target.averageUtilization", "Invalid value: 0: must be greater than 0")]),
    ({"behavior": {"scaleUp": {"stabilizationWindowSeconds": 4000}}},
     [("spec.behavior.scaleUp.stabilizationWindowSeconds", "Invalid value: 4000: must be less than or equal to 3600")]),
])
def test_validation_is_kubes(spec: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    strategy = resource("1.35", "autoscaling", PLURAL).strategy
    obj = v2_hpa(**spec)
    strategy.prepare_for_create(obj)
    assert [(c.field, c.message) for c in strategy.validate(obj)] == expected


def test_targets_column_reads_any_version() -> None:
    stored = v2_hpa(metrics=[cpu(50), PODS_METRIC, cpu(60)])
    stored["status"] = {"currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {
        "averageUtilization": 20}}}]}
    assert autoscaling.metrics_text(stored) == "cpu: 20%/50%, <unknown>/10 + 1 more..."
    assert autoscaling.metrics_text(hpaversions.to_v1(v2_hpa(metrics=[cpu(50)]))) == "cpu: <unknown>/50%"
