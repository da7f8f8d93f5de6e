"""One type over every workspace, however each workspace serves it: a wildcard view across identities.

A workspace serves a group/resource from a CRD (or built in), or from an APIBinding to an APIExport; the
bound type's objects are stored under the export's identity. A wildcard list `/clusters/*/.../deployments`
returns the first kind (and where no CRD serves the type anywhere, one identity's objects: see below);
each identity's objects are listed as `deployments:<identityHash>` (kcp's form). A controller that watches a type over `*` must see both, or it never acts in a workspace that got
the type by binding.

`BoundIdentities` watches APIBindings over `*` and learns each `(group, resource) -> identityHash` their
`status.boundResources` name; `AcrossIdentities` is one type's informer over the plain wildcard list plus
one per identity, made to look like one `SharedInformer` (`informer.InformerView`). Identities are never
dropped while the process runs: an informer of an identity no binding uses any more lists nothing (or is
answered 404, which counts as listed: see `AcrossIdentities`).

Where no CRD serves a type anywhere, kcp-apiserver answers the plain wildcard list with the first identity's
objects (registry/catalog.py), which that identity's own informer lists too. So the plain informer only
speaks for workspaces that bind no such type: its objects of a workspace that binds the type (by any
APIBinding's `boundResources`) are hidden from the view, and reach its handlers again (as adds) once the
workspace no longer binds it. Hiding is judged when an event is delivered: a handler added before the APIBindings
are listed may hear the plain copy's add too (the same key twice, as after a relist); the view's cache never
holds it twice.
"""

from __future__ import annotations

import asyncio
import builtins
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from .informer import DeletedFinalStateUnknown, Handler, HandlerRegistration, SharedInformer, deleted_object
from .informer_factory import SharedInformerFactory
from .keys import WILDCARD_CLUSTER, ObjectKey, key_for
from .store import CLUSTER_INDEX, IndexFunc, Obj

APIBINDINGS = ("apis.kcp.io/v1alpha1", "apibindings")
SYNC_POLL = 0.2  # seconds between checks in `wait_for_sync`: "not served" has no event to wait on


def group_of(api_version: str) -> str:
    """`apps/v1` -> `apps`; `v1` -> `` (core)."""
    return api_version.rpartition("/")[0]


