"""The bytes of a watch response: HTTP chunks written straight to the transport, and Table events."""

from __future__ import annotations

from aiohttp import web

from kcp_apiserver.registry.resource import Obj, Resource
from kcp_apiserver.registry.tables import to_table
from kcp_apiserver.registry.watch import watchframing


class ChunkedStream:
    """Writes HTTP chunks straight to the connection's transport, synchronously.

    The watch cache calls this from its dispatch loop; a client whose unsent
    data passes MAX_PENDING cannot keep up and is cut off, as kube does.
    """

    MAX_PENDING = 32 * 1024 * 1024

    def __init__(self, request: web.Request) -> None:
        self.transport = request.transport
        self.broken = False

    def gone(self) -> bool:
        return self.broken or self.transport is None or self.transport.is_closing()

    def write(self, data: bytes) -> bool:
        transport = self.transport
        if self.broken or transport is None or transport.is_closing():
            self.broken = True
            return False
        transport.write(b"%x\r\n%b\r\n" % (len(data), data))
        return transport.get_write_buffer_size() < self.MAX_PENDING


class TableEncoder:
    """Watch events as one-row Tables (kubectl get -w); columns only in the first."""

    def __init__(self, res: Resource, include_object: str) -> None:
        self.res = res
        self.include_object = include_object
        self.first = True

    def event(self, type_: str, obj: Obj) -> bytes:
        table = to_table(self.res, [obj], {"resourceVersion": obj["metadata"].get("resourceVersion", "")},
                         self.include_object)
        if not self.first:
            table["columnDefinitions"] = []
        self.first = False
        return watchframing.event(type_, table)
