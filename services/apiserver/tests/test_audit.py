"""Audit events in kube's audit.k8s.io/v1 shape at the Metadata level, written as JSON lines off the request path."""

from __future__ import annotations

import json
import re
from pathlib import Path

from aiohttp.test_utils import make_mocked_request

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import AUTHENTICATED, RequestContext, UserInfo
from kcp_apiserver.filters.audit import AuditLog, event, micro_time
from kcp_apiserver.filters.requestinfo import parse

MICRO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
BOT = UserInfo("system:serviceaccount:team:bot", uid="u-1",
               groups=("system:serviceaccounts", "system:serviceaccounts:team", AUTHENTICATED),
               extra=(("authentication.kubernetes.io/credential-id", ("JTI=j-1",)),), cluster="root:team")


def test_an_event_names_who_what_where_and_the_answer_without_bodies_or_credentials() -> None:
    path = "/clusters/root:team/apis/apps/v1/namespaces/team/deployments/web/scale"
    request = make_mocked_request("PUT", path + "?fieldManager=kubectl", headers={
        "Authorization": "Bearer s3cret-token", "User-Agent": "kubectl/v1.32.4", "Audit-ID": "a-1",
        "X-Forwarded-For": "10.0.0.1, 10.0.0.2"})
    ctx = RequestContext(parse("PUT", path, False), user=BOT)
    ctx.annotations.update({"authorization.k8s.io/reason": "", "authorization.k8s.io/decision": "allow"})
    ev = event(request, ctx, 1_800_000_000.25, 200, None)
    stage = ev.pop("stageTimestamp")
    assert MICRO.match(stage)
    assert ev == {
        "kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata", "auditID": "a-1",
        "stage": "ResponseComplete", "requestURI": path + "?fieldManager=kubectl", "verb": "update",
        "user": {"username": "system:serviceaccount:team:bot", "uid": "u-1",
                 "groups": ["system:serviceaccounts", "system:serviceaccounts:team", AUTHENTICATED],
                 "extra": {"authentication.kubernetes.io/credential-id": ["JTI=j-1"]}},
        "sourceIPs": ["10.0.0.1", "10.0.0.2"], "userAgent": "kubectl/v1.32.4",
        "objectRef": {"resource": "deployments", "namespace": "team", "name": "web", "apiGroup": "apps",
                      "apiVersion": "v1", "subresource": "scale"},
        "responseStatus": {"metadata": {}, "code": 200},
        "requestReceivedTimestamp": "2027-01-15T08:00:00.250000Z",
        "annotations": {"authorization.k8s.io/decision": "allow", "authorization.k8s.io/reason": "",
                        "kcp.io/cluster": "root:team"},
    }
    assert "s3cret-token" not in json.dumps(ev)


def test_failures_carry_their_status_and_a_401_names_no_user() -> None:
    request = make_mocked_request("GET", "/api/v1/namespaces")
    ctx = RequestContext(parse("GET", "/api/v1/namespaces", False))
    ev = event(request, ctx, 0.0, 401, st.unauthorized())
    assert ev["user"] == {} and "userAgent" not in ev
    assert ev["responseStatus"] == {"metadata": {}, "status": "Failure", "message": "Unauthorized",
                                    "reason": "Unauthorized", "code": 401}
    assert ev["objectRef"] == {"resource": "namespaces", "apiVersion": "v1"}
    assert "annotations" in ev and ev["annotations"] == {"kcp.io/cluster": "admin"}
    assert len(ev["auditID"]) == 36
    health = event(make_mocked_request("GET", "/healthz"), RequestContext(parse("GET", "/healthz", False)), 0.0,
                   200, None)
    assert "objectRef" not in health and health["verb"] == "get"


def test_micro_time_is_kubes_rfc3339_with_microseconds() -> None:
    assert micro_time(0.000001) == "1970-01-01T00:00:00.000001Z"
    assert micro_time(1_700_000_000.5) == "2023-11-14T22:13:20.500000Z"


async def test_the_log_appends_one_json_line_per_event_and_flushes_on_stop(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    path.write_text('{"earlier":true}\n')
    mode = path.stat().st_mode
    log = AuditLog(str(path))
    await log.start()
    for n in range(3):
        log.record({"kind": "Event", "n": n})
    await log.stop()
    lines = path.read_text().splitlines()
    assert [json.loads(line) for line in lines] == [{"earlier": True}] + [{"kind": "Event", "n": n} for n in range(3)]
    assert path.stat().st_mode == mode  # an existing file keeps its mode
    fresh = tmp_path / "fresh.log"
    other = AuditLog(str(fresh))
    await other.start()
    await other.stop()
    assert fresh.stat().st_mode & 0o777 == 0o600


def test_an_impersonated_request_names_both_identities() -> None:
    request = make_mocked_request("GET", "/api/v1/namespaces")
    admin = UserInfo("kcp-admin", groups=("system:masters", AUTHENTICATED))
    ctx = RequestContext(parse("GET", "/api/v1/namespaces", False), user=UserInfo("nobody", groups=(AUTHENTICATED,)),
                         impersonator=admin)
    ev = event(request, ctx, 0.0, 403, None)
    assert ev["user"] == {"username": "kcp-admin", "groups": ["system:masters", AUTHENTICATED]}
    assert ev["impersonatedUser"] == {"username": "nobody", "groups": [AUTHENTICATED]}
