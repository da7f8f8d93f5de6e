"""A structural schema compiled into a tree of nodes that validate a custom resource's values.

Validation is k8s.io/kube-openapi's SchemaValidator as ValidateCustomResource turns its result into
field errors, plus the two extra passes the custom resource strategy runs (schemaobjectmeta.Validate for
x-kubernetes-embedded-resource, structurallisttype.ValidateListSetsAndMaps for list types). A node's
checks are closures selected per JSON kind, so a request only walks the object: values whose node has
nothing but a type to check never cost a call. The nodes also carry what pruning and defaulting read.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from kcp_apiserver.apiextensions.embeddedresource import embedded_resource_errors
from kcp_apiserver.apiextensions.goregexp import go_regexp
from kcp_apiserver.apiextensions.stringformats import FORMATS
from kcp_apiserver.apiextensions.valueerrors import (
    TOO_LONG,
    Check,
    MapKey,
    Obj,
    Path,
    ValidationErrors,
    composite_error,
    duplicate_value,
    field_path,
    go_json,
    go_number,
    go_quote,
    invalid_value,
    openapi_path,
    render_value,
    required_value,
    too_many_items,
    type_invalid,
)
from kcp_apiserver.apimachinery.status import Cause

META_FIELDS = frozenset(("apiVersion", "kind", "metadata"))
_MISSING = object()

_JSON_KIND = {str: ("string", ""), int: ("integer", "int64"), float: ("number", "float64"),
              bool: ("boolean", ""), list: ("array", ""), dict: ("object", "")}
_PY_TYPES = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
             "array": (list,), "object": (dict,)}
_KINDS = (str, int, float, bool, list, dict)


def _json_int(f: float) -> bool:
    """swag.IsFloat64AJSONInteger: a float that is a whole number within JSON's safe integer range."""
    return math.isfinite(f) and abs(f) <= 2 ** 53 - 1 and f == math.floor(f)


def _near_int(f: float) -> bool:
    """IsFloat64AJSONInteger for multipleOf: whole within a relative error of 1e-9."""
    if not math.isfinite(f) or abs(f) > 2 ** 53 - 1:
        return False
    g = float(round(f))
    return f == g or abs(f - g) / (abs(f) + abs(g)) < 1e-9


def _type_problem(value: Any, types: tuple[str, ...], fmt: str) -> tuple[str, str] | None:
    """kube-openapi's typeValidator, quirks included: (expected, actual) when the type is wrong."""
    sch, data_fmt = _JSON_KIND[type(value)]
    float_int = sch == "number" and "integer" in types and _json_int(value)
    int_float = sch == "integer" and "number" in types
    strlike = type(value) in (str, list)
    if fmt and not strlike and not (sch in types or data_fmt == fmt or float_int or int_float):
        return fmt, data_fmt
    if fmt and strlike and "number" not in types and "integer" not in types:
        return None
    if not (sch in types or float_int or int_float):
        return ",".join(types), sch
    return None


def _enum_equal(data: Any, e: Any) -> bool:
    """reflect.DeepEqual after converting the value to the enum value's Go type, as kube-openapi does."""
    te, td = type(e), type(data)
    if te is int or te is float:
        if td is not int and td is not float:
            return False
        if te is int and td is float:
            return math.isfinite(data) and int(data) == e  # Go truncates float64 -> int64
        return data == e
    if te is bool or te is str:
        return td is te and data == e
    return td is te and go_json(data) == go_json(e)


class CompiledNode:
    """One compiled schema node.

    `validate(value, path, ctx)` does kube-openapi's checks (plus, on structural nodes, the list-type and
    embedded-resource ones); `fast` holds the Python types for which it has nothing to do, so callers
    skip the call. The other attributes drive pruning and defaulting.
    """

    __slots__ = (
        "additional",
        "additional_allows",
        "allows_any",
        "deep_default_props",
        "default",
        "default_is_scalar",
        "default_props",
        "defaults_below",
        "embedded",
        "fast",
        "has_default",
        "items",
        "nullable",
        "preserve",
        "prop_items",
        "props",
        "validate",
    )

    additional: CompiledNode | None  # additionalProperties as a schema
    additional_allows: bool  # additionalProperties is not false
    allows_any: bool  # additionalProperties is true
    deep_default_props: tuple[tuple[str, CompiledNode], ...]  # properties with a default at or below them
    default: Any
    default_is_scalar: bool
    default_props: tuple[tuple[str, CompiledNode], ...]  # properties with a default of their own
    defaults_below: bool
    embedded: bool
    fast: frozenset[type]
    has_default: bool
    items: CompiledNode | None
    nullable: bool
    preserve: bool
    prop_items: tuple[tuple[str, CompiledNode], ...]  # properties validated here (the root's meta fields left out)
    props: dict[str, CompiledNode]
    validate: Check

    def copy_default(self) -> Any:
        return self.default if self.default_is_scalar else _copy_json(self.default)


