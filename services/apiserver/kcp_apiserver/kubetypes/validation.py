"""kube's validation rules that the types' validators share, with kube's field paths and wording:
selectors that must match their template's labels, fields that are immutable, pod templates.

Values are rendered as kube's field errors print them (`%#v` of Go's types where kube prints those).
"""

from __future__ import annotations

import json
import re
from typing import Any

from kcp_apiserver.apimachinery.selectors import LabelSelector
from kcp_apiserver.apimachinery.status import APIError, Cause
from kcp_apiserver.apimachinery.validation import (
    forbidden,
    invalid,
    max_len_error,
    required,
    validate_dns_label,
    validate_labels,
)
from kcp_apiserver.kubetypes.fields import dicts, member
from kcp_apiserver.registry.resource import Obj

IMMUTABLE = "field is immutable"
RESTART_POLICIES = ("Always", "OnFailure", "Never")
PROTOCOLS = ("TCP", "UDP", "SCTP")
SERVICE_TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")


def _quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def go_string_map(labels: Any) -> str:
    """Go's %#v of a map[string]string: keys sorted, `map[string]string{"a":"b", "c":"d"}`."""
    if not labels:
        return "map[string]string(nil)"
    return "map[string]string{" + ", ".join(f"{_quote(k)}:{_quote(str(v))}" for k, v in sorted(labels.items())) + "}"


def go_label_selector(selector: Any) -> str:
    """Go's %#v of a *metav1.LabelSelector, as kube prints an immutable or empty selector."""
    selector = selector if isinstance(selector, dict) else {}
    exprs = selector.get("matchExpressions") or []
    if exprs:
        rendered = ", ".join(
            "v1.LabelSelectorRequirement{Key:" + _quote(str(e.get("key", ""))) + ", Operator:"
            + _quote(str(e.get("operator", ""))) + ", Values:"
            + ("[]string{" + ", ".join(_quote(str(v)) for v in e.get("values") or []) + "}"
               if e.get("values") else "[]string(nil)") + "}" for e in exprs)
        expressions = "[]v1.LabelSelectorRequirement{" + rendered + "}"
    else:
        expressions = "[]v1.LabelSelectorRequirement(nil)"
    return (f"v1.LabelSelector{{MatchLabels:{go_string_map(selector.get('matchLabels'))}, "
            f"MatchExpressions:{expressions}}}")


def raw_invalid(field: str, rendered: str, detail: str) -> Cause:
    """An Invalid cause whose value is already rendered (Go's %#v)."""
    return Cause("FieldValueInvalid", f"Invalid value: {rendered}: {detail}", field)


def unsupported(field: str, value: Any, supported: tuple[str, ...]) -> Cause:
    values = ", ".join(_quote(s) for s in supported)
    return Cause("FieldValueNotSupported", f"Unsupported value: {_quote(str(value))}: supported values: {values}",
                 field)


def non_negative(field: str, value: Any) -> list[Cause]:
    if isinstance(value, int) and not isinstance(value, bool) and value < 0:
        return [invalid(field, value, "must be greater than or equal to 0")]
    return []


PERCENT = re.compile(r"^[0-9]+%$")
PERCENT_MESSAGE = ("a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or "
                   "'93%', regex used for validation is '[0-9]+%')")


def int_or_percent(field: str, value: Any, *, at_most_100: bool = False) -> list[Cause]:
    """kube's ValidatePositiveIntOrPercent (and IsNotMoreThan100Percent where asked)."""
    if value is None:
        return []
    if isinstance(value, str):
        if not PERCENT.match(value):
            return [invalid(field, value, PERCENT_MESSAGE)]
        if at_most_100 and int(value[:-1]) > 100:
            return [invalid(field, value, "must not be greater than 100%")]
        return []
    return non_negative(field, value)


# -- pod specs ----------------------------------------------------------------------------------

PORT_RANGE = "must be between 1 and 65535, inclusive"
PORT_NAME_CHARSET = re.compile(r"^[-a-z0-9]+$")
PORT_NAME_MAX = 15


def port_name(name: str) -> list[str]:
    """kube's IsValidPortName (an IANA_SVC_NAME): what is wrong with a port's name, each said apart."""
    problems = []
    if len(name) > PORT_NAME_MAX:
        problems.append(max_len_error(PORT_NAME_MAX))
    if not PORT_NAME_CHARSET.match(name):
        problems.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search("[a-z]", name):
        problems.append("must contain at least one letter (a-z)")
    if "--" in name:
        problems.append("must not contain consecutive hyphens")
    if name.startswith("-") or name.endswith("-"):
        problems.append("must not begin or end with a hyphen")
    return problems


