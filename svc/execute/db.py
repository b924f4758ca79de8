"""The connection pool and the few ways svc talks to Postgres, per source (`Sources`).

Only this package imports asyncpg (design brief 2). Connections run in UTC so timestamps
render the same whatever the server's default zone (the reference's answers assume it).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import math
from collections.abc import AsyncIterator
from contextvars import ContextVar
from typing import Any

import asyncpg
import msgspec

from svc.catalog.fingerprint import CATALOG_FINGERPRINT_SQL
from svc.catalog.introspect import (
    INTROSPECTION_KEY,
    INTROSPECTION_SQL,
    DbCatalog,
    decode_catalog,
    without_enum_rows,
)
from svc.catalog.storage import (
    CATALOG_EXISTS_SQL,
    INIT_LOCK_SQL,
    INIT_SQL,
    LOCK_METADATA_SQL,
    NOTIFY_CHANNEL,
    NOTIFY_SQL,
    PGCRYPTO_AVAILABLE_SQL,
    PGCRYPTO_PERMISSION,
    READ_CATALOG_CACHE_SQL,
    READ_METADATA_SQL,
    READ_VERSION_SQL,
    WRITE_CATALOG_CACHE_SQL,
    WRITE_METADATA_SQL,
)
from svc.errors import ErrorCode, SvcError
from svc.execute.enum_values import read_enum_rows
from svc.execute.errors import (
    connection_error,
    is_connection_error,
    map_query_error,
    statement_timeout_error,
)
from svc.execute.replicas import ON_PRIMARY, Replicas
from svc.metadata.model import DEFAULT_SOURCE, Metadata
from svc.metadata.read_replicas import ReplicaConf
from svc.sql.render import ident

Connection = asyncpg.Connection
PostgresError = asyncpg.PostgresError
#: Errors after which a statement may simply be run again (deadlock, serialization).
TRANSIENT_ERRORS = (asyncpg.DeadlockDetectedError, asyncpg.SerializationError)


def _text_bytes(value: str | bytes) -> bytes:
    return value.encode() if isinstance(value, str) else value


async def _init_connection(conn: asyncpg.Connection) -> None:
    # json/jsonb arrive as the bytes Postgres sent (binary format: json is its text, jsonb
    # a version byte and its text): svc writes them into the response without decoding.
    await conn.set_type_codec(
        "json", encoder=_text_bytes, decoder=bytes, schema="pg_catalog", format="binary"
    )
    await conn.set_type_codec(
        "jsonb",
        encoder=lambda v: b"\x01" + _text_bytes(v),
        decoder=lambda v: bytes(v[1:]),
        schema="pg_catalog",
        format="binary",
    )


async def _keep_session(conn: asyncpg.Connection) -> None:
    """Pool release hook: no reset query. asyncpg's default (`RESET ALL`, `UNLISTEN *`, …)
    is a second round trip per GraphQL request; only `Database.transaction` can leave
    session state behind (run_sql), and it resets the connection itself."""


_SETTINGS = {"timezone": "UTC", "application_name": "svc"}
# Seconds a connection gets to close gracefully at shutdown before it is terminated.
CLOSE_WAIT_S = 1.0
_STATEMENT_CACHE = 1024  # prepared statements kept per connection (asyncpg's LRU)
CONNECT_TIMEOUT = 10.0  # seconds to open a connection before answering "connection error"
_SETTLE_FIRST = 1.0  # seconds to wait for a cancel's acknowledgement before cancelling again
_SETTLE_LAST = 10.0  # … and then before terminating the backend and the connection


def _limit(seconds: float) -> float:
    """A time limit in seconds as compared here: 0 (or less) is no limit, `inf`."""
    return seconds if seconds > 0 else math.inf


def timeout_ms(seconds: float) -> str:
    """A time limit in seconds as Postgres's `statement_timeout` text: whole milliseconds
    (rounded up, so a positive limit never becomes "0"), "0" for no limit."""
    return "0" if not 0 < seconds < math.inf else str(max(1, math.ceil(seconds * 1000)))


class _ReadConnection(asyncpg.Connection):  # type: ignore[misc]
    """A read-path connection that knows its session's `statement_timeout` (`limit`,
    seconds, `inf` for none), so a statement under that limit needs no timer of svc's."""

    __slots__ = ("limit",)
    limit: float


