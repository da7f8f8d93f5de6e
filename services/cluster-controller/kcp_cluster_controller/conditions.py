"""SyncTarget conditions: the detail conditions, and Ready computed from them and the syncer's heartbeat.

Pure functions over plain dicts with the time passed in, so the rules are tested with any clock.
Ready is what schedulers read; the detail conditions say why:

- InvalidKubeConfig (Ready only): the kubeconfig does not parse; nothing to retry until it changes.
- ClusterUnreachable (Ready only): the API server did not answer, or refused our credentials.
- HeartbeatHealthy: the syncer wrote `status.lastSyncerHeartbeatTime` less than `threshold` ago.
- SyncerReady: the syncer this controller runs (push) or installed (pull) is there; `none`: Unknown.
- APIsImported: the synced types are published in the logical cluster, or why one is not. When not one
  of the types could be imported (ImportsFailed) the SyncTarget can sync nothing, so Ready is False too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from kcpcommon.kubetime import format_time as timestamp

READY = "Ready"
SYNCER_READY = "SyncerReady"
APIS_IMPORTED = "APIsImported"
HEARTBEAT_HEALTHY = "HeartbeatHealthy"

TRUE, FALSE, UNKNOWN = "True", "False", "Unknown"

INVALID_KUBECONFIG = "InvalidKubeConfig"
UNREACHABLE = "ClusterUnreachable"
NO_HEARTBEAT = "NoHeartbeat"
HEARTBEAT_STALE = "HeartbeatStale"
HEARTBEAT_OK = "HeartbeatReceived"
SYNCER_HEALTHY = "SyncerHealthy"
IMPORT_FAILED = "ImportFailed"
IMPORTS_FAILED = "ImportsFailed"

Condition = dict[str, Any]


def condition(type_: str, status: str, reason: str, message: str = "") -> Condition:
    return {"type": type_, "status": status, "reason": reason, "message": message}


def find(conditions: Sequence[Mapping[str, Any]] | None, type_: str) -> Mapping[str, Any] | None:
    for cond in conditions or ():
        if cond.get("type") == type_:
            return cond
    return None


def merge(old: Sequence[Mapping[str, Any]] | None, new: Sequence[Condition], now: datetime) -> list[Condition]:
    """`new` replaces the conditions of its types; lastTransitionTime moves only when a status changes."""
    out = {str(c.get("type")): dict(c) for c in old or ()}
    for cond in new:
        previous = out.get(cond["type"]) or {}
        moved = previous.get("status") != cond["status"]
        since = previous.get("lastTransitionTime") if not moved and previous.get("lastTransitionTime") else timestamp(now)
        out[cond["type"]] = {**cond, "lastTransitionTime": since}
    order = [READY, SYNCER_READY, HEARTBEAT_HEALTHY, APIS_IMPORTED]
    return sorted(out.values(), key=lambda c: (order.index(c["type"]) if c["type"] in order else len(order),
                                              c["type"]))


def heartbeat(last: datetime | None, now: datetime, threshold: float) -> tuple[Condition, float | None]:
    """HeartbeatHealthy, and the seconds until it would turn stale (None when it already is)."""
    if last is None:
        return condition(HEARTBEAT_HEALTHY, FALSE, NO_HEARTBEAT, "the syncer has not reported yet"), None
    age = (now - last).total_seconds()
    if age > threshold:
        return condition(HEARTBEAT_HEALTHY, FALSE, HEARTBEAT_STALE,
                         f"no syncer heartbeat for {age:.0f}s (threshold {threshold:.0f}s)"), None
    return condition(HEARTBEAT_HEALTHY, TRUE, HEARTBEAT_OK, ""), max(0.0, threshold - age)


def import_failures(errors: Mapping[str, str], requested: Sequence[str]) -> Condition:
    """APIsImported=False naming each type that failed; ImportsFailed when every requested type did."""
    reason = IMPORTS_FAILED if requested and set(requested) <= set(errors) else IMPORT_FAILED
    text = "; ".join(f"{r}: {e}" for r, e in sorted(errors.items()))
    return condition(APIS_IMPORTED, FALSE, reason, text[:30000])


def ready(details: Sequence[Mapping[str, Any]]) -> Condition:
    """Ready from the detail conditions: True only while the heartbeat is healthy and some type was
    imported; else the first reason."""
    imports = find(details, APIS_IMPORTED)
    if imports is not None and imports.get("reason") == IMPORTS_FAILED:
        return condition(READY, FALSE, IMPORTS_FAILED, f"no type could be imported: {imports.get('message') or ''}")
    beat = find(details, HEARTBEAT_HEALTHY)
    if beat is not None and beat.get("status") == TRUE:
        return condition(READY, TRUE, "SyncerHeartbeating", "")
    syncer = find(details, SYNCER_READY)
    if syncer is not None and syncer.get("status") == FALSE:
        return condition(READY, FALSE, str(syncer.get("reason") or "SyncerNotReady"), str(syncer.get("message") or ""))
    if beat is not None:
        return condition(READY, FALSE, str(beat.get("reason")), str(beat.get("message") or ""))
    return condition(READY, UNKNOWN, "Pending", "")


def not_ready(reason: str, message: str) -> list[Condition]:
    """For a cluster that cannot be reached at all (kubeconfig, network, credentials): Ready=False, and the
    syncer's conditions with it (a syncer cannot be ready, nor its heartbeat healthy, without its cluster),
    so no condition on the object still reads True from before."""
    return [condition(READY, FALSE, reason, message),
            condition(SYNCER_READY, FALSE, reason, "the syncer cannot work while its cluster cannot be reached"),
            condition(HEARTBEAT_HEALTHY, FALSE, reason, "the syncer cannot work while its cluster cannot be reached")]
