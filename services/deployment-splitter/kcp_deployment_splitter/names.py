"""The names the splitter writes and reads: labels, annotations, child names, condition reasons."""

from __future__ import annotations

from kcpcommon.keys import ASSIGNMENT_LABEL

__all__ = ["ASSIGNMENT_LABEL", "CAPACITY_ANNOTATION", "COMPONENT", "PLACEMENT_ANNOTATION", "ROOT_GENERATION_ANNOTATION",
           "ROOT_LABEL", "child_name"]

COMPONENT = "kcp-deployment-splitter"
# on a child: the root Deployment's name (the ownerReference carries its uid)
ROOT_LABEL = "splitter.kcp.io/root"
# on a child: the root's metadata.generation the child's spec was last written from
ROOT_GENERATION_ANNOTATION = "splitter.kcp.io/root-generation"
# on a child: replicas its cluster was seen unable to run, and the allocatable that was measured against
CAPACITY_ANNOTATION = "splitter.kcp.io/capacity"
# on a root, break-glass: "east,west" restricts the targets; "east=3,west=1" also weighs them
PLACEMENT_ANNOTATION = "splitter.kcp.io/placement"

SYNC_TARGETS = ("workload.kcp.io/v1alpha1", "synctargets")
DEPLOYMENTS = ("apps/v1", "deployments")
REPLICA_SETS = ("apps/v1", "replicasets")  # a root's revisions in kcp (`revisions.py`)


def child_name(root: str, target: str) -> str:
    """`D--<synctarget>`, the architecture's contract."""
    return f"{root}--{target}"

# multi-target assignment (kcp's TMC anchor): `state.workload.kcp.io/<synctarget>: Sync` on an object
# puts it on that physical cluster, one label per cluster; the single assignment label keeps working
STATE_LABEL_PREFIX = "state.workload.kcp.io/"
STATE_SYNC = "Sync"
# on a dependency: the targets the splitter placed it on (so labels a person set are never removed)
PLACED_ANNOTATION = "splitter.kcp.io/placed-on"


def state_label(target: str) -> str:
    return STATE_LABEL_PREFIX + target

# namespace scheduling (kcp's namespace scheduler is the anchor)
NAMESPACE_PLACED_ANNOTATION = "splitter.kcp.io/namespace-placed"  # on an object: labelled by its namespace's rule
SCHEDULING_DISABLED_LABEL = "scheduling.kcp.io/disabled"  # on a Namespace: opt out of namespace scheduling
NAMESPACE_SCHEDULED = "NamespaceScheduled"  # the Namespace condition set when no target is schedulable
