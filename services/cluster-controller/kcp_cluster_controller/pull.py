"""Pull mode: the syncer is installed into the physical cluster and runs there, with its own identities.

Downstream (in the physical cluster), per SyncTarget: a namespace `kcp-syncer-<hash>`, a
ServiceAccount, a Secret holding two kubeconfigs, a Deployment that runs `kcp-syncer` with the same flags
as on a command line, and two ClusterRoles, so that the syncer's token reaches namespaced objects only in
the namespaces it made for itself:

- `<name>`, bound cluster-wide: the cluster-scoped types it places (StorageClass, ...), and of namespaces
  only create, list and watch (it makes its own, and watches those carrying its owner label).
- `<name>-own-namespaces`: every namespaced synced and mirrored type, the pods' Events and streams, and
  get and delete of the namespace itself (kube authorizes a request on namespace N as one in N). It is
  bound by a RoleBinding in each namespace the syncer made: one carrying its owner label whose name is
  the hash of this logical cluster and the namespace its locator annotation names (so a label put on
  kube-system earns nothing), and one it made for a workspace placed on the SyncTarget (named the same way
  from that workspace, with that workspace's owner label and the SyncTarget's key annotation).

The syncer creates a namespace, then writes into it: its writes are refused (403) and retried with
backoff until this controller has bound the namespace. A watch on the cluster's namespaces carrying the
owner label binds one the moment it appears, so that is a round trip, not a wait for the next pass
(every heartbeat interval, which still binds what the watch missed or failed to bind). Seeing it may not
list a namespaced type cluster-wide, the syncer watches it one namespace of its own at a time
(`kcpsyncer.pernamespace`).

Upstream (in kcp, in the SyncTarget's logical cluster): a ServiceAccount `kcp-syncer-<name>` in
namespace `default`, a ClusterRole limited to the synced types, their status, Events and this
SyncTarget (with kcp's verb `sync` on it: the syncer virtual workspace of it, through which the syncer
reaches the workspaces placed on it and nothing else of them), and its binding. The Secret's `kcp.kubeconfig` carries a token for that account from
kcp's TokenRequest API: service-account tokens work only in their own logical cluster, so the
syncer cannot read any other. `cluster.kubeconfig` reaches the physical cluster with a token for
the downstream ServiceAccount; a cluster without the TokenRequest API gets the SyncTarget's own
credentials instead.

Everything is written with server-side apply (field manager `kcp-cluster-controller`), and only
when what is wanted changed or the token is past half its life. Deleting the SyncTarget removes
all of it, downstream unless the SyncTarget is annotated `workload.kcp.io/keep-downstream: "true"`.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import time
from pathlib import Path
from typing import Any

import structlog
import yaml

from kcpcommon.clients import ClientFactory, KubeClientFactory
from kcpcommon.errors import APIClientError, APINotFoundError
from kcpcommon.informer import SharedInformer
from kcpcommon.keys import ObjectKey, sync_target_key
from kcpcommon.tasks import cancel_and_wait, spawn
from kcpsyncer import NAMESPACE_LOCATOR_ANNOTATION
from kcpsyncer import downstream_namespace as mapped_namespace
from kcpsyncer.discovery import resolve
from kcpsyncer.names import OWNER_LABEL, SYNC_TARGET_KEY_ANNOTATION, owner
from kcpsyncer.upsync import UPSYNCED_RESOURCES

from . import VERSION
from . import conditions as cond
from .physical import split_resource
from .settings import ClusterControllerSettings

log = structlog.get_logger("kcp-cluster-controller.pull")

FIELD_MANAGER = "kcp-cluster-controller"
MOUNT = "/etc/kcp-syncer"
TOKEN_SECONDS = 24 * 3600
SERVICE_ACCOUNT = "kcp-syncer"
UPSTREAM_NAMESPACE = "default"
IN_CLUSTER_CA = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
ALL_VERBS = ["get", "list", "watch", "create", "update", "patch", "delete"]
# the streams kcp asks for through the tunnel, about the mirrored pods
POD_STREAMS = ["pods/log", "pods/exec", "pods/attach", "pods/portforward"]


def _hash(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:10]


def downstream_namespace(key: ObjectKey) -> str:
    return f"kcp-syncer-{_hash(key.cluster, key.name)}"


def upstream_account(key: ObjectKey) -> str:
    return f"kcp-syncer-{key.name}"[:63].rstrip("-")


def type_rules(resources: tuple[str, ...], verbs: list[str]) -> list[dict[str, Any]]:
    rules = []
    for resource in resources:
        plural, group = split_resource(resource)
        rules.append({"apiGroups": [group], "resources": [plural], "verbs": verbs})
        rules.append({"apiGroups": [group], "resources": [f"{plural}/status"], "verbs": ["get", "update", "patch"]})
    return rules


def own_namespaces_role(key: ObjectKey) -> str:
    """The ClusterRole bound in each of the syncer's own namespaces."""
    return f"{downstream_namespace(key)}-own-namespaces"


