"""Several Postgres sources (issue 28; `svc/metadata/sources.py`, `svc/ir/source_tables.py`,
`svc/api/source_focus.py`, `svc/api/source_ops.py`), against `svc serve` with its default
worker count.

Followed: the reference's `Hasura.RQL.DDL.Schema.Source` (`runAddSource`: a source that
cannot be reached is refused, "already exists" / "does not exist" messages;
`runDropSource`, `runRenameSource`, `runUpdateSource`: each key given replaces the stored
one), `askSourceInfo` (`source with name "x" does not exist`, 400 `not-exists`), and
`Hasura.GraphQL.Transport.HTTP.runGQ`: a query's root fields of two sources are separate
steps merged into one `data` in field order; a mutation's root fields of two sources run
one after the other, each source's in its own transaction (the reference's
`coalescePostgresMutations` makes one transaction only of a single source's).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import asyncpg
import pytest

from tests.support import ServerProcess, create_database

pytestmark = pytest.mark.xdist_group("several_sources")


def sql(url: str, text: str) -> Any:
    async def go() -> Any:
        conn = await asyncpg.connect(url)
        try:
            return await conn.execute(text)
        finally:
            await conn.close()

    return asyncio.run(go())


@pytest.fixture(scope="module")
def urls(pg_url: str) -> tuple[str, str, str]:
    main, one, two = (create_database(pg_url, p) for p in ("srcm", "src1", "src2"))
    sql(main, "CREATE TABLE author (id int PRIMARY KEY, name text NOT NULL);"
              "INSERT INTO author VALUES (1, 'main')")
    sql(one, "CREATE TABLE author (id int PRIMARY KEY, name text NOT NULL);"
             "INSERT INTO author VALUES (1, 'one'), (2, 'one-b');"
             "CREATE TABLE book (id int PRIMARY KEY, author_id int REFERENCES author, title text);"
             "INSERT INTO book VALUES (10, 1, 'b10'), (11, 1, 'b11')")
    return main, one, two


@pytest.fixture(scope="module")
def srv(urls: tuple[str, str, str]) -> Iterator[ServerProcess]:
    server = ServerProcess(urls[0], env={"SOURCE_ONE": urls[1], "SOURCE_TWO": urls[2]})
    try:
        yield server
    finally:
        server.stop()


def call(srv: ServerProcess, type_: str, args: Any) -> Any:
    return srv.client.post("/v1/metadata", json={"type": type_, "args": args})


def ok(srv: ServerProcess, type_: str, args: Any) -> Any:
    r = call(srv, type_, args)
    assert r.status_code == 200, r.text
    return r.json()


def add_one(srv: ServerProcess) -> None:
    ok(srv, "pg_add_source", {
        "name": "one",
        "configuration": {"connection_info": {"database_url": {"from_env": "SOURCE_ONE"}}},
    })


def test_a_second_source_serves_its_tables(srv: ServerProcess) -> None:
    ok(srv, "pg_track_table", {"table": "author"})
    add_one(srv)
    ok(srv, "pg_track_table", {"source": "one", "table": "author",
                               "configuration": {"custom_name": "one_author"}})
    ok(srv, "pg_track_table", {"source": "one", "table": "book"})
    ok(srv, "pg_create_object_relationship", {
        "source": "one", "table": "book", "name": "author",
        "using": {"foreign_key_constraint_on": "author_id"},
    })
    answer = srv.graphql(
        "{ author { name } one_author(order_by: {id: asc}) { name }"
        " book(order_by: {id: asc}) { title author { name } } }"
    )
    assert answer == {"data": {
        "author": [{"name": "main"}],
        "one_author": [{"name": "one"}, {"name": "one-b"}],
        "book": [{"title": "b10", "author": {"name": "one"}},
                 {"title": "b11", "author": {"name": "one"}}],
    }}
