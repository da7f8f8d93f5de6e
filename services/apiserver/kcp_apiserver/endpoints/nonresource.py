"""Paths that are not resources: health, version, metrics, discovery and OpenAPI.

Each is served in every logical cluster (`/clusters/<name>/version` as `/version`), since
kubectl and helm ask for them under whatever server URL their kubeconfig names.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import orjson
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import RequestInfo
from kcp_apiserver.endpoints import discovery, openapi
from kcp_apiserver.endpoints.wire import json_response, wants_aggregated_discovery
from kcp_apiserver.registry.catalog import Catalog
from kcp_apiserver.registry.resource import Resource
from kcp_apiserver.registry.serviceaccounts import ServiceAccountTokens
from kcpcommon.health import Check, HealthChecks


def version_info(release: str = "1.32", suffix: str = "+kcp") -> dict[str, str]:
    """What /version answers: kube's version.Info for `release` ("1.32" -> gitVersion v1.32.0+kcp)."""
    major, _, minor = release.partition(".")
    return {"major": major, "minor": minor, "gitVersion": f"v{release}.0{suffix}", "gitCommit": "",
            "gitTreeState": "clean", "buildDate": "2026-11-22T00:00:00Z", "goVersion": "python3.11",
            "compiler": "cpython", "platform": "linux/amd64"}


VERSION = version_info()
PROTOBUF_V2 = "application/com.github.proto-openapi.spec.v2"
HEALTH_ENDPOINTS = ("healthz", "livez", "readyz")
STORAGE_CHECK_TIMEOUT = 2.0
OPENID_CONFIGURATION = ".well-known/openid-configuration"
JWKS = "openid/v1/jwks"
JWKS_CONTENT_TYPE = "application/jwk-set+json"
OPENID_CACHE_CONTROL = "public, max-age=3600"  # kube's: the documents change only with the key



