"""The serving limits are kube-apiserver's flags with kube's defaults, and environment variables too."""

from __future__ import annotations

import pytest

from kcp_apiserver.server.settings import APIServerSettings
from kcpcommon.settings import parse_settings


def test_defaults_are_kubes() -> None:
    settings = parse_settings(APIServerSettings, [])
    assert (settings.max_requests_inflight, settings.max_mutating_requests_inflight) == (400, 200)
    assert (settings.request_timeout, settings.read_header_timeout, settings.idle_connection_timeout) == (
        60.0, 32.0, 90.0)
    assert settings.token_auth_file == ""


def test_limits_come_from_flags_and_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KCP_APISERVER_MAX_MUTATING_REQUESTS_INFLIGHT", "0")
    monkeypatch.setenv("KCP_APISERVER_REQUEST_TIMEOUT", "5")
    settings = parse_settings(APIServerSettings, ["--max-requests-inflight", "1", "--read-header-timeout", "0.5",
                                                  "--token-auth-file", "/etc/kcp/tokens.csv"])
    assert (settings.max_requests_inflight, settings.max_mutating_requests_inflight) == (1, 0)
    assert (settings.request_timeout, settings.read_header_timeout) == (5.0, 0.5)
    assert settings.token_auth_file == "/etc/kcp/tokens.csv"


def test_the_connection_bounds_come_from_flags_env_and_the_open_files_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    import resource

    from kcp_apiserver.server.cli import connection_limits
    from kcp_apiserver.server.connections import connection_budget

    monkeypatch.setenv("KCP_APISERVER_MAX_PENDING_CONNECTIONS_PER_ADDRESS", "7")
    settings = parse_settings(APIServerSettings, ["--max-pending-connections", "100", "--read-header-timeout", "3"])
    limits = connection_limits(settings)
    assert (limits.max_pending, limits.max_pending_per_client, limits.read_header_timeout) == (100, 7, 3.0)
    assert limits.max_open == connection_budget(resource.getrlimit(resource.RLIMIT_NOFILE)[0])
