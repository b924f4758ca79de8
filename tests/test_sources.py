"""A source on every table: the IR names the source of each table, function and
relationship; plans name their source; the executor runs a plan on its source's database
(`svc.execute.db.Sources`), taken when the plan is compiled."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from svc.api.graphql import GraphQLRequest, GraphQLService
from svc.api.state import State
from svc.errors import SvcError
from svc.execute.db import Database, Sources
from svc.metadata.model import DEFAULT_SOURCE, QualifiedName, metadata_from_obj
from tests.support import create_database

SCHEMA = """
CREATE TABLE author (id serial PRIMARY KEY, name text NOT NULL);
CREATE TABLE article (
  id serial PRIMARY KEY,
  title text NOT NULL,
  author_id integer NOT NULL REFERENCES author(id)
);
INSERT INTO author (name) VALUES ('ann'), ('bob');
INSERT INTO article (title, author_id) VALUES ('one', 1), ('two', 2);
CREATE FUNCTION search_articles(q text) RETURNS SETOF article AS $$
  SELECT * FROM article WHERE title LIKE '%' || q || '%'
$$ LANGUAGE sql STABLE;
"""

METADATA: dict[str, Any] = {
    "version": 3,
    "sources": [
        {
            "name": "default",
            "kind": "postgres",
            "tables": [
                {
                    "table": {"schema": "public", "name": "author"},
                    "array_relationships": [
                        {
                            "name": "articles",
                            "using": {
                                "foreign_key_constraint_on": {
                                    "table": "article",
                                    "column": "author_id",
                                }
                            },
                        }
                    ],
                },
                {
                    "table": {"schema": "public", "name": "article"},
                    "object_relationships": [
                        {"name": "author", "using": {"foreign_key_constraint_on": "author_id"}}
                    ],
                },
            ],
            "functions": [{"function": {"schema": "public", "name": "search_articles"}}],
        }
    ],
}

AUTHOR = QualifiedName(name="author", schema="public")
ARTICLE = QualifiedName(name="article", schema="public")

Env = tuple[str, Any, asyncio.AbstractEventLoop, Database]


@pytest.fixture(scope="module")
def env(pg_url: str) -> Iterator[Env]:
    url = create_database(pg_url, "src")
    loop = asyncio.new_event_loop()

    async def setup() -> tuple[Any, Database]:
        db = await Database.connect(url, max_size=2)
        async with db.transaction() as conn:
            await conn.execute(SCHEMA)
            catalog = await db.introspect(conn)
        return catalog, db

    catalog, db = loop.run_until_complete(setup())
    try:
        yield url, catalog, loop, db
    finally:
        loop.run_until_complete(db.close())
        loop.close()


def _state(catalog: Any, sources: dict[QualifiedName, str] | None = None) -> State:
    """The state of `METADATA`, with the tables of `sources` moved to another source
    (before any schema is built, so planners and schemas see them there)."""
    state = State.build(1, metadata_from_obj(METADATA), catalog)
    assert not state.ir.inconsistencies
    for name, source in (sources or {}).items():
        state.ir.tables[name] = state.ir.tables[name].with_parts(source=source)
    return state


def test_the_ir_names_the_default_source(env: Env) -> None:
    _, catalog, _, _ = env
    ir = _state(catalog).ir
    assert set(ir.tables) == {AUTHOR, ARTICLE}
    assert {t.source for t in ir.tables.values()} == {DEFAULT_SOURCE}
    assert [f.source for f in ir.functions.values()] == [DEFAULT_SOURCE]
    rels = [r for t in ir.tables.values() for r in t.relationships]
    assert len(rels) == 2
    assert {r.target_source for r in rels} == {DEFAULT_SOURCE}


def test_a_copy_keeps_its_source(env: Env) -> None:
    _, catalog, _, _ = env
    table = _state(catalog).ir.tables[AUTHOR].with_parts(source="other")
    assert table.with_parts(comment="x").source == "other"


def _service(db: Database, other: Database) -> GraphQLService:
    return GraphQLService(
        db, stringify=False, sources=Sources({DEFAULT_SOURCE: db, "other": other})
    )


def test_queries_run_on_their_sources_database(env: Env) -> None:
    url, catalog, loop, db = env

    async def go() -> None:
        other = await Database.connect(url, max_size=2)
        try:
            state = _state(catalog, {AUTHOR: "other", ARTICLE: "other"})
            service = _service(db, other)
            query = "{ author(order_by: {id: asc}) { name articles { title } } }"
            req = GraphQLRequest(query)
            _, compiled, _ = service.compile(state, "admin", req)
            assert compiled.db is other
            before = len(db.reads.opened)
            body = b'{"query": "' + query.encode() + b'"}'
            first = await service.run(state, "admin", {}, req, body=body)
            again = await service.answer_again(state, "admin", {}, body)
            assert first == again
            assert b'"name":"ann"' in first and b'"title":"one"' in first
            assert other.reads.opened  # both answered on the other source's connections
            assert len(db.reads.opened) == before
        finally:
            await other.close()

    loop.run_until_complete(go())


def test_mutations_run_on_their_sources_database(env: Env) -> None:
    url, catalog, loop, db = env

    async def go() -> None:
        other = await Database.connect(url, max_size=2)
        used: list[Database] = []
        for each in (db, other):

            def counted(each: Database = each, opened: Any = each.transaction, **kw: Any) -> Any:
                used.append(each)
                return opened(**kw)

            each.transaction = counted  # type: ignore[method-assign]
        try:
            state = _state(catalog, {AUTHOR: "other", ARTICLE: "other"})
            service = _service(db, other)
            req = GraphQLRequest('mutation { insert_author_one(object: {name: "cy"}) { name } }')
            answer = await service.run(state, "admin", {}, req)
            assert answer == b'{"data":{"insert_author_one":{"name":"cy"}}}'
            assert used == [other]
        finally:
            del db.transaction  # type: ignore[method-assign]
            await other.close()

    loop.run_until_complete(go())


def test_one_statement_over_two_sources_is_refused(env: Env) -> None:
    """Explain (`compile`) needs one statement: roots of two sources are refused there (a
    request runs them as one step per source: tests/test_several_sources.py)."""
    _, catalog, _, db = env
    state = _state(catalog, {AUTHOR: "other"})
    service = _service(db, db)
    req = GraphQLRequest("{ author { name } article { title } }")
    with pytest.raises(SvcError) as caught:
        service.compile(state, "admin", req)
    assert caught.value.code == "not-supported"
    # each alone is planned on its own source
    assert service.compile(state, "admin", GraphQLRequest("{ author { name } }"))[1].db is db


def test_a_source_without_connections_is_not_found(env: Env) -> None:
    _, catalog, _, db = env
    state = _state(catalog, {AUTHOR: "elsewhere"})
    service = GraphQLService(db, stringify=False)  # only the default source
    with pytest.raises(SvcError) as caught:
        service.compile(state, "admin", GraphQLRequest("{ author { name } }"))
    assert (caught.value.code, caught.value.message) == (
        "not-exists",
        'source with name "elsewhere" does not exist',
    )
    with pytest.raises(ValueError):
        Sources({"other": db})
