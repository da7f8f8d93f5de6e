"""kcp-sim-cluster: a physical Kubernetes cluster simulated in one process, assembled from kcp's apiserver."""
