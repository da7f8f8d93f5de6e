"""Spec down: the upstream finalizer, then one server-side apply of the downstream object, as needed.

An apply is made only when the downstream copy differs from what the upstream object says (or was
applied from another body), and not again while the downstream cache has not yet seen our own last
apply. A refusal the user can act on is reported as an Event on the upstream object, and so is a spec diff
of this target's that does not apply (`specdiff.py`: then nothing is written at all).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from structlog.typing import FilteringBoundLogger

from kcpcommon.backoff import Backoff
from kcpcommon.controller import TerminalError
from kcpcommon.dynamic import DynamicClient, DynamicResource
from kcpcommon.errors import APIClientError, APINotFoundError
from kcpcommon.events import WARNING, event_for

from .autoscalers import Autoscalers
from .classes import ClassNames, MissingClass
from .metrics import DOWN, SyncerMetrics
from .names import FIELD_MANAGER, SPEC_HASH_ANNOTATION, syncer_finalizer
from .namespaces import DownstreamNamespaces
from .objects import Obj, finalizers, meta
from .specdiff import INVALID_SPEC_DIFF, InvalidSpecDiff, is_split
from .synced import SyncedType, SyncKey
from .transform import downstream_object, scaled_downstream, up_to_date

EVENT_ERRORS = (400, 403, 404, 422)  # downstream refusals a user can act on: reported as Events upstream
REFUSED = (400, 422)  # the object itself is refused downstream: retrying the same spec cannot help


class SpecDown:
    """Applies upstream objects down and holds them with the finalizer; remembers its own writes per key."""

    def __init__(self, *, up: DynamicClient, namespaces: DownstreamNamespaces, classes: ClassNames,
                 autoscalers: Autoscalers, logical_cluster: str, sync_target: str, metrics: SyncerMetrics, log: FilteringBoundLogger) -> None:
        self._up = up
        self.classes = classes
        self.autoscalers = autoscalers
        self._namespaces = namespaces
        self._lc = logical_cluster
        self._target = sync_target
        self._metrics = metrics
        self._log = log
        self.finalizer = syncer_finalizer(sync_target)
        self._changed: dict[SyncKey, float] = {}  # first unsynced upstream change, for the latency histogram
        self._reported: dict[SyncKey, str] = {}  # last error reported as an Event, not repeated
        self._finalized: dict[SyncKey, str] = {}  # uid of the object we added our finalizer to
        # spec hash we applied, until the downstream informer next reports on the object: meanwhile the
        # downstream cache is known to be behind our own write, and must not trigger a second apply
        self._applied: dict[SyncKey, str] = {}
        self._class_waiters: dict[tuple[str, str], set[SyncKey]] = {}  # (class resource, name) -> referrers held
        self._class_retries: dict[SyncKey, Backoff] = {}
        self._invalid: dict[SyncKey, str] = {}  # the invalid spec diff last reported, until the key's spec is valid

    def upstream_changed(self, key: SyncKey) -> None:
        """Start the latency clock of an upstream change."""
        self._changed.setdefault(key, time.monotonic())

    def downstream_changed(self, key: SyncKey) -> None:
        """The downstream cache has caught up with our last apply of `key` (or lost the object): trust it again."""
        self._applied.pop(key, None)

    def forget_change(self, key: SyncKey) -> None:
        self._changed.pop(key, None)

    def forget_writes(self, key: SyncKey) -> None:
        """The downstream copy is gone: nothing of ours is pending on it."""
        self._finalized.pop(key, None)
        self._applied.pop(key, None)

    def forget_report(self, key: SyncKey) -> None:
        self._reported.pop(key, None)
        self._invalid.pop(key, None)
        self._class_retries.pop(key, None)

    async def wait_for_class(self, key: SyncKey, up: Obj, missing: MissingClass) -> float:
        """Hold a referrer whose class is nowhere yet: say so on it, and retry when the class comes to this
        syncer (`class_arrived`) or, for one kcp has but the splitter has not placed here, after a backoff."""
        self._class_waiters.setdefault((missing.resource, missing.name), set()).add(key)
        await self._report(key, up, str(missing), reason="ClassNotFound")
        return self._class_retries.setdefault(key, Backoff(initial=1.0, cap=60.0)).next()

    def class_arrived(self, resource: str, name: str) -> set[SyncKey]:
        """The referrers held for that class."""
        return self._class_waiters.pop((resource, name), set())

    async def sync(self, typ: SyncedType, key: SyncKey, up: Obj, down: Obj | None, down_ns: str | None,
                   down_name: str) -> str | None:
        """Finalizer up and one apply down (as `down_name`), as needed; returns the spec hash the object should
        carry, or None when this target's spec diff is invalid (nothing written down; see `_invalid_diff`)."""
        try:
            desired = downstream_object(up, api_version=typ.down.api_version, kind=typ.down.kind, namespace=down_ns,
                                        logical_cluster=self._lc, sync_target=self._target,
                                        scaled_downstream=scaled_downstream(down), name=down_name,
                                        class_names=await self.classes.mapping(typ.down.kind, up, down), live=down,
                                        autoscaled=self.autoscalers.scale(typ.down, down_ns, down_name))
        except InvalidSpecDiff as invalid:
            await self._invalid_diff(key, up, invalid)
            return None
        self._invalid.pop(key, None)
        writes = []
        uid = str(meta(up).get("uid") or "")
        if is_split(up, self._target):
            # a split object goes when its user deletes it, as on a cluster (`kubectl delete` does not wait on every
            # cluster, nor forever on one that is away): its copy goes on the positive evidence of its absence
            # (remove.py), and its share's removal is the splitter's
            if self.finalizer in finalizers(up):
                writes.append(set_finalizers(typ.up_resource, up, [f for f in finalizers(up) if f != self.finalizer]))
        elif self.finalizer not in finalizers(up) and self._finalized.get(key) != uid:
            writes.append(self._add_finalizer(typ, key, up, uid))
        applied = self._applied.get(key)
        stale = not up_to_date(desired, down) and (applied is None or applied != hash_of(desired))
        self._class_retries.pop(key, None)
        if stale:
            writes.append(self._apply(typ, key, up, desired, down_ns))
        if writes:
            await asyncio.gather(*writes)
        changed = self._changed.pop(key, None)
        if stale and changed is not None:
            self._metrics.latency(DOWN, time.monotonic() - changed)
        return hash_of(desired)

    async def _invalid_diff(self, key: SyncKey, up: Obj, invalid: InvalidSpecDiff) -> None:
        """A spec diff that does not apply: the downstream copy stays as it is (neither applied nor deleted), and
        the user hears it once per distinct error (a Warning Event and a log line); the key is not retried, its
        next upstream change brings it back (a downstream status change too, which finds the same error)."""
        message = str(invalid)
        if self._invalid.get(key) == message:
            return
        self._invalid[key] = message
        self._metrics.error(INVALID_SPEC_DIFF)
        self._log.warning("spec diff does not apply; the downstream copy is left as it is", resource=key.resource,
                          namespace=key.namespace, name=key.name, error=message)
        self._reported.pop(key, None)
        await self._report(key, up, message, reason=INVALID_SPEC_DIFF)

    async def _add_finalizer(self, typ: SyncedType, key: SyncKey, up: Obj, uid: str) -> None:
        """Hold the upstream object until its downstream copy is deleted; remembered, so a cache that
        has not seen our own patch yet does not make us patch again (and conflict)."""
        await set_finalizers(typ.up_resource, up, [*finalizers(up), self.finalizer])
        self._finalized[key] = uid

    async def _apply(self, typ: SyncedType, key: SyncKey, up: Obj, desired: dict[str, Any],
                     down_ns: str | None) -> None:
        if down_ns:
            await self._namespaces.ensure(down_ns, key.namespace)
        try:
            await typ.down_resource.patch(desired["metadata"]["name"], desired, namespace=down_ns, patch_type="apply",
                                          field_manager=FIELD_MANAGER, force=True)
        except APIClientError as exc:
            self._metrics.error(exc.reason or f"HTTP{exc.status}")
            if down_ns and exc.status in (403, 404):  # the namespace may be gone or terminating: recreate it
                self._namespaces.forget(down_ns)
            if exc.status in EVENT_ERRORS and not _namespace_trouble(exc):
                await self._report(key, up, exc.message)
            if exc.status in REFUSED:  # only a change of the upstream object (which requeues it) can help
                raise TerminalError(f"the physical cluster refuses the object: {exc}") from exc
            raise
        self._metrics.synced(DOWN, typ.name)
        self._applied[key] = hash_of(desired)
        self._reported.pop(key, None)

    async def _report(self, key: SyncKey, up: Obj, message: str, *, reason: str = "SyncFailed") -> None:
        """An Event on the upstream object saying why it cannot be synced (once per distinct message)."""
        if self._reported.get(key) == message:
            return
        self._reported[key] = message
        event = event_for(up, WARNING, reason, f"cannot sync to SyncTarget {self._target}: {message}",
                          component=FIELD_MANAGER)
        try:
            await self._up.resource("v1", "events", namespaced=True).create(event)
        except APIClientError as error:
            self._log.warning("could not record a sync failure event", error=str(error))


async def set_finalizers(resource: DynamicResource, up: Obj, wanted: list[str]) -> None:
    """Merge-patch the finalizer list, conditional on the resourceVersion we read (409: retried)."""
    up_meta = meta(up)
    patch = {"metadata": {"finalizers": wanted, "resourceVersion": up_meta.get("resourceVersion")}}
    try:
        await resource.patch(str(up_meta.get("name")), patch, namespace=up_meta.get("namespace") or None)
    except APINotFoundError:
        pass  # already gone: nothing to hold or release


def hash_of(body: Obj) -> str:
    """The spec hash annotation an apply body carries."""
    return str(((meta(body).get("annotations") or {}).get(SPEC_HASH_ANNOTATION)) or "")


def _namespace_trouble(exc: APIClientError) -> bool:
    """The mapped namespace is missing or terminating: the syncer's own business (it recreates it), not the user's."""
    return (exc.status == 404 and exc.details.get("kind") == "namespaces") or "being terminated" in exc.message
