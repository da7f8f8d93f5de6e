"""core/v1 and events.k8s.io/v1 Events are one set of objects in two shapes, as in kube."""

from __future__ import annotations

from api import Api, watching
from kcp_process import KcpServer, run_kubectl

CORE = "/api/v1/namespaces/{ns}/events"
EVENTS = "/apis/events.k8s.io/v1/namespaces/{ns}/events"


def events_v1(name: str, pod: str, note: str) -> dict:
    return {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": name},
            "eventTime": "2026-11-23T07:00:00.000000Z", "reportingController": "kcp.io/splitter",
            "reportingInstance": "splitter-1", "action": "Split", "reason": "Scheduled", "type": "Normal",
            "regarding": {"kind": "Pod", "name": pod, "namespace": "default"}, "note": note}


async def test_an_event_written_as_events_k8s_io_is_read_as_core_and_back(api: Api, namespace: str) -> None:
    created = await api.post(EVENTS.format(ns=namespace), events_v1("e1", "web-1", "placed on east"))
    assert created.status == 201, created.body
    assert created.body["apiVersion"] == "events.k8s.io/v1" and created.body["note"] == "placed on east"
    core = await api.get(f"{CORE.format(ns=namespace)}/e1")
    assert core.status == 200
    assert core.body["apiVersion"] == "v1" and core.body["message"] == "placed on east"
    assert core.body["involvedObject"]["name"] == "web-1" and core.body["reportingComponent"] == "kcp.io/splitter"
    assert "note" not in core.body and "regarding" not in core.body
    assert core.body["metadata"]["resourceVersion"] == created.body["metadata"]["resourceVersion"]

    patched = await api.patch(f"{EVENTS.format(ns=namespace)}/e1", {"note": "moved to west"},
                              "application/merge-patch+json")
    assert patched.status == 200 and patched.body["note"] == "moved to west"
    assert (await api.get(f"{CORE.format(ns=namespace)}/e1")).body["message"] == "moved to west"

    legacy = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e2"}, "reason": "Failed",
              "type": "Warning", "message": "image pull failed", "count": 3,
              "involvedObject": {"kind": "Pod", "name": "web-2", "namespace": namespace},
              "source": {"component": "kubelet"}}
    assert (await api.post(CORE.format(ns=namespace), legacy)).status == 201
    seen = await api.get(f"{EVENTS.format(ns=namespace)}/e2")
    assert seen.body["note"] == "image pull failed" and seen.body["deprecatedCount"] == 3
    assert seen.body["deprecatedSource"] == {"component": "kubelet"} and seen.body["regarding"]["name"] == "web-2"

    both = await api.get(EVENTS.format(ns=namespace))
    assert sorted(e["metadata"]["name"] for e in both.body["items"]) == ["e1", "e2"]
    assert all(e["apiVersion"] == "events.k8s.io/v1" for e in both.body["items"])
    selected = await api.get(EVENTS.format(ns=namespace), params={"fieldSelector": "regarding.name=web-2"})
    assert [e["metadata"]["name"] for e in selected.body["items"]] == ["e2"]
    by_core_field = await api.get(CORE.format(ns=namespace), params={"fieldSelector": "involvedObject.name=web-1"})
    assert [e["metadata"]["name"] for e in by_core_field.body["items"]] == ["e1"]
    assert (await api.post(CORE.format(ns=namespace), dict(legacy, metadata={"name": "e1"}))).status == 409


async def test_a_watch_on_either_api_sees_events_written_through_the_other(api: Api, namespace: str) -> None:
    rv = (await api.get(EVENTS.format(ns=namespace))).body["metadata"]["resourceVersion"]
    watcher = await watching(api, EVENTS.format(ns=namespace), {"resourceVersion": rv}, 1)
    legacy = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "w1"}, "message": "hello",
              "involvedObject": {"kind": "Pod", "name": "p", "namespace": namespace}}
    assert (await api.post(CORE.format(ns=namespace), legacy)).status == 201
    seen = await watcher
    assert seen[0]["type"] == "ADDED"
    assert seen[0]["object"]["apiVersion"] == "events.k8s.io/v1" and seen[0]["object"]["note"] == "hello"


def test_kubectl_get_events_shows_events_recorded_through_events_k8s_io(kcp: KcpServer, unique: str) -> None:
    import json

    ns = f"ev-{unique}"
    run_kubectl(kcp, "create", "namespace", ns)
    body = events_v1("k1", "web-9", "scaled to 3")
    body["metadata"]["namespace"] = ns
    run_kubectl(kcp, "create", "-f", "-", input_text=json.dumps(body))
    table = run_kubectl(kcp, "get", "events", "-n", ns).stdout
    assert "Scheduled" in table and "pod/web-9" in table and "scaled to 3" in table
    listed = run_kubectl(kcp, "events", "-n", ns).stdout  # kubectl's own events command
    assert "Scheduled" in listed and "scaled to 3" in listed


def test_kubectl_events_for_one_object_selects_its_events(kcp: KcpServer, unique: str) -> None:
    """`kubectl events --for` sends involvedObject.kind, .apiVersion and .name field selectors."""
    import json

    ns = f"evfor-{unique}"
    run_kubectl(kcp, "create", "namespace", ns)
    run_kubectl(kcp, "-n", ns, "create", "configmap", "x")
    about = {"cm": {"kind": "ConfigMap", "apiVersion": "v1", "name": "x", "namespace": ns},
             "other-cm": {"kind": "ConfigMap", "apiVersion": "v1", "name": "y", "namespace": ns},
             "pod": {"kind": "Pod", "apiVersion": "v1", "name": "x", "namespace": ns}}
    for name, ref in about.items():
        event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": ns},
                 "involvedObject": ref, "reason": f"Reason-{name}", "message": f"about {name}", "type": "Normal",
                 "source": {"component": "tester"}}
        run_kubectl(kcp, "create", "-f", "-", input_text=json.dumps(event))
    out = run_kubectl(kcp, "-n", ns, "events", "--for", "cm/x").stdout
    assert "Reason-cm" in out and "about cm" in out
    assert "Reason-other-cm" not in out and "Reason-pod" not in out
    selected = run_kubectl(kcp, "-n", ns, "get", "events", "--field-selector",
                          "involvedObject.resourceVersion=,involvedObject.fieldPath=,source=tester,"
                          "reportingComponent=", "-o", "name").stdout.split()
    assert sorted(selected) == ["event/cm", "event/other-cm", "event/pod"]