def _copy_json(v: Any) -> Any:
    t = type(v)
    if t is dict:
        return {k: _copy_json(x) for k, x in v.items()}
    if t is list:
        return [_copy_json(x) for x in v]
    return v


def compile_node(s: Any, structural: bool, root: bool = False, depth: int = 0) -> CompiledNode:
    """Compile one schema node; `structural` is false inside allOf/anyOf/oneOf/not (value validations)."""
    if not isinstance(s, dict):
        s = {}
    if depth > 200:
        raise ValueError("schema nesting is too deep")
    node = CompiledNode()
    node.nullable = s.get("nullable") is True
    node.preserve = s.get("x-kubernetes-preserve-unknown-fields") is True
    node.embedded = root or s.get("x-kubernetes-embedded-resource") is True
    node.has_default = "default" in s and s["default"] is not None
    node.default = s.get("default")
    node.default_is_scalar = type(node.default) not in (dict, list)

    props_raw = s.get("properties") if isinstance(s.get("properties"), dict) else {}
    node.props = {k: compile_node(v, structural, False, depth + 1) for k, v in props_raw.items()}
    node.prop_items = tuple((k, n) for k, n in node.props.items() if not (root and k in META_FIELDS))
    extra = s.get("additionalProperties")
    node.additional = compile_node(extra, structural, False, depth + 1) if isinstance(extra, dict) else None
    node.additional_allows = extra is not False
    node.allows_any = extra is True
    node.items = compile_node(s["items"], structural, False, depth + 1) if isinstance(s.get("items"), dict) else None

    node.default_props = tuple((k, n) for k, n in node.props.items() if n.has_default)
    node.deep_default_props = tuple((k, n) for k, n in node.props.items() if n.defaults_below)
    node.defaults_below = bool(node.has_default or node.deep_default_props
                               or (node.additional is not None and node.additional.defaults_below)
                               or (node.items is not None and node.items.defaults_below))
    _build_validator(node, s, structural, root, depth)
    return node


def _build_validator(node: CompiledNode, s: Obj, structural: bool, root: bool, depth: int) -> None:
    """node.validate: kube-openapi's validators in its order, only those that apply to the value's kind."""
    raw_fmt = s.get("format")
    fmt = raw_fmt if isinstance(raw_fmt, str) else ""
    fmt = fmt if fmt.replace("-", "") in FORMATS else ""  # kube strips every other format
    if s.get("x-kubernetes-int-or-string") is True:
        types: tuple[str, ...] = ("integer", "string")
    else:
        types = (s["type"],) if isinstance(s.get("type"), str) and s["type"] else ()
    typed = bool(types or fmt)
    ok_types = frozenset(t for name in types for t in _PY_TYPES.get(name, ())) if typed else frozenset(_KINDS)
    if "integer" in types and "number" not in types:
        ok_types -= {float}  # whole floats are integers: checked on the slow path
    null_error = bool(types) and "null" not in types and not node.nullable
    type_name = ",".join(types)

    common = [c for c in (_junctor_check(s, depth),) if c is not None]
    enum_check = _enum_check(s)
    tail = [enum_check] if enum_check is not None else []
    number = [c for c in (_number_check(s),) if c is not None]
    slice_ = [c for c in (_slice_check(node, s, structural),) if c is not None]
    object_ = [c for c in (_object_check(node, s, structural, root),) if c is not None]
    by_kind: dict[type, tuple[Check, ...]] = {
        str: tuple(common + _string_checks(s, fmt) + tail),
        int: tuple(common + number + tail),
        float: tuple(common + number + tail),
        bool: tuple(common + tail),
        list: tuple(common + slice_ + tail),
        dict: tuple(common + tail + object_),
    }
    node.fast = frozenset(t for t in ok_types if not by_kind[t])

    def validate(value: Any, path: Path, ctx: ValidationErrors) -> None:
        if value is None:  # kube-openapi runs only the type and enum checks on null
            if null_error:
                ctx.errs.append(type_invalid(openapi_path(path), type_name, "null"))
            if enum_check is not None:
                enum_check(value, path, ctx)
            return
        t = type(value)
        if t not in ok_types:
            problem = _type_problem(value, types, fmt)
            if problem is not None:
                ctx.errs.append(type_invalid(openapi_path(path), problem[0], problem[1]))
        for check in by_kind.get(t, ()):
            check(value, path, ctx)

    node.validate = validate


