"""kcp-sim-cluster's flags: the cluster's shape, its release and its clusters' names."""

from __future__ import annotations

import pytest

from kcp_apiserver.embedding import RELEASES
from kcp_sim_cluster.settings import SimClusterSettings, parse_capacity
from kcpcommon.settings import parse_settings


def test_node_capacity_is_parsed_into_resources() -> None:
    assert parse_capacity("cpu=4,memory=16Gi,pods=110") == {"cpu": "4", "memory": "16Gi", "pods": "110"}
    with pytest.raises(ValueError, match="resource=quantity"):
        parse_capacity("cpu=4,memory")


def test_the_newest_release_is_the_default_and_an_older_one_can_be_chosen() -> None:
    assert parse_settings(SimClusterSettings, []).release == RELEASES[-1]
    assert parse_settings(SimClusterSettings, ["--kubernetes-version", "1.25"]).release == "1.25"
    assert parse_settings(SimClusterSettings, ["--kubernetes-version", "v1.25.3"]).release == "1.25"


def test_an_unshipped_release_is_refused() -> None:
    with pytest.raises(SystemExit):
        parse_settings(SimClusterSettings, ["--kubernetes-version", "1.2"])


def test_several_clusters_are_named_after_the_name() -> None:
    args = parse_settings(SimClusterSettings, ["--name", "edge", "--clusters", "3"])
    assert args.cluster_names == ("edge-1", "edge-2", "edge-3")
    assert parse_settings(SimClusterSettings, ["--name", "edge"]).cluster_names == ("edge",)


def test_a_load_balancer_range_too_small_for_the_clusters_is_refused() -> None:
    args = parse_settings(SimClusterSettings, ["--load-balancer-ip-range", "10.0.0.0/30", "--clusters", "4"])
    assert args.load_balancer_ip_range == "10.0.0.0/30"
    with pytest.raises(SystemExit):
        parse_settings(SimClusterSettings, ["--load-balancer-ip-range", "10.0.0.0/31", "--clusters", "3"])
    with pytest.raises(SystemExit):
        parse_settings(SimClusterSettings, ["--load-balancer-ip-range", "not-a-cidr"])
