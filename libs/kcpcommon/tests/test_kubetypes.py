from kcpcommon.kubetypes import IMPORTED_LABEL, is_imported_kube_type


def crd(group: str, imported: bool) -> dict:
    labels = {IMPORTED_LABEL: "true"} if imported else {}
    return {"metadata": {"name": f"things.{group or 'core'}", "labels": labels}, "spec": {"group": group}}


def test_an_imported_crd_of_kubes_groups_is_kubes_type() -> None:
    assert is_imported_kube_type(crd("apps", True))
    assert is_imported_kube_type(crd("", True))
    assert is_imported_kube_type(crd("networking.k8s.io", True))


def test_custom_groups_and_hand_made_crds_stay_custom_resources() -> None:
    assert not is_imported_kube_type(crd("example.com", True))  # imported, but not kube's own type
    assert not is_imported_kube_type(crd("apps", False))  # a tenant's own CRD in a kube group
