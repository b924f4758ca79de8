"""The catalog introspection's answer kept in `hdb_catalog.svc_catalog_cache`
(`Database.introspection_text`): another process of the same database (a worker starting,
or reloading after a DDL) reads it under an equal fingerprint instead of running
`INTROSPECTION_SQL` (0.7 s at 10,000 tables), and gets the catalog a fresh introspection
gives; a DDL runs the statement again, and so does `reload_metadata` (`fresh`: the
reference's reload is for "a change in the underlying data sources ... that Hasura should
be aware of", the Hasura CLI's `hasura metadata reload`, cli/commands/metadata_reload.go); a
rolled-back or read-only transaction, or a missing table, keeps nothing and breaks
nothing. svc's own (the reference introspects at each
start); `svc.catalog.fingerprint` says why equal fingerprints mean an equal catalog."""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from collections.abc import Callable, Iterator

import asyncpg
import msgspec
import pytest

from svc.api.engine import Engine
from svc.catalog.fingerprint import CATALOG_FINGERPRINT_SQL
from svc.catalog.introspect import INTROSPECTION_KEY, INTROSPECTION_SQL, DbCatalog
from svc.catalog.storage import READ_CATALOG_CACHE_SQL, WRITE_CATALOG_CACHE_SQL
from svc.config import Config
from svc.execute.db import Database
from svc.gc_pause import release_started
from tests.test_catalog_fingerprint import MD, Env
from tests.test_catalog_fingerprint import env as env


@pytest.fixture
def kept(env: Env) -> Iterator[Env]:
    """`env`'s database with svc's catalog, its `Database` keeping answers (as the
    metadata database of a served engine does) and a second one: another process."""
    env.run(env.db.init_catalog())
    env.db.keeps_catalog = True
    yield env


def _other(env: Env) -> Database:
    other = env.run(Database.connect(env.url, max_size=1))
    other.keeps_catalog = True
    return other


def _introspect(env: Env, db: Database, fresh: bool = False) -> tuple[DbCatalog, list[str]]:
    ran: list[str] = []

    async def go() -> DbCatalog:
        async with db.transaction() as conn:
            conn.add_query_logger(lambda record: ran.append(record.query))
            return await db.introspect(conn, MD, fresh=fresh)

    return env.run(go()), ran


def _tables(catalog: DbCatalog) -> set[str]:
    return {t.name for t in catalog.tables}


def test_another_process_reads_the_kept_answer(kept: Env) -> None:
    first, ran = _introspect(kept, kept.db)
    assert INTROSPECTION_SQL in ran and WRITE_CATALOG_CACHE_SQL in ran
    other = _other(kept)
    try:
        second, ran = _introspect(kept, other)
        assert READ_CATALOG_CACHE_SQL in ran and INTROSPECTION_SQL not in ran
        assert msgspec.json.encode(second) == msgspec.json.encode(first)
        kept.execute("CREATE TABLE book (id int PRIMARY KEY)")  # a DDL: a new fingerprint
        moved, ran = _introspect(kept, other)
        assert INTROSPECTION_SQL in ran and "book" in _tables(moved)
        again, ran = _introspect(kept, kept.db)  # kept by the other one
        assert INTROSPECTION_SQL not in ran and again == moved
        reloaded, ran = _introspect(kept, kept.db, fresh=True)  # `reload_metadata`'s
        assert INTROSPECTION_SQL in ran and READ_CATALOG_CACHE_SQL not in ran
        assert reloaded == moved
    finally:
        kept.run(other.close())


def test_a_rolled_back_ddl_keeps_nothing(kept: Env) -> None:
    _introspect(kept, kept.db)

    async def rolled_back() -> set[str]:
        async with kept.db.pool.acquire() as conn:
            tx = conn.transaction()
            await tx.start()
            await conn.execute("CREATE TABLE ghost (id int)")
            seen = _tables(await kept.db.introspect(conn, MD))
            await tx.rollback()
            return seen

    assert "ghost" in kept.run(rolled_back())  # its own transaction saw it and kept it
    after, ran = _introspect(kept, kept.db)
    assert "ghost" not in _tables(after)
    assert READ_CATALOG_CACHE_SQL in ran