def _string_checks(s: Obj, fmt: str) -> list[Check]:
    checks: list[Check] = []
    max_len, min_len = _int_or_none(s.get("maxLength")), _int_or_none(s.get("minLength"))
    pattern_text = s.get("pattern") if isinstance(s.get("pattern"), str) and s.get("pattern") else None
    pattern = go_regexp(pattern_text) if pattern_text else None
    if max_len is not None or min_len is not None or pattern is not None:
        def string_check(value: str, path: Path, ctx: ValidationErrors) -> None:
            # kube-openapi reports only the first of these
            if max_len is not None and len(value) > max_len:
                ctx.errs.append(Cause("FieldValueTooLong", TOO_LONG.format(max_len), openapi_path(path)))
            elif min_len is not None and len(value) < min_len:
                name = openapi_path(path)
                ctx.errs.append(invalid_value(name, value, f"{name} in body should be at least {min_len} chars long"))
            elif pattern is not None and not pattern.search(value):
                name = openapi_path(path)
                ctx.errs.append(invalid_value(name, value, f"{name} in body should match '{pattern_text}'"))
        checks.append(string_check)
    if fmt:
        valid = FORMATS[fmt.replace("-", "")]

        def format_check(value: str, path: Path, ctx: ValidationErrors) -> None:
            if not valid(value):
                name = openapi_path(path)
                ctx.errs.append(Cause("FieldValueTypeInvalid", f"Invalid value: {go_quote(value)}: {name} in body "
                                                               f"must be of type {fmt}: {go_quote(value)}", name))
        checks.append(format_check)
    return checks


def _int_or_none(v: Any) -> int | None:
    return int(v) if type(v) in (int, float) else None


def _number(v: Any) -> float | None:
    return v if type(v) in (int, float) else None


def _number_check(s: Obj) -> Check | None:
    maximum, minimum, multiple = _number(s.get("maximum")), _number(s.get("minimum")), _number(s.get("multipleOf"))
    ex_max, ex_min = s.get("exclusiveMaximum") is True, s.get("exclusiveMinimum") is True
    if maximum is None and minimum is None and multiple is None:
        return None

    def number_check(value: float, path: Path, ctx: ValidationErrors) -> None:
        is_int = type(value) is int  # kube compares ints against the bound truncated to an integer
        if multiple is not None and multiple > 0:
            factor = int(multiple) if is_int and int(multiple) != 0 else float(multiple)
            if type(factor) is int:
                bad = value % factor != 0
            else:
                bad = not _near_int(value / multiple if multiple >= 1 else (1 / multiple) * value)
            if bad:
                name = openapi_path(path)
                ctx.errs.append(invalid_value(name, value, f"{name} in body should be a multiple of {go_number(factor)}"))
        if minimum is not None:
            bound = int(minimum) if is_int else float(minimum)
            if value < bound or (ex_min and value <= bound):
                name = openapi_path(path)
                word = "greater than" if ex_min else "greater than or equal to"
                ctx.errs.append(invalid_value(name, value, f"{name} in body should be {word} {go_number(bound)}"))
        if maximum is not None:
            bound = int(maximum) if is_int else float(maximum)
            if value > bound or (ex_max and value >= bound):
                name = openapi_path(path)
                word = "less than" if ex_max else "less than or equal to"
                ctx.errs.append(invalid_value(name, value, f"{name} in body should be {word} {go_number(bound)}"))

    return number_check


def _enum_check(s: Obj) -> Check | None:
    enum = s.get("enum")
    if not isinstance(enum, list) or not enum:
        return None
    supported = ", ".join(go_quote(e if type(e) is str else go_json(e)) for e in enum)
    strings = frozenset(e for e in enum if type(e) is str)
    others = [e for e in enum if type(e) is not str and e is not None]

    def enum_check(value: Any, path: Path, ctx: ValidationErrors) -> None:
        if type(value) is str:
            if value in strings:
                return
        elif value is not None and any(_enum_equal(value, e) for e in others):
            return
        ctx.errs.append(Cause("FieldValueNotSupported", f"Unsupported value: {render_value(value)}: supported values: "
                                                        f"{supported}", openapi_path(path)))

    return enum_check


