"""`python -m kcp_deployment_splitter` is `kcp-deployment-splitter`."""

from kcp_deployment_splitter.main import main

main()
