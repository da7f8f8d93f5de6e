"""`kcp-apiserver`: flags, credentials, embedded etcd, and the serving loop."""

from __future__ import annotations

import asyncio
import signal
import socket
import ssl
import sys
from collections.abc import Callable
from pathlib import Path

import structlog
from aiohttp import web

from kcp_apiserver.endpoints.handlers import WatchSettings
from kcp_apiserver.filters.authentication import StaticTokenAuthenticator
from kcp_apiserver.server.app import APIServer, RequestLimits
from kcp_apiserver.server.connections import DeadlineSite
from kcp_apiserver.server.gctuning import freeze_startup_objects
from kcp_apiserver.server.kcp import kcp_config
from kcp_apiserver.server.pki import Credentials, ensure_credentials, write_kubeconfig
from kcp_apiserver.server.settings import APIServerSettings
from kcp_apiserver.storage.embedded_etcd import EmbeddedEtcd
from kcpcommon.logs import configure_logging
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


async def serve(args: APIServerSettings, endpoints: list[str], creds: Credentials, *,
                controllers: bool, on_ready: Callable[[], None] | None = None) -> None:
    """One serving process: the API server on the secure port until a signal arrives."""
    server = APIServer(kcp_config(
        endpoints, creds.admin_token, run_controllers=controllers, watch_cache_size=args.watch_cache_size,
        identity=f"{socket.gethostname()}:{args.secure_port}",
        compaction_interval=args.compaction_interval,
        watch=WatchSettings(bookmark_interval=args.watch_bookmark_interval,
                            min_request_timeout=args.min_request_timeout)))
    if args.token_auth_file:
        server.config.authenticators = [*server.config.authenticators,
                                        StaticTokenAuthenticator.from_file(args.token_auth_file)]
    limits = RequestLimits(max_requests_inflight=args.max_requests_inflight,
                           max_mutating_requests_inflight=args.max_mutating_requests_inflight,
                           request_timeout=args.request_timeout)
    runner: web.AppRunner | None = None
    try:
        await server.start()
        ssl_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ssl_ctx.load_cert_chain(creds.serving_cert, creds.serving_key)
        runner = web.AppRunner(server.app(limits), access_log=None, handle_signals=False, shutdown_timeout=2.0,
                               keepalive_timeout=args.idle_connection_timeout)
        await runner.setup()
        site = DeadlineSite(runner, args.bind_address, args.secure_port, ssl_context=ssl_ctx,
                            read_header_timeout=args.read_header_timeout, reuse_port=args.workers > 1)
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


async def _start_workers(args: APIServerSettings, endpoints: list[str]) -> list[asyncio.subprocess.Process]:
    """Worker processes 1..n-1 share the port through SO_REUSEPORT; this process is worker 0."""
    argv = [a for a in sys.argv[1:] if not a.startswith(("--etcd-servers", "--worker-index"))]
    workers = []
    for index in range(1, args.workers):
        workers.append(await asyncio.create_subprocess_exec(
            sys.executable, "-m", "kcp_apiserver.server.cli", *argv, "--etcd-servers", ",".join(endpoints),
            "--worker-index", str(index)))
    return workers


async def run(args: APIServerSettings) -> None:
    root = Path(args.root_dir)  # made absolute by main(), before the loop starts
    creds = ensure_credentials(root, _hosts(args.bind_address, args.external_hostnames))
    endpoints = args.etcd_endpoints
    if args.worker_index:
        await serve(args, endpoints, creds, controllers=False)
        return
    etcd: EmbeddedEtcd | None = None
    workers: list[asyncio.subprocess.Process] = []
    try:
        if not endpoints:
            etcd = EmbeddedEtcd(root)
            await etcd.start()
            endpoints = [etcd.endpoint]
        if args.workers > 1:
            workers = await _start_workers(args, endpoints)

        def ready() -> None:
            host = "127.0.0.1" if args.bind_address in ("0.0.0.0", "::", "") else args.bind_address
            url = f"https://{host}:{args.secure_port}"
            kubeconfig = root / "admin.kubeconfig"
            write_kubeconfig(kubeconfig, url, creds)
            log.info("serving", url=url, kubeconfig=str(kubeconfig), etcd=",".join(endpoints), workers=args.workers)

        await serve(args, endpoints, creds, controllers=True, on_ready=ready)
    finally:
        for worker in workers:
            if worker.returncode is None:
                worker.terminate()
        for worker in workers:
            await worker.wait()
        if etcd is not None:
            await etcd.stop()


def main(argv: list[str] | None = None) -> None:
    args = parse_settings(APIServerSettings, argv, prog="kcp-apiserver")
    args.root_dir = str(Path(args.root_dir).resolve())
    configure_logging(args.log_level)
    try:
        import uvloop  # type: ignore[import-not-found]

        uvloop.install()
    except ImportError:
        pass
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
