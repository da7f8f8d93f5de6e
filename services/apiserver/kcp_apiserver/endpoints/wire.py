"""Bodies in and out: JSON/YAML decoding, JSON responses, Accept negotiation."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import orjson
import yaml
from aiohttp import hdrs, web

from kcp_apiserver.apimachinery import gojson
from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.jsonvalues import MAX_DEPTH, exceeds_depth
from kcp_apiserver.apimachinery.request import RequestContext

MAX_BODY = 3 * 1024 * 1024
TABLE_MEDIA = "as=table"
PROTOBUF = "application/vnd.kubernetes.protobuf"
JSON = "application/json"
YAML = "application/yaml"
BUILTIN_BODY_TYPES = (JSON, YAML, PROTOBUF)  # what kube decodes a built-in type's body from
CUSTOM_BODY_TYPES = (JSON, YAML)  # custom resources have no protobuf
_LENIENT_YAML_TYPES = (YAML, "application/x-yaml", "text/yaml")
TOO_DEEP = "couldn't get version/kind; json parse error: exceeded max depth"  # kube's, at our MAX_DEPTH


def json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(body=dumps(data), status=status, content_type="application/json", headers=headers)


def dumps(data: Any) -> bytes:
    """JSON bytes of a response. Objects stored before the depth limit may still nest deeper than orjson
    encodes (254): the standard library encodes those, so a list holding one still answers."""
    try:
        return orjson.dumps(data)
    except TypeError as exc:
        if "Recursion limit" not in str(exc):
            raise
    import json

    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()


HUMAN_AGENTS = ("curl", "Wget", "Mozilla/5.0")  # kube indents for these (browsers and command-line tools)
_GO_TRUE, _GO_FALSE = {"1", "t", "T", "TRUE", "true", "True"}, {"0", "f", "F", "FALSE", "false", "False"}


def wants_pretty(request: web.Request) -> bool:
    """kube's isPrettyPrint: `?pretty=` as Go's ParseBool reads it (unreadable: no), else a human's User-Agent."""
    value = request.query.get("pretty", "")
    if value:
        return value in _GO_TRUE
    return request.headers.get("User-Agent", "").startswith(HUMAN_AGENTS)


def indented(body: bytes) -> bytes:
    """JSON indented as Go's json.Indent with two spaces (what kube answers a pretty request with)."""
    return orjson.dumps(orjson.loads(body), option=orjson.OPT_INDENT_2)


def raw_json_response(body: bytes, status: int = 200) -> web.Response:
    return web.Response(body=body, status=status, content_type="application/json")


def wants_table(request: web.Request) -> bool:
    accept = request.headers.get("Accept", "").lower().replace(" ", "")
    return TABLE_MEDIA in accept and "g=meta.k8s.io" in accept


def wants_aggregated_discovery(request: web.Request) -> bool:
    accept = request.headers.get("Accept", "").replace(" ", "")
    return "as=APIGroupDiscoveryList" in accept and "g=apidiscovery.k8s.io" in accept


def body_media_type(request: web.Request) -> str:
    """The body's media type as kube reads it: no Content-Type means JSON (aiohttp would say octet-stream)."""
    return request.headers.get(hdrs.CONTENT_TYPE, "").split(";")[0].strip().lower() or JSON


def body_types(*, custom: bool, kube_type: bool, api_version: str, kind: str) -> tuple[str, ...]:
    """The media types a type's bodies decode from.

    Custom resources have no protobuf. kube's own types imported as CRDs take it where kubeproto has the
    kind's message (kubectl's typed commands send it: `kubectl create deployment`); a kind it has not is
    JSON and YAML only, and kcp's OpenAPI names only JSON, so nothing promises protobuf for it."""
    if not custom:
        return BUILTIN_BODY_TYPES
    if kube_type:
        from kcp_apiserver.apimachinery import kubeproto

        if kubeproto.message_for(api_version, kind, decoding=True) is not None:
            return BUILTIN_BODY_TYPES
    return CUSTOM_BODY_TYPES


def unsupported_body(accepted: Sequence[str]) -> st.APIError:
    return st.APIError(415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted "
                                                    f"media types include: {', '.join(accepted)}")


async def read_body(request: web.Request) -> bytes:
    if request.content_length is not None and request.content_length > MAX_BODY:
        raise st.too_large()
    body = bytearray()
    async for chunk in request.content.iter_chunked(65536):
        body.extend(chunk)
        if len(body) > MAX_BODY:
            raise st.too_large()
    return bytes(body)


class _YAMLLoader(yaml.SafeLoader):
    """YAML as sigs.k8s.io/yaml reads it into JSON: timestamps stay strings."""

    anchor_names: dict[int, str]

    def compose_document(self) -> yaml.Node | None:
        """PyYAML's, keeping which node each anchor named (for goyaml's "anchor 'x' value contains itself")."""
        self.get_event()
        node = self.compose_node(None, None)  # type: ignore[arg-type]  # the root has no parent
        self.get_event()
        self.anchor_names = {id(anchored): name for name, anchored in self.anchors.items()}
        self.anchors = {}
        return node


_YAMLLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}

# PyYAML's problem texts as Go's yaml.v2 (libyaml's wording) prints them
_YAML_PROBLEMS = (
    (re.compile(r"mapping values are not allowed here"), "mapping values are not allowed in this context"),
    (re.compile(r"found character .* that cannot start any token"), "found character that cannot start any token"),
    (re.compile(r"expected ',' or '\]', but got"), "did not find expected ',' or ']'"),
    (re.compile(r"expected ',' or '\}', but got"), "did not find expected ',' or '}'"),
    (re.compile(r"found unknown escape character"), "found unknown escape character"),
    (re.compile(r"expected the node content, but found"), "did not find expected node content"),
    (re.compile(r"found undefined alias '(.*)'"), r"unknown anchor '\1' referenced"),
)


def _yaml_message(exc: yaml.YAMLError) -> str:
    """A YAML error as Go's yaml.v2 words it: `yaml: line N: <problem>`, with its line numbering."""
    problem = str(getattr(exc, "problem", "") or "") or "unknown problem parsing YAML content"
    context = str(getattr(exc, "context", "") or "")
    if problem.startswith("expected <block end>, but found"):
        problem = "did not find expected '-' indicator" if "collection" in context else "did not find expected key"
    else:
        for pattern, go_text in _YAML_PROBLEMS:
            if pattern.search(problem):
                problem = pattern.sub(go_text, problem) if pattern.groups else go_text
                break
    problem_mark, context_mark = getattr(exc, "problem_mark", None), getattr(exc, "context_mark", None)
    line = 0
    if problem_mark is not None and problem_mark.line:
        line = problem_mark.line + (1 if isinstance(exc, yaml.scanner.ScannerError) else 0)
    elif context_mark is not None and context_mark.line:
        line = context_mark.line
    return f"yaml: line {line}: {problem}" if line else f"yaml: {problem}"


class _Unreadable(Exception):
    """A body that does not decode; the caller words kube's error around it."""


# goyaml (which sigs.k8s.io/yaml decodes with) stops a document whose decoding is mostly alias expansion:
# past 100 aliased and 1000 decoded nodes, the aliased share may be 99% up to 400,000 nodes, falling to 10% at
# 4,000,000 (its fix for CVE-2019-11253, the billion laughs)
_ALIAS_RATIO_LOW, _ALIAS_RATIO_HIGH = 400_000, 4_000_000


def _allowed_alias_ratio(decodes: int) -> float:
    if decodes <= _ALIAS_RATIO_LOW:
        return 0.99
    if decodes >= _ALIAS_RATIO_HIGH:
        return 0.10
    return 0.99 - 0.89 * (decodes - _ALIAS_RATIO_LOW) / (_ALIAS_RATIO_HIGH - _ALIAS_RATIO_LOW)


def _check_aliasing(root: yaml.Node, anchor_names: dict[int, str]) -> None:
    """Count the nodes goyaml would decode, aliases expanded, without expanding them; refuse as goyaml does.

    In document order a node's first occurrence is its definition and any later one an alias. Within one
    alias expansion both counts grow together, so checking once after it decides as checking at every node."""
    sizes: dict[int, int] = {}  # a defined node's decode count, its aliases expanded
    decodes = aliased = 0

    def count(nodes: int, by_alias: int) -> None:
        nonlocal decodes, aliased
        decodes += nodes
        aliased += by_alias
        if aliased > 100 and decodes > 1000 and aliased / decodes > _allowed_alias_ratio(decodes):
            raise _Unreadable("yaml: document contains excessive aliasing")

    def children(node: yaml.Node) -> list[yaml.Node]:
        if isinstance(node, yaml.MappingNode):
            return [part for pair in node.value for part in pair]
        return list(node.value) if isinstance(node, yaml.SequenceNode) else []

    def walk(node: yaml.Node) -> int:
        count(1, 0)
        sizes[id(node)] = 0  # defined, not yet complete
        size = 1
        for child in children(node):
            known = sizes.get(id(child))
            if known is None:
                size += walk(child)
                continue
            if known == 0:
                raise _Unreadable(f"yaml: anchor '{anchor_names.get(id(child), '')}' value contains itself")
            count(1, 0)
            count(known, known)
            size += 1 + known
        sizes[id(node)] = size
        return size

    count(1, 0)  # the document
    walk(root)


def _load_yaml(body: bytes) -> Any:
    """The first YAML document, refused before it is built if its aliases expand too far."""
    loader = _YAMLLoader(body)
    try:
        if not loader.check_node():
            return None
        node = loader.get_node()
        if node is None:
            return None
        _check_aliasing(node, loader.anchor_names)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _string_keys(value: Any) -> Any:
    """YAML allows any key; JSON, and so kube after converting, has strings (`true`, `1`); strings as Go reads them."""
    if isinstance(value, dict):
        return {gojson.go_string(k if isinstance(k, str) else orjson.dumps(k).decode()
                                 if isinstance(k, (bool, int, float)) else str(k)): _string_keys(v)
                for k, v in value.items()}
    if isinstance(value, list):
        return [_string_keys(v) for v in value]
    if isinstance(value, str):
        return gojson.go_string(value)
    return value


