"""`python -m kcp_cluster_controller` is `kcp-cluster-controller`."""

from kcp_cluster_controller.main import main

main()
