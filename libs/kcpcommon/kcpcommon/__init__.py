"""kcpcommon: the shared controller runtime of kcp's daemons (client-go and controller-runtime, in asyncio)."""
