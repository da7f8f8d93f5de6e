"""Which requests are long-running: kube-apiserver's check, which the timeout and in-flight filters skip.

A watch (or proxy) may rightly stay open for minutes; so may the streaming subresources (exec, attach,
log, portforward, proxy) and a syncer's tunnel (kcp's own).
"""

from __future__ import annotations

from kcp_apiserver.apimachinery.request import RequestInfo

LONG_RUNNING_VERBS = frozenset({"watch", "proxy"})
LONG_RUNNING_SUBRESOURCES = frozenset({"attach", "exec", "proxy", "log", "portforward", "tunnel"})


def is_long_running(info: RequestInfo) -> bool:
    if info.verb in LONG_RUNNING_VERBS:
        return True
    if info.is_resource:
        return info.subresource in LONG_RUNNING_SUBRESOURCES
    return info.path.startswith("/debug/pprof/")
