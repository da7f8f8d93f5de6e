"""Object metadata validation with kube-apiserver's rules and messages.

Clients (kubectl, client-go, controller tests) compare error text and cause fields, so the
wording, field paths and reasons here follow k8s.io/apimachinery as served by kube v1.32.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Mapping
from typing import Any

from kcp_apiserver.apimachinery.status import Cause

# -- kube's message builders ----------------------------------------------------------------

QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_VALUE_FMT = f"({QUALIFIED_NAME_FMT})?"
DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + r"(\." + DNS1123_LABEL_FMT + ")*"

QUALIFIED_NAME_MAX = 63
LABEL_VALUE_MAX = 63
DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024

# Kube >= 1.32 (PR #128553) words this "may not be more than %d bytes"; the older text is kept
# because callers were promised it. Change this one constant to switch.
ANNOTATIONS_TOO_LONG = f"Too long: must have at most {TOTAL_ANNOTATION_SIZE_LIMIT} bytes"

_QUALIFIED_NAME_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
                       "an alphanumeric character")
_LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
                    "'.', and must start and end with an alphanumeric character")
_DNS1123_LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
                      "must start and end with an alphanumeric character")
_DNS1123_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
                          "or '.', and must start and end with an alphanumeric character")

_QUALIFIED_NAME_RE = re.compile(QUALIFIED_NAME_FMT)
_LABEL_VALUE_RE = re.compile(LABEL_VALUE_FMT)
_DNS1123_LABEL_RE = re.compile(DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN_RE = re.compile(DNS1123_SUBDOMAIN_FMT)

NAME_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # no vowels: generated names never spell words
NAME_SUFFIX_LENGTH = 5
MAX_GENERATED_BASE = 63 - NAME_SUFFIX_LENGTH

FINALIZER_ORPHAN = "orphan"
FINALIZER_FOREGROUND = "foregroundDeletion"
BANNED_OWNERS = {("", "v1", "Event")}


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """kube's RegexError, including its double space before each "or"."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def _byte_len(value: str) -> int:
    """Go measures strings in bytes, so limits apply to the UTF-8 length."""
    return len(value.encode("utf-8", "surrogatepass"))


def _full(pattern: re.Pattern[str], value: str) -> bool:
    return pattern.fullmatch(value) is not None


# -- string validators: each returns kube's list of problems, empty when valid -------------------

