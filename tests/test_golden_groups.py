"""Golden SQL of grouped aggregates (`x_groups`, `<rel>_groups`; `svc.sql.groups`), on
`tests/test_golden.py`'s schema with the experimental feature `group_by_aggregations`:
snapshots `golden/groups_*.sql`, refreshed with
`uv run pytest tests/test_golden_groups.py --snapshot-update`. As there, the text svc
rendered runs against Postgres and so does the pretty form, with the same answer, and
each answer here is also checked by value."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from graphql import validate_schema

from svc.api.graphql import GraphQLRequest, GraphQLService
from svc.api.state import State
from svc.execute.db import Database
from svc.execute.params import resolve
from svc.metadata.model import QualifiedName
from svc.plan.answer_size import estimate_rows
from svc.plan.groups import GroupKey, Groups
from svc.plan.nodes import Const, Param, QueryPlan, RootField, Rows
from svc.schema import build_schema
from svc.schema.groups import GROUP_SUFFIXES
from svc.schema.names import TABLE_TYPE_SUFFIXES
from tests.compiled_state import compiled_state
from tests.sql_oracle import pretty
from tests.test_golden import METADATA, SCHEMA, GoldenSQL

# name: (query, variables, expected data of the one root field)
CASES: dict[str, tuple[str, dict[str, Any] | None, Any]] = {
    "groups_count_order_by_aggregate": (
        "{ article_groups(group_by: [author_id], order_by: [{aggregate: {count: desc}}]) "
        "{ keys { author_id } aggregate { count sum { views } } } }",
        None,
        [
            {"keys": {"author_id": 1}, "aggregate": {"count": 2, "sum": {"views": 15}}},
            {"keys": {"author_id": 2}, "aggregate": {"count": 1, "sum": {"views": 7}}},
        ],
    ),
    "groups_having_two_keys": (
        "{ article_groups(group_by: [author_id, published], having: {count: {_gte: 1}, "
        "avg: {views: {_gt: 6}}}) { __typename keys { author_id published } "
        "aggregate { count avg { views } } } }",
        None,
        [
            {
                "__typename": "article_group",
                "keys": {"author_id": 1, "published": True},
                "aggregate": {"count": 1, "avg": {"views": 10.0}},
            },
            {
                "__typename": "article_group",
                "keys": {"author_id": 2, "published": True},
                "aggregate": {"count": 1, "avg": {"views": 7.0}},
            },
        ],
    ),
    "groups_no_keys_variables": (
        "query($n: Int, $w: article_bool_exp) { article_groups(group_by: [], limit: $n, "
        "where: $w) { aggregate { count max { title } } } }",
        {"n": 3, "w": {"published": {"_eq": True}}},
        [{"aggregate": {"count": 2, "max": {"title": "Three"}}}],
    ),
    "groups_relationship": (
        "{ author(order_by: {id: asc}) { name articles_groups(group_by: [published]) "
        "{ keys { published } aggregate { count } } } }",
        None,
        [
            {
                "name": "Ada",
                "articles_groups": [
                    {"keys": {"published": False}, "aggregate": {"count": 1}},
                    {"keys": {"published": True}, "aggregate": {"count": 1}},
                ],
            },
            {
                "name": "Bob",
                "articles_groups": [{"keys": {"published": True}, "aggregate": {"count": 1}}],
            },
        ],
    ),
    "groups_having_sum_order_key_offset": (
        "{ article_groups(group_by: [author_id], having: {_or: [{sum: {views: {_gte: 15}}}, "
        '{max: {title: {_eq: "Three"}}}]}, order_by: {keys: {author_id: desc}}, offset: 1) '
        "{ keys { id: author_id } aggregate { sum { views } } } }",
        None,
        [{"keys": {"id": 1}, "aggregate": {"sum": {"views": 15}}}],
    ),
}


@pytest.fixture(scope="module")
def compiled_env(pg_url: str) -> Iterator[tuple[State, Database, asyncio.AbstractEventLoop]]:
    """`tests/test_golden.py`'s database and metadata, schemas built with the experimental
    feature `group_by_aggregations` (read when each role's schema is built)."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SVC_GRAPHQL_EXPERIMENTAL_FEATURES", "group_by_aggregations")
        yield from _compiled_env(pg_url)


def _compiled_env(pg_url: str) -> Iterator[tuple[State, Database, asyncio.AbstractEventLoop]]:
    yield from compiled_state(pg_url, SCHEMA, METADATA)


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden_groups_sql(
    compiled_env: tuple[State, Database, asyncio.AbstractEventLoop], case: str, snapshot: Any
) -> None:
    state, db, loop = compiled_env
    query, variables, expected = CASES[case]
    service = GraphQLService(db, stringify=False)
    _, compiled, coerced = service.compile(state, "admin", GraphQLRequest(query, variables))
    stmt = compiled.statement
    args = resolve(stmt.params, coerced, {})
    values = loop.run_until_complete(db.query_json(stmt.sql, args, len(compiled.aliases)))
    assert json.loads(values[0]) == expected
    text = f"-- {query}\n-- variables: {variables}\n{pretty(stmt.sql)};\n"
    assert text == snapshot(extension_class=GoldenSQL)
    as_reviewed = pretty(stmt.sql)
    assert (
        loop.run_until_complete(db.query_json(as_reviewed, args, len(compiled.aliases))) == values
    )


def test_stringified_keys(compiled_env: tuple[State, Database, asyncio.AbstractEventLoop]) -> None:
    """With `--stringify-numeric-types` a bigint key is a string, as a bigint column is."""
    state, db, loop = compiled_env
    query = (
        "{ article_groups(group_by: [views, author_id], where: {views: {_gt: 6}}) "
        "{ keys { views author_id } aggregate { sum { views } } } }"
    )
    service = GraphQLService(db, stringify=True)
    _, compiled, coerced = service.compile(state, "admin", GraphQLRequest(query, None))
    stmt = compiled.statement
    args = resolve(stmt.params, coerced, {})
    (value,) = loop.run_until_complete(db.query_json(stmt.sql, args, 1))
    assert json.loads(value) == [
        {"keys": {"views": "7", "author_id": 2}, "aggregate": {"sum": {"views": "7"}}},
        {"keys": {"views": "10", "author_id": 1}, "aggregate": {"sum": {"views": "10"}}},
    ]


class _Stats:
    def rows(self, table: QualifiedName) -> float | None:
        return 500.0

    def distinct(self, table: QualifiedName, column: str) -> float | None:
        return 10.0


@pytest.mark.parametrize(
    ("keys", "limit", "cap", "expected"),
    [
        ((), None, None, 1.0),
        (("a",), None, None, 500.0),
        (("a",), 7, None, 7.0),
        (("a",), 7, 3, 3.0),
        (("a",), None, 40, 40.0),
    ],
)
def test_answer_size_counts_groups(
    keys: tuple[str, ...], limit: int | None, cap: int | None, expected: float
) -> None:
    """The answer-size estimate (`svc.plan.answer_size`) counts a group per row at most."""
    table = QualifiedName("t")
    groups = Groups(
        Rows(table),
        (),
        keys=tuple(GroupKey(k) for k in keys),
        limit=None if limit is None else Param(Const(limit), "integer"),
        cap=cap,
    )
    plan = QueryPlan("query", (RootField("g", groups),))
    assert estimate_rows(plan, _Stats(), {}) == expected


def test_off_by_default_and_valid_when_on(
    compiled_env: tuple[State, Database, asyncio.AbstractEventLoop],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without the feature the schema is the reference's: no groups field or type. With it,
    graphql-core's `validate_schema` finds nothing, and every type it adds is a table's
    name and a known suffix (`svc.schema.names` looks for clashes among them)."""
    ir = compiled_env[0].ir
    monkeypatch.delenv("SVC_GRAPHQL_EXPERIMENTAL_FEATURES")
    plain = build_schema(ir, "admin")
    assert not [n for n in plain.type_map if "group" in n]
    assert "article_groups" not in plain.query_type.fields
    assert "articles_groups" not in plain.type_map["author"].fields  # type: ignore[union-attr]
    grouped = build_schema(ir, "admin", groups=True)
    assert validate_schema(grouped) == []
    assert {"article_groups", "author_groups", "comment_groups"} <= set(grouped.query_type.fields)
    assert grouped.subscription_type is not None
    assert "article_groups" in grouped.subscription_type.fields
    # `Float_comparison_exp` when no column is a float (`avg` in `having`)
    added = set(grouped.type_map) - set(plain.type_map) - {"Float_comparison_exp"}
    tables = {t.gql_name for t in ir.tables.values()}
    known = GROUP_SUFFIXES | TABLE_TYPE_SUFFIXES  # `x_aggregate_order_by` is ordering's
    unknown = [
        n
        for n in added
        if not any(n.startswith(f"{t}_") and n[len(t) + 1 :] in known for t in tables)
    ]
    assert added and not unknown, unknown
