"""Metadata sync's connection to Postgres: `LISTEN svc_metadata`, a version poll, and
reconnection after any loss.

ARCHITECTURE.md "Sync": a metadata writer bumps `hdb_catalog.hdb_metadata.resource_version`
and sends `NOTIFY svc_metadata, '<version>'` in its transaction. Each process keeps one
dedicated connection (`VersionListener`) that

- `LISTEN`s on the channel and hands every notified version to `on_version`;
- reads the stored version on that same connection every `poll_seconds` (the fallback
  when a notification is missed; it also finds a half-open connection, since a read that
  does not answer within `query_timeout` counts as a loss), so the pool is not used;
- when `on_version` fails (a reload that could not reach Postgres), reads the version
  again after `max_retry_seconds` instead of a whole poll interval;
- after a loss (Postgres restarted, the connection dropped, a read failed or timed out;
  asyncpg reports a closed connection through `add_termination_listener`) reconnects with
  a doubling delay from 0.05 s up to `max_retry_seconds` (never a busy loop) and reads the
  version at once on the new connection, so a change made while it was down is found
  immediately.

`on_version` is the engine's reload (`svc.api.engine.Engine.on_version`); it decides
whether the version is newer. Its failures are logged and retried as above, never
treated as a loss of this connection.
Log lines are one JSON object on stderr, `{"type": "metadata-sync-log", ...}`, once per
loss and once per recovery, not once per attempt.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine
from typing import Any

import asyncpg

from svc.catalog.storage import NOTIFY_CHANNEL, READ_VERSION_SQL
from svc.sql.live_watch import CHANNEL as LIVE_CHANNEL

OnVersion = Callable[[int], Coroutine[Any, Any, None]]

FIRST_RETRY_SECONDS = 0.05
"""Delay before the first reconnection attempt; doubled after each failed one."""


class VersionListener:
    """Keeps a `LISTEN` connection to `url` alive and calls `on_version(version)` with
    every stored metadata version it learns (notified, polled, or read after a reconnect).

    Start with `start()` (returns at once; connecting happens in the background), stop
    with `await close()`. `poll_seconds` is the poll interval (seconds, > 0);
    `max_retry_seconds` caps the reconnection delay; `query_timeout` bounds each version
    read and each connection attempt (seconds). `connected` is True while the `LISTEN`
    is in place; `reconnects` counts successful connections after the first.
    """

    def __init__(
        self,
        url: str,
        on_version: OnVersion,
        *,
        poll_seconds: float,
        max_retry_seconds: float = 0.5,
        query_timeout: float = 5.0,
        on_live: Callable[[str | None], None] | None = None,
    ) -> None:
        if poll_seconds <= 0:
            raise ValueError("poll_seconds must be positive")
        self.url = url
        self.on_version = on_version
        self.poll_seconds = poll_seconds
        self.max_retry_seconds = max_retry_seconds
        self.query_timeout = query_timeout
        self.connected = False
        self.reconnects = 0
        self._task: asyncio.Task[None] | None = None
        self._conn: asyncpg.Connection | None = None
        self._pending: set[asyncio.Task[None]] = set()
        self._failed = False  # the last `on_version` raised: check again soon
        # Idle live queries (`svc.api.live.watch`): each `svc_live` payload, and None
        # whenever the `LISTEN` starts or ends (notifications may have been missed).
        self.on_live = on_live

    def start(self) -> None:
        """Begin listening in a background task on the running loop (idempotent)."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def close(self) -> None:
        """Stop listening and close the connection; pending `on_version` calls are
        cancelled."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for pending in list(self._pending):
            pending.cancel()
        self._pending.clear()
        conn, self._conn = self._conn, None
        if conn is not None and not conn.is_closed():
            conn.terminate()
        self.connected = False

    # -- internals ----------------------------------------------------------------------
    async def _run(self) -> None:
        delay = FIRST_RETRY_SECONDS
        ever_connected = False
        failing = False
        while True:
            try:
                conn = await asyncpg.connect(
                    self.url,
                    timeout=self.query_timeout,
                    server_settings={"application_name": "svc-listen"},
                )
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if not failing:
                    _log("connect-failed", str(exc) or type(exc).__name__)
                    failing = True
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.max_retry_seconds)
                continue
            if failing:
                _log("listen-restored", "")
            if ever_connected:
                self.reconnects += 1
            ever_connected, failing, delay = True, False, FIRST_RETRY_SECONDS
            reason = await self._session(conn)
            _log("listen-lost", reason)
            failing = True
            await asyncio.sleep(delay)
            delay = min(delay * 2, self.max_retry_seconds)

    async def _session(self, conn: asyncpg.Connection) -> str:
        """Listen and poll on `conn` until it is lost; returns why (it is closed then)."""
        self._conn = conn
        lost = asyncio.Event()
        conn.add_termination_listener(lambda _c: lost.set())
        try:
            await conn.add_listener(NOTIFY_CHANNEL, self._notified)
            if self.on_live is not None:
                await conn.add_listener(LIVE_CHANNEL, self._live_notified)
            self.connected = True
            self._live_changed()
            await self._check(conn)  # at once: a change may have come while away
            loop = asyncio.get_running_loop()
            checked = loop.time()
            tick = min(self.poll_seconds, self.max_retry_seconds)
            while True:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(lost.wait(), tick)
                if lost.is_set() or conn.is_closed():
                    return "connection closed"
                if self._failed or loop.time() - checked >= self.poll_seconds:
                    await self._check(conn)
                    checked = loop.time()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return str(exc) or type(exc).__name__
        finally:
            if self.connected:
                self.connected = False
                self._live_changed()
            self._conn = None
            if not conn.is_closed():
                conn.terminate()

    async def _check(self, conn: asyncpg.Connection) -> None:
        """Read the stored version on the listen connection and hand it on. A failed read
        raises (the connection is treated as lost); a failed `on_version` is logged."""
        version = await conn.fetchval(READ_VERSION_SQL, timeout=self.query_timeout)
        if isinstance(version, int):
            await self._deliver(version)

    async def _deliver(self, version: int) -> None:
        """`on_version(version)`; a failure is logged and makes the session read the
        version again after `max_retry_seconds` rather than after a whole poll."""
        try:
            await self.on_version(version)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if not self._failed:
                _log("reload-failed", f"version {version}: {exc}")
            self._failed = True
        else:
            self._failed = False

    def _live_notified(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        if self.on_live is not None:
            self.on_live(payload)

    def _live_changed(self) -> None:
        if self.on_live is not None:
            self.on_live(None)

    def _notified(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        try:
            version = int(payload)
        except ValueError:
            return
        task = asyncio.get_running_loop().create_task(self._deliver(version))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)


def _log(event: str, detail: str) -> None:
    line = {"type": "metadata-sync-log", "event": event, "detail": detail}
    logging.getLogger(__name__).warning(line)
