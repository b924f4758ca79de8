"""Aggregates, permission limits and permission rules as the reference (Hasura v2
graphql-engine) has them, on a real Postgres and a real server.

References followed (hasura/graphql-engine, `server/src-lib/`):
- `Hasura/Backends/Postgres/Translate/Select/Internal/Process.hs`
  (`processAnnAggregateSelect`, `mkPermissionLimitSubQuery`) and
  `Internal/Extractor.hs` (`withJsonAggExtr`): with `aggregate` selected the permission's
  `limit` is `PLSQRequired`: the base select keeps only the request's `limit`, the
  aggregate is computed over every permitted row, and only `nodes` is cut to the
  permission's limit (a `LIMIT` on the unnested `json_agg` rows);
- `Hasura/GraphQL/Schema/Select.hs` (`defaultSelectTableAggregate`: the field exists when
  `spiAllowAgg`, whatever the columns; `count` takes no `columns` argument without columns);
- `Hasura/GraphQL/Schema/BoolExp/AggregationPredicates.hs`
  (`defaultAggregationPredicatesParser`: `<rel>_aggregate` only when the role's select
  permission on the target has `allow_aggregations`; `count`'s `arguments` need the
  target's column enum, so no visible column means no predicate and no field);
- `Hasura/RQL/DDL/Schema/Cache/Permission.hs` (`buildPermission`: a permission for
  `admin` is an inconsistent object, 400 `constraint-violation` "cannot define permission
  for admin role", in the table and role context `withPermission` adds);
- `Hasura/Backends/Postgres/Instances/Schema.hs` (`comparisonExps`: `_cast` on jsonb —
  `String` — and on geometry/geography — each other's name).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import ServerProcess, create_database

SQL = """
CREATE TABLE author (id int PRIMARY KEY, name text NOT NULL, data jsonb);
CREATE TABLE article (
  id int PRIMARY KEY, author_id int NOT NULL REFERENCES author, title text NOT NULL,
  published boolean NOT NULL, rating int NOT NULL, score float8, weight float8);
INSERT INTO author VALUES (1, 'Ada', '{"city": "Paris"}'), (2, 'Bob', '{"city": "Rome"}'),
  (3, 'Cy', null);
-- Ada: 3 published of 4; Bob: 1 unpublished; Cy: 2 published. Ada's score is her weight
-- + 0.5 (corr 1), Cy's falls as the weight rises (corr -1), Bob has one row.
INSERT INTO article VALUES
  (1, 1, 'a1', true, 1, 1.5, 1), (2, 1, 'a2', true, 2, 2.5, 2), (3, 1, 'a3', true, 3, 3.5, 3),
  (4, 1, 'a4', false, 40, 4.5, 4), (5, 2, 'b1', false, 50, 10, 1), (6, 3, 'c1', true, 6, 6, 2),
  (7, 3, 'c2', true, 7, 8, 1);
