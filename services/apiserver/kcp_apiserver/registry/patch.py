"""The three patch types kube accepts: JSON patch, JSON merge patch, strategic merge patch.

Every apply function works on deep copies, so the caller's document and patch
are never changed. Status codes follow kube-apiserver: a patch body that does
not decode is 400 BadRequest; a JSON patch that decodes but fails to apply
(missing path, failed `test`) is 422 with kube's generic message.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from kcp_apiserver.apimachinery import gojson
from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.jsonvalues import MAX_DEPTH, json_copy
from kcp_apiserver.registry.typeschema import SchemaNode
from kcpcommon import jsonpatch

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
_KINDS = {JSON_PATCH: "JSON", MERGE_PATCH: "merge", STRATEGIC_MERGE_PATCH: "strategic merge"}
MAX_JSON_PATCH_OPERATIONS = 10000  # kube's limit; more is 413

_PATCH = "$patch"
_RETAIN_KEYS = "$retainKeys"
_SET_ORDER = "$setElementOrder"
_DELETE_FROM = "$deleteFromPrimitiveList"
_DELETED = object()  # what a map patched with `$patch: delete` becomes: its key is removed


# -- decoding ------------------------------------------------------------------------------------

def parse_patch(content_type: str, body: bytes) -> Any:
    """Decode a PATCH body by its media type; unknown types are 415, bad bodies 400."""
    media = content_type.split(";", 1)[0].strip().lower()
    kind = _KINDS.get(media)
    if kind is None:
        raise st.unsupported_media_type(content_type)
    if not body.strip():
        raise st.bad_request(f"the {kind} patch body is empty")
    try:
        value = gojson.loads(body, MAX_DEPTH)
    except ValueError as err:
        raise st.bad_request(f"the {kind} patch is not valid JSON: {err}") from None
    if media == JSON_PATCH:
        if not isinstance(value, list) or not all(isinstance(op, dict) for op in value):
            raise st.bad_request("a JSON patch must be a JSON array of operation objects")
        if len(value) > MAX_JSON_PATCH_OPERATIONS:
            raise st.too_large(f"The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, "
                               f"got {len(value)}")
    elif not isinstance(value, dict):
        raise st.bad_request(f"a {kind} patch must be a JSON object")
    return value


Patcher = Callable[[dict[str, Any]], dict[str, Any]]  # the stored document in, the patched document out


def patcher(content_type: str, body: bytes, schema: SchemaNode | None) -> Patcher:
    """The one place a PATCH's media type picks its algorithm (apply will join here).

    `schema` is the type's schema as strategic merge reads it; without one (custom resources) a
    strategic merge patch is 415, as kube answers."""
    patch_body = parse_patch(content_type, body)
    media = content_type.split(";", 1)[0].strip().lower()
    if media == JSON_PATCH:
        return lambda doc: apply_json_patch(doc, patch_body)
    if media == MERGE_PATCH:
        return lambda doc: apply_merge_patch(doc, patch_body)
    if schema is None:
        raise st.unsupported_media_type(content_type)
    return lambda doc: apply_strategic_merge_patch(doc, patch_body, schema)


# -- RFC 6902 JSON patch -------------------------------------------------------------------------

def apply_json_patch(doc: dict[str, Any], patch_body: Any) -> dict[str, Any]:
    """Apply an RFC 6902 patch to a copy of doc (kcpcommon.jsonpatch), its failures worded as kube's."""
    if not isinstance(patch_body, list):
        raise st.bad_request("a JSON patch must be a JSON array of operation objects")
    try:
        result = jsonpatch.apply_json_patch(doc, patch_body)
    except jsonpatch.JSONPatchError as err:
        raise _rejected(str(err), err.path) from None
    if not isinstance(result, dict):
        raise _rejected("the patched document is not a JSON object")
    return result


def _rejected(why: str, path: Any = "") -> st.APIError:
    """kube's 422 for a JSON patch that does not apply; the reason rides along as a cause."""
    cause = st.Cause("FieldValueInvalid", why, path if isinstance(path, str) else "")
    return st.APIError(422, "Invalid", "the server rejected our request due to an error in our request",
                       {"causes": [cause.to_dict()]})


# -- RFC 7386 JSON merge patch -------------------------------------------------------------------

def apply_merge_patch(doc: dict[str, Any], patch: Any) -> dict[str, Any]:
    """Apply an RFC 7386 merge patch to a copy of doc: null deletes, objects recurse, the rest replaces."""
    if not isinstance(patch, dict):
        raise st.bad_request("a merge patch must be a JSON object")
    return _merge(json_copy(doc), patch)


