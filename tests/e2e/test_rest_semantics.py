"""Kubernetes REST semantics over the real server: verbs, server-set metadata, errors as Status."""

from __future__ import annotations

import asyncio

import aiohttp

from api import Api, configmap

CM = "/api/v1/namespaces/{ns}/configmaps"


async def test_create_sets_server_fields_and_get_returns_them(api: Api, namespace: str) -> None:
    reply = await api.post(CM.format(ns=namespace), configmap("one"))
    assert reply.status == 201
    meta = reply.body["metadata"]
    assert meta["uid"] and meta["creationTimestamp"].endswith("Z")
    assert int(meta["resourceVersion"]) > 0
    assert meta["namespace"] == namespace
    got = await api.get(f"{CM.format(ns=namespace)}/one")
    assert got.status == 200 and got.body["metadata"]["uid"] == meta["uid"]
    assert got.body["data"] == {"k": "v"}


async def test_generate_name_creates_a_unique_name(api: Api, namespace: str) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "gen-"}}
    first = await api.post(CM.format(ns=namespace), body)
    second = await api.post(CM.format(ns=namespace), body)
    assert first.status == second.status == 201
    names = {first.body["metadata"]["name"], second.body["metadata"]["name"]}
    assert len(names) == 2 and all(n.startswith("gen-") and len(n) == 9 for n in names)


async def test_create_twice_is_409_already_exists(api: Api, namespace: str) -> None:
    await api.post(CM.format(ns=namespace), configmap("dup"))
    reply = await api.post(CM.format(ns=namespace), configmap("dup"))
    assert reply.status == 409
    assert reply.body["kind"] == "Status" and reply.body["reason"] == "AlreadyExists"
    assert reply.body["details"]["name"] == "dup"


async def test_missing_object_is_404_not_found_status(api: Api, namespace: str) -> None:
    reply = await api.get(f"{CM.format(ns=namespace)}/nope")
    assert reply.status == 404 and reply.body["reason"] == "NotFound"
    assert reply.body["message"] == 'configmaps "nope" not found'


async def test_update_with_stale_resource_version_is_409_conflict(api: Api, namespace: str) -> None:
    created = (await api.post(CM.format(ns=namespace), configmap("cas"))).body
    fresh = dict(created, data={"k": "v2"})
    assert (await api.put(f"{CM.format(ns=namespace)}/cas", fresh)).status == 200
    stale = dict(created, data={"k": "v3"})
    reply = await api.put(f"{CM.format(ns=namespace)}/cas", stale)
    assert reply.status == 409 and reply.body["reason"] == "Conflict"
    assert (await api.get(f"{CM.format(ns=namespace)}/cas")).body["data"] == {"k": "v2"}


async def test_resource_version_0_is_an_unconditional_update_and_patch(api: Api, namespace: str) -> None:
    """kube reads `resourceVersion: "0"` in a written object as unset (issue 28 item 3)."""
    path = f"{CM.format(ns=namespace)}/zero"
    created = (await api.post(CM.format(ns=namespace), configmap("zero"))).body
    assert (await api.put(path, dict(created, data={"k": "v2"}))).status == 200  # created's version is stale now
    replaced = await api.put(path, {**created, "metadata": {**created["metadata"], "resourceVersion": "0"},
                                    "data": {"k": "v3"}})
    assert replaced.status == 200, replaced.body
    patched = await api.patch(path, {"metadata": {"resourceVersion": "0"}, "data": {"k": "v4"}},
                              "application/merge-patch+json")
    assert patched.status == 200, patched.body
    assert (await api.get(path)).body["data"] == {"k": "v4"}


