"""The Job controller: runs pods until enough succeed (Complete) or too many fail (Failed).

Up to `parallelism` pods run at once, never more than the completions still missing; the simulated
kubelet completes each after `--ready-delay`. Status: startTime, active, ready, succeeded, failed,
completionTime and the conditions Complete (CompletionsReached) or Failed (BackoffLimitExceeded).
A suspended Job deletes its running pods.
"""

from __future__ import annotations

import asyncio
from typing import Any

from kcp_apiserver.registry.resource import Resource
from kcp_sim_cluster.controlplane.base import SimController
from kcp_sim_cluster.controlplane.events import NORMAL, WARNING
from kcp_sim_cluster.controlplane.expectations import Expectations
from kcp_sim_cluster.controlplane.informer import controller_uid
from kcp_sim_cluster.controlplane.objects import Obj, copy_obj, get_condition, is_deleting, rfc3339, set_condition
from kcp_sim_cluster.controlplane.podutil import is_active, is_ready, phase
from kcp_sim_cluster.controlplane.replicaset import pod_from_template
from kcp_sim_cluster.controlplane.runtime import Sim
from kcpcommon.controller import Result
from kcpcommon.keys import ObjectKey

COMPONENT = "job-controller"


def finished(job: Obj) -> bool:
    return any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
               for c in (job.get("status") or {}).get("conditions") or [])


class JobController(SimController):
    name = "sim-job"
    needs = ("jobs", "pods")
    workers = 2

    def __init__(self, sim: Sim) -> None:
        super().__init__(sim)
        self.job_res: Resource = sim.resource("jobs")  # type: ignore[assignment]
        self.pod_res: Resource = sim.resource("pods")  # type: ignore[assignment]
        self.expectations = Expectations()

    def wire(self) -> None:
        informer = self.sim.informer("jobs")
        informer.add_index("uid", lambda o: [o["metadata"].get("uid", "")])
        informer.add_handler(lambda old, new: self.enqueue(new if new is not None else old))
        self.sim.informer("pods").add_handler(self._on_pod)

    def _on_pod(self, old: Obj | None, new: Obj | None) -> None:
        pod = new if new is not None else old
        assert pod is not None
        for key in self.sim.informer("jobs").keys_by_index("uid", controller_uid(pod)):
            if old is None:
                self.expectations.created(key)
            self.enqueue_soon(key)

    async def reconcile(self, key: ObjectKey) -> Result | None:
        job = self.sim.informer("jobs").get(key)
        if job is None:
            self.expectations.forget(key)
            return None
        if finished(job):
            return None
        spec = job.get("spec") or {}
        pods = self.sim.informer("pods").by_index("owner", job["metadata"]["uid"])
        active = [p for p in pods if is_active(p)]
        succeeded = sum(1 for p in pods if phase(p) == "Succeeded")
        failed = sum(1 for p in pods if phase(p) == "Failed")
        completions = spec.get("completions")
        parallelism = int(spec.get("parallelism", 1))
        backoff_limit = int(spec.get("backoffLimit", 6))
        outcome = ""
        if failed > backoff_limit:
            outcome = "Failed"
        elif (completions is not None and succeeded >= int(completions)) or \
                (completions is None and succeeded > 0 and not active):
            outcome = "Complete"
        if outcome or spec.get("suspend"):
            await asyncio.gather(*(self.sim.delete(self.pod_res, p) for p in active if not is_deleting(p)))
            active = []
        elif not is_deleting(job) and self.expectations.satisfied(key):
            remaining = (int(completions) - succeeded) if completions is not None else parallelism
            wanted = max(min(parallelism, remaining) - len(active), 0)
            if wanted:
                self.expectations.expect(key, adds=wanted)
                template = spec.get("template") or {}

                async def create() -> None:
                    pod = pod_from_template(job, template, generate_name=f"{key.name}-")
                    created = await self.sim.create(self.pod_res, key.cluster, key.namespace, pod)
                    if created is None:
                        self.expectations.created(key)
                        return
                    self.sim.recorder.record(job, NORMAL, "SuccessfulCreate",
                                             f"Created pod: {created['metadata']['name']}", component=COMPONENT)

                await asyncio.gather(*(create() for _ in range(wanted)))
        await self._status(job, active, succeeded, failed, outcome)
        return None

    async def _status(self, job: Obj, active: list[Obj], succeeded: int, failed: int, outcome: str) -> None:
        stamp = rfc3339()
        suspended = bool((job.get("spec") or {}).get("suspend"))

        def update(current: dict[str, Any]) -> bool:
            status = current.setdefault("status", {})
            before = copy_obj(status)
            if not suspended:
                status.setdefault("startTime", stamp)
            for field, value in (("active", len(active)), ("succeeded", succeeded), ("failed", failed)):
                if value:
                    status[field] = value
                else:
                    status.pop(field, None)
            status["ready"] = sum(1 for p in active if is_ready(p))
            status["terminating"] = 0
            status.setdefault("uncountedTerminatedPods", {})
            if suspended and not outcome:
                set_condition(status, "Suspended", "True", "JobSuspended", "Job suspended")
            elif get_condition(status, "Suspended") is not None:
                set_condition(status, "Suspended", "False", "JobResumed", "Job resumed")
            if outcome == "Complete":
                set_condition(status, "SuccessCriteriaMet", "True", "CompletionsReached",
                              "Reached expected number of succeeded pods", when=stamp)
                set_condition(status, "Complete", "True", "CompletionsReached",
                              "Reached expected number of succeeded pods", when=stamp)
                status["completionTime"] = stamp
            elif outcome == "Failed":
                set_condition(status, "FailureTarget", "True", "BackoffLimitExceeded",
                              "Job has reached the specified backoff limit", when=stamp)
                set_condition(status, "Failed", "True", "BackoffLimitExceeded",
                              "Job has reached the specified backoff limit", when=stamp)
            for cond in status.get("conditions") or []:
                cond.setdefault("lastProbeTime", cond.get("lastTransitionTime"))
            return status != before

        written = await self.sim.write_status(self.job_res, job, update)
        if written is not None and outcome == "Complete":
            self.sim.recorder.record(job, NORMAL, "Completed", "Job completed", component=COMPONENT)
        elif written is not None and outcome == "Failed":
            self.sim.recorder.record(job, WARNING, "BackoffLimitExceeded", "Job has reached the specified backoff limit",
                                     component=COMPONENT)
