"""`Database.transaction(reset=…)`: a transaction that ran user SQL (`run_sql`) hands its
connection back reset, while svc's own transactions (mutations) skip asyncpg's reset
round trip and keep a connection's backend."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from svc.execute.db import Database


def test_user_sql_session_state_does_not_outlive_its_transaction(
    new_database: Callable[[], str],
) -> None:
    url = new_database()

    async def go() -> tuple[list[str], set[int]]:
        # max_size 2 → a write pool of 2 connections: every later transaction sees one of
        # the connections the user SQL touched
        db = await Database.connect(url, max_size=2)
        try:
            for _ in range(2):
                async with db.transaction(reset=True) as a, db.transaction(reset=True) as b:
                    for conn in (a, b):
                        await conn.execute("set search_path to nowhere; listen svc_test")
            seen, pids = [], set()
            for _ in range(6):
                async with db.transaction() as conn:
                    seen.append(await conn.fetchval("select current_setting('search_path')"))
                    pids.add(await conn.fetchval("select pg_backend_pid()"))
            return seen, pids
        finally:
            await db.close()

    seen, pids = asyncio.run(go())
    assert seen == ['"$user", public'] * 6
    assert 1 <= len(pids) <= 2  # the pool's own connections, not new ones


def test_own_transactions_skip_the_reset(new_database: Callable[[], str]) -> None:
    """Without `reset` a session setting survives (proof that no reset ran), which is why
    only user SQL asks for one."""

    url = new_database()

    async def go() -> str:
        db = await Database.connect(url, max_size=2)
        try:
            async with db.transaction() as conn:
                await conn.execute("select set_config('svc.probe', 'kept', false)")
                pid = await conn.fetchval("select pg_backend_pid()")
            for _ in range(10):
                async with db.transaction() as conn:
                    if await conn.fetchval("select pg_backend_pid()") == pid:
                        return str(await conn.fetchval("select current_setting('svc.probe')"))
            raise AssertionError("the connection was not handed out again")
        finally:
            await db.close()

    assert asyncio.run(go()) == "kept"
