"""What kcp's syncer virtual workspace (`/services/syncer/<compute>/<synctarget>/clusters/<workspace or *>/...`)
lets one SyncTarget's syncer reach: the Namespaces of any workspace placed on that SyncTarget (the splitter's
`placed.workload.kcp.io/<sync_target_key(compute, synctarget)>` label, `Placed` or `Draining`), the objects in
them, and the cluster-scoped objects assigned to it (`workloads.kcp.io/cluster: <synctarget>`). Nothing else.

Who may use it is kcp's rule: verb `sync` on `synctargets` of `workload.kcp.io`, named, in the compute workspace
(the cluster controller grants it to a pull-mode syncer's ServiceAccount there). Its requests are then made with
the view's own identity: the ServiceAccount, a stranger in every other workspace, reaches a team's workspace only
through the view and only as far as the team placed its namespaces there. Which namespaces are placed is followed
from the Namespaces' shared informer (one entry per placed namespace).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kcp_apiserver.apimachinery.request import AUTHENTICATED, SYSTEM_MASTERS, RequestInfo, SyncTargetRef, UserInfo
from kcp_apiserver.registry.builtin import NAMESPACE
from kcp_apiserver.registry.informers import WatchCacheInformer, add_observer
from kcp_apiserver.registry.resource import Obj, Resource
from kcpcommon.keys import ASSIGNMENT_LABEL, cluster_of, placed_keys, sync_target_key
from kcpcommon.sharedcache import HandlerRegistration

SYNC_VERB = "sync"
SYNC_TARGETS = ("workload.kcp.io", "v1alpha1", "synctargets")
# who the view's requests are made as (the caller is kept as the impersonator, for the audit log)
VIEW_USER = UserInfo("system:kcp:syncer-virtual-workspace", groups=(SYSTEM_MASTERS, AUTHENTICATED))


def sync_request(ref: SyncTargetRef) -> RequestInfo:
    """What using a SyncTarget's view is, as the authorizer sees it: `sync` on it in its workspace (kcp's rule)."""
    group, version, plural = SYNC_TARGETS
    return RequestInfo(ref.cluster, "", is_resource=True, verb=SYNC_VERB, api_prefix="apis", group=group,
                       version=version, resource=plural, name=ref.name)


def _labels(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return (obj.get("metadata") or {}).get("labels") or {}


class SyncerViews:
    """The placed namespaces of every workspace, and what a SyncTarget's view shows of a resource."""

    def __init__(self, namespaces: WatchCacheInformer) -> None:
        self.namespaces = namespaces
        self.placed_on: dict[tuple[str, str], frozenset[str]] = {}  # (workspace, namespace) -> its placed keys
        self._handler: HandlerRegistration | None = None

    @property
    def identity(self) -> UserInfo:
        return VIEW_USER

    async def start(self) -> None:
        """Returns once every namespace stored at start is known."""
        self._handler = add_observer(self.namespaces, self._observe, name="syncer-view:namespaces")
        await self._handler.wait_for_sync()

    async def stop(self) -> None:
        if self._handler is not None:
            self._handler.remove()

    def _observe(self, ns: Obj, deleted: bool) -> None:
        key = (cluster_of(ns) or "", str(ns["metadata"]["name"]))
        keys = frozenset(placed_keys(_labels(ns)))
        if deleted or not keys:
            self.placed_on.pop(key, None)
        else:
            self.placed_on[key] = keys

    def placed(self, ref: SyncTargetRef, cluster: str, namespace: str) -> bool:
        """Namespace `namespace` of workspace `cluster` is placed (or draining) on the SyncTarget."""
        return sync_target_key(ref.cluster, ref.name) in self.placed_on.get((cluster, namespace), ())

    def shows(self, ref: SyncTargetRef, res: Resource) -> Callable[[Obj], bool]:
        """Which objects of `res` the SyncTarget's view shows (lists and watches, and named requests)."""
        key = sync_target_key(ref.cluster, ref.name)
        if res.group_resource == NAMESPACE.group_resource:
            return lambda ns: key in placed_keys(_labels(ns))
        if res.namespaced:
            placed_on = self.placed_on
            return lambda obj: key in placed_on.get(
                (cluster_of(obj) or "", str((obj.get("metadata") or {}).get("namespace") or "")), ())
        return lambda obj: _labels(obj).get(ASSIGNMENT_LABEL) == ref.name
