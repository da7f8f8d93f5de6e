"""kcp-apiserver's settings: flags and KCP_APISERVER_* env vars from one model."""

from __future__ import annotations

import pytest

from kcp_apiserver.server.cli import worker_argv
from kcp_apiserver.server.settings import APIServerSettings
from kcp_apiserver.storage.etcd_client import TLSFiles
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


def test_etcd_tls_follows_kube_apiservers_flags_and_their_env_vars(monkeypatch: pytest.MonkeyPatch) -> None:
    assert parse_settings(APIServerSettings, ["--etcd-servers", "http://e1:2379"]).etcd_tls is None
    monkeypatch.setenv("KCP_APISERVER_ETCD_CAFILE", "/pki/ca.crt")
    settings = parse_settings(APIServerSettings, ["--etcd-servers", "e1:2379", "--etcd-certfile", "/pki/c.crt",
                                                  "--etcd-keyfile", "/pki/c.key"])
    assert settings.etcd_tls == TLSFiles("/pki/ca.crt", "/pki/c.crt", "/pki/c.key")
    monkeypatch.delenv("KCP_APISERVER_ETCD_CAFILE")
    # https:// alone: TLS against the system's CAs, no client certificate
    assert parse_settings(APIServerSettings, ["--etcd-servers", "https://e1:2379"]).etcd_tls == TLSFiles()


def test_an_etcd_client_certificate_needs_its_key(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        parse_settings(APIServerSettings, ["--etcd-certfile", "/pki/c.crt"], prog="kcp-apiserver")
    assert exc.value.code == 2 and "--etcd-keyfile" in capsys.readouterr().err


def test_workers_get_the_etcd_this_process_uses_in_place_of_the_given_flags() -> None:
    argv = ["--secure-port", "7443", "--etcd-servers", "old:1", "--etcd-cafile=/old/ca", "--workers", "3",
            "--etcd-keyfile", "/old/key", "--worker-index", "0"]
    got = worker_argv(argv, ["127.0.0.1:2379"], TLSFiles("/pki/ca", "/pki/c.crt", "/pki/c.key"), 2)
    assert got == ["--secure-port", "7443", "--workers", "3", "--etcd-servers", "127.0.0.1:2379",
                   "--worker-index", "2", "--etcd-cafile", "/pki/ca", "--etcd-certfile", "/pki/c.crt",
                   "--etcd-keyfile", "/pki/c.key"]
    settings = parse_settings(APIServerSettings, got)
    assert settings.etcd_endpoints == ["127.0.0.1:2379"] and settings.worker_index == 2
    assert worker_argv(["--workers", "2"], ["e:1"], None, 1) == ["--workers", "2", "--etcd-servers", "e:1",
                                                                "--worker-index", "1"]
