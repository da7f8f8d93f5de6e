"""core/v1 <-> events.k8s.io/v1 Event conversion: renamed fields, nothing lost either way."""

from __future__ import annotations

from kcp_apiserver.registry.builtin.events import to_core_v1, to_events_v1

CORE = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "name": "p"}, "message": "m", "reportingComponent": "c",
        "reportingInstance": "i", "source": {"component": "kubelet"}, "firstTimestamp": "2026-01-01T00:00:00Z",
        "lastTimestamp": "2026-01-01T00:01:00Z", "count": 2, "reason": "R", "type": "Warning", "action": "A",
        "eventTime": None, "series": {"count": 2, "lastObservedTime": "2026-01-01T00:01:00.000000Z"},
        "related": {"kind": "Node", "name": "n"}}


def test_core_fields_take_their_events_k8s_io_names() -> None:
    out = to_events_v1(CORE)
    assert out["apiVersion"] == "events.k8s.io/v1"
    assert (out["regarding"], out["note"], out["reportingController"], out["deprecatedSource"],
            out["deprecatedFirstTimestamp"], out["deprecatedLastTimestamp"], out["deprecatedCount"]) == (
        CORE["involvedObject"], "m", "c", CORE["source"], CORE["firstTimestamp"], CORE["lastTimestamp"], 2)
    assert not {"involvedObject", "message", "source", "count"} & set(out)
    assert out["series"] == CORE["series"] and out["related"] == CORE["related"]


def test_conversion_round_trips_both_ways() -> None:
    assert to_core_v1(to_events_v1(CORE)) == CORE
    events = to_events_v1(CORE)
    assert to_events_v1(to_core_v1(events)) == events
