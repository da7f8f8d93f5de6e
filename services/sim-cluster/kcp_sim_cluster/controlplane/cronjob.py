"""The CronJob controller: a Job per scheduled time, named `<cronjob>-<minutes since the epoch>`.

At each time the schedule fires (the most recent one if several were missed, unless it is older than
startingDeadlineSeconds) it creates a Job from jobTemplate, honouring concurrencyPolicy (Allow,
Forbid, Replace) and suspend; it keeps status.active and lastScheduleTime/lastSuccessfulTime, and
deletes finished Jobs beyond successfulJobsHistoryLimit / failedJobsHistoryLimit.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from kcp_apiserver.embedding import Resource
from kcp_sim_cluster.controlplane import cron
from kcp_sim_cluster.controlplane.base import SimController
from kcp_sim_cluster.controlplane.events import NORMAL, WARNING
from kcp_sim_cluster.controlplane.job import finished
from kcp_sim_cluster.controlplane.objects import Obj, copy_obj, get_condition, now, owner_reference
from kcp_sim_cluster.controlplane.runtime import Sim
from kcpcommon.controller import Result
from kcpcommon.keys import ObjectKey
from kcpcommon.kubetime import format_time as rfc3339
from kcpcommon.kubetime import parse_time

COMPONENT = "cronjob-controller"
SCHEDULED_ANNOTATION = "batch.kubernetes.io/cronjob-scheduled-timestamp"
MAX_MISSED = 100


def _succeeded(job: Obj) -> bool:
    cond = get_condition(job.get("status"), "Complete")
    return bool(cond and cond.get("status") == "True")


def _reference(job: Obj) -> dict[str, Any]:
    meta = job["metadata"]
    return {"apiVersion": "batch/v1", "kind": "Job", "name": meta["name"], "namespace": meta.get("namespace", ""),
            "uid": meta.get("uid", ""), "resourceVersion": meta.get("resourceVersion", "")}


class CronJobController(SimController):
    name = "sim-cronjob"
    needs = ("cronjobs", "jobs")

    def __init__(self, sim: Sim) -> None:
        super().__init__(sim)
        self.cj_res: Resource = sim.resource("cronjobs")  # type: ignore[assignment]
        self.job_res: Resource = sim.resource("jobs")  # type: ignore[assignment]

    def wire(self) -> None:
        self.watch_owned("cronjobs", "jobs")

    async def reconcile(self, key: ObjectKey) -> Result | None:
        cj = self.sim.informer("cronjobs").get(key)
        if cj is None:
            return None
        spec = cj.get("spec") or {}
        jobs = self.sim.informer("jobs").by_index("owner", cj["metadata"]["uid"])
        active = [j for j in jobs if not finished(j)]
        await self._cleanup(spec, [j for j in jobs if finished(j)])
        try:
            schedule = cron.parse(str(spec.get("schedule", "")), str(spec.get("timeZone") or ""))
        except cron.CronError as exc:
            self.sim.recorder.record(cj, WARNING, "UnparseableSchedule", f"unparseable schedule: {exc}",
                                     component=COMPONENT)
            await self._status(cj, active, jobs, None)
            return None
        current = now()
        last = parse_time((cj.get("status") or {}).get("lastScheduleTime")) or \
            parse_time(cj["metadata"].get("creationTimestamp")) or current
        due: dt.datetime | None = None
        upcoming = schedule.next_after(last)
        missed = 0
        while upcoming is not None and upcoming <= current and missed < MAX_MISSED:
            due, missed = upcoming, missed + 1
            upcoming = schedule.next_after(upcoming)
        scheduled: dt.datetime | None = None
        if due is not None and not spec.get("suspend"):
            deadline = spec.get("startingDeadlineSeconds")
            if deadline is None or (current - due).total_seconds() <= int(deadline):
                scheduled = due
                if not await self._run(cj, key, spec, active, due):
                    scheduled = None
        await self._status(cj, active, jobs, scheduled)
        if upcoming is None:
            return None
        return Result(requeue_after=max((upcoming - now()).total_seconds(), 0.0) + 0.1)

    async def _run(self, cj: Obj, key: ObjectKey, spec: Obj, active: list[Obj], due: dt.datetime) -> bool:
        policy = spec.get("concurrencyPolicy", "Allow")
        if active and policy == "Forbid":
            self.sim.recorder.record(cj, NORMAL, "JobAlreadyActive", "Not starting job because prior execution is "
                                     "running and concurrency policy is Forbid", component=COMPONENT)
            return False
        if active and policy == "Replace":
            for job in active:
                await self.sim.delete(self.job_res, job, propagation="Background")
                self.sim.recorder.record(cj, NORMAL, "SuccessfulDelete", f"Deleted job {job['metadata']['name']}",
                                         component=COMPONENT)
        template = spec.get("jobTemplate") or {}
        meta = template.get("metadata") or {}
        name = f"{key.name}-{int(due.timestamp() // 60)}"
        job = {"apiVersion": "batch/v1", "kind": "Job",
               "metadata": {"name": name, "namespace": key.namespace, "labels": dict(meta.get("labels") or {}),
                            "annotations": {**(meta.get("annotations") or {}), SCHEDULED_ANNOTATION: rfc3339(due)},
                            "ownerReferences": [owner_reference(cj)]},
               "spec": copy_obj(template.get("spec") or {})}
        created = await self.sim.create(self.job_res, key.cluster, key.namespace, job)
        if created is not None:
            active.append(created)
            self.sim.recorder.record(cj, NORMAL, "SuccessfulCreate", f"Created job {name}", component=COMPONENT)
        return True

    async def _cleanup(self, spec: Obj, done: list[Obj]) -> None:
        for succeeded, limit in ((True, spec.get("successfulJobsHistoryLimit", 3)),
                                 (False, spec.get("failedJobsHistoryLimit", 1))):
            jobs = sorted((j for j in done if _succeeded(j) == succeeded),
                          key=lambda j: j["metadata"].get("creationTimestamp", ""))
            for job in jobs[:max(len(jobs) - int(limit), 0)]:
                await self.sim.delete(self.job_res, job, propagation="Background")

    async def _status(self, cj: Obj, active: list[Obj], jobs: list[Obj], scheduled: dt.datetime | None) -> None:
        succeeded_times = [t for j in jobs if _succeeded(j)
                           if (t := (j.get("status") or {}).get("completionTime"))]

        def update(current: dict[str, Any]) -> bool:
            status = current.setdefault("status", {})
            before = copy_obj(status)
            refs = [_reference(j) for j in active]
            if refs:
                status["active"] = refs
            else:
                status.pop("active", None)
            if scheduled is not None:
                status["lastScheduleTime"] = rfc3339(scheduled)
            if succeeded_times:
                status["lastSuccessfulTime"] = max(succeeded_times)
            return status != before

        await self.sim.write_status(self.cj_res, cj, update)
