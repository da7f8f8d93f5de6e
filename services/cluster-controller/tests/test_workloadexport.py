"""The `kubernetes` export offers every imported CRD as a schema, making only the schemas it lacks."""

from __future__ import annotations

from typing import Any

from kcp_cluster_controller.workloadexport import offer_imported_types

from kcpcommon.errors import APIAlreadyExistsError, APINotFoundError


class FakeResource:
    def __init__(self, objects: dict[str, dict[str, Any]]) -> None:
        self.objects = objects
        self.creates = 0
        self.patches: list[Any] = []

    async def get(self, name: str) -> dict[str, Any]:
        if name not in self.objects:
            raise APINotFoundError(name, status=404, reason="NotFound")
        return self.objects[name]

    async def list(self, *, label_selector: str | None = None) -> dict[str, Any]:
        return {"items": list(self.objects.values())}

    async def create(self, body: dict[str, Any]) -> dict[str, Any]:
        self.creates += 1
        name = body["metadata"]["name"]
        if name in self.objects:
            raise APIAlreadyExistsError(name, status=409, reason="AlreadyExists")
        self.objects[name] = body
        return body

    async def patch(self, name: str, patch: Any) -> dict[str, Any]:
        self.patches.append(patch)
        self.objects[name] = {**self.objects[name], **patch}
        return self.objects[name]


class FakeKcp:
    def __init__(self, crds: list[dict[str, Any]]) -> None:
        self.resources = {"apiexports": FakeResource({"kubernetes": {"metadata": {"name": "kubernetes"}}}),
                          "apiresourceschemas": FakeResource({}),
                          "customresourcedefinitions": FakeResource({c["metadata"]["name"]: c for c in crds})}

    def dynamic(self, cluster: str) -> FakeKcp:
        return self

    def resource(self, api_version: str, plural: str, namespaced: bool) -> FakeResource:
        return self.resources[plural]


def crd(plural: str, group: str) -> dict[str, Any]:
    return {"metadata": {"name": f"{plural}.{group}", "labels": {"kcp.io/imported": "true"}},
            "spec": {"group": group, "scope": "Namespaced", "names": {"plural": plural, "kind": plural.title()},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": {"type": "object"}}}]}}


async def test_the_schemas_are_made_once_and_the_export_offers_them_all() -> None:
    kcp = FakeKcp([crd("deployments", "apps"), crd("services", "")])
    offered = await offer_imported_types(kcp, "compute")  # type: ignore[arg-type]
    assert offered is not None and len(offered) == 2
    assert any(name.endswith(".deployments.apps") for name in offered)
    assert any(name.endswith(".services.core") for name in offered)
    schemas = kcp.resources["apiresourceschemas"]
    assert schemas.creates == 2
    assert await offer_imported_types(kcp, "compute") == offered  # type: ignore[arg-type]
    assert schemas.creates == 2  # nothing asked again: they exist
    assert len(kcp.resources["apiexports"].patches) == 1
