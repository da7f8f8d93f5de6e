"""Event field selectors: every label kube accepts for core/v1 and events.k8s.io/v1, read as kube reads it."""

from __future__ import annotations

import pytest
from multidict import MultiDict

from kcp_apiserver.apimachinery.status import APIError
from kcp_apiserver.endpoints.base import build_filter
from kcp_apiserver.registry.builtin import BUILTINS
from kcp_apiserver.registry.resource import Obj, Resource

CORE = next(r for r in BUILTINS if r.kind == "Event" and not r.group)
EVENTS = next(r for r in BUILTINS if r.kind == "Event" and r.group == "events.k8s.io")


def stored(name: str, **fields: object) -> Obj:
    """A core/v1 Event as it is stored (events.k8s.io Events are stored in this shape too)."""
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": "ns"}, **fields}


ABOUT_CM = stored("cm-event", reason="Updated", type="Normal", reportingComponent="kcp.io/ctl",
                  involvedObject={"kind": "ConfigMap", "name": "x", "namespace": "ns", "uid": "u-1",
                                  "apiVersion": "v1", "resourceVersion": "42", "fieldPath": "data.a"},
                  source={"component": "kubelet"})
ABOUT_POD = stored("pod-event", reason="Failed", type="Warning", reportingComponent="kcp.io/sched",
                   involvedObject={"kind": "Pod", "name": "x", "namespace": "ns", "apiVersion": "v1"})
ALL = (ABOUT_CM, ABOUT_POD)


def selected(res: Resource, selector: str) -> list[str]:
    matches, _ = build_filter(res, MultiDict(fieldSelector=selector))
    assert matches is not None
    return [o["metadata"]["name"] for o in ALL if matches(o)]


@pytest.mark.parametrize(("selector", "names"), [
    ("involvedObject.apiVersion=v1", ["cm-event", "pod-event"]),
    ("involvedObject.resourceVersion=42", ["cm-event"]),
    ("involvedObject.fieldPath=data.a", ["cm-event"]),
    ("involvedObject.fieldPath=", ["pod-event"]),
    ("reportingComponent=kcp.io/sched", ["pod-event"]),
    ("type=Warning", ["pod-event"]),
    ("reason=Updated", ["cm-event"]),
    ("involvedObject.uid=u-1", ["cm-event"]),
    # what `kubectl events --for cm/x` sends
    ("involvedObject.kind=ConfigMap,involvedObject.apiVersion=v1,involvedObject.name=x", ["cm-event"]),
    # source is the source component, or the reporting controller when there is none
    ("source=kubelet", ["cm-event"]),
    ("source=kcp.io/sched", ["pod-event"]),
    ("source=kcp.io/ctl", []),
])
def test_core_v1_events_select_on_every_field_kube_allows(selector: str, names: list[str]) -> None:
    assert selected(CORE, selector) == names


@pytest.mark.parametrize(("selector", "names"), [
    ("regarding.apiVersion=v1,regarding.kind=Pod", ["pod-event"]),
    ("regarding.resourceVersion=42", ["cm-event"]),
    ("regarding.fieldPath=data.a", ["cm-event"]),
    ("regarding.uid=u-1", ["cm-event"]),
    ("reportingController=kcp.io/ctl", ["cm-event"]),
    ("type=Normal", ["cm-event"]),
    ("reason!=Updated", ["pod-event"]),
])
def test_events_k8s_io_events_select_on_their_own_field_names(selector: str, names: list[str]) -> None:
    assert selected(EVENTS, selector) == names


@pytest.mark.parametrize(("res", "label"), [
    (EVENTS, "source"), (EVENTS, "involvedObject.name"), (EVENTS, "reportingComponent"),
    (CORE, "regarding.name"), (CORE, "reportingController"), (CORE, "message"),
])
def test_labels_the_other_event_api_uses_are_refused(res: Resource, label: str) -> None:
    with pytest.raises(APIError) as caught:
        build_filter(res, MultiDict(fieldSelector=f"{label}=x"))
    assert caught.value.code == 400 and caught.value.message == f"field label not supported: {label}"
