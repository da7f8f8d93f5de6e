"""kube's PersistentVolume controller rules: which volume a claim binds to, a volume's phase, and the volume
a provisioner makes."""

from __future__ import annotations

from typing import Any

import pytest

from kcp_sim_cluster.controlplane.volumematch import best_volume, fits, volume_phase
from kcp_sim_cluster.controlplane.volumes import VolumeBinder, VolumeTaken, provisioned_volume


def claim(name: str = "c", *, storage: str = "1Gi", modes: tuple[str, ...] = ("ReadWriteOnce",), cls: str | None = "",
          volume: str = "", selector: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"accessModes": list(modes), "resources": {"requests": {"storage": storage}}}
    if cls is not None:
        spec["storageClassName"] = cls
    if volume:
        spec["volumeName"] = volume
    if selector:
        spec["selector"] = selector
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"}, "spec": spec}


def pv(name: str = "v", *, storage: str = "1Gi", modes: tuple[str, ...] = ("ReadWriteOnce",), cls: str = "",
       ref: dict[str, Any] | None = None, labels: dict[str, str] | None = None, mode: str = "Filesystem") -> dict[str, Any]:
    spec: dict[str, Any] = {"capacity": {"storage": storage}, "accessModes": list(modes), "volumeMode": mode,
                            "hostPath": {"path": "/a"}}
    if cls:
        spec["storageClassName"] = cls
    if ref is not None:
        spec["claimRef"] = ref
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": spec}


@pytest.mark.parametrize(("volume", "expected"), [
    (pv(), True),
    (pv(storage="2Gi"), True),
    (pv(storage="500Mi"), False),  # too small
    (pv(modes=("ReadOnlyMany",)), False),  # lacks ReadWriteOnce
    (pv(modes=("ReadWriteOnce", "ReadOnlyMany")), True),
    (pv(cls="fast"), False),  # a class the claim does not name
    (pv(mode="Block"), False),
    (pv(ref={"name": "other", "namespace": "ns", "uid": "uid-other"}), False),  # bound to another claim
    (pv(ref={"name": "c", "namespace": "ns"}), True),  # reserved for this claim's name
    (pv(ref={"name": "c", "namespace": "ns", "uid": "uid-old"}), False),  # for an earlier claim of that name
])
def test_a_volume_fits_a_claim_by_class_mode_access_capacity_and_reservation(volume: dict[str, Any],
                                                                             expected: bool) -> None:
    assert fits(claim(), volume) is expected


def test_a_claim_of_no_class_set_or_empty_binds_only_volumes_of_no_class() -> None:
    assert fits(claim(cls=None), pv()) and not fits(claim(cls=None), pv(cls="fast"))
    assert fits(claim(cls="fast"), pv(cls="fast"))


def test_a_selector_must_match_the_volume_labels() -> None:
    wanted = claim(selector={"matchLabels": {"tier": "gold"}})
    assert fits(wanted, pv(labels={"tier": "gold"})) and not fits(wanted, pv(labels={"tier": "tin"}))


def test_the_smallest_fitting_volume_wins_unless_one_is_reserved_for_the_claim() -> None:
    small, large = pv("small", storage="1Gi"), pv("large", storage="10Gi")
    assert best_volume(claim(), [large, small]) is small
    reserved = pv("reserved", storage="10Gi", ref={"name": "c", "namespace": "ns"})
    assert best_volume(claim(), [large, small, reserved]) is reserved
    assert best_volume(claim(storage="20Gi"), [large, small]) is None


def test_a_volume_is_available_bound_or_released_by_its_claim() -> None:
    assert volume_phase(pv(), None) == "Available"
    ref = {"name": "c", "namespace": "ns", "uid": "uid-c"}
    assert volume_phase(pv(ref=ref), claim(volume="v")) == "Bound"
    assert volume_phase(pv(ref=ref), claim()) == "Available"  # the claim's half of the binding is not there yet
    assert volume_phase(pv(ref=ref), None) == "Released"
    assert volume_phase(pv(ref={**ref, "uid": "uid-old"}), claim(volume="v")) == "Released"  # a new claim, same name
    assert volume_phase(pv(ref={"name": "c", "namespace": "ns"}), None) == "Available"  # reserved, claim not made yet


def test_a_provisioned_volume_is_the_claims_size_and_modes_on_the_chosen_node() -> None:
    made = provisioned_volume(claim(storage="2Gi", cls="fast"), provisioner="example.com/fast", reclaim_policy="Delete",
                              node="node-1")
    assert made["metadata"] == {"name": "pvc-uid-c", "annotations": {"pv.kubernetes.io/provisioned-by": "example.com/fast"}}
    spec = made["spec"]
    assert spec["capacity"] == {"storage": "2Gi"} and spec["accessModes"] == ["ReadWriteOnce"]
    assert spec["storageClassName"] == "fast" and spec["persistentVolumeReclaimPolicy"] == "Delete"
    assert spec["claimRef"]["uid"] == "uid-c" and spec["claimRef"]["name"] == "c"
    assert spec["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == ["node-1"]
    assert fits(claim(storage="2Gi", cls="fast"), made)


class StaleCacheSim:
    """A Sim whose informer was behind: the stored volume went to another claim meanwhile."""

    def __init__(self, stored: dict[str, Any]) -> None:
        self.stored = stored
        self.status_writes = 0

    def resource(self, name: str) -> str:
        return name

    async def patch(self, res: str, obj: Any, mutate: Any) -> dict[str, Any]:
        mutate(self.stored)
        return self.stored

    async def write_status(self, res: str, obj: Any, mutate: Any) -> None:
        self.status_writes += 1


async def test_a_volume_taken_meanwhile_is_not_bound_again_and_the_claim_is_retried() -> None:
    other = {"name": "other", "namespace": "ns", "uid": "uid-other"}
    sim = StaleCacheSim(pv(ref=other))
    binder = VolumeBinder(sim)  # type: ignore[arg-type]
    with pytest.raises(VolumeTaken):
        await binder._bind(claim(), pv())  # the cache still shows the volume free
    assert sim.stored["spec"]["claimRef"] == other and sim.status_writes == 0
