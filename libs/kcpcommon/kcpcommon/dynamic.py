"""A small dynamic client: any resource, custom resources included, as plain dicts.

Informers, the syncer and the CRD puller handle types they only learn at run
time, so they cannot use kubernetes_asyncio's generated classes. This client
speaks the REST conventions directly over a (logical-cluster-scoped)
`ThrottledApiClient` (`transport.py`), so it shares its connection pool, credentials and
throttling. Every error leaves it as an `errors.APIClientError`.
"""

from __future__ import annotations

import types
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import Any
from urllib.parse import quote, urlsplit

import aiohttp
import orjson

from .errors import APIClientError, APITransportError, error_for_status, translate
from .transport import ThrottledApiClient

Obj = dict[str, Any]

PATCH_CONTENT_TYPES: Mapping[str, str] = types.MappingProxyType({
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",
})

DECODED = (200, 201, 202)  # the answers that carry an object (as kubernetes_asyncio's response_types_map)
WATCH_READ_GRACE = 30.0  # seconds past the server-side watch timeout before we call the connection dead


class DynamicClient:
    """REST verbs on plain dicts over one `ThrottledApiClient` (one logical cluster, or `*`)."""

    def __init__(self, api_client: ThrottledApiClient, *, request_timeout: float = 60.0) -> None:
        self.api_client = api_client
        self.request_timeout = request_timeout
        self._timeout = aiohttp.ClientTimeout(total=request_timeout)

    def resource(self, api_version: str, plural: str, *, namespaced: bool) -> DynamicResource:
        """A handle on one resource type, e.g. `resource("apps/v1", "deployments", namespaced=True)`."""
        return DynamicResource(self, api_version, plural, namespaced=namespaced)

    def below_base(self, server_path: str) -> str:
        """A server-relative path (from the host's root: an OpenAPI v3 index's `serverRelativeURL`, which client-go
        requests as is) as a path below this client's base URL, which may itself hold a path (`/clusters/x`)."""
        base = urlsplit(self.api_client.configuration.host or "").path.rstrip("/")
        return server_path[len(base):] if base and server_path.startswith(base + "/") else server_path

    async def request(self, method: str, path: str, *, query: list[tuple[str, str]] | None = None,
                      body: Any = None, content_type: str = "application/json") -> Any:
        """One request; returns the decoded JSON answer."""
        data = None if body is None else orjson.dumps(body, default=self.api_client.sanitize_for_serialization)
        async with translate():
            response = await self.api_client.send(method, path, query=query or (), body=data, timeout=self._timeout,
                                                  headers={"Accept": "application/json", "Content-Type": content_type})
            async with response:
                answer = await response.read()
        if response.status >= 400:
            raise _refused(response, answer)
        if response.status not in DECODED:
            return None
        try:
            return orjson.loads(answer)
        except orjson.JSONDecodeError:
            return answer.decode("utf-8", errors="replace")

    async def stream(self, path: str, *, query: list[tuple[str, str]],
                     timeout: float | None) -> AsyncGenerator[Obj, None]:  # noqa: ASYNC109 - for aiohttp
        """The JSON lines of a streaming GET (a watch), decoded one by one."""
        async with translate():
            response = await self.api_client.send(
                "GET", path, query=query, headers={"Accept": "application/json"},
                timeout=aiohttp.ClientTimeout(total=timeout, sock_connect=self.request_timeout))
        try:
            if response.status >= 400:
                async with translate():
                    body = await response.read()
                raise _refused(response, body)
            async with translate():
                async for line in _lines(response.content):
                    try:
                        yield orjson.loads(line)
                    except orjson.JSONDecodeError as exc:
                        raise APITransportError(f"malformed watch event: {line[:200]!r}",
                                                reason="MalformedEvent") from exc
        finally:
            response.release()  # back to the pool if the server ended the stream, else the connection is closed


def _refused(response: aiohttp.ClientResponse, body: bytes) -> APIClientError:
    """The error for a refusal, chained (as every error of the tree is) to the library's own."""
    error = error_for_status(response.status, body, response.headers)
    error.__cause__ = aiohttp.ClientResponseError(response.request_info, response.history, status=response.status,
                                                  message=response.reason or "", headers=response.headers)
    return error


async def _lines(content: aiohttp.StreamReader) -> AsyncIterator[bytes]:
    """Split a chunked body into lines, however large (StreamReader.readline caps line length)."""
    pending: list[bytes] = []
    async for chunk in content.iter_any():
        while (end := chunk.find(b"\n")) >= 0:
            pending.append(chunk[:end])
            line, pending, chunk = b"".join(pending), [], chunk[end + 1:]
            if line.strip():
                yield line
        pending.append(chunk)
    rest = b"".join(pending)
    if rest.strip():
        yield rest


