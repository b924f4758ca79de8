"""Golden SQL: representative requests and the exact SQL they compile to, kept in `golden/`
as reviewed snapshots (syrupy). A change in generated SQL shows up as a diff in review;
refresh with `uv run pytest tests/test_golden.py --snapshot-update`. Every statement is also
run against Postgres, so a snapshot is never of SQL that fails."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode
from syrupy.location import PyTestLocation

from svc.api.graphql import GraphQLRequest, GraphQLService
from svc.api.state import State
from svc.execute.db import Database
from svc.execute.params import resolve
from svc.metadata.model import metadata_from_obj
from tests.support import create_database

GOLDEN = Path(__file__).resolve().parent.parent / "golden"

SCHEMA = """
create table author (id serial primary key, name text not null, rating numeric,
  born date, profile jsonb, tags text[]);
create table article (id serial primary key, title text not null, body text,
  author_id int not null references author(id), published boolean default false,
  views bigint, created_at timestamptz default now());
create table comment (id serial primary key, article_id int references article(id),
  text text, score float8);
create schema blog;
create table blog.tag (id serial primary key, label text unique);
insert into author (name, rating, profile, tags) values
  ('Ada', 4.5, '{"lang": "en", "links": {"site": "a.dev"}}', '{x,y}'),
  ('Bob', 3.1, '{"lang": "fr"}', '{}');
insert into article (title, author_id, published, views) values
  ('One', 1, true, 10), ('Two', 1, false, 5), ('Three', 2, true, 7);
