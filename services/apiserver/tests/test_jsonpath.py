"""jsonpath: kube's JSONPath as printer columns and `kubectl wait --for=jsonpath` use it."""

from __future__ import annotations

from typing import Any

import pytest

from kcp_apiserver.apimachinery.jsonpath import compile_jsonpath

OBJ: dict[str, Any] = {
    "apiVersion": "apps.example.com/v1",
    "metadata": {"name": "web", "labels": {"app": "web", "app.kubernetes.io/name": "frontend"}},
    "spec": {"replicas": 3, "paused": False,
             "containers": [{"name": "a", "image": "nginx:1", "ports": [{"containerPort": 80}]},
                            {"name": "b", "image": "busybox", "ports": [{"containerPort": 8080}]}]},
    "status": {"conditions": [{"type": "Ready", "status": "True", "count": 2},
                              {"type": "Progressing", "status": "False", "count": 5}]},
    "items": [10, 20, 30, 40],
}


@pytest.mark.parametrize("expr, expected", [
    (".spec.replicas", [3]),
    ("{.spec.replicas}", [3]),
    ("{ .spec.replicas }", [3]),
    ("$.spec.replicas", [3]),
    (".spec.paused", [False]),
    (".metadata.labels.app", ["web"]),
    (r".metadata.labels.app\.kubernetes\.io/name", ["frontend"]),
    (".metadata.labels['app.kubernetes.io/name']", ["frontend"]),
    ('.metadata["name"]', ["web"]),
    (".status.conditions[?(@.type==\"Ready\")].status", ["True"]),
    (".status.conditions[?(@.type=='Progressing')].status", ["False"]),
    (".status.conditions[?(@.type != 'Ready')].type", ["Progressing"]),
    (".status.conditions[?(@.count > 3)].type", ["Progressing"]),
    (".status.conditions[?(@.count <= 2)].type", ["Ready"]),
    (".status.conditions[?(@.missing)].type", []),
    (".spec.containers[?(@.image)].name", ["a", "b"]),
    (".spec.containers[*].image", ["nginx:1", "busybox"]),
    (".spec.containers[*].ports[*].containerPort", [80, 8080]),
    (".spec.containers[0].name", ["a"]),
    (".items[0]", [10]),
    (".items[-1]", [40]),
    (".items[1:3]", [20, 30]),
    (".items[:2]", [10, 20]),
    (".items[::2]", [10, 30]),
    (".items[0,3]", [10, 40]),
    (".metadata.labels['app','missing']", ["web"]),
    ("..containerPort", [80, 8080]),
    ("..image", ["nginx:1", "busybox"]),
    (".metadata.labels.*", ["web", "frontend"]),
    (".missing", []),
    (".missing.deeper", []),
    (".spec.replicas.deeper", []),
    (".items[9]", []),  # kube fails the evaluation: no value
    (".spec.replicas[0]", []),
    (".spec[?(@.x)]", []),
])
def test_find(expr: str, expected: list[Any]) -> None:
    assert compile_jsonpath(expr).find(OBJ) == expected


def test_find_returns_whole_values() -> None:
    assert compile_jsonpath(".status.conditions[0]").find(OBJ) == [OBJ["status"]["conditions"][0]]
    assert compile_jsonpath("$").find(OBJ) == [OBJ]


def test_filter_compares_numbers_across_int_and_float() -> None:
    assert compile_jsonpath(".l[?(@.v == 2)].n").find({"l": [{"v": 2.0, "n": "x"}, {"v": 3, "n": "y"}]}) == ["x"]


def test_filter_against_the_root() -> None:
    obj = {"want": "b", "l": [{"n": "a"}, {"n": "b"}]}
    assert compile_jsonpath(".l[?(@.n == $.want)].n").find(obj) == ["b"]


def test_compile_once_find_many() -> None:
    path = compile_jsonpath("{.status.phase}")
    assert path.find({"status": {"phase": "Running"}}) == ["Running"]
    assert path.find({"status": {}}) == []
    assert path.find({}) == []


@pytest.mark.parametrize("expr", [
    "", "{}", "spec.replicas", "{.spec", ".spec}", "{.a}{.b}", ".a[", ".a[x]", ".a[?(@.b==1)",
    ".a[?(@.b=~'x')]", ".a[?(@.b==)]", ".a['unterminated]", ".a[1:2:x]",
])
def test_invalid_expressions_raise_value_error(expr: str) -> None:
    with pytest.raises(ValueError):
        compile_jsonpath(expr)


def nested(depth: int) -> dict[str, Any]:
    root: dict[str, Any] = {}
    current = root
    for _ in range(depth):
        current["a"] = {}
        current = current["a"]
    return root


def test_recursive_descent_still_finds_every_match_in_ordinary_objects() -> None:
    assert compile_jsonpath("{..a..a}").find(nested(5)) != []
    assert len(compile_jsonpath("{..a}").find(nested(240))) == 240


def test_expressions_that_multiply_values_stop_at_a_budget_proportional_to_the_object() -> None:
    """`..a..a..a` over 240 nested maps selects 2.3 million values (`..a..a..a..a`: minutes); the budget
    fails the evaluation instead, as kube's failed evaluations do: no result."""
    assert compile_jsonpath("{..a..a..a}").find(nested(240)) == []
    assert compile_jsonpath("{.a.a.a}").find(nested(240)) == [nested(237)]
