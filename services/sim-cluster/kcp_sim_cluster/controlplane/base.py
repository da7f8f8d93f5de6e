"""The shape of a simulated controller: a kcpcommon Controller over keys, fed by shared informers."""

from __future__ import annotations

import abc
from collections.abc import Coroutine
from typing import Any

from kcp_sim_cluster.controlplane.expectations import Expectations
from kcp_sim_cluster.controlplane.informer import controller_uid, key_of
from kcp_sim_cluster.controlplane.objects import Obj
from kcp_sim_cluster.controlplane.runtime import Sim
from kcpcommon.controller import Controller, Result
from kcpcommon.keys import ObjectKey

COALESCE_SECONDS = 0.05  # dependents' events this close together cost one reconcile of their owner


class SimController(abc.ABC):
    """Subclasses name the informers they need, wire their handlers and reconcile one key."""

    name = "sim"
    needs: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()  # informers used when the server serves them
    workers = 1

    def __init__(self, sim: Sim) -> None:
        self.sim = sim
        self.controller: Controller[ObjectKey] = Controller(self.name, self.reconcile, workers=self.workers)

    def wire(self) -> None:
        """Register informer handlers (before the informers start); a controller without any keeps this."""
        return None

    def background(self) -> list[Coroutine[Any, Any, None]]:
        """Loops that run beside the workers (heartbeats)."""
        return []

    def initial_keys(self) -> list[ObjectKey]:
        """Keys to reconcile once the informers have synced (objects that must exist)."""
        return []

    @abc.abstractmethod
    async def reconcile(self, key: ObjectKey) -> Result | None:
        """Bring one object to what its inputs ask for."""

    def enqueue(self, obj: Obj | None) -> None:
        if obj is not None:
            self.controller.enqueue(key_of(obj))

    def watch_owned(self, owners: str, dependents: str, expectations: Expectations | None = None) -> None:
        """Reconcile an owner when it changes and when anything it controls does; count what appears
        against `expectations`."""
        informer = self.sim.informer(owners)
        informer.add_index("uid", lambda o: [o["metadata"].get("uid", "")])
        informer.add_handler(lambda old, new: self.enqueue(new if new is not None else old))

        def on_dependent(old: Obj | None, new: Obj | None) -> None:
            obj = new if new is not None else old
            assert obj is not None
            for key in informer.keys_by_index("uid", controller_uid(obj)):
                if old is None and expectations is not None:
                    expectations.created(key)
                self.enqueue_soon(key)

        self.sim.informer(dependents).add_handler(on_dependent)

    def enqueue_soon(self, key: ObjectKey) -> None:
        """Queue an owner for a change of one of its many dependents (pods): a burst of them, as a rollout
        of a thousand pods makes, is coalesced into one reconcile per `COALESCE_SECONDS`."""
        self.controller.queue.add_after(key, COALESCE_SECONDS)
