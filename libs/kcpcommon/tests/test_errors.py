"""Errors at the client boundary: one tree, chosen by the server's Status, raised from the library error."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio import client as kube
from kubernetes_asyncio.client.exceptions import ApiException

from kcp_process import KcpServer, free_port
from kcpcommon import errors
from kcpcommon.clients import ClientFactory

pytestmark = pytest.mark.usefixtures("no_leaked_tasks")


class FakeResponse:
    """What kubernetes_asyncio's ApiException reads from an HTTP answer."""

    def __init__(self, status: int, body: dict[str, Any] | str, headers: dict[str, str] | None = None) -> None:
        self.status = status
        self.reason = "reason phrase"
        self.data = body if isinstance(body, str) else json.dumps(body)
        self._headers = headers or {}

    def getheaders(self) -> dict[str, str]:
        return self._headers


def status(code: int, reason: str, message: str = "m", **extra: Any) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code, "reason": reason,
            "message": message, **extra}


@pytest.mark.parametrize(("code", "reason", "expected"), [
    (400, "BadRequest", errors.APIBadRequestError),
    (401, "Unauthorized", errors.APIUnauthorizedError),
    (403, "Forbidden", errors.APIForbiddenError),
    (404, "NotFound", errors.APINotFoundError),
    (405, "MethodNotAllowed", errors.APIMethodNotAllowedError),
    (409, "Conflict", errors.APIConflictError),
    (409, "AlreadyExists", errors.APIAlreadyExistsError),
    (410, "Expired", errors.APIGoneError),
    (410, "Gone", errors.APIGoneError),
    (422, "Invalid", errors.APIInvalidError),
    (429, "TooManyRequests", errors.APITooManyRequestsError),
    (500, "InternalError", errors.APIInternalError),
    (500, "ServerTimeout", errors.APIServerTimeoutError),
    (503, "ServiceUnavailable", errors.APIServiceUnavailableError),
    (504, "Timeout", errors.APIServerTimeoutError),
    (418, "Teapot", errors.APIClientError),
])
def test_the_status_code_and_reason_choose_the_error_class(code: int, reason: str, expected: type) -> None:
    error = errors.error_from(ApiException(http_resp=FakeResponse(code, status(code, reason, "why"))))
    assert type(error) is expected
    assert (error.status, error.reason, error.message) == (code, reason, "why")


def test_already_exists_is_not_a_conflict_to_retry() -> None:
    error = errors.error_from(ApiException(http_resp=FakeResponse(409, status(409, "AlreadyExists"))))
    assert not isinstance(error, errors.APIConflictError)


def test_too_many_requests_carries_retry_after_from_the_header() -> None:
    response = FakeResponse(429, status(429, "TooManyRequests"), {"Retry-After": "7"})
    error = errors.error_from(ApiException(http_resp=response))
    assert isinstance(error, errors.APITooManyRequestsError)
    assert error.retry_after == 7.0


def test_retry_after_falls_back_to_the_status_details() -> None:
    body = status(500, "ServerTimeout", details={"retryAfterSeconds": 2})
    assert errors.error_from(ApiException(http_resp=FakeResponse(500, body))).retry_after == 2.0


def test_a_body_that_is_not_a_status_still_gives_the_code_and_text() -> None:
    error = errors.error_from(ApiException(http_resp=FakeResponse(502, "bad gateway from a proxy")))
    assert (error.status, error.message) == (502, "bad gateway from a proxy")


def test_a_watch_error_event_becomes_its_error() -> None:
    error = errors.error_for_status(0, status(410, "Expired", "too old resource version: 1 (5)"))
    assert isinstance(error, errors.APIGoneError) and error.status == 410


def test_connection_failures_are_transport_errors() -> None:
    error = errors.error_from(aiohttp.ServerDisconnectedError())
    assert isinstance(error, errors.APITransportError) and error.status == 0
    assert isinstance(errors.error_from(TimeoutError()), errors.APITransportError)


