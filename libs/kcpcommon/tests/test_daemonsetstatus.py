"""A DaemonSet's status summed over clusters: what `kubectl get ds` and `kubectl rollout status ds` read."""

from kcpcommon.daemonsetstatus import sum_statuses


def cluster(desired: int, ready: int, *, updated: int | None = None, generation: int = 2) -> dict[str, int]:
    return {"currentNumberScheduled": desired, "desiredNumberScheduled": desired, "numberMisscheduled": 0,
            "numberReady": ready, "numberAvailable": ready, "updatedNumberScheduled": desired if updated is None
            else updated, "observedGeneration": generation}


def test_counts_sum_over_the_placed_clusters_and_others_are_left_out() -> None:
    statuses = {"east": cluster(3, 3), "west": cluster(2, 1), "gone": cluster(9, 9)}
    status = sum_statuses(statuses, placed={"east", "west"}, generation=2)
    assert status == {"currentNumberScheduled": 5, "desiredNumberScheduled": 5, "numberMisscheduled": 0,
                      "numberReady": 4, "numberAvailable": 4, "updatedNumberScheduled": 5, "numberUnavailable": 1,
                      "observedGeneration": 2}


def test_observed_generation_is_the_oldest_and_an_unreported_cluster_has_observed_nothing_new() -> None:
    assert sum_statuses({"east": cluster(3, 3), "west": cluster(2, 2, generation=1)}, placed={"east", "west"},
                        generation=2)["observedGeneration"] == 1
    assert sum_statuses({"east": cluster(3, 3)}, placed={"east", "west"}, generation=2)["observedGeneration"] == 1
    assert sum_statuses({}, placed=(), generation=4) == {
        "currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0, "numberReady": 0,
        "observedGeneration": 4}


def test_a_stale_cluster_keeps_its_nodes_desired_but_none_of_its_pods_ready() -> None:
    status = sum_statuses({"east": cluster(3, 3), "west": cluster(2, 2)}, placed={"east", "west"}, generation=2,
                          stale={"west"})
    assert (status["desiredNumberScheduled"], status["numberReady"], status["numberAvailable"],
            status["numberUnavailable"]) == (5, 3, 3, 2)


def test_garbage_counts_are_zero_and_collision_count_is_the_largest() -> None:
    bad = {**cluster(2, 2), "numberReady": "two", "collisionCount": 3}
    status = sum_statuses({"east": bad, "west": {**cluster(1, 1), "collisionCount": 1}}, placed={"east", "west"},
                          generation=2)
    assert status["numberReady"] == 1 and status["collisionCount"] == 3
