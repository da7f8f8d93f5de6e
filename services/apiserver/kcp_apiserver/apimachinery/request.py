"""What a request is, once the filters have looked at it: who, where, what.

`RequestInfo` is kube's parse of the path; `UserInfo` is what an authenticator
proved; `RequestContext` carries both, with the query's write options, from the
filters through the endpoints to the registry and admission.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kcp_apiserver.apimachinery.deleteoptions import DeleteOptions

SYSTEM_MASTERS = "system:masters"
AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"
CREDENTIAL_ID = "authentication.kubernetes.io/credential-id"  # the `extra` key naming the credential used


@dataclass(frozen=True, slots=True)
class UserInfo:
    """An authenticated identity, as kube's user.Info; `cluster` is the logical cluster it belongs to ("" = any)."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()
    cluster: str = ""

    def as_dict(self) -> dict[str, Any]:
        """authentication.k8s.io/v1 UserInfo (audit events, reviews), empty fields omitted as kube's omitempty."""
        out: dict[str, Any] = {}
        if self.name:
            out["username"] = self.name
        if self.uid:
            out["uid"] = self.uid
        if self.groups:
            out["groups"] = list(self.groups)
        if self.extra:
            out["extra"] = {key: list(values) for key, values in self.extra}
        return out


ANONYMOUS = UserInfo("system:anonymous", groups=(UNAUTHENTICATED,))
SYSTEM = UserInfo("system:apiserver", groups=(SYSTEM_MASTERS, AUTHENTICATED))  # in-process controllers


@dataclass(frozen=True, slots=True)
class RequestInfo:
    cluster: str
    path: str  # the path inside the logical cluster
    is_resource: bool = False
    verb: str = ""
    api_prefix: str = ""  # "api" or "apis"
    group: str = ""
    version: str = ""
    namespace: str = ""
    resource: str = ""
    name: str = ""
    subresource: str = ""
    identity: str = ""  # across clusters (`*`), the export identity a bound type is named with (`widgets:<hash>`)

    @property
    def wildcard(self) -> bool:
        return self.cluster == "*"


@dataclass(frozen=True, slots=True)
class ExportRef:
    """An APIExport's virtual workspace a request came through (`/services/apiexport/<cluster>/<name>/...`)."""

    cluster: str  # the provider's logical cluster
    name: str  # the export


@dataclass(frozen=True, slots=True)
class SyncTargetRef:
    """A SyncTarget's syncer virtual workspace a request came through (`/services/syncer/<cluster>/<name>/...`)."""

    cluster: str  # the compute workspace holding the SyncTarget
    name: str  # the SyncTarget


@dataclass(slots=True)
class RequestContext:
    """One request's identity, target and options; built by the filters, read by registry and admission."""

    info: RequestInfo
    user: UserInfo = ANONYMOUS
    dry_run: bool = False
    field_manager: str = ""
    user_agent: str = ""
    delete_options: DeleteOptions = field(default_factory=DeleteOptions)
    annotations: dict[str, str] = field(default_factory=dict)  # for the audit event (the authorization decision)
    impersonator: UserInfo | None = None  # who authenticated, when `user` is an identity it impersonates
    deadline: float | None = None  # the event loop's time at which --request-timeout ends it (None: no limit)
    export: ExportRef | None = None  # came through this export's virtual workspace (info names the consumer)
    initializer: str = ""  # came through this initializer's (`<path>:<name>`) initializing virtual workspace
    syncer: SyncTargetRef | None = None  # came through this SyncTarget's syncer virtual workspace (info names the
    # workspace reached)

    @property
    def cluster(self) -> str:
        return self.info.cluster



def system_context(cluster: str, *, namespace: str = "", verb: str = "") -> RequestContext:
    """The context of the server's own writes (controllers, logical-cluster bootstrap)."""
    return RequestContext(RequestInfo(cluster, "", namespace=namespace, verb=verb), user=SYSTEM)
