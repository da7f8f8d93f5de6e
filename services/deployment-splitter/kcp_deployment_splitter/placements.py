"""Placements: a team's workspace runs on SyncTargets it never registered (issue 25's shared compute).

kcp's Placement is the anchor. A `Placement` in workspace W names a compute workspace C
(`spec.locationWorkspace`), the Locations there it wants (`spec.locationSelectors`: any of them; none means
all), the namespaces of W it places (`spec.namespaceSelector`: absent selects none, `{}` all, as kcp) and
`spec.numberOfClusters` (1 by default). It may use only the selected Locations whose `bind` its author holds in
C (judged by the placement controller, `reconcile_placements.py`, which writes the usable ones to
`status.locations` and their SyncTargets to `status.syncTargets`). When several Placements select one namespace
the oldest governs it (then by name) and the others report the conflict.

The namespace scheduler then puts each governed namespace on `numberOfClusters` of those SyncTargets (kept while
usable, the rest by rendezvous hashing so namespaces spread and a change moves few), writing to the Namespace
`placed.workload.kcp.io/<key>: Placed` per SyncTarget (`kcpcommon.keys.placed_label`, which the syncer of that
SyncTarget follows) and the assignment label naming the first. A SyncTarget the namespace leaves is marked
`Draining` until nothing of the namespace is assigned to it any more, so its syncer keeps serving the workspace
and the splitter shrinks its children only as the new ones become available (make-before-break).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kcpcommon.keys import PLACED, PLACED_LABEL_PREFIX, ObjectKey, cluster_of, placed_label, sync_target_key
from kcpcommon.keys import placed_keys as labels_placed_keys
from kcpcommon.labelselector import selector_matches
from kcpcommon.store import CLUSTER_INDEX, IndexReader

PLACEMENTS = ("scheduling.kcp.io/v1alpha1", "placements")
LOCATIONS = ("scheduling.kcp.io/v1alpha1", "locations")
DRAINING = "Draining"  # a placed label's value while the namespace leaves that SyncTarget
TARGET_KEY_INDEX = "splitter-synctarget-key"  # SyncTargets by sync_target_key(workspace, name)
PLACED_INDEX = "splitter-placed"  # Namespaces by the keys of their placed labels
LOCATION_WORKSPACE_INDEX = "splitter-location-workspace"  # Placements by the workspace of their Locations

Obj = Mapping[str, Any]


def _meta(obj: Obj) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def target_key_index(target: Obj) -> list[str]:
    cluster, name = cluster_of(target), _meta(target).get("name")
    return [sync_target_key(cluster, str(name))] if cluster and name else []


def placed_keys(namespace: Obj) -> dict[str, str]:
    """The SyncTarget keys a Namespace's placed labels name -> `Placed` or `Draining`."""
    return labels_placed_keys(_meta(namespace).get("labels"))


def placed_index(namespace: Obj) -> list[str]:
    return sorted(placed_keys(namespace))


def location_workspace(placement: Obj) -> str:
    """The compute workspace of a Placement: its spec's, or its own workspace's."""
    return str((placement.get("spec") or {}).get("locationWorkspace") or cluster_of(placement) or "")


def location_workspace_index(placement: Obj) -> list[str]:
    workspace = location_workspace(placement)
    return [workspace] if workspace else []


def selects_namespace(placement: Obj, namespace: Obj) -> bool:
    """kcp's rule: an absent namespaceSelector selects nothing, an empty one every namespace. A selector that
    cannot be read selects nothing (the placement controller reports it)."""
    selector = (placement.get("spec") or {}).get("namespaceSelector")
    if selector is None or _meta(placement).get("deletionTimestamp"):
        return False
    try:
        return selector_matches(selector, _meta(namespace).get("labels"))
    except ValueError:
        return False


def _age(placement: Obj) -> tuple[str, str]:
    return str(_meta(placement).get("creationTimestamp") or ""), str(_meta(placement).get("name") or "")