async def test_a_patch_of_the_wrong_type_is_kubes_422_on_the_patch(api: Api, namespace: str) -> None:
    """kube's wording (issue 28 item 6): the unstructured converter's for a strategic merge patch, the JSON
    decoder's over the patched object for a merge patch; nothing is stored."""
    path = f"{CM.format(ns=namespace)}/typed"
    created = (await api.post(CM.format(ns=namespace), configmap("typed"))).body
    strategic = await api.patch(path, {"metadata": {"labels": "invalid"}}, "application/strategic-merge-patch+json")
    assert strategic.status == 422 and strategic.body["reason"] == "Invalid"
    assert strategic.body["message"] == (' "" is invalid: patch: Invalid value: "map[metadata:map[labels:invalid]]": '
                                         "cannot restore map from string")
    assert strategic.body["details"]["causes"][0]["field"] == "patch"
    merge = await api.patch(path, {"data": {"a": 1}}, "application/merge-patch+json")
    assert merge.status == 422 and merge.body["message"].startswith(' "" is invalid: patch: Invalid value: "{')
    assert merge.body["message"].endswith("json: cannot unmarshal number into Go struct field data.a of type string")
    assert '\\"data\\":{\\"a\\":1' in merge.body["message"]  # the patched object, as Go's JSON
    assert (await api.get(path)).body["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


async def test_noop_update_keeps_resource_version(api: Api, namespace: str) -> None:
    created = (await api.post(CM.format(ns=namespace), configmap("same"))).body
    again = await api.put(f"{CM.format(ns=namespace)}/same", created)
    assert again.status == 200
    assert again.body["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


async def test_invalid_labels_are_422_with_causes_and_nothing_is_stored(api: Api, namespace: str) -> None:
    body = configmap("badlabels", labels={"bad key!": "v", "ok": "not valid value!"})
    reply = await api.post(CM.format(ns=namespace), body)
    assert reply.status == 422 and reply.body["reason"] == "Invalid"
    fields = {c["field"] for c in reply.body["details"]["causes"]}
    assert "metadata.labels" in fields
    assert (await api.get(f"{CM.format(ns=namespace)}/badlabels")).status == 404


async def test_invalid_name_is_422(api: Api, namespace: str) -> None:
    reply = await api.post(CM.format(ns=namespace), configmap("Bad_Name"))
    assert reply.status == 422
    assert reply.body["details"]["causes"][0]["field"] == "metadata.name"


async def test_malformed_json_is_400_bad_request(api: Api, namespace: str) -> None:
    reply = await api.request("POST", CM.format(ns=namespace), raw=b"{not json")
    assert reply.status == 400 and reply.body["reason"] == "BadRequest"


async def test_malformed_selector_is_400(api: Api, namespace: str) -> None:
    reply = await api.get(CM.format(ns=namespace), params={"labelSelector": "a in (b"})
    assert reply.status == 400 and reply.body["kind"] == "Status"


async def test_body_over_3_mib_is_413(api: Api, namespace: str) -> None:
    big = configmap("big", {"k": "x" * (3 * 1024 * 1024 + 10)})
    reply = await api.post(CM.format(ns=namespace), big)
    assert reply.status == 413 and reply.body["kind"] == "Status"


async def test_no_token_is_401_and_bad_token_is_401(kcp, namespace: str) -> None:  # type: ignore[no-untyped-def]
    import aiohttp

    async with aiohttp.ClientSession() as session:
        for token in ("", "wrong"):
            reply = await Api(kcp, session, token=token).get(CM.format(ns=namespace))
            assert reply.status == 401 and reply.body["reason"] == "Unauthorized"


async def test_creating_into_a_missing_namespace_is_refused(api: Api) -> None:
    reply = await api.post(CM.format(ns="does-not-exist"), configmap("x"))
    assert reply.status == 404 and reply.body["details"]["kind"] == "namespaces"


async def test_dry_run_create_validates_but_stores_nothing(api: Api, namespace: str) -> None:
    reply = await api.post(CM.format(ns=namespace), configmap("dry"), params={"dryRun": "All"})
    assert reply.status == 201 and reply.body["metadata"]["name"] == "dry"
    assert (await api.get(f"{CM.format(ns=namespace)}/dry")).status == 404
    bad = await api.post(CM.format(ns=namespace), configmap("Bad!"), params={"dryRun": "All"})
    assert bad.status == 422


async def test_dry_run_delete_and_update_change_nothing(api: Api, namespace: str) -> None:
    created = (await api.post(CM.format(ns=namespace), configmap("keep"))).body
    changed = dict(created, data={"k": "changed"})
    assert (await api.put(f"{CM.format(ns=namespace)}/keep", changed, params={"dryRun": "All"})).status == 200
    assert (await api.delete(f"{CM.format(ns=namespace)}/keep", params={"dryRun": "All"})).status == 200
    got = await api.get(f"{CM.format(ns=namespace)}/keep")
    assert got.status == 200 and got.body["data"] == {"k": "v"}


async def test_three_patch_types(api: Api, namespace: str) -> None:
    path = f"{CM.format(ns=namespace)}/patched"
    await api.post(CM.format(ns=namespace), configmap("patched", {"a": "1", "b": "2"}))
    merge = await api.patch(path, {"data": {"a": None, "c": "3"}}, "application/merge-patch+json")
    assert merge.status == 200 and merge.body["data"] == {"b": "2", "c": "3"}
    json_patch = await api.patch(path, [{"op": "replace", "path": "/data/b", "value": "20"}],
                                 "application/json-patch+json")
    assert json_patch.body["data"] == {"b": "20", "c": "3"}
    smp = await api.patch(path, {"metadata": {"finalizers": ["x.io/a"]}, "data": {"d": "4"}},
                          "application/strategic-merge-patch+json")
    assert smp.body["data"]["d"] == "4" and smp.body["metadata"]["finalizers"] == ["x.io/a"]
    smp2 = await api.patch(path, {"metadata": {"finalizers": ["x.io/b"]}}, "application/strategic-merge-patch+json")
    assert sorted(smp2.body["metadata"]["finalizers"]) == ["x.io/a", "x.io/b"]  # finalizers merge, as kube
    await api.patch(path, {"metadata": {"finalizers": None}}, "application/merge-patch+json")


async def test_failed_json_patch_test_op_changes_nothing(api: Api, namespace: str) -> None:
    path = f"{CM.format(ns=namespace)}/jp"
    await api.post(CM.format(ns=namespace), configmap("jp"))
    reply = await api.patch(path, [{"op": "test", "path": "/data/k", "value": "other"},
                                   {"op": "replace", "path": "/data/k", "value": "new"}],
                            "application/json-patch+json")
    assert reply.status in (409, 422) and reply.body["kind"] == "Status"
    assert (await api.get(path)).body["data"] == {"k": "v"}


async def test_unknown_patch_type_is_415(api: Api, namespace: str) -> None:
    await api.post(CM.format(ns=namespace), configmap("p415"))
    reply = await api.patch(f"{CM.format(ns=namespace)}/p415", {"data": {}}, "application/x-unknown")
    assert reply.status == 415


async def test_finalizers_hold_deletion_until_removed(api: Api, namespace: str) -> None:
    path = f"{CM.format(ns=namespace)}/fin"
    body = configmap("fin")
    body["metadata"]["finalizers"] = ["example.com/hold"]
    await api.post(CM.format(ns=namespace), body)
    deleting = await api.delete(path)
    assert deleting.status == 200 and deleting.body["metadata"]["deletionTimestamp"]
    assert (await api.get(path)).status == 200
    await api.patch(path, {"metadata": {"finalizers": None}}, "application/merge-patch+json")
    assert (await api.get(path)).status == 404


async def test_delete_with_stale_precondition_is_409(api: Api, namespace: str) -> None:
    created = (await api.post(CM.format(ns=namespace), configmap("pre"))).body
    reply = await api.delete(f"{CM.format(ns=namespace)}/pre", {"kind": "DeleteOptions", "apiVersion": "v1",
                                                                 "preconditions": {"uid": "other"}})
    assert reply.status == 409
    ok = await api.delete(f"{CM.format(ns=namespace)}/pre", {"preconditions": {"uid": created["metadata"]["uid"]}})
    assert ok.status == 200 and ok.body["status"] == "Success"


async def test_label_selectors_filter_lists(api: Api, namespace: str) -> None:
    for name, labels in (("a", {"tier": "web", "env": "prod"}), ("b", {"tier": "db"}), ("c", {})):
        await api.post(CM.format(ns=namespace), configmap(name, labels=labels))

    async def names(selector: str) -> list[str]:
        reply = await api.get(CM.format(ns=namespace), params={"labelSelector": selector})
        return sorted(i["metadata"]["name"] for i in reply.body["items"])

    assert await names("tier=web") == ["a"]
    assert await names("tier==web") == ["a"]
    assert await names("tier!=web") == ["b", "c"]
    assert await names("tier in (web,db)") == ["a", "b"]
    assert await names("tier notin (web)") == ["b", "c"]
    assert await names("env") == ["a"]
    assert await names("!env") == ["b", "c"]


async def test_field_selectors_on_name_and_namespace(api: Api, namespace: str) -> None:
    for name in ("x1", "x2"):
        await api.post(CM.format(ns=namespace), configmap(name))
    reply = await api.get(CM.format(ns=namespace), params={"fieldSelector": "metadata.name=x2"})
    assert [i["metadata"]["name"] for i in reply.body["items"]] == ["x2"]
    across = await api.get("/api/v1/configmaps", params={"fieldSelector": f"metadata.namespace={namespace},"
                                                                           "metadata.name!=x2"})
    assert sorted(i["metadata"]["name"] for i in across.body["items"]) == ["x1"]
    bad = await api.get(CM.format(ns=namespace), params={"fieldSelector": "spec.nope=1"})
    assert bad.status == 400


async def test_pagination_is_a_consistent_snapshot(api: Api, namespace: str) -> None:
    for i in range(7):
        await api.post(CM.format(ns=namespace), configmap(f"page-{i}"))
    first = await api.get(CM.format(ns=namespace), params={"limit": "3"})
    token, rv = first.body["metadata"]["continue"], first.body["metadata"]["resourceVersion"]
    await api.post(CM.format(ns=namespace), configmap("page-9-late"))
    seen = [i["metadata"]["name"] for i in first.body["items"]]
    while token:
        nxt = await api.get(CM.format(ns=namespace), params={"limit": "3", "continue": token})
        assert nxt.body["metadata"]["resourceVersion"] == rv
        seen += [i["metadata"]["name"] for i in nxt.body["items"]]
        token = nxt.body["metadata"].get("continue", "")
    assert seen == [f"page-{i}" for i in range(7)]


async def test_exact_resource_version_list_reads_the_past(api: Api, namespace: str) -> None:
    before = await api.get(CM.format(ns=namespace))
    await api.post(CM.format(ns=namespace), configmap("later"))
    past = await api.get(CM.format(ns=namespace), params={"resourceVersion": before.body["metadata"]["resourceVersion"],
                                                          "resourceVersionMatch": "Exact"})
    assert past.body["items"] == before.body["items"]


async def test_a_resource_version_from_the_future_is_504_too_large_unless_it_arrives(api: Api,
                                                                                      namespace: str) -> None:
    current = int((await api.get(CM.format(ns=namespace))).body["metadata"]["resourceVersion"])
    loop = asyncio.get_running_loop()
    started = loop.time()
    reply = await api.get(CM.format(ns=namespace), params={"resourceVersion": str(current + 1000)})
    assert reply.status == 504 and reply.body["reason"] == "Timeout"
    assert reply.body["message"].startswith(f"Too large resource version: {current + 1000}, current: ")
    assert reply.body["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"
    assert 2.5 < loop.time() - started < 10  # kube waits 3 s for the revision before refusing
    # a revision that is reached while the read waits is served
    sent = asyncio.Event()

    async def on_sent(*_: object) -> None:
        sent.set()

    trace = aiohttp.TraceConfig()
    trace.on_request_headers_sent.append(on_sent)
    async with aiohttp.ClientSession(trace_configs=[trace]) as session:
        waiting = asyncio.create_task(Api(api.server, session).get(CM.format(ns=namespace),
                                                                   params={"resourceVersion": str(current + 1)}))
        await asyncio.wait_for(sent.wait(), 10)  # the read is on its way before the write that satisfies it
        await api.post(CM.format(ns=namespace), configmap("arrives"))
        served = await waiting
    assert served.status == 200 and int(served.body["metadata"]["resourceVersion"]) >= current + 1
    refused = await api.request("GET", CM.format(ns=namespace),
                                params={"watch": "1", "resourceVersion": str(current + 1000)})
    assert refused.status == 504
    await api.post(CM.format(ns=namespace), configmap("one"))
    one = await api.get(f"{CM.format(ns=namespace)}/one", params={"resourceVersion": str(current + 1000)})
    assert one.status == 504 and one.body["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"
    assert (await api.get(f"{CM.format(ns=namespace)}/one", params={"resourceVersion": str(current)})).status == 200
    assert (await api.get(f"{CM.format(ns=namespace)}/one", params={"resourceVersion": "x"})).status == 400


async def test_status_subresource_separates_spec_and_status(api: Api, unique: str) -> None:
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": f"widgets{unique}.example.com"},
           "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"plural": f"widgets{unique}", "kind": "Widget"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": {"type": "object"}}}]}}
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    created = await api.post(path, dict(crd, status={"acceptedNames": {"kind": "Fake"}}))
    assert created.status == 201 and created.body["metadata"]["generation"] == 1
    assert "acceptedNames" not in (created.body.get("status") or {})
    item = f"{path}/{crd['metadata']['name']}"
    # Patches carry no resourceVersion: the CRD controller writes this object's status concurrently.
    merge = "application/merge-patch+json"
    after_status = await api.patch(f"{item}/status", {"spec": {"scope": "Cluster"},
                                                      "status": {"acceptedNames": {"kind": "Fake"}}}, merge)
    assert after_status.status == 200, after_status.body
    assert after_status.body["status"]["acceptedNames"]["kind"] == "Fake"
    assert after_status.body["spec"]["scope"] == "Namespaced"  # status writes never change spec
    assert after_status.body["metadata"]["generation"] == 1
    after_main = await api.patch(item, {"spec": {"names": {"shortNames": [f"w{unique}"]}},
                                        "status": {"acceptedNames": {"kind": "Changed"}}}, merge)
    assert after_main.status == 200, after_main.body
    assert after_main.body["spec"]["names"]["shortNames"] == [f"w{unique}"]
    assert after_main.body["status"]["acceptedNames"]["kind"] != "Changed"  # main writes never change status
    assert after_main.body["metadata"]["generation"] == 2  # spec changed
    labelled = await api.patch(item, {"metadata": {"labels": {"a": "b"}}}, "application/merge-patch+json")
    assert labelled.body["metadata"]["generation"] == 2  # metadata changes do not bump generation
    await api.delete(item)


