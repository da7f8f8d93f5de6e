"""Node capacities add up as kube's quantities."""

from fractions import Fraction

from kcp_cluster_controller.physical import _sum
from kcp_cluster_controller.quantity import format_quantity, parse_quantity


def test_parse() -> None:
    assert parse_quantity("16Gi") == 16 * 2**30
    assert parse_quantity("500m") == Fraction(1, 2)
    assert parse_quantity("1e3") == 1000


def test_capacity_is_summed_over_nodes() -> None:
    total = _sum([{"cpu": "4", "memory": "16Gi", "pods": "110"}, {"cpu": "500m", "memory": "512Mi", "pods": "110"}])
    assert total == {"cpu": "4500m", "memory": "16896Mi", "pods": "220"}
    assert format_quantity(Fraction(8), "cpu") == "8"