class NonResourceHandlers:
    """Serves the non-resource paths of any logical cluster from the catalog and the server's state."""

    def __init__(self, catalog: Catalog, *, metrics: CollectorRegistry, ping_storage: Callable[[], Awaitable[Any]],
                 is_ready: Callable[[], bool], live_checks: Mapping[str, Check] | None = None,
                 service_accounts: ServiceAccountTokens | None = None, jwks_uri: str = "",
                 version: Mapping[str, str] | None = None) -> None:
        self.catalog = catalog
        self.version = dict(version or VERSION)
        self.metrics = metrics
        self.ping_storage = ping_storage
        self.is_ready = is_ready
        self.live_checks = dict(live_checks or {})
        self._openapi_cache: dict[tuple[object, ...], bytes] = {}
        self._health_checks = self._checks()
        # the service-account issuer's OIDC discovery, as kube serves it (to whom RBAC lets read it)
        self._openid: dict[str, tuple[bytes, str]] = {}
        if service_accounts is not None:
            self._openid = {
                OPENID_CONFIGURATION: (orjson.dumps(service_accounts.openid_configuration(jwks_uri)), "application/json"),
                JWKS: (orjson.dumps(service_accounts.jwks()), JWKS_CONTENT_TYPE)}

    async def handle(self, request: web.Request, info: RequestInfo) -> web.StreamResponse:
        if request.method not in ("GET", "HEAD"):
            raise st.method_not_allowed()
        parts = [p for p in info.path.strip("/").split("/") if p]
        if parts and parts[0] in HEALTH_ENDPOINTS and len(parts) <= 2:
            return await self._health(parts[0], parts[1] if len(parts) > 1 else None, "verbose" in request.query)
        if parts == ["version"]:
            return json_response(self.version)
        if parts == ["metrics"]:
            return web.Response(body=generate_latest(self.metrics), headers={"Content-Type": CONTENT_TYPE_LATEST})
        openid = self._openid.get("/".join(parts))
        if openid is not None:
            return web.Response(body=openid[0], headers={"Content-Type": openid[1],
                                                         "Cache-Control": OPENID_CACHE_CONTROL})
        return self._discovery_or_openapi(request, info, parts)

    # -- health -------------------------------------------------------------------------------

    def _checks(self) -> dict[str, HealthChecks]:
        """kube's checks: livez that the process answers (and what the server's config adds, such as the
        embedded etcd's supervisor); healthz and readyz every livez check and also startup and etcd."""
        async def etcd() -> bool:
            try:
                await asyncio.wait_for(self.ping_storage(), STORAGE_CHECK_TIMEOUT)
            except Exception:
                return False
            return True

        live, ready = HealthChecks(), HealthChecks()
        for checks in (live, ready):
            checks.add("ping", lambda: True)
            for name, check in self.live_checks.items():
                checks.add(name, check)
        ready.add("startup", self.is_ready)
        ready.add("etcd", etcd)
        return {"livez": live, "healthz": ready, "readyz": ready}

    async def _health(self, endpoint: str, only: str | None, verbose: bool) -> web.Response:
        checks = self._health_checks[endpoint]
        if only is not None and only not in checks:
            raise st.APIError(404, "NotFound", "the server could not find the requested resource")
        status, text = await checks.render(endpoint, only=only, verbose=verbose)
        return web.Response(status=status, text=text)

    # -- discovery and OpenAPI --------------------------------------------------------------

    def _discovery_or_openapi(self, request: web.Request, info: RequestInfo, parts: list[str]) -> web.Response:
        return self.discovery(request, info, self.catalog.for_cluster(info.cluster))

    def discovery(self, request: web.Request, info: RequestInfo, resources: list[Resource]) -> web.Response:
        """Discovery and OpenAPI of `resources` (a logical cluster's, or what a virtual workspace serves)."""
        if request.method not in ("GET", "HEAD"):
            raise st.method_not_allowed()
        parts = [p for p in info.path.strip("/").split("/") if p]
        aggregated = wants_aggregated_discovery(request)
        if parts == ["api"]:
            if aggregated:
                return self._aggregated(discovery.aggregated(resources, core=True))
            return json_response(discovery.api_versions())
        if parts == ["apis"]:
            if aggregated:
                return self._aggregated(discovery.aggregated(resources, core=False))
            return json_response(discovery.api_group_list(resources))
        groups = discovery.group_versions(resources)
        if len(parts) == 2 and parts[0] == "api" and parts[1] in groups.get("", {}):
            return json_response(discovery.resource_list("", parts[1], groups[""][parts[1]]))
        if len(parts) == 2 and parts[0] == "apis" and parts[1] in groups:
            return json_response(discovery.api_group(parts[1], list(groups[parts[1]])))
        if len(parts) == 3 and parts[0] == "apis" and parts[2] in groups.get(parts[1], {}):
            return json_response(discovery.resource_list(parts[1], parts[2], groups[parts[1]][parts[2]]))
        if parts == ["openapi", "v2"]:
            return self._openapi_v2(request, resources)
        if parts == ["openapi", "v3"]:
            prefix = "" if request.path == info.path else request.path[: -len(info.path)]
            return json_response(openapi.v3_index(resources, prefix))
        if len(parts) > 2 and parts[:2] == ["openapi", "v3"]:
            doc = self._cached(("v3", "/".join(parts[2:]), *resources),
                               lambda: openapi.v3_document(resources, "/".join(parts[2:])))
            if doc is not None:
                return web.Response(body=doc, content_type="application/json",
                                    headers={"Cache-Control": "public, immutable"})
        raise st.APIError(404, "NotFound", "the server could not find the requested resource")

    def _openapi_v2(self, request: web.Request, resources: list[Resource]) -> web.Response:
        accept = request.headers.get("Accept", "")
        if PROTOBUF_V2 in accept:
            from kcp_apiserver.endpoints.openapi_proto import encode_swagger

            body = self._cached(("v2pb", *resources), lambda: None, raw=lambda: encode_swagger(
                openapi.swagger(resources)))
            return web.Response(body=body, content_type="application/com.github.proto-openapi.spec.v2.v1.0+protobuf")
        body = self._cached(("v2", *resources), lambda: openapi.swagger(resources))
        assert body is not None
        return web.Response(body=body, content_type="application/json")

    def _cached(self, key: tuple[object, ...], build: Callable[[], object],
                raw: Callable[[], bytes] | None = None) -> bytes | None:
        """OpenAPI documents are built once per distinct set of resources, not per cluster."""
        if key not in self._openapi_cache:
            if raw is not None:
                self._openapi_cache[key] = raw()
            else:
                doc = build()
                if doc is None:
                    return None
                self._openapi_cache[key] = orjson.dumps(doc)
        return self._openapi_cache[key]

    @staticmethod
    def _aggregated(doc: dict[str, Any]) -> web.Response:
        return web.Response(body=orjson.dumps(doc), headers={"Content-Type": discovery.AGGREGATED_CONTENT_TYPE})
