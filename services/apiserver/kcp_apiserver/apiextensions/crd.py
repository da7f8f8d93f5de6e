"""CustomResourceDefinition as a served type: its defaults, its validation, its columns."""

from __future__ import annotations

from kcp_apiserver.apiextensions.defaults import default_crd
from kcp_apiserver.apiextensions.resources import CLEANUP_FINALIZER
from kcp_apiserver.apiextensions.validation import validate_crd as check_crd
from kcp_apiserver.apimachinery.status import Cause
from kcp_apiserver.registry.resource import Obj, Resource
from kcp_apiserver.registry.strategy import FunctionStrategy
from kcp_apiserver.registry.tables import CREATED_AT, NAME


def prepare_crd(obj: Obj, old: Obj | None) -> None:
    """kube's CRD defaults, and the finalizer that deletes a CRD's objects before the CRD goes."""
    default_crd(obj)
    if old is None:
        finalizers = obj["metadata"].setdefault("finalizers", [])
        if CLEANUP_FINALIZER not in finalizers:
            finalizers.append(CLEANUP_FINALIZER)


def validate_crd(obj: Obj, old: Obj | None) -> list[Cause]:
    return check_crd(obj, old)


class CRDStrategy(FunctionStrategy):
    """kube's CRD store answers a DELETE with the object (its cleanup finalizer keeps it a while)."""

    return_deleted_object = True

    def __init__(self) -> None:
        super().__init__(prepare_crd, validate_crd)


CRD = Resource(
    "apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions",
    "customresourcedefinition", False, short_names=("crd", "crds"), categories=("api-extensions",),
    has_status=True, tracks_generation=True, strategy=CRDStrategy(),
    definition="io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
    columns=(NAME, CREATED_AT))
