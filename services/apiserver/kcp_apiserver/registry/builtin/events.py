"""events.k8s.io/v1 Events are core/v1 Events seen another way, as in kube: one storage, two shapes.

A controller that records events.k8s.io Events (client-go's newer recorder) and a user running
`kubectl get events` (core/v1) must see the same objects, so events.k8s.io Events are stored as core
Events and converted on the way in and out. The fields are the same but for these names.
"""

from __future__ import annotations

from kcp_apiserver.registry.resource import Obj

CORE_TO_EVENTS = {
    "involvedObject": "regarding",
    "message": "note",
    "reportingComponent": "reportingController",
    "source": "deprecatedSource",
    "firstTimestamp": "deprecatedFirstTimestamp",
    "lastTimestamp": "deprecatedLastTimestamp",
    "count": "deprecatedCount",
}
EVENTS_TO_CORE = {v: k for k, v in CORE_TO_EVENTS.items()}


def to_events_v1(core: Obj) -> Obj:
    """A stored core/v1 Event as events.k8s.io/v1 shows it."""
    return _renamed(core, "events.k8s.io/v1", CORE_TO_EVENTS)


def to_core_v1(event: Obj) -> Obj:
    """An events.k8s.io/v1 Event in the core/v1 shape it is stored in."""
    return _renamed(event, "v1", EVENTS_TO_CORE)


def _renamed(obj: Obj, api_version: str, names: dict[str, str]) -> Obj:
    out: Obj = {"apiVersion": api_version, "kind": "Event"}
    for key, value in obj.items():
        if key not in ("apiVersion", "kind"):
            out[names.get(key, key)] = value
    return out