async def cluster_scoped(client: Any, resources: tuple[str, ...]) -> tuple[str, ...]:
    """The cluster-scoped ones of `resources`, as the physical cluster serves them (a type it does not
    serve yet counts as namespaced: it is granted nowhere beyond the syncer's own namespaces)."""
    types = [await resolve(client, resource) for resource in resources]
    return tuple(r for r, typ in zip(resources, types, strict=True) if typ is not None and not typ.namespaced)


def cluster_rules(cluster_wide: tuple[str, ...]) -> list[dict[str, Any]]:
    """What the syncer may do anywhere: its cluster-scoped types; make namespaces and watch its own."""
    return [*type_rules(cluster_wide, ALL_VERBS),
            {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["create", "list", "watch"]}]


def own_namespace_rules(namespaced: tuple[str, ...]) -> list[dict[str, Any]]:
    """What the syncer may do in a namespace of its own (bound there by a RoleBinding)."""
    return [*type_rules(namespaced, ALL_VERBS),
            # the namespace itself: kube authorizes get/patch/delete of namespace N as a request in N (a patch
            # says what keeps it once nothing synced is left: kcpsyncer/namespaces.py)
            {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "patch", "delete"]},
            {"apiGroups": [""], "resources": ["events"], "verbs": ["get", "list", "watch"]},  # pods' Events
            {"apiGroups": [""], "resources": POD_STREAMS, "verbs": ["get", "create"]}]


def mapped_namespace_of(key: ObjectKey, namespace: dict[str, Any]) -> bool:
    """`namespace` is one the syncer of `key` maps an upstream namespace to: its name is the hash of the workspace
    and the namespace its locator names (only a hash preimage would pass for kube-system), that workspace being
    this logical cluster, or one placed on the SyncTarget (the namespace then names the SyncTarget's key, as the
    syncer's engine of a placed workspace writes it, and carries that workspace's owner label)."""
    metadata = namespace.get("metadata") or {}
    annotations = metadata.get("annotations") or {}
    try:
        locator = json.loads(annotations.get(NAMESPACE_LOCATOR_ANNOTATION) or "")
    except ValueError:
        return False
    if not isinstance(locator, dict) or not isinstance(locator.get("logicalCluster"), str):
        return False
    workspace = locator["logicalCluster"]
    if workspace != key.cluster and annotations.get(SYNC_TARGET_KEY_ANNOTATION) != sync_target_key(key.cluster,
                                                                                                   key.name):
        return False
    if (metadata.get("labels") or {}).get(OWNER_LABEL) != owner(workspace, key.name):
        return False
    upstream = locator.get("namespace")
    return isinstance(upstream, str) and metadata.get("name") == mapped_namespace(workspace, upstream)


def syncer_args(key: ObjectKey, resources: tuple[str, ...], heartbeat_interval: float) -> list[str]:
    """kcp-syncer's flags, as anyone would pass them on a command line."""
    return ["--from-kubeconfig", f"{MOUNT}/kcp.kubeconfig", "--to-kubeconfig", f"{MOUNT}/cluster.kubeconfig",
            "--sync-target", key.name, "--logical-cluster", key.cluster, "--resources", ",".join(resources),
            "--heartbeat-interval", f"{heartbeat_interval:g}"]


