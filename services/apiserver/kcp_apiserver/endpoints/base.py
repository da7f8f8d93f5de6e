"""What every verb family of the resource endpoints shares: its dependencies, query
parameters kube reads the same way for every verb, and how an object goes out."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web
from multidict import MultiMapping

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import RequestContext
from kcp_apiserver.apimachinery.selectors import FieldSelector, LabelSelector
from kcp_apiserver.endpoints.fieldvalidation import FieldValidator
from kcp_apiserver.endpoints.wire import (
    PROTOBUF,
    body_media_type,
    body_types,
    decode_object,
    json_response,
    read_body,
    wants_table,
)
from kcp_apiserver.registry.catalog import Catalog, WatchCaches
from kcp_apiserver.registry.conversion import present, stored_view
from kcp_apiserver.registry.resource import Obj, Resource
from kcp_apiserver.registry.serviceaccounts import ServiceAccountTokens
from kcp_apiserver.registry.store import Registry
from kcp_apiserver.registry.tables import to_table


@dataclass
class WatchSettings:
    bookmark_interval: float = 60.0
    min_request_timeout: float = 1800.0


@dataclass
class Endpoints:
    """The parts a verb needs: the catalog of served types, the registry, the watch caches."""

    catalog: Catalog
    registry: Registry
    caches: WatchCaches
    fields: FieldValidator
    watch: WatchSettings
    tokens: ServiceAccountTokens | None = None  # serviceaccounts/token (None: not served)
    visibility: Visibility | None = None  # which listed and watched objects a user is shown (None: all)

    def shown(self, res: Resource, ctx: RequestContext,
              matches: Callable[[Obj], bool] | None) -> Callable[[Obj], bool] | None:
        """The selectors' predicate narrowed to what this user may see of `res` (kcp's Workspaces list)."""
        visible = self.visibility(res, ctx) if self.visibility is not None else None
        if visible is None or matches is None:
            return visible or matches
        selected = matches
        return lambda obj: selected(obj) and visible(obj)


Visibility = Callable[[Resource, RequestContext], Callable[[Obj], bool] | None]


def dry_run(query: MultiMapping[str]) -> bool:
    values = query.getall("dryRun", [])
    for value in values:
        if value != "All":
            raise st.bad_request(f'Invalid dry run value "{value}": must be "All"')
    return bool(values)


def int_param(query: MultiMapping[str], name: str) -> int:
    value = query.get(name, "")
    if not value:
        return 0
    try:
        parsed = int(value)
    except ValueError as exc:
        raise st.bad_request(f"invalid {name} {value!r}: must be an integer") from exc
    if parsed < 0:
        raise st.bad_request(f"invalid {name} {value!r}: must not be negative")
    return parsed


def build_filter(res: Resource, query: MultiMapping[str]) -> tuple[Callable[[Obj], bool] | None, str]:
    """Selectors from the query as one predicate, plus a name pinned by the field selector."""
    labels = LabelSelector.parse(query.get("labelSelector", ""))
    fields = FieldSelector.parse(query.get("fieldSelector", ""), res.selectable_fields)
    pinned = fields.exact("metadata.name") or ""
    if labels.empty and fields.empty:
        return None, pinned

    view = stored_view(res)

    def matches(obj: Obj) -> bool:
        return labels.matches((obj.get("metadata") or {}).get("labels")) and (
            fields.empty or fields.matches(view(obj) if view is not None else obj))

    return matches, pinned


def warning_headers(res: Resource, warnings: list[str] | None) -> dict[str, str] | None:
    if res.deprecation_warning:
        warnings = [res.deprecation_warning, *(warnings or [])]
    if not warnings:
        return None
    quoted = (w.replace("\\", "\\\\").replace('"', '\\"') for w in warnings)
    return {"Warning": ", ".join(f'299 - "{w}"' for w in quoted)}


def respond_object(request: web.Request, res: Resource, obj: Obj, code: int = 200,
                   warnings: list[str] | None = None) -> web.Response:
    """One object as the client asked: the requested version, or a one-row Table for kubectl get."""
    headers = warning_headers(res, warnings)
    obj = present(res, obj)
    if wants_table(request) and request.method == "GET":
        return json_response(to_table(res, [obj], {"resourceVersion": obj["metadata"].get("resourceVersion", "")},
                                      request.query.get("includeObject", "Metadata")), code, headers)
    return json_response(obj, code, headers)


async def decode_body(ep: Endpoints, request: web.Request, res: Resource, *,
                      check_fields: bool = True) -> tuple[Obj, list[str]]:
    """The request's object, with unknown and duplicate fields handled by fieldValidation."""
    body = await read_body(request)
    obj = decode_object(body, body_media_type(request), res.kind,
                        accept=body_types(custom=res.is_custom, kube_type=res.kube_type, api_version=res.api_version,
                                          kind=res.kind))
    if not isinstance(obj, dict):
        raise st.bad_request("the body of the request must be an object")
    warnings: list[str] = []
    if check_fields:
        json_body = None if request.content_type == PROTOBUF else body
        warnings = ep.fields.check(res, obj, json_body, request.query.get("fieldValidation", ""))
    return obj, warnings