def summarize_body(body: bytes, limit: int = 30) -> str:
    """kube's summary of an unreadable body: JSON-looking text as is, anything else in hex, cut at 30 bytes."""
    if not body:
        return "<empty>"
    head = body[:limit]
    text = head.decode(errors="replace") if body[:1] == b"{" else head.hex()
    return text + " ..." if len(body) > limit else text


def _type_meta_error(obj: Any) -> str | None:
    """What kube's meta factory says reading apiVersion and kind from a decoded body, if it fails."""
    if obj is None:
        return None  # null reads as an empty object
    if not isinstance(obj, dict):
        return f"couldn't get version/kind; json parse error: json: cannot unmarshal {gojson.type_name(obj)} " \
               f"into Go value of type {gojson.TYPE_META_STRUCT}"
    for field in obj:
        if field in ("apiVersion", "kind") and not isinstance(obj[field], (str, type(None))):
            return f"couldn't get version/kind; json parse error: json: cannot unmarshal " \
                   f"{gojson.type_name(obj[field])} into Go struct field .{field} of type string"
    api_version = obj.get("apiVersion")
    if isinstance(api_version, str) and api_version.count("/") > 1:
        return f"unexpected GroupVersion string: {api_version}"
    return None


def _load_json(body: bytes) -> Any:
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        syntax = gojson.syntax_error(body)
        if syntax is not None:
            raise _Unreadable(f"couldn't get version/kind; json parse error: {syntax}") from None
    else:
        if exceeds_depth(obj):
            raise _Unreadable(TOO_DEEP)
        return obj
    # valid for Go, not for orjson (invalid UTF-8, lone surrogates, huge numbers): read it as Go does
    try:
        return gojson.loads(body.decode(errors="replace"), MAX_DEPTH)
    except gojson.DecodeError as exc:
        raise _Unreadable(f"couldn't get version/kind; json parse error: {exc}") from None


def decode_object(body: bytes, content_type: str, kind: str = "", *, accept: Sequence[str] | None = None) -> Any:
    """Decode a JSON, YAML or protobuf request body.

    With `kind` (create and update), an unreadable body is kube's 400 `the object provided is
    unrecognized (must be of type <kind>): <Go's error> (<body summary>)`, a null body an empty object.
    With `accept`, a body in another media type is kube's 415; without, it is read as JSON.
    """
    ctype = content_type.split(";")[0].strip().lower()
    if accept is not None and ctype not in accept:
        raise unsupported_body(accept)
    if ctype == PROTOBUF:
        from kcp_apiserver.apimachinery import kubeproto

        return kubeproto.decode(body)
    if not kind and not body.strip():
        raise st.bad_request("the body of the request was empty")
    try:
        if ctype in _LENIENT_YAML_TYPES:
            try:
                obj = _load_yaml(body)
            except yaml.YAMLError as exc:
                raise _Unreadable(_yaml_message(exc)) from exc
            except RecursionError:
                raise _Unreadable(TOO_DEEP) from None
            if exceeds_depth(obj):
                raise _Unreadable(TOO_DEEP)
            obj = _string_keys(obj)
        else:
            obj = _load_json(body)
        problem = _type_meta_error(obj) if kind else None
        if problem is not None:
            raise _Unreadable(problem)
    except _Unreadable as exc:
        if not kind:
            raise st.bad_request(str(exc)) from None
        raise st.bad_request(f"the object provided is unrecognized (must be of type {kind}): {exc} "
                             f"({summarize_body(body)})") from None
    return {} if obj is None and kind else obj


def duplicate_fields(body: bytes, parsed: Any = None) -> list[str]:
    """Names of fields repeated in one JSON object (orjson keeps the last silently).

    Fast path: if re-encoding the parsed object gives the body back byte for
    byte, no field was dropped, so there were no duplicates.
    """
    import json

    if parsed is not None and dumps(parsed) == body.strip():
        return []

    duplicates: list[str] = []

    def hook(pairs: list[tuple[Any, Any]]) -> dict[Any, Any]:
        seen: dict[Any, Any] = {}
        for key, value in pairs:
            if key in seen:
                duplicates.append(str(key))
            seen[key] = value
        return seen

    try:
        json.loads(body, object_pairs_hook=hook)
    except (ValueError, RecursionError):
        return []
    return duplicates


CONTEXT: web.RequestKey[RequestContext] = web.RequestKey("kcp_request_context", RequestContext)


def request_context(request: web.Request) -> RequestContext:
    """The context the filters built for this request."""
    return request[CONTEXT]
