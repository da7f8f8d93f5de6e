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
