"""What else a downstream namespace of ours holds: objects the syncer did not make, which keep it from going.

The syncer deletes a namespace of ours once nothing it synced is left (namespaces.py); deleting the namespace
deletes everything in it, so a user's objects made there by hand, or a controller's that outlive their owner,
must keep it. Every namespaced type the cluster lists is looked at (discovery cached a while: a cleanup is rare),
and these do not count: objects with this syncer's owner label (its caches judge them), objects with an
ownerReference (they go with their owner), Events, core Endpoints (kept and removed with their Service by the
endpoints controller), a ServiceAccount's token Secret (kube < 1.24 makes one for each, the `default` one's
too, and deletes it with it), and what kube makes in every namespace (the `default` ServiceAccount, the
`kube-root-ca.crt` ConfigMap). A type this identity may not list (403), or no longer serves, is skipped."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from structlog.typing import FilteringBoundLogger

from kcpcommon.dynamic import DynamicClient
from kcpcommon.errors import APIForbiddenError, APIMethodNotAllowedError, APINotFoundError

from .discovery import APIType, namespaced_listable
from .names import OWNER_LABEL
from .objects import Obj, deleting, meta

DISCOVERY_TTL = 60.0  # seconds a listing of the cluster's types is reused
IGNORED = frozenset({("", "events"), ("events.k8s.io", "events"), ("", "endpoints")})  # (group, plural)
AUTOMATIC = frozenset({("", "serviceaccounts", "default"), ("", "configmaps", "kube-root-ca.crt")})
TOKEN_SECRET = "kubernetes.io/service-account-token"  # kube < 1.24 makes one per ServiceAccount, and deletes it with it


def resource_name(typ: APIType) -> str:
    """`plural.group` (`plural` in the core group), as the syncer names types."""
    group = typ.api_version.rpartition("/")[0]
    return f"{typ.plural}.{group}" if group else typ.plural


class ForeignObjects:
    """Finds the objects of a downstream namespace the syncer did not make and that do not go by themselves."""

    def __init__(self, down: DynamicClient, *, owner: str, log: FilteringBoundLogger,
                 ttl: float = DISCOVERY_TTL, clock: Callable[[], float] = time.monotonic) -> None:
        self._down = down
        self._owner = owner
        self._log = log
        self._ttl = ttl
        self._clock = clock
        self._types: list[APIType] = []
        self._listed_at: float | None = None

    async def _listable(self) -> list[APIType]:
        now = self._clock()
        if self._listed_at is None or now - self._listed_at >= self._ttl:
            found = await namespaced_listable(self._down)
            self._types = [t for t in found if (t.api_version.rpartition("/")[0], t.plural) not in IGNORED]
            self._listed_at = now
        return self._types

    async def find(self, namespace: str) -> list[str]:
        """`resource/name` of each foreign object in `namespace`, sorted."""
        types = await self._listable()
        found = await asyncio.gather(*(self._in(typ, namespace) for typ in types))
        return sorted(name for names in found for name in names)

    async def _in(self, typ: APIType, namespace: str) -> list[str]:
        try:
            listed = await typ.resource(self._down).list(namespace=namespace)
        except (APIForbiddenError, APINotFoundError, APIMethodNotAllowedError) as exc:
            self._log.info("type not looked at for objects of others", resource=resource_name(typ),
                           downstream_namespace=namespace, status=exc.status)
            return []
        group = typ.api_version.rpartition("/")[0]
        return [f"{resource_name(typ)}/{meta(obj).get('name')}" for obj in (listed or {}).get("items") or []
                if self._foreign(group, typ.plural, obj)]

    def _foreign(self, group: str, plural: str, obj: Obj) -> bool:
        metadata = meta(obj)
        if (metadata.get("labels") or {}).get(OWNER_LABEL) == self._owner or metadata.get("ownerReferences") \
                or (group, plural, obj.get("type")) == ("", "secrets", TOKEN_SECRET):
            return False
        return not deleting(obj) and (group, plural, metadata.get("name")) not in AUTOMATIC