class ReadConnections:
    """The connections of the read path (`query_json`): a queue of `size` slots, each an
    idle connection or None until first needed (so a quiet process holds few).

    Cheaper per request than asyncpg's pool (no holder bookkeeping, no release hook or
    timeout handling), as the benchmark's limit server does. Each connection runs with
    `statement_timeout` = `statement_timeout` seconds (0: none), so Postgres itself stops
    a runaway statement at the server's default limit; a call with a stricter limit uses
    asyncpg's timer (which sends a cancel request), a looser one sets the session's
    `statement_timeout` first (one round trip, kept for that connection).

    A connection goes back to the queue after a result or a Postgres error (the session is
    fine). After a cancellation (the request's task was cancelled: its client left) or
    svc's timer, asyncpg has sent Postgres a cancel request; the slot stays taken until
    Postgres acknowledges it (`_settle`: the backend stopped), so no busy backend is left
    behind and no later statement waits for it. A lost connection is dropped and its slot
    reconnects on next use; one that was found dead when reused is retried once on a new
    connection (the first request after a Postgres restart succeeds).
    """

    def __init__(
        self,
        url: str,
        size: int,
        statement_timeout: float = 0.0,
        settings: dict[str, str] | None = None,
    ) -> None:
        self.url = url
        self.settings = {**_SETTINGS, **(settings or {})}
        self.limit = _limit(statement_timeout)
        self.idle: asyncio.Queue[_ReadConnection | None] = asyncio.Queue()
        for _ in range(size):
            self.idle.put_nowait(None)
        self.opened: set[_ReadConnection] = set()
        self.settling: set[asyncio.Task[None]] = set()

    async def _open(self) -> _ReadConnection:
        conn: _ReadConnection = await asyncpg.connect(
            self.url,
            server_settings={**self.settings, "statement_timeout": timeout_ms(self.limit)},
            statement_cache_size=_STATEMENT_CACHE,
            timeout=CONNECT_TIMEOUT,
            connection_class=_ReadConnection,
        )
        conn.limit = self.limit
        await _init_connection(conn)
        self.opened.add(conn)
        return conn

    def _drop(self, conn: _ReadConnection | None) -> None:
        if conn is not None:
            self.opened.discard(conn)
            conn.terminate()

    async def fetchrow(
        self, sql: str, args: list[Any], timeout: float | None = None
    ) -> asyncpg.Record | None:
        """The first row of `sql` with `args`, within `timeout` seconds (None: the server
        default; 0: none). Raises the Postgres error (`asyncpg.PostgresError`), or
        `SvcError` 400 `postgres-error` "canceling statement due to statement timeout"
        when the limit passed, or 500 `postgres-error` "connection error" when Postgres
        cannot be reached (`svc.execute.errors`)."""
        limit = self.limit if timeout is None else _limit(timeout)
        conn = await self.idle.get()
        retry = True  # once, when a connection from the queue turns out dead
        while True:
            try:
                if conn is None or conn.is_closed():
                    self._drop(conn)
                    conn, retry = None, False
                    conn = await self._open()
                if limit == conn.limit:
                    row = await conn.fetchrow(sql, *args)
                else:
                    row = await self._limited(conn, sql, args, limit)
            except asyncpg.PostgresError as exc:
                if not is_connection_error(exc):
                    self.idle.put_nowait(conn)
                    raise
                failure: BaseException = exc
            except asyncio.CancelledError:
                if conn is None:
                    self.idle.put_nowait(None)
                else:
                    self._settle(conn)
                raise
            except TimeoutError as exc:  # svc's timer (the statement), or connecting
                if conn is None or conn.is_closed():
                    failure = exc
                else:
                    self._settle(conn)
                    raise statement_timeout_error() from None
            except BaseException as exc:
                failure = exc
                if not is_connection_error(exc):
                    self._drop(conn)
                    self.idle.put_nowait(None)
                    raise
            else:
                self.idle.put_nowait(conn)
                return row
            self._drop(conn)
            conn = None
            if not retry:
                self.idle.put_nowait(None)
                raise connection_error(failure) from failure

    @staticmethod
    async def _limited(
        conn: _ReadConnection, sql: str, args: list[Any], limit: float
    ) -> asyncpg.Record | None:
        """Run under a limit other than the session's: a stricter one by asyncpg's timer
        (on expiry asyncpg sends a cancel request and raises TimeoutError), a looser one
        by raising the session's `statement_timeout` first."""
        if limit < conn.limit:
            return await conn.fetchrow(sql, *args, timeout=limit)
        await conn.execute(f"SET statement_timeout = {timeout_ms(limit)}")
        conn.limit = limit
        return await conn.fetchrow(sql, *args)

    def _settle(self, conn: _ReadConnection) -> None:
        """Give `conn` back once Postgres acknowledged the cancel asyncpg sent (in a task:
        the caller is being cancelled or has timed out)."""
        task = asyncio.get_running_loop().create_task(self._settled(conn))
        self.settling.add(task)
        task.add_done_callback(self.settling.discard)

    async def _settled(self, conn: _ReadConnection) -> None:
        """asyncpg runs nothing on a connection until its cancel is acknowledged, so a
        probe statement completes only after the cancelled statement stopped. If that takes
        longer than `_SETTLE_FIRST` (the cancel request was lost, or reached the backend
        before the statement started), cancel again with `pg_cancel_backend`; after
        `_SETTLE_LAST` more, terminate the backend and the connection."""
        pid = conn.get_server_pid()
        probe = asyncio.ensure_future(conn.fetchval("SELECT 1"))
        try:
            done, _ = await asyncio.wait((probe,), timeout=_SETTLE_FIRST)
            if not done:
                await self._signal("pg_cancel_backend", pid)
                done, _ = await asyncio.wait((probe,), timeout=_SETTLE_LAST)
            if not done:
                probe.cancel()
                await self._signal("pg_terminate_backend", pid)
                raise TimeoutError
            probe.result()
        except asyncpg.PostgresError as exc:  # a late cancel met the probe: fine
            if is_connection_error(exc):
                self._drop(conn)
                self.idle.put_nowait(None)
                return
        except BaseException:
            self._drop(conn)
            self.idle.put_nowait(None)
            raise
        self.idle.put_nowait(conn)

    async def _signal(self, function: str, pid: int) -> None:
        """`SELECT function(pid)` on a connection of its own (every read connection may be
        taken); failures are ignored (the server-side `statement_timeout` remains)."""
        with contextlib.suppress(Exception):
            conn = await asyncpg.connect(self.url, timeout=CONNECT_TIMEOUT)
            try:
                await conn.execute(f"SELECT {function}($1)", pid)
            finally:
                conn.terminate()

    async def close(self) -> None:
        """Close every connection this queue opened."""
        for task in list(self.settling):
            task.cancel()
        for conn in list(self.opened):
            with contextlib.suppress(Exception):
                await conn.close(timeout=CLOSE_WAIT_S)
            if not conn.is_closed():
                conn.terminate()
        self.opened.clear()