insert into comment (article_id, text, score) values (1, 'nice', 4.0), (1, 'meh', 2.5);
"""

METADATA = {
    "version": 2,
    "tables": [
        {
            "table": {"schema": "public", "name": "author"},
            "array_relationships": [
                {
                    "name": "articles",
                    "using": {
                        "foreign_key_constraint_on": {"table": "article", "column": "author_id"}
                    },
                }
            ],
        },
        {
            "table": {"schema": "public", "name": "article"},
            "object_relationships": [
                {"name": "author", "using": {"foreign_key_constraint_on": "author_id"}}
            ],
            "array_relationships": [
                {
                    "name": "comments",
                    "using": {
                        "foreign_key_constraint_on": {"table": "comment", "column": "article_id"}
                    },
                }
            ],
        },
        {
            "table": {"schema": "public", "name": "comment"},
            "object_relationships": [
                {
                    "name": "article",
                    "using": {
                        "manual_configuration": {
                            "remote_table": "article",
                            "column_mapping": {"article_id": "id"},
                        }
                    },
                }
            ],
        },
        {"table": {"schema": "blog", "name": "tag"}},
    ],
}

CASES: dict[str, tuple[str, dict[str, Any] | None]] = {
    "list_columns": ("{ author { id name } }", None),
    "by_pk": ("{ author_by_pk(id: 1) { id name } }", None),
    "by_pk_variable": ("query q($id: Int!) { author_by_pk(id: $id) { name } }", {"id": 2}),
    "where_eq_literal": ('{ author(where: {name: {_eq: "Ada"}}) { id } }', None),
    "where_variable": (
        "query q($n: String) { author(where: {name: {_eq: $n}}) { id } }",
        {"n": "Ada"},
    ),
    "where_in_nin": (
        "{ article(where: {id: {_in: [1, 2]}, author_id: {_nin: [3]}}) { id } }",
        None,
    ),
    "where_text_ops": (
        '{ author(where: {_or: [{name: {_like: "A%"}}, {name: {_ilike: "b%"}}, '
        '{name: {_regex: "^C"}}, {name: {_nsimilar: "D%"}}]}) { id } }',
        None,
    ),
    "where_not_and_is_null": (
        "{ author(where: {_not: {_and: [{rating: {_is_null: true}}, "
        "{born: {_is_null: false}}]}}) { id } }",
        None,
    ),
    "where_jsonb": (
        '{ author(where: {profile: {_contains: {lang: "en"}}, '
        '_and: [{profile: {_has_key: "lang"}}, {profile: {_has_keys_any: ["x", '
        '"lang"]}}, {profile: {_has_keys_all: ["lang"]}}]}) { id } }',
        None,
    ),
    "where_object_relationship": (
        '{ article(where: {author: {name: {_eq: "Ada"}}}) { id } }',
        None,
    ),
    "where_array_relationship": (
        "{ author(where: {articles: {published: {_eq: true}}}) { id } }",
        None,
    ),
    "order_limit_offset": (
        "{ article(order_by: [{views: desc_nulls_last}, {id: asc}], limit: 2, offset: 1) { id } }",
        None,
    ),
    "order_by_object_relationship": ("{ article(order_by: {author: {name: asc}}) { id } }", None),
    "order_by_array_aggregate": (
        "{ author(order_by: {articles_aggregate: {count: desc}}) { id } }",
        None,
    ),
    "order_by_array_aggregate_max": (
        "{ author(order_by: {articles_aggregate: {max: {views: asc}}}) { id } }",
        None,
    ),
    "distinct_on": (
        "{ article(distinct_on: [author_id], order_by: [{author_id: asc}, "
        "{views: desc}]) { author_id views } }",
        None,
    ),
    "object_relationship": ("{ article { title author { name } } }", None),
    "array_relationship_with_args": (
        "{ author { name articles(where: {published: {_eq: true}},"
        " order_by: {id: desc}, limit: 5) { title } } }",
        None,
    ),
    "nested_three_levels": (
        "{ author { name articles { title comments { text article { id } } } } }",
        None,
    ),
    "manual_relationship": ("{ comment { text article { title } } }", None),
    "aggregate_root": (
        "{ article_aggregate { aggregate { count sum { views } avg { views } "
        "max { title } min { created_at } } nodes { id } } }",
        None,
    ),
    "aggregate_count_distinct": (
        "{ article_aggregate { aggregate { c: count(columns: [author_id], distinct: true) } } }",
        None,
    ),
    "aggregate_statistics": (
        "{ comment_aggregate { aggregate { stddev { score } stddev_pop "
        "{ score } stddev_samp { score } var_pop { score } var_samp "
        "{ score } variance { score } } } }",
        None,
    ),
    "relationship_aggregate": (
        "{ author { name articles_aggregate(where: {published: "
        "{_eq: true}}) { aggregate { count } } } }",
        None,
    ),
    "aliases_and_typename": ("{ a: author(limit: 1) { __typename key: id } t: __typename }", None),
    "fragments_and_directives": (
        "query q($s: Boolean!) { author { ...F id @skip(if: $s) } } fragment F on author { name }",
        {"s": True},
    ),
    "several_root_fields": ("{ author { id } article { id } }", None),
    "json_path": ('{ author { profile(path: "links.site") } }', None),
    "non_public_schema": ('{ blog_tag(where: {label: {_eq: "x"}}) { id label } }', None),
    "text_array_column": ("{ author { tags } }", None),
}


class GoldenSQL(SingleFileSnapshotExtension):
    """One `.sql` file per case in `golden/`."""

    file_extension = "sql"
    _write_mode = WriteMode.TEXT

    @classmethod
    def dirname(cls, *, test_location: PyTestLocation) -> str:
        return str(GOLDEN)

    @classmethod
    def get_snapshot_name(cls, *, test_location: PyTestLocation, index: Any = 0) -> str:
        return test_location.testname.split("[", 1)[1].rstrip("]")


@pytest.fixture(scope="module")
def compiled_env(pg_url: str) -> Iterator[tuple[State, Database, asyncio.AbstractEventLoop]]:
    url = create_database(pg_url)
    loop = asyncio.new_event_loop()

    async def setup() -> tuple[State, Database]:
        db = await Database.connect(url)
        async with db.transaction() as conn:
            await conn.execute(SCHEMA)
            catalog = await db.introspect(conn)
        return State.build(1, metadata_from_obj(METADATA), catalog), db

    state, db = loop.run_until_complete(setup())
    assert not state.ir.inconsistencies
    try:
        yield state, db, loop
    finally:
        loop.run_until_complete(db.close())
        loop.close()


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden_sql(
    compiled_env: tuple[State, Database, asyncio.AbstractEventLoop], case: str, snapshot: Any
) -> None:
    state, db, loop = compiled_env
    query, variables = CASES[case]
    service = GraphQLService(db, stringify=False)
    _, compiled, coerced = service.compile(state, "admin", GraphQLRequest(query, variables))
    stmt = compiled.statement
    text = f"-- {query}\n-- variables: {variables}\n{stmt.sql}\n"
    assert text == snapshot(extension_class=GoldenSQL)
    args = resolve(stmt.params, coerced, {})
    values = loop.run_until_complete(db.query_json(stmt.sql, args, len(compiled.aliases)))
    assert all(v.startswith(("[", "{", "null")) for v in values)
