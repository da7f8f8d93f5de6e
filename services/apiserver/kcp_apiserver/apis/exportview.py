"""What an APIExport's virtual workspace (`/services/apiexport/<provider>/<export>/clusters/<consumer>/...`) shows
its provider: the export's types, and of them only the objects of consumers whose binding to the export is Bound;
and the resources the export claims (claims.py), of them only the objects of consumers that accepted the claim.

Who may use it is kcp's rule: the caller needs the request's verb on `apiexports/content` of `apis.kcp.io`, with
the export's name as resource name, in the provider's logical cluster. What it serves is read from the bindings
the replica serves (`BoundAPIs`), so the export's identity is the storage a request reaches: another export of
the same group/resource, or a consumer's own objects of other types, are never in reach."""

from __future__ import annotations

from collections.abc import Callable

from kcp_apiserver.apiextensions.servable import Unservable
from kcp_apiserver.apimachinery.request import RequestInfo
from kcp_apiserver.apis.schemas import bound_resources
from kcp_apiserver.apis.serving import BoundAPIs
from kcp_apiserver.apis.types import API_EXPORT
from kcp_apiserver.registry.resource import Obj, Resource
from kcpcommon.frozen import thaw
from kcpcommon.keys import cluster_of

CONTENT = "content"  # the subresource of apiexports whose verbs say who may use an export's objects
WILDCARD = "*"


def content_request(provider: str, export: str, verb: str) -> RequestInfo:
    """What using an export's content with `verb` is, as the authorizer sees it (kcp's rule)."""
    return RequestInfo(provider, "", is_resource=True, verb=verb, api_prefix="apis", group=API_EXPORT.group,
                       version=API_EXPORT.version, resource=API_EXPORT.plural, name=export, subresource=CONTENT)


class ExportViews:
    """The export's resources and consumers, as the replica's bindings say now (read again on every call, so a
    watch stops showing a consumer once its binding goes)."""

    def __init__(self, bound: BoundAPIs) -> None:
        self.bound = bound
        self._declared: dict[tuple[object, ...], list[Resource]] = {}  # the export's own types, by its state

    def declared(self, provider: str, export: str) -> list[Resource]:
        """The export's types as its identity and latest schemas make them, for a view no consumer has bound yet
        (its controller starts first: discovery and an empty list, not 404). Built once per state of them."""
        obj = self.bound.export(provider, export)
        identity = str(((obj or {}).get("status") or {}).get("identityHash") or "")
        if obj is None or not identity:
            return []
        names = [str(n) for n in ((obj.get("spec") or {}).get("latestResourceSchemas") or [])]
        schemas = [(n, self.bound.schema(provider, n)) for n in names]
        key = (provider, export, identity,
               *((n, ((s or {}).get("metadata") or {}).get("resourceVersion")) for n, s in schemas))
        built = self._declared.get(key)
        if built is None:
            built = []
            for _, schema in schemas:
                try:
                    built += bound_resources(thaw(schema), identity, self.bound.catalog.builtins) if schema else []
                except Unservable:
                    continue  # a binding would not bind it either
            self._declared = {key: built}  # only the latest state is worth keeping
        return built

    def consumers(self, provider: str, export: str) -> set[str]:
        """The logical clusters with a Bound binding to the export."""
        return set(self.bound.by_export.get((provider, export), ()))

    def resources(self, provider: str, export: str) -> list[Resource]:
        """The export's types, one descriptor per group/version/resource (what discovery lists), then the claimed
        resources some consumer accepted."""
        found: dict[tuple[str, str, str], Resource] = {}
        for key in sorted(self.bound.by_export.get((provider, export), {}).items()):
            for res in self.bound.served.get(key, ()):
                found.setdefault((res.group, res.version, res.plural), res)
        own = list(found.values()) or self.declared(provider, export)
        claimed: dict[tuple[str, str, str], Resource] = {}
        for consumer, accepted in sorted(self.bound.permitted.get((provider, export), {}).items()):
            for res in self.bound.catalog.for_cluster(consumer):
                if (res.group, res.plural, res.identity) in accepted:
                    claimed.setdefault((res.group, res.version, res.plural), res)
        return own + [res for gvr, res in claimed.items() if gvr not in found] if claimed else own

    def resource(self, provider: str, export: str, cluster: str, group: str, version: str,
                 plural: str) -> Resource | None:
        """The descriptor a request for `cluster` (a consumer, or `*`) uses: one of the export's own types, as a
        consumer bound it; None when the export has no such type or `cluster` has not bound the export."""
        consumers = self.bound.by_export.get((provider, export), {})
        keys = sorted(consumers.items()) if cluster == WILDCARD else [(cluster, consumers.get(cluster, ""))]
        for key in keys:
            for res in self.bound.served.get(key, ()):
                if (res.group, res.version, res.plural) == (group, version, plural):
                    return res
        claimed = self._claimed(provider, export, cluster, group, version, plural)
        if claimed is not None or cluster != WILDCARD or self.bound.by_export.get((provider, export)):
            return claimed
        return next((res for res in self.declared(provider, export)
                     if (res.group, res.version, res.plural) == (group, version, plural)), None)

    def _claimed(self, provider: str, export: str, cluster: str, group: str, version: str,
                 plural: str) -> Resource | None:
        """A claimed resource as a consumer that accepted the claim serves it (`*`: any such consumer)."""
        permitted = self.bound.permitted.get((provider, export), {})
        holders = sorted(permitted) if cluster == WILDCARD else [cluster] if cluster in permitted else []
        for consumer in holders:
            res = self.bound.catalog.lookup(consumer, group, version, plural)
            if res is not None and (res.group, res.plural, res.identity) in permitted[consumer]:
                return res
        return None

    def shows(self, provider: str, export: str, res: Resource) -> Callable[[Obj], bool]:
        """Which listed and watched objects of `res` the view shows: of the export's own types, those of its
        current consumers; of a claimed resource, those of the consumers that accepted the claim now."""
        key = (provider, export)
        identity = ((self.bound.export(provider, export) or {}).get("status") or {}).get("identityHash")
        if res.identity and res.identity == identity:
            def consumer(obj: Obj) -> bool:
                return (cluster_of(obj) or "") in self.bound.by_export.get(key, {})
            return consumer
        claim = (res.group, res.plural, res.identity)

        def accepted(obj: Obj) -> bool:
            return claim in self.bound.permitted.get(key, {}).get(cluster_of(obj) or "", ())
        return accepted
