"""The list options kube checks before it lists (ValidateListOptions, for a list that is not a watch).

A bad combination is kube's 422 on the `ListOptions.meta.k8s.io` kind, one cause per rule broken.
"""

from __future__ import annotations

from multidict import MultiMapping

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.validation import forbidden, render_value

RESOURCE_VERSION_MATCHES = ("Exact", "NotOlderThan")


def validate_list_options(query: MultiMapping[str]) -> None:
    """Raise kube's Invalid ListOptions for resourceVersionMatch and sendInitialEvents misuse on a list."""
    causes: list[st.Cause] = []
    match = query.get("resourceVersionMatch", "")
    resource_version = query.get("resourceVersion", "")
    if match:
        if not resource_version:
            causes.append(forbidden("resourceVersionMatch",
                                    "resourceVersionMatch is forbidden unless resourceVersion is provided"))
        if query.get("continue", ""):
            causes.append(forbidden("resourceVersionMatch",
                                    "resourceVersionMatch is forbidden when continue is provided"))
        if match not in RESOURCE_VERSION_MATCHES:
            supported = ", ".join(render_value(value) for value in (*RESOURCE_VERSION_MATCHES, ""))
            causes.append(st.Cause("FieldValueNotSupported",
                                   f"Unsupported value: {render_value(match)}: supported values: {supported}",
                                   "resourceVersionMatch"))
        if match == "Exact" and resource_version == "0":
            causes.append(forbidden("resourceVersionMatch",
                                    'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'))
    if "sendInitialEvents" in query:
        causes.append(forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"))
    if causes:
        raise st.invalid("ListOptions", "", causes, group="meta.k8s.io")
