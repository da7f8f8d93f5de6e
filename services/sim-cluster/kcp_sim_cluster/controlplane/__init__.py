"""The simulated control plane: kube-controller-manager, scheduler and kubelets of each simulated cluster."""

from __future__ import annotations

from kcp_apiserver.embedding import ControllerFactory, Runnable, ServerParts
from kcp_sim_cluster.controlplane.options import ControlPlaneOptions

__all__ = ["ControlPlaneOptions", "control_plane"]


def control_plane(options: ControlPlaneOptions) -> list[ControllerFactory]:
    """The controllers of the simulated clusters, as ServerConfig controller factories."""

    def build(parts: ServerParts) -> Runnable:
        from kcp_sim_cluster.controlplane.plane import ControlPlane

        return ControlPlane(parts, options)

    return [build]
