"""Create and update bodies are read in the media types kube reads: others are 415 with kube's list."""

from __future__ import annotations

import pytest
from aiohttp.test_utils import make_mocked_request

from kcp_apiserver.apimachinery.status import APIError
from kcp_apiserver.endpoints.wire import BUILTIN_BODY_TYPES, CUSTOM_BODY_TYPES, body_media_type, decode_object

BODY = b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}'


@pytest.mark.parametrize(("content_type", "accepted", "listed"), [
    ("text/plain", BUILTIN_BODY_TYPES, "application/json, application/yaml, application/vnd.kubernetes.protobuf"),
    ("application/octet-stream", BUILTIN_BODY_TYPES,
     "application/json, application/yaml, application/vnd.kubernetes.protobuf"),
    ("application/x-yaml", BUILTIN_BODY_TYPES,
     "application/json, application/yaml, application/vnd.kubernetes.protobuf"),
    ("application/vnd.kubernetes.protobuf", CUSTOM_BODY_TYPES, "application/json, application/yaml"),
])
def test_other_media_types_are_415(content_type: str, accepted: tuple[str, ...], listed: str) -> None:
    with pytest.raises(APIError) as caught:
        decode_object(BODY, content_type, "ConfigMap", accept=accepted)
    assert (caught.value.code, caught.value.reason) == (415, "UnsupportedMediaType")
    assert caught.value.message == ("the body of the request was in an unknown format - accepted media types "
                                    f"include: {listed}")


def test_json_and_yaml_with_parameters_are_read() -> None:
    for content_type in ("application/json", "Application/JSON; charset=utf-8", "application/yaml"):
        decoded = decode_object(BODY, content_type, "ConfigMap", accept=BUILTIN_BODY_TYPES)
        assert decoded["metadata"] == {"name": "x"}


def test_a_body_without_content_type_is_json_as_kube_reads_it() -> None:
    bare = make_mocked_request("POST", "/api/v1/namespaces")
    assert bare.content_type == "application/octet-stream"  # aiohttp's default, which kube does not share
    assert body_media_type(bare) == "application/json"
    typed = make_mocked_request("POST", "/", headers={"Content-Type": "text/plain; charset=utf-8"})
    assert body_media_type(typed) == "text/plain"
