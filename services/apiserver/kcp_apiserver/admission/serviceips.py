"""Cluster IPs and node ports of Services, allocated as kube-apiserver's service REST does.

One allocator for kcp (its imported core/v1 Services, from `--service-cluster-ip-range`, so `kubectl get svc`
and `helm --wait` read as on one cluster) and kcp-sim-cluster (its built-in Services, kube's default
10.96.0.0/12). Each logical cluster (a simulated cluster, or a kcp tenant) has its own pool of the range and
of the node port range (30000-32767). What is taken is known from the Services themselves, followed through
the server's shared informer of Services, so a restart rebuilds it and a deleted Service frees its IP; an address handed out but not
yet seen stored is held as pending for a while, so two creates in flight never share one.
"""

from __future__ import annotations

import asyncio
import ipaddress
import random
import time
from typing import Any

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.status import Cause
from kcp_apiserver.registry.admission import CREATE, UPDATE, Attributes
from kcp_apiserver.registry.informers import Informers, add_observer
from kcp_apiserver.registry.resource import Obj, Resource
from kcpcommon.keys import cluster_of
from kcpcommon.sharedcache import HandlerRegistration, SharedCache

SERVICE_CIDR = ipaddress.IPv4Network("10.96.0.0/12")  # kube-apiserver's default, the sim's
KCP_SERVICE_CIDR = ipaddress.IPv4Network("10.255.0.0/16")  # kcp's: clear of kube's, k3s', kind's and the clouds'
# where Services are stored: a built-in's and an imported CRD's keys are the same (group "", plural services)
SERVICES = Resource(group="", version="v1", kind="Service", plural="services", singular="service", namespaced=True)
NODE_PORTS = range(30000, 32768)
PENDING_SECONDS = 60.0  # an allocation not seen stored within this long (its create failed) is released
HEADLESS = "None"
ALLOCATED_FIELDS = ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy")


def _cluster(obj: Obj) -> str:
    return cluster_of(obj) or ""


def _ips(spec: Obj) -> set[str]:
    found = {spec.get("clusterIP")} | set(spec.get("clusterIPs") or [])
    return {ip for ip in found if isinstance(ip, str) and ip and ip != HEADLESS}


def _node_ports(spec: Obj) -> set[int]:
    return {p["nodePort"] for p in spec.get("ports") or [] if isinstance(p, dict) and isinstance(p.get("nodePort"),
                                                                                                int)}


class Pool:
    """What one cluster's Services hold, plus recent allocations not yet seen stored."""

    def __init__(self) -> None:
        self.taken: dict[str, set[tuple[str, str]]] = {}  # ip or port (as text) -> the Services holding it
        self.held_by: dict[tuple[str, str], set[str]] = {}  # (namespace, name) -> what it holds
        self.pending: dict[str, float] = {}  # ip or port -> when the hold lapses

    def holds(self, item: str) -> bool:
        if item in self.taken:
            return True
        lapses = self.pending.get(item)
        if lapses is None:
            return False
        if lapses < time.monotonic():
            del self.pending[item]
            return False
        return True

    def hold(self, item: str) -> None:
        self.pending[item] = time.monotonic() + PENDING_SECONDS

    def record(self, owner: tuple[str, str], items: set[str]) -> None:
        """What `owner` holds now (nothing once deleted)."""
        before = self.held_by.pop(owner, set())
        for item in before - items:
            holders = self.taken.get(item)
            if holders is not None:
                holders.discard(owner)
                if not holders:
                    del self.taken[item]
        for item in items:
            self.pending.pop(item, None)
            self.taken.setdefault(item, set()).add(owner)
        if items:
            self.held_by[owner] = items


