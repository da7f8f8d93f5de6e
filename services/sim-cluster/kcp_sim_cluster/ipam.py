"""Pod IPs: each node hands out addresses from its pod CIDR, never the same one twice at a time."""

from __future__ import annotations

import ipaddress

from kcpcommon.keys import ObjectKey


class NodeIPs:
    """The addresses in use on one node; the lowest free one is handed out next."""

    def __init__(self, cidr: str) -> None:
        self.network = ipaddress.ip_network(cidr, strict=False)
        self.used: dict[int, ObjectKey] = {}
        self._next = 1

    def take(self, ip: str, pod: ObjectKey) -> None:
        try:
            offset = int(ipaddress.ip_address(ip)) - int(self.network.network_address)
        except ValueError:
            return
        if 0 < offset < self.network.num_addresses - 1:
            self.used[offset] = pod

    def allocate(self, pod: ObjectKey) -> str | None:
        size = self.network.num_addresses - 2
        for _ in range(size):
            offset = self._next
            self._next = self._next % size + 1
            if offset not in self.used:
                self.used[offset] = pod
                return str(self.network.network_address + offset)
        return None

    def release(self, ip: str) -> None:
        try:
            offset = int(ipaddress.ip_address(ip)) - int(self.network.network_address)
        except ValueError:
            return
        self.used.pop(offset, None)
