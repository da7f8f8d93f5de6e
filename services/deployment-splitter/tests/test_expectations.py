"""The splitter waits for the cache to show its own writes, and not forever."""

from __future__ import annotations

from kcp_deployment_splitter.expectations import Expectations

from kcpcommon.keys import ObjectKey

ROOT = ObjectKey("lc", "default", "web")
CHILD = ObjectKey("lc", "default", "web--east")


def obj(rv: int, uid: str = "u1", deleting: bool = False) -> dict:
    meta = {"resourceVersion": str(rv), "uid": uid}
    if deleting:
        meta["deletionTimestamp"] = "2026-11-25T00:00:00Z"
    return {"metadata": meta}


def test_a_write_is_awaited_until_the_cache_holds_its_resource_version() -> None:
    now = [0.0]
    expectations = Expectations(ttl=15, clock=lambda: now[0])
    expectations.wrote(ROOT, CHILD, obj(10))
    assert expectations.waiting(ROOT, lambda key: obj(9)) == 15
    assert expectations.waiting(ROOT, lambda key: None) == 15
    assert expectations.waiting(ROOT, lambda key: obj(11)) is None
    assert expectations.waiting(ROOT, lambda key: obj(1)) is None  # met once: forgotten


def test_a_delete_is_met_by_absence_a_new_uid_or_a_pending_finalizer() -> None:
    expectations = Expectations(ttl=15, clock=lambda: 0.0)
    for cached in (None, obj(12, uid="u2"), obj(12, deleting=True)):
        expectations.deleted(ROOT, CHILD, "u1")
        assert expectations.waiting(ROOT, lambda key: obj(11)) == 15
        assert expectations.waiting(ROOT, lambda key, c=cached: c) is None


def test_an_expectation_the_cache_never_meets_expires() -> None:
    now = [0.0]
    expectations = Expectations(ttl=15, clock=lambda: now[0])
    expectations.wrote(ROOT, CHILD, obj(10))
    now[0] = 10
    assert expectations.waiting(ROOT, lambda key: None) == 5
    now[0] = 16
    assert expectations.waiting(ROOT, lambda key: None) is None