async def _create_pgcrypto(conn: asyncpg.Connection, schema: str) -> None:
    """`CREATE EXTENSION IF NOT EXISTS pgcrypto SCHEMA <schema>` (a no-op when pgcrypto
    exists in any schema). 500 `postgres-error` with the reference's message on 42501."""
    try:
        await conn.execute(f"CREATE EXTENSION IF NOT EXISTS pgcrypto SCHEMA {ident(schema)}")
    except asyncpg.InsufficientPrivilegeError as exc:
        raise SvcError(ErrorCode.POSTGRES_ERROR, PGCRYPTO_PERMISSION, status=500) from exc


_closing: set[asyncio.Task[None]] = set()  # replicas being closed (`use_replicas`)

#: True for a request without credentials (the unauthorized role): its statements take
#: one of the read path's anonymous slots (`Database.limit_anonymous`). Set by the
#: server per request (`svc.server.app`, `svc.server.ws_operations`).
ANONYMOUS: ContextVar[bool] = ContextVar("svc_anonymous", default=False)


class Database:
    """A pool (metadata, mutations, explain, run_sql) plus the read path's connections,
    and catalog helpers. Create with `await Database.connect(url)`.

    `statement_timeout` (seconds, 0: none) is the server-wide default time limit of a
    GraphQL statement (`--statement-timeout`); a call's own `timeout` (None: that default)
    overrides it. Metadata operations and `run_sql` (admin only) have no limit.
    `announces_writes`: whether mutations on it notify the tables they wrote (set by the
    live queries of its engine under `SVC_GRAPHQL_LIVE_QUERIES_SKIP_IDLE=mutations`).
    """

    def __init__(
        self, pool: asyncpg.Pool, url: str, reads: ReadConnections, statement_timeout: float = 0.0
    ) -> None:
        self.pool = pool
        self.url = url
        self.reads = reads
        self.statement_timeout = statement_timeout
        self.announces_writes = False
        self.replicas: Replicas | None = None  # `use_replicas`
        self.anonymous: asyncio.Semaphore | None = None  # `limit_anonymous`
        self.replica_failures = 0  # statements a replica could not take (`query_json`)
        self.peers: Sources | None = None  # the other sources, for `introspect` (`Sources`)
        self.keeps_catalog = False  # whether `introspection_text` may use `hdb_catalog`

    @classmethod
    async def connect(
        cls,
        url: str,
        *,
        min_size: int = 1,
        max_size: int = 10,
        statement_timeout: float = 0.0,
        settings: dict[str, str] | None = None,
        idle_timeout: float = 300.0,
    ) -> Database:
        """Open a pool to `url` of up to `max(2, max_size // 2)` connections and a read
        path of up to `max_size` (queries, opened on demand); `settings`: Postgres
        settings for every connection (a source's `isolation_level`, `svc.metadata.sources`);
        `idle_timeout`: seconds an idle pooled connection is kept. Raises `SvcError`
        500 `postgres-error` "connection error" when unreachable."""
        try:
            pool = await asyncpg.create_pool(
                url,
                min_size=min_size,
                max_size=max(2, max_size // 2),
                max_inactive_connection_lifetime=idle_timeout,
                init=_init_connection,
                server_settings={**_SETTINGS, **(settings or {})},
                statement_cache_size=_STATEMENT_CACHE,
                reset=_keep_session,
                timeout=CONNECT_TIMEOUT,
            )
        except Exception as exc:
            # at connect time every Postgres error (no such database, bad password) means
            # the connection could not be made
            if is_connection_error(exc) or isinstance(exc, asyncpg.PostgresError):
                raise connection_error(exc) from exc
            raise
        assert pool is not None
        reads = ReadConnections(url, max_size, statement_timeout, settings)
        return cls(pool, url, reads, statement_timeout)

    async def close(self) -> None:
        """Close every connection: gracefully within `CLOSE_WAIT_S` seconds, then at once
        (a connection a cancelled request still holds must not hold the shutdown: its
        statement was cancelled already)."""
        if self.replicas is not None:
            await self.replicas.close()
        await self.reads.close()
        try:
            await asyncio.wait_for(self.pool.close(), CLOSE_WAIT_S)
        except TimeoutError:
            self.pool.terminate()

    def limit_anonymous(self, slots: int) -> None:
        """Let at most `slots` statements of requests without credentials (`ANONYMOUS`) run
        at once on the read path, so they cannot take every connection from the others
        (0: no own share). Beyond the reference (20 anonymous slow patterns held
        every connection for 40 s)."""
        self.anonymous = asyncio.Semaphore(slots) if slots > 0 else None

    def use_replicas(self, confs: tuple[ReplicaConf, ...]) -> None:
        """Route `query_json` to these read replicas from now on (`svc.execute.replicas`;
        none: the primary only). Connections open on first use; the old replicas' close
        in the background (a statement still running on one fails as unreachable and is
        run again: `query_json`). A call with the replicas in use already changes
        nothing."""
        current = self.replicas
        if (current.confs if current is not None else ()) == confs:
            return
        members = [ReadConnections(c.url, c.size, self.statement_timeout) for c in confs]
        self.replicas = Replicas(members, confs) if members else None
        if current is not None:
            task = asyncio.get_running_loop().create_task(current.close())
            _closing.add(task)
            task.add_done_callback(_closing.discard)

    @contextlib.asynccontextmanager
    async def transaction(
        self, *, read_only: bool = False, reset: bool = False
    ) -> AsyncIterator[asyncpg.Connection]:
        """A pooled connection inside one transaction (committed on normal exit). A lost
        or refused connection, here or in the body, raises 500 `postgres-error`
        "connection error". `reset`: the body may run user SQL (`run_sql`: SET, LISTEN,
        DECLARE, advisory locks), so the connection is reset after it; svc's own
        statements leave no session state and skip that round trip (mutations)."""
        try:
            async with self.pool.acquire() as conn:
                try:
                    async with conn.transaction(readonly=read_only):
                        yield conn
                finally:
                    if reset and not conn.is_closed():
                        await conn.execute(conn.get_reset_query())
        except Exception as exc:
            if not isinstance(exc, SvcError) and is_connection_error(exc):
                raise connection_error(exc) from exc
            raise

    def timeout_setting(self, timeout: float | None) -> str:
        """The `statement_timeout` text for a call's `timeout` (seconds; None: the server
        default; 0: none), for `set_config('statement_timeout', …, true)`."""
        return timeout_ms(_limit(self.statement_timeout if timeout is None else timeout))

    async def init_catalog(self, extensions_schema: str = "public") -> bool:
        """Create `hdb_catalog` if missing (idempotent, safe under concurrent starts).

        When the catalog is new, first create pgcrypto in `extensions_schema` as the
        reference does (`enablePgcryptoExtension`: Hasura projects' migrations use its
        functions). Returns False when this Postgres has no pgcrypto to create (the
        embedded Postgres: the reference refuses to start there; svc's own catalog needs
        only the core `gen_random_uuid`, so it starts and the caller says so), else True.
        Raises 500 `postgres-error` with the reference's message when the role may not
        create the extension (42501).
        """
        available = True
        async with self.transaction() as conn:
            await conn.execute(INIT_LOCK_SQL)
            if not await conn.fetchval(CATALOG_EXISTS_SQL):
                available = bool(await conn.fetchval(PGCRYPTO_AVAILABLE_SQL))
                if available:
                    await _create_pgcrypto(conn, extensions_schema)
            await conn.execute(INIT_SQL)
        return available

    async def query_json(
        self,
        sql: str,
        args: list[Any],
        columns: int,
        timeout: float | None = None,
        *,
        primary: bool = False,
        _shared: bool = False,
    ) -> tuple[bytes, ...]:
        """Run a compiled query returning one row of `columns` JSON values (UTF-8 bytes),
        in an anonymous slot when the request has no credentials (`limit_anonymous`),
        within `timeout` seconds (None: the server's `statement_timeout`; 0: no limit).

        Runs on the next read replica (`use_replicas`) unless `primary` or the request
        writes (`ON_PRIMARY`); a replica that cannot be reached is skipped and the
        statement runs on the next one or the primary. Raises `SvcError`: the mapped
        Postgres error (`svc.execute.errors`); 400
        `postgres-error` "canceling statement due to statement timeout" past the limit
        (the statement is cancelled in Postgres); 500 `postgres-error` "connection error"
        when Postgres cannot be reached. When the calling task is cancelled, the statement
        is cancelled in Postgres too (`ReadConnections`).
        """
        share = self.anonymous
        if share is not None and not _shared and ANONYMOUS.get():
            async with share:  # (`_shared`: in its slot already; no extra await per query)
                return await self.query_json(
                    sql, args, columns, timeout, primary=primary, _shared=True
                )
        reads = self.reads
        replicas = self.replicas
        if replicas is not None and not primary and not ON_PRIMARY.get():
            reads = replicas.pick() or reads
        try:
            row = await reads.fetchrow(sql, args, timeout)
        except asyncpg.PostgresError as exc:
            raise map_query_error(exc) from exc
        except SvcError as exc:
            if reads is self.reads or replicas is None or exc.status != 500:
                raise
            replicas.mark_down(reads, exc)  # unreachable: the primary answers instead
            self.replica_failures += 1
            return await self.query_json(sql, args, columns, timeout, primary=primary, _shared=True)
        assert row is not None
        values: tuple[bytes, ...] = tuple(row)[:columns]
        if None in values:
            values = tuple(b"null" if v is None else v for v in values)
        return values

    async def explain(self, sql: str, args: list[Any]) -> list[str]:
        """`EXPLAIN` lines of a compiled statement with its arguments; raises the mapped
        `SvcError` (500 `postgres-error` "connection error" when unreachable)."""
        try:
            async with self.pool.acquire() as conn:
                rows = await conn.fetch("EXPLAIN " + sql, *args)
        except asyncpg.PostgresError as exc:
            raise map_query_error(exc) from exc
        except Exception as exc:
            if is_connection_error(exc):
                raise connection_error(exc) from exc
            raise
        return [r[0] for r in rows]

    # -- catalog ------------------------------------------------------------------------
    async def introspect(
        self,
        conn: asyncpg.Connection,
        metadata: Metadata | None = None,
        previous: DbCatalog | None = None,
        *,
        fresh: bool = False,
    ) -> DbCatalog:
        """The catalog as seen by `conn` (inside its transaction, if any); with `metadata`,
        also the rows of the tables it tracks as enums (`svc.execute.enum_values`), as
        every schema built from the database needs them, and, on the `default` source's
        database, the catalog of each other source `metadata` serves (`Sources.introspect`,
        connecting to a new one first).

        First reads the catalogs' fingerprint (`svc.catalog.fingerprint`, about 35 ms at
        10,000 tables), kept in `DbCatalog.fingerprint`. When `previous` (a catalog an
        earlier call returned, on this database) carries the same fingerprint, the
        database's structure has not changed since: its tables and functions are reused
        (the same objects) and `INTROSPECTION_SQL` and its decoding (0.7 to 1.1 s at
        10,000 tables) are skipped; enum rows (data) and other sources are read as
        without it (each other source against its own catalog in `previous.sources`).
        The result then equals what a call without `previous` would return. The
        fingerprint is read before the introspection, so a change committed in between
        makes the next fingerprint differ from this one (an introspection more, never a
        stale catalog). Without `previous`, the answer another process kept under the same
        fingerprint (`introspection_text`) unless `fresh` (`reload_metadata`: the
        statement itself, as the reference reads the database again there). Raises what
        the statements raise (`asyncpg.PostgresError`)."""
        fingerprint: str = await conn.fetchval(CATALOG_FINGERPRINT_SQL)
        if previous is not None and previous.fingerprint == fingerprint != "":
            kept = without_enum_rows(previous) if metadata is None else previous
            catalog = DbCatalog(kept.tables, kept.functions, fingerprint=fingerprint)
        else:
            catalog = decode_catalog(await self.introspection_text(conn, fingerprint, fresh))
            catalog = msgspec.structs.replace(catalog, fingerprint=fingerprint)
        if metadata is not None:
            # with `previous`'s tables: every enum table read again, other tables' rows dropped
            catalog = await read_enum_rows(conn, metadata, catalog)
            if self.peers is not None and metadata.other_sources:
                catalog = await self.peers.introspect(catalog, metadata, previous)
        return catalog

    async def introspection_text(
        self, conn: asyncpg.Connection, fingerprint: str, fresh: bool = False
    ) -> str:
        """`INTROSPECTION_SQL`'s answer (JSON text) for the catalogs of `fingerprint`
        (`CATALOG_FINGERPRINT_SQL`'s, read by `conn` before). On the metadata database
        (`keeps_catalog`), the answer kept in `hdb_catalog.svc_catalog_cache` under the same
        statement, fingerprint and role, else the statement's, then kept (another process
        starting, or reloading after a DDL, then reads it in ~30 ms instead of running it:
        0.7 s at 10,000 tables). The fingerprint is read before the statement, so a kept
        answer is at least as new as its key (`svc.catalog.fingerprint` on why equal
        fingerprints mean an equal catalog). Reading and keeping run in savepoints: in a
        read-only transaction, or without the table (a script dropped `hdb_catalog`), the
        statement answers and nothing is kept. `fresh`: the statement's answer (then kept)
        whatever is kept. Raises what the statement raises."""
        if not (self.keeps_catalog and fingerprint):
            text: str = await conn.fetchval(INTROSPECTION_SQL)
            return text
        key = hashlib.sha256(f"{INTROSPECTION_KEY}/{fingerprint}".encode()).hexdigest()
        kept = None if fresh else await _in_savepoint(conn, READ_CATALOG_CACHE_SQL, key)
        if isinstance(kept, str):
            return kept
        text = await conn.fetchval(INTROSPECTION_SQL)
        await _in_savepoint(conn, WRITE_CATALOG_CACHE_SQL, key, text)
        return text

    @staticmethod
    async def read_metadata(conn: asyncpg.Connection) -> tuple[bytes, int]:
        """`(metadata JSON, resource_version)`."""
        row = await conn.fetchrow(READ_METADATA_SQL)
        assert row is not None
        return row[0], row[1]

    @staticmethod
    async def lock_metadata(conn: asyncpg.Connection) -> int:
        """Take the metadata row's lock for a write (until `conn`'s transaction ends);
        the stored resource version. The document is read only when the writer's is
        older (`read_metadata`): at 10,000 tables it is 6.5 MB."""
        version: int = await conn.fetchval(LOCK_METADATA_SQL)
        return version

    @staticmethod
    async def write_metadata(conn: asyncpg.Connection, text: str) -> int:
        """Store a new metadata document; returns the bumped resource version."""
        version: int = await conn.fetchval(WRITE_METADATA_SQL, text)
        await conn.execute(NOTIFY_SQL, NOTIFY_CHANNEL, str(version))
        return version

    async def read_version(self) -> int:
        """The stored resource version (the poll fallback of metadata sync); raises 500
        `postgres-error` "connection error" when Postgres cannot be reached."""
        try:
            async with self.pool.acquire() as conn:
                version: int = await conn.fetchval(READ_VERSION_SQL)
        except Exception as exc:
            if is_connection_error(exc):
                raise connection_error(exc) from exc
            raise
        return version


async def _in_savepoint(conn: asyncpg.Connection, sql: str, *args: Any) -> Any:
    """`sql`'s value, or None when it fails (in a savepoint: the caller's transaction
    stays usable)."""
    try:
        async with conn.transaction():
            return await conn.fetchval(sql, *args)
    except asyncpg.PostgresError:
        return None


_RETIRING: set[asyncio.Task[None]] = set()  # closing the connections of dropped sources


def _why_unreachable(exc: BaseException) -> str:
    """What an inconsistent source's reason says of `exc` (the reference: "Inconsistent
    object: <the database's error>")."""
    if isinstance(exc, SvcError):
        detail = exc.internal.get("error") if isinstance(exc.internal, dict) else None
        return f"{exc.message}: {detail}" if isinstance(detail, str) else exc.message
    return str(exc) or type(exc).__name__


class Sources:
    """The connections of each metadata source: source name → its own `Database` (pool
    and read connections). Today `svc` serves one source, `DEFAULT_SOURCE`, on the
    database URL (`Sources.connect`); a plan names its source and the executor takes that
    source's `Database` when the plan is made and cached (`database`), never per request.

    `default` is the `DEFAULT_SOURCE`'s database, which also holds `hdb_catalog`.
    """

    def __init__(self, databases: dict[str, Database], **options: Any) -> None:
        """`databases` must include `DEFAULT_SOURCE` (ValueError otherwise); `options`: the
        `Database.connect` options other sources are opened with (`max_size` caps a
        source's `pool_settings.max_connections`)."""
        if DEFAULT_SOURCE not in databases:
            raise ValueError(f"no {DEFAULT_SOURCE!r} source")
        self.databases = dict(databases)
        self.default = databases[DEFAULT_SOURCE]
        self.default.peers = self
        self.default.keeps_catalog = True  # it holds `hdb_catalog` (`introspection_text`)
        self.options = options
        self.urls: dict[str, str] = {}  # each other source's settings, as connected

    async def introspect(
        self, catalog: DbCatalog, metadata: Metadata, previous: DbCatalog | None = None
    ) -> DbCatalog:
        """`catalog` (the `default` source's) with every other source `metadata` serves
        (`svc.metadata.sources`): connected when new or moved, introspected (its enum
        tables' rows too; against `previous.sources[name]` unless its connections are
        opened anew now, `Database.introspect`), or the reason it cannot be in
        `unreachable`. Sources no longer served are closed. Never raises for a source's
        database."""
        from svc.metadata.sources import served_sources, source_connection, source_view

        served = served_sources(metadata)
        found: dict[str, DbCatalog] = {}
        unreachable: dict[str, str] = {}
        for name, raw in served.items():
            conf = source_connection(raw, int(self.options.get("max_size", 10)))
            if conf.url is None:
                unreachable[name] = conf.problem or "no database_url"
                continue
            try:
                known = self.databases.get(name) if self.urls.get(name) == conf.key else None
                db = await self._connected(name, conf)
                before = None  # `previous`'s catalog of it, unless connected anew
                if previous is not None and db is known:
                    before = previous.sources.get(name)
                async with db.transaction() as conn:
                    view = source_view(metadata, name)
                    found[name] = await db.introspect(conn, view, before)
            except Exception as exc:
                unreachable[name] = _why_unreachable(exc)
        for name in [n for n in self.databases if n != DEFAULT_SOURCE and n not in served]:
            self.retire(name)
        return msgspec.structs.replace(catalog, sources=found, unreachable=unreachable)

    async def _connected(self, name: str, conf: Any) -> Database:
        """Source `name`'s database as `conf` (`SourceConnection`) says, opened when new
        or when its settings changed."""
        known = self.databases.get(name)
        if known is not None and self.urls.get(name) == conf.key:
            return known
        if known is not None:
            self.retire(name)
        options = {**self.options, "max_size": conf.size, "settings": dict(conf.settings)}
        options["idle_timeout"] = conf.idle_timeout
        db = await Database.connect(conf.url, **options)
        self.databases[name], self.urls[name] = db, conf.key
        return db

    def rename(self, name: str, new: str) -> None:
        """Source `name`'s connections, now source `new`'s (`rename_source`)."""
        if name in self.databases:
            self.databases[new] = self.databases.pop(name)
            self.urls[new] = self.urls.pop(name, "")

    def retire(self, name: str) -> None:
        """Forget source `name`; its connections close once the statements on them end."""
        db = self.databases.pop(name, None)
        self.urls.pop(name, None)
        if db is not None:
            task = asyncio.get_running_loop().create_task(db.close())
            _RETIRING.add(task)
            task.add_done_callback(_RETIRING.discard)

    @classmethod
    async def connect(cls, urls: dict[str, str], **options: Any) -> Sources:
        """Connect every source of `urls` (name → database URL) with the same
        `Database.connect` `options`; raises what `Database.connect` raises (the sources
        opened so far are closed first)."""
        opened: dict[str, Database] = {}
        try:
            for name, url in urls.items():
                opened[name] = await Database.connect(url, **options)
        except BaseException:
            for db in opened.values():
                with contextlib.suppress(Exception):
                    await db.close()
            raise
        return cls(opened, **options)

    def database(self, source: str) -> Database:
        """The `Database` of `source`; raises `SvcError` 400 `not-exists` for a source
        svc has no connections for (the reference's "source with name … does not
        exist")."""
        found = self.databases.get(source)
        if found is None:
            raise SvcError(ErrorCode.NOT_EXISTS, f'source with name "{source}" does not exist')
        return found

    async def close(self) -> None:
        """Close every source's connections (each once, however many names share it)."""
        closed: set[int] = set()
        for db in self.databases.values():
            if id(db) not in closed:
                closed.add(id(db))
                await db.close()
