"""`python -m kcp_sim_cluster`, as the console script."""

from kcp_sim_cluster.main import main

main()