def _errors_of(node: CompiledNode, value: Any, path: Path) -> list[Cause]:
    ctx = ValidationErrors()
    node.validate(value, path, ctx)
    return ctx.errs


def _junctor_check(s: Obj, depth: int) -> Check | None:
    """allOf / anyOf / oneOf / not: value validations, reported with kube-openapi's composite messages."""
    def subs(key: str) -> list[CompiledNode]:
        raw = s.get(key)
        return [compile_node(x, False, False, depth + 1) for x in raw] if isinstance(raw, list) else []

    any_of, one_of, all_of = subs("anyOf"), subs("oneOf"), subs("allOf")
    not_ = compile_node(s["not"], False, False, depth + 1) if isinstance(s.get("not"), dict) else None
    if not (any_of or one_of or all_of or not_):
        return None

    def junctors(value: Any, path: Path, ctx: ValidationErrors) -> None:
        if any_of:
            best: list[Cause] | None = None
            for sub in any_of:
                errs = _errors_of(sub, value, path)
                if not errs:
                    break
                best = errs if best is None else best
            else:
                ctx.errs.append(composite_error(f"{go_quote(openapi_path(path))} must validate at least one schema (anyOf)"))
                ctx.errs.extend(best or ())
        if one_of:
            valid, best = 0, None
            for sub in one_of:
                errs = _errors_of(sub, value, path)
                if not errs:
                    valid += 1
                elif best is None:
                    best = errs
            if valid != 1:
                found = "Found none valid" if valid == 0 else f"Found {valid} valid alternatives"
                ctx.errs.append(composite_error(f"{go_quote(openapi_path(path))} must validate one and only one schema "
                                           f"(oneOf). {found}"))
                if valid == 0:
                    ctx.errs.extend(best or ())
        if all_of:
            valid = 0
            for sub in all_of:
                errs = _errors_of(sub, value, path)
                valid += not errs
                ctx.errs.extend(errs)
            if valid != len(all_of):
                more = ". None validated" if valid == 0 else ""
                ctx.errs.append(composite_error(f"{go_quote(openapi_path(path))} must validate all the schemas (allOf){more}"))
        if not_ is not None and not _errors_of(not_, value, path):
            ctx.errs.append(composite_error(f"{go_quote(openapi_path(path))} must not validate the schema (not)"))

    return junctors


def _set_key(x: Any) -> Any:
    """Go's map-key identity for list-set items: scalars by type and value, compounds by their JSON."""
    t = type(x)
    return ("json", go_json(x)) if t is dict or t is list else (t, x)


class _Unspecified:
    pass


_UNSPECIFIED = _Unspecified()


def _duplicate_indices(keys: list[Any]) -> list[int]:
    """The index of each value's second appearance (kube reports each duplicated value once)."""
    seen: dict[Any, int] = {}
    out = []
    for i, k in enumerate(keys):
        key = _set_key(k) if k is not _UNSPECIFIED else _UNSPECIFIED
        count = seen.get(key, 0)
        if count == 1:
            out.append(i)
        seen[key] = count + 1
    return out


def _list_type_check(s: Obj) -> Callable[[list[Any], Path, ValidationErrors], None] | None:
    list_type = s.get("x-kubernetes-list-type")
    if list_type == "set":
        def check_set(value: list[Any], path: Path, ctx: ValidationErrors) -> None:
            if len(value) > 1:
                for i in _duplicate_indices(value):
                    ctx.lists.append(duplicate_value(field_path((path, i)), value[i]))
        return check_set
    if list_type != "map":
        return None
    keys = [k for k in s.get("x-kubernetes-list-map-keys") or [] if isinstance(k, str)]

    def check_map(value: list[Any], path: Path, ctx: ValidationErrors) -> None:
        for i, x in enumerate(value):
            if x is not None and type(x) is not dict:
                ctx.lists.append(invalid_value(field_path((path, i)), x, "must be an object for an array of list-type map"))
                return
        if len(value) <= 1:
            return
        if len(keys) == 1:
            key = keys[0]
            found = [_UNSPECIFIED if x is None else x.get(key, _UNSPECIFIED) for x in value]
            for i in _duplicate_indices(found):
                ctx.lists.append(duplicate_value(field_path((path, i)), {} if found[i] is _UNSPECIFIED else {key: found[i]}))
            return
        tuples = [{} if x is None else {k: x[k] for k in keys if k in x} for x in value]
        for i in _duplicate_indices(tuples):
            ctx.lists.append(duplicate_value(field_path((path, i)), tuples[i]))

    return check_map


