"""The catalog fingerprint (`svc.catalog.fingerprint`) and `Database.introspect(conn, md,
previous=...)`: the fingerprint stays put without DDL (rows written, enum rows included)
and moves with every kind of DDL the introspection can see; with `previous` of the same
fingerprint the tables and functions are reused (no `INTROSPECTION_SQL`), otherwise the
result equals a fresh introspection, and enum rows are read again either way."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

import asyncpg
import msgspec
import pytest

from svc.catalog.fingerprint import CATALOG_FINGERPRINT_SQL, FINGERPRINT_CATALOGS
from svc.catalog.introspect import (
    INTROSPECTION_SQL,
    DbCatalog,
    decode_catalog,
    without_enum_rows,
)
from svc.execute.db import Database, Sources
from svc.metadata.model import DEFAULT_SOURCE, Metadata, metadata_from_obj
from tests.support import create_database

T = TypeVar("T")

BASE = """
CREATE TABLE color (value text PRIMARY KEY, comment text);
INSERT INTO color VALUES ('red', 'Red'), ('blue', NULL);
CREATE TABLE author (id int PRIMARY KEY, name text NOT NULL);
CREATE FUNCTION author_named(q text) RETURNS SETOF author
  LANGUAGE sql STABLE AS $$ SELECT * FROM author WHERE name = q $$;
