"""The author of a Placement's spec is recorded on it by admission, and a client cannot forge or erase it."""

from __future__ import annotations

import json
from typing import Any

from kcp_apiserver.admission.placement_requester import REQUESTER_ANNOTATION, PlacementRequester
from kcp_apiserver.apimachinery.request import RequestContext, RequestInfo, UserInfo
from kcp_apiserver.registry.admission import CREATE, UPDATE, Attributes
from kcp_apiserver.registry.resource import Resource

PLACEMENT = Resource("scheduling.kcp.io", "v1alpha1", "Placement", "placements", "placement", False)
BOB = UserInfo("bob", groups=("team-b", "system:authenticated"))
MALLORY = UserInfo("mallory", groups=("system:authenticated",))


def write(user: UserInfo, operation: str, obj: dict[str, Any], old: dict[str, Any] | None) -> Attributes:
    info = RequestInfo("root:team-b", "", True, "update", "apis", "scheduling.kcp.io", "v1alpha1", "", "placements",
                       "p")
    return Attributes(RequestContext(info, user=user), PLACEMENT, operation, "", "p", obj, old)


def requester(obj: dict[str, Any]) -> Any:
    return json.loads(obj["metadata"]["annotations"][REQUESTER_ANNOTATION])


async def test_the_author_of_the_spec_is_recorded_and_kept_by_writes_that_leave_the_spec_alone() -> None:
    plugin = PlacementRequester()
    created: dict[str, Any] = {"metadata": {"name": "p", "annotations": {REQUESTER_ANNOTATION: "forged"}},
                               "spec": {"locationSelectors": [{"matchLabels": {"region": "eu"}}]}}
    await plugin.admit(write(BOB, CREATE, created, None))
    assert requester(created) == {"username": "bob", "groups": ["system:authenticated", "team-b"]}
    relabelled: dict[str, Any] = {"metadata": {"name": "p", "labels": {"x": "y"},
                                               "annotations": {REQUESTER_ANNOTATION: '{"username": "admin"}'}},
                                  "spec": created["spec"]}
    await plugin.admit(write(MALLORY, UPDATE, relabelled, created))
    assert requester(relabelled)["username"] == "bob"  # the spec is bob's: mallory only labelled it
    moved: dict[str, Any] = {"metadata": {"name": "p"}, "spec": {"locationSelectors": [{"matchLabels": {"region": "us"}}]}}
    await plugin.admit(write(MALLORY, UPDATE, moved, relabelled))
    assert requester(moved)["username"] == "mallory"  # the new spec is mallory's, judged with her rights
