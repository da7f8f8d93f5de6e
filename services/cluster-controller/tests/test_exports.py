"""kcp's APIs as exports, decided without a server: the schema made from a packaged CRD, and one type read from
the CRDs' and an export's caches."""

from __future__ import annotations

import copy

from kcp_cluster_controller.exports import Merged, schema_from_crd
from kcp_cluster_controller.main import packaged_crd

from kcpcommon.keys import ObjectKey, key_for
from kcpcommon.store import CLUSTER_INDEX, Indexer


def test_a_packaged_crd_becomes_a_schema_named_after_its_spec() -> None:
    crd = packaged_crd("synctarget-crd.yaml")
    schema = schema_from_crd(crd)
    name = schema["metadata"]["name"]
    assert name.startswith("v") and name.endswith(".synctargets.workload.kcp.io")
    (version,) = schema["spec"]["versions"]
    assert version["schema"] == crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]  # kcp's shape: unwrapped
    assert version["subresources"] == {"status": {}}
    assert schema_from_crd(copy.deepcopy(crd))["metadata"]["name"] == name  # the same spec, the same schema
    crd["spec"]["versions"][0]["additionalPrinterColumns"] = []
    assert schema_from_crd(crd)["metadata"]["name"] != name  # a changed CRD is a new schema


def target(cluster: str, name: str) -> dict[str, object]:
    return {"metadata": {"name": name, "annotations": {"kcp.io/cluster": cluster}}}


def test_one_type_is_read_from_the_crds_and_the_exports_caches_alike() -> None:
    crds, exported = Indexer(key_for), Indexer(key_for)
    crds.upsert(target("admin", "east"))
    exported.upsert(target("team", "west"))
    merged = Merged(crds, exported)
    assert merged.get(ObjectKey("team", "", "west")) is not None
    assert merged.get_copy(ObjectKey("admin", "", "east")) == target("admin", "east")
    assert merged.get(ObjectKey("team", "", "east")) is None
    assert merged.index_keys(CLUSTER_INDEX, "team") == {ObjectKey("team", "", "west")}
    assert [t["metadata"]["name"] for t in merged.by_index(CLUSTER_INDEX, "admin")] == ["east"]
