"""A pod's binding subresource (POST pods/NAME/binding), kube's one way to set `spec.nodeName` on an
existing pod: the simulator's scheduler binds with it, and kcp serves it so a syncer can show, on the copy of
a pod it mirrors, the node the cluster's scheduler chose (pod validation refuses that change on update)."""

from __future__ import annotations

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.kubetypes.fields import member
from kcp_apiserver.registry.actions import Action, ActionCall, ActionResult
from kcp_apiserver.registry.resource import Obj
from kcp_apiserver.registry.store import now_rfc3339


async def bind(call: ActionCall) -> ActionResult:
    """Sets spec.nodeName and PodScheduled=True; 409 if the pod is already bound or being deleted."""
    body = call.body or {}
    target = member(body, "target")
    node = target.get("name") or ""
    meta = member(body, "metadata")
    if meta.get("name") and meta["name"] != call.name:
        raise st.bad_request(f"the name of the object ({meta['name']}) does not match the name on the URL "
                             f"({call.name})")
    if not node:
        raise st.invalid("Binding", call.name, [st.Cause("FieldValueRequired", "Required value", "target.name")])
    if target.get("kind") not in (None, "", "Node"):
        raise st.invalid("Binding", call.name, [st.Cause("FieldValueNotSupported",
                                                         f'Unsupported value: "{target["kind"]}": supported '
                                                         'values: "Node"', "target.kind")])

    def assign(pod: Obj) -> Obj:
        spec = pod.setdefault("spec", {})
        if pod["metadata"].get("deletionTimestamp"):
            raise st.conflict("pods/binding", call.name, why=f"pod {call.name} is being deleted, cannot be "
                                                             "assigned to a host")
        if spec.get("nodeName"):
            raise st.conflict("pods/binding", call.name, why=f"pod {call.name} is already assigned to node "
                                                             f'"{spec["nodeName"]}"')
        spec["nodeName"] = node
        annotations = meta.get("annotations")
        if isinstance(annotations, dict) and annotations:
            pod["metadata"].setdefault("annotations", {}).update(annotations)
        return pod

    bound = await call.registry.patch(call.resource, call.cluster, call.namespace, call.name, assign,
                                      subresource="binding", dry_run=call.dry_run, ctx=call.ctx)

    def scheduled(pod: Obj) -> Obj:
        status = pod.setdefault("status", {})
        conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
        conditions.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                           "lastTransitionTime": now_rfc3339()})
        status["conditions"] = conditions
        if call.resource.is_custom and call.resource.type_schema is not None:
            call.resource.type_schema.prune(pod)  # served as a CRD (kcp's imported Pod): the null decodes away
        return pod

    if not call.dry_run and bound:
        await call.registry.patch(call.resource, call.cluster, call.namespace, call.name, scheduled,
                                  subresource="status", ctx=call.ctx)
    return action_created()


def action_created() -> ActionResult:
    """What kube answers a binding or an eviction: 201 and a Success Status that carries the code."""
    return ActionResult(201, {**st.success_status(), "code": 201})


BINDING = Action("binding", ("create",), bind, ("", "v1", "Binding"))
