"""GET pods/NAME/log: what `kubectl logs` reads, with kube's options (container, previous, timestamps,
sinceSeconds, sinceTime, tailLines, limitBytes, follow).

The simulated kubelet writes nothing anywhere, so a container's log is derived from its status and the
clock: one line per start, `<container> started (image <image>, start <n>)` at that start's time (known
for the current and the previous start; earlier starts show the pod's startTime), and, when the pod's
annotation `sim.kcp.io/log-interval` (or else the sim's `--log-interval`) gives seconds, `<container> line
<k>` every that many seconds of an instance's life (until it terminated; the last MAX_TICKS only). `previous=true` shows the log up to the
end of the previous instance.

`follow=true` keeps the response open: the lines the running instance prints are written as their time
comes, and the stream ends when the pod is deleted or the container's instance ends (`printed`).
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from aiohttp import web

from kcp_apiserver.embedding import Action, ActionCall, ActionResult, Cause, Obj, parse_time
from kcp_apiserver.embedding import status as st

INTERVAL_ANNOTATION = "sim.kcp.io/log-interval"
MAX_TICKS = 10_000
FOLLOW_CHECK = 1.0  # seconds between reads of the pod while a followed log has nothing to print


@dataclass(frozen=True)
class Line:
    at: float  # seconds since the epoch
    stamp: str  # RFC 3339, as `timestamps=true` prefixes it
    text: str


def _epoch(value: str | None) -> float:
    parsed = parse_time(value)
    return parsed.timestamp() if parsed else 0.0


def _stamp(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f") + "000Z"


def log_interval(pod: Obj, default: float = 0.0) -> float:
    """The seconds between two lines a running container prints (the pod's annotation, else `default`);
    0: it prints only its start."""
    value = ((pod.get("metadata") or {}).get("annotations") or {}).get(INTERVAL_ANNOTATION)
    try:
        return max(float(value), 0.0) if value is not None else default
    except ValueError:
        return default


def container_names(pod: Obj) -> list[str]:
    spec = pod.get("spec") or {}
    return [c.get("name", "") for key in ("containers", "initContainers") for c in spec.get(key) or []]


def _status(pod: Obj, container: str) -> Obj | None:
    status = pod.get("status") or {}
    statuses = [*(status.get("containerStatuses") or []), *(status.get("initContainerStatuses") or [])]
    return next((s for s in statuses if s.get("name") == container), None)


def _start_times(status: Obj, pod_start: str, starts: int) -> list[str]:
    """The start time of each of a container's `starts` starts, oldest first, as far as its status tells:
    the current instance's and the previous one's are known, earlier ones show the pod's start."""
    state = status.get("state") or {}
    current = (state.get("running") or {}).get("startedAt") or (state.get("terminated") or {}).get("startedAt")
    previous = ((status.get("lastState") or {}).get("terminated") or {}).get("startedAt")
    known = [t for t in (previous, current) if t]
    times = [pod_start] * max(starts - len(known), 0) + known
    return times[-starts:] if starts else []


def pod_log_lines(pod: Obj, container: str, *, previous: bool = False) -> list[tuple[str, str]]:
    """(time, line) for every start of `container`, oldest first."""
    status = _status(pod, container)
    started = status is not None and (status.get("state", {}).get("running") or status.get("state", {})
                                      .get("terminated") or int(status.get("restartCount") or 0))
    if not started:
        reason = ((status or {}).get("state", {}).get("waiting") or {}).get("reason") or "ContainerCreating"
        raise st.bad_request(f'container "{container}" in pod "{pod["metadata"]["name"]}" is waiting to start: '
                             f"{reason}")
    assert status is not None
    restarts = int(status.get("restartCount") or 0)
    waiting = bool(status.get("state", {}).get("waiting"))
    starts = restarts if waiting else restarts + 1  # restartCount counts the instances that ended
    if previous:
        if restarts == 0:
            raise st.bad_request(f'previous terminated container "{container}" in pod '
                                 f'"{pod["metadata"]["name"]}" not found')
        starts = restarts  # up to the instance before the current (or the one a back-off waits after)
    total = restarts if waiting else restarts + 1
    times = _start_times(status, (pod.get("status") or {}).get("startTime") or pod["metadata"].get(
        "creationTimestamp", ""), total)
    image = status.get("image") or next((c.get("image", "") for key in ("containers", "initContainers")
                                         for c in (pod.get("spec") or {}).get(key) or []
                                         if c.get("name") == container), "")
    return [(times[n], f"{container} started (image {image}, start {n + 1})")
            for n in range(starts)]


def _instance(pod: Obj, container: str, previous: bool) -> tuple[float, float | None]:
    """When the instance the log ends with started, and when it ended (None: it still runs)."""
    status = _status(pod, container) or {}
    if previous:
        last = (status.get("lastState") or {}).get("terminated") or {}
        return _epoch(last.get("startedAt")), _epoch(last.get("finishedAt")) or None
    state = status.get("state") or {}
    if state.get("running"):
        return _epoch(state["running"].get("startedAt")), None
    ended = state.get("terminated") or (status.get("lastState") or {}).get("terminated") or {}
    return _epoch(ended.get("startedAt")), _epoch(ended.get("finishedAt")) or _epoch(ended.get("startedAt"))


def log_lines(pod: Obj, container: str, *, previous: bool = False, now: float | None = None,
              default: float = 0.0) -> list[Line]:
    """Every line of the log up to `now`: the starts, then the lines the last instance printed."""
    lines = [Line(_epoch(when), when, text) for when, text in pod_log_lines(pod, container, previous=previous)]
    interval = log_interval(pod, default)
    if not interval or not lines:
        return lines
    started, ended = _instance(pod, container, previous)
    end = min(ended, now or time.time()) if ended is not None else (now or time.time())
    last = int((end - started) // interval) if started else 0
    first = max(1, last - MAX_TICKS + 1)
    return lines + [Line(started + k * interval, _stamp(started + k * interval), f"{container} line {k}")
                    for k in range(first, last + 1)]


@dataclass(frozen=True)
class LogOptions:
    """kube's PodLogOptions, read from the query and checked as kube's validation does."""

    container: str
    follow: bool = False
    previous: bool = False
    timestamps: bool = False
    since: float | None = None  # epoch seconds: lines before are left out
    tail: int | None = None
    limit: int | None = None


def _number(query: Mapping[str, str], name: str) -> int | None:
    value = query.get(name)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise st.bad_request(f'strconv.ParseInt: parsing "{value}": invalid syntax') from None


def chosen_container(query: Mapping[str, str], pod: Obj, name: str) -> str:
    """The `container` a log, exec or attach names, or the pod's only one, with kube's errors."""
    container = query.get("container", "")
    if not container:
        regular = [c.get("name", "") for c in (pod.get("spec") or {}).get("containers") or []]
        if len(regular) != 1:
            raise st.bad_request(f"a container name must be specified for pod {name}, choose one of: "
                                 f"[{' '.join(regular)}]")
        return regular[0]
    if container not in container_names(pod):
        raise st.bad_request(f"container {container} is not valid for pod {name}")
    return container


def log_options(query: Mapping[str, str], pod: Obj, name: str) -> LogOptions:
    container = chosen_container(query, pod, name)
    since_seconds, tail, limit = _number(query, "sinceSeconds"), _number(query, "tailLines"), _number(query, "limitBytes")
    since_time = query.get("sinceTime") or None
    causes = []
    if since_seconds is not None and since_time is not None:
        causes.append(Cause("FieldValueForbidden", "Forbidden: at most one of `sinceTime` or `sinceSeconds` may be "
                                                   "specified", ""))
    if since_seconds is not None and since_seconds < 1:
        causes.append(Cause("FieldValueInvalid", f"Invalid value: {since_seconds}: must be greater than 0",
                            "sinceSeconds"))
    if tail is not None and tail < 0:
        causes.append(Cause("FieldValueInvalid", f"Invalid value: {tail}: must be greater than or equal to 0",
                            "tailLines"))
    if limit is not None and limit < 1:
        causes.append(Cause("FieldValueInvalid", f"Invalid value: {limit}: must be greater than 0", "limitBytes"))
    if causes:
        raise st.invalid("PodLogOptions", name, causes)
    since = time.time() - since_seconds if since_seconds is not None else None
    if since_time is not None:
        parsed = parse_time(since_time)
        if parsed is None:
            raise st.bad_request(f'parsing time "{since_time}" as "2006-01-02T15:04:05Z07:00": cannot parse')
        since = parsed.timestamp()
    return LogOptions(container, query.get("follow") == "true", query.get("previous") == "true",
                      query.get("timestamps") == "true", since, tail, limit)


def select(lines: list[Line], options: LogOptions) -> list[Line]:
    if options.since is not None:
        lines = [line for line in lines if line.at >= options.since]
    if options.tail is not None:
        lines = lines[-options.tail:] if options.tail else []
    return lines


def render(lines: list[Line], options: LogOptions) -> str:
    return "".join(f"{line.stamp} {line.text}\n" if options.timestamps else f"{line.text}\n" for line in lines)


async def read_log(call: ActionCall, default: float = 0.0) -> ActionResult:
    pod = await call.registry.get(call.resource, call.cluster, call.namespace, call.name)
    options = log_options(call.query, pod, call.name)
    every = log_lines(pod, options.container, previous=options.previous, default=default)
    text = render(select(every, options), options)
    if options.limit is not None:
        text = text.encode()[: options.limit].decode(errors="ignore")
    if options.follow and not options.previous:
        return ActionResult(respond=lambda request: _follow(call, request, pod, options, text, every, default))
    return ActionResult(200, text=text)


def _same_instance(pod: Obj, old: Obj, container: str) -> bool:
    status, before = _status(pod, container) or {}, _status(old, container) or {}
    return bool((status.get("state") or {}).get("running")) and \
        status.get("restartCount") == before.get("restartCount")


async def printed(call: ActionCall, pod: Obj, container: str, after: float,
                  default: float = 0.0) -> AsyncIterator[list[Line]]:
    """The lines the running instance of `container` prints after `after`, as their time comes; ends when
    the pod is deleted or the instance ends (the pod is read again at each line, or every FOLLOW_CHECK
    seconds without lines). Also what `attach` shows of the container's output."""
    first = pod
    interval = log_interval(pod, default)
    while _same_instance(pod, first, container):
        since_start = time.time() - _instance(pod, container, False)[0]
        pause = interval - since_start % interval if interval else FOLLOW_CHECK
        await asyncio.sleep(min(pause, FOLLOW_CHECK) + 0.001)
        try:
            pod = await call.registry.get(call.resource, call.cluster, call.namespace, call.name)
        except st.APIError:
            return
        if not _same_instance(pod, first, container):
            return
        fresh = [line for line in log_lines(pod, container, default=default) if line.at > after]
        if fresh:
            after = fresh[-1].at
            yield fresh


async def _follow(call: ActionCall, request: web.Request, pod: Obj, options: LogOptions, text: str,
                  every: list[Line], default: float) -> web.StreamResponse:
    """Writes the log so far, then each line as the running instance prints it, until it stops."""
    response = web.StreamResponse(status=200, headers={"Content-Type": "text/plain"})
    await response.prepare(request)
    left = options.limit - len(text.encode()) if options.limit is not None else None
    await response.write(text.encode())
    after = every[-1].at if every else time.time()
    async for fresh in printed(call, pod, options.container, after, default):
        if left is not None and left <= 0:
            break
        data = render(fresh, options).encode()
        if left is not None:
            data, left = data[:left], left - len(data)
        await response.write(data)
    await response.write_eof()
    return response


def log_action(default: float = 0.0) -> Action:
    """pods/log, with `default` seconds between lines for pods without the annotation."""
    return Action("log", ("get",), functools.partial(read_log, default=default), ("", "v1", "Pod"))


LOG = log_action()