async def test_deleting_a_namespace_deletes_its_content_then_itself(api: Api, unique: str) -> None:
    ns = f"doomed-{unique}"
    await api.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    for i in range(3):
        await api.post(CM.format(ns=ns), configmap(f"c{i}"))
    await api.post(f"/api/v1/namespaces/{ns}/secrets", {"apiVersion": "v1", "kind": "Secret",
                                                         "metadata": {"name": "s"}, "stringData": {"a": "b"}})
    reply = await api.delete(f"/api/v1/namespaces/{ns}")
    assert reply.status == 200 and reply.body["status"]["phase"] == "Terminating"
    refused = await api.post(CM.format(ns=ns), configmap("late"))
    assert refused.status in (403, 404)
    if refused.status == 403:
        assert "being terminated" in refused.body["message"]
    for _ in range(100):
        if (await api.get(f"/api/v1/namespaces/{ns}")).status == 404:
            break
        await asyncio.sleep(0.1)
    assert (await api.get(f"/api/v1/namespaces/{ns}")).status == 404
    assert (await api.get(f"{CM.format(ns=ns)}/c0")).status == 404


async def test_secret_string_data_becomes_data(api: Api, namespace: str) -> None:
    reply = await api.post(f"/api/v1/namespaces/{namespace}/secrets",
                           {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                            "stringData": {"password": "hunter2"}})
    assert reply.status == 201
    assert reply.body["data"] == {"password": "aHVudGVyMg=="} and "stringData" not in reply.body
    assert reply.body["type"] == "Opaque"