def _port_number(field: str, number: Any) -> list[Cause]:
    if isinstance(number, int) and not 0 < number < 65536:
        return [invalid(field, number, PORT_RANGE)]
    return []


def container_ports(ports: Any, field: str) -> list[Cause]:
    """A container's ports as kube's validateContainerPorts checks them: names valid and unique in the
    container, containerPort set and in range, hostPort in range when set, a known protocol."""
    causes: list[Cause] = []
    names: set[str] = set()
    for j, port in enumerate(dicts(ports)):
        path = f"{field}[{j}]"
        name = port.get("name")
        if name:
            problems = port_name(str(name))
            causes += [invalid(f"{path}.name", name, msg) for msg in problems]
            if not problems and name in names:
                causes.append(_duplicate(f"{path}.name", str(name)))
            names.add(str(name))
        number = port.get("containerPort")
        if not number:
            causes.append(required(f"{path}.containerPort"))
        else:
            causes += _port_number(f"{path}.containerPort", number)
        if port.get("hostPort"):
            causes += _port_number(f"{path}.hostPort", port.get("hostPort"))
        if port.get("protocol") not in (None, *PROTOCOLS):
            causes.append(unsupported(f"{path}.protocol", port.get("protocol"), PROTOCOLS))
    return causes


PULL_POLICIES = ("Always", "IfNotPresent", "Never")
DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")


def _duplicate(field: str, value: str) -> Cause:
    return Cause("FieldValueDuplicate", f"Duplicate value: {_quote(value)}", field)


def _enum(field: str, value: Any, supported: tuple[str, ...]) -> list[Cause]:
    """kube's switch over a string enum: empty is Required, anything else unknown is NotSupported."""
    if not value:
        return [required(field)]
    return [] if value in supported else [unsupported(field, value, supported)]


def volumes(spec: Obj, field: str) -> tuple[set[str], list[Cause]]:
    """kube's ValidateVolumes for the names: required, DNS-1123 labels, unique. Returns the names a
    container may mount (a volume with a problem is not one of them, as in kube)."""
    names: set[str] = set()
    causes: list[Cause] = []
    for i, volume in enumerate(dicts(spec.get("volumes"))):
        path = f"{field}[{i}].name"
        name = str(volume.get("name") or "")
        problems = [required(path)] if not name else [invalid(path, name, msg) for msg in validate_dns_label(name)]
        if name in names:
            problems.append(_duplicate(path, name))
        if problems:
            causes += problems
        else:
            names.add(name)
    return names, causes


def volume_mounts(mounts: Any, field: str, volume_names: set[str]) -> list[Cause]:
    """kube's ValidateVolumeMounts: each names a volume of the pod and a mount path of its own."""
    causes: list[Cause] = []
    paths: set[str] = set()
    for i, mount in enumerate(dicts(mounts)):
        path = f"{field}[{i}]"
        name = str(mount.get("name") or "")
        if not name:
            causes.append(required(f"{path}.name"))
        if name not in volume_names:
            causes.append(Cause("FieldValueNotFound", f"Not found: {_quote(name)}", f"{path}.name"))
        mount_path = str(mount.get("mountPath") or "")
        if not mount_path:
            causes.append(required(f"{path}.mountPath"))
        if mount_path in paths:
            causes.append(invalid(f"{path}.mountPath", mount_path, "must be unique"))
        paths.add(mount_path)
    return causes


def _containers(spec: Obj, key: str, field: str, names: set[str], volume_names: set[str]) -> list[Cause]:
    causes: list[Cause] = []
    for i, c in enumerate(dicts(spec.get(key))):
        path = f"{field}.{key}[{i}]"
        name = c.get("name")
        if not name:
            causes.append(required(f"{path}.name"))
        else:
            causes += [invalid(f"{path}.name", name, msg) for msg in validate_dns_label(str(name))]
            if name in names:
                causes.append(_duplicate(f"{path}.name", str(name)))
            names.add(str(name))
        if not c.get("image"):
            causes.append(required(f"{path}.image"))
        causes += container_ports(c.get("ports"), f"{path}.ports")
        causes += volume_mounts(c.get("volumeMounts"), f"{path}.volumeMounts", volume_names)
        causes += _enum(f"{path}.imagePullPolicy", c.get("imagePullPolicy"), PULL_POLICIES)
    return causes


