"""kcp's placement metadata survives a client's replace of the object.

kcp's controllers keep metadata on a user's object that the user's manifest does not hold: the SyncTargets it is
assigned to (labels `state.workload.kcp.io/<target>`), its per-cluster spec diffs and the statuses its syncers
report (annotations `experimental.spec-diff.workload.kcp.io/<target>`, `experimental.status.workload.kcp.io/
<target>`). A `kubectl replace` is a PUT of the manifest: taken as written, it would unassign the object, the
syncers would delete its copies in the clusters and the splitter would put them back a moment later, restarting
every pod of a Deployment for an update that may change nothing. So an update (PUT) that names no key of one
family keeps the stored keys of that family; one that names any key of it (a client that knows the family) is
taken as written, as is every patch (a patch touches only what it names) and every create.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kcp_apiserver.registry.admission import UPDATE, Attributes
from kcpcommon.keys import SPEC_DIFF_ANNOTATION_PREFIX, STATE_LABEL_PREFIX, STATUS_ANNOTATION_PREFIX

ANNOTATION_PREFIXES = (SPEC_DIFF_ANNOTATION_PREFIX, STATUS_ANNOTATION_PREFIX)


def _family(values: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    return {k: v for k, v in values.items() if k.startswith(prefix)}


class PlacementMetadata:
    async def admit(self, attrs: Attributes) -> None:
        if attrs.operation != UPDATE or attrs.subresource or attrs.obj is None or attrs.old is None \
                or attrs.ctx.info.verb != "update":
            return
        old_meta = attrs.old.get("metadata") or {}
        meta = attrs.obj.setdefault("metadata", {})
        for field, prefixes in (("labels", (STATE_LABEL_PREFIX,)), ("annotations", ANNOTATION_PREFIXES)):
            stored = old_meta.get(field) or {}
            for prefix in prefixes:
                kept = _family(stored, prefix)
                if not kept or _family(meta.get(field) or {}, prefix):
                    continue
                if meta.get(field) is None:
                    meta[field] = {}
                meta[field].update(kept)
