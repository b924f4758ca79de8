"""Grouped aggregates (`x_groups`, `<array rel>_groups`; `svc.schema.groups`,
`svc.plan.groups`, `svc.sql.groups`) end to end: a real `svc serve` over the Chinook data,
each answer compared with the same question asked of Postgres as a plain `GROUP BY`
through asyncpg (the oracle); permissions (no `allow_aggregations`: no field; the role's
filter; a column it may not select; the row limit; an inherited role's redacted column),
`having`, `order_by`, `limit`/`offset`, variables, errors with their codes and paths,
explain, `svc compile --print-sql` and a live query; and that without the experimental
feature `group_by_aggregations` there is no groups field."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import websockets

from tests.support import ServerProcess, create_database
from tests.test_chinook import CHINOOK, fetch, track_bulk

pytestmark = pytest.mark.skipif(
    not CHINOOK.exists(), reason="../shared/data/chinook not found (a user's clone)"
)

TRACK_COLUMNS = ["id", "name", "album_id", "genre_id", "media_type_id", "milliseconds"]


def _select(role: str, table: str, permission: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "pg_create_select_permission",
        "args": {"table": table, "role": role, "permission": permission},
    }


PERMISSIONS: list[dict[str, Any]] = [
    # may aggregate, some rows, every column but `unit_price`, `composer`, `bytes`
    _select(
        "analyst",
        "tracks",
        {"columns": TRACK_COLUMNS, "filter": {"genre_id": {"_lt": 5}}, "allow_aggregations": True},
    ),
    # may select, may not aggregate
    _select("viewer", "tracks", {"columns": TRACK_COLUMNS, "filter": {}}),
    # may aggregate, at most 3 rows
    _select(
        "capped",
        "tracks",
        {"columns": TRACK_COLUMNS, "filter": {}, "allow_aggregations": True, "limit": 3},
    ),
    # two parents of an inherited role: `media_type_id` shown where genre_id >= 20 only
    _select(
        "low_genres",
        "tracks",
        {
            "columns": ["id", "genre_id", "milliseconds"],
            "filter": {"genre_id": {"_lt": 5}},
            "allow_aggregations": True,
        },
    ),
    _select(
        "high_genres",
        "tracks",
        {
            "columns": ["id", "genre_id", "media_type_id"],
            "filter": {"genre_id": {"_gte": 20}},
            "allow_aggregations": True,
        },
    ),
    {
        "type": "add_inherited_role",
        "args": {"role_name": "both_genres", "role_set": ["low_genres", "high_genres"]},
    },
    _select("analyst", "genres", {"columns": ["id", "name"], "filter": {}}),
]


FEATURE = {"SVC_GRAPHQL_EXPERIMENTAL_FEATURES": "group_by_aggregations"}


@pytest.fixture(scope="module")
def server(pg_url: str) -> Iterator[tuple[ServerProcess, str]]:
    """`tests/test_chinook.py`'s database and metadata, the permissions above, served with
    the experimental feature `group_by_aggregations`."""
    url = create_database(pg_url)
    srv = ServerProcess(url, env=FEATURE)
    try:
        r = srv.query({"type": "run_sql", "args": {"sql": CHINOOK.read_text()}})
        assert r.status_code == 200, r.text[:2000]
        r = srv.client.post("/v1/metadata", json=track_bulk())
        assert r.status_code == 200, r.text[:2000]
        r = srv.client.post("/v1/metadata", json={"type": "bulk", "args": PERMISSIONS})
        assert r.status_code == 200, r.text
        yield srv, url
    finally:
        srv.stop()


def ask(
    srv: ServerProcess, query: str, variables: dict[str, Any] | None = None, role: str = "admin"
) -> Any:
    """The decoded answer (numbers with a fraction as `Decimal`, as asyncpg reads them)."""
    body: dict[str, Any] = {"query": query}
    if variables is not None:
        body["variables"] = variables
    r = srv.client.post("/v1/graphql", json=body, headers={"x-svc-role": role})
    assert r.status_code == 200, r.text
    return json.loads(r.text, parse_float=Decimal)


def data(srv: ServerProcess, query: str, variables: Any = None, role: str = "admin") -> Any:
    answer = ask(srv, query, variables, role)
    assert "errors" not in answer, answer
    return answer["data"]


def error(srv: ServerProcess, query: str, variables: Any = None, role: str = "admin") -> Any:
    answer = ask(srv, query, variables, role)
    assert "data" not in answer and len(answer["errors"]) == 1, answer
    return answer["errors"][0]


# -- answers against the oracle -------------------------------------------------------------
def test_one_key_every_operator_matches_group_by(server: tuple[ServerProcess, str]) -> None:
    srv, url = server
    got = data(
        srv,
        "{ tracks_groups(group_by: [genre_id]) { keys { genre_id } aggregate { count "
        "sum { milliseconds unit_price } avg { unit_price } max { name } min { milliseconds } "
        "stddev { milliseconds } } } }",
    )["tracks_groups"]
    rows = fetch(
        url,
        "SELECT genre_id, count(*) AS n, sum(milliseconds) AS s, sum(unit_price) AS su, "
        "avg(unit_price) AS a, max(name) AS mx, min(milliseconds) AS mn, "
        "stddev(milliseconds) AS sd FROM tracks GROUP BY genre_id "
        "ORDER BY genre_id ASC NULLS LAST",
    )
    assert len(got) == len(rows) > 10
    for g, row in zip(got, rows, strict=True):
        agg = g["aggregate"]
        assert g["keys"] == {"genre_id": row["genre_id"]}
        assert agg["count"] == row["n"]
        assert agg["sum"] == {"milliseconds": row["s"], "unit_price": row["su"]}
        assert agg["avg"]["unit_price"] == row["a"]
        assert agg["max"] == {"name": row["mx"]} and agg["min"] == {"milliseconds": row["mn"]}
        sd = agg["stddev"]["milliseconds"]
        assert (sd is None and row["sd"] is None) or abs(Decimal(sd) - row["sd"]) < Decimal("0.001")


def test_two_keys_where_having_order_window_and_variables(
    server: tuple[ServerProcess, str],
) -> None:
    srv, url = server
    query = """
      query ($min: Int!, $n: Int, $skip: Int, $country: String) {
        invoices_groups(
          group_by: [billing_country, customer_id]
          where: {billing_country: {_neq: $country}}
          having: {count: {_gte: $min}, sum: {total: {_gt: 30}}}
          order_by: [{aggregate: {sum: {total: desc}}}, {keys: {customer_id: asc}}]
          limit: $n, offset: $skip
        ) { keys { billing_country customer_id } aggregate { count sum { total } } }
      }"""
    variables = {"min": 7, "n": 10, "skip": 2, "country": "USA"}
    got = data(srv, query, variables)["invoices_groups"]
    rows = fetch(
        url,
        "SELECT billing_country, customer_id, count(*) AS n, sum(total) AS s FROM invoices "
        "WHERE billing_country <> $1 GROUP BY 1, 2 HAVING count(*) >= $2 AND sum(total) > 30 "
        "ORDER BY sum(total) DESC, customer_id ASC, billing_country ASC LIMIT $3 OFFSET $4",
        "USA",
        7,
        10,
        2,
    )
    assert rows and len(got) == len(rows) == 10
    assert got == [
        {
            "keys": {"billing_country": r["billing_country"], "customer_id": r["customer_id"]},
            "aggregate": {"count": r["n"], "sum": {"total": r["s"]}},
        }
        for r in rows
    ]
    # the same query with other values of the same variables (one cached plan)
    other = data(srv, query, {"min": 1, "n": 3, "skip": 0, "country": "Canada"})
    assert len(other["invoices_groups"]) == 3
    assert all(g["keys"]["billing_country"] != "Canada" for g in other["invoices_groups"])


def test_order_by_key_descending_and_having_boolean_operators(
    server: tuple[ServerProcess, str],
) -> None:
    srv, url = server
    got = data(
        srv,
        "{ invoices_groups(group_by: [billing_country], order_by: {keys: {billing_country: "
        "desc}}, having: {_or: [{max: {total: {_gte: 20}}}, {_not: {count: {_lt: 20}}}], "
        "avg: {total: {_is_null: false}}}) { country: keys { name: billing_country } } }",
    )["invoices_groups"]
    rows = fetch(
        url,
        "SELECT billing_country FROM invoices GROUP BY 1 "
        "HAVING (max(total) >= 20 OR NOT count(*) < 20) AND avg(total) IS NOT NULL "
        "ORDER BY 1 DESC",
    )
    assert got == [{"country": {"name": r["billing_country"]}} for r in rows]
    assert 1 < len(got) < 24


def test_no_keys_is_one_group(server: tuple[ServerProcess, str]) -> None:
    srv, url = server
    got = data(srv, "{ tracks_groups(group_by: []) { __typename aggregate { count } } }")
    (total,) = fetch(url, "SELECT count(*) AS n FROM tracks")
    assert got == {
        "tracks_groups": [{"__typename": "tracks_group", "aggregate": {"count": total["n"]}}]
    }


def test_relationship_groups(server: tuple[ServerProcess, str]) -> None:
    srv, url = server
    got = data(
        srv,
        "{ genres(where: {id: {_lte: 3}}, order_by: {id: asc}) { id tracks_groups("
        "group_by: [media_type_id], where: {milliseconds: {_gt: 200000}}) "
        "{ keys { media_type_id } aggregate { count } } } }",
    )["genres"]
    rows = fetch(
        url,
        "SELECT genre_id, media_type_id, count(*) AS n FROM tracks "
        "WHERE genre_id <= 3 AND milliseconds > 200000 GROUP BY 1, 2 ORDER BY 1, 2",
    )
    expected = [
        {
            "id": gid,
            "tracks_groups": [
                {"keys": {"media_type_id": r["media_type_id"]}, "aggregate": {"count": r["n"]}}
                for r in rows
                if r["genre_id"] == gid
            ],
        }
        for gid in (1, 2, 3)
    ]
    assert got == expected


# -- permissions ----------------------------------------------------------------------------
def test_role_without_aggregations_has_no_field(server: tuple[ServerProcess, str]) -> None:
    srv, _ = server
    found = error(
        srv, "{ tracks_groups(group_by: [genre_id]) { aggregate { count } } }", role="viewer"
    )
    assert found["extensions"]["code"] == "validation-failed"
    assert found["message"] == "field \"tracks_groups\" not found in type: 'query_root'"
    # the role's lists are there
    assert data(srv, "{ tracks(limit: 1) { id } }", role="viewer")["tracks"]


def test_role_filter_applies(server: tuple[ServerProcess, str]) -> None:
    srv, url = server
    got = data(
        srv,
        "{ tracks_groups(group_by: [genre_id]) { keys { genre_id } aggregate { count "
        "sum { milliseconds } } } }",
        role="analyst",
    )["tracks_groups"]
    rows = fetch(
        url,
        "SELECT genre_id, count(*) AS n, sum(milliseconds) AS s FROM tracks "
        "WHERE genre_id < 5 GROUP BY 1 ORDER BY 1",
    )
    assert got == [
        {
            "keys": {"genre_id": r["genre_id"]},
            "aggregate": {"count": r["n"], "sum": {"milliseconds": r["s"]}},
        }
        for r in rows
    ]
    assert len(got) == 4


def test_column_not_permitted_is_a_validation_error(server: tuple[ServerProcess, str]) -> None:
    """The document's validation against the role's schema refuses it (svc answers
    graphql-core's errors at `$`: `svc.api.graphql._validation_error`)."""
    srv, _ = server
    cases = [
        (
            "{ tracks_groups(group_by: [composer]) { aggregate { count } } }",
            "Value 'composer' does not exist in 'tracks_select_column' enum.",
        ),
        (
            "{ tracks_groups(group_by: [genre_id]) { aggregate { sum { unit_price } } } }",
            "field \"unit_price\" not found in type: 'tracks_sum_fields'",
        ),
        (
            "{ tracks_groups(group_by: [genre_id]) { keys { composer } } }",
            "field \"composer\" not found in type: 'tracks_group_keys'",
        ),
        (
            "{ tracks_groups(group_by: [genre_id], having: {sum: {unit_price: {_gt: 1}}}) "
            "{ aggregate { count } } }",
            "Field 'unit_price' is not defined by type 'tracks_sum_groups_having'.",
        ),
    ]
    for query, message in cases:
        found = error(srv, query, role="analyst")
        assert found["extensions"] == {"code": "validation-failed", "path": "$"}, query
        assert message in found["message"], found
    # admin may
    assert data(srv, cases[0][0])["tracks_groups"]


def test_row_limit_caps_groups_not_aggregates(server: tuple[ServerProcess, str]) -> None:
    srv, url = server
    got = data(
        srv,
        "{ tracks_groups(group_by: [media_type_id]) { keys { media_type_id } "
        "aggregate { count } } }",
        role="capped",
    )["tracks_groups"]
    rows = fetch(
        url, "SELECT media_type_id, count(*) AS n FROM tracks GROUP BY 1 ORDER BY 1 LIMIT 3"
    )
    assert got == [
        {"keys": {"media_type_id": r["media_type_id"]}, "aggregate": {"count": r["n"]}}
        for r in rows
    ]
    assert len(got) == 3 and sum(g["aggregate"]["count"] for g in got) > 3
    # a request's limit below the cap is kept, above it is capped
    for asked, answered in ((2, 2), (10, 3)):
        q = (
            "query ($n: Int) { tracks_groups(group_by: [media_type_id], limit: $n) "
            "{ keys { media_type_id } } }"
        )
        assert len(data(srv, q, {"n": asked}, role="capped")["tracks_groups"]) == answered


def test_inherited_role_groups_by_the_redacted_value(server: tuple[ServerProcess, str]) -> None:
    srv, url = server
    got = data(
        srv,
        "{ tracks_groups(group_by: [media_type_id], order_by: {keys: {media_type_id: asc}}) "
        "{ keys { media_type_id } aggregate { count sum { milliseconds } } } }",
        role="both_genres",
    )["tracks_groups"]
    rows = fetch(
        url,
        "SELECT CASE WHEN genre_id >= 20 THEN media_type_id END AS k, count(*) AS n, "
        "sum(CASE WHEN genre_id < 5 THEN milliseconds END) AS s FROM tracks "
        "WHERE genre_id < 5 OR genre_id >= 20 GROUP BY 1 ORDER BY 1 ASC NULLS LAST",
    )
    assert got == [
        {
            "keys": {"media_type_id": r["k"]},
            "aggregate": {"count": r["n"], "sum": {"milliseconds": r["s"]}},
        }
        for r in rows
    ]
    assert got[-1]["keys"] == {"media_type_id": None}  # the rows it may not see it in


# -- errors ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("query", "path", "message"),
    [
        (
            "{ tracks_groups(group_by: [genre_id]) { keys { genre_id album_id } } }",
            "$.selectionSet.tracks_groups.selectionSet.keys.selectionSet.album_id",
            '"album_id" is not a grouping key',
        ),
        (
            "{ g: tracks_groups(group_by: [genre_id], order_by: [{keys: {genre_id: asc}}, "
            "{keys: {album_id: desc}}]) { aggregate { count } } }",
            "$.selectionSet.g.args.order_by[1].keys.album_id",
            'cannot order groups by "album_id"',
        ),
        (
            "{ tracks_groups(group_by: [genre_id], limit: -1) { aggregate { count } } }",
            "$.selectionSet.limit",
            "unexpected negative value for limit",
        ),
        (
            "{ tracks_groups { aggregate { count } } }",
            "$",
            "argument 'group_by' of type '[tracks_select_column!]!' is required",
        ),
    ],
)
def test_errors(server: tuple[ServerProcess, str], query: str, path: str, message: str) -> None:
    srv, _ = server
    found = error(srv, query)
    assert found["extensions"] == {"code": "validation-failed", "path": path}, found
    assert message in found["message"]


