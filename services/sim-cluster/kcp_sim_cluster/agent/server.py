"""What the agent learns from the API server before it registers nodes: the release its kubelets claim
(kubelets run the control plane's minor release) and whether node Leases exist there."""

from __future__ import annotations

import re
from dataclasses import dataclass

from kcpcommon.dynamic import DynamicClient
from kcpcommon.errors import APINotFoundError

_GIT_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?")
FALLBACK_VERSION = "v1.34.0"


@dataclass(frozen=True)
class ServerFacts:
    kubelet_version: str  # nodeInfo.kubeletVersion, e.g. v1.20.15
    serves_leases: bool  # coordination.k8s.io/v1: node heartbeats are Leases (kube 1.14 and later)


def kubelet_version(git_version: str) -> str:
    """The server's `vMAJOR.MINOR.PATCH` without build metadata (`v1.34.0+sim` -> `v1.34.0`)."""
    match = _GIT_VERSION.match(git_version.strip())
    if match is None:
        return FALLBACK_VERSION
    major, minor, patch = match.groups()
    return f"v{major}.{minor}.{patch or 0}"


async def server_facts(client: DynamicClient) -> ServerFacts:
    version = await client.request("GET", "/version")
    try:
        await client.request("GET", "/apis/coordination.k8s.io/v1")
        leases = True
    except APINotFoundError:
        leases = False
    return ServerFacts(kubelet_version=kubelet_version(str((version or {}).get("gitVersion") or "")),
                       serves_leases=leases)
