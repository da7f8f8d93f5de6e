"""batch/v1: Jobs (their selector generated from the Job's uid, as kube does) and CronJobs."""

from __future__ import annotations

import re

from kcp_apiserver.apimachinery.status import Cause
from kcp_apiserver.apimachinery.validation import invalid, required
from kcp_apiserver.registry.builtin.declare import kube_resource
from kcp_apiserver.registry.resource import Obj, Resource
from kcp_sim_cluster.api import columns, defaults
from kcp_sim_cluster.api import validation as v
from kcp_sim_cluster.api.strategy import KubeStrategy, spec

JOB_RESTART_POLICIES = ("OnFailure", "Never")
CONTROLLER_UID = "batch.kubernetes.io/controller-uid"
JOB_NAME = "batch.kubernetes.io/job-name"
CRON_MACROS = frozenset({"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"})
CRON_FIELD = re.compile(r"^[\d*/,\-?A-Za-z]+$")


def generate_selector(job: Obj) -> None:
    """Without manualSelector, the selector is the Job's uid and the template carries the labels that
    match it (both the batch.kubernetes.io ones and the legacy ones), as kube's job strategy."""
    s = job.setdefault("spec", {})
    if s.get("manualSelector"):
        return
    meta = job["metadata"]
    uid, name = meta.get("uid", ""), meta.get("name", "")
    template = s.get("template")
    if isinstance(template, dict):
        labels = template.setdefault("metadata", {}).setdefault("labels", {})
        labels.update({CONTROLLER_UID: uid, JOB_NAME: name, "controller-uid": uid, "job-name": name})
    s["selector"] = {"matchLabels": {CONTROLLER_UID: uid}}


def _new_job(job: Obj) -> None:
    generate_selector(job)
    job["status"] = {}


def validate_job(job: Obj) -> list[Cause]:
    s = spec(job)
    causes = v.selector_and_template(s, "job", restart_policies=JOB_RESTART_POLICIES)
    for name in ("parallelism", "completions", "backoffLimit", "activeDeadlineSeconds", "ttlSecondsAfterFinished"):
        causes += v._non_negative(f"spec.{name}", s.get(name))
    return causes


def validate_job_update(job: Obj, old: Obj) -> list[Cause]:
    s, o = spec(job), spec(old)
    causes = v.immutable_selector(s, o)
    if s.get("template") != o.get("template"):
        causes.append(invalid("spec.template", s.get("template"), v.IMMUTABLE))
    if s.get("completionMode") != o.get("completionMode"):
        causes.append(invalid("spec.completionMode", s.get("completionMode"), v.IMMUTABLE))
    if s.get("completions") != o.get("completions") and s.get("completionMode") != "Indexed":
        causes.append(invalid("spec.completions", s.get("completions"), v.IMMUTABLE))
    return causes


def _schedule(schedule: object) -> list[Cause]:
    if not isinstance(schedule, str) or not schedule.strip():
        return [required("spec.schedule")]
    text = schedule.strip()
    if text.startswith("TZ=") or text.startswith("CRON_TZ="):
        return [invalid("spec.schedule", schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field "
                                                   "instead")]
    if text in CRON_MACROS or text.startswith("@every "):
        return []
    fields = text.split()
    if len(fields) != 5 or not all(CRON_FIELD.match(f) for f in fields):
        return [invalid("spec.schedule", schedule, f"expected exactly 5 fields, found {len(fields)}: {text}"
                        if len(fields) != 5 else "unparseable cron schedule")]
    return []


def validate_cron_job(cron: Obj) -> list[Cause]:
    s = spec(cron)
    causes = _schedule(s.get("schedule"))
    policy = s.get("concurrencyPolicy")
    if policy not in ("Allow", "Forbid", "Replace"):
        causes.append(v.unsupported("spec.concurrencyPolicy", policy, ("Allow", "Forbid", "Replace")))
    template = s.get("jobTemplate")
    job_spec = (template or {}).get("spec") if isinstance(template, dict) else None
    if not isinstance(job_spec, dict):
        return [*causes, required("spec.jobTemplate.spec")]
    for cause in v.pod_template(job_spec.get("template"), "template", restart_policies=JOB_RESTART_POLICIES):
        causes.append(Cause(cause.reason, cause.message, f"spec.jobTemplate.spec.{cause.field}"))
    return causes


def resources(release: str) -> tuple[Resource, ...]:
    minor = int(release.split(".")[1])
    return (
        kube_resource("batch", "v1", "Job", "jobs", namespaced=True, release=release, categories=("all",),
                      has_status=True, tracks_generation=True, columns=columns.JOB,
                      strategy=KubeStrategy(lambda o: defaults.job(o, minor), validate_job,
                                            validate_update=validate_job_update,
                                            on_create=_new_job)),
        kube_resource("batch", "v1", "CronJob", "cronjobs", namespaced=True, release=release, short_names=("cj",),
                      categories=("all",), has_status=True, tracks_generation=True, columns=columns.CRON_JOB,
                      strategy=KubeStrategy(lambda o: defaults.cron_job(o, minor), validate_cron_job,
                                            on_create=lambda o: o.__setitem__("status", {}))),
    )
