"""`kcp-apiserver`: flags, credentials, the embedded etcd (mutual TLS, supervised), and the serving loop."""

from __future__ import annotations

import asyncio
import ipaddress
import resource
import signal
import socket
import ssl
import sys
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog
from aiohttp import web

from kcp_apiserver.apiextensions.reserved import ReservedGroups
from kcp_apiserver.endpoints.base import WatchSettings
from kcp_apiserver.filters.authentication import Authenticator, StaticTokenAuthenticator
from kcp_apiserver.registry.serviceaccounts import ServiceAccountTokens
from kcp_apiserver.server.app import APIServer, RequestLimits
from kcp_apiserver.server.config import ServerConfig
from kcp_apiserver.server.connections import ConnectionLimits, DeadlineSite, connection_budget
from kcp_apiserver.server.gctuning import freeze_startup_objects
from kcp_apiserver.server.kcp import kcp_config
from kcp_apiserver.server.pki import (
    Credentials,
    ensure_credentials,
    ensure_etcd_credentials,
    load_rsa_key,
    write_kubeconfig,
)
from kcp_apiserver.server.settings import APIServerSettings
from kcp_apiserver.storage.embedded_etcd import EmbeddedEtcd
from kcp_apiserver.storage.etcd_client import TLSFiles
from kcpcommon.health import Check
from kcpcommon.logs import configure_logging
from kcpcommon.rlimits import raise_open_files_limit
from kcpcommon.settings import parse_settings

log = structlog.get_logger("kcp-apiserver")


def _hosts(bind: str, extra: list[str]) -> list[str]:
    hosts = ["127.0.0.1", "localhost", "::1", *extra]
    if bind not in ("0.0.0.0", "::", "") and bind not in hosts:
        hosts.append(bind)
    if bind in ("0.0.0.0", "::"):
        hosts.append(socket.gethostname())
    return hosts


async def _wait_for_signal() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()


def serving_context(args: APIServerSettings, creds: Credentials) -> ssl.SSLContext:
    """The serving certificate; client certificates are asked for (not required) and must chain to the
    root dir's CA or --client-ca-file. Python's TLS verifies them in the handshake, so a certificate from
    another CA ends the connection there, where kube-apiserver would answer 401."""
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(creds.serving_cert, creds.serving_key)
    ctx.verify_mode = ssl.CERT_OPTIONAL
    ctx.load_verify_locations(cafile=str(creds.ca_cert))
    if args.client_ca_file:
        ctx.load_verify_locations(cafile=args.client_ca_file)
    return ctx


def external_url(args: APIServerSettings) -> str:
    """The URL clients reach this server at: the first --external-hostname, else the bind address."""
    host = args.external_hostnames[0] if args.external_hostnames else args.bind_address
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    return f"https://{host}:{args.secure_port}"


def service_account_tokens(args: APIServerSettings, creds: Credentials) -> ServiceAccountTokens:
    key_file = Path(args.service_account_signing_key_file) if args.service_account_signing_key_file else \
        creds.service_account_key
    return ServiceAccountTokens(load_rsa_key(key_file), issuer=args.service_account_issuer,
                                api_audiences=args.audiences)


@dataclass(frozen=True)
class Backend:
    """What a serving process is given: the etcd it talks to, the credentials, and its role."""

    endpoints: list[str]
    creds: Credentials
    etcd_tls: TLSFiles | None
    controllers: bool  # worker 0 takes part in the controllers' election; other workers do not
    live_checks: Mapping[str, Check] | None = None


ConfigBuilder = Callable[[Any, Backend], ServerConfig]  # (the settings, the backend) -> what to serve
Published = Callable[[Any, str, Credentials], None]  # once serving: (the settings, its URL, creds) -> kubeconfigs


def kcp_server_config(args: APIServerSettings, backend: Backend, *,
                      reserved: ReservedGroups | None = None) -> ServerConfig:
    """kcp's configuration from its flags (kcp-sim-cluster starts from it too, with its own `reserved`)."""
    config = kcp_config(
        backend.endpoints, backend.creds.admin_token, run_controllers=backend.controllers,
        watch_cache_size=args.watch_cache_size, identity=f"{socket.gethostname()}:{args.secure_port}",
        compaction_interval=args.compaction_interval, watch=watch_settings(args),
        etcd_tls=backend.etcd_tls, live_checks=backend.live_checks,
        service_accounts=service_account_tokens(args, backend.creds),
        jwks_uri=f"{external_url(args)}/openid/v1/jwks", audit_log_path=args.audit_log_path, reserved=reserved,
        service_cidr=ipaddress.IPv4Network(args.service_cluster_ip_range), external_url=external_url(args))
    config.track_managed_fields = args.track_managed_fields
    config.authenticators = [*config.authenticators, *token_file_authenticators(args)]
    return config


def watch_settings(args: APIServerSettings) -> WatchSettings:
    return WatchSettings(bookmark_interval=args.watch_bookmark_interval, min_request_timeout=args.min_request_timeout)


def token_file_authenticators(args: APIServerSettings) -> list[Authenticator]:
    return [StaticTokenAuthenticator.from_file(args.token_auth_file)] if args.token_auth_file else []


def write_admin_kubeconfig(args: APIServerSettings, url: str, creds: Credentials) -> None:
    write_kubeconfig(Path(args.root_dir) / "admin.kubeconfig", url, creds)


