"""Parse a request path into kube's RequestInfo (after the logical cluster is stripped)."""

from __future__ import annotations

from dataclasses import replace

from aiohttp import web

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import ExportRef, RequestContext, RequestInfo, SyncTargetRef
from kcp_apiserver.endpoints.wire import CONTEXT
from kcp_apiserver.filters import Handler
from kcp_apiserver.registry.clusters import DEFAULT_CLUSTER, check_cluster_name

NAMESPACE_SUBRESOURCES = {"status", "finalize"}
# kube 1.35's AuthorizePodWebsocketUpgradeCreatePermission (beta, on): a WebSocket handshake is a GET, but
# opening these streams is a create, as the SPDY POST always was
WEBSOCKET_CREATES = frozenset({"exec", "attach", "portforward"})
APIEXPORT_PREFIX = "/services/apiexport/"  # kcp's virtual workspace of an export's provider
INITIALIZING_PREFIX = "/services/initializingworkspaces/"  # kcp's virtual workspace of an initializer's controller
SYNCER_PREFIX = "/services/syncer/"  # kcp's virtual workspace of a SyncTarget's syncer


def split_cluster(path: str) -> tuple[str, str]:
    """`/clusters/<name>/rest` -> (name, /rest); anything else belongs to the default cluster."""
    if path.startswith("/clusters/"):
        rest = path[len("/clusters/"):]
        name, _, tail = rest.partition("/")
        check_cluster_name(name)
        return name, "/" + tail
    return DEFAULT_CLUSTER, path


def split_apiexport(path: str) -> tuple[ExportRef | None, str]:
    """`/services/apiexport/<provider cluster>/<export>/clusters/<consumer or *>/rest` -> (the export,
    `/clusters/<consumer or *>/rest`); any other path is returned as it is. Under the prefix, anything but that
    shape is 404, as kcp's virtual workspace answers."""
    if not path.startswith(APIEXPORT_PREFIX):
        return None, path
    provider, export, rest = _cluster_and_name(path[len(APIEXPORT_PREFIX):])
    return ExportRef(provider, export), rest


def split_initializing(path: str) -> tuple[str, str]:
    """`/services/initializingworkspaces/<path>:<name>/clusters/<cluster or *>/rest` -> (the initializer
    `<path>:<name>`, `/clusters/<cluster or *>/rest`); any other path is returned as it is with no initializer.
    Under the prefix, anything but that shape is 404, as kcp's virtual workspace answers."""
    if not path.startswith(INITIALIZING_PREFIX):
        return "", path
    initializer, _, rest = path[len(INITIALIZING_PREFIX):].partition("/")
    type_path, _, name = initializer.rpartition(":")
    cluster = rest[len("clusters/"):].partition("/")[0] if rest.startswith("clusters/") else ""
    if not type_path or not name or type_path == "*" or not cluster:
        raise st.APIError(404, "NotFound", "the server could not find the requested resource")
    try:
        check_cluster_name(type_path)
    except st.APIError:
        raise st.APIError(404, "NotFound", "the server could not find the requested resource") from None
    return initializer, "/" + rest


def split_syncer(path: str) -> tuple[SyncTargetRef | None, str]:
    """`/services/syncer/<compute cluster>/<synctarget>/clusters/<workspace or *>/rest` -> (the SyncTarget,
    `/clusters/<workspace or *>/rest`); any other path is returned as it is. Under the prefix, anything but that
    shape is 404, as kcp's virtual workspace answers."""
    if not path.startswith(SYNCER_PREFIX):
        return None, path
    compute, target, rest = _cluster_and_name(path[len(SYNCER_PREFIX):])
    return SyncTargetRef(compute, target), rest


def _cluster_and_name(tail: str) -> tuple[str, str, str]:
    """`<cluster>/<name>/clusters/<cluster or *>/rest` (what follows a virtual workspace's prefix) -> (cluster,
    name, `/clusters/<cluster or *>/rest`); 404 for any other shape, as kcp's virtual workspaces answer (400 for a
    cluster name that cannot be one)."""
    cluster, _, rest = tail.partition("/")
    name, _, rest = rest.partition("/")
    if not cluster or not name or cluster == "*" or not rest.startswith("clusters/"):
        raise st.APIError(404, "NotFound", "the server could not find the requested resource")
    check_cluster_name(cluster)
    return cluster, name, "/" + rest


def parse(method: str, raw_path: str, watch_param: bool) -> RequestInfo:
    info = _parse(method, raw_path, watch_param)
    if not info.is_resource:  # kube: a non-resource request's verb is its method, lowercased
        info = replace(info, verb=method.lower())
    return info


def _parse(method: str, raw_path: str, watch_param: bool) -> RequestInfo:
    cluster, path = split_cluster(raw_path)
    parts = [p for p in path.strip("/").split("/") if p]
    if not parts or parts[0] not in ("api", "apis"):
        return RequestInfo(cluster, path)
    prefix = parts[0]
    rest = parts[1:]
    if prefix == "api":
        if not rest:
            return RequestInfo(cluster, path, api_prefix=prefix)
        group, version, rest = "", rest[0], rest[1:]
    else:
        if len(rest) < 2:
            return RequestInfo(cluster, path, api_prefix=prefix, group=rest[0] if rest else "")
        group, version, rest = rest[0], rest[1], rest[2:]
    if not rest:
        return RequestInfo(cluster, path, api_prefix=prefix, group=group, version=version)
    verb = ""
    if rest[0] == "watch":  # deprecated /watch/ path form
        verb, rest = "watch", rest[1:]
    namespace = ""
    if rest and rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0] if rest else ""
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    identity = ""
    if cluster == "*" and ":" in resource:  # kcp's `<resource>:<identityHash>`: one export's type across clusters
        resource, identity = resource.split(":", 1)
    if not verb:
        verb = _verb(method, bool(name), watch_param)
    return RequestInfo(cluster, path, True, verb, prefix, group, version, namespace, resource, name, subresource,
                       identity)


def _verb(method: str, has_name: bool, watch: bool) -> str:
    method = method.upper()
    if method in ("GET", "HEAD"):
        if watch:
            return "watch"
        return "get" if has_name else "list"
    if method == "POST":
        return "create"
    if method == "PUT":
        return "update"
    if method == "PATCH":
        return "patch"
    if method == "DELETE":
        return "delete" if has_name else "deletecollection"
    return method.lower()


@web.middleware
async def request_info(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Route to a logical cluster and parse kube's RequestInfo; start the request's context."""
    watch = request.query.get("watch", "") in ("1", "true", "True")
    export, path = split_apiexport(request.path)
    initializer, path = split_initializing(path)
    syncer, path = split_syncer(path)
    info = parse(request.method, path, watch)
    if (info.verb == "get" and info.resource == "pods" and not info.group and info.subresource in WEBSOCKET_CREATES
            and request.headers.get("Upgrade", "").lower() == "websocket"):
        info = replace(info, verb="create")
    request[CONTEXT] = RequestContext(info, user_agent=request.headers.get("User-Agent", ""), export=export,
                                      initializer=initializer, syncer=syncer)
    return await handler(request)
