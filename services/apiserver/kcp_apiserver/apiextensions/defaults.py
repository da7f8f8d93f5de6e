"""kube's defaulting of a CustomResourceDefinition (SetDefaults_CustomResourceDefinition) and the
storedVersions its strategy keeps; applied before validation, as kube-apiserver does."""

from __future__ import annotations

from kcp_apiserver.apiextensions.conversion import NONE_CONVERTER
from kcp_apiserver.apiextensions.fields import Obj, get


def default_crd(crd: Obj) -> None:
    """kube's v1 defaults (SetDefaults_CustomResourceDefinition), applied in place.

    Also fills the fields Go always serializes (a version's served/storage), so what is stored and
    returned looks like kube's answer.
    """
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return
    names = spec.get("names")
    if isinstance(names, dict):
        kind = names.get("kind")
        if not names.get("singular") and isinstance(kind, str):
            names["singular"] = kind.lower()
        if not names.get("listKind") and isinstance(kind, str) and kind:
            names["listKind"] = kind + "List"
    if spec.get("conversion") is None:
        spec["conversion"] = {"strategy": NONE_CONVERTER}
    service = get(get(get(spec.get("conversion"), "webhook"), "clientConfig"), "service")
    if isinstance(service, dict) and service.get("port") is None:
        service["port"] = 443
    versions = spec.get("versions")
    if isinstance(versions, list):
        for version in versions:
            if isinstance(version, dict):
                version.setdefault("served", False)
                version.setdefault("storage", False)
                if version["served"] is None:
                    version["served"] = False
                if version["storage"] is None:
                    version["storage"] = False
    storage = next((v["name"] for v in versions or [] if isinstance(v, dict) and v.get("storage") is True
                    and isinstance(v.get("name"), str)), None) if isinstance(versions, list) else None
    if storage is not None:
        if crd.get("status") is None:
            crd["status"] = {}
        status = crd["status"]
        if isinstance(status, dict) and not status.get("storedVersions"):
            status["storedVersions"] = [storage]


def stored_versions_after(crd: Obj, old: Obj | None) -> list[str]:
    """status.storedVersions after this write, as kube's CRD strategy keeps them.

    A create starts from nothing; an update keeps what was stored before. Every version marked
    storage is added, because objects may be written in it from now on. Versions are removed only
    by a status update (after a storage migration), never by a spec write.
    """
    base = get(old, "status") if old is not None else None
    stored = [v for v in (get(base, "storedVersions") or []) if isinstance(v, str)]
    for version in get(crd.get("spec"), "versions") or []:
        name = get(version, "name")
        if get(version, "storage") is True and isinstance(name, str) and name not in stored:
            stored.append(name)
    return stored
