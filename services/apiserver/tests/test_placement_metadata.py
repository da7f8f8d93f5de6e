"""A replace (PUT) of an object that knows nothing of kcp's placement keeps it; a patch, or a PUT naming it, is as
written."""

from __future__ import annotations

import copy
from typing import Any

from kcp_apiserver.admission.placement_metadata import PlacementMetadata
from kcp_apiserver.apimachinery.request import RequestContext, RequestInfo, UserInfo
from kcp_apiserver.registry.admission import UPDATE, Attributes
from kcp_apiserver.registry.resource import Resource

DEPLOYMENT = Resource("apps", "v1", "Deployment", "deployments", "deployment", True)
STORED: dict[str, Any] = {"metadata": {
    "name": "web", "labels": {"app": "web", "state.workload.kcp.io/east": "Sync", "state.workload.kcp.io/west": "Sync"},
    "annotations": {"experimental.spec-diff.workload.kcp.io/east": '[{"op":"replace","path":"/replicas","value":8}]',
                    "experimental.status.workload.kcp.io/east": '{"replicas":8}', "note": "old"}},
    "spec": {"replicas": 15}}


async def admitted(obj: dict[str, Any], verb: str = "update", subresource: str = "") -> dict[str, Any]:
    info = RequestInfo("team", "", True, verb, "apis", "apps", "v1", "default", "deployments", "web")
    await PlacementMetadata().admit(Attributes(RequestContext(info, user=UserInfo("alice")), DEPLOYMENT, UPDATE,
                                               "default", "web", obj, copy.deepcopy(STORED), subresource))
    return obj


async def test_a_replace_from_a_manifest_keeps_the_placement_and_takes_the_rest_as_written() -> None:
    replaced = await admitted({"metadata": {"name": "web", "labels": {"app": "web", "tier": "front"}},
                               "spec": {"replicas": 15}})
    assert replaced["metadata"]["labels"] == {"app": "web", "tier": "front", "state.workload.kcp.io/east": "Sync",
                                              "state.workload.kcp.io/west": "Sync"}
    assert replaced["metadata"]["annotations"] == {k: v for k, v in STORED["metadata"]["annotations"].items()
                                                   if k != "note"}  # the user's own annotation went, as written


async def test_a_replace_naming_the_family_a_patch_and_a_status_write_are_taken_as_written() -> None:
    knows = {"metadata": {"name": "web", "labels": {"state.workload.kcp.io/east": "Sync"}}}
    assert (await admitted(copy.deepcopy(knows)))["metadata"]["labels"] == {"state.workload.kcp.io/east": "Sync"}
    patched = {"metadata": {"name": "web", "labels": {"app": "web"}}}  # a patch that removed the shares
    assert (await admitted(copy.deepcopy(patched), verb="patch"))["metadata"] == patched["metadata"]
    assert (await admitted(copy.deepcopy(patched), subresource="status"))["metadata"] == patched["metadata"]


async def test_a_patch_that_replaces_every_annotation_keeps_the_shares_of_targets_still_assigned() -> None:
    """`kubectl rollout undo` replaces the whole annotation map (a JSON patch) with the revision's: the targets the
    object is still assigned to keep their diff and status; a target whose label went (a share moved) does not."""
    undone = copy.deepcopy(STORED)
    undone["metadata"]["annotations"] = {"kubernetes.io/change-cause": "first"}
    kept = (await admitted(undone, verb="patch"))["metadata"]["annotations"]
    assert kept == {"kubernetes.io/change-cause": "first",
                    **{k: v for k, v in STORED["metadata"]["annotations"].items() if k != "note"}}
    moved = copy.deepcopy(STORED)
    del moved["metadata"]["labels"]["state.workload.kcp.io/east"]
    moved["metadata"]["annotations"] = {"note": "old"}
    assert (await admitted(moved, verb="patch"))["metadata"]["annotations"] == {"note": "old"}
