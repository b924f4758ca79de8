"""An inherited role reads a column a parent grants in some rows only as redacted
everywhere, not just in its selection set.

Reference followed: hasura/graphql-engine `server/lib/api-tests/src/Test/Auth/
Authorization/InheritedRoles/ColumnRedactionSpec.hs` (its schema, data, permissions and
expected answers, translated): filters, ordering, `distinct_on`, aggregates, `count`
over columns, aggregation predicates (their `arguments` and `filter`), ordering by a
relationship's aggregate and streaming cursors all read the redacted value
(`CASE WHEN <a granting parent's filter> THEN column ELSE NULL END`), so a request
cannot learn a hidden cell by filtering, sorting or aggregating on it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
import websockets

from tests.support import ServerProcess, create_database

SQL = """
CREATE TABLE manager (id int PRIMARY KEY, first_name text, last_name text);
CREATE TABLE employee (
  id int PRIMARY KEY, first_name text, last_name text, nationality text,
  monthly_salary float8, engineering_manager_id int REFERENCES manager(id),
  hr_manager_id int REFERENCES manager(id));
INSERT INTO manager VALUES (1, 'Ryan', 'Ray'), (2, 'Martin', 'Graham'), (3, 'Althea', 'Weiss'),
  (4, 'Bec', 'Vo');
INSERT INTO employee VALUES
  (1, 'David', 'Holden', 'Australian', 5000, 1, 3),
  (2, 'Grant', 'Smith', 'Australian', 6000, 1, 4),
  (3, 'Xin', 'Cheng', 'Chinese', 5500, 2, 3),
  (4, 'Sarah', 'Smith', 'British', 4000, 2, 4);
CREATE FUNCTION employee_yearly_salary(employee_row employee) RETURNS float8 AS $$
  SELECT employee_row.monthly_salary * 12