def validate_dns_label(value: str) -> list[str]:
    errs = []
    if _byte_len(value) > DNS1123_LABEL_MAX:
        errs.append(max_len_error(DNS1123_LABEL_MAX))
    if not _full(_DNS1123_LABEL_RE, value):
        errs.append(regex_error(_DNS1123_LABEL_MSG, DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def validate_dns_subdomain(value: str) -> list[str]:
    errs = []
    if _byte_len(value) > DNS1123_SUBDOMAIN_MAX:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX))
    if not _full(_DNS1123_SUBDOMAIN_RE, value):
        errs.append(regex_error(_DNS1123_SUBDOMAIN_MSG, DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def validate_qualified_name(value: str) -> list[str]:
    """Label keys, annotation keys and finalizers: `[dns-subdomain/]name`, name at most 63."""
    parts = value.split("/")
    errs: list[str] = []
    if len(parts) > 2:
        return ["a qualified name " + regex_error(_QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, "MyName", "my.name",
                                                  "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs += ["prefix part " + msg for msg in validate_dns_subdomain(prefix)]
    if not name:
        errs.append("name part must be non-empty")
    elif _byte_len(name) > QUALIFIED_NAME_MAX:
        errs.append("name part " + max_len_error(QUALIFIED_NAME_MAX))
    if not _full(_QUALIFIED_NAME_RE, name):
        errs.append("name part " + regex_error(_QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, "MyName", "my.name",
                                               "123-abc"))
    return errs


def validate_label_value(value: str) -> list[str]:
    errs = []
    if _byte_len(value) > LABEL_VALUE_MAX:
        errs.append(max_len_error(LABEL_VALUE_MAX))
    if not _full(_LABEL_VALUE_RE, value):
        errs.append(regex_error(_LABEL_VALUE_MSG, LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def validate_path_segment_name(name: str, *, prefix: bool = False) -> list[str]:
    """Names that only have to survive as one URL path segment (RBAC objects, and every name)."""
    if not prefix and name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{bad}'" for bad in ("/", "%") if bad in name]


def _mask_trailing_dash(name: str) -> str:
    """kube's maskTrailingDash, quirk included: a generateName may end in '-', the suffix follows."""
    if len(name) > 1 and name.endswith("-"):
        return name[:-2] + "a"
    return name


def validate_name(name: str, *, dns_subdomain: bool = True, prefix: bool = False) -> list[str]:
    """Object names: a DNS subdomain (most kinds) or, with dns_subdomain=False, a DNS label.

    prefix=True checks a generateName, which may end in '-' because a suffix is appended.
    """
    if prefix:
        name = _mask_trailing_dash(name)
    return validate_dns_subdomain(name) if dns_subdomain else validate_dns_label(name)


def validate_namespace_name(name: str, *, prefix: bool = False) -> list[str]:
    return validate_name(name, dns_subdomain=False, prefix=prefix)


# -- field.Error rendering --------------------------------------------------------------------

def _go_quote(value: str) -> str:
    """Go's %q for the common cases: escape quotes, backslashes and control characters."""
    out = []
    for ch in value:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch in "\a\b\f\n\r\t\v":
            out.append({"\a": r"\a", "\b": r"\b", "\f": r"\f", "\n": r"\n", "\r": r"\r", "\t": r"\t",
                        "\v": r"\v"}[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def render_value(value: Any) -> str:
    """A bad value as field.Error prints it: strings quoted, scalars bare, the rest as JSON."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return _go_quote(value)
    if isinstance(value, (int, float)):
        return str(value)
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def go_format(value: Any) -> str:
    """An unstructured value as Go's fmt `%v` prints it (maps with sorted keys, slices space-separated)."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_format(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_format(v) for v in value) + "]"
    if isinstance(value, float):
        return format(value, "g").replace("e+0", "e+").replace("e-0", "e-")
    return str(value)


def invalid(field: str, value: Any, detail: str) -> Cause:
    return Cause("FieldValueInvalid", f"Invalid value: {render_value(value)}: {detail}", field)


def required(field: str, detail: str = "") -> Cause:
    return Cause("FieldValueRequired", "Required value" + (f": {detail}" if detail else ""), field)


def forbidden(field: str, detail: str) -> Cause:
    return Cause("FieldValueForbidden", f"Forbidden: {detail}", field)


def type_invalid(field: str, value: Any, expected: str) -> Cause:
    """Kube's decoder would reject these outright; here they surface as one cause each."""
    return Cause("FieldValueTypeInvalid", f"Invalid value: {render_value(value)}: must be {expected}", field)


# -- metadata ----------------------------------------------------------------------------------

def _string_map(value: Any, field: str) -> tuple[dict[str, str], list[Cause]]:
    if value is None:
        return {}, []
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        return {}, [type_invalid(field, value, "a map of string keys to string values")]
    return value, []


def validate_labels(labels: Any, field: str = "metadata.labels") -> list[Cause]:
    """Every problem is reported at the map's path, as kube's ValidateLabels does."""
    checked, causes = _string_map(labels, field)
    for key, value in checked.items():
        causes += [invalid(field, key, msg) for msg in validate_qualified_name(key)]
        causes += [invalid(field, value, msg) for msg in validate_label_value(value)]
    return causes


def validate_annotations(annotations: Any, field: str = "metadata.annotations") -> list[Cause]:
    """Keys are qualified names compared case-insensitively; the whole map is capped at 256 KiB."""
    checked, causes = _string_map(annotations, field)
    for key in checked:
        causes += [invalid(field, key, msg) for msg in validate_qualified_name(key.lower())]
    if sum(_byte_len(k) + _byte_len(v) for k, v in checked.items()) > TOTAL_ANNOTATION_SIZE_LIMIT:
        causes.append(Cause("FieldValueTooLong", ANNOTATIONS_TOO_LONG, field))
    return causes


def validate_finalizers(finalizers: Any, field: str = "metadata.finalizers") -> list[Cause]:
    if finalizers is None:
        return []
    if not isinstance(finalizers, list) or not all(isinstance(f, str) for f in finalizers):
        return [type_invalid(field, finalizers, "a list of strings")]
    causes = [invalid(field, f, msg) for f in finalizers for msg in validate_qualified_name(f)]
    if FINALIZER_ORPHAN in finalizers and FINALIZER_FOREGROUND in finalizers:
        causes.append(invalid(field, finalizers,
                              f"finalizer {FINALIZER_ORPHAN} and {FINALIZER_FOREGROUND} cannot be both set"))
    return causes


def _group_version(api_version: str) -> tuple[str, str]:
    """schema.ParseGroupVersion; a malformed value yields no version, as kube treats it."""
    if api_version in ("", "/"):
        return "", ""
    if api_version.count("/") == 0:
        return "", api_version
    if api_version.count("/") == 1:
        group, version = api_version.split("/")
        return group, version
    return "", ""


def _owner_json(ref: dict[str, Any]) -> dict[str, Any]:
    """An OwnerReference in Go's field order, for the bad value of a banned-owner error."""
    out = {k: ref.get(k, "") for k in ("apiVersion", "kind", "name", "uid")}
    out.update({k: ref[k] for k in ("controller", "blockOwnerDeletion") if ref.get(k) is not None})
    return out


def validate_owner_references(refs: Any, field: str = "metadata.ownerReferences") -> list[Cause]:
    """Required fields are reported without an index (`metadata.ownerReferences.uid`), like kube."""
    if refs is None:
        return []
    if not isinstance(refs, list) or not all(isinstance(r, dict) for r in refs):
        return [type_invalid(field, refs, "a list of objects")]
    causes: list[Cause] = []
    first_controller = ""
    for ref in refs:
        api_version, kind = str(ref.get("apiVersion") or ""), str(ref.get("kind") or "")
        group, version = _group_version(api_version)
        if not version:
            causes.append(invalid(f"{field}.apiVersion", api_version, "version must not be empty"))
        for key in ("kind", "name", "uid"):
            if not ref.get(key):
                causes.append(invalid(f"{field}.{key}", str(ref.get(key) or ""), "must not be empty"))
        if (group, version, kind) in BANNED_OWNERS:
            causes.append(invalid(field, _owner_json(ref),
                                  f"{group}/{version}, Kind={kind} is disallowed from being an owner"))
        if ref.get("controller") is True:
            current = f"{kind}/{ref.get('name', '')}"
            if first_controller:
                causes.append(invalid(field, [_owner_json(r) for r in refs],
                                      "Only one reference can have Controller set to true. Found \"true\" in "
                                      f"references for {first_controller} and {current}"))
            else:
                first_controller = current
    return causes


def _name_errors(name: str, *, prefix: bool, name_is_dns_label: bool, name_is_path_segment: bool) -> list[str]:
    if name_is_path_segment:
        return validate_path_segment_name(name, prefix=prefix)
    # Every kind's name must also be a path segment; a DNS name always is, so one check suffices.
    return validate_name(name, dns_subdomain=not name_is_dns_label, prefix=prefix)


def validate_object_meta(meta: dict[str, Any], *, namespaced: bool, name_is_dns_label: bool = False,
                         name_is_path_segment: bool = False) -> list[Cause]:
    """ObjectMeta on create and update, after any generateName has been turned into a name.

    name_is_dns_label: the kind's names are DNS labels (namespaces), not subdomains.
    name_is_path_segment: the kind only needs URL-safe names (RBAC), e.g. "system:admin".
    """
    causes: list[Cause] = []
    rules = {"name_is_dns_label": name_is_dns_label, "name_is_path_segment": name_is_path_segment}

    generate_name = meta.get("generateName")
    if generate_name and isinstance(generate_name, str):
        causes += [invalid("metadata.generateName", generate_name, msg)
                   for msg in _name_errors(generate_name, prefix=True, **rules)]

    name = meta.get("name")
    if not name:
        causes.append(required("metadata.name", "name or generateName is required"))
    elif not isinstance(name, str):
        causes.append(type_invalid("metadata.name", name, "a string"))
    else:
        causes += [invalid("metadata.name", name, msg) for msg in _name_errors(name, prefix=False, **rules)]

    namespace = meta.get("namespace")
    if namespaced:
        if not namespace:
            causes.append(required("metadata.namespace"))
        elif not isinstance(namespace, str):
            causes.append(type_invalid("metadata.namespace", namespace, "a string"))
        else:
            causes += [invalid("metadata.namespace", namespace, msg) for msg in validate_namespace_name(namespace)]
    elif namespace:
        causes.append(forbidden("metadata.namespace", "not allowed on this type"))

    generation = meta.get("generation")
    if isinstance(generation, int) and not isinstance(generation, bool) and generation < 0:
        causes.append(invalid("metadata.generation", generation, "must be greater than or equal to 0"))

    causes += validate_labels(meta.get("labels"))
    causes += validate_annotations(meta.get("annotations"))
    causes += validate_owner_references(meta.get("ownerReferences"))
    causes += validate_finalizers(meta.get("finalizers"))
    return causes


# -- decoding custom resources' metadata --------------------------------------------------------

_STR, _INT, _BOOL = (str,), (int,), (bool,)
_OWNER_REF = {"apiVersion": _STR, "kind": _STR, "name": _STR, "uid": _STR, "controller": _BOOL,
              "blockOwnerDeletion": _BOOL}
_MANAGED_FIELDS = {"manager": _STR, "operation": _STR, "apiVersion": _STR, "time": _STR, "fieldsType": _STR,
                   "fieldsV1": (dict,), "subresource": _STR}


def _int64(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return (not isinstance(value, float) or value.is_integer()) and -(2**63) <= value < 2**63


def _decodes_as(value: Any, types: tuple[type, ...]) -> bool:
    """Go's view: a bool is no string or number, and nothing but a bool is a bool (Python's bool is an int)."""
    if value is None:
        return True
    if bool in types:
        return isinstance(value, bool)
    return isinstance(value, types) and not isinstance(value, bool)


def _struct_list(value: Any, fields: Mapping[str, tuple[type, ...]]) -> bool:
    return isinstance(value, list) and all(
        item is None or (isinstance(item, dict) and all(_decodes_as(item.get(k), t) for k, t in fields.items()))
        for item in value)


_META_FIELDS: dict[str, Any] = {
    **dict.fromkeys(("name", "generateName", "namespace", "selfLink", "uid", "resourceVersion",
                     "creationTimestamp", "deletionTimestamp"), lambda v: isinstance(v, str)),
    "generation": _int64, "deletionGracePeriodSeconds": _int64,
    "labels": lambda v: isinstance(v, dict) and all(x is None or isinstance(x, str) for x in v.values()),
    "annotations": lambda v: isinstance(v, dict) and all(x is None or isinstance(x, str) for x in v.values()),
    "finalizers": lambda v: isinstance(v, list) and all(x is None or isinstance(x, str) for x in v),
    "ownerReferences": lambda v: _struct_list(v, _OWNER_REF),
    "managedFields": lambda v: _struct_list(v, _MANAGED_FIELDS),
}


def drop_malformed_meta(meta: dict[str, Any]) -> None:
    """Drop metadata fields that do not decode into ObjectMeta, as kube's CRD handler does on every request
    (schemaobjectmeta.Coerce with DropMalformedFields): a custom resource's bad metadata field is ignored."""
    for key, decodes in _META_FIELDS.items():
        if key in meta and meta[key] is not None and not decodes(meta[key]):
            del meta[key]


# -- generateName -----------------------------------------------------------------------------

def generate_name_suffix() -> str:
    """Five characters from kube's vowel-free alphabet, as names.SimpleNameGenerator appends."""
    return "".join(secrets.choice(NAME_SUFFIX_ALPHABET) for _ in range(NAME_SUFFIX_LENGTH))


def generate_name(base: str) -> str:
    """generateName + suffix, trimming the base to 58 so the result fits a 63-character label."""
    return base[:MAX_GENERATED_BASE] + generate_name_suffix()