def _slice_check(node: CompiledNode, s: Obj, structural: bool) -> Check | None:
    items = node.items
    min_items, max_items = _int_or_none(s.get("minItems")), _int_or_none(s.get("maxItems"))
    unique = s.get("uniqueItems") is True
    list_check = _list_type_check(s) if structural else None
    if items is None and min_items is None and max_items is None and not unique and list_check is None:
        return None
    fast = items.fast if items is not None else frozenset()

    def slice_check(value: list[Any], path: Path, ctx: ValidationErrors) -> None:
        if items is not None:
            for i, item in enumerate(value):
                if type(item) not in fast:
                    items.validate(item, (path, i), ctx)
        size = len(value)
        if min_items is not None and size < min_items:
            name = openapi_path(path)
            ctx.errs.append(invalid_value(name, size, f"{name} in body should have at least {min_items} items"))
        if max_items is not None and size > max_items:
            ctx.errs.append(too_many_items(openapi_path(path), size, max_items))
        if unique and _duplicate_indices(value):
            name = openapi_path(path)
            ctx.errs.append(invalid_value(name, "", f"{name} in body shouldn't contain duplicates"))
        if list_check is not None:
            list_check(value, path, ctx)

    return slice_check


def _object_check(node: CompiledNode, s: Obj, structural: bool, root: bool) -> Check | None:
    min_props, max_props = _int_or_none(s.get("minProperties")), _int_or_none(s.get("maxProperties"))
    required = tuple(k for k in s.get("required") or () if isinstance(k, str))
    props, prop_items, extra = node.props, node.prop_items, node.additional
    forbid_extra = not node.additional_allows
    embedded = structural and node.embedded and not root
    root_meta = _root_metadata_check(node) if root else None
    if not (min_props is not None or max_props is not None or required or prop_items or extra is not None
            or forbid_extra or embedded or root_meta):
        return None

    def descend(value: Obj, path: Path, ctx: ValidationErrors) -> None:
        if forbid_extra:
            for k in value:
                if k not in props and not (root and k in META_FIELDS):
                    name = openapi_path(path)
                    ctx.errs.append(invalid_value(name, k, f"{name}.{k} in body is a forbidden property"))
        elif extra is not None:
            fast = extra.fast
            for k, v in value.items():
                if k not in props and type(v) not in fast and not (root and k in META_FIELDS):
                    extra.validate(v, (path, MapKey(k)), ctx)
        for k, child in prop_items:
            v = value.get(k, _MISSING)
            if v is not _MISSING and type(v) not in child.fast:
                child.validate(v, (path, k), ctx)
        for k in required:
            if k not in value:
                ctx.errs.append(required_value(openapi_path((path, k))))
        if root_meta is not None:
            root_meta(value, ctx)

    def object_check(value: Obj, path: Path, ctx: ValidationErrors) -> None:
        if embedded:
            ctx.meta.extend(embedded_resource_errors(value, field_path(path)))
        size = len(value)
        problem = None
        if min_props is not None and size < min_props:
            name = openapi_path(path)
            problem = invalid_value(name, size, f"{name} in body should have at least {min_props} properties")
        elif max_props is not None and size > max_props:
            problem = too_many_items(openapi_path(path), size, max_props)
        if problem is None:
            descend(value, path, ctx)
            return
        # kube-openapi stops here; the list-type and embedded-resource passes still look inside
        ctx.errs.append(problem)
        saved, ctx.errs = ctx.errs, []
        descend(value, path, ctx)
        ctx.errs = saved

    return object_check


def _root_metadata_check(node: CompiledNode) -> Callable[[Obj, ValidationErrors], None] | None:
    """Schemas may restrict metadata.name and metadata.generateName; the rest of metadata is the server's."""
    meta = node.props.get("metadata")
    checks = [(k, meta.props[k]) for k in ("name", "generateName") if meta is not None and k in meta.props]
    if not checks:
        return None

    def root_meta(value: Obj, ctx: ValidationErrors) -> None:
        metadata = value.get("metadata")
        if type(metadata) is dict:
            for k, child in checks:
                if k in metadata and type(metadata[k]) not in child.fast:
                    child.validate(metadata[k], ((None, "metadata"), k), ctx)

    return root_meta
