"""kcp-syncer's settings: the flags the issue names, environment variables, and refusals with exit code 2."""

from __future__ import annotations

import pytest
from kcp_syncer.settings import SyncerSettings

from kcpcommon.settings import parse_settings
from kcpsyncer import DEFAULT_RESOURCES, SyncerOptions

REQUIRED = ["--to-kubeconfig", "phys.kubeconfig", "--sync-target", "east"]


def test_the_issue_s_command_line_parses() -> None:
    settings = parse_settings(SyncerSettings, ["--from-kubeconfig", "kcp.kubeconfig", *REQUIRED,
                                               "--logical-cluster", "root:org", "--resources",
                                               "deployments.apps, services,deployments.apps", "--health-port", "9090"])
    assert (settings.from_kubeconfig, settings.to_kubeconfig, settings.sync_target, settings.logical_cluster) == (
        "kcp.kubeconfig", "phys.kubeconfig", "east", "root:org")
    assert settings.resource_list() == ("deployments.apps", "services")
    assert settings.health_port == 9090


def test_defaults_sync_the_synctarget_default_types() -> None:
    settings = parse_settings(SyncerSettings, REQUIRED)
    assert settings.resource_list() == DEFAULT_RESOURCES
    assert settings.logical_cluster == "admin" and settings.heartbeat_interval == 10.0
    # the daemon and the engine (which push-mode syncers use) agree: enough writes in flight for
    # 100 changes a second against a kcp that answers in 100 ms (issue 12)
    assert settings.workers == SyncerOptions.workers == 64


def test_environment_variables_set_what_flags_do(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KCP_SYNCER_SYNC_TARGET", "west")
    monkeypatch.setenv("KCP_SYNCER_TO_KUBECONFIG", "/etc/phys")
    monkeypatch.setenv("KCP_SYNCER_HEARTBEAT_INTERVAL", "3")
    settings = parse_settings(SyncerSettings, [])
    assert (settings.sync_target, settings.to_kubeconfig, settings.heartbeat_interval) == ("west", "/etc/phys", 3.0)
    assert parse_settings(SyncerSettings, ["--sync-target", "east"]).sync_target == "east"  # flags win


@pytest.mark.parametrize("argv", [["--sync-target", "east"], [*REQUIRED, "--resources", " , "],
                                  [*REQUIRED, "--heartbeat-interval", "0"]])
def test_bad_settings_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_settings(SyncerSettings, argv)
    assert exited.value.code == 2