def _merge(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = target if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _merge(result.get(key), value)
    return result


# -- strategic merge patch -----------------------------------------------------------------------

def apply_strategic_merge_patch(doc: dict[str, Any], patch: Any, schema: SchemaNode | None = None) -> dict[str, Any]:
    """Apply a strategic merge patch to a copy of doc, guided by the root type's schema.

    The schema's patch metadata decides: lists whose field says `merge` merge
    (by merge key, or as a set for scalars), all other lists are replaced;
    maps merge and null deletes; a `replace` field is replaced whole.
    The directives `$patch`, `$retainKeys`, `$setElementOrder/<list>` and
    `$deleteFromPrimitiveList/<list>` are applied and never kept.
    """
    if not isinstance(patch, dict):
        raise st.bad_request("a strategic merge patch must be a JSON object")
    start = json_copy(doc) if isinstance(doc, dict) else {}
    result = _smp_map(start, copy.deepcopy(patch), schema)
    return {} if result is _DELETED else result


def _field(schema: SchemaNode | None, name: str) -> SchemaNode | None:
    return schema.field(name) if schema is not None else None


def _items(schema: SchemaNode | None) -> SchemaNode | None:
    return schema.items() if schema is not None else None


def _strategy(schema: SchemaNode | None, name: str) -> bool:
    """Whether the field holding this value has patch strategy `name` (merge, replace, retainKeys)."""
    return schema is not None and name in schema.patch_strategies


def _merge_key(schema: SchemaNode | None) -> str | None:
    return schema.patch_merge_key if schema is not None else None


def _smp_map(original: dict[str, Any], patch: dict[str, Any], schema: SchemaNode | None) -> Any:
    """Merge patch into original in place (both are private copies); may return _DELETED."""
    if _PATCH in patch:
        directive = patch.pop(_PATCH)
        if directive == "replace":
            return _smp_map({}, patch, schema)  # the patch, cleaned of nested directives and nulls
        if directive == "delete":
            return _DELETED
        raise st.bad_request(f"unknown patch type {directive!r} in map {patch}")
    _apply_retain_keys(original, patch)
    _apply_element_orders(original, patch, schema)
    deletions: list[tuple[str, Any]] = []
    for key, value in patch.items():
        if key.startswith(_DELETE_FROM):
            deletions.append((_directive_field(key, _DELETE_FROM), value))
            continue
        if value is None:
            original.pop(key, None)
            continue
        field = _field(schema, key)
        current = original.get(key)
        if isinstance(value, dict):
            base = current if isinstance(current, dict) and not _strategy(field, "replace") else {}
            merged = _smp_map(base, value, field)
            if merged is _DELETED:
                original.pop(key, None)
            else:
                original[key] = merged
        elif isinstance(value, list):
            original[key] = _smp_list(current if isinstance(current, list) else None, value, field)
        else:
            original[key] = value
    for field_name, remove in deletions:
        current = original.get(field_name)
        if not isinstance(remove, list):
            raise st.bad_request(f"{_DELETE_FROM}/{field_name} must be a list")
        if isinstance(current, list):
            gone = {_ident(v, None) for v in remove}
            original[field_name] = [v for v in current if _ident(v, None) not in gone]
    return original


def _smp_list(current: list[Any] | None, patch: list[Any], field: SchemaNode | None) -> list[Any]:
    """A list field: merged when its strategy says merge, otherwise replaced by the (cleaned) patch."""
    items = _items(field)
    if not _strategy(field, "merge"):
        return _fresh_list(patch, items)
    current = current or []
    if not current and not patch:
        return current
    elements = current + patch
    if all(isinstance(e, dict) for e in elements):
        return _merge_map_list(current, patch, _merge_key(field), items)
    if any(isinstance(e, (dict, list)) for e in elements):
        raise st.bad_request("a merging list must hold only objects or only scalars")
    seen: set[Any] = set()
    merged = []
    for value in elements:
        ident = _ident(value, None)
        if ident not in seen:
            seen.add(ident)
            merged.append(value)
    return _ordered(merged, patch, current, None)


def _merge_map_list(current: list[Any], patch: list[Any], key: str | None,
                    items: SchemaNode | None) -> list[Any]:
    """Merge a list of objects by merge key: update or append, `$patch: delete|replace` elements."""
    if not key:
        raise st.bad_request("cannot merge a list of objects without a patch merge key")
    plain: list[dict[str, Any]] = []
    replace = False
    gone: set[Any] = set()
    for element in patch:
        directive = element.get(_PATCH)
        if directive is None:
            plain.append(element)
        elif directive == "delete":
            gone.add(_ident_by_key(element, key))
        elif directive == "replace":
            replace = True
        else:
            raise st.bad_request(f"unknown patch type {directive!r} in list element {element}")
    if replace:
        return _fresh_list(plain, items)
    result = [e for e in current if _ident(e, key) not in gone] if gone else list(current)
    server_order = list(result)
    positions = _positions(result, key)  # by identity, not a scan per element: a patch list may be 100k long
    for element in plain:
        wanted = _ident_by_key(element, key)
        at = positions.get(wanted)
        if at is None:
            fresh = _fresh_list([element], items)
            if fresh:
                positions[wanted] = len(result)
                result.extend(fresh)
        else:
            result[at] = _smp_map(result[at], element, items)
    return _ordered(result, plain, server_order, key)


def _ident_by_key(element: dict[str, Any], key: str) -> Any:
    """The identity of a patch element, which must carry the merge key."""
    if key not in element:
        raise st.bad_request(f"map: {element} does not contain declared merge key: {key}")
    return _ident(element, key)


def _fresh_list(values: list[Any], items: SchemaNode | None) -> list[Any]:
    """Patch values with nothing to merge into: directives applied, nulls dropped."""
    out: list[Any] = []
    for value in values:
        if isinstance(value, dict):
            value = _smp_map({}, value, items)
        elif isinstance(value, list):
            value = _smp_list(None, value, items)
        if value is not _DELETED:
            out.append(value)
    return out


def _apply_retain_keys(original: dict[str, Any], patch: dict[str, Any]) -> None:
    """`$retainKeys: [...]` clears every key of original not listed (kubectl sends it for retainKeys fields)."""
    if _RETAIN_KEYS not in patch:
        return
    keep = patch.pop(_RETAIN_KEYS)
    if not isinstance(keep, list) or not all(isinstance(k, str) for k in keep):
        raise st.bad_request("invalid patch format of retainKeys: must be a list of field names")
    for key, value in patch.items():
        if value is not None and not key.startswith("$") and key not in keep:
            raise st.bad_request(f'invalid patch format of retainKeys: "{key}" is patched but not retained')
    for key in [k for k in original if k not in keep]:
        del original[key]


def _apply_element_orders(original: dict[str, Any], patch: dict[str, Any], schema: SchemaNode | None) -> None:
    """`$setElementOrder/<list>`: merge that list now, then order it as the directive says.

    Listed items take the directive's order; server-only items keep their
    relative order and sit before any listed item that followed them before.
    """
    for directive in [k for k in patch if k.startswith(_SET_ORDER)]:
        order = patch.pop(directive)
        name = _directive_field(directive, _SET_ORDER)
        if not isinstance(order, list):
            raise st.bad_request(f"{directive} must be a list")
        field = _field(schema, name)
        raw_current = original.get(name)
        current: list[Any] | None = raw_current if isinstance(raw_current, list) else None
        raw_patch = patch.get(name)
        patch_list: list[Any] | None = None
        if isinstance(raw_patch, list):
            patch_list = raw_patch
            del patch[name]
        if current is None and patch_list is None:
            continue
        key = _merge_key(field)
        if key is None and any(isinstance(v, dict) for v in order):
            raise st.bad_request(f"{directive} lists objects but {name} has no patch merge key")
        _check_order(patch_list or [], order, key, directive)
        if patch_list is not None:
            merged = _smp_list(current, patch_list, field)
        elif current is not None:
            merged = current
        else:  # ruled out above
            continue
        original[name] = _ordered(merged, order, current or [], key)


def _check_order(patch_list: list[Any], order: list[Any], key: str | None, directive: str) -> None:
    """The patch list's items (deletions aside) must appear in the directive, in the same order."""
    wanted = [_ident(v, key) for v in patch_list if not (isinstance(v, dict) and _PATCH in v)]
    remaining = iter(_ident(v, key) for v in order)
    if not all(any(w == o for o in remaining) for w in wanted):
        raise st.bad_request(f"the order in the patch list {patch_list} doesn't match the {directive} list {order}")


def _ordered(merged: list[Any], patch_order: list[Any], server_order: list[Any], key: str | None) -> list[Any]:
    """kube's order for a merged list.

    Items named in patch_order follow it; the others (server-only) keep their
    order from server_order. The two runs are then interleaved: a server-only
    item goes first only when both it and the next patch item were on the
    server and it came earlier there.
    """
    wanted = _positions(patch_order, key)
    server = _positions(server_order, key)
    pairs = [(_ident(v, key), v) for v in merged]
    ours = sorted((p for p in pairs if p[0] in wanted), key=lambda p: wanted[p[0]])
    theirs = sorted((p for p in pairs if p[0] not in wanted), key=lambda p: server.get(p[0], len(server)))
    out: list[Any] = []
    i = j = 0
    while i < len(theirs) and j < len(ours):
        left, right = server.get(theirs[i][0]), server.get(ours[j][0])
        if left is not None and right is not None and left < right:
            out.append(theirs[i][1])
            i += 1
        else:
            out.append(ours[j][1])
            j += 1
    return out + [v for _, v in theirs[i:]] + [v for _, v in ours[j:]]


def _positions(values: list[Any], key: str | None) -> dict[Any, int]:
    positions: dict[Any, int] = {}
    for index, value in enumerate(values):
        positions.setdefault(_ident(value, key), index)
    return positions


_MISSING = ("missing",)


def _ident(value: Any, key: str | None) -> Any:
    """A hashable identity: the merge key's value for objects, the value itself for scalars."""
    if key is not None:
        value = value.get(key, _MISSING) if isinstance(value, dict) else _MISSING
        if value is _MISSING:
            return _MISSING
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, (dict, list)):
        return ("json", json.dumps(value, sort_keys=True))
    return ("value", value)


def _directive_field(key: str, prefix: str) -> str:
    head, _, name = key.partition("/")
    if head != prefix or not name:
        raise st.bad_request(f'invalid patch directive "{key}": expected "{prefix}/<field>"')
    return name
