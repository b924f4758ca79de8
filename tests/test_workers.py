"""The background-worker runtime (`svc.workers`) on a real Postgres queue table.

Each test creates `items` (the queue: `locked` is the claim column), `attempts` (written
before a handle's work, like a webhook call that cannot be rolled back) and `processed`
(written with the row's completion in one transaction). Exactly once means one
`processed` and one `attempts` row per item; at-least-once after a SIGKILL means one
`processed` row per item and extra `attempts` only for items running at the kill.

Run as a script (`python -m tests.test_workers URL NAME`), this module is the process
that the SIGKILL test starts and kills.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import asyncpg
import pytest

from svc.api.engine import Engine
from svc.catalog.event_log import EVENT_LOG_DDL, RECORD_ATTEMPTS_SQL
from svc.config import Config
from svc.execute.db import Database
from svc.sql.claim import QueueTable, claim_sql, touch_sql
from svc.workers import Claimed, WorkerRuntime, WorkerSpec, events

ROOT = Path(__file__).resolve().parent.parent
QUEUE = QueueTable("public", "items", key="id", key_type="bigint", due="NOT done", order=("id",))
SETUP = """
CREATE TABLE items (id bigint PRIMARY KEY, done boolean NOT NULL DEFAULT false,
                    locked timestamptz);
CREATE TABLE attempts (id bigint NOT NULL, runtime text NOT NULL,
                       at timestamptz NOT NULL DEFAULT clock_timestamp());
CREATE TABLE processed (id bigint NOT NULL, runtime text NOT NULL,
                        at timestamptz NOT NULL DEFAULT clock_timestamp());
