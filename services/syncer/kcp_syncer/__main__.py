"""`python -m kcp_syncer` is `kcp-syncer`."""

from kcp_syncer.cli import main

main()
