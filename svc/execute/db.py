"""The connection pool and the few ways svc talks to Postgres.

Only this package imports asyncpg (design brief 2). Connections run in UTC so timestamps
render the same whatever the server's default zone (the reference's answers assume it).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import asyncpg

from svc.catalog.introspect import INTROSPECTION_SQL, DbCatalog, decode_catalog
from svc.catalog.storage import (
    INIT_LOCK_SQL,
    INIT_SQL,
    LOCK_METADATA_SQL,
    NOTIFY_CHANNEL,
    NOTIFY_SQL,
    READ_METADATA_SQL,
    READ_VERSION_SQL,
    WRITE_METADATA_SQL,
)
from svc.errors import SvcError
from svc.execute.errors import map_query_error

Connection = asyncpg.Connection
PostgresError = asyncpg.PostgresError


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
_STATEMENT_CACHE = 1024  # prepared statements kept per connection (asyncpg's LRU)


class ReadConnections:
    """The connections of the read path (`query_json`): a queue of `size` slots, each an
    idle connection or None until first needed (so a quiet process holds few).

    Cheaper per request than asyncpg's pool (no holder bookkeeping, no release hook or
    timeout handling), as the benchmark's limit server does. A connection goes back to
    the queue after a result or a Postgres error (the server refused the statement; the
    session is fine); after anything else (cancellation, a lost connection) it is
    terminated and its slot reconnects on next use, so a half-read protocol state never
    serves another request.
    """

    def __init__(self, url: str, size: int) -> None:
        self.url = url
        self.idle: asyncio.Queue[asyncpg.Connection | None] = asyncio.Queue()
        for _ in range(size):
            self.idle.put_nowait(None)
        self.opened: set[asyncpg.Connection] = set()

    async def _open(self) -> asyncpg.Connection:
        conn = await asyncpg.connect(
            self.url, server_settings=_SETTINGS, statement_cache_size=_STATEMENT_CACHE
        )
        await _init_connection(conn)
        self.opened.add(conn)
        return conn

    async def fetchrow(self, sql: str, args: list[Any]) -> asyncpg.Record | None:
        """The first row of `sql` with `args`; raises what asyncpg raises."""
        conn = await self.idle.get()
        try:
            if conn is None or conn.is_closed():
                conn = await self._open()
            row = await conn.fetchrow(sql, *args)
        except asyncpg.PostgresError:
            self.idle.put_nowait(conn)
            raise
        except BaseException:
            if conn is not None:
                self.opened.discard(conn)
                conn.terminate()
            self.idle.put_nowait(None)
            raise
        self.idle.put_nowait(conn)
        return row

    async def close(self) -> None:
        """Close every connection this queue opened."""
        for conn in list(self.opened):
            with contextlib.suppress(Exception):
                await conn.close(timeout=5)
        self.opened.clear()


class Database:
    """A pool (metadata, mutations, explain, run_sql) plus the read path's connections,
    and catalog helpers. Create with `await Database.connect(url)`."""

    def __init__(self, pool: asyncpg.Pool, url: str, reads: ReadConnections) -> None:
        self.pool = pool
        self.url = url
        self.reads = reads

    @classmethod
    async def connect(cls, url: str, *, min_size: int = 1, max_size: int = 10) -> Database:
        """Open a pool to `url` of up to `max(2, max_size // 2)` connections and a read
        path of up to `max_size` (queries, opened on demand); raises `SvcError`
        `postgres-error` 500 when unreachable."""
        try:
            pool = await asyncpg.create_pool(
                url,
                min_size=min_size,
                max_size=max(2, max_size // 2),
                init=_init_connection,
                server_settings=_SETTINGS,
                statement_cache_size=_STATEMENT_CACHE,
                reset=_keep_session,
            )
        except (OSError, asyncpg.PostgresError) as exc:
            raise SvcError("postgres-error", f"connection error: {exc}", status=500) from exc
        assert pool is not None
        return cls(pool, url, ReadConnections(url, max_size))

    async def close(self) -> None:
        """Close every connection."""
        await self.reads.close()
        await self.pool.close()

    @contextlib.asynccontextmanager
    async def transaction(self, *, read_only: bool = False) -> AsyncIterator[asyncpg.Connection]:
        """A pooled connection inside one transaction (committed on normal exit)."""
        async with self.pool.acquire() as conn:
            try:
                async with conn.transaction(readonly=read_only):
                    yield conn
            finally:  # run_sql may SET, LISTEN, DECLARE or take advisory locks
                if not conn.is_closed():
                    await conn.execute(conn.get_reset_query())

    async def init_catalog(self) -> None:
        """Create `hdb_catalog` if missing (idempotent, safe under concurrent starts)."""
        async with self.transaction() as conn:
            await conn.execute(INIT_LOCK_SQL)
            await conn.execute(INIT_SQL)

    async def query_json(self, sql: str, args: list[Any], columns: int) -> tuple[bytes, ...]:
        """Run a compiled query returning one row of `columns` JSON values (UTF-8 bytes).

        Raises the mapped `SvcError` for a Postgres error (`svc.execute.errors`).
        """
        try:
            row = await self.reads.fetchrow(sql, args)
        except asyncpg.PostgresError as exc:
            raise map_query_error(exc) from exc
        except (OSError, asyncpg.InterfaceError) as exc:
            raise SvcError("postgres-error", f"connection error: {exc}", status=500) from exc
        assert row is not None
        return tuple(row[i] if row[i] is not None else b"null" for i in range(columns))

    async def explain(self, sql: str, args: list[Any]) -> list[str]:
        """`EXPLAIN` lines of a compiled statement with its arguments."""
        try:
            async with self.pool.acquire() as conn:
                rows = await conn.fetch("EXPLAIN " + sql, *args)
        except asyncpg.PostgresError as exc:
            raise map_query_error(exc) from exc
        return [r[0] for r in rows]

    # -- catalog ------------------------------------------------------------------------
    @staticmethod
    async def introspect(conn: asyncpg.Connection) -> DbCatalog:
        """The catalog as seen by `conn` (inside its transaction, if any)."""
        text = await conn.fetchval(INTROSPECTION_SQL)
        return decode_catalog(text)

    @staticmethod
    async def read_metadata(conn: asyncpg.Connection, *, lock: bool) -> tuple[bytes, int]:
        """`(metadata JSON, resource_version)`; `lock` takes the row lock for a write."""
        row = await conn.fetchrow(LOCK_METADATA_SQL if lock else READ_METADATA_SQL)
        assert row is not None
        return row[0], row[1]

    @staticmethod
    async def write_metadata(conn: asyncpg.Connection, text: str) -> int:
        """Store a new metadata document; returns the bumped resource version."""
        version: int = await conn.fetchval(WRITE_METADATA_SQL, text)
        await conn.execute(NOTIFY_SQL, NOTIFY_CHANNEL, str(version))
        return version

    async def read_version(self) -> int:
        """The stored resource version (the poll fallback of metadata sync)."""
        async with self.pool.acquire() as conn:
            version: int = await conn.fetchval(READ_VERSION_SQL)
        return version