async def test_every_builtin_type_round_trips(api: Api, namespace: str) -> None:
    objects = {
        f"/api/v1/namespaces/{namespace}/serviceaccounts": {"apiVersion": "v1", "kind": "ServiceAccount",
                                                            "metadata": {"name": "sa"}},
        f"/api/v1/namespaces/{namespace}/events": {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"},
                                                   "involvedObject": {"kind": "ConfigMap", "name": "x"},
                                                   "reason": "Test", "message": "hello"},
        f"/apis/events.k8s.io/v1/namespaces/{namespace}/events": {
            "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e2"},
            "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "x", "reportingInstance": "y",
            "action": "Test", "reason": "Test", "type": "Normal"},
        f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases": {
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
            "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15}},
        f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/roles": {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "r"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]},
        f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/rolebindings": {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "rb"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
            "subjects": [{"kind": "User", "name": "alice"}]},
        "/apis/rbac.authorization.k8s.io/v1/clusterroles": {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": f"cr-{namespace}"},
            "rules": []},
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings": {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": f"crb-{namespace}"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": f"cr-{namespace}"}},
    }
    for path, body in objects.items():
        created = await api.post(path, body)
        assert created.status == 201, (path, created.body)
        got = await api.get(f"{path}/{body['metadata']['name']}")
        assert got.status == 200 and got.body["kind"] == body["kind"]
        assert (await api.delete(f"{path}/{body['metadata']['name']}")).status == 200
        assert (await api.get(f"{path}/{body['metadata']['name']}")).status == 404


async def test_deletecollection_with_selector(api: Api, namespace: str) -> None:
    for name, labels in (("d1", {"gone": "yes"}), ("d2", {"gone": "yes"}), ("d3", {})):
        await api.post(CM.format(ns=namespace), configmap(name, labels=labels))
    reply = await api.delete(CM.format(ns=namespace), params={"labelSelector": "gone=yes"})
    assert reply.status == 200
    left = await api.get(CM.format(ns=namespace))
    assert [i["metadata"]["name"] for i in left.body["items"]] == ["d3"]
