"""/openapi/v2 and /openapi/v3: real schemas and paths, so kubectl validates and explains.

kubectl sends `fieldValidation=Strict` only when the POST/PATCH operations of
a kind list that parameter, so every write operation carries it. CRD schemas
are published as kube publishes them (apiextensions.publishing): v2 without
what v2 cannot express, so kubectl's client-side checks accept what the server keeps.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable, Iterable
from typing import Any

import orjson

from kcp_apiserver.apiextensions.publishing import published_schema, root_preserves_unknown
from kcp_apiserver.endpoints.discovery import group_versions
from kcp_apiserver.registry import builtinschemas
from kcp_apiserver.registry.resource import Resource

WRITE_PARAMS = ("dryRun", "fieldManager", "fieldValidation")
LIST_PARAMS = ("allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit", "resourceVersion",
               "resourceVersionMatch", "sendInitialEvents", "timeoutSeconds", "watch")


# kube's words for the parameters (the short ones: clients and kube's own tests read them; the long ones
# would cost every published document kilobytes for no client)
PARAM_DESCRIPTIONS = {
    "fieldSelector": "A selector to restrict the list of returned objects by their fields. Defaults to everything.",
    "labelSelector": "A selector to restrict the list of returned objects by their labels. Defaults to everything.",
    "timeoutSeconds": "Timeout for the list/watch call. This limits the duration of the call, regardless of any "
                      "activity or inactivity.",
    "watch": "Watch for changes to the described resources and return them as a stream of add, update, and remove "
             "notifications. Specify resourceVersion.",
    "namespace": "object name and auth scope, such as for teams and projects",
}
OPERATION_DESCRIPTIONS = {"list": "list or watch objects of kind {}", "create": "create a {}",
                          "deletecollection": "delete collection of {}", "read": "read the specified {}",
                          "replace": "replace the specified {}", "patch": "partially update the specified {}",
                          "delete": "delete a {}"}


def _list_definition(res: Resource) -> str | None:
    """kube's `<Kind>List` definition of a built-in kind, what its list operation answers."""
    name = f"{res.definition}List" if res.definition else None
    return name if name and name in builtinschemas.definitions(res.release) else None


def _gvk(res: Resource) -> dict[str, str]:
    return {"group": res.group, "version": res.version, "kind": res.kind}


OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


def _definitions_for(resources: Iterable[Resource], *, v2: bool) -> dict[str, Any]:
    resources = list(resources)
    names: dict[str, list[str]] = {}  # by release: a server may serve another release than kcp's own
    for res in resources:
        if res.definition:
            names.setdefault(res.release, []).append(res.definition)
        if (listed := _list_definition(res)) is not None:
            names[res.release].append(listed)
    if any(r.is_custom for r in resources):
        release = next(iter(names), builtinschemas.DEFAULT_RELEASE)  # the built-ins' ObjectMeta
        names.setdefault(release, []).append(OBJECT_META)
    defs: dict[str, Any] = {}
    for release, members in names.items():
        defs.update(copy.deepcopy(builtinschemas.closure(members, release)))
    for res in resources:
        if res.definition and res.definition in defs:
            defs[res.definition]["x-kubernetes-group-version-kind"] = [_gvk(res)]
        elif res.schema is not None:
            defs[_custom_name(res)] = _custom_definition(res, v2=v2)
    return defs


def _custom_definition(res: Resource, *, v2: bool) -> dict[str, Any]:
    """A CRD version's schema as a kind: with apiVersion, kind and the real ObjectMeta."""
    schema = published_schema(res.schema or {}, v2=v2)
    if v2 and root_preserves_unknown(schema):
        return {"type": "object", "x-kubernetes-group-version-kind": [_gvk(res)]}
    props = schema.setdefault("properties", {})
    props["apiVersion"] = {"type": "string", "description": "APIVersion defines the versioned schema of this "
                                                            "representation of an object."}
    props["kind"] = {"type": "string", "description": "Kind is a string value representing the REST resource "
                                                      "this object represents."}
    props["metadata"] = {"$ref": f"#/definitions/{OBJECT_META}",
                         "description": "Standard object's metadata."}
    schema.setdefault("type", "object")
    schema["x-kubernetes-group-version-kind"] = [_gvk(res)]
    return schema


def _custom_name(res: Resource) -> str:
    return ".".join(reversed(res.group.split("."))) + f".{res.version}.{res.kind}"


def _def_name(res: Resource) -> str:
    return res.definition or _custom_name(res)


COLLECTION_VERBS = {"get": "list", "post": "create", "delete": "deletecollection"}  # method -> kube verb
ITEM_VERBS = {"get": "get", "put": "update", "patch": "patch", "delete": "delete"}