$$ LANGUAGE sql STABLE;
"""


def _select(table: str, role: str, columns: list[str], filter_: Any, **extra: Any) -> Any:
    permission = {"columns": columns, "filter": filter_, "allow_aggregations": True, **extra}
    return {
        "type": "pg_create_select_permission",
        "args": {"table": table, "role": role, "permission": permission},
    }


def _rel(kind: str, table: str, name: str, using: Any) -> Any:
    return {
        "type": f"pg_create_{kind}_relationship",
        "args": {"table": table, "name": name, "using": using},
    }


NAMES = ["id", "first_name", "last_name"]
STEPS = [
    {"type": "run_sql", "args": {"sql": SQL}},
    {"type": "pg_track_table", "args": {"table": "manager"}},
    {"type": "pg_track_table", "args": {"table": "employee"}},
    {
        "type": "pg_add_computed_field",
        "args": {
            "table": "employee",
            "name": "yearly_salary",
            "definition": {"function": "employee_yearly_salary"},
        },
    },
    _rel(
        "array",
        "manager",
        "employees_by_id_to_engineering_manager_id",
        {"foreign_key_constraint_on": {"table": "employee", "column": "engineering_manager_id"}},
    ),
    _rel(
        "array",
        "manager",
        "employees_by_id_to_hr_manager_id",
        {"foreign_key_constraint_on": {"table": "employee", "column": "hr_manager_id"}},
    ),
    _select("employee", "employee_public_info", NAMES, {}),
    _select(
        "employee",
        "employee_private_info",
        [*NAMES, "monthly_salary"],
        {"id": "X-Svc-Employee-Id"},
        computed_fields=["yearly_salary"],
    ),
    {
        "type": "add_inherited_role",
        "args": {
            "role_name": "employee",
            "role_set": ["employee_public_info", "employee_private_info"],
        },
    },
    _select("manager", "all_managers", NAMES, {}),
    _select("employee", "all_managers", [*NAMES, "engineering_manager_id", "hr_manager_id"], {}),
    _select(
        "employee",
        "manager_employee_private_info",
        [*NAMES, "nationality", "monthly_salary", "engineering_manager_id", "hr_manager_id"],
        {"hr_manager_id": "X-Svc-Manager-Id"},
        computed_fields=["yearly_salary"],
    ),
    {
        "type": "add_inherited_role",
        "args": {
            "role_name": "hr_manager",
            "role_set": ["all_managers", "manager_employee_private_info"],
        },
    },
]
XIN = {"X-Svc-Role": "employee", "X-Svc-Employee-Id": "3"}
ALTHEA = {"X-Svc-Role": "hr_manager", "X-Svc-Manager-Id": "3"}


@pytest.fixture(scope="module")
def srv(pg_url: str) -> Iterator[ServerProcess]:
    s = ServerProcess(create_database(pg_url, prefix="redact"))
    r = s.client.post("/v1/metadata", json={"type": "bulk", "args": STEPS})
    assert r.status_code == 200, r.text
    try:
        yield s
    finally:
        s.stop()


def data(srv: ServerProcess, query: str, headers: dict[str, str]) -> Any:
    body = srv.graphql(query, headers=headers)
    assert "errors" not in body, body
    return body["data"]


def test_selection_sets_are_redacted(srv: ServerProcess) -> None:
    q = "{ employee(order_by: {id: asc}) { id monthly_salary yearly_salary } }"
    assert data(srv, q, XIN)["employee"] == [
        {"id": 1, "monthly_salary": None, "yearly_salary": None},
        {"id": 2, "monthly_salary": None, "yearly_salary": None},
        {"id": 3, "monthly_salary": 5500, "yearly_salary": 66000},
        {"id": 4, "monthly_salary": None, "yearly_salary": None},
    ]


def test_aggregates_read_redacted_values(srv: ServerProcess) -> None:
    q = """{ employee_aggregate { aggregate {
      count
      sum { monthly_salary }
      max { monthly_salary }
      count_distinct_salary: count(distinct: true, columns: [monthly_salary])
      count_not_distinct_salary: count(distinct: false, columns: [monthly_salary])
    } } }"""
    assert data(srv, q, XIN)["employee_aggregate"]["aggregate"] == {
        "count": 4,
        "sum": {"monthly_salary": 5500},
        "max": {"monthly_salary": 5500},
        "count_distinct_salary": 1,
        "count_not_distinct_salary": 1,
    }


@pytest.mark.parametrize("field", ["monthly_salary", "yearly_salary"])
def test_ordering_reads_redacted_values(srv: ServerProcess, field: str) -> None:
    q = "{ employee(order_by: [{" + field + ": desc}, {id: desc}]) { id } }"
    assert [r["id"] for r in data(srv, q, XIN)["employee"]] == [4, 2, 1, 3]


def test_ordering_by_an_aggregate_reads_redacted_values(srv: ServerProcess) -> None:
    rel = "employees_by_id_to_engineering_manager_id_aggregate"
    q = (
        "{ manager(order_by: [{" + rel + ": {sum: {monthly_salary: desc}}}, {id: asc}]) "
        "{ id " + rel + " { aggregate { sum { monthly_salary } } } } }"
    )
    got = data(srv, q, ALTHEA)["manager"]
    assert [(m["id"], m[rel]["aggregate"]["sum"]["monthly_salary"]) for m in got] == [
        (3, None),
        (4, None),
        (2, 5500),
        (1, 5000),
    ]


def test_distinct_on_reads_redacted_values(srv: ServerProcess) -> None:
    q = (
        "{ employee(distinct_on: [nationality], order_by: [{nationality: asc}, {id: asc}]) "
        "{ id nationality } }"
    )
    assert data(srv, q, ALTHEA)["employee"] == [
        {"id": 1, "nationality": "Australian"},
        {"id": 3, "nationality": "Chinese"},
        {"id": 2, "nationality": None},
    ]


@pytest.mark.parametrize(
    "where", ["{monthly_salary: {_eq: 5000}}", "{yearly_salary: {_eq: 60000}}"]
)
def test_filters_read_redacted_values(srv: ServerProcess, where: str) -> None:
    assert data(srv, "{ employee(where: " + where + ") { id } }", XIN)["employee"] == []


@pytest.mark.parametrize(
    "predicate",
    [
        "max: {arguments: monthly_salary, predicate: {_gte: 5500}}",
        "count: {predicate: {_eq: 1}, filter: {monthly_salary: {_gte: 5500}}}",
        "count: {predicate: {_eq: 1}, filter: {yearly_salary: {_gte: 66000}}}",
    ],
)
def test_aggregation_predicates_read_redacted_values(srv: ServerProcess, predicate: str) -> None:
    where = "{employees_by_id_to_hr_manager_id_aggregate: {" + predicate + "}}"
    got = data(srv, "{ manager(where: " + where + ") { id } }", ALTHEA)["manager"]
    assert got == [{"id": 3}]


def test_admin_and_parents_are_not_redacted(srv: ServerProcess) -> None:
    """The same requests by a role with its own permission read the plain values."""
    q = "{ employee(where: {monthly_salary: {_eq: 5000}}) { id } }"
    assert data(srv, q, {})["employee"] == [{"id": 1}]
    private = {"X-Svc-Role": "manager_employee_private_info", "X-Svc-Manager-Id": "4"}
    assert data(srv, "{ employee { id } }", private)["employee"] == [{"id": 2}, {"id": 4}]


def test_a_stream_skips_rows_whose_cursor_is_redacted(srv: ServerProcess) -> None:
    async def run() -> Any:
        url = srv.url.replace("http", "ws", 1) + "/v1/graphql"
        async with websockets.connect(url, subprotocols=["graphql-transport-ws"]) as ws:
            init = {"type": "connection_init", "payload": {"headers": ALTHEA}}
            await ws.send(json.dumps(init))
            assert json.loads(await asyncio.wait_for(ws.recv(), 10))["type"] == "connection_ack"
            query = (
                "subscription { employee_stream(batch_size: 10, cursor: {initial_value: "
                "{monthly_salary: 0}, ordering: ASC}) { id monthly_salary } }"
            )
            await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": {"query": query}}))
            msg = json.loads(await asyncio.wait_for(ws.recv(), 10))
            return msg["payload"]

    assert asyncio.run(run()) == {
        "data": {
            "employee_stream": [
                {"id": 1, "monthly_salary": 5000},
                {"id": 3, "monthly_salary": 5500},
            ]
        }
    }
