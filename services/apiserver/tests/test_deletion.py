"""Deletion propagation: DeleteOptions as kube reads them, and the finalizer each policy leaves."""

from __future__ import annotations

import pytest
from multidict import MultiDict

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.endpoints.deleteoptions import read_delete_options
from kcp_apiserver.registry.builtin import BUILTINS
from kcp_apiserver.registry.deletion import (
    Propagation,
    default_policy,
    deletion_finalizers,
)
from kcp_apiserver.registry.resource import Resource

CONFIGMAP = next(r for r in BUILTINS if r.kind == "ConfigMap")
EVENT = next(r for r in BUILTINS if r.kind == "Event" and not r.group)
JOB = Resource("batch", "v1", "Job", "jobs", "job", True)
RC = Resource("", "v1", "ReplicationController", "replicationcontrollers", "replicationcontroller", True)
DEPLOYMENT_V1 = Resource("apps", "v1", "Deployment", "deployments", "deployment", True)
DEPLOYMENT_BETA = Resource("apps", "v1beta2", "Deployment", "deployments", "deployment", True)
CUSTOM_JOB = Resource("batch", "v1", "Job", "jobs", "job", True, schema={"type": "object"})


@pytest.mark.parametrize(("policy", "orphan", "expected"), [
    ("Orphan", None, ["keep", "orphan"]),
    ("Foreground", None, ["keep", "foregroundDeletion"]),
    ("Background", None, ["keep"]),
    (None, True, ["keep", "orphan"]),
    (None, False, ["keep"]),
    (None, None, ["keep"]),
])
def test_each_policy_leaves_its_collector_finalizer(policy: str | None, orphan: bool | None,
                                                    expected: list[str]) -> None:
    assert deletion_finalizers(CONFIGMAP, ["keep"], Propagation(policy, orphan)) == expected


def test_options_replace_a_collector_finalizer_already_there() -> None:
    assert deletion_finalizers(CONFIGMAP, ["orphan", "x"], Propagation("Foreground")) == ["x", "foregroundDeletion"]
    assert deletion_finalizers(CONFIGMAP, ["foregroundDeletion"], Propagation("Background")) == []


def test_without_options_a_finalizer_already_there_wins_over_the_default() -> None:
    assert deletion_finalizers(JOB, ["foregroundDeletion"], Propagation()) == ["foregroundDeletion"]
    assert deletion_finalizers(CONFIGMAP, ["orphan"], Propagation()) == ["orphan"]


def test_legacy_versions_orphan_by_default_and_current_ones_delete_in_the_background() -> None:
    assert default_policy(JOB) == "Orphan"
    assert default_policy(RC) == "Orphan"
    assert default_policy(DEPLOYMENT_BETA) == "Orphan"
    assert default_policy(DEPLOYMENT_V1) == "Background"
    assert default_policy(CONFIGMAP) == "Background"
    assert default_policy(CUSTOM_JOB) == "Background"  # a custom resource uses kube's CRD default
    assert deletion_finalizers(JOB, [], Propagation()) == ["orphan"]
    assert deletion_finalizers(JOB, [], Propagation("Background")) == []


def test_events_take_no_part_in_collection() -> None:
    assert default_policy(EVENT) is None
    assert deletion_finalizers(EVENT, [], Propagation("Foreground")) == []
    assert deletion_finalizers(EVENT, [], Propagation("Orphan")) == []


def test_an_unknown_policy_is_kubes_422_on_delete_options() -> None:
    with pytest.raises(st.APIError) as caught:
        Propagation("Sideways").validate()
    error = caught.value
    assert (error.code, error.reason) == (422, "Invalid")
    assert error.message == ('DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: '
                             '"Sideways": supported values: "Foreground", "Background", "Orphan", "nil"')
    assert error.details == {"kind": "DeleteOptions", "group": "meta.k8s.io", "causes": [
        {"reason": "FieldValueNotSupported", "field": "propagationPolicy",
         "message": 'Unsupported value: "Sideways": supported values: "Foreground", "Background", "Orphan", "nil"'}]}


def test_both_policies_at_once_are_refused() -> None:
    with pytest.raises(st.APIError) as caught:
        Propagation("Orphan", True).validate()
    assert caught.value.code == 422
    assert caught.value.message == ('DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Invalid value: '
                                    '"Orphan": orphanDependents and deletionPropagation cannot be both set')


def test_options_come_from_the_body_when_there_is_one_and_from_the_query_otherwise() -> None:
    query = MultiDict({"propagationPolicy": "Orphan"})
    from_body = read_delete_options(b'{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Foreground",'
                                    b'"preconditions":{"uid":"u"},"dryRun":["All"]}', "application/json", query)
    assert from_body.propagation == Propagation("Foreground")
    assert from_body.preconditions == {"uid": "u"}
    assert from_body.dry_run
    from_query = read_delete_options(b"", "", query)
    assert from_query.propagation == Propagation("Orphan")
    assert read_delete_options(b"", "", MultiDict({"orphanDependents": "false"})).propagation == Propagation(None, False)


def test_bad_query_options_are_refused() -> None:
    with pytest.raises(st.APIError) as caught:
        read_delete_options(b"", "", MultiDict({"orphanDependents": "maybe"}))
    assert (caught.value.code, caught.value.message) == (400, 'strconv.ParseBool: parsing "maybe": invalid syntax')
    with pytest.raises(st.APIError) as caught:
        read_delete_options(b"", "", MultiDict({"propagationPolicy": "Orphan", "orphanDependents": "true"}))
    assert caught.value.code == 422
    with pytest.raises(st.APIError) as caught:
        read_delete_options(b'{"dryRun":["Some"]}', "application/json", MultiDict())
    assert caught.value.message == ('DeleteOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: '
                                    '[]string{"Some"}: supported values: "All"')
