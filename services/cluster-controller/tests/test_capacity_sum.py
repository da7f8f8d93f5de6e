"""Node capacities add up as kube's quantities."""

from kcp_cluster_controller.physical import sum_resources


def test_capacity_is_summed_over_nodes() -> None:
    total = sum_resources([{"cpu": "4", "memory": "16Gi", "pods": "110"}, {"cpu": "500m", "memory": "512Mi", "pods": "110"}])
    assert total == {"cpu": "4500m", "memory": "16896Mi", "pods": "220"}
