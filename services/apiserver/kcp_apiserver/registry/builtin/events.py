"""Events: the events.k8s.io group, and what both Event APIs share.

events.k8s.io/v1 Events are core/v1 Events seen another way, as in kube: one storage, two shapes.
A controller that records events.k8s.io Events (client-go's newer recorder) and a user running
`kubectl get events` (core/v1) must see the same objects, so events.k8s.io Events are stored as core
Events and converted on the way in and out. The fields are the same but for these names.
"""

from __future__ import annotations

from datetime import UTC, datetime

from kcp_apiserver.registry.resource import Column, FieldGetter, Obj, Resource
from kcp_apiserver.registry.tables import human_duration, parse_time

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

_REFERENCE = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")

# kube's field labels for Events (core/v1 conversion.go and the event strategy's selectable fields)
CORE_FIELD_SELECTORS = (*(f"involvedObject.{f}" for f in _REFERENCE), "reason", "reportingComponent", "type")
# events.k8s.io/v1 accepts the same set under its own names, and has no `source`
EVENTS_FIELD_SELECTORS = (*(f"regarding.{f}" for f in _REFERENCE), "reason", "reportingController", "type")


def _source(core: Obj) -> str:
    """kube selects `source` on the source component, or the reporting controller when that is empty."""
    source = core.get("source")
    component = source.get("component") if isinstance(source, dict) else None
    return str(component or core.get("reportingComponent") or "")


CORE_FIELD_GETTERS: tuple[tuple[str, FieldGetter], ...] = (("source", _source),)


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


def _event_object(o: Obj) -> str:
    ref = o.get("involvedObject") or o.get("regarding") or {}
    return f"{str(ref.get('kind', '')).lower()}/{ref.get('name', '')}"


def _event_last_seen(o: Obj) -> str:
    stamp = parse_time(o.get("lastTimestamp") or o.get("deprecatedLastTimestamp") or o.get("eventTime")
                       or o["metadata"].get("creationTimestamp"))
    if stamp is None:
        return "<unknown>"
    return human_duration((datetime.now(UTC) - stamp).total_seconds())


EVENT_COLUMNS = (
    Column("Last Seen", "string", _event_last_seen, "Time of the last occurrence."),
    Column("Type", "string", lambda o: o.get("type", ""), "Type of this event."),
    Column("Reason", "string", lambda o: o.get("reason", ""), "Why the action was taken."),
    Column("Object", "string", _event_object, "The object this event is about."),
    Column("Message", "string", lambda o: o.get("message") or o.get("note", ""), "A human-readable description."),
)

RESOURCES: tuple[Resource, ...] = (
    Resource("events.k8s.io", "v1", "Event", "events", "event", True, short_names=("ev",),
             definition="io.k8s.api.events.v1.Event", columns=EVENT_COLUMNS, storage_group="",
             to_storage=to_core_v1, from_storage=to_events_v1, field_selectors=EVENTS_FIELD_SELECTORS),
)