class ServiceIPs:
    """A mutating admission plugin on Services: allocates on create, keeps what was allocated on update."""

    def __init__(self, services: SharedCache | None, *, cidr: ipaddress.IPv4Network = SERVICE_CIDR) -> None:
        self.services = services  # the Services informer (None: a test feeds `_observe` itself)
        self.cidr = cidr
        self.pools: dict[str, Pool] = {}
        self._lock = asyncio.Lock()
        self._registration: HandlerRegistration | None = None

    async def start(self) -> None:
        """Follow the Services, inline (what is taken is known as soon as the informer has it); return once
        every stored one is counted."""
        if self.services is None:
            return
        self._registration = add_observer(self.services, self._observe, name="admission:service-ips", inline=True)
        await self._registration.wait_for_sync()

    async def stop(self) -> None:
        if self._registration is not None:
            self._registration.remove()

    def _observe(self, svc: Obj, deleted: bool) -> None:
        pool = self.pools.setdefault(_cluster(svc), Pool())
        meta = svc.get("metadata") or {}
        spec = svc.get("spec") or {}
        items = set() if deleted else {*_ips(spec), *(str(p) for p in _node_ports(spec))}
        pool.record((meta.get("namespace", ""), meta.get("name", "")), items)

    # -- admission ---------------------------------------------------------------------------

    async def admit(self, attrs: Attributes) -> None:
        if not is_kube_service(attrs.resource) or attrs.subresource or attrs.obj is None:
            return
        spec = attrs.obj.setdefault("spec", {})
        if not isinstance(spec, dict):
            return
        async with self._lock:
            pool = self.pools.setdefault(attrs.cluster, Pool())
            if attrs.operation == CREATE:
                self._allocate(attrs, spec, pool)
            elif attrs.operation == UPDATE and attrs.old is not None:
                old = attrs.old.get("spec") or {}
                if not old.get("clusterIP") and (spec.get("type") or "ClusterIP") != "ExternalName":
                    self._allocate_ip(attrs, spec, pool)  # an ExternalName Service turned into another type
                self._keep(attrs, spec, old, pool)

    def _allocate(self, attrs: Attributes, spec: Obj, pool: Pool) -> None:
        kind = spec.get("type") or "ClusterIP"
        if kind == "ExternalName":
            for name in ALLOCATED_FIELDS:
                spec.pop(name, None)
            return
        self._allocate_ip(attrs, spec, pool)
        if kind in ("NodePort", "LoadBalancer"):
            self._node_ports(attrs, spec, pool, hold=not attrs.ctx.dry_run)

    def _allocate_ip(self, attrs: Attributes, spec: Obj, pool: Pool) -> None:
        hold = not attrs.ctx.dry_run
        wanted = spec.get("clusterIP") or ((spec.get("clusterIPs") or [None])[0])
        if wanted == HEADLESS:
            spec["clusterIP"] = HEADLESS
            spec["clusterIPs"] = [HEADLESS]
        elif wanted:
            self._check_requested(attrs, str(wanted), pool)
            spec["clusterIP"], spec["clusterIPs"] = wanted, [wanted]
            if hold:
                pool.hold(str(wanted))
        else:
            ip = self._next_ip(attrs, pool)
            spec["clusterIP"], spec["clusterIPs"] = ip, [ip]
            if hold:
                pool.hold(ip)
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")

    def _check_requested(self, attrs: Attributes, wanted: str, pool: Pool) -> None:
        try:
            address = ipaddress.ip_address(wanted)
        except ValueError:
            raise self._invalid(attrs, Cause("FieldValueInvalid", f'Invalid value: "{wanted}": must be a valid IP '
                                             "address, (e.g. 10.9.8.7 or 2001:db8::ffff)", "spec.clusterIPs[0]")) from None
        if address not in self.cidr or address in (self.cidr.network_address, self.cidr.broadcast_address):
            raise self._invalid(attrs, Cause(
                "FieldValueInvalid", f'Invalid value: []string{{"{wanted}"}}: failed to allocate IP {wanted}: the '
                f"provided IP ({wanted}) is not in the valid range. The range of valid IPs is {self.cidr}",
                "spec.clusterIPs"))
        if pool.holds(wanted):
            raise self._invalid(attrs, Cause(
                "FieldValueInvalid", f'Invalid value: []string{{"{wanted}"}}: failed to allocate IP {wanted}: '
                "provided IP is already allocated", "spec.clusterIPs"))

    def _next_ip(self, attrs: Attributes, pool: Pool) -> str:
        """A free address, from a random start (as kube's allocator), skipping network and broadcast, and the first
        address, the `kubernetes` Service's (which a cluster may come to serve after its first Services)."""
        size = self.cidr.num_addresses - 3
        start = random.randrange(size)
        base = int(self.cidr.network_address) + 2
        for step in range(size):
            candidate = str(ipaddress.ip_address(base + (start + step) % size))
            if not pool.holds(candidate):
                return candidate
        raise self._invalid(attrs, Cause("FieldValueInvalid", "Invalid value: []string(nil): failed to allocate "
                                         "IP: range is full", "spec.clusterIPs"))

    def _node_ports(self, attrs: Attributes, spec: Obj, pool: Pool, *, hold: bool,
                    own: frozenset[int] = frozenset()) -> None:
        """Every port gets a node port; a requested one must be free (`own`: what the Service already has)."""
        for i, port in enumerate(spec.get("ports") or []):
            if not isinstance(port, dict):
                continue
            wanted = port.get("nodePort")
            if isinstance(wanted, int) and wanted in own:
                continue
            if isinstance(wanted, int) and wanted:
                if wanted not in NODE_PORTS:
                    raise self._invalid(attrs, Cause(
                        "FieldValueInvalid", f"Invalid value: {wanted}: provided port is not in the valid range. "
                        f"The range of valid ports is {NODE_PORTS.start}-{NODE_PORTS.stop - 1}",
                        f"spec.ports[{i}].nodePort"))
                if pool.holds(str(wanted)):
                    raise self._invalid(attrs, Cause(
                        "FieldValueInvalid", f"Invalid value: {wanted}: provided port is already allocated",
                        f"spec.ports[{i}].nodePort"))
            else:
                start = random.randrange(len(NODE_PORTS))
                wanted = next((NODE_PORTS.start + (start + s) % len(NODE_PORTS) for s in range(len(NODE_PORTS))
                               if not pool.holds(str(NODE_PORTS.start + (start + s) % len(NODE_PORTS)))), None)
                if wanted is None:
                    raise self._invalid(attrs, Cause("FieldValueInvalid", "Invalid value: 0: range is full",
                                                     f"spec.ports[{i}].nodePort"))
                port["nodePort"] = wanted
            if hold:
                pool.hold(str(wanted))

    def _keep(self, attrs: Attributes, spec: Obj, old: Obj, pool: Pool) -> None:
        """An update keeps the allocated IP (filled in when left out) and may not change it."""
        old_ip = old.get("clusterIP")
        if not spec.get("clusterIP") and not spec.get("clusterIPs"):
            for name in ALLOCATED_FIELDS:
                if name in old:
                    spec[name] = old[name]
        elif spec.get("clusterIP") and not spec.get("clusterIPs") and old.get("clusterIPs"):
            spec["clusterIPs"] = [spec["clusterIP"], *old["clusterIPs"][1:]]
        for name in ("ipFamilies", "ipFamilyPolicy"):
            if name not in spec and name in old:
                spec[name] = old[name]
        if old_ip and spec.get("type", "ClusterIP") != "ExternalName" and spec.get("clusterIP") != old_ip:
            new = spec.get("clusterIP")
            raise self._invalid(attrs,
                                Cause("FieldValueInvalid", f'Invalid value: []string{{"{new}"}}: may not change '
                                      "once set", "spec.clusterIPs[0]"),
                                Cause("FieldValueInvalid", f'Invalid value: "{new}": field is immutable',
                                      "spec.clusterIP"))
        old_ports = {(p.get("port"), p.get("protocol")): p.get("nodePort") for p in old.get("ports") or []
                     if isinstance(p, dict)}
        node_ports = spec.get("type") in ("NodePort", "LoadBalancer")
        for port in spec.get("ports") or []:
            if isinstance(port, dict) and not port.get("nodePort"):
                kept = old_ports.get((port.get("port"), port.get("protocol")))
                if kept and node_ports:
                    port["nodePort"] = kept
        if node_ports:  # a port added, or a ClusterIP Service become NodePort, gets its node port now
            self._node_ports(attrs, spec, pool, hold=not attrs.ctx.dry_run,
                             own=frozenset(p for p in old_ports.values() if isinstance(p, int)))

    @staticmethod
    def _invalid(attrs: Attributes, *causes: Cause) -> st.APIError:
        return st.invalid("Service", attrs.name, list(causes))


def is_kube_service(res: Resource) -> bool:
    """kube's core/v1 Service: a built-in (the sim), or imported from physical clusters (kcp)."""
    return res.group == "" and res.plural == "services" and (not res.is_custom or res.kube_type)


async def start_service_ips(informers: Informers, cidr: ipaddress.IPv4Network) -> ServiceIPs:
    """The plugin, following the Services already stored."""
    plugin = ServiceIPs(await informers.get(SERVICES), cidr=cidr)
    await plugin.start()
    return plugin


def taken_ips(plugin: Any, cluster: str) -> set[str]:
    """The addresses a cluster's Services hold (for tests and diagnostics)."""
    pool = plugin.pools.get(cluster)
    return {item for item in pool.taken if "." in item} if pool else set()
