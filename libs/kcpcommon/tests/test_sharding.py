"""Sharded controllers: every shard elects its leader on a Lease of its own, so all shards lead at once.

The election itself, four replicas of two shards on a real server, is in test_leaderelection.py.
"""

from __future__ import annotations

import os

import pytest
from pydantic import Field

from kcpcommon.daemon import ShardedDaemonSettings, parse_settings, settings_config
from kcpcommon.sharding import shard_lease_name

COMPONENT = "kcp-sharded-thing"


class ThingSettings(ShardedDaemonSettings):
    """Reconciles things, sharded by logical cluster."""

    model_config = settings_config(COMPONENT)

    workers: int = Field(2, ge=1, description="things reconciled at once")


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in list(os.environ):
        if name.startswith("KCP_SHARDED_THING_"):
            monkeypatch.delenv(name)
    return monkeypatch


@pytest.mark.parametrize(("name", "index", "shards", "lease"), [
    ("kcp-deployment-splitter", 0, 1, "kcp-deployment-splitter"),  # unsharded: the name as it always was
    ("kcp-deployment-splitter", 0, 2, "kcp-deployment-splitter-shard-0"),
    ("kcp-deployment-splitter", 1, 2, "kcp-deployment-splitter-shard-1"),
    ("splitter", 9, 10, "splitter-shard-9"),
])
def test_each_shard_has_a_lease_name_of_its_own(name: str, index: int, shards: int, lease: str) -> None:
    assert shard_lease_name(name, index, shards) == lease


@pytest.mark.parametrize(("index", "shards"), [(2, 2), (-1, 2), (1, 1)])
def test_a_shard_index_outside_the_shards_has_no_lease(index: int, shards: int) -> None:
    with pytest.raises(ValueError, match="shard index"):
        shard_lease_name("splitter", index, shards)


def test_settings_name_the_lease_after_the_component_and_the_shard(clean_env: pytest.MonkeyPatch) -> None:
    assert parse_settings(ThingSettings, []).leader_election(COMPONENT).lease_name == COMPONENT
    sharded = parse_settings(ThingSettings, ["--shards", "3", "--shard-index", "2"])
    assert (sharded.shards, sharded.shard_index) == (3, 2)
    assert sharded.leader_election(COMPONENT).lease_name == f"{COMPONENT}-shard-2"


def test_an_explicit_lease_name_gets_the_shard_suffix_too(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("KCP_SHARDED_THING_SHARDS", "2")
    clean_env.setenv("KCP_SHARDED_THING_SHARD_INDEX", "1")
    settings = parse_settings(ThingSettings, ["--leader-elect-resource-name", "things"])
    assert settings.leader_election(COMPONENT).lease_name == "things-shard-1"


def test_a_shard_index_beyond_the_shards_is_a_usage_error(capsys: pytest.CaptureFixture[str],
                                                          clean_env: pytest.MonkeyPatch) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_settings(ThingSettings, ["--shards", "2", "--shard-index", "2"], prog=COMPONENT)
    assert exited.value.code == 2
    assert "shard_index 2 must be less than shards 2" in capsys.readouterr().err
