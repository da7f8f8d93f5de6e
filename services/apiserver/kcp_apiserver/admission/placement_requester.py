"""Placement admission: whoever sets a Placement's spec is recorded on it, and nobody else can write that record.

A Placement (scheduling.kcp.io) may only use the Locations its author may `bind` in the compute workspace (issue 25:
who may run where). The scheduler that judges it runs later and as itself, so the author is written here, where the
request's user is known: `scheduling.kcp.io/requester` holds `{"username", "groups"}`, set on create and on every
write that changes the spec, kept as it was on any other write; a value the client sent is overwritten (kube's
rule for `bind` on RoleBindings judges the requesting user in the same way)."""

from __future__ import annotations

import json

from kcp_apiserver.registry.admission import CREATE, UPDATE, Attributes

PLACEMENTS = "placements.scheduling.kcp.io"
REQUESTER_ANNOTATION = "scheduling.kcp.io/requester"


class PlacementRequester:
    async def admit(self, attrs: Attributes) -> None:
        if attrs.resource.group_resource != PLACEMENTS or attrs.obj is None or attrs.subresource:
            return
        annotations = attrs.obj.setdefault("metadata", {}).setdefault("annotations", {})
        if annotations is None:
            annotations = attrs.obj["metadata"]["annotations"] = {}
        old = attrs.old or {}
        if attrs.operation == CREATE or (attrs.operation == UPDATE and old.get("spec") != attrs.obj.get("spec")):
            user = attrs.ctx.user
            annotations[REQUESTER_ANNOTATION] = json.dumps({"username": user.name, "groups": sorted(user.groups)})
        elif attrs.operation == UPDATE:
            kept = ((old.get("metadata") or {}).get("annotations") or {}).get(REQUESTER_ANNOTATION)
            if kept is None:
                annotations.pop(REQUESTER_ANNOTATION, None)
            else:
                annotations[REQUESTER_ANNOTATION] = kept
