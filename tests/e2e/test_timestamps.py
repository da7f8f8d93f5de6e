"""Timestamps are stored as kube stores them, whatever form a client sends; what Go cannot parse is refused."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from api import Api
from kcp_process import KcpServer, run_kubectl


def five_minutes_ago() -> datetime:
    return (datetime.now(UTC) - timedelta(minutes=5)).replace(microsecond=610947)


def python_event(name: str, namespace: str, when: datetime | None = None) -> dict:
    """An Event as a Python client writes it: isoformat() timestamps with microseconds and +00:00."""
    stamp = (when or five_minutes_ago()).isoformat()
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": namespace},
            "involvedObject": {"kind": "ConfigMap", "name": "cfg", "namespace": namespace},
            "reason": "Synced", "message": "from python", "type": "Normal",
            "firstTimestamp": stamp, "lastTimestamp": stamp, "eventTime": stamp,
            "reportingComponent": "py", "reportingInstance": "py-1", "action": "Sync"}


def test_python_timestamps_are_stored_in_kubes_form_and_tables_show_their_age(kcp: KcpServer, unique: str) -> None:
    ns, when = f"ts-{unique}", five_minutes_ago()
    run_kubectl(kcp, "create", "namespace", ns)
    run_kubectl(kcp, "create", "-f", "-", input_text=json.dumps(python_event("py", ns, when)))
    stored = json.loads(run_kubectl(kcp, "-n", ns, "get", "event", "py", "-o", "json").stdout)
    seconds = when.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert (stored["firstTimestamp"], stored["lastTimestamp"]) == (seconds, seconds)
    assert stored["eventTime"] == when.strftime("%Y-%m-%dT%H:%M:%S.610947Z")
    row = run_kubectl(kcp, "-n", ns, "get", "events", "--no-headers").stdout.split()
    assert row[0].startswith("5m"), row  # LAST SEEN is the age of lastTimestamp, not <unknown>


async def test_unparseable_timestamps_are_refused_as_kube_refuses_them(api: Api, namespace: str) -> None:
    events = f"/api/v1/namespaces/{namespace}/events"
    bad = dict(python_event("bad", namespace), eventTime="2026-11-23T12:30:47Z")  # a MicroTime needs .000000
    reply = await api.post(events, bad)
    assert (reply.status, reply.body["reason"]) == (400, "BadRequest")
    assert reply.body["message"] == (
        'Event in version "v1" cannot be handled as a Event: parsing time "2026-11-23T12:30:47Z" as '
        '"2006-01-02T15:04:05.000000Z07:00": cannot parse "Z" as ".000000"')

    assert (await api.post(events, python_event("ok", namespace))).status == 201
    replaced = await api.put(f"{events}/ok", dict(python_event("ok", namespace), lastTimestamp="yesterday"))
    assert replaced.status == 400 and 'parsing time "yesterday"' in replaced.body["message"]

    patched = await api.patch(f"{events}/ok", {"lastTimestamp": "2026-11-23T12:30:47+01:00"},
                              "application/merge-patch+json")
    assert patched.status == 200 and patched.body["lastTimestamp"] == "2026-11-23T11:30:47Z"
    refused = await api.patch(f"{events}/ok", {"series": {"count": 2, "lastObservedTime": "never"}},
                              "application/merge-patch+json")
    assert (refused.status, refused.body["reason"]) == (422, "Invalid")
    assert refused.body["details"]["causes"][0]["field"] == "patch"
    assert refused.body["message"].startswith(' "" is invalid: patch: Invalid value: "{')
    assert refused.body["message"].endswith(
        'parsing time "never" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "never" as "2006"')
