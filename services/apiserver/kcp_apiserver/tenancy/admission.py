"""Workspace admission: the creator is recorded on the Workspace (kcp's owner annotation), and nobody
rewrites it afterwards; the workspace controller makes that user admin of the child."""

from __future__ import annotations

import json

from kcp_apiserver.registry.admission import CREATE, UPDATE, Attributes
from kcp_apiserver.tenancy.types import OWNER_ANNOTATION, WORKSPACE


class WorkspaceOwner:
    async def admit(self, attrs: Attributes) -> None:
        if attrs.resource.group_resource != WORKSPACE.group_resource or attrs.obj is None:
            return
        annotations = attrs.obj.setdefault("metadata", {}).setdefault("annotations", {})
        if attrs.operation == CREATE:
            user = attrs.ctx.user
            annotations[OWNER_ANNOTATION] = json.dumps({"username": user.name, "groups": list(user.groups)})
        elif attrs.operation == UPDATE and attrs.old is not None:
            kept = ((attrs.old.get("metadata") or {}).get("annotations") or {}).get(OWNER_ANNOTATION)
            if kept is None:
                annotations.pop(OWNER_ANNOTATION, None)
            else:
                annotations[OWNER_ANNOTATION] = kept