"""

MD = metadata_from_obj(
    {
        "version": 3,
        "sources": [
            {
                "name": "default",
                "kind": "postgres",
                "tables": [
                    {"table": {"schema": "public", "name": "color"}, "is_enum": True},
                    {"table": {"schema": "public", "name": "author"}},
                ],
                "configuration": {"connection_info": {"database_url": "postgres://unused"}},
            }
        ],
    }
)


class Env:
    """A database with `BASE`, its `Database` and the loop its connections live on."""

    def __init__(self, url: str, db: Database, loop: asyncio.AbstractEventLoop) -> None:
        self.url, self.db, self.loop = url, db, loop

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coro)

    def execute(self, sql: str) -> None:
        """Run `sql` committed, on a connection of its own."""

        async def go() -> None:
            conn = await asyncpg.connect(self.url)
            try:
                await conn.execute(sql)
            finally:
                await conn.close()

        self.run(go())

    def fingerprint(self) -> str:
        async def go() -> str:
            async with self.db.transaction() as conn:
                text: str = await conn.fetchval(CATALOG_FINGERPRINT_SQL)
                return text

        return self.run(go())

    def introspect(
        self, md: Metadata | None = MD, previous: DbCatalog | None = None
    ) -> tuple[DbCatalog, list[str]]:
        """The catalog and the statements `introspect` ran (in one transaction)."""
        ran: list[str] = []

        def log(record: Any) -> None:
            ran.append(record.query)

        async def go() -> DbCatalog:
            async with self.db.transaction() as conn:
                conn.add_query_logger(log)
                try:
                    return await self.db.introspect(conn, md, previous)
                finally:
                    conn.remove_query_logger(log)

        return self.run(go()), ran


@pytest.fixture
def env(pg_url: str) -> Iterator[Env]:
    url = create_database(pg_url, "fingerprint")
    loop = asyncio.new_event_loop()
    db = loop.run_until_complete(Database.connect(url, max_size=2))
    out = Env(url, db, loop)
    out.execute(BASE)
    try:
        yield out
    finally:
        loop.run_until_complete(db.close())
        loop.close()


def _fresh_equal(env: Env, got: DbCatalog, md: Metadata | None = MD) -> None:
    """`got` has every field a call without `previous` gives now."""
    fresh, ran = env.introspect(md)
    assert INTROSPECTION_SQL in ran
    assert got == fresh
    assert got.fingerprint == fresh.fingerprint != ""
    assert msgspec.json.encode(got) == msgspec.json.encode(fresh)


# (name, objects created first, the DDL, whether the introspected catalog changes)
DDL: list[tuple[str, str, str, bool]] = [
    ("create table", "", "CREATE TABLE t (id int)", True),
    ("drop table", "CREATE TABLE t (id int)", "DROP TABLE t", True),
    ("rename table", "CREATE TABLE t (id int)", "ALTER TABLE t RENAME TO u", True),
    ("add column", "", "ALTER TABLE author ADD COLUMN born date", True),
    ("drop column", "", "ALTER TABLE author DROP COLUMN name", True),
    ("rename column", "", "ALTER TABLE author RENAME COLUMN name TO full_name", True),
    ("alter column type", "", "ALTER TABLE author ALTER COLUMN id TYPE bigint", True),
    (  # binary coercible: no table rewrite, only the pg_attribute row changes
        "alter column type in place",
        "CREATE TABLE t (x varchar(10))",
        "ALTER TABLE t ALTER COLUMN x TYPE text",
        True,
    ),
    ("drop not null", "", "ALTER TABLE author ALTER COLUMN name DROP NOT NULL", True),
    ("set default", "", "ALTER TABLE author ALTER COLUMN name SET DEFAULT 'x'", True),
    ("create index", "", "CREATE INDEX author_name ON author (name)", False),
    ("create unique index", "", "CREATE UNIQUE INDEX author_name ON author (name)", True),
    (
        "rename unique index",
        "CREATE UNIQUE INDEX author_name ON author (name)",
        "ALTER INDEX author_name RENAME TO author_name_u",
        True,
    ),
    (
        "drop index",
        "CREATE UNIQUE INDEX author_name ON author (name)",
        "DROP INDEX author_name",
        True,
    ),
    (
        "add foreign key",
        "CREATE TABLE book (id int, author_id int)",
        "ALTER TABLE book ADD CONSTRAINT book_author FOREIGN KEY (author_id) REFERENCES author",
        True,
    ),
    ("add unique", "", "ALTER TABLE author ADD CONSTRAINT author_name_key UNIQUE (name)", True),
    ("drop primary key", "", "ALTER TABLE author DROP CONSTRAINT author_pkey", True),
    ("comment on table", "", "COMMENT ON TABLE author IS 'Writers'", True),
    ("comment on column", "", "COMMENT ON COLUMN author.name IS 'Full name'", True),
    (
        "create function",
        "",
        "CREATE FUNCTION one() RETURNS int LANGUAGE sql IMMUTABLE AS $$ SELECT 1 $$",
        True,
    ),
    ("drop function", "", "DROP FUNCTION author_named(text)", True),
    (
        "replace function",
        "",
        "CREATE OR REPLACE FUNCTION author_named(q text) RETURNS SETOF author"
        " LANGUAGE sql VOLATILE AS $$ SELECT * FROM author WHERE name = q $$",
        True,
    ),
    (
        "replace function body",
        "",
        "CREATE OR REPLACE FUNCTION author_named(q text) RETURNS SETOF author"
        " LANGUAGE sql STABLE AS $$ SELECT * FROM author WHERE name <> q $$",
        False,
    ),
    ("comment on function", "", "COMMENT ON FUNCTION author_named(text) IS 'By name'", True),
    ("create view", "", "CREATE VIEW names AS SELECT name FROM author", True),
    (  # pg_relation_is_updatable reads pg_trigger (the view has triggers already, so
        # pg_class.relhastriggers does not change: only pg_trigger does)
        "instead of trigger",
        "CREATE VIEW counts AS SELECT count(*) AS n FROM author;"
        " CREATE FUNCTION nothing() RETURNS trigger LANGUAGE plpgsql"
        " AS $$ BEGIN RETURN NEW; END $$;"
        " CREATE TRIGGER counts_update INSTEAD OF UPDATE ON counts"
        " FOR EACH ROW EXECUTE FUNCTION nothing()",
        "CREATE TRIGGER counts_insert INSTEAD OF INSERT ON counts"
        " FOR EACH ROW EXECUTE FUNCTION nothing()",
        True,
    ),
    (
        "instead rule",  # … and pg_rewrite
        "CREATE VIEW counts AS SELECT count(*) AS n FROM author",
        "CREATE RULE counts_delete AS ON DELETE TO counts DO INSTEAD NOTHING",
        True,
    ),
    ("create enum type", "", "CREATE TYPE mood AS ENUM ('sad', 'ok')", False),
    (
        "rename a column's type",
        "CREATE TYPE mood AS ENUM ('sad', 'ok'); CREATE TABLE t (m mood)",
        "ALTER TYPE mood RENAME TO feeling",
        True,
    ),
    ("create schema", "", "CREATE SCHEMA other", False),
    (
        "move to a schema",
        "CREATE SCHEMA other; CREATE TABLE t (id int)",
        "ALTER TABLE t SET SCHEMA other",
        True,
    ),
]


@pytest.mark.parametrize(("setup", "ddl", "changes"), [d[1:] for d in DDL], ids=[d[0] for d in DDL])
def test_ddl_moves_the_fingerprint(env: Env, setup: str, ddl: str, changes: bool) -> None:
    if setup:
        env.execute(setup)
    before, _ = env.introspect()
    assert before.fingerprint == env.fingerprint()
    env.execute(ddl)
    assert env.fingerprint() != before.fingerprint
    after, ran = env.introspect(previous=before)
    assert INTROSPECTION_SQL in ran and after.tables is not before.tables
    assert (after != before) is changes
    _fresh_equal(env, after)


def test_stable_without_ddl(env: Env) -> None:
    """Rows written (enum rows too), sequences advanced, ANALYZE and VACUUM (which update
    pg_class in place) leave it as it was; so does a transaction that rolled back DDL."""
    first = env.fingerprint()
    assert first == env.fingerprint()
    env.execute(
        "INSERT INTO author VALUES (1, 'ann'); INSERT INTO color VALUES ('green', NULL);"
        " CREATE SEQUENCE s; SELECT nextval('s')"
    )
    moved = env.fingerprint()  # the sequence is new
    env.execute("UPDATE author SET name = 'bob'; DELETE FROM color WHERE value = 'red';")
    env.execute("SELECT nextval('s'); ANALYZE author; ANALYZE pg_class")
    env.execute("VACUUM author")
    assert env.fingerprint() == moved != first

    async def rolled_back() -> str:
        async with env.db.pool.acquire() as conn:
            tx = conn.transaction()
            await tx.start()
            await conn.execute("CREATE TABLE t (id int); ALTER TABLE author ADD COLUMN x int")
            inside: str = await conn.fetchval(CATALOG_FINGERPRINT_SQL)
            await tx.rollback()
            return inside

    assert env.run(rolled_back()) != moved  # its own uncommitted rows count inside
    assert env.fingerprint() == moved


def test_unchanged_reuses_the_catalog(env: Env) -> None:
    """The same fingerprint: no `INTROSPECTION_SQL`, `previous`'s tables and functions
    (the same objects), everything else as a fresh introspection gives it."""
    before, ran = env.introspect()
    assert INTROSPECTION_SQL in ran and CATALOG_FINGERPRINT_SQL in ran
    assert ran.index(CATALOG_FINGERPRINT_SQL) < ran.index(INTROSPECTION_SQL)
    env.execute("INSERT INTO author VALUES (1, 'ann')")
    after, ran = env.introspect(previous=before)
    assert INTROSPECTION_SQL not in ran and CATALOG_FINGERPRINT_SQL in ran
    assert after.tables is before.tables and after.functions is before.functions
    assert after.fingerprint == before.fingerprint
    _fresh_equal(env, after)
    # without metadata: no enum rows, as a fresh introspection without metadata
    bare, ran = env.introspect(None, previous=before)
    assert INTROSPECTION_SQL not in ran
    assert all(t.enum_rows is None for t in bare.tables)
    author = before.table_index()["public", "author"]
    assert bare.table_index()["public", "author"] is author
    _fresh_equal(env, bare, None)
    # and back: a catalog without enum rows as `previous`, the enum table read again
    again, ran = env.introspect(previous=bare)
    assert INTROSPECTION_SQL not in ran and again.tables == before.tables
    _fresh_equal(env, again)


def test_enum_rows_are_read_again(env: Env) -> None:
    before, _ = env.introspect()
    color = before.table_index()["public", "color"]
    assert color.enum_rows is not None
    assert [r[0] for r in color.enum_rows.rows] == ["red", "blue"]
    env.execute("INSERT INTO color VALUES ('green', 'Green')")
    after, ran = env.introspect(previous=before)
    assert INTROSPECTION_SQL not in ran and after.fingerprint == before.fingerprint
    rows = after.table_index()["public", "color"].enum_rows
    assert rows is not None and ("green", "Green") in rows.rows
    assert after.table_index()["public", "author"] is before.table_index()["public", "author"]
    assert after != before
    _fresh_equal(env, after)


def test_a_catalog_without_fingerprint_is_never_reused(env: Env) -> None:
    before, _ = env.introspect()
    decoded = decode_catalog(msgspec.json.encode(msgspec.structs.replace(before, fingerprint="")))
    assert decoded.fingerprint == "" and decoded == before  # equality ignores it
    _, ran = env.introspect(previous=decoded)
    assert INTROSPECTION_SQL in ran


def test_search_path_moves_it(env: Env) -> None:
    """`format_type` qualifies a type off the search path: the session's path counts."""
    env.execute(
        "CREATE SCHEMA other; CREATE TYPE other.pair AS (a int); CREATE TABLE t (p other.pair)"
    )

    async def go(path: str, previous: DbCatalog | None) -> tuple[DbCatalog, DbCatalog]:
        async with env.db.transaction() as conn:
            await conn.execute(f"SET LOCAL search_path = {path}")
            got = await env.db.introspect(conn, MD, previous)
            fresh = await env.db.introspect(conn, MD)
            return got, fresh

    before, _ = env.run(go("public", None))
    assert before.table_index()["public", "t"].columns[0].type == "other.pair"
    after, fresh = env.run(go("public, other", before))
    assert after.fingerprint != before.fingerprint and after == fresh
    assert after.table_index()["public", "t"].columns[0].type == "pair"


