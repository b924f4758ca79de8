"""The engine: one process's connection to Postgres, its current `State`, and the entry
points the server calls (`metadata`, `graphql`, `explain`).

Metadata sync (design brief 4; ARCHITECTURE.md "Sync"): a writer bumps the
stored resource version and sends `NOTIFY`; every engine listens (`svc.execute.listener`:
reconnects after any loss, polls the version on that connection every
`metadata_poll_seconds`) and reloads when the version moves past its own. Within one
`svc serve`, the workers share a version counter (`svc.api.shared_version`): every entry
point first obtains a state at least as new as the counter (`current_state`), so once
the metadata API has answered on one worker, every worker answers with the new version.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import msgspec

from svc.api.actions.live import subscribe_actions
from svc.api.background import Background
from svc.api.enum_ops import refresh_enum_values
from svc.api.graphql import GraphQLService, decode_json, decode_request
from svc.api.large_body import prepare_large_body
from svc.api.limits import Defaults
from svc.api.live import LiveHandle, LiveQueries, subscribe
from svc.api.live.explain import explain_subscription
from svc.api.live.stream import configure_streams
from svc.api.metadata import READ_ONLY, ROLE_OPERATIONS, decode_body, run_operation
from svc.api.op_context import Context
from svc.api.remote_fetch import ensure as ensure_remotes
from svc.api.response_cache import ResponseCache
from svc.api.rest import RestRequest, RestResponse, run_rest
from svc.api.shared_version import SharedVersion
from svc.api.state import Resources, State
from svc.api.stats import EngineStats, engine_stats, queue_counts
from svc.config import Config
from svc.errors import ErrorCode, SvcError
from svc.execute.db import ANONYMOUS, Database, Sources
from svc.execute.listener import VersionListener
from svc.execute.params import resolve
from svc.execute.pg_dump import pg_dump
from svc.gc_pause import gc_paused, keep_started, release_started
from svc.metadata.model import DEFAULT_SOURCE, encode_metadata
from svc.metadata.read_replicas import replica_confs
from svc.metadata.sources import served_sources
from svc.outbound import close_shared
from svc.schema.names import schema_problem
from svc.session_vars import ADMIN_ROLE, is_admin, process_names
from svc.sql.render import render_root
from svc.workers import WorkerRuntime, WorkerSpec
from svc.workers.periodic import PeriodicSpec

_encode = msgspec.json.encode
STARTUP_WAIT_S = 30.0  # how long a starting worker waits for an unreachable Postgres
# How long after a metadata change the role-schema check starts (seconds; `_check_roles`).
ROLE_CHECK_DELAY_S = 0.5

_log = logging.getLogger(__name__)


def anonymous_request() -> None:
    """The current request (its task, and the tasks it starts) has no credentials: its
    statements take the anonymous share of the read path (`Database.limit_anonymous`)."""
    ANONYMOUS.set(True)


class Engine:
    """Create with `await Engine.start(config)`; close with `await engine.close()`."""

    def __init__(
        self, config: Config, sources: Sources, state: State, shared: SharedVersion | None = None
    ) -> None:
        self.config = config
        self.sources = sources  # each source's connections; plans pick theirs
        self.db = db = sources.default  # holds hdb_catalog: metadata, queues, listener
        self.state = state
        self.graphql_service = GraphQLService(
            db,
            stringify=config.stringify_numeric_types,
            allowlist=config.enable_allowlist,
            defaults=Defaults(
                config.default_depth_limit,
                config.default_node_limit,
                config.max_list_items,
                config.max_pattern_length,
                config.max_answer_rows,
                config.max_response_bytes,
            ),
            rate_file=config.rate_limit_file or None,
            sources=sources,
        )
        # Held by a metadata write until its new state is installed, and by a reload: the
        # `NOTIFY` of this process's own write arrives before the state is swapped, and
        # must then find it installed rather than load the whole document again.
        self._write_lock = asyncio.Lock()
        self._listener: VersionListener | None = None
        self._role_check: asyncio.Task[None] | None = None  # `_check_roles` of the state
        # The shared counter of `svc serve`'s workers (None under another server), and the
        # highest counter value this engine has caught up with: a request finding the
        # counter above it reloads first (`current_state`).
        self._shared = shared
        self._synced = state.version
        if shared is not None:
            shared.raise_to(state.version)
        # Background jobs (`svc.api.background`), started and stopped from the metadata.
        self.background = Background(db, config, lambda: self.state, self.current_state)
        self.response_cache = ResponseCache()  # `@cached` answers
        self.live = LiveQueries(
            db,
            interval=config.live_queries_refetch_interval / 1000,
            batch_size=config.live_queries_batch_size,
            skip_idle=config.live_queries_skip_idle,
        )
        configure_streams(  # x_stream polling
            self.live,
            interval=config.streaming_queries_refetch_interval / 1000,
            batch_size=config.streaming_queries_batch_size,
        )

    @classmethod
    async def start(cls, config: Config) -> Engine:
        """Connect, create `hdb_catalog` if needed, load metadata, start syncing (the
        shared counter when `config.shared_version_file` names one, and the listener).
        While Postgres is unreachable (or goes away half-way) the whole start is retried
        with backoff (0.1 s doubling to 2 s) for up to `STARTUP_WAIT_S` seconds: a worker
        starting while Postgres restarts must not take the server down (`svc serve`
        checked the URL once already, so a wrong URL fails at once there). Raises the last
        `SvcError` `postgres-error` after that, OSError or ValueError when the counter
        file cannot be mapped."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + STARTUP_WAIT_S
        delay = 0.1
        while True:
            try:
                return await cls._start_once(config)
            except SvcError as exc:
                if exc.code != "postgres-error" or loop.time() + delay > deadline:
                    raise
            await asyncio.sleep(delay)
            delay = min(delay * 2, 2.0)

    @classmethod
    async def _start_once(cls, config: Config) -> Engine:
        sources = await Sources.connect(
            {DEFAULT_SOURCE: config.database_url},
            max_size=config.pool_size,
            statement_timeout=config.statement_timeout,
        )
        db = sources.default
        shared = None
        try:
            if not await db.init_catalog(config.extensions_schema):
                _log.warning(
                    "svc: pgcrypto is not available in this Postgres, so it was not created "
                    "(the reference requires it; svc's catalog does not)"
                )
            state = await cls._load(db, Resources.of(config), first=True)
            if config.shared_version_file:
                shared = SharedVersion.open(config.shared_version_file)
            engine = cls(config, sources, state, shared)
            engine._use_replicas(state)
            slots = config.anonymous_connections
            db.limit_anonymous(max(1, config.pool_size // 2) if slots < 0 else slots)
            await engine.background.start()
            engine._check_roles_soon(state)
        except BaseException:
            if shared is not None:
                shared.close()
            with contextlib.suppress(Exception):  # Postgres may be gone: keep the first error
                await sources.close()
            raise
        live = engine.live
        engine._listener = VersionListener(
            db.url,
            engine.on_version,
            poll_seconds=config.metadata_poll_seconds,
            on_live=live.touched if live.listens else None,
        )
        live.watch.listener = engine._listener
        engine._listener.start()
        return engine

    # -- background workers and outbound HTTP (ARCHITECTURE.md "Seams") ----------------
    def start_workers(self, specs: Iterable[WorkerSpec | PeriodicSpec]) -> WorkerRuntime:
        """Start a worker per spec on this engine's runtime beside the metadata's jobs
        (`svc.api.background`), whatever the metadata; `close` stops them with the rest.
        Raises ValueError for a duplicate name or a bad spec."""
        runtime = self.background.runtime
        for spec in specs:
            runtime.start(spec)
        return runtime

    async def close(self) -> None:
        """Stop the workers (running items finish or are released), stop syncing, close
        connections (Postgres, then the process's outbound HTTP client). Live queries stop
        polling first (their subscribers get nothing more)."""
        await self.live.close()
        if self._role_check is not None:
            self._role_check.cancel()
        await self.background.stop()
        if self._listener is not None:
            await self._listener.close()
            self._listener = None
        await self.sources.close()
        await close_shared()
        if self._shared is not None:
            self._shared.close()
            self._shared = None

    @staticmethod
    async def _load(
        db: Database, resources: Resources, previous: State | None = None, *, first: bool = False
    ) -> State:
        """The stored metadata's state (over `previous`'s IR and catalog when given);
        `first`: the worker's first, kept out of every collection (`keep_started`)."""
        with gc_paused():  # millions of lasting objects (`svc.gc_pause`)
            async with db.transaction() as conn:
                text, version = await db.read_metadata(conn)
                md = resources.documents.decode(text)
                # With the enum tables' values; the previous catalog's tables when the
                # database's structure did not move (`svc.catalog.fingerprint`).
                known = previous.catalog if previous is not None else None
                catalog = await db.introspect(conn, md, known)
            ir = previous.ir if previous is not None else None
            await ensure_remotes(md, resources.remotes, refresh=True)  # introspect remotes
            state = State.build(version, md, catalog, resources, ir)
            if first:  # before the collector is on again: its next young collection
                keep_started()  # would walk every object of the state (0.25 s at 10,000)
            return state

    @property
    def _resources(self) -> Resources:
        return self.state.resources

    # -- sync ---------------------------------------------------------------------------
    async def on_version(self, version: int) -> None:
        """Reload when another process stored a newer metadata version (called by the
        listener with each notified or polled version); raises what loading raises."""
        if version > self.state.version:
            async with self._write_lock:
                if version > self.state.version:
                    loaded = await self._load(self.db, self._resources, self.state)
                    if loaded.version > self.state.version:  # never go back to an older one
                        self._install(loaded)

    async def current_state(self) -> State:
        """The state a request must answer with: at least as new as every version another
        worker of this `svc serve` has installed (the shared counter), reloading first
        (under the write lock) when this worker is behind. Costs one 8-byte read and a
        comparison when it is not. Raises `SvcError` `postgres-error` (500) when the
        reload cannot reach Postgres."""
        shared = self._shared
        if shared is not None:
            target = shared.read()
            if target > self._synced:
                await self._catch_up(target)
        return self.state

    def stats(self) -> EngineStats:
        """Connections, live queries and the metadata version now (`/v1/metrics`)."""
        state = self.state
        return engine_stats(self.db, self.live, state.version, len(state.issues()))

    async def queue_counts(self) -> dict[str, tuple[int, int]]:
        """`{kind: (pending, failed)}` of the background queues (`/v1/metrics`)."""
        return await queue_counts(self.db)

    async def _catch_up(self, target: int) -> None:
        async with self._write_lock:
            if target <= self._synced:
                return  # a reload or write while we waited got there
            if target > self.state.version:
                try:
                    loaded = await self._load(self.db, self._resources, self.state)
                except SvcError:
                    raise
                except Exception as exc:  # asyncpg's or OSError: Postgres unreachable
                    raise SvcError(
                        ErrorCode.POSTGRES_ERROR,
                        f"could not load metadata version {target}: {exc}",
                        status=500,
                    ) from exc
                if loaded.version > self.state.version:
                    self._install(loaded)
            # Even if the stored version is now below `target` (hdb_catalog recreated),
            # this counter value is done: later requests must not reload again for it.
            self._synced = max(self._synced, target)

    def _install(self, state: State) -> None:
        """Make `state` current and tell the other workers (raise the shared counter).
        Called with the write lock held, after the version is committed."""
        self.state = state
        release_started()  # the first state's cycles may be freed now (`svc.gc_pause`)
        self._synced = max(self._synced, state.version)
        self._use_replicas(state)
        if self._shared is not None:
            self._shared.raise_to(state.version)
        self.background.metadata_changed()  # start or stop jobs the new metadata (un)wants
        self._check_roles_soon(state)

    def _use_replicas(self, state: State) -> None:
        """Route queries to the read replicas of each source's configuration
        (`svc.execute.replicas`); one that cannot be used is an inconsistency
        (`svc.ir.sources.replica_issues` for `default`; another source is then
        inconsistent as a whole: `svc.metadata.sources.source_connection`)."""
        source = state.metadata.default_source
        configuration = source.get("configuration") if isinstance(source, dict) else None
        self.db.use_replicas(replica_confs(configuration, self.config.pool_size))
        for name, raw in served_sources(state.metadata).items():  # each other source's own
            db = self.sources.databases.get(name)
            if db is not None:
                db.use_replicas(replica_confs(raw.get("configuration"), self.config.pool_size))

    def _check_roles_soon(self, state: State) -> None:
        """Build every role's schema of `state` in the background, one role at a time in a
        worker thread (kept for the role's requests), so that the objects a role's schema
        cannot be built with (`svc.schema.role_schema`) are reported by `/healthz` and
        the metrics before any request of that role, as the reference builds every
        role's schema when metadata changes."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop: an engine built by hand
            return
        self._role_check = loop.create_task(self._check_roles(state))

    async def _check_roles(self, state: State) -> None:
        # A burst of metadata changes (a migration, a CI run of the metadata API) checks
        # only its last state: wait a moment and give up when a newer one arrived.
        await asyncio.sleep(ROLE_CHECK_DELAY_S)
        # The name check the next write starts from (`svc.schema.names`), off the loop.
        await asyncio.to_thread(schema_problem, state.ir)
        for role in await asyncio.to_thread(state.roles):
            if state is not self.state:
                return  # a newer state checks its own
            try:
                await asyncio.to_thread(state.check_role, role)
            except Exception:  # a bug, not bad metadata: the role's requests will say it
                _log.exception("svc: checking the schema of role %s failed", role)

    async def inconsistent(self) -> bool:
        """Whether the current state serves anything as inconsistent (`/healthz`): the
        IR's inconsistencies, remote schemas that could not be introspected, objects
        left out of a role's schema (the roles checked so far: every role shortly after
        a change, `ROLE_CHECK_DELAY_S` and the builds later; a probe never waits for it)."""
        state = await self.current_state()
        return bool(state.issues())

    # -- metadata API -------------------------------------------------------------------
    async def metadata(self, raw: Any, role: str, session: dict[str, str] | None = None) -> Any:
        """Run a `/v1/query` body; returns the JSON answer or raises `SvcError`. Only the
        legacy `select` runs as another role (its select permission applies); everything
        else is admin only: 400 `access-denied`."""
        body = decode_body(raw)
        if not is_admin(role) and body.type not in ROLE_OPERATIONS:
            raise SvcError(ErrorCode.ACCESS_DENIED, "restricted access : admin only", path="$.args")
        if body.type in READ_ONLY:
            state = await self.current_state()
            async with self.db.transaction(reset=True) as conn:
                ctx = Context(
                    self.db, conn, state.metadata, state.catalog, state.ir, role, state.remotes
                )
                ctx.session = session
                ctx.resource_version = state.version
                ctx.infer_functions = state.resources.infer_function_permissions
                return await run_operation(ctx, body)
        async with self._write_lock:
            async with self.db.transaction(reset=True) as conn:
                version = await self.db.lock_metadata(conn)
                state = self.state
                if version != state.version:
                    text, version = await self.db.read_metadata(conn)  # locked: the same
                    md = self._resources.documents.decode(text)
                    catalog = await self.db.introspect(conn, md, state.catalog)
                    state = State.build(version, md, catalog, self._resources, state.ir)
                if body.resource_version is not None and body.resource_version != version:
                    raise SvcError(
                        ErrorCode.CONFLICT,
                        f"metadata resource version referenced ({body.resource_version}) did "
                        f"not match current version ({version})",
                        status=409,
                        path="$",
                    )
                ctx = Context(
                    self.db, conn, state.metadata, state.catalog, state.ir, role, state.remotes
                )
                ctx.resource_version = version
                ctx.session = session  # legacy writes set `svc.user` from it
                ctx.infer_functions = state.resources.infer_function_permissions
                with gc_paused():  # a new IR's objects (`svc.gc_pause`)
                    result = await run_operation(ctx, body)
                if ctx.metadata_changed or ctx.schema_changed:
                    await refresh_enum_values(ctx)  # as every worker loading it reads them
                    version = await self.db.write_metadata(
                        conn, encode_metadata(ctx.metadata).decode()
                    )
            if ctx.metadata_changed or ctx.schema_changed:
                self._install(State(version, ctx.metadata, ctx.catalog, ctx.ir, self._resources))
            elif state is not self.state:
                self._install(state)
            return result

    # -- GraphQL ------------------------------------------------------------------------
    async def graphql(
        self,
        raw: Any,
        role: str,
        session: dict[str, str],
        client: str | None = None,
        *,
        backend_only: bool = False,
        relay: bool = False,
    ) -> bytes:
        """Answer a GraphQL request body (an object, or a JSON array for a batch). A batch
        longer than the role's `batch_limit` raises `batch-limit-exceeded`; every operation
        counts against the rate limit (`client`: the client's address, for per-IP rates).
        `backend_only`: the session may use `backend_only` writes (`State.serving`);
        `relay`: the request is the Relay API's (`/v1beta1/relay`, `State.relay_state`)."""
        state = (await self.current_state()).serving(role, backend_only, relay)
        service = self.graphql_service
        if isinstance(raw, list):
            service.limits(state, role).check_batch(len(raw), role)
            parts = [
                await service.execute(state, role, session, r, client=client, batch=True)
                for r in raw
            ]
            return b"[" + b",".join(parts) + b"]"
        return await service.execute(state, role, session, raw, client=client)

    async def graphql_body(
        self,
        body: bytes,
        role: str,
        session: dict[str, str],
        client: str | None = None,
        *,
        backend_only: bool = False,
        relay: bool = False,
    ) -> bytes:
        """Answer a GraphQL request's bytes: a query sent before with the same bytes by the
        same role is answered from them alone; a query with `@cached` from the response
        cache (`svc.api.response_cache`; not the Relay API's, which it does not key);
        raises `invalid-json`, and `batch-limit-exceeded` for too long a batch.
        `backend_only` and `relay` as `graphql`'s."""
        if relay:
            return await self._graphql_body(body, role, session, client, backend_only, relay)
        if b"@cached" in body:
            version = (await self.current_state()).version
            return await self.response_cache.answer(
                body,
                version,
                role,
                session,
                lambda: self._graphql_body(body, role, session, client, backend_only),
            )
        return await self._graphql_body(body, role, session, client, backend_only)

    async def _graphql_body(
        self,
        body: bytes,
        role: str,
        session: dict[str, str],
        client: str | None,
        backend_only: bool = False,
        relay: bool = False,
    ) -> bytes:
        state = (await self.current_state()).serving(role, backend_only, relay)
        answer = await self.graphql_service.answer_again(state, role, session, body, client)
        if answer is not None:
            return answer
        raw = decode_json(body)
        if isinstance(raw, list):
            return await self.graphql(
                raw, role, session, client, backend_only=backend_only, relay=relay
            )
        return await self.graphql_service.execute(
            state, role, session, raw, body=body, client=client
        )

    async def prepare_large(
        self, body: bytes, role: str, *, backend_only: bool = False, relay: bool = False
    ) -> tuple[Any, SvcError | None]:
        """A large GraphQL body decoded, parsed, validated and planned in a worker thread
        (`svc.api.large_body`): `(decoded body, the document's error or None)`, to answer
        with `graphql` (`backend_only` and `relay` as its). Raises 400 `invalid-json`."""
        state = await self.current_state()  # the thread must not prime a stale schema
        state = state.serving(role, backend_only, relay)
        allowlist = self.config.enable_allowlist
        return await asyncio.to_thread(
            prepare_large_body, self.graphql_service, state, body, role, allowlist=allowlist
        )

    async def subscribe(
        self,
        raw: Any,
        role: str,
        session: dict[str, str],
        push: Callable[[bytes], Awaitable[None]],
        *,
        backend_only: bool = False,
        relay: bool = False,
    ) -> LiveHandle:
        """Start one websocket operation (`svc.api.live`). `raw` is the GraphQL
        request object of a `start`/`subscribe` payload (`{query, variables?,
        operationName?}`), `session` the connection's session variables (lower-case
        names), `push` sends one result body (`{"data": …}` or `{"errors": […]}` bytes).

        Raises `SvcError` before anything runs: `parse-failed` (shape of `raw`),
        `validation-failed` (the document, variables, "subscriptions must select one top
        level field" without `@_multiple_top_level_fields`), the role's limits
        (`rate-limit-exceeded`, `depth-limit-exceeded`, …), `not-found` 'missing session
        variable: "x"' for a subscription, 500 `postgres-error` when metadata cannot be
        reloaded. A query or mutation then runs once through the HTTP pipeline, its answer
        (data or errors) is pushed and `handle.done` set. A subscription pushes its current
        result at once and afterwards only when that result changed (polled every
        `--live-queries-multiplexed-refetch-interval` ms, cohorts multiplexed by
        `--live-queries-multiplexed-batch-size`); a failed poll pushes `{"errors": …}`
        once and polling goes on. `await handle.stop()` ends it (idempotent; nothing is
        pushed after it returns). `backend_only` and `relay` as `graphql`'s."""
        interval = self.live.interval  # subscriptions of action fields poll

        async def current() -> State:
            return (await self.current_state()).serving(role, backend_only, relay)

        found = await subscribe_actions(
            self.graphql_service, current, raw, role, session, push, interval
        )
        if found is not None:
            return found
        state = await current()
        return await subscribe(self.graphql_service, self.live, state, raw, role, session, push)

    @staticmethod
    def decode_json(body: bytes) -> Any:
        """A request body's JSON; raises 400 `invalid-json`."""
        return decode_json(body)

    async def pg_dump(self, raw: Any) -> bytes:
        """`/v1alpha1/pg_dump`: Hasura's `{opts, clean_output, source}` body → the dump of
        svc's own database (`svc.execute.pg_dump`). Raises 400 `invalid-params` for
        another body shape or a refused option."""
        if not isinstance(raw, dict):
            raise SvcError(ErrorCode.INVALID_PARAMS, "expected an object", path="$")
        opts = raw.get("opts", [])
        if not isinstance(opts, list) or not all(isinstance(o, str) for o in opts):
            raise SvcError(
                ErrorCode.INVALID_PARAMS, "opts must be a list of strings", path="$.opts"
            )
        return await pg_dump(self.config.database_url, opts, bool(raw.get("clean_output")))

    async def rest(
        self,
        request: RestRequest,
        role: str,
        session: dict[str, str],
        *,
        backend_only: bool = False,
    ) -> RestResponse:
        """Answer a RESTified endpoint call (`svc.api.rest`; `backend_only` as `graphql`'s);
        raises `SvcError`."""
        state = (await self.current_state()).serving(role, backend_only)
        return await run_rest(self.graphql_service, state, request, role, session)

    async def explain(self, raw: Any) -> Any:
        """`/v1/graphql/explain`: `[{field, sql, plan}]` for a query (spec 4.13: `sql` is
        the statement execution runs for that field); for a subscription `{sql, plan,
        variables: {query, session, synthetic, cursor}}` of the multiplexed statement the
        poller runs, for one cohort with the request's variables and `user` session
        (`svc.api.live.explain`). Raises `SvcError` (`not-found` for a missing session
        variable the subscription reads)."""
        if not isinstance(raw, dict) or "query" not in raw:
            raise SvcError(ErrorCode.PARSE_FAILED, 'key "query" not found', path="$")
        query = raw["query"]
        user = {str(k).lower(): str(v) for k, v in (raw.get("user") or {}).items()}
        role = user.get(process_names().role_variable, ADMIN_ROLE)
        state = await self.current_state()
        if raw.get("is_relay") is True:  # the reference's `GQLExplain` `_gqeIsRelay`
            state = state.relay_state()
        req = decode_request(query if isinstance(query, dict) else {"query": query})
        prepared, compiled, variables = self.graphql_service.compile(state, role, req)
        if compiled.plan.kind == "subscription":
            service = self.graphql_service
            live = service.compile_live(state, role, req, prepared)[2]
            return await explain_subscription(compiled.db, live, variables, user)
        out: list[dict[str, Any]] = []
        for root in compiled.plan.roots:
            if root.select is None or not hasattr(root.select, "rows"):
                continue
            stmt = render_root(root.select)  # type: ignore[arg-type]
            args = resolve(stmt.params, variables, user)
            plan = await compiled.db.explain(stmt.sql, args)
            out.append({"field": root.alias, "sql": stmt.sql, "plan": plan})
        return out
