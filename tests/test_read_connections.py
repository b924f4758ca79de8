"""The read path's connections (`svc.execute.db.ReadConnections`) against a real Postgres:
opened on demand, bounded, reused after a Postgres error and after a cancellation (once
Postgres acknowledged it), replaced after the server killed it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import asyncpg
import pytest

from svc.errors import SvcError
from svc.execute.db import Database


def run(coro_fn: Callable[[Database], object], url: str, size: int = 3) -> None:
    """Run `coro_fn(db)` on a fresh `Database` with `size` read connections."""

    async def go() -> None:
        db = await Database.connect(url, max_size=size)
        try:
            await coro_fn(db)  # type: ignore[misc]
        finally:
            await db.close()

    asyncio.run(go())


def backend_pid(db: Database) -> object:
    return db.query_json("select to_json(pg_backend_pid())", [], 1)


def test_opened_on_demand_and_bounded(new_database: Callable[[], str]) -> None:
    async def check(db: Database) -> None:
        assert db.reads.opened == set()
        assert await db.query_json("select '[1]'::json", [], 1) == (b"[1]",)
        assert len(db.reads.opened) == 1
        sleeps = [db.query_json("select to_json(1) from pg_sleep(0.2)", [], 1) for _ in range(7)]
        await asyncio.gather(*sleeps)
        assert len(db.reads.opened) == 3  # never more than the queue's size

    run(check, new_database())


def test_postgres_error_keeps_the_connection(new_database: Callable[[], str]) -> None:
    async def check(db: Database) -> None:
        (first,) = await backend_pid(db)  # type: ignore[misc]
        with pytest.raises(SvcError) as err:
            await db.query_json("select 1/0", [], 1)
        assert err.value.code == "data-exception"
        (again,) = await backend_pid(db)  # type: ignore[misc]
        assert again == first

    run(check, new_database(), size=1)


def test_cancelled_query_is_cancelled_in_postgres(new_database: Callable[[], str]) -> None:
    """asyncpg sends a cancel request; the connection returns once Postgres acknowledged
    it (the statement stopped), and serves the next query."""

    async def check(db: Database) -> None:
        (first,) = await backend_pid(db)  # type: ignore[misc]
        slow = asyncio.ensure_future(db.query_json("select to_json(1) from pg_sleep(5)", [], 1))
        await asyncio.sleep(0.2)
        slow.cancel()
        with pytest.raises(asyncio.CancelledError):
            await slow
        (second,) = await asyncio.wait_for(backend_pid(db), 3)  # type: ignore[arg-type]
        assert second == first
        assert len(db.reads.opened) == 1

    run(check, new_database(), size=1)


def test_killed_connection_is_replaced(new_database: Callable[[], str]) -> None:
    async def check(db: Database) -> None:
        (pid,) = await backend_pid(db)  # type: ignore[misc]
        killer = await asyncpg.connect(db.url)
        try:
            await killer.execute("select pg_terminate_backend($1)", int(pid))
        finally:
            await killer.close()
        await asyncio.sleep(0.1)
        for _ in range(2):  # the first use may still meet the dying connection
            try:
                (after,) = await backend_pid(db)  # type: ignore[misc]
                break
            except SvcError as exc:
                assert exc.status == 500
        assert after != pid

    run(check, new_database(), size=1)
