"""`GET /v1/metrics`: Prometheus text format (prometheus-client).

What is counted (every name starts `svc_`):

| metric | kind | labels |
|---|---|---|
| `svc_http_requests_total` | counter | endpoint, operation_type, status |
| `svc_http_request_duration_seconds` | histogram | endpoint, operation_type |
| `svc_errors_total` | counter | endpoint, code (the `SvcError` code answered) |
| `svc_postgres_connections` | gauge (sum over workers) | state: `open`, `in_use` |
| `svc_schema_build_seconds` | histogram | stage: `schema` (one role's GraphQL schema), `ir` |
| `svc_metadata_resource_version` | gauge (max over workers) | |
| `svc_metadata_inconsistent_objects` | gauge (max over workers) | |
| `svc_websocket_connections`, `svc_websocket_operations` | gauge (sum) | |
| `svc_live_queries`, `svc_live_cohorts`, `svc_live_subscribers` | gauge (sum) | |
| `svc_read_replica_failures` | gauge (sum of each worker's count since it started) | |
| `svc_asyncio_tasks` | gauge (sum) | |
| `svc_queue_events` | gauge (latest read, at scrape) | kind, state (`pending`, `failed`) |

`endpoint` is the route (`/v1/graphql`, `/v1/metadata`, `/api/rest`, `/console`, …; any
other path is `other`, so a scanner cannot grow the label set); `operation_type` is
`query`, `mutation`, `subscription` or `batch` on the GraphQL endpoints, "" elsewhere.
The queue kinds are `event_trigger`, `cron`, `one_off` and `async_action`.

Many workers: `svc serve` points `PROMETHEUS_MULTIPROC_DIR` at a fresh folder before
Granian starts its workers; each worker then writes its values to memory-mapped files
there (prometheus-client's multiprocess mode) and a scrape, whichever worker answers it,
merges every worker's files. Without the variable (the app under another server, tests in
process) the values are this process's own. Gauges are sampled, and the requests a worker
counted in memory are added to the shared values, every `SAMPLE_SECONDS` in each worker
(and by the worker answering a scrape), so a sum over workers lags by at most that much;
a worker killed with SIGKILL loses at most that much of its counts.

Access: with `--metrics-secret` the request must carry `Authorization: Bearer <secret>`
(the reference's `HASURA_GRAPHQL_METRICS_SECRET`); otherwise, when an admin secret is set,
an admin session; otherwise anyone. Refused: 401 `access-denied`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import os
from bisect import bisect_left
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
    values,
)

from svc.config import multiprocess_dir
from svc.errors import ErrorCode, SvcError
from svc.server.metric_labels import GRAPHQL_ENDPOINTS, endpoint_label, error_code
from svc.timings import listen

if TYPE_CHECKING:
    from svc.server.app import App, Request


SAMPLE_SECONDS = 2.0
QUEUE_READ_SECONDS = 2.0
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
# Histogram.observe files an amount under the first bound >= it: bisect_left of these.
_BOUNDS = (*LATENCY_BUCKETS, float("inf"))
BUILD_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


def _multiprocess_dir() -> str | None:
    """`PROMETHEUS_MULTIPROC_DIR` when it names a folder; multiprocess values are then
    switched on even if prometheus-client was imported before the variable was set."""
    folder = multiprocess_dir()
    if not folder or not os.path.isdir(folder):
        return None
    if values.ValueClass is values.MutexValue:
        values.ValueClass = values.MultiProcessValue()  # type: ignore[no-untyped-call]
    return folder


class Metrics:
    """The metrics of one app (one per worker process). `observe` counts a request,
    `answer` serves a scrape, `close` ends the sampler and drops this process's live
    gauges. Created in the app's constructor; the sampler starts with the first request."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.secret = app.config.metrics_secret
        self.folder = _multiprocess_dir()
        # Multiprocess mode: the values live in files, not in a registry of this process.
        self.registry = None if self.folder is not None else CollectorRegistry()
        self._children: dict[tuple[str, ...], tuple[Any, Any]] = {}
        # Requests are counted here and added to prometheus-client's values by `flush`
        # (every SAMPLE_SECONDS, before a scrape, at close): an `inc` in multiprocess mode
        # writes memory-mapped files, ~10 µs a request on the hot path; this is a dict update.
        self._pending: dict[tuple[str, str, str], list[Any]] = {}
        self._query_keys: dict[str, tuple[str, str, str]] = {}  # path → its 200-query labels
        self._pending_errors: dict[tuple[str, str], int] = {}
        self._sampler: asyncio.Task[None] | None = None
        self._declare(self.registry)
        self._unlisten = listen(self._timing)

    def _declare(self, reg: CollectorRegistry | None) -> None:
        self.requests = Counter(
            "svc_http_requests",
            "HTTP requests answered, by endpoint, GraphQL operation type and status",
            ("endpoint", "operation_type", "status"),
            registry=reg,
        )
        self.latency = Histogram(
            "svc_http_request_duration_seconds",
            "Seconds from routing a request to its answer",
            ("endpoint", "operation_type"),
            buckets=LATENCY_BUCKETS,
            registry=reg,
        )
        self.errors = Counter(
            "svc_errors",
            "Error answers by endpoint and error code",
            ("endpoint", "code"),
            registry=reg,
        )
        self.build = Histogram(
            "svc_schema_build_seconds",
            "Seconds to build one role's GraphQL schema (stage=schema) or the IR (stage=ir)",
            ("stage",),
            buckets=BUILD_BUCKETS,
            registry=reg,
        )
        gauge = _gauges(reg)
        self.connections = gauge("svc_postgres_connections", "Postgres connections", "livesum")
        self.version = gauge("svc_metadata_resource_version", "Metadata version served", "livemax")
        self.inconsistent = gauge(
            "svc_metadata_inconsistent_objects", "Inconsistent metadata objects", "livemax"
        )
        self.ws_connections = gauge("svc_websocket_connections", "Open websockets", "livesum")
        self.ws_operations = gauge(
            "svc_websocket_operations", "Operations running on websockets", "livesum"
        )
        self.live_queries = gauge("svc_live_queries", "Distinct live queries polled", "livesum")
        self.cohorts = gauge("svc_live_cohorts", "Live-query cohorts", "livesum")
        self.subscribers = gauge("svc_live_subscribers", "Live-query subscribers", "livesum")
        self.replica_failures = gauge(
            "svc_read_replica_failures",
            "Statements a read replica could not take (answered by the primary)",
            "livesum",
        )
        # A soak reads it: a task leaked per request or subscription shows as growth.
        self.tasks = gauge("svc_asyncio_tasks", "asyncio tasks alive in the workers", "livesum")
        # the database's queues: every worker sees the same rows, the latest read wins
        self.queues = Gauge(
            "svc_queue_events",
            "Rows of the background queues (kind: event_trigger, cron, one_off, "
            "async_action; state: pending = due and not delivered yet, failed)",
            ("kind", "state"),
            registry=reg,
            multiprocess_mode="livemostrecent",
        )

    def observe(self, request: Request, status: int, payload: bytes, seconds: float) -> None:
        """Count one answered `request` (`count` with its path, operation and error code)."""
        code = request.error.get("code") if request.error else None
        self.count(request.path, request.operation, status, payload, seconds, code)

    def count(
        self,
        path: str,
        operation: str,
        status: int,
        payload: bytes,
        seconds: float,
        code: str | None = None,
    ) -> None:
        """Count one answer to `path`: `operation` (GraphQL operation type), `status`, its
        `payload` (a GraphQL error answer's code is read from it when `code` is None),
        `seconds` it took. Held in this worker until `flush`."""
        endpoint = endpoint_label(path)
        graphql = endpoint in GRAPHQL_ENDPOINTS
        self._add((endpoint, operation if graphql else "", str(status)), seconds)
        if code is None and graphql:
            code = error_code(payload)
        if code is not None:
            errors = (endpoint, str(code))
            self._pending_errors[errors] = self._pending_errors.get(errors, 0) + 1

    def count_query_data(self, path: str, seconds: float) -> None:
        """`count` of a 200 answer with data and no errors to a GraphQL query on `path`
        (a GraphQL route): the repeated-request path's, with its labels made once."""
        key = self._query_keys.get(path)
        if key is None:
            key = self._query_keys[path] = (endpoint_label(path), "query", "200")
        self._add(key, seconds)

    def _add(self, key: tuple[str, str, str], seconds: float) -> None:
        pending = self._pending.get(key)
        if pending is None:
            pending = self._pending[key] = [0, 0.0, [0] * len(_BOUNDS)]
        pending[0] += 1
        pending[1] += seconds
        pending[2][bisect_left(_BOUNDS, seconds)] += 1
        if self._sampler is None:
            self._start_sampler()

    def flush(self) -> None:
        """Add the requests counted since the last flush to prometheus-client's values
        (its Histogram has no bulk observe: the child's `_sum` and `_buckets` values, which
        `Histogram.observe` itself increments, take the sums)."""
        pending, self._pending = self._pending, {}
        errors, self._pending_errors = self._pending_errors, {}
        for key, (n, total, buckets) in pending.items():
            children = self._children.get(key)
            if children is None:
                children = (self.requests.labels(*key), self.latency.labels(*key[:2]))
                self._children[key] = children
            children[0].inc(n)
            children[1]._sum.inc(total)
            for i, count in enumerate(buckets):
                if count:
                    children[1]._buckets[i].inc(count)
        for (endpoint, code), n in errors.items():
            self.errors.labels(endpoint, code).inc(n)

    def _timing(self, name: str, seconds: float) -> None:
        if name in ("schema_build", "ir_build"):
            self.build.labels(name.partition("_")[0]).observe(seconds)

    def _start_sampler(self) -> None:
        try:
            self._sampler = asyncio.get_running_loop().create_task(self._sample_forever())
        except RuntimeError:  # no loop (a test calling observe directly): scrape samples
            return

    async def _sample_forever(self) -> None:
        while True:
            self.sample()
            await asyncio.sleep(SAMPLE_SECONDS)

    def sample(self) -> None:
        """Flush the request counts and set the gauges from the engine and the open
        websockets now."""
        self.flush()
        sessions = list(self.app.ws.sessions)
        self.ws_connections.set(len(sessions))
        self.ws_operations.set(sum(len(s.ops) for s in sessions))
        with contextlib.suppress(RuntimeError):  # no running loop: a test calling it
            self.tasks.set(len(asyncio.all_tasks()))
        engine = self.app.engine
        if engine is None:
            return
        stats = engine.stats()
        self.connections.labels("open").set(stats.connections_open)
        self.connections.labels("in_use").set(stats.connections_in_use)
        self.version.set(stats.metadata_version)
        self.inconsistent.set(stats.inconsistent_objects)
        self.live_queries.set(stats.live_queries)
        self.cohorts.set(stats.cohorts)
        self.subscribers.set(stats.subscribers)
        self.replica_failures.set(stats.replica_failures)

    async def answer(self, headers: dict[str, str]) -> tuple[int, bytes, list[tuple[str, str]]]:
        """`GET /v1/metrics`: (200, Prometheus text, content type). Raises 401
        `access-denied` when the request may not read them (module docstring)."""
        await self._authorize(headers)
        self.sample()
        await self._sample_queues()
        if self.folder is not None:
            registry = CollectorRegistry()
            multiprocess.MultiProcessCollector(registry, path=self.folder)  # type: ignore[no-untyped-call]
            body = await asyncio.to_thread(generate_latest, registry)
        else:
            assert self.registry is not None
            body = generate_latest(self.registry)
        return 200, body, [("content-type", CONTENT_TYPE_LATEST)]

    async def _sample_queues(self) -> None:
        """Read the queue gauges from Postgres (at most `QUEUE_READ_SECONDS`; a failed or
        slow read leaves the previous values: the scrape still answers)."""
        engine = self.app.engine
        if engine is None:
            return
        try:
            counts = await asyncio.wait_for(engine.queue_counts(), QUEUE_READ_SECONDS)
        except (TimeoutError, SvcError):
            return
        for kind, (pending, failed) in counts.items():
            self.queues.labels(kind, "pending").set(pending)
            self.queues.labels(kind, "failed").set(failed)

    async def _authorize(self, headers: dict[str, str]) -> None:
        if self.secret:
            given = headers.get("authorization", "")
            scheme, _, token = given.partition(" ")
            if scheme.lower() == "bearer" and hmac.compare_digest(
                token.strip().encode(), self.secret.encode()
            ):
                return
            raise NEEDS_SECRET
        if self.app.config.admin_secrets and not (await self.app.auth.session(headers)).is_admin:
            raise ADMIN_ONLY

    def close(self) -> None:
        """Stop sampling; in multiprocess mode drop this process's live gauges (a stopped
        worker no longer counts in sums and maxima)."""
        self._unlisten()
        self.flush()
        if self._sampler is not None:
            self._sampler.cancel()
            self._sampler = None
        if self.folder is not None:
            multiprocess.mark_process_dead(os.getpid(), self.folder)  # type: ignore[no-untyped-call]


NEEDS_SECRET = SvcError(
    ErrorCode.ACCESS_DENIED, "metrics need Authorization: Bearer <metrics secret>", status=401
)
ADMIN_ONLY = SvcError(ErrorCode.ACCESS_DENIED, "restricted access : admin only", status=401)


def _gauges(reg: CollectorRegistry | None) -> Callable[..., Any]:
    """A gauge maker for `reg`: `(name, help, multiprocess_mode)`; `svc_postgres_connections`
    gets its `state` label."""

    def make(name: str, doc: str, mode: Literal["livesum", "livemax"]) -> Gauge:
        labels = ("state",) if name == "svc_postgres_connections" else ()
        return Gauge(name, doc, labels, registry=reg, multiprocess_mode=mode)

    return make
