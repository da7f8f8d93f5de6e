"""Discovery documents, legacy and aggregated (apidiscovery.k8s.io/v2), from one source.

Keys come in the order of kube's Go structs (TypeMeta first, then the fields as declared), which is
the order Go's encoder writes them and clients that compare documents byte for byte expect.
"""

from __future__ import annotations

import base64
import hashlib
from collections import OrderedDict
from typing import Any

from kcp_apiserver.registry.resource import Resource

AGGREGATED_CONTENT_TYPE = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
SUBRESOURCE_VERBS = {"status": ["get", "patch", "update"], "finalize": ["update"], "scale": ["get", "patch", "update"]}
SCALE_KIND = ("autoscaling", "v1", "Scale")


def _subresources(res: Resource) -> list[str]:
    subs = ["status"] if res.has_status else []
    if res.plural == "namespaces" and not res.group:
        subs.append("finalize")
    if res.scale is not None:  # as kube lists it, for built-in types and for CRDs declaring it alike
        subs.append("scale")
    subs += [action.name for action in res.actions]
    return subs


def _verbs(res: Resource, sub: str) -> list[str]:
    action = res.action(sub)
    return list(action.verbs) if action is not None else SUBRESOURCE_VERBS[sub]


def _kind(res: Resource, sub: str) -> tuple[str, str, str]:
    """The group, version and kind a subresource takes and answers with."""
    action = res.action(sub)
    if action is not None and action.kind is not None:
        return action.kind
    return SCALE_KIND if sub == "scale" else (res.group, res.version, res.kind)


def _storage_hash(res: Resource) -> str:
    """kube's storageVersionHash: the first 8 bytes of sha256("<group>/<version>/<kind>") of the stored
    version, in base64; types sharing storage (both Event APIs) share it."""
    group = res.storage_group if res.storage_group is not None else res.group
    digest = hashlib.sha256(f"{group}/{res.storage_version or res.version}/{res.kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


def group_versions(resources: list[Resource]) -> OrderedDict[str, OrderedDict[str, list[Resource]]]:
    """group -> version -> resources, core group first, in a stable order."""
    out: OrderedDict[str, OrderedDict[str, list[Resource]]] = OrderedDict()
    for res in sorted(resources, key=lambda r: (r.group != "", r.group)):
        out.setdefault(res.group, OrderedDict()).setdefault(res.version, []).append(res)
    return out


def resource_list(group: str, version: str, resources: list[Resource]) -> dict[str, Any]:
    items: list[dict[str, Any]] = []
    for res in resources:
        # keys in the order of kube's APIResource struct, as Go writes them
        entry: dict[str, Any] = {"name": res.plural, "singularName": res.singular, "namespaced": res.namespaced,
                                 "kind": res.kind, "verbs": list(res.verbs)}
        if res.short_names:
            entry["shortNames"] = list(res.short_names)
        if res.categories:
            entry["categories"] = list(res.categories)
        entry["storageVersionHash"] = _storage_hash(res)
        items.append(entry)
        for sub in _subresources(res):
            group, version, kind = _kind(res, sub)
            entry = {"name": f"{res.plural}/{sub}", "singularName": "", "namespaced": res.namespaced}
            if (group, version) != (res.group, res.version):
                entry.update(group=group, version=version)
            entry.update(kind=kind, verbs=_verbs(res, sub))
            items.append(entry)
        for extra in res.subresources:
            items.append({"name": f"{res.plural}/{extra.name}", "singularName": "", "namespaced": res.namespaced,
                          "group": extra.group, "version": extra.version, "kind": extra.kind,
                          "verbs": list(extra.verbs)})
    return {"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version, "resources": items}


def api_versions() -> dict[str, Any]:
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}]}


def api_group(group: str, versions: list[str]) -> dict[str, Any]:
    gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": gvs, "preferredVersion": gvs[0]}


def api_group_list(resources: list[Resource]) -> dict[str, Any]:
    groups = [api_group(g, list(vs)) for g, vs in group_versions(resources).items() if g]
    for group in groups:
        del group["kind"], group["apiVersion"]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def aggregated(resources: list[Resource], *, core: bool) -> dict[str, Any]:
    """The APIGroupDiscoveryList for /api (core=True) or /apis."""
    items = []
    for group, versions in group_versions(resources).items():
        if (group == "") != core:
            continue
        version_docs = []
        for version, members in versions.items():
            docs = []
            for res in members:
                kind = {"group": res.group, "version": res.version, "kind": res.kind}
                doc: dict[str, Any] = {"resource": res.plural, "responseKind": kind,
                                       "scope": "Namespaced" if res.namespaced else "Cluster",
                                       "singularResource": res.singular, "verbs": list(res.verbs)}
                if res.short_names:
                    doc["shortNames"] = list(res.short_names)
                if res.categories:
                    doc["categories"] = list(res.categories)
                subs = [{"subresource": s, "responseKind": dict(zip(("group", "version", "kind"), _kind(res, s),
                                                                         strict=True)),
                         "verbs": _verbs(res, s)} for s in _subresources(res)]
                subs += [{"subresource": x.name, "responseKind": {"group": x.group, "version": x.version,
                                                                  "kind": x.kind}, "verbs": list(x.verbs)}
                         for x in res.subresources]
                if subs:
                    doc["subresources"] = subs
                docs.append(doc)
            version_docs.append({"version": version, "resources": docs, "freshness": "Current"})
        items.append({"metadata": {"name": group, "creationTimestamp": None}, "versions": version_docs})
    return {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {},
            "items": items}