def _paths(res: Resource, ref: Callable[[Resource, bool], dict[str, Any]],
           param: Callable[[str, str], dict[str, Any]]) -> dict[str, Any]:
    """The collection and item paths of one resource, with kube's operation metadata.

    `ref` gives a response's schema reference (of the kind's list for a list) and `param` a parameter, as each
    OpenAPI version words them.
    """
    base = f"/api/{res.version}" if not res.group else f"/apis/{res.group}/{res.version}"
    ns = "/namespaces/{namespace}" if res.namespaced else ""
    collection, item = f"{base}{ns}/{res.plural}", f"{base}{ns}/{res.plural}/{{name}}"
    gvk = _gvk(res)

    def op(action: str, verb: str, params: Iterable[str], body: bool = False) -> dict[str, Any]:
        operation: dict[str, Any] = {
            "description": OPERATION_DESCRIPTIONS[verb].format(res.kind),
            "operationId": f"{verb}{res.kind}", "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": gvk,
            "parameters": [param(p, "query") for p in params],
            "responses": {"200": {"description": "OK", **ref(res, action == "list")}},
        }
        if body:
            operation["__body__"] = True
        return operation

    coll: dict[str, Any] = {"get": op("list", "list", LIST_PARAMS),
                            "post": op("post", "create", WRITE_PARAMS, True),
                            "delete": op("deletecollection", "deletecollection", (*LIST_PARAMS, "dryRun"))}
    one: dict[str, Any] = {"get": op("get", "read", ()), "put": op("put", "replace", WRITE_PARAMS, True),
                           "patch": op("patch", "patch", (*WRITE_PARAMS, "force"), True),
                           "delete": op("delete", "delete", ("dryRun", "gracePeriodSeconds", "propagationPolicy"))}
    coll = {method: o for method, o in coll.items() if COLLECTION_VERBS[method] in res.verbs}  # reviews: create
    one = {method: o for method, o in one.items() if ITEM_VERBS[method] in res.verbs}
    if res.namespaced:
        coll["parameters"] = [param("namespace", "path")]
        one["parameters"] = [param("name", "path"), param("namespace", "path")]
    else:
        one["parameters"] = [param("name", "path")]
    paths = {collection: coll, item: one} if len(one) > 1 else {collection: coll}
    if res.has_status:
        paths[f"{item}/status"] = {k: one[k] for k in ("get", "put", "patch", "parameters")}
    return paths


def swagger(resources: list[Resource]) -> dict[str, Any]:
    """One OpenAPI v2 document for a logical cluster."""
    def ref(res: Resource, listed: bool = False) -> dict[str, Any]:
        return {"schema": {"$ref": f"#/definitions/{(listed and _list_definition(res)) or _def_name(res)}"}}

    def param(name: str, where: str) -> dict[str, Any]:
        described = {"description": PARAM_DESCRIPTIONS[name]} if name in PARAM_DESCRIPTIONS else {}
        return {"name": name, "in": where, **described, "type": "string", "uniqueItems": True,
                "required": where == "path"}

    paths: dict[str, Any] = {}
    for res in resources:
        for path, item in _paths(res, ref, param).items():
            for operation in item.values():
                if isinstance(operation, dict) and operation.pop("__body__", False):
                    operation["parameters"].insert(0, {"name": "body", "in": "body", "required": True,
                                                       "schema": {"$ref": f"#/definitions/{_def_name(res)}"}})
            paths[path] = item
    return {"swagger": "2.0", "info": {"title": "kcp", "version": "v0.1.0"}, "paths": paths,
            "definitions": _definitions_for(resources, v2=True)}


def v3_index(resources: list[Resource], prefix: str) -> dict[str, Any]:
    """The /openapi/v3 discovery document: one URL per group-version, hashed for caching."""
    paths: dict[str, Any] = {}
    for group, versions in group_versions(resources).items():
        for version, members in versions.items():
            gv_path = f"apis/{group}/{version}" if group else f"api/{version}"
            digest = hashlib.sha256(orjson.dumps([(r.plural, r.schema is not None) for r in members]) +
                                    gv_path.encode()).hexdigest()[:16].upper()
            paths[gv_path] = {"serverRelativeURL": f"{prefix}/openapi/v3/{gv_path}?hash={digest}"}
    return {"paths": paths}


def v3_document(resources: list[Resource], gv_path: str) -> dict[str, Any] | None:
    """The OpenAPI v3 document of one group-version (`api/v1`, `apis/<group>/<version>`)."""
    members = [r for r in resources if (f"apis/{r.group}/{r.version}" if r.group else f"api/{r.version}") == gv_path]
    if not members:
        return None

    def ref(res: Resource, listed: bool = False) -> dict[str, Any]:
        name = (listed and _list_definition(res)) or _def_name(res)
        return {"content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}}}

    def param(name: str, where: str) -> dict[str, Any]:
        described = {"description": PARAM_DESCRIPTIONS[name]} if name in PARAM_DESCRIPTIONS else {}
        return {"name": name, "in": where, **described, "required": where == "path",
                "schema": {"type": "string", "uniqueItems": True}}

    paths: dict[str, Any] = {}
    for res in members:
        for path, item in _paths(res, ref, param).items():
            for operation in item.values():
                if isinstance(operation, dict) and operation.pop("__body__", False):
                    operation["requestBody"] = {"required": True, "content": {"application/json": {"schema": {
                        "$ref": f"#/components/schemas/{_def_name(res)}"}}}}
            paths[path] = item
    return {"openapi": "3.0.0", "info": {"title": "kcp", "version": "v0.1.0"}, "paths": paths,
            "components": {"schemas": builtinschemas.to_v3(_definitions_for(members, v2=False))}}
