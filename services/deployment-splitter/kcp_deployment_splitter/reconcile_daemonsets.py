"""Reconcile one DaemonSet under the DaemonSet rule (daemonsets.py): its targets, then its summed status.

Level-based, as a root's reconcile: the targets come from the SyncTarget cache and the clock, the status from
what each target's syncer reported on the DaemonSet. One merge patch of its metadata places it, a second write
(the status subresource) shows the sum.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import structlog

from kcpcommon.clients import ClientFactory
from kcpcommon.controller import Result
from kcpcommon.daemonsetstatus import sum_statuses
from kcpcommon.events import NORMAL, EventRecorder
from kcpcommon.keys import ObjectKey
from kcpcommon.store import IndexReader

from .daemonsets import DAEMON_SETS, spread_by_rule, spread_patch, spread_targets
from .expectations import Expectations
from .names import COMPONENT
from .namespaces import opted_out
from .placements import namespace_targets
from .reconcile import MOVED
from .shares import reported_status, status_annotation
from .targets import TargetView, leaving, usable_for, view

log = structlog.get_logger(COMPONENT)


def chosen_targets(targets: TargetView, current: set[str], draining: set[str]) -> set[str]:
    """Every usable target, and those that hold a copy while not Ready (their nodes still run it)."""
    kept = {t for t in current if t in targets.not_ready and t not in draining and t in targets.lost
            and targets.lost[t] != MOVED}
    return set(usable_for(targets, current)) | kept


class DaemonSetSpreader:
    """`reconcile(ObjectKey(cluster, namespace, name))` of a DaemonSet."""

    def __init__(self, kcp: ClientFactory, *, daemonsets: IndexReader, targets: IndexReader,
                 namespaces: IndexReader | None, grace_period: float, expectations: Expectations,
                 events: EventRecorder | None = None, now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.kcp = kcp
        self.daemonsets = daemonsets
        self.targets = targets
        self.namespaces = namespaces  # a namespace opted out of scheduling keeps its DaemonSets as they are
        self.grace_period = grace_period
        self.expectations = expectations
        self.events = events
        self._now = now

    async def reconcile(self, key: ObjectKey) -> Result | None:
        ds = self.daemonsets.get(key)
        if ds is None or (ds.get("metadata") or {}).get("deletionTimestamp") or not spread_by_rule(ds):
            self.expectations.forget(key)
            return None  # gone (its syncers delete their copies), or placed by a person
        if self.namespaces is not None:
            namespace = self.namespaces.get(ObjectKey(key.cluster, "", key.namespace))
            if namespace is not None and opted_out(namespace):
                return None
        pending = self.expectations.waiting(key, self.daemonsets.get)
        if pending is not None:
            return Result(requeue_after=pending)
        found, draining = namespace_targets(self.targets, self.namespaces, key.cluster, key.namespace)
        targets = leaving(view(found, now=self._now(), grace_period=self.grace_period), draining, MOVED)
        current = spread_targets(ds)
        wanted = chosen_targets(targets, current, draining)
        resource = self.kcp.dynamic(key.cluster).resource(*DAEMON_SETS, namespaced=True)
        patch = spread_patch(ds, wanted)
        if patch is not None:
            ds = await resource.patch(key.name, patch, namespace=key.namespace)
            self.expectations.wrote(key, key, ds)
            if wanted != current:
                self._placed(key, ds, wanted, current, targets)
        await self._status(key, ds, wanted, targets)
        return Result(requeue_after=targets.recheck_after + 0.1) if targets.recheck_after is not None else None

    def _placed(self, key: ObjectKey, ds: Mapping[str, Any], wanted: set[str], current: set[str],
                targets: TargetView) -> None:
        gone = ", ".join(f"{t} ({targets.lost.get(t, 'gone')})" for t in sorted(current - wanted))
        message = (f"runs on SyncTargets {', '.join(sorted(wanted)) or '(none)'}"
                   + (f"; left {gone}" if gone else ""))
        log.info("daemonset placed", cluster=key.cluster, namespace=key.namespace, name=key.name,
                 targets=sorted(wanted), left=sorted(current - wanted))
        if self.events is not None:
            self.events.record({**ds, "apiVersion": "apps/v1", "kind": "DaemonSet"}, NORMAL, "Spread", message,
                               cluster=key.cluster)

    async def _status(self, key: ObjectKey, ds: Mapping[str, Any], wanted: set[str], targets: TargetView) -> None:
        annotations = (ds.get("metadata") or {}).get("annotations") or {}
        statuses = {t: reported_status(ds, t) for t in wanted if status_annotation(t) in annotations}
        new = sum_statuses(statuses, placed=wanted, generation=int((ds.get("metadata") or {}).get("generation") or 0),
                           stale={t for t in wanted if t in targets.not_ready})
        old = dict(ds.get("status") or {})
        if "conditions" in old:
            new["conditions"] = old["conditions"]  # kube's DaemonSet controller sets none; a person's stay
        if old == new:
            return
        change: dict[str, Any] = {**{field: None for field in old if field not in new}, **new}
        written = await self.kcp.dynamic(key.cluster).resource(*DAEMON_SETS, namespaced=True).patch(
            key.name, {"status": change}, namespace=key.namespace, subresource="status")
        self.expectations.wrote(key, key, written)
