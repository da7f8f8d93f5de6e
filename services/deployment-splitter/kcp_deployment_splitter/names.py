"""The names the splitter writes and reads: labels, annotations, condition reasons (a root's shares: shares.py)."""

from __future__ import annotations

from kcpcommon.keys import ASSIGNMENT_LABEL, STATE_LABEL_PREFIX

__all__ = ["ASSIGNMENT_LABEL", "CAPACITY_ANNOTATION", "COMPONENT", "PLACEMENT_ANNOTATION"]

COMPONENT = "kcp-deployment-splitter"
# in a share's view (shares.share_view): replicas its cluster was seen unable to run, and the allocatable that was
# measured against; on the root as `splitter.kcp.io/capacity.<target>`
CAPACITY_ANNOTATION = "splitter.kcp.io/capacity"
# on a root, break-glass: "east,west" restricts the targets; "east=3,west=1" also weighs them
PLACEMENT_ANNOTATION = "splitter.kcp.io/placement"

SYNC_TARGETS = ("workload.kcp.io/v1alpha1", "synctargets")
DEPLOYMENTS = ("apps/v1", "deployments")
REPLICA_SETS = ("apps/v1", "replicasets")  # a root's revisions in kcp (`revisions.py`)

# multi-target assignment (kcp's TMC anchor): `state.workload.kcp.io/<synctarget>: Sync` on an object
# puts it on that physical cluster, one label per cluster; the single assignment label keeps working
STATE_SYNC = "Sync"
# on a dependency: the targets the splitter placed it on (so labels a person set are never removed)
PLACED_ANNOTATION = "splitter.kcp.io/placed-on"


def state_label(target: str) -> str:
    return STATE_LABEL_PREFIX + target

# namespace scheduling (kcp's namespace scheduler is the anchor)
NAMESPACE_PLACED_ANNOTATION = "splitter.kcp.io/namespace-placed"  # on an object: labelled by its namespace's rule
SCHEDULING_DISABLED_LABEL = "scheduling.kcp.io/disabled"  # on a Namespace: opt out of namespace scheduling
NAMESPACE_SCHEDULED = "NamespaceScheduled"  # the Namespace condition set when no target is schedulable
