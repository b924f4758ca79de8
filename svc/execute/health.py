"""Database health for `/healthz`, and which exceptions mean "Postgres is unreachable".

The probe has its own connection, apart from the query connections and the pool, so a
server whose connections are all busy with slow queries still answers its health check
(the reference's `/healthz` checks that the database answers; Hasura docs, "Health Check
API Reference": 200 `OK`, 500 `ERROR` when unhealthy).
"""

from __future__ import annotations

import asyncio
import contextlib

import asyncpg

# Exceptions that say the database could not be reached or the connection broke, rather
# than that Postgres refused a statement: OS-level socket errors (refused, reset, timeout),
# asyncpg's client-side errors (a closed connection, a protocol state broken by a restart:
# `InternalClientError`) and Postgres's own connection-class errors (SQLSTATE 08, 57P0x
# "the database system is starting up / shutting down").
_UNREACHABLE = (
    OSError,
    asyncpg.InterfaceError,
    asyncpg.InternalClientError,
    asyncpg.PostgresConnectionError,
    asyncpg.CannotConnectNowError,
    asyncpg.AdminShutdownError,
    asyncpg.CrashShutdownError,
)


def is_unreachable(exc: BaseException) -> bool:
    """True when `exc` means Postgres is unreachable or the connection was lost (the
    server answers 500 `postgres-error` for these; spec section 7, "connection error")."""
    return isinstance(exc, _UNREACHABLE)


class HealthProbe:
    """Answers "does Postgres answer `SELECT 1`?" on one dedicated connection.

    `url`: the database URL. The connection is opened on first use and replaced after any
    failure. Concurrent checks share one round trip (they wait on the same lock and the
    later ones reuse a result younger than `reuse_seconds`).
    """

    def __init__(self, url: str, *, reuse_seconds: float = 0.05) -> None:
        self.url = url
        self.reuse_seconds = reuse_seconds
        self._conn: asyncpg.Connection | None = None
        self._lock = asyncio.Lock()
        self._last: tuple[float, bool] = (-1e9, False)

    async def ok(self, timeout: float = 2.0) -> bool:
        """True when Postgres answered within `timeout` seconds (connect included)."""
        try:
            return await asyncio.wait_for(self._check(), timeout)
        except TimeoutError:
            self._drop()
            return False

    async def _check(self) -> bool:
        loop = asyncio.get_running_loop()
        async with self._lock:
            at, result = self._last
            if loop.time() - at < self.reuse_seconds:
                return result
            try:
                conn = self._conn
                if conn is None or conn.is_closed():
                    conn = self._conn = await asyncpg.connect(
                        self.url, server_settings={"application_name": "svc-health"}
                    )
                result = await conn.fetchval("SELECT 1") == 1
            except Exception:
                self._drop()
                result = False
            self._last = (loop.time(), result)
            return result

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.terminate()

    async def close(self) -> None:
        """Close the probe's connection."""
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close(timeout=2)
