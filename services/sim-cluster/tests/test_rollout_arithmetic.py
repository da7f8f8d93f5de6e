"""The deployment controller's rolling-update arithmetic, against kube's documented examples."""

from __future__ import annotations

import pytest

from kcp_sim_cluster.controlplane.hashing import (
    SAFE_ALPHABET,
    pod_template_hash,
    templates_equal_ignoring_hash,
)
from kcp_sim_cluster.controlplane.rollout import (
    RSState,
    new_rs_replicas,
    old_scale_down,
    proportional_scale,
    resolve_fenceposts,
    scaled_value,
)


@pytest.mark.parametrize(("surge", "unavailable", "desired", "expected"), [
    ("25%", "25%", 10, (3, 2)),  # surge rounds up (2.5 -> 3), unavailable down (2.5 -> 2)
    (None, None, 4, (1, 1)),  # kube's default 25%/25%
    ("25%", "25%", 1, (1, 0)),
    (0, 0, 5, (0, 1)),  # both zero would stall: unavailable becomes 1
    ("0%", "0%", 5, (0, 1)),
    (2, "50%", 3, (2, 1)),
    ("100%", 0, 7, (7, 0)),
])
def test_fenceposts_round_surge_up_and_unavailable_down(surge: object, unavailable: object, desired: int,
                                                        expected: tuple[int, int]) -> None:
    assert resolve_fenceposts(surge, unavailable, desired) == expected  # type: ignore[arg-type]


def test_scaled_value_reads_ints_given_as_text() -> None:
    assert scaled_value("3", 10, round_up=True) == 3
    with pytest.raises(ValueError):
        scaled_value("three", 10, round_up=True)


def test_new_replica_set_grows_only_within_the_surge() -> None:
    # 10 desired, surge 3: 10 old pods leave room for 3 new ones
    assert new_rs_replicas(10, 3, 0, 10) == 3
    # at the ceiling already: no growth
    assert new_rs_replicas(10, 3, 3, 13) == 3
    # never beyond the desired count
    assert new_rs_replicas(10, 3, 9, 9) == 10
    # a fresh deployment (nothing running) starts all its replicas
    assert new_rs_replicas(5, 1, 0, 0) == 5


def test_old_replica_sets_shrink_only_above_the_availability_floor() -> None:
    new = RSState("new", replicas=3, available=0)
    old = RSState("old", replicas=10, available=10, created="2026-01-01T00:00:00Z")
    # 10 desired, unavailable 2: 13 pods, 3 unavailable new ones -> 13 - 8 - 3 = 2 may go
    assert old_scale_down(10, 2, new, [old]) == {"old": 8}
    # once the new pods are available, the old ones can go as far as the floor allows
    new_ready = RSState("new", replicas=3, available=3)
    old_shrunk = RSState("old", replicas=8, available=8, created="2026-01-01T00:00:00Z")
    assert old_scale_down(10, 2, new_ready, [old_shrunk]) == {"old": 5}


def test_unavailable_old_pods_are_shed_first_and_oldest_first() -> None:
    new = RSState("new", replicas=2, available=2)
    older = RSState("older", replicas=2, available=0, created="2026-01-01T00:00:00Z")
    old = RSState("old", replicas=6, available=6, created="2026-01-02T00:00:00Z")
    # desired 8, unavailable 2: floor 6; budget 10 - 6 - 0 = 4: the 2 broken pods first, then 2 healthy
    assert old_scale_down(8, 2, new, [old, older]) == {"older": 0, "old": 4}


def test_nothing_shrinks_when_the_new_pods_are_not_available_yet() -> None:
    new = RSState("new", replicas=1, available=0)
    old = RSState("old", replicas=4, available=4, created="a")
    # desired 4, surge 1, unavailable 0 (maxUnavailable 0): all 4 old pods must stay
    assert old_scale_down(4, 0, new, [old]) == {}


def test_a_resize_mid_rollout_is_spread_in_proportion() -> None:
    # kube's docs: 10 replicas, surge 3, rollout half way (new 5, old 8), scaled to 15:
    # allowed 15+3=18... the 5 extra replicas go 3 to the larger and 2 to the smaller RS
    new = RSState("new", replicas=5, created="b", max_replicas=13)
    old = RSState("old", replicas=8, created="a", max_replicas=13)
    sizes = proportional_scale(15, 3, 13, [new, old])
    assert sum(sizes.values()) == 18
    assert sizes == {"new": 7, "old": 11}


def test_scaling_to_zero_empties_every_replica_set() -> None:
    sizes = proportional_scale(0, 0, 6, [RSState("a", 4, created="a"), RSState("b", 2, created="b")])
    assert sizes == {"a": 0, "b": 0}


def test_pod_template_hash_is_stable_safe_and_ignores_its_own_label() -> None:
    template = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    labelled = {"metadata": {"labels": {"app": "web", "pod-template-hash": "xyz"}}, "spec": template["spec"]}
    first = pod_template_hash(template)
    assert first == pod_template_hash(labelled)
    assert set(first) <= set(SAFE_ALPHABET)
    assert templates_equal_ignoring_hash(template, labelled)
    changed = {**template, "spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}
    assert pod_template_hash(changed) != first
    assert not templates_equal_ignoring_hash(template, changed)
    assert pod_template_hash(template, collision_count=1) != first


def test_templates_compare_as_kube_decodes_them() -> None:
    # kubectl rollout undo sends back the template with `resources: {}` and `creationTimestamp: null`
    stored = {"metadata": {"labels": {"app": "web", "pod-template-hash": "abc"}},
              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    sent = {"metadata": {"creationTimestamp": None, "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {}}]}}
    assert templates_equal_ignoring_hash(stored, sent)
    assert pod_template_hash(stored) == pod_template_hash(sent)
