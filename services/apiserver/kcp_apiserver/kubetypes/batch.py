"""batch/v1 validation as kube's job and cronjob strategies run it."""

from __future__ import annotations

import re

from kcp_apiserver.apimachinery.status import Cause
from kcp_apiserver.apimachinery.validation import invalid, required
from kcp_apiserver.kubetypes import validation as v
from kcp_apiserver.kubetypes.fields import spec
from kcp_apiserver.registry.resource import Obj

JOB_RESTART_POLICIES = ("OnFailure", "Never")
CRON_MACROS = frozenset({"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"})
CRON_FIELD = re.compile(r"^[\d*/,\-?A-Za-z]+$")


def validate_job(job: Obj) -> list[Cause]:
    """A Job without a selector and without manualSelector gets one generated from its uid by the server
    that runs it (kube's job strategy does so before validating); only its template is checked then."""
    s = spec(job)
    if s.get("selector") is None and not s.get("manualSelector"):
        causes = v.pod_template(s.get("template"), "spec.template", restart_policies=JOB_RESTART_POLICIES)
    else:
        causes = v.selector_and_template(s, "job", restart_policies=JOB_RESTART_POLICIES)
    for name in ("parallelism", "completions", "backoffLimit", "activeDeadlineSeconds", "ttlSecondsAfterFinished"):
        causes += v.non_negative(f"spec.{name}", s.get(name))
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