def kubeconfig(server: str, ca_data: str | None, token: str, name: str) -> str:
    cluster: dict[str, Any] = {"server": server}
    if ca_data:
        cluster["certificate-authority-data"] = ca_data
    return yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "clusters": [{"name": name, "cluster": cluster}],
                           "users": [{"name": name, "user": {"token": token}}],
                           "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
                           "current-context": name})


def own_ca_data(settings: ClusterControllerSettings) -> str | None:
    """The CA of kcp's serving certificate, from this controller's kubeconfig (or its in-cluster account)."""
    if settings.kubeconfig is None:
        path = Path(IN_CLUSTER_CA)
        return base64.b64encode(path.read_bytes()).decode() if path.exists() else None
    config = yaml.safe_load(Path(settings.kubeconfig).read_text())
    contexts = {c["name"]: c["context"] for c in config.get("contexts") or []}
    context = contexts.get(settings.context or config.get("current-context") or "", {})
    clusters = {c["name"]: c["cluster"] for c in config.get("clusters") or []}
    cluster = clusters.get(context.get("cluster", ""), {})
    if cluster.get("certificate-authority-data"):
        return str(cluster["certificate-authority-data"])
    if cluster.get("certificate-authority"):
        return base64.b64encode(Path(cluster["certificate-authority"]).read_bytes()).decode()
    return None


