"""`_cast` in comparison expressions, as the reference offers it.

Reference followed (hasura/graphql-engine, `server/src-lib/Hasura/Backends/Postgres/
Instances/Schema.hs`, `comparisonExps` and its `castExp`): a jsonb column's comparison
type has `_cast: jsonb_cast_exp` with one field, `String: String_comparison_exp` (the
value `::text`); geometry's has `_cast: {geography: geography_comparison_exp}` and
geography's `_cast: {geometry: geometry_comparison_exp}`; the comparisons inside apply to
the cast value. The target types are fixed by the schema, never taken from the request.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import ServerProcess, create_database

DDL = """
create extension if not exists postgis;
create table place (
  id int primary key,
  data jsonb,
  spot geometry(Point, 4326),
  area geography(Point)
);
insert into place values
  (1, '{"city": "Paris"}', 'SRID=4326;POINT(2.35 48.85)', 'POINT(2.35 48.85)'),
  (2, '{"city": "Rome"}', 'SRID=4326;POINT(12.5 41.9)', 'POINT(12.5 41.9)'),
  (3, null, null, null);
"""
SETUP = [
    {"type": "run_sql", "args": {"sql": DDL}},
    {"type": "track_table", "args": {"table": "place"}},
    {
        "type": "create_select_permission",
        "args": {
            "table": "place",
            "role": "user",
            "permission": {"columns": ["id", "data"], "filter": {"id": {"_lt": 3}}},
        },
    },
]


@pytest.fixture(scope="module")
def srv(pg_url: str) -> Iterator[ServerProcess]:
    s = ServerProcess(create_database(pg_url, prefix="cast"))
    try:
        r = s.query({"type": "bulk", "args": SETUP})
        assert r.status_code == 200, r.text
        yield s
    finally:
        s.stop()


def gql(srv: ServerProcess, query: str, role: str = "admin", **variables: Any) -> Any:
    headers = {"x-svc-role": role}
    body = {"query": query, "variables": variables}
    r = srv.client.post("/v1/graphql", json=body, headers=headers)
    assert r.status_code == 200, r.text
    return r.json()


def ids(answer: Any) -> list[int]:
    assert "errors" not in answer, answer
    return [row["id"] for row in answer["data"]["place"]]


def test_jsonb_cast_to_string_with_a_literal_and_a_variable(srv: ServerProcess) -> None:
    q = '{ place(where: {data: {_cast: {String: {_ilike: "%paris%"}}}}) { id } }'
    assert ids(gql(srv, q)) == [1]
    q = "query ($p: String) { place(where: {data: {_cast: {String: {_like: $p}}}}) { id } }"
    assert ids(gql(srv, q, p='%"Rome"%')) == [2]
    q = '{ place(where: {data: {_cast: {String: {_eq: "{\\"city\\": \\"Rome\\"}"}}}}) { id } }'
    assert ids(gql(srv, q)) == [2]


def test_the_role_filter_still_applies(srv: ServerProcess) -> None:
    q = "{ place(where: {data: {_cast: {String: {_is_null: false}}}}) { id } }"
    assert ids(gql(srv, q, "user")) == [1, 2]


def test_geometry_and_geography_cast_to_each_other(srv: ServerProcess) -> None:
    near_paris = {"type": "Point", "coordinates": [2.35, 48.85]}
    q = (
        "query ($p: geography!) { place(where: {spot: {_cast: {geography: "
        "{_st_d_within: {from: $p, distance: 1000}}}}}) { id } }"
    )
    assert ids(gql(srv, q, p=near_paris)) == [1]
    q = (
        "query ($p: geometry!) { place(where: {area: {_cast: {geometry: "
        "{_st_intersects: $p}}}}) { id } }"
    )
    point = {**near_paris, "crs": {"type": "name", "properties": {"name": "EPSG:4326"}}}
    assert ids(gql(srv, q, p=point)) == [1]


def test_the_cast_types_are_the_references(srv: ServerProcess) -> None:
    q = """{ j: __type(name: "jsonb_cast_exp") { inputFields { name type { name } } }
             g: __type(name: "geometry_cast_exp") { inputFields { name type { name } } }
             h: __type(name: "geography_cast_exp") { inputFields { name type { name } } }
             c: __type(name: "jsonb_comparison_exp") { inputFields { name } } }"""
    data = gql(srv, q)["data"]
    assert data["j"]["inputFields"] == [
        {"name": "String", "type": {"name": "String_comparison_exp"}}
    ]
    assert data["g"]["inputFields"] == [
        {"name": "geography", "type": {"name": "geography_comparison_exp"}}
    ]
    assert data["h"]["inputFields"] == [
        {"name": "geometry", "type": {"name": "geometry_comparison_exp"}}
    ]
    assert "_cast" in {f["name"] for f in data["c"]["inputFields"]}


def test_an_unknown_cast_target_is_a_validation_error(srv: ServerProcess) -> None:
    q = "{ place(where: {data: {_cast: {Int: {_eq: 1}}}}) { id } }"
    answer = gql(srv, q)
    assert answer["errors"][0]["extensions"]["code"] == "validation-failed", answer


def _permit(srv: ServerProcess, role: str, filter_: Any) -> Any:
    permission = {"columns": ["id"], "filter": filter_}
    args = {"table": "place", "role": role, "permission": permission}
    return srv.query({"type": "create_select_permission", "args": args})


def test_cast_in_a_permission_filter(srv: ServerProcess) -> None:
    """The reference's permission syntax (`parseBoolExpOperations`, `checkValidCast` in
    `Hasura/Backends/Postgres/Translate/BoolExp.hs`): `_cast` keys are Postgres type names
    (`text` for jsonb, `geography` for geometry, `geometry` for geography), the
    comparisons inside apply to the cast value, a session variable included."""
    r = _permit(srv, "by_city", {"data": {"_cast": {"text": {"_ilike": "X-Svc-City"}}}})
    assert r.status_code == 200, r.text
    city = {"x-svc-role": "by_city", "x-svc-city": "%rome%"}
    answer = srv.client.post("/v1/graphql", json={"query": "{ place { id } }"}, headers=city)
    assert ids(answer.json()) == [2]
    near = {
        "_st_d_within": {"distance": 100000, "from": {"type": "Point", "coordinates": [2.3, 48.8]}}
    }
    r = _permit(srv, "near_paris", {"spot": {"_cast": {"geography": near}}})
    assert r.status_code == 200, r.text
    assert ids(gql(srv, "{ place { id } }", role="near_paris")) == [1]


@pytest.mark.parametrize(
    "filter_",
    [
        {"data": {"_cast": {"String": {"_eq": "x"}}}},  # the GraphQL name, not the type's
        {"data": {"_cast": {"integer": {"_eq": 1}}}},
        {"id": {"_cast": {"text": {"_eq": "1"}}}},
        {"data": {"_cast": {"text": {"_nope": "1"}}}},
    ],
)
def test_an_invalid_cast_in_a_permission_filter_is_refused(
    srv: ServerProcess, filter_: Any
) -> None:
    r = _permit(srv, "other", filter_)
    assert r.status_code == 400, r.text
    assert r.json()["code"] == "validation-failed", r.text
