"""Grouped aggregates (`svc.plan.groups`): a `having` comparison of an aggregate compares
with the aggregate's own Postgres result type (sum of `money` is `money`, of `int4`
`bigint`, of `int8` `numeric`, of `float4` `real`, …; `pg_aggregate`), for every numeric
column type, each answer checked against the same `GROUP BY … HAVING` run by Postgres."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import ServerProcess, create_database

SCHEMA = """
CREATE TABLE m (id int PRIMARY KEY, g int NOT NULL, s smallint, i int, b bigint,
  r real, d float8, n numeric, c money);
INSERT INTO m VALUES
  (1, 1, 1, 1, 9007199254740993, 0.5, 0.25, 1.5, 1.25),
  (2, 1, 2, 2, 1, 1.5, 0.5, 2.5, 2.5),
  (3, 2, 3, 30, 5, 4.5, 10.75, 0.5, 0.5),
  (4, 3, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
CREATE TABLE p (id int PRIMARY KEY);
"""
FEATURE = {"SVC_GRAPHQL_EXPERIMENTAL_FEATURES": "group_by_aggregations"}


@pytest.fixture(scope="module")
def srv(pg_url: str) -> Iterator[ServerProcess]:
    s = ServerProcess(create_database(pg_url), env={**FEATURE, "SVC_GRAPHQL_SERVER_WORKERS": "1"})
    try:
        steps = [
            {"type": "run_sql", "args": {"sql": SCHEMA}},
            {"type": "track_table", "args": "m"},
            {"type": "track_table", "args": "p"},
            {
                "type": "create_array_relationship",
                "args": {
                    "table": "p",
                    "name": "ms",
                    "using": {
                        "manual_configuration": {"remote_table": "m", "column_mapping": {"id": "g"}}
                    },
                },
            },
        ]
        r = s.query({"type": "bulk", "args": steps})
        assert r.status_code == 200, r.text
        yield s
    finally:
        s.stop()


def _groups(srv: ServerProcess, op: str, column: str, value: Any) -> Any:
    literal = f'"{value}"' if isinstance(value, str) else str(value)
    q = f"""{{ m_groups(group_by: [g], having: {{{op}: {{{column}: {{_gt: {literal}}}}}}},
      order_by: [{{keys: {{g: asc}}}}]) {{ keys {{ g }} }} }}"""
    r = srv.client.post("/v1/graphql", json={"query": q})
    assert r.status_code == 200, r.text
    body = r.json()
    assert "errors" not in body, (op, column, body)
    return [group["keys"]["g"] for group in body["data"]["m_groups"]]


def _oracle(srv: ServerProcess, op: str, column: str, value: Any, pg_type: str) -> Any:
    sql = f"SELECT g FROM m GROUP BY g HAVING {op}({column}) > '{value}'::{pg_type} ORDER BY g"
    r = srv.query({"type": "run_sql", "args": {"sql": sql}})
    assert r.status_code == 200, r.text
    return [int(row[0]) for row in r.json()["result"][1:]]


@pytest.mark.parametrize(
    ("column", "value", "pg_type"),
    [
        ("s", 2, "bigint"),
        ("i", 3, "bigint"),
        ("b", "9007199254740993", "numeric"),
        ("r", 2.5, "real"),
        ("d", 0.7, "float8"),
        ("n", "2.5", "numeric"),
        ("c", "1", "money"),
        ("c", "$3.74", "money"),
    ],
)
def test_having_sum_compares_with_the_sum_type(
    srv: ServerProcess, column: str, value: Any, pg_type: str
) -> None:
    expected = _oracle(srv, "sum", column, value, pg_type)
    assert _groups(srv, "sum", column, value) == expected


@pytest.mark.parametrize("column", ["s", "i", "b", "r", "d", "n"])
def test_having_avg_compares_as_float(srv: ServerProcess, column: str) -> None:
    expected = _oracle(srv, "avg", column, 1.2, "float8")
    assert _groups(srv, "avg", column, 1.2) == expected


def test_relay_schema_has_no_groups(srv: ServerProcess) -> None:
    """The Relay API (`/v1beta1/relay`) offers no grouped aggregates even with the feature
    on (the reference's Relay schema has none): neither `x_groups` nor `<rel>_groups`;
    `/v1/graphql` has both."""
    q = """{ q: __type(name: "query_root") { fields { name } }
      p: __type(name: "p") { fields { name } } }"""
    names: dict[str, set[str]] = {}
    for path in ("/v1/graphql", "/v1beta1/relay"):
        r = srv.client.post(path, json={"query": q})
        answer = r.json()["data"]
        names[path] = {f["name"] for t in ("q", "p") for f in answer[t]["fields"]}
    assert {"m_groups", "ms_groups"} <= names["/v1/graphql"]
    assert {"m_connection", "ms_connection"} <= names["/v1beta1/relay"]
    assert not any(n.endswith("_groups") for n in names["/v1beta1/relay"]), names