# -- explain, compile, live queries ---------------------------------------------------------
GENRE_COUNTS = (
    "{ tracks_groups(group_by: [genre_id], having: {count: {_gt: 100}}) "
    "{ keys { genre_id } aggregate { count } } }"
)


def test_explain_shows_the_grouped_statement(server: tuple[ServerProcess, str]) -> None:
    srv, _ = server
    body = {"query": {"query": GENRE_COUNTS}, "user": {"x-svc-role": "analyst"}}
    r = srv.client.post("/v1/graphql/explain", json=body)
    assert r.status_code == 200, r.text
    (root,) = r.json()
    assert root["field"] == "tracks_groups"
    assert "GROUP BY 1" in root["sql"] and '"_m0" > $' in root["sql"]
    assert any("Aggregate" in line for line in root["plan"])


def test_compile_prints_the_statement_explain_shows(
    server: tuple[ServerProcess, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from svc.cli import main

    srv, url = server
    monkeypatch.setenv(*next(iter(FEATURE.items())))
    directory = tmp_path / "metadata"
    assert main(["metadata", "export", "--endpoint", srv.url, "--dir", str(directory)]) == 0
    (tmp_path / "q.graphql").write_text(GENRE_COUNTS)
    capsys.readouterr()
    code = main(
        [
            "compile",
            "--dir",
            str(directory),
            "--database-url",
            url,
            "--print-sql",
            str(tmp_path / "q.graphql"),
            "--role",
            "analyst",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    lines = out.splitlines()
    body = {"query": {"query": GENRE_COUNTS}, "user": {"x-svc-role": "analyst"}}
    explained = srv.client.post("/v1/graphql/explain", json=body).json()[0]["sql"]
    assert lines[1] == explained + ";"
    assert "-- $1: 5 (integer)" in lines and "-- $2: 100 (bigint)" in lines


def test_live_query_of_groups(server: tuple[ServerProcess, str]) -> None:
    srv, url = server

    async def go() -> None:
        ws_url = "ws" + srv.url.removeprefix("http") + "/v1/graphql"
        async with websockets.connect(ws_url, subprotocols=["graphql-transport-ws"]) as ws:  # type: ignore[list-item]
            await ws.send(
                json.dumps(
                    {"type": "connection_init", "payload": {"headers": {"x-svc-role": "analyst"}}}
                )
            )
            assert json.loads(await ws.recv())["type"] == "connection_ack"
            query = (
                "subscription { tracks_groups(group_by: [genre_id], "
                "where: {genre_id: {_eq: 1}}) { keys { genre_id } aggregate { count } } }"
            )
            await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": {"query": query}}))
            first = await _next(ws)
            count = "SELECT count(*) AS n FROM tracks WHERE genre_id = 1"
            (before,) = await asyncio.to_thread(fetch, url, count)
            assert first == {
                "tracks_groups": [{"keys": {"genre_id": 1}, "aggregate": {"count": before["n"]}}]
            }
            await asyncio.to_thread(
                fetch,
                url,
                "INSERT INTO tracks (name, media_type_id, genre_id, milliseconds, unit_price) "
                "VALUES ('new', 1, 1, 1000, 0.99) RETURNING id",
            )
            second = await _next(ws)
            assert second["tracks_groups"][0]["aggregate"]["count"] == before["n"] + 1

    try:
        asyncio.run(go())
    finally:
        fetch(url, "DELETE FROM tracks WHERE name = 'new' AND milliseconds = 1000 RETURNING id")


async def _next(ws: Any) -> Any:
    while True:
        frame = json.loads(await asyncio.wait_for(ws.recv(), 10))
        if frame["type"] == "next":
            return frame["payload"]["data"]
        assert frame["type"] in ("ping", "pong", "ka"), frame


def test_off_without_the_feature(pg_url: str) -> None:
    """Without `group_by_aggregations` the schema is the reference's: the field is unknown."""
    srv = ServerProcess(create_database(pg_url))
    try:
        r = srv.query({"type": "run_sql", "args": {"sql": "create table t (a int)"}})
        assert r.status_code == 200, r.text
        assert srv.query({"type": "track_table", "args": {"name": "t"}}).status_code == 200
        assert srv.graphql("{ t_aggregate { aggregate { count } } }") == {
            "data": {"t_aggregate": {"aggregate": {"count": 0}}}
        }
        found = srv.graphql("{ t_groups(group_by: [a]) { aggregate { count } } }")["errors"]
        assert found[0]["message"] == "field \"t_groups\" not found in type: 'query_root'"
    finally:
        srv.stop()


def test_group_by_and_order_by_as_variables_and_fragments(
    server: tuple[ServerProcess, str],
) -> None:
    """Whole `group_by` and `order_by` values from variables (each value its own plan),
    the group's selection through fragments; a key grouped but not selected still groups."""
    srv, url = server
    query = """
      query ($keys: [invoices_select_column!]!, $order: [invoices_groups_order_by!]) {
        invoices_groups(group_by: $keys, order_by: $order, limit: 3) { ...g }
      }
      fragment g on invoices_group { keys { ...k } aggregate { count } }
      fragment k on invoices_group_keys { billing_country }"""
    cases = [
        (
            {"keys": ["billing_country"], "order": [{"aggregate": {"count": "desc"}}]},
            "SELECT billing_country, count(*) AS n FROM invoices GROUP BY 1 "
            "ORDER BY 2 DESC, 1 ASC LIMIT 3",
        ),
        (
            {
                "keys": ["billing_city", "billing_country"],
                "order": {"keys": {"billing_country": "desc"}},
            },
            "SELECT billing_country, count(*) AS n FROM invoices "
            "GROUP BY billing_city, billing_country "
            "ORDER BY billing_country DESC, billing_city ASC LIMIT 3",
        ),
    ]
    for variables, sql in cases:
        got = data(srv, query, variables)["invoices_groups"]
        assert got == [
            {"keys": {"billing_country": r["billing_country"]}, "aggregate": {"count": r["n"]}}
            for r in fetch(url, sql)
        ], variables


def test_a_clashing_name_keeps_its_owner(pg_url: str) -> None:
    """A table `c_group` beside `c`: its object type keeps the name `c_group`, and `c`
    gets no groups field (`svc.schema.groups._clashes`); `c_group` gets its own, where a
    `json` column is no key."""
    srv = ServerProcess(create_database(pg_url), env=FEATURE)
    try:
        sql = (
            "create table c (a int); create table c_group (b int, j json); insert into c values (1)"
        )
        assert srv.query({"type": "run_sql", "args": {"sql": sql}}).status_code == 200
        for name in ("c", "c_group"):
            r = srv.query({"type": "track_table", "args": {"name": name}})
            assert r.status_code == 200, r.text
        roots = srv.graphql('{ __type(name: "query_root") { fields { name } } }')
        names = {f["name"] for f in roots["data"]["__type"]["fields"]}
        assert "c_groups" not in names and "c_group_groups" in names
        assert srv.graphql("{ c_group { b } c { a } }") == {
            "data": {"c_group": [], "c": [{"a": 1}]}
        }
        # json has no equality: not a key (`svc.schema.groups.UNGROUPABLE_TYPES`)
        found = srv.graphql("{ c_group_groups(group_by: [b, j]) { aggregate { count } } }")
        assert found["errors"][0]["extensions"] == {
            "code": "validation-failed",
            "path": "$.selectionSet.c_group_groups.args.group_by[1]",
        }
        assert 'column "j" of type "json" cannot be a grouping key' in found["errors"][0]["message"]
        found = srv.graphql("{ c_group_groups(group_by: [b]) { keys { j } } }")
        assert "not found in type: 'c_group_group_keys'" in found["errors"][0]["message"]
    finally:
        srv.stop()
