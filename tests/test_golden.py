"""Golden SQL: representative requests and the SQL they compile to, kept in `golden/` as
reviewed snapshots (syrupy). A change in generated SQL shows up as a diff in review;
refresh with `uv run pytest tests/test_golden.py --snapshot-update`.

A snapshot holds sqlglot's pretty Postgres rendering of the statement (`tests.sql_oracle.pretty`,
which asserts it parses to the same sqlglot tree as the text svc rendered), so it reads like
sqlglot's fixtures. What runs against Postgres is the text svc rendered, byte for byte, so a
snapshot is never of SQL that fails; the pretty form is run too and, for queries, must give the
same answer."""

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
from tests.compiled_state import compiled_state
from tests.sql_oracle import pretty

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
    yield from compiled_state(pg_url, SCHEMA, METADATA)


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden_sql(
    compiled_env: tuple[State, Database, asyncio.AbstractEventLoop], case: str, snapshot: Any
) -> None:
    state, db, loop = compiled_env
    query, variables = CASES[case]
    service = GraphQLService(db, stringify=False)
    _, compiled, coerced = service.compile(state, "admin", GraphQLRequest(query, variables))
    stmt = compiled.statement
    text = f"-- {query}\n-- variables: {variables}\n{pretty(stmt.sql)};\n"
    assert text == snapshot(extension_class=GoldenSQL)
    args = resolve(stmt.params, coerced, {})
    values = loop.run_until_complete(db.query_json(stmt.sql, args, len(compiled.aliases)))
    assert all(v.startswith((b"[", b"{", b"null")) for v in values)
    as_reviewed = pretty(stmt.sql)
    assert (
        loop.run_until_complete(db.query_json(as_reviewed, args, len(compiled.aliases))) == values
    )


MUTATIONS: dict[str, str] = {
    "m_insert_returning": 'mutation { insert_author(objects: [{name: "N"}]) '
    "{ affected_rows returning { id name } } }",
    "m_insert_defaults_per_row": 'mutation { insert_author(objects: [{name: "A"}, '
    '{name: "B", rating: 2}]) { affected_rows } }',
    "m_insert_one": 'mutation { insert_author_one(object: {name: "O"}) { id } }',
    "m_insert_returning_relationship": 'mutation { insert_article(objects: [{title: "T", '
    "author_id: 1}]) { returning { title author { name } } } }",
    "m_upsert_update": 'mutation { insert_blog_tag(objects: [{label: "x"}], on_conflict: '
    "{constraint: tag_label_key, update_columns: [label]}) { affected_rows } }",
    "m_upsert_where": 'mutation { insert_blog_tag(objects: [{label: "x"}], on_conflict: '
    "{constraint: tag_label_key, update_columns: [label], where: {id: {_gt: 0}}}) "
    "{ affected_rows } }",
    "m_upsert_do_nothing": 'mutation { insert_blog_tag(objects: [{label: "x"}], on_conflict: '
    "{constraint: tag_label_key, update_columns: []}) { affected_rows } }",
    "m_update_set": 'mutation { update_author(where: {id: {_eq: 1}}, _set: {name: "S"}) '
    "{ affected_rows } }",
    "m_update_inc_variable": "mutation m($n: bigint) { update_article(where: {}, "
    "_inc: {views: $n}) { returning { views } } }",
    "m_update_jsonb_append": "mutation { update_author(where: {id: {_eq: 1}}, "
    "_append: {profile: {a: 1}}) { affected_rows } }",
    "m_update_jsonb_delete_key": "mutation { update_author(where: {id: {_eq: 1}}, "
    '_delete_key: {profile: "lang"}) { affected_rows } }',
    "m_update_jsonb_delete_at_path": "mutation { update_author(where: {id: {_eq: 1}}, "
    '_delete_at_path: {profile: ["links", "site"]}) { affected_rows } }',
    "m_update_by_pk": 'mutation { update_author_by_pk(pk_columns: {id: 1}, _set: {name: "P"}) '
    "{ id name } }",
    "m_update_many": "mutation { update_author_many(updates: [{where: {id: {_eq: 1}}, "
    '_set: {name: "U"}}]) { affected_rows } }',
    "m_delete_where_relationship": "mutation { delete_comment(where: {article: {title: "
    '{_eq: "One"}}}) { affected_rows returning { text } } }',
    "m_delete_by_pk": "mutation { delete_comment_by_pk(id: 2) { id text } }",
    "m_typename": "mutation { __typename delete_comment(where: {id: {_eq: 0}}) "
    "{ __typename affected_rows } }",
}


@pytest.mark.parametrize("case", sorted(MUTATIONS))
def test_golden_mutation_sql(
    compiled_env: tuple[State, Database, asyncio.AbstractEventLoop], case: str, snapshot: Any
) -> None:
    from graphql import parse

    from svc.api.graphql import prepare
    from svc.plan.operation import PlanInput, plan_operation
    from svc.sql.mutation import render_write

    state, db, loop = compiled_env
    query = MUTATIONS[case]
    schema = state.schema("admin")
    prepared = prepare(schema, query, None)
    variables = {"n": 3} if "$n" in query else {}
    given = PlanInput(
        schema, state.ir.tables, prepared.operation, prepared.fragments, variables, False, "admin"
    )
    roots = plan_operation(given).mutation.roots
    statements = [render_write(root.writes[0], root) for _, root in roots if root is not None]
    text = f"-- {query}\n" + "\n".join(f"{pretty(s.sql)};" for s in statements) + "\n"
    assert text == snapshot(extension_class=GoldenSQL)
    assert parse(query)

    async def run_and_roll_back(texts: list[str]) -> None:
        async with db.pool.acquire() as conn:
            tx = conn.transaction()
            await tx.start()
            try:
                for sql, s in zip(texts, statements, strict=True):
                    await conn.fetchval(sql, *resolve(s.params, variables, {}))
            finally:
                await tx.rollback()

    loop.run_until_complete(run_and_roll_back([s.sql for s in statements]))
    # The reviewed (pretty) form is valid Postgres too.
    loop.run_until_complete(run_and_roll_back([pretty(s.sql) for s in statements]))
