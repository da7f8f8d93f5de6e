"""Largest remainder: exact totals, deterministic ties, capacity water-filling."""

from __future__ import annotations

import itertools

from kcp_deployment_splitter.division import divide, largest_remainder


def test_fifteen_over_two_equal_targets_gives_the_extra_replica_to_the_first_name() -> None:
    assert largest_remainder(15, {"west": 1, "east": 1}) == {"east": 8, "west": 7}


def test_the_answer_does_not_depend_on_the_order_targets_are_listed_in() -> None:
    names = ["a", "b", "c", "d"]
    answers = {tuple(sorted(largest_remainder(10, dict.fromkeys(order, 1)).items()))
               for order in itertools.permutations(names)}
    assert answers == {(("a", 3), ("b", 3), ("c", 2), ("d", 2))}


def test_shares_always_add_up_to_the_total() -> None:
    for total in range(0, 40):
        for weights in ({"a": 1}, {"a": 1, "b": 2}, {"a": 3, "b": 5, "c": 7}, {"a": 1, "b": 1, "c": 1}):
            assert sum(largest_remainder(total, weights).values()) == total


def test_weights_divide_in_proportion() -> None:
    assert largest_remainder(15, {"east": 2, "west": 3}) == {"east": 6, "west": 9}


def test_zero_weight_targets_get_nothing_and_no_targets_get_nothing() -> None:
    assert largest_remainder(5, {"a": 0, "b": 1}) == {"a": 0, "b": 5}
    assert largest_remainder(5, {}) == {}


def test_capacity_moves_the_overflow_to_targets_with_room() -> None:
    assert divide(15, {"big": 1, "small": 1}, {"small": 3}) == {"big": 12, "small": 3}


def test_overflow_is_shared_by_weight_among_those_with_room() -> None:
    assert divide(12, {"a": 1, "b": 1, "c": 1}, {"a": 0}) == {"a": 0, "b": 6, "c": 6}


def test_when_nobody_has_room_the_rest_stays_where_the_weights_put_it() -> None:
    shares = divide(10, {"a": 1, "b": 1}, {"a": 2, "b": 3})
    assert sum(shares.values()) == 10
    assert shares == {"a": 2 + 3, "b": 3 + 2}


def test_capacity_above_the_share_changes_nothing() -> None:
    assert divide(15, {"east": 1, "west": 1}, {"east": 100, "west": 100}) == {"east": 8, "west": 7}


def test_an_admin_s_bound_is_never_exceeded_so_the_shares_may_add_up_to_less() -> None:
    """capacityBounds: the overflow goes to targets with room, and what nobody has room for waits."""
    assert divide(10, {"a": 1, "b": 1}, {"a": 2}, bounded={"a"}) == {"a": 2, "b": 8}
    assert divide(10, {"a": 1, "b": 1}, {"a": 2, "b": 3}, bounded={"a", "b"}) == {"a": 2, "b": 3}
    # a bounded target full and an estimate-capped one: the rest goes to the estimate, as when nobody has room
    assert divide(10, {"a": 1, "b": 1}, {"a": 2, "b": 3}, bounded={"a"}) == {"a": 2, "b": 8}
