"""The DaemonSet rule: on every usable target, following them as they come and go, its status the sum."""

from __future__ import annotations

import copy
import json
from datetime import timedelta
from typing import Any

from kcp_deployment_splitter.daemonsets import NO_DIFF, spread_by_rule, spread_patch, spread_targets
from kcp_deployment_splitter.expectations import Expectations
from kcp_deployment_splitter.names import ASSIGNMENT_LABEL, NAMESPACE_PLACED_ANNOTATION, state_label
from kcp_deployment_splitter.namespaces import follows_namespace
from kcp_deployment_splitter.reconcile_daemonsets import DaemonSetSpreader
from kcp_deployment_splitter.reconcile_dependencies import USES_INDEX, users_of, uses_index
from kcp_deployment_splitter.shares import spec_diff_annotation, status_annotation
from splitter_fakes import CLUSTER, NOW, Writes, sync_target

from kcpcommon.keys import CLUSTER_ANNOTATION, ObjectKey, key_for
from kcpcommon.store import Indexer

KEY = ObjectKey(CLUSTER, "default", "agent")


def daemonset(labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None,
              generation: int = 2) -> dict[str, Any]:
    return {"metadata": {"name": "agent", "namespace": "default", "uid": "uid-agent", "generation": generation,
                         "resourceVersion": "1", "labels": dict(labels or {}),
                         "annotations": {CLUSTER_ANNOTATION: CLUSTER, **(annotations or {})}},
            "spec": {"selector": {"matchLabels": {"app": "agent"}},
                     "template": {"metadata": {"labels": {"app": "agent"}},
                                  "spec": {"containers": [{"name": "agent", "image": "agent:1"}],
                                           "volumes": [{"name": "c", "configMap": {"name": "agent-config"}}]}}}}


def spread_on(*targets: str, **reports: dict[str, int]) -> dict[str, Any]:
    ds = daemonset()
    patch = spread_patch(ds, targets)
    assert patch is not None
    ds["metadata"]["labels"].update(patch["metadata"]["labels"])
    ds["metadata"]["annotations"].update(patch["metadata"]["annotations"])
    for target, status in reports.items():
        ds["metadata"]["annotations"][status_annotation(target)] = json.dumps(status)
    return ds


def report(nodes: int, ready: int, generation: int = 2) -> dict[str, int]:
    return {"currentNumberScheduled": nodes, "desiredNumberScheduled": nodes, "numberMisscheduled": 0,
            "numberReady": ready, "numberAvailable": ready, "updatedNumberScheduled": nodes,
            "observedGeneration": generation}


def spreader(ds: dict[str, Any], *targets: dict[str, Any]) -> tuple[DaemonSetSpreader, Writes, Indexer]:
    daemonsets, cache = Indexer(key_for), Indexer(key_for)
    daemonsets.upsert(ds)
    for target in targets:
        cache.upsert(target)
    writes = Writes(daemonsets)
    return DaemonSetSpreader(writes, daemonsets=daemonsets, targets=cache, namespaces=None,  # type: ignore[arg-type]
                             grace_period=30, expectations=Expectations(ttl=15, clock=lambda: 0.0),
                             now=lambda: NOW), writes, daemonsets


def test_who_places_a_daemonset() -> None:
    assert spread_by_rule(daemonset())
    assert spread_by_rule(daemonset({ASSIGNMENT_LABEL: "east"}, {NAMESPACE_PLACED_ANNOTATION: "true"}))
    assert not spread_by_rule(daemonset({ASSIGNMENT_LABEL: "east"}))  # a person's pin
    assert not spread_by_rule(daemonset({state_label("east"): "Sync"}))  # a person's placement: no diff
    assert spread_by_rule(spread_on("east", "west"))
    assert not follows_namespace("DaemonSet", daemonset())  # never labelled by the namespace rule


def test_the_patch_places_exactly_the_targets_and_takes_over_from_the_namespace_rule() -> None:
    ds = spread_on("east", "west", west=report(2, 2))
    assert spread_targets(ds) == {"east", "west"}
    assert spread_patch(ds, {"east", "west"}) is None
    assert spread_patch(ds, {"east"}) == {"metadata": {
        "labels": {state_label("west"): None},
        "annotations": {spec_diff_annotation("west"): None, status_annotation("west"): None}}}
    ruled = daemonset({ASSIGNMENT_LABEL: "east"}, {NAMESPACE_PLACED_ANNOTATION: "true"})
    assert spread_patch(ruled, {"east", "west"}) == {"metadata": {
        "labels": {state_label("east"): "Sync", state_label("west"): "Sync", ASSIGNMENT_LABEL: None},
        "annotations": {spec_diff_annotation("east"): NO_DIFF, spec_diff_annotation("west"): NO_DIFF,
                        NAMESPACE_PLACED_ANNOTATION: None}}}


async def test_a_daemonset_goes_on_every_ready_target_and_its_status_is_the_sum() -> None:
    spread, _writes, cache = spreader(daemonset(), sync_target("east"), sync_target("west"),
                                     sync_target("new", ready="False", since=NOW))
    await spread.reconcile(KEY)
    assert spread_targets(cache.get(KEY) or {}) == {"east", "west"}  # not the one never Ready
    assert (cache.get(KEY) or {})["status"]["observedGeneration"] == 1  # nobody reported generation 2 yet
    reported = copy.deepcopy(cache.get(KEY) or {})
    for target, nodes in (("east", 3), ("west", 2)):
        reported["metadata"]["annotations"][status_annotation(target)] = json.dumps(report(nodes, nodes))
    cache.upsert(reported)
    spread.expectations.forget(KEY)
    await spread.reconcile(KEY)
    status = (cache.get(KEY) or {})["status"]
    assert (status["desiredNumberScheduled"], status["numberReady"], status["updatedNumberScheduled"],
            status["observedGeneration"]) == (5, 5, 5, 2)
    assert "numberUnavailable" not in status


async def test_a_target_not_ready_keeps_its_copy_but_none_of_its_pods_counts_and_an_evicted_one_loses_it() -> None:
    evicted = sync_target("gone")
    evicted["spec"]["evictAfter"] = "2026-11-25T11:00:00Z"
    ds = spread_on("east", "west", "gone", east=report(3, 3), west=report(2, 2), gone=report(4, 4))
    spread, _writes, cache = spreader(ds, sync_target("east"),
                                     sync_target("west", ready="False", since=NOW - timedelta(minutes=5)), evicted)
    await spread.reconcile(KEY)
    assert spread_targets(cache.get(KEY) or {}) == {"east", "west"}
    status = (cache.get(KEY) or {})["status"]
    assert (status["desiredNumberScheduled"], status["numberReady"], status["numberUnavailable"]) == (5, 3, 2)


def test_a_spread_daemonset_uses_what_its_template_names_on_its_targets() -> None:
    daemonsets = Indexer(key_for, {USES_INDEX: uses_index})
    daemonsets.upsert(spread_on("east", "west"))
    config = {"metadata": {"name": "agent-config", "namespace": "default"}}
    assert users_of([daemonsets], CLUSTER, "default", "ConfigMap", config) == {"east", "west"}
    assert users_of([daemonsets], CLUSTER, "default", "Service",
                    {"metadata": {"name": "agent"}, "spec": {"selector": {"app": "agent"}}}) == {"east", "west"}
