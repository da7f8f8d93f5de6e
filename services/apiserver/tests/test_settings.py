"""kcp-apiserver's settings: flags and KCP_APISERVER_* env vars from one model."""

from __future__ import annotations

import pytest

from kcp_apiserver.server.settings import APIServerSettings
from kcpcommon.settings import parse_settings


def test_every_option_is_a_flag_and_an_env_var_and_flags_win(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KCP_APISERVER_SECURE_PORT", "7443")
    monkeypatch.setenv("KCP_APISERVER_ETCD_SERVERS", "http://e1:2379, e2:2379/")
    settings = parse_settings(APIServerSettings, ["--watch-cache-size", "500"])
    assert (settings.secure_port, settings.watch_cache_size) == (7443, 500)
    assert settings.etcd_endpoints == ["e1:2379", "e2:2379"]
    assert parse_settings(APIServerSettings, ["--secure-port", "8443"]).secure_port == 8443


def test_bad_values_exit_with_a_usage_error(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        parse_settings(APIServerSettings, ["--log-level", "loud"], prog="kcp-apiserver")
    assert exc.value.code == 2 and "log_level" in capsys.readouterr().err