class BoundIdentities:
    """Which identities each group/resource is bound under, anywhere: learnt from APIBindings over `*`.

    Subscribers hear each new identity once. Where APIBindings are not served (a plain kube server) the
    informer follows the unserved type, as any reflector does, and nothing is ever added.
    """

    def __init__(self, factory: SharedInformerFactory) -> None:
        self.factory = factory
        api_version, plural = APIBINDINGS
        self.bindings = factory.informer(cluster=WILDCARD_CLUSTER, api_version=api_version, plural=plural,
                                         namespaced=False)
        self._identities: dict[tuple[str, str], list[str]] = {}
        self._subscribers: dict[tuple[str, str], list[Callable[[str], None]]] = {}
        self._views: dict[tuple[str, str, bool], AcrossIdentities] = {}
        self._binds: dict[ObjectKey, frozenset[tuple[str, str]]] = {}  # binding -> the resources it binds
        self._bound_in: dict[tuple[str, str], dict[str, int]] = {}  # resource -> cluster -> bindings binding it
        self._unbound: dict[tuple[str, str], list[Callable[[str], None]]] = {}
        # inline: an identity is subscribed to before the bindings informer counts as synced
        self.bindings.add_handler(on_add=self._seen, on_update=lambda old, new: self._seen(new),
                                  on_delete=self._gone, name="bound-identities", inline=True, needs_old=False)

    @property
    def settled(self) -> bool:
        """The bindings are listed (every identity they name is known), or not served at all."""
        return self.bindings.synced_or_unserved

    def identities(self, group: str, resource: str) -> list[str]:
        """The identities seen so far for this group/resource, in the order seen."""
        return list(self._identities.get((group, resource), ()))

    def binds(self, cluster: str, group: str, resource: str) -> bool:
        """Whether an APIBinding of `cluster` binds this group/resource (so it serves no CRD of it)."""
        return cluster in self._bound_in.get((group, resource), {})

    def on_unbound(self, group: str, resource: str, callback: Callable[[str], None]) -> None:
        """`callback(cluster)` when a cluster's last binding of this group/resource goes."""
        self._unbound.setdefault((group, resource), []).append(callback)

    def subscribe(self, group: str, resource: str, callback: Callable[[str], None]) -> None:
        """`callback(identity)` for each identity of this group/resource: those known now, then each new one."""
        self._subscribers.setdefault((group, resource), []).append(callback)
        for identity in self.identities(group, resource):
            callback(identity)

    def informer(self, api_version: str, plural: str, *, namespaced: bool) -> AcrossIdentities:
        """The process's one `AcrossIdentities` of this type (the factory's informers, shared)."""
        key = (api_version, plural, namespaced)
        view = self._views.get(key)
        if view is None:
            view = self._views[key] = AcrossIdentities(self, api_version, plural, namespaced=namespaced)
        return view

    def _seen(self, binding: Obj) -> None:
        resources: set[tuple[str, str]] = set()
        for bound in (binding.get("status") or {}).get("boundResources") or ():
            identity = str((bound.get("schema") or {}).get("identityHash") or "")
            resource = (str(bound.get("group") or ""), str(bound.get("resource") or ""))
            if not identity or not resource[1]:
                continue
            resources.add(resource)
            if identity in self._identities.get(resource, ()):
                continue
            self._identities.setdefault(resource, []).append(identity)
            for callback in self._subscribers.get(resource, ()):
                callback(identity)
        self._record(key_for(binding), frozenset(resources))

    def _gone(self, binding: Obj | DeletedFinalStateUnknown) -> None:
        self._record(key_for(deleted_object(binding)), frozenset())

    def _record(self, binding: ObjectKey, resources: frozenset[tuple[str, str]]) -> None:
        """Count which clusters bind which resources; tell who asked when a cluster's last binding of one goes."""
        before = self._binds.pop(binding, frozenset())
        if resources:
            self._binds[binding] = resources
        for resource in resources - before:
            clusters = self._bound_in.setdefault(resource, {})
            clusters[binding.cluster] = clusters.get(binding.cluster, 0) + 1
        for resource in before - resources:
            clusters = self._bound_in.get(resource, {})
            clusters[binding.cluster] = clusters.get(binding.cluster, 1) - 1
            if clusters[binding.cluster] <= 0:
                del clusters[binding.cluster]
                for callback in self._unbound.get(resource, ()):
                    callback(binding.cluster)


class MergedIndexer:
    """The read-only union of the members' caches (`store.IndexReader`), less what `hidden(key)` says the
    first (plain) member holds only as a copy of a bound workspace's objects. Otherwise a plain union: the
    members' keys never meet, since a workspace serves a group/resource from one source (a CRD, or one
    binding)."""

    def __init__(self, members: builtins.list[SharedInformer], hidden: Callable[[ObjectKey], bool]) -> None:
        self._members = members  # the view's own list: members added later are read too
        self._hidden = hidden

    def _shows(self, index: int, key: ObjectKey) -> bool:
        return index > 0 or not self._hidden(key)

    def __len__(self) -> int:
        return len(self.keys())

    def __contains__(self, key: object) -> bool:
        return isinstance(key, ObjectKey) and any(key in m.indexer and self._shows(i, key)
                                                  for i, m in enumerate(self._members))

    def get(self, key: ObjectKey) -> Obj | None:
        return next((found for i, m in enumerate(self._members)
                     if self._shows(i, key) and (found := m.indexer.get(key)) is not None), None)

    def get_copy(self, key: ObjectKey) -> dict[str, Any] | None:
        return next((found for i, m in enumerate(self._members)
                     if self._shows(i, key) and (found := m.indexer.get_copy(key)) is not None), None)

    def list(self) -> builtins.list[Obj]:
        return [obj for key in self.keys() if (obj := self.get(key)) is not None]

    def keys(self) -> builtins.list[ObjectKey]:
        return [key for i, m in enumerate(self._members) for key in m.indexer.keys() if self._shows(i, key)]

    def by_index(self, name: str, value: str) -> builtins.list[Obj]:
        """Sorted by key across the members, as one `Indexer` sorts its own."""
        return [obj for key in sorted(self.index_keys(name, value)) if (obj := self.get(key)) is not None]

    def index_keys(self, name: str, value: str) -> set[ObjectKey]:
        return {key for i, m in enumerate(self._members) for key in m.indexer.index_keys(name, value)
                if self._shows(i, key)}

    def index_values(self, name: str) -> builtins.list[str]:
        values: set[str] = set()
        for i, m in enumerate(self._members):
            values.update(v for v in m.indexer.index_values(name)
                          if i > 0 or any(not self._hidden(k) for k in m.indexer.index_keys(name, v)))
        return sorted(values)


