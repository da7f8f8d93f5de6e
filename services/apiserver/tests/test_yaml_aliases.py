"""YAML aliases are limited as goyaml (sigs.k8s.io/yaml) limits them: a billion laughs is refused before it
is expanded, with goyaml's words, and documents that alias modestly still decode."""

from __future__ import annotations

import time
import tracemalloc

import pytest

from kcp_apiserver.apimachinery.status import APIError
from kcp_apiserver.endpoints.wire import decode_object


def laughs(levels: int, fanout: int) -> bytes:
    """`a0` is a string; each `aN` a list of `fanout` aliases of `aN-1`; `data.k` holds the last."""
    lines = ["kind: ConfigMap", "a0: &a0 lol"]
    lines += [f"a{n}: &a{n} [{','.join([f'*a{n - 1}'] * fanout)}]" for n in range(1, levels + 1)]
    lines.append(f"data: {{k: *a{levels}}}")
    return "\n".join(lines).encode()


def refusal(body: bytes) -> str:
    with pytest.raises(APIError) as caught:
        decode_object(body, "application/yaml")
    assert (caught.value.code, caught.value.reason) == (400, "BadRequest")
    return caught.value.message


def test_a_billion_laughs_is_refused_fast_and_small() -> None:
    body = laughs(9, 9)  # 387 million strings once expanded
    tracemalloc.start()
    started = time.perf_counter()
    try:
        assert refusal(body) == "yaml: document contains excessive aliasing"
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - started < 10.0  # refused, not expanded (expanding takes minutes)
    assert peak < 5 * 1024 * 1024


def test_the_limit_is_goyamls_ratio_of_aliased_to_decoded_nodes() -> None:
    # goyaml counts every node an alias brings in, aliases within aliases too: with 3 levels of 10, over 99%
    # of the nodes decoded come from aliases
    decoded = decode_object(laughs(2, 10), "application/yaml")
    assert len(decoded["data"]["k"]) == 10 and decoded["data"]["k"][0] == ["lol"] * 10
    assert refusal(laughs(3, 10)) == "yaml: document contains excessive aliasing"
    # the same expansion after enough nodes of the document's own is fine
    padding = "".join(f"p{i}: {i}\n" for i in range(2000)).encode()
    assert len(decode_object(padding + laughs(4, 10), "application/yaml")) == 2000 + 7


def test_an_anchor_that_holds_itself_is_refused_with_goyamls_words() -> None:
    assert refusal(b"a: &x {b: *x}\n") == "yaml: anchor 'x' value contains itself"
    assert refusal(b"a: &loop [1, [2, *loop]]\n") == "yaml: anchor 'loop' value contains itself"


def test_modest_aliases_decode_to_copies() -> None:
    decoded = decode_object(b"base: &b {x: 1}\none: *b\ntwo: [*b, *b]\n", "application/yaml")
    assert decoded == {"base": {"x": 1}, "one": {"x": 1}, "two": [{"x": 1}, {"x": 1}]}
    decoded["one"]["x"] = 2
    assert decoded["two"][0]["x"] == 1