def governing(placements: Iterable[Obj], namespace: Obj) -> tuple[Obj | None, list[Obj]]:
    """The Placement that governs `namespace` (the oldest selecting it) and the others that select it too."""
    selecting = sorted((p for p in placements if selects_namespace(p, namespace)), key=_age)
    return (selecting[0], selecting[1:]) if selecting else (None, [])


def selected_locations(placement: Obj, locations: Iterable[Obj]) -> list[Obj]:
    """The Locations (of the compute workspace) that any of the Placement's selectors selects; ValueError on a
    selector that cannot be read."""
    selectors = (placement.get("spec") or {}).get("locationSelectors") or [{}]
    return sorted((loc for loc in locations if not _meta(loc).get("deletionTimestamp")
                   and any(selector_matches(s, _meta(loc).get("labels")) for s in selectors)),
                  key=lambda loc: str(_meta(loc).get("name")))


def location_targets(locations: Iterable[Obj], targets: Iterable[Obj]) -> list[str]:
    """The names of the SyncTargets (of the same workspace) the Locations' instance selectors select."""
    targets = list(targets)
    names: set[str] = set()
    for location in locations:
        selector = (location.get("spec") or {}).get("instanceSelector")
        try:
            names.update(str(_meta(t).get("name")) for t in targets if selector_matches(selector, _meta(t).get("labels")))
        except ValueError:
            continue  # the cluster controller reports it on the Location
    return sorted(names)


def number_of_clusters(placement: Obj) -> int:
    value = (placement.get("spec") or {}).get("numberOfClusters")
    return value if isinstance(value, int) and value > 0 else 1


def choose_targets(cluster: str, namespace: str, current: Sequence[str], usable: Sequence[str], n: int) -> list[str]:
    """`n` of the usable targets: the current ones first (a namespace moves only when it must), then the
    others by rendezvous hash of (workspace, namespace, target), so namespaces spread and adding a target moves
    few of them."""
    kept = [t for t in current if t in usable][:n]

    def rank(target: str) -> str:
        return hashlib.sha256(f"{cluster}\x00{namespace}\x00{target}".encode()).hexdigest()

    rest = sorted((t for t in usable if t not in kept), key=rank)
    return kept + rest[:max(0, n - len(kept))]


def namespace_labels(workspace: str, chosen: Sequence[str], placed: Mapping[str, str], holding: Iterable[str],
                     names: Mapping[str, str]) -> dict[str, str | None]:
    """The merge patch of a Namespace's placed labels: `Placed` for each chosen target, `Draining` for one it
    leaves while `holding` (targets something of the namespace is still assigned to) names it, removed after.
    `placed` is the Namespace's current keys -> value, `names` maps a key to its target's name (in `workspace`)."""
    want = {sync_target_key(workspace, t): PLACED for t in chosen}
    held = set(holding)
    patch: dict[str, str | None] = {}
    for key, value in placed.items():
        if key in want:
            continue
        name = names.get(key)
        leaving = DRAINING if name is not None and name in held else None
        if value != leaving:
            patch[PLACED_LABEL_PREFIX + key] = leaving
    for target in chosen:
        if placed.get(sync_target_key(workspace, target)) != PLACED:
            patch[placed_label(workspace, target)] = PLACED
    return patch


def namespace_targets(targets: IndexReader, namespaces: IndexReader | None, cluster: str,
                      namespace: str) -> tuple[list[Obj], set[str]]:
    """The SyncTargets a namespace's workloads may run on, and those of them it is leaving: its workspace's own
    SyncTargets when it has any (the single-workspace model), else those its placed labels name."""
    local = targets.by_index(CLUSTER_INDEX, cluster)
    if local or namespaces is None:
        return local, set()
    found = namespaces.get(ObjectKey(cluster, "", namespace))
    placed: list[Obj] = []
    draining: set[str] = set()
    for key, value in (placed_keys(found) if found is not None else {}).items():
        for target in targets.by_index(TARGET_KEY_INDEX, key):
            placed.append(target)
            if value == DRAINING:
                draining.add(str(_meta(target).get("name")))
    return placed, draining
