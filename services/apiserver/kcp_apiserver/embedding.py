"""The API server as a library: the one module an embedder (kcp-sim-cluster) imports.

An embedder builds its own Kubernetes API server out of this package: it declares built-in types
(`Resource`, `Strategy`, kube's defaults and table columns), adds admission and subresource actions,
runs controllers beside the server on the parts `ServerConfig` hands them (registry, storage, watch
caches), and starts the server with the apiserver's own CLI plumbing. These names are exactly what
the simulator uses; everything else in `kcp_apiserver` stays free to change. The sim's import-linter
contract (services/sim-cluster/pyproject.toml) allows this module and nothing else of the package.
"""

from __future__ import annotations

from kcp_apiserver.admission.serviceips import SERVICE_CIDR, ServiceIPs, taken_ips
from kcp_apiserver.apiextensions.crd import CRD
from kcp_apiserver.apiextensions.reserved import ReservedGroups
from kcp_apiserver.apimachinery import status
from kcp_apiserver.apimachinery.deleteoptions import Propagation
from kcp_apiserver.apimachinery.jsonvalues import json_copy
from kcp_apiserver.apimachinery.request import system_context
from kcp_apiserver.apimachinery.selectors import LabelSelector
from kcp_apiserver.apimachinery.status import APIError, Cause
from kcp_apiserver.controllers.kubernetes_service import kubernetes_service
from kcp_apiserver.endpoints import spdyupgrade
from kcp_apiserver.endpoints.nonresource import version_info
from kcp_apiserver.kubetypes import hpaversions
from kcp_apiserver.kubetypes.defaults import qos_class
from kcp_apiserver.kubetypes.fields import member, spec
from kcp_apiserver.kubetypes.kinds import Defaulter, KubeType, kube_type
from kcp_apiserver.kubetypes.podbinding import BINDING, action_created
from kcp_apiserver.kubetypes.scheduling import SYSTEM_CLASSES, system_class
from kcp_apiserver.registry.actions import Action, ActionCall, ActionResult
from kcp_apiserver.registry.admission import CREATE, DELETE, UPDATE, Attributes
from kcp_apiserver.registry.builtin import BUILTINS
from kcp_apiserver.registry.builtin.declare import for_release, kube_resource
from kcp_apiserver.registry.builtin.podcolumns import POD, pod_restarts, pod_status
from kcp_apiserver.registry.builtin.reviews import RESOURCES as REVIEWS
from kcp_apiserver.registry.builtin.workloads import (
    CONTAINERS,
    DAEMON_SET,
    DEPLOYMENT,
    IMAGES,
    REPLICA_SET,
    SELECTOR,
    SERVICE,
    STATEFUL_SET,
    format_label_selector,
)
from kcp_apiserver.registry.builtinschemas import RELEASES, newest_release
from kcp_apiserver.registry.catalog import Catalog, WatchCaches
from kcp_apiserver.registry.clusters import DEFAULT_CLUSTER
from kcp_apiserver.registry.informers import Informers, WatchCacheInformer
from kcp_apiserver.registry.resource import Column, Obj, Resource
from kcp_apiserver.registry.scale import BuiltinScale
from kcp_apiserver.registry.store import Registry, now_rfc3339
from kcp_apiserver.registry.strategy import Strategy
from kcp_apiserver.registry.tables import AGE, NAME, field_at, human_duration, parse_time, wide_column
from kcp_apiserver.server.cli import Backend, kcp_server_config, run, start_event_loop
from kcp_apiserver.server.config import AdmissionFactory, ControllerFactory, Runnable, ServerConfig, ServerParts
from kcp_apiserver.server.pki import Credentials, write_contexts_kubeconfig
from kcp_apiserver.server.settings import APIServerSettings
from kcp_apiserver.storage.etcd import KeyNotFound, RevisionConflict, Storage, Stored
from kcp_apiserver.storage.keys import scope_prefix
from kcp_apiserver.storage.watchcache import DELETED, WatchCache

__all__ = [
    "AGE",
    "BINDING",
    "BUILTINS",
    "CONTAINERS",
    "CRD",
    "CREATE",
    "DAEMON_SET",
    "DEFAULT_CLUSTER",
    "DELETE",
    "DELETED",
    "DEPLOYMENT",
    "IMAGES",
    "NAME",
    "POD",
    "RELEASES",
    "REPLICA_SET",
    "REVIEWS",
    "SELECTOR",
    "SERVICE",
    "SERVICE_CIDR",
    "STATEFUL_SET",
    "SYSTEM_CLASSES",
    "UPDATE",
    "APIError",
    "APIServerSettings",
    "Action",
    "ActionCall",
    "ActionResult",
    "AdmissionFactory",
    "Attributes",
    "Backend",
    "BuiltinScale",
    "Catalog",
    "Cause",
    "Column",
    "ControllerFactory",
    "Credentials",
    "Defaulter",
    "Informers",
    "KeyNotFound",
    "KubeType",
    "LabelSelector",
    "Obj",
    "Propagation",
    "Registry",
    "ReservedGroups",
    "Resource",
    "RevisionConflict",
    "Runnable",
    "ServerConfig",
    "ServerParts",
    "ServiceIPs",
    "Storage",
    "Stored",
    "Strategy",
    "WatchCache",
    "WatchCacheInformer",
    "WatchCaches",
    "action_created",
    "field_at",
    "for_release",
    "format_label_selector",
    "hpaversions",
    "human_duration",
    "json_copy",
    "kcp_server_config",
    "kube_resource",
    "kube_type",
    "kubernetes_service",
    "member",
    "newest_release",
    "now_rfc3339",
    "parse_time",
    "pod_restarts",
    "pod_status",
    "qos_class",
    "run",
    "scope_prefix",
    "spdyupgrade",
    "spec",
    "start_event_loop",
    "status",
    "system_class",
    "system_context",
    "taken_ips",
    "version_info",
    "wide_column",
    "write_contexts_kubeconfig",
]
