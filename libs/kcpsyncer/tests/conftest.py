"""The syncer library's tests: decisions against fakes, and syncers embedded against one real kcp per session."""

from __future__ import annotations

from kcp_fixtures import kcp, kubeconfig_text, make_proxy, no_leaked_tasks, unique

# imported so that pytest finds them (tests/e2e/kcp_fixtures.py, shared with libs/kcpcommon)
__all__ = ["kcp", "kubeconfig_text", "make_proxy", "no_leaked_tasks", "unique"]