"""

PUBLISHED = {"published": {"_eq": True}}


def _select(table: str, role: str, permission: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "create_select_permission",
        "args": {"table": table, "role": role, "permission": permission},
    }


STEPS: list[dict[str, Any]] = [
    {"type": "run_sql", "args": {"sql": SQL}},
    {"type": "track_table", "args": "author"},
    {"type": "track_table", "args": "article"},
    {
        "type": "create_array_relationship",
        "args": {
            "table": "author",
            "name": "articles",
            "using": {"foreign_key_constraint_on": {"table": "article", "column": "author_id"}},
        },
    },
    # capped: published articles, at most 2 rows a list, aggregates allowed
    _select("author", "capped", {"columns": ["id", "name"], "filter": {}}),
    _select(
        "article",
        "capped",
        {
            "columns": ["id", "title", "rating", "published"],
            "filter": PUBLISHED,
            "limit": 2,
            "allow_aggregations": True,
        },
    ),
    # nocols: aggregates of articles but no column
    _select("author", "nocols", {"columns": ["id"], "filter": {}}),
    _select("article", "nocols", {"columns": [], "filter": PUBLISHED, "allow_aggregations": True}),
    # noagg: the published articles, without aggregates
    _select("author", "noagg", {"columns": ["id"], "filter": {}}),
    _select("article", "noagg", {"columns": ["id", "rating"], "filter": PUBLISHED}),
]


@pytest.fixture(scope="module")
def srv(pg_url: str) -> Iterator[ServerProcess]:
    s = ServerProcess(create_database(pg_url, prefix="aggrules"))
    try:
        r = s.query({"type": "bulk", "args": STEPS})
        assert r.status_code == 200, r.text
        yield s
    finally:
        s.stop()


def gql(s: ServerProcess, query: str, role: str | None = None) -> Any:
    headers = {"X-Svc-Role": role} if role else {}
    return s.graphql(query, headers=headers)


def data(s: ServerProcess, query: str, role: str | None = None) -> Any:
    body = gql(s, query, role)
    assert "errors" not in body, body
    return body["data"]


def tables_of(exported: dict[str, Any]) -> list[dict[str, Any]]:
    """The tracked tables of an `export_metadata` answer (version 2, or with sources)."""
    found: list[dict[str, Any]] = (
        exported["sources"][0]["tables"] if "sources" in exported else exported["tables"]
    )
    return found


def input_fields(s: ServerProcess, name: str, role: str) -> set[str] | None:
    body = data(s, '{ __type(name: "' + name + '") { inputFields { name } } }', role)
    found = body["__type"]
    return None if found is None else {f["name"] for f in found["inputFields"]}


# -- 1. a permission's limit caps nodes, not the aggregate -------------------------------


def test_permission_limit_caps_nodes_not_the_aggregate(srv: ServerProcess) -> None:
    """Reference `mkPermissionLimitSubQuery` (Translate/Select/Internal/Process.hs): with
    `aggregate` selected, count/sum/max are over all 5 published articles; `nodes` holds
    the first 2 (the permission's limit) in the requested order."""
    got = data(
        srv,
        "{ article_aggregate(order_by: {id: desc}) { aggregate { count sum { rating } "
        "max { rating } } nodes { id } } }",
        "capped",
    )["article_aggregate"]
    assert got["aggregate"] == {"count": 5, "sum": {"rating": 19}, "max": {"rating": 7}}
    assert got["nodes"] == [{"id": 7}, {"id": 6}]


def test_permission_limit_with_a_request_limit(srv: ServerProcess) -> None:
    """The request's `limit` is applied to the base rows (`finalLimit = inpLimitM`), so
    it windows the aggregate too; the permission's limit cuts `nodes` further."""
    got = data(
        srv,
        "{ article_aggregate(limit: 3, order_by: {id: asc}) { aggregate { count } nodes { id } } }",
        "capped",
    )["article_aggregate"]
    assert got == {"aggregate": {"count": 3}, "nodes": [{"id": 1}, {"id": 2}]}


def test_permission_limit_on_a_relationship_aggregate(srv: ServerProcess) -> None:
    got = data(
        srv,
        "{ author(order_by: {id: asc}) { id articles_aggregate(order_by: {id: asc}) "
        "{ aggregate { count } nodes { id } } } }",
        "capped",
    )["author"]
    assert [(a["id"], a["articles_aggregate"]["aggregate"]["count"]) for a in got] == [
        (1, 3),
        (2, 0),
        (3, 2),
    ]
    assert [len(a["articles_aggregate"]["nodes"]) for a in got] == [2, 0, 2]


def test_permission_limit_still_caps_lists_and_nodes_alone(srv: ServerProcess) -> None:
    """Without `aggregate` the limit caps the base select (`PLSQNotRequired`)."""
    got = data(
        srv,
        "{ article(order_by: {id: asc}) { id } "
        "article_aggregate(order_by: {id: asc}) { nodes { id } } }",
        "capped",
    )
    assert got["article"] == [{"id": 1}, {"id": 2}]
    assert got["article_aggregate"]["nodes"] == [{"id": 1}, {"id": 2}]


# -- 2. allow_aggregations with columns: [] ----------------------------------------------


def test_aggregations_without_columns_still_count(srv: ServerProcess) -> None:
    """Reference `defaultSelectTableAggregate` (Schema/Select.hs): the aggregate field
    exists when `allow_aggregations`, whatever the columns; `count` has no `columns`
    argument (no `article_select_column` enum) and counts the permitted rows."""
    got = data(srv, "{ article_aggregate { aggregate { count } } }", "nocols")
    assert got == {"article_aggregate": {"aggregate": {"count": 5}}}
    body = gql(srv, "{ article_aggregate { aggregate { count(distinct: true) } } }", "nocols")
    assert body == {"data": {"article_aggregate": {"aggregate": {"count": 5}}}}
    nested = data(
        srv,
        "{ author(order_by: {id: asc}) { id articles_aggregate { aggregate { count } } } }",
        "nocols",
    )["author"]
    assert [a["articles_aggregate"]["aggregate"]["count"] for a in nested] == [3, 0, 2]


# -- 3. <rel>_aggregate in boolean expressions -------------------------------------------


def test_aggregate_filter_counts_only_permitted_rows(srv: ServerProcess) -> None:
    """`where: {articles_aggregate: {count: {predicate: {_gt: 1}}}}`: the count is over the
    rows the role's filter on `article` lets through (`AggregationPredicatesImplementation`
    carries `rowPermissions`): Ada has 3 published, Bob 0, Cy 2."""
    q = (
        "{ author(where: {articles_aggregate: {count: {predicate: {_gt: 1}}}}, "
        "order_by: {id: asc}) { id } }"
    )
    assert data(srv, q, "capped")["author"] == [{"id": 1}, {"id": 3}]
    assert data(srv, q)["author"] == [{"id": 1}, {"id": 3}]  # admin: Ada 4, Bob 1, Cy 2
    q2 = (
        "{ author(where: {articles_aggregate: {count: {predicate: {_eq: 0}}}}, "
        "order_by: {id: asc}) { id } }"
    )
    assert data(srv, q2, "capped")["author"] == [{"id": 2}]
    assert data(srv, q2)["author"] == []


def test_aggregate_filter_with_arguments_distinct_and_filter(srv: ServerProcess) -> None:
    q = (
        "{ author(where: {articles_aggregate: {count: {arguments: [published], "
        "distinct: true, filter: {rating: {_lt: 100}}, predicate: {_eq: 2}}}}) { id } }"
    )
    assert data(srv, q)["author"] == [{"id": 1}]  # Ada: true and false
    assert data(srv, q, "capped")["author"] == []  # the role sees only true ones


def test_aggregate_filter_only_where_the_role_may_aggregate(srv: ServerProcess) -> None:
    """`guard $ spiAllowAgg selectPermissions` (AggregationPredicates.hs): `noagg` has no
    `articles_aggregate` in `author_bool_exp`; `nocols` has none either, since `count`'s
    `arguments` need a column enum and no predicate is left."""
    assert "articles_aggregate" in (input_fields(srv, "author_bool_exp", "capped") or set())
    assert "articles_aggregate" not in (input_fields(srv, "author_bool_exp", "noagg") or set())
    assert "articles_aggregate" not in (input_fields(srv, "author_bool_exp", "nocols") or set())
    body = gql(
        srv,
        "{ author(where: {articles_aggregate: {count: {predicate: {_gt: 0}}}}) { id } }",
        "noagg",
    )
    assert [e["extensions"]["code"] for e in body["errors"]] == ["validation-failed"]


# -- 4. no permission for admin -----------------------------------------------------------


@pytest.mark.parametrize("kind", ["select", "insert", "update", "delete"])
def test_a_permission_for_admin_is_refused(srv: ServerProcess, kind: str) -> None:
    """Reference `buildPermission` (RQL/DDL/Schema/Cache/Permission.hs): `throw400
    ConstraintViolation "cannot define permission for admin role"`, recorded as an
    inconsistent permission, so the operation is refused and nothing changes."""
    permission: dict[str, Any] = {
        "select": {"columns": ["id"], "filter": {}},
        "insert": {"columns": ["id"], "check": {}},
        "update": {"columns": ["id"], "filter": {}},
        "delete": {"filter": {}},
    }[kind]
    r = srv.query(
        {
            "type": f"create_{kind}_permission",
            "args": {"table": "author", "role": "admin", "permission": permission},
        }
    )
    assert r.status_code == 400, r.text
    body = r.json()
    assert body["code"] == "constraint-violation", body
    assert "cannot define permission for admin role" in body["error"], body
    exported = srv.query({"type": "export_metadata", "args": {}}).json()
    author = next(t for t in tables_of(exported) if t["table"]["name"] == "author")
    assert all(p["role"] != "admin" for p in author.get(f"{kind}_permissions", []))


def test_replace_metadata_with_an_admin_permission_is_refused(srv: ServerProcess) -> None:
    exported = srv.query({"type": "export_metadata", "args": {}}).json()
    author = next(t for t in tables_of(exported) if t["table"]["name"] == "author")
    author["select_permissions"] = [
        *author.get("select_permissions", []),
        {"role": "admin", "permission": {"columns": ["id"], "filter": {}}},
    ]
    r = srv.query({"type": "replace_metadata", "args": exported})
    assert r.status_code == 400, r.text
    assert r.json()["code"] == "constraint-violation", r.text
    assert "cannot define permission for admin role" in r.json()["error"]
    again = srv.query({"type": "export_metadata", "args": {}}).json()
    author = next(t for t in tables_of(again) if t["table"]["name"] == "author")
    assert all(p["role"] != "admin" for p in author["select_permissions"])


def authors(s: ServerProcess, where: str, role: str | None = None) -> list[int]:
    found = data(s, "{ author(where: " + where + ", order_by: {id: asc}) { id } }", role)
    return [a["id"] for a in found["author"]]


def test_bool_and_and_bool_or_predicates(srv: ServerProcess) -> None:
    """`<rel>_aggregate: {bool_and | bool_or: {arguments, distinct, filter, predicate}}`
    (`AggregationPredicates.hs`; the type shapes as the reference's generated schemas
    show them: `arguments` one required boolean column of
    `<t>_select_column_<t>_aggregate_bool_exp_bool_and_arguments_columns`, `predicate` a
    required `Boolean_comparison_exp`)."""
    every = "{articles_aggregate: {bool_and: {arguments: published, predicate: {_eq: true}}}}"
    some = "{articles_aggregate: {bool_or: {arguments: published, predicate: {_eq: true}}}}"
    assert authors(srv, every) == [3]  # Ada has an unpublished one, Bob only one
    assert authors(srv, some) == [1, 3]
    over_two = "filter: {rating: {_gt: 2}}, "
    every_over_two = every.replace("arguments", over_two + "arguments")
    assert authors(srv, every_over_two) == [3]  # a4 (40, unpublished) is over 2
    # the role's filter (published only) applies to what is aggregated: Ada's visible
    # articles are all published, Bob has none (bool_and of nothing is null: no match)
    assert authors(srv, every, "capped") == [1, 3]
    enum = "article_select_column_article_aggregate_bool_exp_bool_and_arguments_columns"
    values = data(srv, '{ __type(name: "' + enum + '") { enumValues { name } } }')
    assert values["__type"]["enumValues"] == [{"name": "published"}]
    fields = input_fields(srv, "article_aggregate_bool_exp", "capped")
    assert fields == {"bool_and", "bool_or", "count"}


def test_bool_predicates_need_a_visible_boolean_column(srv: ServerProcess) -> None:
    """No boolean column the role may select: `count` only (the reference drops a
    predicate whose `arguments` enum would be empty)."""
    assert input_fields(srv, "article_aggregate_bool_exp", "nocols") is None
    where = "{articles_aggregate: {bool_and: {arguments: published, predicate: {_eq: true}}}}"
    errors = gql(srv, "{ author(where: " + where + ") { id } }", "noagg")["errors"]
    assert errors[0]["extensions"]["code"] == "validation-failed"


FLOAT_CASES = [
    ("avg: {arguments: score, predicate: {_gt: 5}}", [2, 3]),
    ("sum: {arguments: score, predicate: {_gte: 12}}", [1, 3]),
    ("sum: {arguments: score, distinct: true, predicate: {_gte: 12}}", [1, 3]),
    ("max: {arguments: score, predicate: {_lt: 9}}", [1, 3]),
    ("min: {arguments: score, predicate: {_eq: 1.5}}", [1]),
    ("stddev_samp: {arguments: score, predicate: {_is_null: true}}", [2]),
    ("var_samp: {arguments: score, predicate: {_gt: 1.8}}", [3]),
    ("corr: {arguments: {Y: score, X: weight}, predicate: {_gt: 0.9}}", [1]),
    ("corr: {arguments: {Y: score, X: weight}, predicate: {_lt: 0}}", [3]),
    ("covar_samp: {arguments: {Y: score, X: weight}, predicate: {_gt: 1}}", [1]),
    ("avg: {arguments: score, filter: {rating: {_gt: 2}}, predicate: {_lt: 5}}", [1]),
]


@pytest.mark.parametrize(("predicate", "expected"), FLOAT_CASES)
def test_float8_aggregation_predicates(
    srv: ServerProcess, predicate: str, expected: list[int]
) -> None:
    """The reference's float8 predicates (`aggregationFunctions`,
    `Postgres/Instances/Schema.hs`): avg, max, min, sum, stddev_samp, var_samp of one
    float8 column, corr and covar_samp of two (`arguments: {Y, X}`, `corr(Y, X)`), each
    compared as a `float8_comparison_exp`."""
    assert authors(srv, "{articles_aggregate: {" + predicate + "}}") == expected


def test_float8_predicate_types_and_one_predicate_only(srv: ServerProcess) -> None:
    """The type shapes of `AggregationPredicates.hs` (`arguments` enum of the float8
    columns; `<t>_aggregate_bool_exp_corr_arguments {Y, X}`), offered only to a role that
    sees a float8 column; and its parser's rule: exactly one predicate per
    `<rel>_aggregate`."""
    fields = input_fields(srv, "article_aggregate_bool_exp", "admin")
    assert fields == {
        "avg", "bool_and", "bool_or", "corr", "count", "covar_samp", "max", "min",
        "stddev_samp", "sum", "var_samp",
    }  # fmt: skip
    assert input_fields(srv, "article_aggregate_bool_exp_corr_arguments", "admin") == {"Y", "X"}
    enum = "article_select_column_article_aggregate_bool_exp_avg_arguments_columns"
    values = data(srv, '{ __type(name: "' + enum + '") { enumValues { name } } }')
    assert values["__type"]["enumValues"] == [{"name": "score"}, {"name": "weight"}]
    pred = data(
        srv,
        '{ __type(name: "article_aggregate_bool_exp_avg") '
        "{ inputFields { name type { kind ofType { name } } } } }",
    )
    by_name = {f["name"]: f["type"] for f in pred["__type"]["inputFields"]}
    assert by_name["predicate"] == {"kind": "NON_NULL", "ofType": {"name": "float8_comparison_exp"}}
    two = (
        "{articles_aggregate: {count: {predicate: {_gt: 0}}, "
        "avg: {arguments: score, predicate: {_gt: 0}}}}"
    )
    errors = gql(srv, "{ author(where: " + two + ") { id } }")["errors"]
    assert errors[0]["extensions"]["code"] == "validation-failed"
    assert errors[0]["message"] == "exactly one predicate should be specified"


# -- 5. _cast on jsonb --------------------------------------------------------------------


def test_jsonb_cast_to_string(srv: ServerProcess) -> None:
    """Reference `comparisonExps` (Postgres/Instances/Schema.hs): a jsonb column's
    comparison has `_cast: {String: String_comparison_exp}` (the value `::text`)."""
    q = '{ author(where: {data: {_cast: {String: {_ilike: "%paris%"}}}}) { id } }'
    assert data(srv, q)["author"] == [{"id": 1}]
