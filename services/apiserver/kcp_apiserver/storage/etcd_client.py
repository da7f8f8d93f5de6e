"""The apiserver's etcd client: TLS when asked for, and reconnects that never wait long.

gRPC backs off between connection attempts to a lost server (1 s growing by 1.6x to
120 s), so after a long etcd outage the channel could sit out many seconds of a
backoff while etcd was already back, and every request kept failing with 503.
Capping that backoff, and the watch streams' own, bounds recovery by etcd's own
start-up instead of by how long it was away: writes within a few milliseconds of
etcd serving, watches within a quarter of a second.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import ssl
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from etcd3aio import Etcd3Client

RECONNECT_BACKOFF_INITIAL_MS = 100
RECONNECT_BACKOFF_MAX_MS = 500  # a refused connect is cheap: retrying twice a second costs nothing
WATCH_RETRY_INITIAL = 0.1
WATCH_RETRY_MAX = 0.25  # a retry against a lost etcd fails at once, without a connection attempt
# etcd sends answers of any size (its server's send limit is 2 GiB), and etcd's Go client accepts them: gRPC's
# default 4 MiB receive limit failed every range, and every watch batch, over 4 MiB of values. Range reads
# are paged by size anyway (Storage.scan_raw); watch responses cannot be.
MAX_RECEIVE_BYTES = 2**31 - 1
RETRY_LOG_INTERVAL = 10.0
DNS_MIN_RESOLVE_INTERVAL_MS = 1000  # gRPC's default is 30 s


class _OncePer(logging.Filter):
    """etcd3aio warns at every watch retry, for every watch: keep one such line per interval."""

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds
        self._last = -seconds

    def filter(self, record: logging.LogRecord) -> bool:
        now = time.monotonic()
        if now - self._last < self.seconds:
            return False
        self._last = now
        return True


def _quiet_watch_retries() -> None:
    watch_log = logging.getLogger("etcd3aio.watch")
    if not any(isinstance(f, _OncePer) for f in watch_log.filters):
        watch_log.addFilter(_OncePer(RETRY_LOG_INTERVAL))


@dataclass(frozen=True)
class TLSFiles:
    """PEM files of one TLS side: the CA that signs the other side, and our certificate and key (optional)."""

    ca_file: str | None = None  # None: the system's trusted CAs
    cert_file: str | None = None
    key_file: str | None = None


def _read(path: str | None) -> bytes | None:
    return Path(path).read_bytes() if path else None


def _system_roots() -> bytes:
    paths = ssl.get_default_verify_paths()
    for candidate in (paths.cafile, paths.openssl_cafile):
        if candidate and Path(candidate).exists():
            return Path(candidate).read_bytes()
    raise RuntimeError("no CA bundle found for etcd TLS: pass --etcd-cafile")


def _split(endpoint: str) -> tuple[str, str]:
    host, _, port = endpoint.rpartition(":")
    return host.strip("[]"), port


def _ip_family(host: str) -> int | None:
    try:
        return 6 if ipaddress.ip_address(host).version == 6 else 4
    except ValueError:
        return None


def _addresses(endpoint: str) -> list[tuple[int, str]]:
    """(4 or 6, "address:port") for each address `endpoint` names, an IP literal as itself."""
    host, port = _split(endpoint)
    family = _ip_family(host)
    if family is not None:
        return [(family, endpoint)]
    found = []
    for af, _, _, _, sockaddr in socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM):
        if af == socket.AF_INET6:
            found.append((6, f"[{sockaddr[0]}]:{port}"))
        elif af == socket.AF_INET:
            found.append((4, f"{sockaddr[0]}:{port}"))
    return found


def grpc_target(endpoints: list[str]) -> str:
    """The gRPC channel target for `endpoints` (host:port, the host a name or an IP literal).

    etcd3aio always builds `ipv4:<endpoints>`, which gRPC refuses unless every host is an IPv4 literal, so
    `--etcd-servers http://etcd:2379` (compose's service, a chart's Service) never connected. IP literals keep
    gRPC's address schemes (no resolver between a reconnect and etcd). One named endpoint goes through gRPC's
    DNS resolver, which resolves again on reconnect, as etcd's Go client does. Several endpoints have no such
    target: names among them are resolved once, here, and the addresses of the first one's family are balanced
    over.
    """
    if len(endpoints) == 1 and _ip_family(_split(endpoints[0])[0]) is None:
        return f"dns:///{endpoints[0]}"
    addresses = [address for endpoint in endpoints for address in _addresses(endpoint)]
    if not addresses:
        raise ValueError(f"no address found for etcd endpoints {','.join(endpoints)}")
    family = addresses[0][0]
    return f"ipv{family}:" + ",".join(address for af, address in addresses if af == family)


class EtcdClient(Etcd3Client):
    """etcd3aio's client, remembering its endpoints and TLS files: watches read etcd's JSON gateway with them."""

    def __init__(self, endpoints: list[str], tls: TLSFiles | None, **kwargs: Any) -> None:
        super().__init__(endpoints, **kwargs)
        self.endpoints = endpoints
        self.tls = tls


def etcd_client(endpoints: list[str], tls: TLSFiles | None = None) -> EtcdClient:
    """A client for `endpoints` (host:port), over TLS when `tls` is given (mutual when it has a certificate).

    One gRPC channel balances over every endpoint and checks one name against the servers' certificates:
    with several endpoints, the first one's host, which every member's certificate must then carry.
    """
    _quiet_watch_retries()
    ca_cert = cert_chain = cert_key = None
    server_name = None
    if tls is not None:
        ca_cert, cert_chain, cert_key = _read(tls.ca_file) or _system_roots(), _read(tls.cert_file), _read(tls.key_file)
        if len(endpoints) > 1:
            server_name = endpoints[0].rsplit(":", 1)[0].strip("[]")
    client = EtcdClient(endpoints, tls, rpc_max_attempts=1, watch_reconnect_backoff_seconds=WATCH_RETRY_INITIAL,
                         watch_max_reconnect_backoff_seconds=WATCH_RETRY_MAX, tls_server_name=server_name,
                         ca_cert=ca_cert, cert_key=cert_key, cert_chain=cert_chain)
    # etcd3aio takes no channel options or target of ours; its connection manager holds both
    client._manager.target = grpc_target(endpoints)
    client._manager.grpc_options.extend([
        ("grpc.initial_reconnect_backoff_ms", RECONNECT_BACKOFF_INITIAL_MS),
        ("grpc.max_reconnect_backoff_ms", RECONNECT_BACKOFF_MAX_MS),
        ("grpc.max_receive_message_length", MAX_RECEIVE_BYTES),
        # a named etcd that came back elsewhere (a restarted container) is looked up again within a second
        ("grpc.dns_min_time_between_resolutions_ms", DNS_MIN_RESOLVE_INTERVAL_MS),
    ])
    return client