async def test_translate_raises_from_the_library_error() -> None:
    original = ApiException(http_resp=FakeResponse(404, status(404, "NotFound")))
    with pytest.raises(errors.APINotFoundError) as caught:
        async with errors.translate():
            raise original
    assert caught.value.__cause__ is original


async def test_translate_works_as_a_decorator_and_leaves_other_errors_alone() -> None:
    @errors.translate()
    async def fails(exc: BaseException) -> None:
        raise exc

    with pytest.raises(errors.APIServiceUnavailableError):
        await fails(ApiException(http_resp=FakeResponse(503, status(503, "ServiceUnavailable"))))
    with pytest.raises(KeyError):
        await fails(KeyError("a bug of ours, not the API's"))


# --- against the real server ---

def configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}


async def test_missing_object_is_not_found(clients: ClientFactory, namespace: str) -> None:
    api = clients.dynamic("admin").resource("v1", "configmaps", namespaced=True)
    with pytest.raises(errors.APINotFoundError) as caught:
        await api.get("nope", namespace=namespace)
    assert caught.value.details.get("name") == "nope"
    assert isinstance(caught.value.__cause__, aiohttp.ClientResponseError)  # the dynamic client speaks aiohttp


async def test_creating_a_taken_name_is_already_exists(clients: ClientFactory, namespace: str) -> None:
    api = clients.dynamic("admin").resource("v1", "configmaps", namespaced=True)
    await api.create(configmap("twice"), namespace=namespace)
    with pytest.raises(errors.APIAlreadyExistsError):
        await api.create(configmap("twice"), namespace=namespace)


async def test_writing_a_stale_resource_version_is_a_conflict(clients: ClientFactory, namespace: str) -> None:
    api = clients.dynamic("admin").resource("v1", "configmaps", namespaced=True)
    stale = await api.create(configmap("stale"), namespace=namespace)
    await api.replace({**stale, "data": {"first": "write"}}, namespace=namespace)
    with pytest.raises(errors.APIConflictError) as caught:
        await api.replace({**stale, "data": {"second": "write"}}, namespace=namespace)
    assert caught.value.reason == "Conflict"


async def test_an_invalid_object_is_invalid_with_its_causes(clients: ClientFactory, namespace: str) -> None:
    api = clients.dynamic("admin").resource("v1", "configmaps", namespaced=True)
    with pytest.raises(errors.APIInvalidError) as caught:
        await api.create(configmap("Not_A_DNS_Name"), namespace=namespace)
    assert caught.value.status == 422
    assert any(c.get("field") == "metadata.name" for c in caught.value.details.get("causes", []))


async def test_a_wrong_token_is_unauthorized(kcp: KcpServer, kubeconfig_text: Any) -> None:
    async with await ClientFactory.load(kubeconfig_text(kcp, token="wrong"), component="t", version="0") as bad:
        with pytest.raises(errors.APIUnauthorizedError):
            await bad.dynamic("admin").resource("v1", "namespaces", namespaced=False).list()


async def test_writing_across_all_clusters_is_method_not_allowed(clients: ClientFactory) -> None:
    api = clients.dynamic("*").resource("v1", "configmaps", namespaced=True)
    with pytest.raises(errors.APIMethodNotAllowedError):
        await api.create(configmap("everywhere"), namespace="default")


async def test_typed_api_calls_translate_inside_translate(clients: ClientFactory, namespace: str) -> None:
    core = kube.CoreV1Api(clients.api_client("admin"))
    with pytest.raises(errors.APINotFoundError):
        async with errors.translate():
            await core.read_namespaced_config_map("nope", namespace)


async def test_an_unreachable_server_is_a_transport_error(kcp: KcpServer, kubeconfig_text: Any) -> None:
    async with await ClientFactory.load(kubeconfig_text(kcp, port=free_port()), component="t", version="0") as dead:
        with pytest.raises(errors.APITransportError) as caught:
            await dead.dynamic("admin").resource("v1", "namespaces", namespaced=False).list()
    assert isinstance(caught.value.__cause__, aiohttp.ClientError)
