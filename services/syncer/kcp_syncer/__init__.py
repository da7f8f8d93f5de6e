"""kcp-syncer: the daemon around kcpcommon.sync (the engine the cluster controller also runs in push mode)."""
