"""The replication manager: kube runs its ReplicaSet controller over ReplicationControllers (their
label-map selector read as the equivalent set-based one), and so does the sim: pods `<rc>-<5 chars>`
owned by the RC, slow-start, adoption, deletion order and status are replicaset.py's."""

from __future__ import annotations

from kcp_sim_cluster.controlplane.replicaset import ReplicaSetController


class ReplicationManager(ReplicaSetController):
    name = "sim-replicationmanager"
    owners = "replicationcontrollers"
    component = "replication-controller"
    needs = ("replicationcontrollers", "pods")