def test_the_sum_is_the_sum_of_xmin(env: Env) -> None:
    """Per catalog `[count, sum of xmin]`, the permanent ids (1, 2) counted, not summed:
    the same as `xmin::text::bigint` while the server has used under 2**31 ids."""
    fingerprint = json.loads(env.fingerprint())
    parts = " UNION ALL ".join(
        f"SELECT '{c}', count(*), sum(xmin::text::int8) FILTER (WHERE xmin::text::int8 > 2)"
        f" FROM pg_catalog.{c}"
        for c in FINGERPRINT_CATALOGS
    )

    async def go() -> list[Any]:
        async with env.db.transaction() as conn:
            return list(await conn.fetch(parts))

    rows = env.run(go())
    assert {r[0]: [r[1], r[2]] for r in rows} == {c: fingerprint[c] for c in FINGERPRINT_CATALOGS}
    assert fingerprint["pg_attribute"][0] > 1000 and fingerprint["pg_class"][1] > 0
    assert set(fingerprint) >= {"server", "started", "database", "search_path"}


def test_copies_keep_or_drop_the_fingerprint(env: Env) -> None:
    cat, _ = env.introspect()
    assert cat.fingerprint
    assert without_enum_rows(cat).fingerprint == cat.fingerprint
    other = DbCatalog((), (), sources={"x": cat}, unreachable={"y": "down"})
    assert cat.with_sources_of(other).fingerprint == cat.fingerprint
    assert other.with_sources_of(cat).fingerprint == ""
    assert DbCatalog((), (), fingerprint="a") == DbCatalog((), ())
    assert DbCatalog((), (), fingerprint="a") != DbCatalog((), (), unreachable={"y": "down"})