def test_read_only_and_missing_table_answer_and_keep_nothing(kept: Env) -> None:
    kept.execute("CREATE TABLE book (id int PRIMARY KEY)")

    async def read_only() -> tuple[DbCatalog, int]:
        async with kept.db.transaction(read_only=True) as conn:
            catalog = await kept.db.introspect(conn, MD)
            return catalog, await conn.fetchval("SELECT 1")  # the transaction still works

    catalog, one = kept.run(read_only())
    assert "book" in _tables(catalog) and one == 1
    _, ran = _introspect(kept, kept.db)
    assert INTROSPECTION_SQL in ran  # the read-only one kept nothing
    kept.execute("DROP TABLE hdb_catalog.svc_catalog_cache")
    kept.execute("CREATE TABLE film (id int PRIMARY KEY)")

    async def without_table() -> tuple[DbCatalog, int]:
        async with kept.db.transaction() as conn:
            catalog = await kept.db.introspect(conn, MD)
            return catalog, await conn.fetchval("SELECT 1")

    catalog, one = kept.run(without_table())
    assert "film" in _tables(catalog) and one == 1


def test_a_database_not_keeping_answers_never_reads_them(kept: Env) -> None:
    _introspect(kept, kept.db)
    plain = kept.run(Database.connect(kept.url, max_size=1))  # another source's, say
    try:
        _, ran = _introspect(kept, plain)
        assert INTROSPECTION_SQL in ran and READ_CATALOG_CACHE_SQL not in ran
    finally:
        kept.run(plain.close())


def test_the_key_names_the_role(kept: Env) -> None:
    """Another role reading the same catalogs (same fingerprint) does not take this
    role's answer."""
    role = f"svc_cache_reader_{uuid.uuid4().hex[:8]}"  # roles are the cluster's
    kept.execute(  # grants write catalog rows: before the answer is kept
        f"CREATE ROLE {role}; GRANT USAGE ON SCHEMA hdb_catalog TO {role};"
        f"GRANT SELECT, UPDATE ON hdb_catalog.svc_catalog_cache TO {role}"
    )
    _, ran = _introspect(kept, kept.db)
    assert INTROSPECTION_SQL in ran
    _, ran = _introspect(kept, kept.db)
    assert INTROSPECTION_SQL not in ran  # kept for this role

    async def as_other_role() -> list[str]:
        conn = await asyncpg.connect(kept.url)
        try:
            ran: list[str] = []
            conn.add_query_logger(lambda record: ran.append(record.query))
            async with conn.transaction():
                await conn.execute(f"SET LOCAL ROLE {role}")
                await kept.db.introspection_text(conn, await _fingerprint(conn))
            return ran
        finally:
            await conn.close()

    ran = kept.run(as_other_role())
    assert INTROSPECTION_SQL in ran


async def _fingerprint(conn: asyncpg.Connection) -> str:
    text: str = await conn.fetchval(CATALOG_FINGERPRINT_SQL)
    return text


def test_a_started_engine_keeps_the_catalog_of_now(new_database: Callable[[], str]) -> None:
    """Nothing a starting engine does after its first introspection changes the catalogs
    (the scheduled events' tables are created with the catalog, before it), so the next
    process starting on this database reads the kept answer."""
    url = new_database()

    async def go() -> tuple[str, str]:
        eng = await Engine.start(Config(database_url=url, log_requests=False))
        try:
            await asyncio.sleep(0.5)  # the background jobs have started
        finally:
            await eng.close()
        conn = await asyncpg.connect(url)
        try:
            digest = f"{INTROSPECTION_KEY}/{await _fingerprint(conn)}".encode()
            now = (
                f"{hashlib.sha256(digest).hexdigest()}/{await conn.fetchval('SELECT current_user')}"
            )
            kept: str = await conn.fetchval("SELECT key FROM hdb_catalog.svc_catalog_cache")
            return kept, now
        finally:
            await conn.close()

    try:
        kept, now = asyncio.run(go())
    finally:
        release_started()
    assert kept == now
