"""kcp's placement metadata survives a client's replace of the object.

kcp's controllers keep metadata on a user's object that the user's manifest does not hold: the SyncTargets it is
assigned to (labels `state.workload.kcp.io/<target>`), its per-cluster spec diffs and the statuses its syncers
report (annotations `experimental.spec-diff.workload.kcp.io/<target>`, `experimental.status.workload.kcp.io/
<target>`). A `kubectl replace` is a PUT of the manifest: taken as written, it would unassign the object, the
syncers would delete its copies in the clusters and the splitter would put them back a moment later, restarting
every pod of a Deployment for an update that may change nothing. So an update (PUT) that names no key of one
family keeps the stored keys of that family; one that names any key of it (a client that knows the family) is
taken as written, as is every create. On any update, a patch too, a target still assigned keeps its diff and its
status if the write dropped them (`kubectl rollout undo` replaces the whole annotation map).
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
        if attrs.operation != UPDATE or attrs.subresource or attrs.obj is None or attrs.old is None:
            return
        old_meta = attrs.old.get("metadata") or {}
        meta = attrs.obj.setdefault("metadata", {})
        _keep_per_target(old_meta, meta)
        if attrs.ctx.info.verb != "update":
            return
        for field, prefixes in (("labels", (STATE_LABEL_PREFIX,)), ("annotations", ANNOTATION_PREFIXES)):
            stored = old_meta.get(field) or {}
            for prefix in prefixes:
                kept = _family(stored, prefix)
                if not kept or _family(meta.get(field) or {}, prefix):
                    continue
                if meta.get(field) is None:
                    meta[field] = {}
                meta[field].update(kept)


def _keep_per_target(old_meta: Mapping[str, Any], meta: dict[str, Any]) -> None:
    """Any write (`kubectl rollout undo` replaces the whole annotation map with a JSON patch): a target still
    assigned (its state label there before and after) keeps its diff and its status if the write dropped them.
    Whoever moves a share off a target removes its label with them; a target newly assigned keeps nothing."""
    old_labels, labels = old_meta.get("labels") or {}, meta.get("labels") or {}
    stored = old_meta.get("annotations") or {}
    annotations = meta.get("annotations") or {}
    kept = {}
    for prefix in ANNOTATION_PREFIXES:
        for key, value in _family(stored, prefix).items():
            label = STATE_LABEL_PREFIX + key[len(prefix):]
            if key not in annotations and label in old_labels and labels.get(label) == old_labels[label]:
                kept[key] = value
    if kept:
        meta["annotations"] = {**annotations, **kept}
