"""kcp-cluster-controller: SyncTargets, the physical clusters' API types in kcp, and their syncers."""