def test_other_sources_are_reused_too(env: Env, pg_url: str) -> None:
    other_url = create_database(pg_url, "fingerprint_other")
    raw = {
        "version": 3,
        "sources": [
            {"name": DEFAULT_SOURCE, "kind": "postgres", "tables": [],
             "configuration": {"connection_info": {"database_url": "postgres://unused"}}},
            {"name": "other", "kind": "postgres",
             "tables": [{"table": {"schema": "public", "name": "color"}, "is_enum": True}],
             "configuration": {"connection_info": {"database_url": other_url}}},
        ],
    }  # fmt: skip
    md = metadata_from_obj(raw)

    async def go() -> None:
        sources = await Sources.connect({DEFAULT_SOURCE: env.url}, max_size=2)
        db = sources.default
        try:
            other = await asyncpg.connect(other_url)
            try:
                await other.execute("CREATE TABLE color (value text PRIMARY KEY)")
                async with db.transaction() as conn:
                    first = await db.introspect(conn, md)
                await other.execute("INSERT INTO color VALUES ('red')")
                async with db.transaction() as conn:
                    second = await db.introspect(conn, md, first)
                assert second.tables is first.tables
                a, b = first.sources["other"], second.sources["other"]
                assert a.fingerprint == b.fingerprint != "" and a.fingerprint != first.fingerprint
                assert b.table_index()["public", "color"].enum_rows is not None
                assert b.table_index()["public", "color"] != a.table_index()["public", "color"]
                await other.execute("ALTER TABLE color ADD COLUMN comment text")
                async with db.transaction() as conn:
                    third = await db.introspect(conn, md, second)
                    fresh = await db.introspect(conn, md)
                assert third.sources["other"].fingerprint != b.fingerprint
                assert third == fresh and third.tables is second.tables
            finally:
                await other.close()
        finally:
            await sources.close()

    env.run(go())
