"""Which class names a referrer going down maps to the tenant's classes, and when it must wait for one."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from kcpcommon.errors import APIForbiddenError, APINotFoundError
from kcpsyncer.classes import STORAGE_CLASSES, ClassNames, MissingClass
from kcpsyncer.names import downstream_name

LC = "root:team"


class Classes:
    """One class resource's two sides: the names kcp and the physical cluster have (GETs answered from them)."""

    def __init__(self, *, tenant: set[str], cluster: set[str], forbidden: bool = False) -> None:
        self.tenant, self.cluster, self.forbidden = tenant, cluster, forbidden
        self.cluster_gets = 0
        self.down = SimpleNamespace(kind="StorageClass")
        self.up_resource = SimpleNamespace(get=self._up_get)
        self.down_resource = SimpleNamespace(get=self._down_get)

    def upstream(self, key: Any) -> None:
        return None  # nothing cached: the answers come from the GETs

    async def _up_get(self, name: str) -> dict[str, Any]:
        if name not in self.tenant:
            raise APINotFoundError("not found", status=404, details={"name": name})
        return {"metadata": {"name": name}}

    async def _down_get(self, name: str) -> dict[str, Any]:
        self.cluster_gets += 1
        if self.forbidden:
            raise APIForbiddenError("forbidden", status=403)
        if name not in self.cluster:
            raise APINotFoundError("not found", status=404, details={"name": name})
        return {"metadata": {"name": name}}


def claim(class_name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "default"},
            "spec": {"storageClassName": class_name}}


def mapping(classes: Classes, up: dict[str, Any], down: dict[str, Any] | None = None) -> dict[Any, str]:
    names = ClassNames({STORAGE_CLASSES: classes}, logical_cluster=LC)  # type: ignore[dict-item]
    return asyncio.run(names.mapping("PersistentVolumeClaim", up, down))


def test_the_tenants_class_is_mapped_and_the_clusters_own_passes_unchanged() -> None:
    classes = Classes(tenant={"fast"}, cluster={"standard"})
    assert mapping(classes, claim("fast")) == {(STORAGE_CLASSES, "fast"): downstream_name(LC, "fast")}
    assert mapping(classes, claim("standard")) == {}


def test_a_class_no_one_has_yet_holds_the_referrer_back_until_one_side_has_it() -> None:
    classes = Classes(tenant=set(), cluster={"standard"})
    with pytest.raises(MissingClass) as missing:
        mapping(classes, claim("fast"))
    assert (missing.value.resource, missing.value.name) == (STORAGE_CLASSES, "fast")
    assert "StorageClass 'fast'" in str(missing.value)
    classes.tenant.add("fast")  # `kubectl apply -f dir/`: storageclass.yaml after pvc.yaml
    assert mapping(classes, claim("fast")) == {(STORAGE_CLASSES, "fast"): downstream_name(LC, "fast")}


def test_a_referrer_already_down_keeps_what_was_decided_and_asks_nobody() -> None:
    classes = Classes(tenant={"fast"}, cluster=set())
    assert mapping(classes, claim("fast"), down=claim("fast")) == {}  # went down as the cluster's: stays
    mapped = downstream_name(LC, "fast")
    assert mapping(Classes(tenant=set(), cluster=set()), claim("fast"), down=claim(mapped)) == {
        (STORAGE_CLASSES, "fast"): mapped}  # the tenant's class deleted before its users: the name stays mapped
    assert classes.cluster_gets == 0


def test_a_cluster_the_syncer_may_not_ask_about_its_classes_lets_the_name_pass_as_before() -> None:
    classes = Classes(tenant=set(), cluster=set(), forbidden=True)
    assert mapping(classes, claim("gold")) == {}