class PullMode:
    def __init__(self, kcp: ClientFactory, settings: ClusterControllerSettings) -> None:
        self.kcp = kcp
        self.settings = settings
        self.kcp_server = (settings.syncer_kcp_server or kcp.server).rstrip("/")
        self.ca_data = own_ca_data(settings)
        self._installed: dict[ObjectKey, tuple[str, float]] = {}  # key -> (digest of what was applied, token due)
        self._bound: dict[ObjectKey, set[str]] = {}  # key -> uids of its syncer's namespaces bound
        self._watches: dict[ObjectKey, tuple[KubeClientFactory, list[asyncio.Task[None]]]] = {}  # its namespaces
        self._stopping: list[asyncio.Task[None]] = []

    async def ensure(self, key: ObjectKey, st: dict[str, Any], downstream: KubeClientFactory,
                     resources: tuple[str, ...]) -> cond.Condition:
        wanted = _hash(json.dumps([resources, st["spec"]["kubeconfig"], self.settings.syncer_image,
                                   self.settings.heartbeat_interval, self.kcp_server]))
        installed = self._installed.get(key)
        try:
            if installed is None or installed[0] != wanted or time.monotonic() >= installed[1]:
                await self._install_upstream(key, resources)
                token = await self._kcp_token(key)
                await self._install_downstream(key, st, downstream, resources, token)
                self._installed[key] = (wanted, time.monotonic() + TOKEN_SECONDS / 2)
                self._bound.pop(key, None)
                log.info("syncer installed into the physical cluster", sync_target=key.name, cluster=key.cluster,
                         namespace=downstream_namespace(key))
            self._watch_own_namespaces(key, downstream)
            await self._bind_own_namespaces(key, downstream)
            deployment = await downstream.dynamic().resource("apps/v1", "deployments", namespaced=True).get(
                SERVICE_ACCOUNT, namespace=downstream_namespace(key))
        except APIClientError as exc:
            self._installed.pop(key, None)
            return cond.condition(cond.SYNCER_READY, cond.FALSE, "SyncerInstallFailed", str(exc))
        available = (deployment.get("status") or {}).get("availableReplicas") or 0
        if available < 1:
            return cond.condition(cond.SYNCER_READY, cond.FALSE, "SyncerNotAvailable",
                                  f"deployment {downstream_namespace(key)}/{SERVICE_ACCOUNT} has no available replica")
        return cond.condition(cond.SYNCER_READY, cond.TRUE, "SyncerInstalled",
                              f"deployment {downstream_namespace(key)}/{SERVICE_ACCOUNT} is available")

    # -- kcp ----------------------------------------------------------------------------------

    async def _install_upstream(self, key: ObjectKey, resources: tuple[str, ...]) -> None:
        client = self.kcp.dynamic(key.cluster)
        account = upstream_account(key)
        rules = type_rules(resources, ["get", "list", "watch", "update", "patch"])
        # the types mirrored up (pods): the syncer makes and removes kcp's copies
        rules += type_rules(tuple(r for r in resources if r in UPSYNCED_RESOURCES), ["create", "delete"])
        if "pods" in resources:  # a copy is bound to the node its pod was scheduled to
            rules.append({"apiGroups": [""], "resources": ["pods/binding"], "verbs": ["create"]})
        rules += [{"apiGroups": ["workload.kcp.io"], "resources": ["synctargets", "synctargets/status",
                                                                   "synctargets/tunnel"],  # the pods' streams
                   # `sync`: kcp's syncer virtual workspace of it, to the workspaces placed on it
                   "resourceNames": [key.name], "verbs": ["get", "list", "watch", "update", "patch", "sync"]},
                  # SyncFailed Events, and the mirrored pods' Events (kept in step with the cluster's)
                  {"apiGroups": [""], "resources": ["events"],
                   "verbs": ["get", "list", "watch", "create", "patch", "update", "delete"]},
                  {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list", "watch"]}]
        objects: list[tuple[str, str, bool, dict[str, Any]]] = [
            ("v1", "serviceaccounts", True, {"apiVersion": "v1", "kind": "ServiceAccount",
                                             "metadata": {"name": account, "namespace": UPSTREAM_NAMESPACE}}),
            ("rbac.authorization.k8s.io/v1", "clusterroles", False, {
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": account}, "rules": rules}),
            ("rbac.authorization.k8s.io/v1", "clusterrolebindings", False, {
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": account},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": account},
                "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": UPSTREAM_NAMESPACE}]}),
        ]
        for api_version, plural, namespaced, body in objects:
            await _apply(client.resource(api_version, plural, namespaced=namespaced), body)

    async def _kcp_token(self, key: ObjectKey) -> str:
        client = self.kcp.dynamic(key.cluster)
        path = f"/api/v1/namespaces/{UPSTREAM_NAMESPACE}/serviceaccounts/{upstream_account(key)}/token"
        answer = await client.request("POST", path, body={"apiVersion": "authentication.k8s.io/v1",
                                                          "kind": "TokenRequest",
                                                          "spec": {"expirationSeconds": TOKEN_SECONDS}})
        return str(answer["status"]["token"])

    # -- the physical cluster -----------------------------------------------------------------

    async def _install_downstream(self, key: ObjectKey, st: dict[str, Any], downstream: KubeClientFactory,
                                  resources: tuple[str, ...], kcp_token: str) -> None:
        client = downstream.dynamic()
        namespace = downstream_namespace(key)
        name = f"{namespace}"  # cluster-scoped RBAC objects share the namespace's unique name
        labels = {"app.kubernetes.io/name": "kcp-syncer", "workload.kcp.io/sync-target": key.name}
        annotations = {"workload.kcp.io/logical-cluster": key.cluster}
        meta = {"labels": labels, "annotations": annotations}
        cluster_wide = await cluster_scoped(client, resources)
        namespaced = tuple(r for r in resources if r not in cluster_wide)
        await _apply(client.resource("v1", "namespaces", namespaced=False), {
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace, **meta}})
        await _apply(client.resource("v1", "serviceaccounts", namespaced=True), {
            "apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": SERVICE_ACCOUNT, "namespace": namespace, **meta}})
        await _apply(client.resource("rbac.authorization.k8s.io/v1", "clusterroles", namespaced=False), {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": name, **meta}, "rules": cluster_rules(cluster_wide)})
        await _apply(client.resource("rbac.authorization.k8s.io/v1", "clusterroles", namespaced=False), {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": own_namespaces_role(key), **meta}, "rules": own_namespace_rules(namespaced)})
        await _apply(client.resource("rbac.authorization.k8s.io/v1", "clusterrolebindings", namespaced=False), {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name, **meta},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": namespace}]})
        cluster_config = await self._cluster_kubeconfig(client, namespace, st, downstream)
        kcp_config = kubeconfig(f"{self.kcp_server}/clusters/{key.cluster}", self.ca_data, kcp_token, "kcp")
        await _apply(client.resource("v1", "secrets", namespaced=True), {
            "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": SERVICE_ACCOUNT, "namespace": namespace, **meta},
            "stringData": {"kcp.kubeconfig": kcp_config, "cluster.kubeconfig": cluster_config}})
        await _apply(client.resource("apps/v1", "deployments", namespaced=True), {
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": SERVICE_ACCOUNT, "namespace": namespace, **meta},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "strategy": {"type": "Recreate"},
                     "template": {"metadata": {"labels": labels}, "spec": {
                         "serviceAccountName": SERVICE_ACCOUNT,
                         "containers": [{"name": "syncer", "image": self.settings.syncer_image,
                                         "command": ["kcp-syncer"],
                                         "args": syncer_args(key, resources, self.settings.heartbeat_interval),
                                         "volumeMounts": [{"name": "kubeconfigs", "mountPath": MOUNT,
                                                           "readOnly": True}]}],
                         "volumes": [{"name": "kubeconfigs", "secret": {"secretName": SERVICE_ACCOUNT}}]}}}})

    def _watch_own_namespaces(self, key: ObjectKey, downstream: KubeClientFactory) -> None:
        """Bind each namespace its syncer makes the moment it appears (its writes there wait for that)."""
        watching = self._watches.get(key)
        if watching is not None and watching[0] is downstream:
            return
        self._stop_watch(key)
        informer = SharedInformer(downstream.dynamic().resource("v1", "namespaces", namespaced=False),
                                  cluster=key.name, label_selector=OWNER_LABEL,  # its own and its placed ones'
                                  name=f"pull:{key.cluster}:{key.name}:namespaces")
        unbound = asyncio.Event()

        def seen(namespace: dict[str, Any]) -> None:
            metadata = namespace.get("metadata") or {}
            if metadata.get("uid") not in self._bound.get(key, set()) and not metadata.get("deletionTimestamp") \
                    and mapped_namespace_of(key, namespace):
                unbound.set()

        async def bind_when_seen() -> None:
            while True:
                await unbound.wait()
                unbound.clear()
                try:
                    await self._bind_own_namespaces(key, downstream)
                except APIClientError as exc:  # the next pass binds it
                    log.warning("binding the syncer's new namespace failed", sync_target=key.name,
                                cluster=key.cluster, error=str(exc))

        informer.add_handler(on_add=seen, on_update=lambda old, new: seen(new), name="pull:bind")
        self._watches[key] = (downstream, [spawn(informer.run(), name=informer.name),
                                           spawn(bind_when_seen(), name=f"{informer.name}:bind")])

    def _stop_watch(self, key: ObjectKey) -> None:
        watching = self._watches.pop(key, None)
        if watching is not None:
            for task in watching[1]:
                task.cancel()
            self._stopping = [t for t in self._stopping if not t.done()] + watching[1]

    async def stop(self) -> None:
        """Stop every namespace watch (the controller is shutting down)."""
        for key in list(self._watches):
            self._stop_watch(key)
        stopping, self._stopping = self._stopping, []
        await cancel_and_wait(*stopping)

    async def _bind_own_namespaces(self, key: ObjectKey, downstream: KubeClientFactory) -> None:
        """A RoleBinding to the own-namespaces ClusterRole in each namespace the syncer made, once per namespace."""
        client = downstream.dynamic()
        listed = await client.resource("v1", "namespaces", namespaced=False).list(label_selector=OWNER_LABEL)
        bound = self._bound.setdefault(key, set())
        for namespace in listed.get("items") or []:
            metadata = namespace["metadata"]
            if metadata.get("uid") in bound or metadata.get("deletionTimestamp") or not mapped_namespace_of(
                    key, namespace):
                continue
            await _apply(client.resource("rbac.authorization.k8s.io/v1", "rolebindings", namespaced=True), {
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": downstream_namespace(key), "namespace": metadata["name"],
                             "labels": {"workload.kcp.io/sync-target": key.name}},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                            "name": own_namespaces_role(key)},
                "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT,
                              "namespace": downstream_namespace(key)}]})
            bound.add(str(metadata.get("uid")))
            log.info("syncer's namespace bound to its namespaced rights", sync_target=key.name,
                     cluster=key.cluster, namespace=metadata["name"])

    async def _cluster_kubeconfig(self, client: Any, namespace: str, st: dict[str, Any],
                                  downstream: KubeClientFactory) -> str:
        """A kubeconfig for the downstream ServiceAccount; the SyncTarget's own when the cluster issues no tokens."""
        try:
            answer = await client.request(
                "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{SERVICE_ACCOUNT}/token",
                body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                      "spec": {"expirationSeconds": TOKEN_SECONDS}})
        except APINotFoundError:
            log.warning("the physical cluster has no TokenRequest API: the syncer uses the SyncTarget's credentials",
                        namespace=namespace)
            return str(st["spec"]["kubeconfig"])
        source = yaml.safe_load(st["spec"]["kubeconfig"])
        contexts = {c["name"]: c["context"] for c in source.get("contexts") or []}
        context = contexts.get(source.get("current-context") or "", {})
        clusters = {c["name"]: c["cluster"] for c in source.get("clusters") or []}
        cluster = clusters.get(context.get("cluster", ""), {})
        return kubeconfig(downstream.server, cluster.get("certificate-authority-data"), answer["status"]["token"],
                          "cluster")

    async def remove(self, key: ObjectKey, st: dict[str, Any] | None, keep_downstream: bool) -> None:
        self._installed.pop(key, None)
        self._bound.pop(key, None)
        self._stop_watch(key)
        client = self.kcp.dynamic(key.cluster)
        account = upstream_account(key)
        for api_version, plural, namespace in (("rbac.authorization.k8s.io/v1", "clusterrolebindings", None),
                                               ("rbac.authorization.k8s.io/v1", "clusterroles", None),
                                               ("v1", "serviceaccounts", UPSTREAM_NAMESPACE)):
            try:
                await client.resource(api_version, plural, namespaced=namespace is not None).delete(
                    account, namespace=namespace)
            except APINotFoundError:
                pass
        if keep_downstream or st is None:
            return
        try:
            downstream = await KubeClientFactory.from_text(str(st["spec"]["kubeconfig"]), name=key.name,
                                                           component=FIELD_MANAGER, version=VERSION)
        except Exception:
            return  # a kubeconfig that never worked installed nothing
        async with downstream:
            dyn = downstream.dynamic()
            namespace = downstream_namespace(key)
            owned = await dyn.resource("v1", "namespaces", namespaced=False).list(
                label_selector=f"{OWNER_LABEL}={owner(key.cluster, key.name)}")
            removals: list[tuple[str, str, str, str | None]] = [
                ("rbac.authorization.k8s.io/v1", "rolebindings", namespace, str(ns["metadata"]["name"]))
                for ns in owned.get("items") or []]
            removals += [("rbac.authorization.k8s.io/v1", "clusterrolebindings", namespace, None),
                         ("rbac.authorization.k8s.io/v1", "clusterroles", namespace, None),
                         ("rbac.authorization.k8s.io/v1", "clusterroles", own_namespaces_role(key), None),
                         ("v1", "namespaces", namespace, None)]
            for api_version, plural, name, in_namespace in removals:
                try:
                    await dyn.resource(api_version, plural, namespaced=in_namespace is not None).delete(
                        name, namespace=in_namespace)
                except APINotFoundError:
                    pass
            log.info("syncer uninstalled from the physical cluster", sync_target=key.name, namespace=namespace)


async def _apply(resource: Any, body: dict[str, Any]) -> None:
    meta = body["metadata"]
    await resource.patch(meta["name"], body, namespace=meta.get("namespace"), patch_type="apply",
                         field_manager=FIELD_MANAGER, force=True)
