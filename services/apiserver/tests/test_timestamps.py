"""Stored timestamps: every Time and MicroTime field of a type rewritten as kube stores it, on every write."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kcp_apiserver.apimachinery.status import APIError
from kcp_apiserver.registry.builtin import BUILTINS
from kcp_apiserver.registry.resource import Resource
from kcp_apiserver.registry.tables import to_table
from kcp_apiserver.registry.timestamps import normalize_timestamps

PY = "2026-11-23T12:30:47.610947+00:00"  # what Python's datetime.isoformat() sends
SECONDS, MICROS = "2026-11-23T12:30:47Z", "2026-11-23T12:30:47.610947Z"


def builtin(group: str, kind: str) -> Resource:
    return next(r for r in BUILTINS if r.group == group and r.kind == kind)


def meta(**extra: Any) -> dict[str, Any]:
    return {"name": "x", "namespace": "ns", "creationTimestamp": PY, "deletionTimestamp": PY,
            "managedFields": [{"manager": "m", "operation": "Update", "time": PY}, {"manager": "n"}], **extra}


def test_core_event_times_take_seconds_and_micro_times_take_microseconds() -> None:
    event = {"apiVersion": "v1", "kind": "Event", "metadata": meta(), "firstTimestamp": PY, "lastTimestamp": PY,
             "eventTime": PY, "series": {"count": 2, "lastObservedTime": PY}, "message": PY}
    normalize_timestamps(builtin("", "Event"), event)
    assert (event["firstTimestamp"], event["lastTimestamp"], event["eventTime"],
            event["series"]["lastObservedTime"]) == (SECONDS, SECONDS, MICROS, MICROS)
    assert event["message"] == PY  # a string that is not a timestamp field is left alone
    m = event["metadata"]
    assert (m["creationTimestamp"], m["deletionTimestamp"], m["managedFields"][0]["time"]) == (SECONDS,) * 3
    assert "time" not in m["managedFields"][1]


def test_an_events_k8s_io_event_is_normalised_in_the_shape_it_arrives_in() -> None:
    res = builtin("events.k8s.io", "Event")
    stored = res.to_storage({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": meta(),
                             "eventTime": PY, "deprecatedLastTimestamp": PY})  # as create and update see it
    normalize_timestamps(res, stored)
    assert (stored["eventTime"], stored["lastTimestamp"]) == (MICROS, SECONDS)
    patched = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": meta(), "eventTime": PY,
               "deprecatedFirstTimestamp": PY}  # as a patch sees it
    normalize_timestamps(res, patched, patch=True)
    assert (patched["eventTime"], patched["deprecatedFirstTimestamp"]) == (MICROS, SECONDS)


def test_lease_micro_times_and_namespace_condition_times() -> None:
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta(),
             "spec": {"acquireTime": "2026-11-23T14:30:47.610947+02:00", "renewTime": None}}
    normalize_timestamps(builtin("coordination.k8s.io", "Lease"), lease)
    assert lease["spec"] == {"acquireTime": MICROS, "renewTime": None}  # null is a zero time, kept
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": meta(),
          "status": {"conditions": [{"type": "T", "status": "True", "lastTransitionTime": PY}]}}
    normalize_timestamps(builtin("", "Namespace"), ns)
    assert ns["status"]["conditions"][0]["lastTransitionTime"] == SECONDS


def test_a_custom_resource_has_only_its_metadata_normalised() -> None:
    crd = Resource("example.com", "v1", "Widget", "widgets", "widget", True, schema={"type": "object"})
    obj = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": meta(), "spec": {"when": PY}}
    normalize_timestamps(crd, obj)
    assert obj["metadata"]["managedFields"][0]["time"] == SECONDS and obj["spec"]["when"] == PY


def test_an_unparseable_timestamp_is_kubes_400_and_nothing_is_rewritten() -> None:
    event = {"apiVersion": "v1", "kind": "Event", "metadata": meta(), "firstTimestamp": PY,
             "eventTime": "2026-11-23T12:30:47Z"}
    before = copy.deepcopy(event)
    with pytest.raises(APIError) as caught:
        normalize_timestamps(builtin("", "Event"), event)
    assert (caught.value.code, caught.value.reason) == (400, "BadRequest")
    assert caught.value.message == (
        'Event in version "v1" cannot be handled as a Event: parsing time "2026-11-23T12:30:47Z" as '
        '"2006-01-02T15:04:05.000000Z07:00": cannot parse "Z" as ".000000"')
    assert event == before


def test_an_unparseable_timestamp_in_a_patched_object_is_kubes_422_on_the_patch() -> None:
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
             "spec": {"renewTime": "soon"}}
    with pytest.raises(APIError) as caught:
        normalize_timestamps(builtin("coordination.k8s.io", "Lease"), lease, patch=True)
    detail = ('Invalid value: "{\\"apiVersion\\":\\"coordination.k8s.io/v1\\",\\"kind\\":\\"Lease\\",'
              '\\"metadata\\":{\\"name\\":\\"l\\"},\\"spec\\":{\\"renewTime\\":\\"soon\\"}}": parsing time "soon" as '
              '"2006-01-02T15:04:05.000000Z07:00": cannot parse "soon" as "2006"')
    assert (caught.value.code, caught.value.reason) == (422, "Invalid")
    assert caught.value.message == f' "" is invalid: patch: {detail}'
    assert caught.value.details == {"causes": [{"reason": "FieldValueInvalid", "message": detail, "field": "patch"}]}


def test_tables_read_micro_times_and_offsets() -> None:
    res = builtin("events.k8s.io", "Event")
    event = res.from_storage({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e", "namespace": "ns",
                              "creationTimestamp": SECONDS}, "eventTime": "2020-01-01T00:00:00.000000Z"})
    last_seen = to_table(res, [event], {}, "None")["rows"][0]["cells"][0]
    assert last_seen not in ("<unknown>", "") and last_seen.endswith("d")