INSERT INTO items (id) SELECT generate_series(1, {n});
"""
Handle = Callable[[Claimed], Awaitable[None]]


def handler(db: Database, runtime: str, delay: Callable[[int], float]) -> Handle:
    """Records an attempt, works `delay(id)` seconds, then records the result and
    completes the row in one transaction."""

    async def handle(item: Claimed) -> None:
        key = int(item.key)
        async with db.pool.acquire() as conn:
            await conn.execute("INSERT INTO attempts (id, runtime) VALUES ($1, $2)", key, runtime)
        await asyncio.sleep(delay(key))
        async with db.transaction() as conn:
            await conn.execute("INSERT INTO processed (id, runtime) VALUES ($1, $2)", key, runtime)
            await conn.execute("UPDATE items SET done = true, locked = NULL WHERE id = $1", key)

    return handle


def spec(db: Database, runtime: str, delay: Callable[[int], float], **options: float) -> WorkerSpec:
    settings: dict[str, float] = {"fetch_interval": 0.1, "lock_timeout": 60.0} | options
    return WorkerSpec(
        name="items",
        queue=QUEUE,
        handle=handler(db, runtime, delay),
        fetch_interval=settings["fetch_interval"],
        batch_size=int(settings.get("batch_size", 50)),
        concurrency=int(settings.get("concurrency", 10)),
        lock_timeout=settings["lock_timeout"],
    )


async def connect(url: str) -> Database:
    return await Database.connect(url, max_size=30)


async def value(db: Database, sql: str) -> int:
    async with db.pool.acquire() as conn:
        result: int = await conn.fetchval(sql)
        return result


async def wait_for(db: Database, sql: str, target: int, seconds: float) -> None:
    """Until `sql` (one integer) reaches `target`; fails after `seconds`."""
    deadline = time.monotonic() + seconds
    while (got := await value(db, sql)) < target:
        assert time.monotonic() < deadline, f"{sql} = {got} after {seconds} s, wanted {target}"
        await asyncio.sleep(0.05)


@pytest.fixture
def queue_db(new_database: Callable[[], str]) -> str:
    return new_database()


async def prepared(url: str, n: int) -> Database:
    db = await connect(url)
    async with db.transaction() as conn:
        await conn.execute(SETUP.format(n=n))
    return db


async def test_two_runtimes_process_each_item_exactly_once(queue_db: str) -> None:
    db = await prepared(queue_db, 500)
    dbs = [await connect(queue_db), await connect(queue_db)]
    runtimes = [WorkerRuntime(d) for d in dbs]
    try:
        for i, (runtime, d) in enumerate(zip(runtimes, dbs, strict=True)):
            runtime.start(spec(d, f"r{i}", lambda key: (key % 5) / 1000))
        await wait_for(db, "SELECT count(*) FROM items WHERE done", 500, 60)
    finally:
        for runtime in runtimes:
            await runtime.stop()
    assert await value(db, "SELECT count(*) FROM processed") == 500
    assert await value(db, "SELECT count(DISTINCT id) FROM processed") == 500
    assert await value(db, "SELECT count(*) FROM attempts") == 500  # no item handled twice
    for i in range(2):  # both took part (SKIP LOCKED: neither waited for the other's rows)
        assert await value(db, f"SELECT count(*) FROM processed WHERE runtime = 'r{i}'") > 0
    assert await value(db, "SELECT count(*) FROM items WHERE locked IS NOT NULL") == 0
    for d in [db, *dbs]:
        await d.close()


async def test_a_killed_runtimes_items_are_reclaimed_after_the_lock_bound(queue_db: str) -> None:
    n, bound = 60, 3.0
    db = await prepared(queue_db, n)
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.test_workers", queue_db, "doomed", str(bound)], cwd=ROOT
    )
    try:
        await wait_for(db, "SELECT count(*) FROM processed WHERE runtime = 'doomed'", 10, 60)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    # A COMMIT the child sent just before dying still completes in its backend: let it.
    await asyncio.sleep(0.5)
    async with db.pool.acquire() as conn:
        held = {
            r[0]: r[1]
            for r in await conn.fetch("SELECT id, locked FROM items WHERE locked IS NOT NULL")
        }
        running = await conn.fetchval(
            "SELECT count(*) FROM attempts a WHERE runtime = 'doomed' AND NOT EXISTS "
            "(SELECT FROM processed p WHERE p.id = a.id)"
        )
    assert held and running > 0  # killed mid-batch: rows claimed, some handles running
    survivor_db = await connect(queue_db)
    runtime = WorkerRuntime(survivor_db)
    runtime.start(spec(survivor_db, "survivor", lambda key: 0.0, lock_timeout=bound))
    try:
        await wait_for(db, "SELECT count(*) FROM items WHERE done", n, 60)
    finally:
        await runtime.stop()
    async with db.pool.acquire() as conn:
        done = {r[0]: r[1] for r in await conn.fetch("SELECT id, at FROM processed")}
        total = await conn.fetchval("SELECT count(*) FROM processed")
        attempts = await conn.fetchval("SELECT count(*) FROM attempts")
    assert (len(done), total) == (n, n)  # every item, each recorded once
    assert attempts == n + running  # at least once: only the handles cut short ran twice
    for key, locked in held.items():  # claimed again only once their lock went stale
        assert (done[key] - locked).total_seconds() >= bound - 0.05, key
    print(f"killed holding {len(held)} rows, {running} running; {attempts} attempts for {n}")
    await survivor_db.close()
    await db.close()


async def test_stop_finishes_running_items_and_releases_the_rest(queue_db: str) -> None:
    db = await prepared(queue_db, 12)
    slow = {1, 2}  # longer than the stop bound: cancelled and released
    runtime = WorkerRuntime(db, stop_timeout=1.0)
    runtime.start(
        spec(db, "stopped", lambda key: 30.0 if key in slow else 0.3, batch_size=12, concurrency=4)
    )
    await wait_for(db, "SELECT count(*) FROM attempts", 4, 10)
    started = time.monotonic()
    await runtime.stop()
    assert time.monotonic() - started < 2.5
    async with db.pool.acquire() as conn:
        attempted = {r[0] for r in await conn.fetch("SELECT id FROM attempts")}
        done = {r[0] for r in await conn.fetch("SELECT id FROM items WHERE done")}
        locked = await conn.fetchval("SELECT count(*) FROM items WHERE locked IS NOT NULL")
    assert attempted == {1, 2, 3, 4}  # claimed rows not started were never started
    assert done == {3, 4}  # running ones within the bound finished
    assert locked == 0  # everything else was released, not left to go stale
    # A new runtime (lock bound 60 s) takes the released rows at once.
    again = WorkerRuntime(db)
    again.start(spec(db, "again", lambda key: 0.0, batch_size=12))
    try:
        await wait_for(db, "SELECT count(*) FROM items WHERE done", 12, 10)
    finally:
        await again.stop()
    await db.close()


async def test_the_engine_starts_and_stops_workers(queue_db: str) -> None:
    db = await prepared(queue_db, 20)
    engine = await Engine.start(Config(database_url=queue_db))
    slow = spec(engine.db, "engine", lambda key: 0.5 if key > 4 else 0.0, concurrency=20)
    engine.start_workers([slow])
    await wait_for(db, "SELECT count(*) FROM items WHERE done", 4, 10)
    await engine.close()  # what SIGTERM does in a worker process
    assert await value(db, "SELECT count(*) FROM items WHERE locked IS NOT NULL") == 0
    assert await value(db, "SELECT count(*) FROM items WHERE done") == 20  # within the bound
    await db.close()


async def _serve_forever(url: str, name: str, bound: float) -> None:
    db = await connect(url)
    runtime = WorkerRuntime(db)
    runtime.start(spec(db, name, lambda key: 0.3, batch_size=20, concurrency=5, lock_timeout=bound))
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(_serve_forever(sys.argv[1], sys.argv[2], float(sys.argv[3])))


Rows = list[tuple[str | None, ...]]


async def _deadlocks(db: Database, statements: list[tuple[str, Rows]]) -> int:
    """Run the statements at once, each on its own connection with its rows shuffled (a
    statement's parameters are its rows' columns, as text arrays); how many failed with
    a deadlock."""

    async def run(sql: str, rows: Rows) -> int:
        rows = random.sample(rows, len(rows))
        columns = [list(column) for column in zip(*rows, strict=True)]
        try:
            async with db.pool.acquire() as conn:
                await conn.fetch(sql, *columns)
        except asyncpg.DeadlockDetectedError:
            return 1
        return 0

    return sum(await asyncio.gather(*(run(*s) for s in statements)))


async def test_concurrent_lock_renewals_never_deadlock(queue_db: str) -> None:
    """Multi-row queue statements lock rows in key order (`svc.sql.claim._by_stamp`).
    Locked in the order of their key arrays, four renewals of the same 2,000 rows at once
    deadlocked 62 times in 30 rounds (measured before the fix)."""
    db = await prepared(queue_db, 2000)
    try:
        failed = 0
        for _ in range(10):
            async with db.pool.acquire() as conn:
                held: Rows = [
                    tuple(r[:2]) for r in await conn.fetch(claim_sql(QUEUE), "2000", "60")
                ]
            failed += await _deadlocks(db, [(touch_sql(QUEUE), held)] * 4)
            async with db.pool.acquire() as conn:
                await conn.execute("UPDATE items SET locked = NULL")
        assert failed == 0
    finally:
        await db.close()


async def test_event_result_writes_and_renewals_never_deadlock(queue_db: str) -> None:
    """The event worker's batched result write (`RECORD_ATTEMPTS_SQL`) and its lock
    renewal run at once on one process's rows: both lock in id order, so neither fails
    (a failed write had its delivered events unlocked and sent again: the duplicates of
    the SIGTERM test R2, logged as `DeadlockDetectedError` in CI, 2026-11-27)."""
    db = await connect(queue_db)
    try:
        async with db.transaction() as conn:
            await conn.execute("CREATE SCHEMA hdb_catalog;" + EVENT_LOG_DDL)
        failed = 0
        for _ in range(5):
            async with db.pool.acquire() as conn:
                await conn.execute(
                    "INSERT INTO hdb_catalog.event_log (schema_name, table_name, trigger_name,"
                    " payload) SELECT 'public', 't', 'tr', '{}' FROM generate_series(1, 1000)"
                )
                claimed = await conn.fetch(claim_sql(events.QUEUE), "1000", "60")
            held: Rows = [tuple(r[:2]) for r in claimed]
            results: Rows = [(r[0], "200", "{}", "{}", "true", "false", None) for r in claimed]
            failed += await _deadlocks(
                db,
                [(touch_sql(events.QUEUE), held)] * 2
                + [(RECORD_ATTEMPTS_SQL, results[:500]), (RECORD_ATTEMPTS_SQL, results[500:])],
            )
            async with db.pool.acquire() as conn:
                left = "SELECT count(*) FROM hdb_catalog.event_log WHERE NOT delivered"
                assert await conn.fetchval(left) == 0
        assert failed == 0
    finally:
        await db.close()
