"""The Job controller: runs pods until enough succeed (Complete) or too many fail (Failed).

Up to `parallelism` pods run at once, never more than the completions still missing; the simulated
kubelet completes each after `--ready-delay`. Status: startTime, active, ready, succeeded, failed,
completionTime and the conditions Complete (CompletionsReached) or Failed (BackoffLimitExceeded).
A suspended Job deletes its running pods.
"""

from __future__ import annotations

import asyncio
from typing import Any

from kcp_apiserver.embedding import Resource
from kcp_sim_cluster.controlplane.base import SimController
from kcp_sim_cluster.controlplane.events import NORMAL, WARNING
from kcp_sim_cluster.controlplane.expectations import Expectations
from kcp_sim_cluster.controlplane.objects import (
    Obj,
    annotations_of,
    copy_obj,
    get_condition,
    is_deleting,
    labels,
    set_condition,
)
from kcp_sim_cluster.controlplane.podutil import is_active, is_ready, phase
from kcp_sim_cluster.controlplane.replicaset import pod_from_template
from kcp_sim_cluster.controlplane.runtime import Sim
from kcpcommon.controller import Result
from kcpcommon.keys import ObjectKey
from kcpcommon.kubetime import format_time as rfc3339

COMPONENT = "job-controller"
INDEX_KEY = "batch.kubernetes.io/job-completion-index"


def finished(job: Obj) -> bool:
    return any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
               for c in (job.get("status") or {}).get("conditions") or [])


def restarts(pods: list[Obj]) -> int:
    """Container restarts of pods that restart on failure (each is one more try, as kube counts them)."""
    return sum(int(c.get("restartCount") or 0) for p in pods
               if (p.get("spec") or {}).get("restartPolicy") == "OnFailure"
               for c in (p.get("status") or {}).get("containerStatuses") or [])


def completion_index(pod: Obj) -> int | None:
    value = annotations_of(pod).get(INDEX_KEY) or labels(pod).get(INDEX_KEY)
    return int(value) if value is not None and str(value).isdigit() else None


def format_indexes(indexes: set[int]) -> str:
    """kube's completedIndexes: sorted ranges, `0-2,4`."""
    runs: list[list[int]] = []
    for i in sorted(indexes):
        if runs and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def indexed_pod(job: Obj, template: Obj, name: str, index: int) -> dict[str, Any]:
    """A pod of an Indexed Job: `<job>-<index>-` names, the index as annotation, label, hostname and env."""
    pod = pod_from_template(job, template, generate_name=f"{name}-{index}-")
    pod["metadata"].setdefault("annotations", {})[INDEX_KEY] = str(index)
    pod["metadata"]["labels"][INDEX_KEY] = str(index)
    pod["spec"]["hostname"] = f"{name}-{index}"
    for container in pod["spec"].get("containers") or []:
        env = [e for e in container.get("env") or [] if e.get("name") != "JOB_COMPLETION_INDEX"]
        env.append({"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
            "apiVersion": "v1", "fieldPath": f"metadata.annotations['{INDEX_KEY}']"}}})
        container["env"] = env
    return pod


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
        self.watch_owned("jobs", "pods", self.expectations)

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
        indexed = spec.get("completionMode") == "Indexed"
        done_indexes = {i for p in pods if phase(p) == "Succeeded" and (i := completion_index(p)) is not None}
        succeeded = len(done_indexes) if indexed else sum(1 for p in pods if phase(p) == "Succeeded")
        failed = sum(1 for p in pods if phase(p) == "Failed")
        completions = spec.get("completions")
        parallelism = int(spec.get("parallelism", 1))
        backoff_limit = int(spec.get("backoffLimit", 6))
        outcome = ""
        if failed + restarts(active) > backoff_limit:  # kube counts OnFailure restarts as failures too
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
            indexes: list[int | None] = [None] * wanted
            if indexed and completions is not None:
                running = {completion_index(p) for p in active}
                missing: list[int | None] = [i for i in range(int(completions))
                                             if i not in done_indexes and i not in running]
                indexes = missing[:wanted]
                wanted = len(indexes)
            if wanted:
                self.expectations.expect(key, adds=wanted)
                template = spec.get("template") or {}

                async def create(index: int | None) -> None:
                    pod = indexed_pod(job, template, key.name, index) if index is not None else \
                        pod_from_template(job, template, generate_name=f"{key.name}-")
                    created = await self.sim.create(self.pod_res, key.cluster, key.namespace, pod)
                    if created is None:
                        self.expectations.created(key)
                        return
                    self.sim.recorder.record(job, NORMAL, "SuccessfulCreate",
                                             f"Created pod: {created['metadata']['name']}", component=COMPONENT)

                await asyncio.gather(*(create(i) for i in indexes))
        await self._status(job, active, succeeded, failed, outcome,
                           completed_indexes=format_indexes(done_indexes) if indexed else None)
        return None

    async def _status(self, job: Obj, active: list[Obj], succeeded: int, failed: int, outcome: str, *,
                      completed_indexes: str | None = None) -> None:
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
            if completed_indexes:
                status["completedIndexes"] = completed_indexes
            elif completed_indexes is not None:
                status.pop("completedIndexes", None)
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