async def serve(args: APIServerSettings, config: ServerConfig, creds: Credentials, *,
                on_ready: Callable[[], None] | None = None) -> None:
    """One serving process: the API server on the secure port until a signal arrives."""
    server = APIServer(config)
    limits = RequestLimits(max_requests_inflight=args.max_requests_inflight,
                           max_mutating_requests_inflight=args.max_mutating_requests_inflight,
                           request_timeout=args.request_timeout)
    runner: web.AppRunner | None = None
    try:
        await server.start()
        ssl_ctx = serving_context(args, creds)
        runner = web.AppRunner(server.app(limits), access_log=None, handle_signals=False, shutdown_timeout=2.0,
                               keepalive_timeout=args.idle_connection_timeout)
        await runner.setup()
        site = DeadlineSite(runner, args.bind_address, args.secure_port, ssl_context=ssl_ctx,
                            limits=connection_limits(args), reuse_port=args.workers > 1)
        await site.start()
        freeze_startup_objects()
        if on_ready is not None:
            on_ready()
        await _wait_for_signal()
        log.info("shutting down")
    finally:
        if runner is not None:
            await runner.cleanup()
        await server.stop()


def connection_limits(args: APIServerSettings) -> ConnectionLimits:
    """The flags' bounds, and as many connections as the open-files limit leaves room for."""
    open_files, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return ConnectionLimits(read_header_timeout=args.read_header_timeout, max_pending=args.max_pending_connections,
                            max_pending_per_client=args.max_pending_connections_per_address,
                            max_open=connection_budget(open_files))


ETCD_FLAGS = ("--etcd-servers", "--etcd-cafile", "--etcd-certfile", "--etcd-keyfile")


def worker_argv(argv: list[str], endpoints: list[str], etcd_tls: TLSFiles | None, index: int) -> list[str]:
    """A worker's flags: ours, with the etcd this process uses (the embedded one's, say) and its index."""
    kept: list[str] = []
    skip_value = False
    for arg in argv:
        if skip_value:
            skip_value = False
            continue
        flag = arg.split("=", 1)[0]
        if flag in (*ETCD_FLAGS, "--worker-index"):
            skip_value = "=" not in arg
            continue
        kept.append(arg)
    kept += ["--etcd-servers", ",".join(endpoints), "--worker-index", str(index)]
    if etcd_tls is not None:
        for flag, value in zip(ETCD_FLAGS[1:], (etcd_tls.ca_file, etcd_tls.cert_file, etcd_tls.key_file),
                               strict=True):
            if value:
                kept += [flag, value]
    return kept


async def _start_workers(args: APIServerSettings, endpoints: list[str], etcd_tls: TLSFiles | None,
                         module: str) -> list[asyncio.subprocess.Process]:
    """Worker processes 1..n-1 share the port through SO_REUSEPORT; this process is worker 0."""
    workers = []
    for index in range(1, args.workers):
        workers.append(await asyncio.create_subprocess_exec(
            sys.executable, "-m", module, *worker_argv(sys.argv[1:], endpoints, etcd_tls, index)))
    return workers


async def run(args: APIServerSettings, build: ConfigBuilder = kcp_server_config,
              publish: Published = write_admin_kubeconfig, *, worker_module: str = "kcp_apiserver.server.cli") -> None:
    """Credentials, the embedded etcd (unless --etcd-servers), the workers, then serve `build`'s config;
    `publish` writes the kubeconfigs once the port answers. kcp-sim-cluster runs through here too."""
    root = Path(args.root_dir)  # made absolute by main(), before the loop starts
    creds = ensure_credentials(root, _hosts(args.bind_address, args.external_hostnames))
    endpoints, etcd_tls = args.etcd_endpoints, args.etcd_tls
    if args.worker_index:
        await serve(args, build(args, Backend(endpoints, creds, etcd_tls, controllers=False)), creds)
        return
    etcd: EmbeddedEtcd | None = None
    workers: list[asyncio.subprocess.Process] = []
    try:
        if not endpoints:
            etcd_creds = ensure_etcd_credentials(root)
            etcd = EmbeddedEtcd(root, tls=etcd_creds.server, grace_period=args.embedded_etcd_grace_period)
            await etcd.start()
            endpoints, etcd_tls = [etcd.endpoint], etcd_creds.client
        if args.workers > 1:
            workers = await _start_workers(args, endpoints, etcd_tls, worker_module)

        def ready() -> None:
            # the kubeconfigs name the server as clients reach it (--external-hostname): controllers in
            # other containers would otherwise dial their own loopback
            url = external_url(args)
            publish(args, url, creds)
            log.info("serving", url=url, root_dir=str(root), etcd=",".join(endpoints), workers=args.workers)

        backend = Backend(endpoints, creds, etcd_tls, controllers=True,
                          live_checks={"embedded-etcd": etcd.live} if etcd is not None else None)
        await serve(args, build(args, backend), creds, on_ready=ready)
    finally:
        for worker in workers:
            if worker.returncode is None:
                worker.terminate()
        for worker in workers:
            await worker.wait()
        if etcd is not None:
            await etcd.stop()


def start_event_loop(main: Coroutine[Any, Any, None]) -> None:
    """uvloop when installed (the `fast` extra), else asyncio's own loop; the open-files limit raised first."""
    raise_open_files_limit()
    try:
        import uvloop  # type: ignore[import-not-found]

        uvloop.install()
    except ImportError:
        pass
    asyncio.run(main)


def main(argv: list[str] | None = None) -> None:
    args = parse_settings(APIServerSettings, argv, prog="kcp-apiserver")
    args.root_dir = str(Path(args.root_dir).resolve())
    configure_logging(args.log_level)
    start_event_loop(run(args))


if __name__ == "__main__":
    main()