def pod_spec(spec: Any, field: str, *, restart_policies: tuple[str, ...] = RESTART_POLICIES,
             claim_volumes: frozenset[str] = frozenset()) -> list[Cause]:
    """kube's ValidatePodSpec for what a workload's pods need, in kube's order: volumes, containers (then
    init containers, whose names must differ from theirs), restart and DNS policies. `spec` is defaulted;
    `claim_volumes` are the volumes a StatefulSet's claim templates add to each pod."""
    if not isinstance(spec, dict):
        return [required(field)]
    volume_names, causes = volumes(spec, f"{field}.volumes")
    volume_names |= claim_volumes
    if not spec.get("containers"):
        causes.append(required(f"{field}.containers"))
    names: set[str] = set()
    for key in ("containers", "initContainers"):
        causes += _containers(spec, key, field, names, volume_names)
    policy = spec.get("restartPolicy")
    if not policy:
        causes.append(required(f"{field}.restartPolicy"))
    elif policy not in restart_policies:
        causes.append(unsupported(f"{field}.restartPolicy", policy, restart_policies))
    causes += _enum(f"{field}.dnsPolicy", spec.get("dnsPolicy"), DNS_POLICIES)
    causes += non_negative(f"{field}.terminationGracePeriodSeconds", spec.get("terminationGracePeriodSeconds"))
    return causes


def pod_template(template: Any, field: str, *, restart_policies: tuple[str, ...] = ("Always",),
                 claim_volumes: frozenset[str] = frozenset()) -> list[Cause]:
    if not isinstance(template, dict):
        return [required(field)]
    meta = member(template, "metadata")
    causes = validate_labels(meta.get("labels"), f"{field}.metadata.labels")
    return causes + pod_spec(template.get("spec"), f"{field}.spec", restart_policies=restart_policies,
                             claim_volumes=claim_volumes)


def _selector(selector: Any, field: str, kind: str) -> tuple[LabelSelector | None, list[Cause]]:
    if not isinstance(selector, dict):
        return None, [required(field)]
    try:
        parsed = LabelSelector.from_dict(selector)
    except APIError as exc:
        return None, [invalid(field, selector, exc.message)]
    causes = validate_labels(selector.get("matchLabels"), f"{field}.matchLabels")
    if parsed.empty:
        causes.append(raw_invalid(field, go_label_selector(selector), f"empty selector is invalid for {kind}"))
    return parsed, causes


def selector_and_template(spec: Obj, kind: str, *, template_key: str = "template",
                          restart_policies: tuple[str, ...] = ("Always",),
                          claim_volumes: frozenset[str] = frozenset()) -> list[Cause]:
    """A workload's selector is required, not empty, and selects its own template's labels."""
    selector, causes = _selector(spec.get("selector"), "spec.selector", kind)
    template = spec.get(template_key)
    causes += pod_template(template, f"spec.{template_key}", restart_policies=restart_policies,
                           claim_volumes=claim_volumes)
    labels = ((template or {}).get("metadata") or {}).get("labels") if isinstance(template, dict) else None
    if selector is not None and not selector.empty and not selector.matches(labels or {}):
        causes.append(raw_invalid(f"spec.{template_key}.metadata.labels", go_string_map(labels),
                                  "`selector` does not match template `labels`"))
    return causes


def immutable_selector(spec: Obj, old_spec: Obj) -> list[Cause]:
    if spec.get("selector") != old_spec.get("selector"):
        return [raw_invalid("spec.selector", go_label_selector(spec.get("selector")), IMMUTABLE)]
    return []


def replicas(spec: Obj) -> list[Cause]:
    return non_negative("spec.replicas", spec.get("replicas"))


# -- pods ---------------------------------------------------------------------------------------

POD_UPDATE_FORBIDDEN = ("pod updates may not change fields other than `spec.containers[*].image`,"
                        "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
                        "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
                        "(allow it to be set to 1 if it was previously negative)")


def _without_mutable(spec: Obj) -> Obj:
    out = dict(spec)
    for key in ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds"):
        out.pop(key, None)
    for key in ("containers", "initContainers"):
        if isinstance(out.get(key), list):
            out[key] = [{k: v for k, v in c.items() if k != "image"} if isinstance(c, dict) else c
                        for c in out[key]]
    return out


def pod_update(spec: Obj, old_spec: Obj) -> list[Cause]:
    """Only images, activeDeadlineSeconds, added tolerations and a negative grace period may change.
    A pod's nodeName is set once, by binding (or at creation)."""
    if _without_mutable(spec) != _without_mutable(old_spec):
        return [forbidden("spec", POD_UPDATE_FORBIDDEN)]
    old_tolerations = old_spec.get("tolerations") or []
    tolerations = spec.get("tolerations") or []
    if any(t not in tolerations for t in old_tolerations):
        return [forbidden("spec.tolerations", "existing toleration can not be modified except its "
                                             "tolerationSeconds")]
    return []