class MergedRegistration:
    """One `add_handler` over every member, now and later (`informer.Registration`)."""

    def __init__(self, view: AcrossIdentities, add: Callable[[SharedInformer], HandlerRegistration]) -> None:
        self._view = view
        self._add = add
        self.parts: dict[str, HandlerRegistration] = {}  # by member name
        self._synced = False
        self._removed = False

    def attach(self, member: SharedInformer) -> None:
        if not self._removed and member.name not in self.parts:
            self.parts[member.name] = self._add(member)

    @property
    def has_synced(self) -> bool:
        """As the view's `has_synced`, for what this handler has seen."""
        if not self._synced:
            self._synced = self._view.settled(lambda m: m.name in self.parts and self.parts[m.name].has_synced)
        return self._synced

    async def wait_for_sync(self) -> None:
        await _until(lambda: self.has_synced, None)

    def remove(self) -> None:
        self._removed = True
        for part in self.parts.values():
            part.remove()


class AcrossIdentities:
    """One type over `*` and every identity it is bound under, used as one `SharedInformer`.

    `plain` is the factory's wildcard informer (CRD-served and built-in objects; what it lists of a workspace
    that binds the type is hidden, see the module docstring); each identity the
    `BoundIdentities` learns adds the factory's `<plural>:<identity>` informer (started at once if the
    factory runs). Handlers and indexers given here go to every member, those added later too: a new
    member's objects reach the handlers as adds when it lists, which is what a level-based controller
    needs to act in the newly bound workspaces.

    `has_synced` is client-go's: once True it stays True. It turns True when the bindings are settled (so
    every identity bound at start is a member), and every member has listed (a member whose type is not
    served counts as listed: nothing to list; at least one must have). A member added afterwards gates
    only itself: turning False again would stall a controller that gated its start on `has_synced` once
    and flap readiness each time a workspace binds the type, while the new member's objects arrive as adds
    anyway. Until it lists, `indexer` lacks that identity's objects, as a cache lacks an object not yet
    watched.
    """

    def __init__(self, bound: BoundIdentities, api_version: str, plural: str, *, namespaced: bool) -> None:
        self.bound = bound
        self.factory = bound.factory
        self.api_version = api_version
        self.plural = plural
        self.namespaced = namespaced
        self.group = group_of(api_version)
        self.name = f"across-identities:{WILDCARD_CLUSTER}:{api_version}/{plural}"
        self.plain = self._member(plural)
        self.members: list[SharedInformer] = [self.plain]
        self.indexer = MergedIndexer(self.members, lambda key: bound.binds(key.cluster, self.group, plural))
        self._indexers: list[Mapping[str, IndexFunc]] = []
        self._registrations: list[MergedRegistration] = []
        self._synced = False
        bound.subscribe(self.group, plural, self._add_identity)
        bound.on_unbound(self.group, plural, self._unbound)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} members={len(self.members)}>"

    def _member(self, plural: str) -> SharedInformer:
        return self.factory.informer(cluster=WILDCARD_CLUSTER, api_version=self.api_version, plural=plural,
                                     namespaced=self.namespaced)

    def _add_identity(self, identity: str) -> None:
        member = self._member(f"{self.plural}:{identity}")
        if member in self.members:
            return
        for indexers in self._indexers:
            member.add_indexers(indexers, skip_existing=True)  # the factory's informer may be shared
        self.members.append(member)
        for registration in self._registrations:
            registration.attach(member)

    def _plain_hides(self, obj: Obj | DeletedFinalStateUnknown) -> bool:
        """An object of the plain list that is a bound workspace's (kcp's answer when no CRD serves the type)."""
        return self.bound.binds(key_for(deleted_object(obj)).cluster, self.group, self.plural)

    def _unbound(self, cluster: str) -> None:
        """A workspace no longer binds the type: what the plain list holds of it is its own again."""
        objects = self.plain.indexer.by_index(CLUSTER_INDEX, cluster)
        for registration in self._registrations:
            part = registration.parts.get(self.plain.name)
            if part is not None:
                for obj in objects:
                    part.post("add", obj)

    def settled(self, synced: Callable[[SharedInformer], bool]) -> bool:
        """The bindings are settled, no member is still to list (`synced`, or its type not served), and one
        has (`has_synced`'s rule, for the informers or for one handler's view of them)."""
        members = self.members
        return bool(self.bound.settled and any(synced(m) for m in members)
                    and all(synced(m) or not (m.has_synced or m.reflector.served) for m in members))

    @property
    def has_synced(self) -> bool:
        if not self._synced:
            self._synced = self.settled(lambda m: m.has_synced)
        return self._synced

    @property
    def synced_or_unserved(self) -> bool:
        """Readiness: synced, or settled with nothing served to list (yet)."""
        return self.has_synced or bool(self.bound.settled and all(m.synced_or_unserved for m in self.members))

    async def wait_for_sync(self, timeout: float | None = None) -> bool:  # noqa: ASYNC109 - False on timeout
        """Wait for `has_synced`; False if `timeout` seconds passed first."""
        return await _until(lambda: self.has_synced, timeout)

    def add_indexers(self, indexers: Mapping[str, IndexFunc], *, skip_existing: bool = False) -> None:
        """Add indexes to every member, now and later."""
        for member in self.members:
            member.add_indexers(indexers, skip_existing=skip_existing)
        self._indexers.append(dict(indexers))

    def add_handler(self, *, on_add: Handler | None = None, on_update: Handler | None = None,
                    on_delete: Handler | None = None, name: str = "handler",
                    inline: bool = False, needs_old: bool = True) -> MergedRegistration:
        """`SharedCache.add_handler` on every member, now and later (each later one replays its cache as adds)."""
        if inline and any(inspect.iscoroutinefunction(h) for h in (on_add, on_update, on_delete)):
            raise TypeError(f"handler {name}: an inline handler is called by the feeder, so it cannot be async")
        hides = self._plain_hides

        def add(member: SharedInformer) -> HandlerRegistration:
            if member is not self.plain:
                return member.add_handler(on_add=on_add, on_update=on_update, on_delete=on_delete, name=name,
                                          inline=inline, needs_old=needs_old)
            return member.add_handler(
                on_add=None if on_add is None else lambda obj: None if hides(obj) else on_add(obj),
                on_update=None if on_update is None else lambda old, new: None if hides(new) else on_update(old, new),
                on_delete=None if on_delete is None else lambda obj: None if hides(obj) else on_delete(obj),
                name=name, inline=inline, needs_old=needs_old)

        registration = MergedRegistration(self, add)
        for member in self.members:
            registration.attach(member)
        self._registrations.append(registration)
        return registration


async def _until(check: Callable[[], bool], timeout: float | None) -> bool:  # noqa: ASYNC109
    """Poll `check` until True (there is no event for "not served"); False after `timeout` seconds."""
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    while not check():
        if deadline is not None and loop.time() >= deadline:
            return False
        await asyncio.sleep(SYNC_POLL if deadline is None else max(0.0, min(SYNC_POLL, deadline - loop.time())))
    return True
