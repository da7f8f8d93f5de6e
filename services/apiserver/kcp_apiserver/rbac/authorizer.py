"""The RBAC authorizer, per logical cluster.

- `system:masters` may do anything anywhere: no lookup at all.
- An identity that belongs to a logical cluster (a service account's) is a stranger everywhere else,
  including `/clusters/*`: denied before any binding is read.
- A request in a logical cluster is allowed by that cluster's bindings only (and the shared defaults).
- A wildcard request (`/clusters/*/...`, list and watch across every logical cluster) is allowed only
  by a ClusterRoleBinding in the `admin` logical cluster to a ClusterRole granting it; RoleBindings
  and other clusters' bindings never grant it.
"""

from __future__ import annotations

from dataclasses import dataclass

from kcp_apiserver.apimachinery.request import SYSTEM_MASTERS, RequestContext, RequestInfo, UserInfo
from kcp_apiserver.rbac.policy import PolicyIndex
from kcp_apiserver.registry.clusters import DEFAULT_CLUSTER


@dataclass(frozen=True, slots=True)
class Decision:
    """The filter's Decision shape (filters.authorization), without importing the layer above."""

    allowed: bool
    reason: str = ""


ALLOW = Decision(True)
DENY = Decision(False)


class RBACAuthorizer:
    def __init__(self, index: PolicyIndex, *, wildcard_cluster: str = DEFAULT_CLUSTER) -> None:
        self.index = index
        self.wildcard_cluster = wildcard_cluster

    async def authorize(self, ctx: RequestContext) -> Decision:
        return self.decide(ctx.user, ctx.info)

    def allows(self, user: UserInfo, info: RequestInfo) -> bool:
        return self.decide(user, info).allowed

    def decide(self, user: UserInfo, info: RequestInfo) -> Decision:
        if user.cluster and user.cluster != info.cluster:
            return DENY
        if SYSTEM_MASTERS in user.groups:
            return ALLOW  # kube's privileged-group authorizer gives no reason either
        if info.wildcard:
            reason = self.index.grant(self.wildcard_cluster, user, info, cluster_wide_only=True)
        else:
            reason = self.index.grant(info.cluster, user, info)
        return DENY if reason is None else Decision(True, reason)
