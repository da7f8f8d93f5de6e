"""kubernetes-asyncio, a real client library, works against kcp unchanged."""

from __future__ import annotations

import asyncio

from kubernetes_asyncio import client, config, watch

from kcp_process import KcpServer


async def test_kubernetes_asyncio_crud_and_watch(kcp: KcpServer, unique: str) -> None:
    api_client = await config.new_client_from_config(config_file=str(kcp.kubeconfig))
    async with api_client:
        core = client.CoreV1Api(api_client)
        ns = f"ka-{unique}"
        await core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
        body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="lib", labels={"via": "lib"}), data={"a": "1"})
        created = await core.create_namespaced_config_map(ns, body)
        assert created.metadata.uid
        listed = await core.list_namespaced_config_map(ns, label_selector="via=lib")
        assert [c.metadata.name for c in listed.items] == ["lib"]
        patched = await core.patch_namespaced_config_map("lib", ns, {"data": {"b": "2"}})
        assert patched.data == {"a": "1", "b": "2"}

        seen: list[str] = []

        async def watch_it() -> None:
            w = watch.Watch()
            async with w.stream(core.list_namespaced_config_map, ns,
                                resource_version=listed.metadata.resource_version, timeout_seconds=10) as stream:
                async for event in stream:
                    seen.append(event["type"])
                    if event["type"] == "DELETED":
                        return

        # the watch starts at the list's resourceVersion: it gets the patch and the delete whenever it opens
        task = asyncio.create_task(watch_it())
        await core.delete_namespaced_config_map("lib", ns)
        await asyncio.wait_for(task, 15)
        assert seen[-1] == "DELETED" and "MODIFIED" in seen
        lease_api = client.CoordinationV1Api(api_client)
        lease = client.V1Lease(metadata=client.V1ObjectMeta(name="lock"),
                               spec=client.V1LeaseSpec(holder_identity="me", lease_duration_seconds=15))
        await lease_api.create_namespaced_lease(ns, lease)
        got = await lease_api.read_namespaced_lease("lock", ns)
        assert got.spec.holder_identity == "me"
