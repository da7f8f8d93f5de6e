"""Daemon scaffolding: settings from flags and env, health endpoints, signals, and a clean exit."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio.client import CoordinationV1Api
from prometheus_client import CollectorRegistry, Counter
from pydantic import Field

from kcp_process import KcpServer
from kcpcommon.clients import ClientFactory
from kcpcommon.daemon import (
    DaemonSettings,
    HealthServer,
    env_var,
    parse_settings,
    run_daemon,
    settings_config,
)
from kcpcommon.leaderelection import LeadershipLost


class SplitterSettings(DaemonSettings):
    """Splits Deployments across clusters."""

    model_config = settings_config("kcp-deployment-splitter")

    resync_period: float = Field(300.0, description="seconds between full resyncs")
    clusters: list[str] = Field(default_factory=list, description="only these SyncTargets")


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in list(os.environ):
        if name.startswith("KCP_DEPLOYMENT_SPLITTER_"):
            monkeypatch.delenv(name)
    return monkeypatch


def test_help_lists_every_setting_with_its_flag_env_var_and_description(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_settings(SplitterSettings, ["--help"], prog="kcp-deployment-splitter")
    assert exited.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "Splits Deployments across clusters." in text
    for name, info in SplitterSettings.model_fields.items():
        assert f"--{name.replace('_', '-')}" in text
        assert env_var(SplitterSettings, name) in text
        assert " ".join((info.description or "").split()) in text
    assert "--leader-elect, --no-leader-elect" in text
    assert "KCP_DEPLOYMENT_SPLITTER_HEALTH_PORT" in text


def test_defaults_are_client_go_and_kcp_ones(clean_env: pytest.MonkeyPatch) -> None:
    settings = parse_settings(SplitterSettings, [])
    assert (settings.cluster, settings.leader_elect, settings.lease_namespace, settings.health_port) == (
        "admin", True, "default", 0)
    election = settings.leader_election("kcp-deployment-splitter")
    assert (election.lease_name, election.namespace) == ("kcp-deployment-splitter", "default")
    assert (election.lease_duration, election.renew_deadline, election.retry_period) == (15.0, 10.0, 2.0)


def test_env_vars_set_every_kind_of_field_and_flags_override_them(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("KCP_DEPLOYMENT_SPLITTER_QPS", "5")
    clean_env.setenv("KCP_DEPLOYMENT_SPLITTER_LEADER_ELECT", "false")
    clean_env.setenv("KCP_DEPLOYMENT_SPLITTER_CLUSTERS", '["east", "west"]')
    clean_env.setenv("KCP_DEPLOYMENT_SPLITTER_LOG_LEVEL", "debug")
    from_env = parse_settings(SplitterSettings, [])
    assert (from_env.qps, from_env.leader_elect, from_env.clusters, from_env.log_level) == (
        5.0, False, ["east", "west"], "debug")
    flagged = parse_settings(SplitterSettings, ["--qps", "7", "--leader-elect", "--clusters", '["north"]',
                                                "--leader-elect-resource-name", "splitter-shard-0"])
    assert (flagged.qps, flagged.leader_elect, flagged.clusters) == (7.0, True, ["north"])
    assert flagged.leader_election("kcp-deployment-splitter").lease_name == "splitter-shard-0"


@pytest.mark.parametrize("argv", [["--health-port", "http"], ["--log-level", "loud"], ["--burst", "-1"]])
def test_invalid_settings_exit_with_a_usage_error(argv: list[str], capsys: pytest.CaptureFixture[str],
                                                  clean_env: pytest.MonkeyPatch) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_settings(SplitterSettings, argv)
    assert exited.value.code == 2
    assert argv[0].lstrip("-").replace("-", "_") in capsys.readouterr().err


async def test_health_server_answers_healthz_readyz_and_metrics() -> None:
    registry = CollectorRegistry()
    Counter("kcp_test_things_total", "things", registry=registry).inc(3)
    synced = False

    async def leader_known() -> bool:
        return True

    def broken() -> bool:
        raise RuntimeError("check exploded")

    async with HealthServer(registry=registry, host="127.0.0.1") as health, aiohttp.ClientSession() as http:
        assert health.port > 0
        base = f"http://127.0.0.1:{health.port}"
        health.add_readiness_check("informers", lambda: synced)
        health.add_readiness_check("leader", leader_known)
        async with http.get(f"{base}/healthz") as resp:
            assert resp.status == 200 and await resp.text() == "ok"
        async with http.get(f"{base}/readyz") as resp:
            assert resp.status == 503
            assert (await resp.text()).splitlines() == ["[-]informers failed", "[+]leader ok", "readyz check failed"]
        synced = True
        async with http.get(f"{base}/readyz") as resp:
            assert resp.status == 200 and "[+]informers ok" in await resp.text()
        health.add_readiness_check("broken", broken)
        async with http.get(f"{base}/readyz") as resp:
            assert resp.status == 503 and "[-]broken failed" in await resp.text()
        async with http.get(f"{base}/metrics") as resp:
            assert resp.status == 200 and resp.content_type == "text/plain"
            assert "kcp_test_things_total 3.0" in await resp.text()


def test_run_daemon_exits_0_on_sigterm_after_main_cleaned_up() -> None:
    cleaned = []

    async def main() -> None:
        asyncio.get_running_loop().call_later(0.05, os.kill, os.getpid(), signal.SIGTERM)
        try:
            await asyncio.Event().wait()
        finally:
            await asyncio.sleep(0.05)  # in-flight work finishing
            cleaned.append(True)

    assert run_daemon(main) == 0 and cleaned == [True]
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # handlers removed again


def test_run_daemon_exit_code_says_how_main_ended() -> None:
    async def returns() -> None:
        pass

    async def fails() -> None:
        raise RuntimeError("boom")

    async def loses_leadership() -> None:
        raise LeadershipLost("lease not renewed")

    assert [run_daemon(f) for f in (returns, fails, loses_leadership)] == [0, 1, 1]


async def test_sigterm_finishes_the_work_in_hand_releases_the_lease_and_exits_0(
        kcp: KcpServer, start_candidate: Any, clients: ClientFactory, unique: str) -> None:
    lease = f"daemon-{unique}"
    env = {"LE_CANDIDATE_KUBECONFIG": str(kcp.kubeconfig), "LE_CANDIDATE_HEALTH_ADDRESS": "127.0.0.1",
           "LE_CANDIDATE_LEADER_ELECT_RESOURCE_NAME": lease, "LE_CANDIDATE_WORK_SECONDS": "0.4"}
    daemon = start_candidate(env=env, defaults=False)  # configured by environment alone
    await daemon.wait_for("LEADING")
    port = int(daemon.details("HEALTH")[0])
    async with aiohttp.ClientSession() as http:
        base = f"http://127.0.0.1:{port}"
        async with http.get(f"{base}/healthz") as resp:
            assert resp.status == 200
        async with http.get(f"{base}/readyz") as resp:
            assert resp.status == 200, await resp.text()
        await daemon.wait_for("RECONCILED")
        async with http.get(f"{base}/metrics") as resp:
            metrics = await resp.text()
    assert 'le_candidate_reconcile_total{controller="ticker",result="requeue_after"}' in metrics
    assert 'workqueue_adds_total{name="ticker"}' in metrics

    reconciling = len(daemon.times("RECONCILING"))
    async with asyncio.timeout(10):  # signal in the middle of a reconcile
        while len(daemon.times("RECONCILING")) == reconciling:
            await asyncio.sleep(0.01)
    terminated_at = daemon.send(signal.SIGTERM)
    assert await daemon.exit_code() == 0
    words = [word for word, _, stamp in daemon.lines if stamp >= terminated_at]
    assert words == ["RECONCILED", "STOPPED", "STEPPED-DOWN"]  # the item in hand finished, no new one started

    spec = (await CoordinationV1Api(clients.api_client("admin")).read_namespaced_lease(lease, "default")).spec
    assert spec.holder_identity == "" and spec.lease_duration_seconds == 1
    logs = [json.loads(line) for line in daemon.stderr_path.read_text().splitlines()]  # JSON: stderr is no TTY
    events = [entry["event"] for entry in logs]
    assert events.index("stop signal received: finishing work in hand") < events.index("released the lease")
    assert all({"event", "level", "timestamp"} <= entry.keys() for entry in logs)