class DynamicResource:
    """get/list/create/replace/patch/delete/watch_stream of one resource type."""

    def __init__(self, client: DynamicClient, api_version: str, plural: str, *, namespaced: bool) -> None:
        self.client = client
        self.api_version = api_version
        self.plural = plural
        self.namespaced = namespaced
        self._base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"

    def __repr__(self) -> str:
        return f"DynamicResource({self.api_version!r}, {self.plural!r}, namespaced={self.namespaced})"

    def path(self, *, namespace: str | None = None, name: str | None = None, subresource: str | None = None) -> str:
        """The REST path; a namespaced resource without a namespace means all namespaces."""
        if namespace and not self.namespaced:
            raise ValueError(f"{self.plural} is cluster-scoped: no namespace allowed")
        parts = [self._base]
        if namespace:
            parts += ["namespaces", quote(namespace, safe="")]
        parts.append(self.plural)
        if name:
            parts.append(quote(name, safe=""))
        elif subresource:
            raise ValueError("a subresource needs an object name")
        if subresource:
            parts.append(subresource)
        return "/".join(parts)

    def _object_path(self, name: str, namespace: str | None, subresource: str | None = None) -> str:
        if not name:
            raise ValueError("an object name is required")
        if self.namespaced and not namespace:
            raise ValueError(f"{self.plural} is namespaced: a namespace is required")
        return self.path(namespace=namespace, name=name, subresource=subresource)

    @staticmethod
    def _namespace_of(body: Mapping[str, Any], namespace: str | None) -> str | None:
        return namespace or (body.get("metadata") or {}).get("namespace") or None

    async def get(self, name: str, *, namespace: str | None = None, subresource: str | None = None) -> Obj:
        result: Obj = await self.client.request("GET", self._object_path(name, namespace, subresource))
        return result

    async def list(self, *, namespace: str | None = None, label_selector: str | None = None,
                   field_selector: str | None = None, limit: int | None = None,
                   continue_token: str | None = None, resource_version: str | None = None) -> Obj:
        """One page of the list (the whole list unless `limit`); `metadata.continue` asks for more."""
        query = _query(labelSelector=label_selector, fieldSelector=field_selector, limit=limit,
                       resourceVersion=resource_version)
        query += _query(**{"continue": continue_token})
        result: Obj = await self.client.request("GET", self.path(namespace=namespace), query=query)
        return result

    async def create(self, body: Mapping[str, Any], *, namespace: str | None = None,
                     field_manager: str | None = None, dry_run: bool = False) -> Obj:
        namespace = self._namespace_of(body, namespace)
        if self.namespaced and not namespace:
            raise ValueError(f"{self.plural} is namespaced: a namespace is required")
        result: Obj = await self.client.request(
            "POST", self.path(namespace=namespace), body=body,
            query=_query(fieldManager=field_manager, dryRun="All" if dry_run else None))
        return result

    async def create_in(self, name: str, subresource: str, body: Mapping[str, Any], *,
                        namespace: str | None = None) -> Obj:
        """POST to an object's subresource (a pod's binding or eviction); kube answers with a Status."""
        result: Obj = await self.client.request("POST", self._object_path(name, namespace, subresource), body=body)
        return result

    async def replace(self, body: Mapping[str, Any], *, namespace: str | None = None,
                      subresource: str | None = None, field_manager: str | None = None) -> Obj:
        """PUT the whole object; `metadata.resourceVersion` in it makes a stale write a 409 Conflict."""
        name = (body.get("metadata") or {}).get("name") or ""
        path = self._object_path(name, self._namespace_of(body, namespace), subresource)
        result: Obj = await self.client.request("PUT", path, body=body, query=_query(fieldManager=field_manager))
        return result

    async def patch(self, name: str, patch: Any, *, namespace: str | None = None, patch_type: str = "merge",
                    subresource: str | None = None, field_manager: str | None = None,
                    force: bool | None = None) -> Obj:
        """Patch with `patch_type` merge, json, strategic (built-in kinds only) or apply (server-side apply)."""
        content_type = PATCH_CONTENT_TYPES.get(patch_type)
        if content_type is None:
            raise ValueError(f"unknown patch type {patch_type!r}: one of {', '.join(PATCH_CONTENT_TYPES)}")
        if patch_type == "apply" and not field_manager:
            raise ValueError("server-side apply needs a field_manager")
        query = _query(fieldManager=field_manager, force=None if force is None else str(force).lower())
        result: Obj = await self.client.request("PATCH", self._object_path(name, namespace, subresource),
                                                body=patch, query=query, content_type=content_type)
        return result

    async def delete(self, name: str, *, namespace: str | None = None, propagation_policy: str | None = None,
                     preconditions: Mapping[str, str] | None = None,
                     grace_period_seconds: int | None = None) -> Obj:
        """Delete; answers the object (while finalizers hold it) or a Success Status."""
        options: Obj = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if propagation_policy:
            options["propagationPolicy"] = propagation_policy
        if preconditions:
            options["preconditions"] = dict(preconditions)
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        result: Obj = await self.client.request("DELETE", self._object_path(name, namespace), body=options)
        return result

    async def watch_stream(self, *, namespace: str | None = None, resource_version: str | None = None,
                           timeout_seconds: int | None = None, allow_bookmarks: bool = True,
                           label_selector: str | None = None, field_selector: str | None = None,
                           ) -> AsyncGenerator[Obj, None]:
        """Watch events `{"type", "object"}` (ADDED, MODIFIED, DELETED, BOOKMARK) until the server ends it.

        An ERROR event is raised as its error (410 → `APIGoneError`: the caller relists).
        Close it with `contextlib.aclosing` when leaving early.
        """
        query = _query(watch="true", resourceVersion=resource_version, timeoutSeconds=timeout_seconds,
                       allowWatchBookmarks="true" if allow_bookmarks else None,
                       labelSelector=label_selector, fieldSelector=field_selector)
        timeout = timeout_seconds + WATCH_READ_GRACE if timeout_seconds else None
        async for event in self.client.stream(self.path(namespace=namespace), query=query, timeout=timeout):
            if event.get("type") == "ERROR":
                raise error_for_status(0, event.get("object"))
            yield event


def _query(**params: Any) -> list[tuple[str, str]]:
    return [(k, str(v)) for k, v in params.items() if v is not None and v != ""]
