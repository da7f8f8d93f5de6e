"""kcp-cluster-controller: SyncTargets, the physical clusters' API types in kcp, and their syncers."""

from kcpcommon.version import package_version

VERSION = package_version("kcp-cluster-controller")
