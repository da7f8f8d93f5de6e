"""batch/v1: Jobs (their selector generated from the Job's uid, as kube does) and CronJobs; their defaults
and validation are kcp_apiserver.kubetypes'."""

from __future__ import annotations

from kcp_apiserver.embedding import Obj, Resource, kube_resource
from kcp_sim_cluster.api import columns
from kcp_sim_cluster.api.strategy import kube_strategy

CONTROLLER_UID = "batch.kubernetes.io/controller-uid"
JOB_NAME = "batch.kubernetes.io/job-name"


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


def resources(release: str) -> tuple[Resource, ...]:
    return (
        kube_resource("batch", "v1", "Job", "jobs", namespaced=True, release=release, categories=("all",),
                      has_status=True, tracks_generation=True, columns=columns.JOB,
                      strategy=kube_strategy("batch", "v1", "Job", release, on_create=_new_job)),
        kube_resource("batch", "v1", "CronJob", "cronjobs", namespaced=True, release=release, short_names=("cj",),
                      categories=("all",), has_status=True, tracks_generation=True, columns=columns.CRON_JOB,
                      strategy=kube_strategy("batch", "v1", "CronJob", release,
                                             on_create=lambda o: o.__setitem__("status", {}))),
    )
