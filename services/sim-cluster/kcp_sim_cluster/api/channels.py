"""The streams of an exec or attach, whatever carries them: kube's numbered channels (0 stdin, 1 stdout,
2 stderr, 3 error, 4 resize) over a WebSocket (`v5.channel.k8s.io`, `v4.channel.k8s.io`: each binary
message starts with its channel; v5 adds 255, the client's "I closed this stream"), or SPDY/3.1 streams
named by their `streamType` header (`v4.channel.k8s.io` over `Upgrade: SPDY/3.1`).

A session writes the container's output, reads stdin into a queue (None: its end) and ends with one
metav1.Status on the error channel."""

from __future__ import annotations

import abc
import asyncio
from dataclasses import dataclass

from aiohttp import WSMsgType, web

from kcp_apiserver.embedding import spdyupgrade
from kcp_sim_cluster.api import spdy
from kcp_sim_cluster.api.shell import STDOUT, Outcome, Output, Sleep, Terminal

WEBSOCKET_PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")
SPDY_PROTOCOLS = ("v4.channel.k8s.io",)
STDIN, CHANNEL_STDOUT, CHANNEL_STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255
STREAM_TYPES = {"stdin": STDIN, "stdout": CHANNEL_STDOUT, "stderr": CHANNEL_STDERR, "error": ERROR,
                "resize": RESIZE}


@dataclass(frozen=True)
class StreamOptions:
    """kube's PodExecOptions / PodAttachOptions, from the query."""

    container: str
    command: tuple[str, ...]
    stdin: bool
    stdout: bool
    stderr: bool
    tty: bool


class Channels(abc.ABC):
    """One session's streams: output written to its channel, stdin read into `stdin` (a subclass per carrier)."""

    def __init__(self, options: StreamOptions) -> None:
        self.options = options
        self.stdin: asyncio.Queue[bytes | None] = asyncio.Queue()

    @abc.abstractmethod
    async def send(self, channel: int, data: bytes) -> None:
        """Write `data` on one channel."""

    @abc.abstractmethod
    async def read(self) -> None:
        """Stdin until its end or the connection's; then None."""

    @abc.abstractmethod
    async def ready(self) -> None:
        """Returns when the client has opened every stream the session needs."""

    @abc.abstractmethod
    async def close(self) -> None:
        """End the session's streams."""

    async def output(self, stream: int, data: bytes) -> None:
        """Output of the container: a tty has one stream, with CR LF line ends."""
        if self.options.tty:
            if self.options.stdout:
                await self.send(CHANNEL_STDOUT, Terminal.output(data))
        elif stream == STDOUT and self.options.stdout:
            await self.send(CHANNEL_STDOUT, data)
        elif stream != STDOUT and self.options.stderr:
            await self.send(CHANNEL_STDERR, data)

    async def play(self, outcome: Outcome) -> None:
        for step in outcome.steps:
            if isinstance(step, Output):
                await self.output(step.stream, step.data)
            elif isinstance(step, Sleep):
                await asyncio.sleep(step.seconds)


class WebSocketChannels(Channels):
    def __init__(self, ws: web.WebSocketResponse, options: StreamOptions) -> None:
        super().__init__(options)
        self.ws = ws

    async def send(self, channel: int, data: bytes) -> None:
        if data and not self.ws.closed:
            await self.ws.send_bytes(bytes([channel]) + data)

    async def read(self) -> None:
        async for message in self.ws:
            if message.type != WSMsgType.BINARY or not message.data:
                continue
            data: bytes = message.data
            if data[0] == STDIN and len(data) > 1:
                await self.stdin.put(data[1:])
            elif data[0] == CLOSE and data[1:2] == bytes([STDIN]) and self.ws.ws_protocol == WEBSOCKET_PROTOCOLS[0]:
                await self.stdin.put(None)
            # RESIZE: the simulated terminal has no size to keep
        await self.stdin.put(None)

    async def ready(self) -> None:
        """A WebSocket carries every stream from its upgrade on: nothing to wait for."""
        return

    async def close(self) -> None:
        await self.ws.close()


class SpdyChannels(Channels):
    """SPDY streams, one per channel, opened by the client; each answered with a SYN_REPLY."""

    def __init__(self, connection: spdyupgrade.RawConnection, options: StreamOptions) -> None:
        super().__init__(options)
        self.connection = connection
        self.framer = spdy.Framer()
        self.streams: dict[int, int] = {}  # channel -> stream id
        self._opened = asyncio.Event()
        wanted = {ERROR, *([STDIN] if options.stdin else []), *([CHANNEL_STDOUT] if options.stdout else []),
                  *([CHANNEL_STDERR] if options.stderr else []), *([RESIZE] if options.tty else [])}
        self.wanted = frozenset(wanted)

    async def ready(self) -> None:
        await self._opened.wait()

    async def send(self, channel: int, data: bytes) -> None:
        stream = self.streams.get(channel)
        if data and stream is not None:
            await self.connection.send(spdy.data(stream, data))

    async def read(self) -> None:
        channel_of: dict[int, int] = {}
        async for chunk in self.connection.chunks():
            for frame in self.framer.feed(chunk):
                if frame.control and frame.kind == spdy.SYN_STREAM:
                    channel = STREAM_TYPES.get(self.framer.headers(frame.payload).get("streamtype", ""))
                    await self.connection.send(self.framer.syn_reply(frame.stream, {}))
                    if channel is not None:
                        self.streams[channel], channel_of[frame.stream] = frame.stream, channel
                    if self.wanted <= self.streams.keys():
                        self._opened.set()
                elif frame.control and frame.kind in (spdy.SYN_REPLY, spdy.HEADERS):
                    self.framer.headers(frame.payload)
                elif frame.control and frame.kind == spdy.PING:
                    await self.connection.send(spdy.ping(frame.payload))
                elif not frame.control and channel_of.get(frame.stream) == STDIN:
                    if frame.payload:
                        await self.stdin.put(frame.payload)
                    if frame.flags & spdy.FLAG_FIN:
                        await self.stdin.put(None)
        await self.stdin.put(None)

    async def close(self) -> None:
        """Every stream of ours finished (kubectl waits for stdout's and stderr's end), then the socket."""
        for channel, stream in self.streams.items():
            if channel in (CHANNEL_STDOUT, CHANNEL_STDERR, ERROR):
                await self.connection.send(spdy.data(stream, b"", fin=True))
        self.connection.close()
