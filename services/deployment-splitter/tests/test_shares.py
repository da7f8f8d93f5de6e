"""A root's shares live on the root: state labels, spec diffs, reported statuses (shares.py)."""

from __future__ import annotations

import json
from typing import Any

from kcp_deployment_splitter.names import ASSIGNMENT_LABEL
from kcp_deployment_splitter.shares import (
    diff_for,
    replicas_of_diff,
    reported_status,
    share_view,
    shares_of,
    shares_patch,
    spec_diff_annotation,
    state_label,
    status_annotation,
)


def root(**annotations: str) -> dict[str, Any]:
    return {"metadata": {"name": "web", "namespace": "default", "generation": 4, "labels": {"app": "web"},
                         "annotations": dict(annotations)},
            "spec": {"replicas": 15}}


def applied(obj: dict[str, Any], patch: dict[str, Any] | None) -> dict[str, Any]:
    """`patch` merged into `obj`'s metadata as the server would."""
    assert patch is not None
    meta = obj["metadata"]
    for field in ("labels", "annotations"):
        merged = {**(meta.get(field) or {}), **patch["metadata"].get(field, {})}
        meta[field] = {k: v for k, v in merged.items() if v is not None}
    return obj


def test_a_split_is_one_patch_of_labels_and_diffs_and_reads_back_as_shares() -> None:
    obj = root()
    patch = shares_patch(obj, {"east": 8, "west": 7}, {})
    assert patch == {"metadata": {
        "labels": {state_label("east"): "Sync", state_label("west"): "Sync"},
        "annotations": {spec_diff_annotation("east"): '[{"op":"replace","path":"/replicas","value":8}]',
                        spec_diff_annotation("west"): '[{"op":"replace","path":"/replicas","value":7}]'}}}
    applied(obj, patch)
    assert shares_of(obj) == {"east": 8, "west": 7}
    assert obj["metadata"]["labels"]["app"] == "web"  # the user's labels stay
    assert shares_patch(obj, {"east": 8, "west": 7}, {}) is None


def test_a_target_left_loses_its_label_diff_and_status_at_once() -> None:
    obj = applied(root(), shares_patch(root(), {"east": 8, "west": 7}, {}))
    obj["metadata"]["annotations"][status_annotation("west")] = json.dumps({"replicas": 7})
    moved = shares_patch(obj, {"east": 15}, {})
    assert moved is not None
    assert moved["metadata"]["labels"] == {state_label("west"): None}
    assert moved["metadata"]["annotations"] == {spec_diff_annotation("east"): diff_for(15),
                                                spec_diff_annotation("west"): None, status_annotation("west"): None}
    assert shares_of(applied(obj, moved)) == {"east": 15}


def test_only_a_labelled_target_with_a_readable_diff_is_a_share() -> None:
    obj = root(**{spec_diff_annotation("east"): diff_for(3), spec_diff_annotation("west"): "not json"})
    obj["metadata"]["labels"].update({state_label("west"): "Sync"})
    assert shares_of(obj) == {}  # east is not labelled, west's diff is unreadable
    obj["metadata"]["labels"][state_label("east")] = "Sync"
    assert shares_of(obj) == {"east": 3}
    assert replicas_of_diff('[{"op":"replace","path":"/replicas","value":true}]') is None
    assert replicas_of_diff('{"replicas": 3}') is None


def test_a_pinned_deployment_runs_its_replicas_on_its_target() -> None:
    pinned = {"metadata": {"labels": {ASSIGNMENT_LABEL: "east"}}, "spec": {"replicas": 4}}
    assert shares_of(pinned) == {"east": 4}
    assert shares_of({"metadata": {"labels": {ASSIGNMENT_LABEL: "east"}}, "spec": {}}) == {"east": 1}


def test_a_share_view_is_the_clusters_deployment_as_kcp_knows_it() -> None:
    status = {"observedGeneration": 4, "replicas": 8, "readyReplicas": 6}
    obj = root(**{status_annotation("east"): json.dumps(status)})
    view = share_view(obj, "east", 8)
    assert view["spec"] == {"replicas": 8} and view["status"] == status
    assert view["metadata"]["generation"] == 4
    assert reported_status(obj, "west") == {}
    assert reported_status(root(**{status_annotation("east"): "[1]"}), "east") == {}


def test_a_new_share_starts_unreported_even_where_an_old_report_was_left() -> None:
    obj = root(**{status_annotation("west"): json.dumps({"availableReplicas": 7})})  # a late write of an old share
    patch = shares_patch(obj, {"east": 8, "west": 7}, {})
    assert patch is not None and patch["metadata"]["annotations"][status_annotation("west")] is None
    placed = applied(obj, patch)
    placed["metadata"]["annotations"][status_annotation("west")] = json.dumps({"availableReplicas": 7})
    assert shares_patch(placed, {"east": 8, "west": 7}, {}) is None  # a share's own report is kept
