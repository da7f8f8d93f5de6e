"""kcp-deployment-splitter: spreads root Deployments over Ready SyncTargets and sums their status back."""
