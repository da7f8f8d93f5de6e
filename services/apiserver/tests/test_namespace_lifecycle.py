"""NamespaceLifecycle admission: a create right after a namespace's delete is refused even when the informer
has not seen the deletion yet (kube's forceLiveLookup)."""

from __future__ import annotations

from typing import Any, cast

import pytest

from kcp_apiserver.admission.namespace_lifecycle import NamespaceLifecycle
from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import system_context
from kcp_apiserver.registry.admission import CREATE, DELETE, Attributes
from kcp_apiserver.registry.builtin import BUILTINS, NAMESPACE
from kcp_apiserver.storage.etcd import Stored

CONFIGMAPS = next(r for r in BUILTINS if r.plural == "configmaps")


class Etcd:
    """The stored namespace: already marked for deletion, as etcd holds it once the delete is written."""

    def __init__(self) -> None:
        self.reads = 0

    async def get(self, key: str) -> Stored:
        self.reads += 1
        return Stored(key, {"metadata": {"name": "doomed", "deletionTimestamp": "2026-11-28T08:00:00Z"}}, 7)


def attrs(resource: Any, operation: str, namespace: str, name: str) -> Attributes:
    return Attributes(system_context("c1"), resource, operation, namespace, name, None, None)


async def test_a_create_after_the_namespace_delete_reads_etcd_when_the_cache_still_says_active() -> None:
    etcd = Etcd()
    lifecycle = NamespaceLifecycle(cast(Any, etcd), cast(Any, None))
    lifecycle.terminating[("c1", "doomed")] = False  # the informer has not seen the deletion yet

    await lifecycle.validate(attrs(CONFIGMAPS, CREATE, "doomed", "early"))  # before the delete: the cache decides
    assert etcd.reads == 0

    await lifecycle.validate(attrs(NAMESPACE, DELETE, "", "doomed"))
    with pytest.raises(st.APIError) as refused:
        await lifecycle.validate(attrs(CONFIGMAPS, CREATE, "doomed", "late"))
    assert refused.value.code == 403 and "being terminated" in refused.value.message
    assert etcd.reads == 1
