"""kcp-syncer: the daemon around the kcpsyncer library (the engine the cluster controller also runs in push mode)."""
