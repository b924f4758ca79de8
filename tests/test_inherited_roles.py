"""Inherited roles (Hasura's `inherited_roles`) on a real server and a real Postgres.

References followed (hasura/graphql-engine):
- `server/src-lib/Hasura/RQL/DDL/InheritedRoles.hs` (`add_inherited_role`: a role in its
  own set is `invalid-params`; `drop_inherited_role` of none is `not-exists`; unlike
  `resolveInheritedRole`, a parent without any permission is accepted and adds nothing);
- `Hasura/RQL/DDL/Schema/Cache/Permission.hs` (`orderRoles`: `found cycle(s) in roles:`,
  400 `cyclic-dependency`; `buildTablePermissions`: a permission of the role's own wins);
- `Hasura/RQL/Types/Table.hs` (`combinedSelPermInfoToSelPermInfo`: filters OR-ed, columns
  unioned with a case expression unless every parent grants them, the largest limit,
  aggregations if any parent allows them) and the docs page "Inherited roles";
- `server/tests-py/queries/graphql_query/permissions/inherited_roles/` (the corpus).

The property test draws rows, two parent roles with random row filters (Hasura boolean
expressions over `a`) and random column sets, and checks that the inherited role answers
exactly the union computed in Python from the parents' own answers: a row any parent
sees, a column any parent grants, and in each row a column's value only where a parent
granting it sees that row (else null), so no cell a parent would hide shows.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
import websockets
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import ServerProcess, create_database

SQL = """
CREATE TABLE item (id int PRIMARY KEY, a int NOT NULL, b int, c text NOT NULL, d text);
CREATE TABLE note (id int PRIMARY KEY, item_id int REFERENCES item(id), body text);
INSERT INTO item VALUES (1, 10, 100, 'one', 'x'), (2, 20, 200, 'two', 'y'),
  (3, 30, 300, 'three', 'z'), (4, 40, 400, 'four', 'w');
INSERT INTO note VALUES (1, 1, 'n1'), (2, 2, 'n2'), (3, 3, 'n3');
"""

COLUMNS = ("a", "b", "c", "d")


def q(s: ServerProcess, type_: str, args: Any) -> Any:
    return s.client.post("/v1/metadata", json={"type": type_, "args": args})


def gql(s: ServerProcess, query: str, role: str) -> Any:
    return s.graphql(query, headers={"X-Svc-Role": role})


def select(table: str, role: str, columns: list[str], filter_: Any, **extra: Any) -> Any:
    return {
        "type": "pg_create_select_permission",
        "args": {
            "table": table,
            "role": role,
            "permission": {"columns": columns, "filter": filter_, **extra},
        },
    }


@pytest.fixture(scope="module")
def srv(pg_url: str) -> Iterator[ServerProcess]:
    s = ServerProcess(create_database(pg_url))
    steps = [
        {"type": "run_sql", "args": {"sql": SQL}},
        {"type": "pg_track_table", "args": {"table": "item"}},
        {"type": "pg_track_table", "args": {"table": "note"}},
        {
            "type": "pg_create_object_relationship",
            "args": {
                "table": "note",
                "name": "item",
                "using": {"foreign_key_constraint_on": "item_id"},
            },
        },
        select("item", "low", ["id", "a", "b"], {"a": {"_lte": 20}}, limit=1),
        select(
            "item", "high", ["id", "a", "c"], {"a": {"_gte": 30}}, allow_aggregations=True, limit=3
        ),
        select("note", "low", ["id", "body"], {}),
        select("item", "empty", ["id"], {"id": {"_eq": -1}}),
        {"type": "add_inherited_role", "args": {"role_name": "both", "role_set": ["low", "high"]}},
        {
            "type": "add_inherited_role",
            "args": {"role_name": "nested", "role_set": ["both", "empty"]},
        },
    ]
    r = s.client.post("/v1/metadata", json={"type": "bulk", "args": steps})
    assert r.status_code == 200, r.text
    try:
        yield s
    finally:
        s.stop()


def test_union_of_rows_and_columns_with_cell_nulls(srv: ServerProcess) -> None:
    """Rows either parent sees; `b` only where `low` sees the row, `c` only where `high`
    does; `a` and `id` (granted by both) everywhere; the largest limit (3) applies."""
    body = gql(srv, "{ item(order_by: {id: asc}) { id a b c } }", "both")
    assert body == {
        "data": {
            "item": [
                {"id": 1, "a": 10, "b": 100, "c": None},
                {"id": 2, "a": 20, "b": 200, "c": None},
                {"id": 3, "a": 30, "b": None, "c": "three"},
            ]
        }
    }


def test_column_no_parent_grants_is_not_a_field(srv: ServerProcess) -> None:
    body = gql(srv, "{ item { d } }", "both")
    assert body["errors"][0]["extensions"]["code"] == "validation-failed"
    assert "field \"d\" not found in type: 'item'" in body["errors"][0]["message"]


def test_case_columns_are_nullable_in_the_schema(srv: ServerProcess) -> None:
    """`c` is NOT NULL in Postgres but nullable for the inherited role (a cell may be
    nulled); `a`, granted by every parent, keeps its non-null type."""
    body = gql(srv, '{ __type(name: "item") { fields { name type { kind name } } } }', "both")
    kinds = {f["name"]: f["type"]["kind"] for f in body["data"]["__type"]["fields"]}
    assert kinds["c"] == "SCALAR"
    assert kinds["a"] == "NON_NULL"


def test_aggregations_if_any_parent_allows(srv: ServerProcess) -> None:
    body = gql(srv, "{ item_aggregate { aggregate { count } } }", "both")
    assert "errors" not in body, body
    body = gql(srv, "{ item_aggregate { aggregate { count } } }", "low")
    assert body["errors"][0]["extensions"]["code"] == "validation-failed"


def test_relationship_target_uses_the_inherited_permission(srv: ServerProcess) -> None:
    """`note` is `low`'s only; its `item` object follows `both`'s permission on `item`."""
    body = gql(srv, "{ note(order_by: {id: asc}) { id item { id c } } }", "both")
    assert body == {
        "data": {
            "note": [
                {"id": 1, "item": {"id": 1, "c": None}},
                {"id": 2, "item": {"id": 2, "c": None}},
                {"id": 3, "item": {"id": 3, "c": "three"}},
            ]
        }
    }


def test_nested_inherited_role_and_parent_without_rows(srv: ServerProcess) -> None:
    """`nested` = {both, empty}: what `both` sees (`empty` admits no row, adds no
    column); a cell `both` hides stays hidden."""
    body = gql(srv, "{ item(order_by: {id: asc}) { id b c } }", "nested")
    assert body["data"]["item"] == [
        {"id": 1, "b": 100, "c": None},
        {"id": 2, "b": 200, "c": None},
        {"id": 3, "b": None, "c": "three"},
    ]


def test_own_permission_overrides_the_inherited_one(srv: ServerProcess) -> None:
    r = q(
        srv, "pg_create_select_permission", select("item", "both", ["id", "d"], {"id": 4})["args"]
    )
    assert r.status_code == 200, r.text
    try:
        body = gql(srv, "{ item { id d } }", "both")
        assert body == {"data": {"item": [{"id": 4, "d": "w"}]}}
    finally:
        r = q(srv, "pg_drop_select_permission", {"table": "item", "role": "both"})
        assert r.status_code == 200, r.text


def test_operations_errors_and_export(srv: ServerProcess) -> None:
    r = q(srv, "add_inherited_role", {"role_name": "x", "role_set": ["x", "low"]})
    assert r.status_code == 400 and r.json()["code"] == "invalid-params", r.text
    r = q(srv, "drop_inherited_role", {"role_name": "nope"})
    assert r.status_code == 400 and r.json()["code"] == "not-exists", r.text
    assert r.json()["error"] == '"nope" inherited role doesn\'t exist'
    # a role without any permission is a parent that adds nothing
    r = q(srv, "add_inherited_role", {"role_name": "ghostly", "role_set": ["ghost", "low"]})
    assert r.status_code == 200, r.text
    assert gql(srv, "{ item { id b } }", "ghostly") == {"data": {"item": [{"id": 1, "b": 100}]}}
    assert q(srv, "drop_inherited_role", {"role_name": "ghostly"}).status_code == 200
    exported = q(srv, "export_metadata", {}).json()
    assert {"role_name": "both", "role_set": ["low", "high"]} in exported["inherited_roles"]
    assert not any(r["role_name"] == "ghostly" for r in exported["inherited_roles"])
    # dropped: the role gets nothing
    assert (
        q(srv, "add_inherited_role", {"role_name": "tmp", "role_set": ["low"]}).status_code == 200
    )
    assert gql(srv, "{ item(order_by: {id: asc}) { id } }", "tmp") == {
        "data": {"item": [{"id": 1}]}
    }
    assert q(srv, "drop_inherited_role", {"role_name": "tmp"}).status_code == 200
    assert gql(srv, "{ item { id } }", "tmp")["errors"][0]["extensions"]["code"] == (
        "validation-failed"
    )
    inconsistent = q(srv, "get_inconsistent_metadata", {}).json()
    assert inconsistent["is_consistent"], inconsistent


def test_cycles_are_refused_with_the_reference_message(srv: ServerProcess) -> None:
    """The corpus's cycle check (`cyclic_roles_fail.yaml`, built in Python there)."""
    before = q(srv, "export_metadata", {}).json()
    md = {
        **before,
        "inherited_roles": [
            *before["inherited_roles"],
            {"role_name": "intermediate_circular_role_1", "role_set": ["both", "circular_role"]},
            {
                "role_name": "intermediate_circular_role_2",
                "role_set": ["intermediate_circular_role_1", "low"],
            },
            {"role_name": "circular_role", "role_set": ["intermediate_circular_role_2", "high"]},
        ],
    }
    r = srv.client.post("/v1/query", json={"type": "replace_metadata", "args": {"metadata": md}})
    assert r.status_code == 400, r.text
    assert r.json()["code"] == "cyclic-dependency"
    assert r.json()["error"] == (
        'found cycle(s) in roles: ["circular_role","intermediate_circular_role_2",'
        '"intermediate_circular_role_1","circular_role"]'
    )
    assert q(srv, "export_metadata", {}).json() == before
    r = q(srv, "add_inherited_role", {"role_name": "low2", "role_set": ["nested"]})
    assert r.status_code == 200, r.text
    r = q(srv, "add_inherited_role", {"role_name": "both", "role_set": ["low", "low2"]})
    assert r.status_code == 400 and r.json()["code"] == "cyclic-dependency", r.text
    assert q(srv, "drop_inherited_role", {"role_name": "low2"}).status_code == 200


def test_explain_shows_the_case_expression(srv: ServerProcess) -> None:
    r = srv.client.post(
        "/v1/graphql/explain",
        json={"query": {"query": "{ item { id b } }"}, "user": {"x-svc-role": "both"}},
    )
    assert r.status_code == 200, r.text
    (entry,) = r.json()
    assert "CASE WHEN" in entry["sql"] and "ELSE NULL END" in entry["sql"], entry["sql"]


def test_live_query_over_websocket_uses_the_same_rules(srv: ServerProcess) -> None:
    """A subscription (live query) of the inherited role answers what the query does."""

    async def run() -> Any:
        url = srv.url.replace("http", "ws", 1) + "/v1/graphql"
        async with websockets.connect(url, subprotocols=["graphql-ws"]) as ws:
            init = {"type": "connection_init", "payload": {"headers": {"X-Svc-Role": "both"}}}
            await ws.send(json.dumps(init))
            query = "subscription { item(order_by: {id: asc}) { id b c } }"
            await ws.send(json.dumps({"id": "1", "type": "start", "payload": {"query": query}}))
            while True:
                msg = json.loads(await asyncio.wait_for(ws.recv(), 10))
                if msg["type"] in ("data", "error"):
                    return msg["payload"]

    payload = asyncio.run(run())
    assert payload == {
        "data": {
            "item": [
                {"id": 1, "b": 100, "c": None},
                {"id": 2, "b": 200, "c": None},
                {"id": 3, "b": None, "c": "three"},
            ]
        }
    }


def test_write_permissions_inherited_when_parents_agree(srv: ServerProcess) -> None:
    """Inserts: `low`'s alone is `both`'s; a different one for `high` conflicts (the
    reference's `CheckPermission`): `both` has none, listed with the reference's reason
    but not refused (`ConflictingInheritedPermission` has no object ids, so the
    reference's new-inconsistency check never counts it), until `both` has its own."""
    perm = {"table": "note", "role": "low", "permission": {"columns": ["id"], "check": {}}}
    assert q(srv, "pg_create_insert_permission", perm).status_code == 200
    try:
        m = srv.graphql(
            "mutation { insert_note(objects: [{id: 50}]) { affected_rows } }",
            headers={"X-Svc-Role": "both"},
        )
        assert m == {"data": {"insert_note": {"affected_rows": 1}}}
        other = {**perm, "role": "high", "permission": {"columns": ["id", "body"], "check": {}}}
        assert q(srv, "pg_create_insert_permission", other).status_code == 200
        conflict = q(srv, "get_inconsistent_metadata", {}).json()["inconsistent_objects"]
        assert conflict == [
            {
                "reason": "Could not inherit permission for the role 'both' for the entity: "
                "'insert permission, table: note, source: 'default''",
                "name": "both",
                "type": "inherited role permission inconsistency",
                "entity": {"permission_type": "insert", "source": "default", "table": "note"},
            }
        ]
        gone = srv.graphql(
            "mutation { insert_note(objects: [{id: 51}]) { affected_rows } }",
            headers={"X-Svc-Role": "both"},
        )
        assert gone["errors"][0]["extensions"]["code"] == "validation-failed"
        # `replace_metadata` without `allow_inconsistent_metadata` refuses it (the
        # reference's `buildSchemaCacheStrict`: 400 `unexpected`, each in `internal`)
        exported = q(srv, "export_metadata", {}).json()
        strict = q(srv, "replace_metadata", exported)
        assert strict.status_code == 400, strict.text
        assert strict.json()["code"] == "unexpected"
        assert strict.json()["error"] == "cannot continue due to inconsistent metadata"
        assert strict.json()["internal"] == conflict
        lenient = {"metadata": exported, "allow_inconsistent_metadata": True}
        assert q(srv, "replace_metadata", lenient).status_code == 200
        own = {**perm, "role": "both", "permission": {"columns": ["id"], "check": {}}}
        assert q(srv, "pg_create_insert_permission", own).status_code == 200
        assert q(srv, "get_inconsistent_metadata", {}).json()["is_consistent"]
    finally:
        for role in ("low", "high", "both"):
            q(srv, "pg_drop_insert_permission", {"table": "note", "role": role})
        srv.client.post(
            "/v1/query", json={"type": "run_sql", "args": {"sql": "DELETE FROM note WHERE id = 50"}}
        )


# -- property: the inherited role's answer is the union of its parents' -------------------

OPS = ("_eq", "_neq", "_gt", "_lt", "_gte", "_lte")


@st.composite
def row_filters(draw: st.DrawFn) -> Any:
    """A Hasura boolean expression over `a` and `id` (`{}`: every row)."""
    kind = draw(st.sampled_from(["all", "cmp", "in", "or", "and"]))
    if kind == "all":
        return {}
    if kind == "in":
        return {"id": {"_in": draw(st.lists(st.integers(0, 12), max_size=5))}}

    def cmp() -> Any:
        col = draw(st.sampled_from(["a", "id"]))
        return {col: {draw(st.sampled_from(OPS)): draw(st.integers(0, 12))}}

    if kind == "cmp":
        return cmp()
    return {f"_{kind}": [cmp(), cmp()]}


@st.composite
def scenarios(draw: st.DrawFn) -> Any:
    ids = draw(st.lists(st.integers(1, 12), min_size=1, max_size=8, unique=True))
    rows = [
        {
            "id": i,
            "a": draw(st.integers(0, 12)),
            "b": draw(st.one_of(st.none(), st.integers(0, 99))),
            "c": draw(st.text("xyz", min_size=1, max_size=3)),
            "d": draw(st.one_of(st.none(), st.text("pq", max_size=2))),
        }
        for i in ids
    ]
    parents = [
        (
            draw(row_filters()),
            sorted(draw(st.sets(st.sampled_from(COLUMNS), min_size=1))),
        )
        for _ in range(2)
    ]
    return rows, parents


def _sql_value(v: Any) -> str:
    if v is None:
        return "NULL"
    return str(v) if isinstance(v, int) else "'" + v + "'"


@pytest.fixture(scope="module")
def prop_srv(pg_url: str) -> Iterator[ServerProcess]:
    s = ServerProcess(create_database(pg_url))
    steps = [
        {"type": "run_sql", "args": {"sql": SQL}},
        {"type": "pg_track_table", "args": {"table": "item"}},
        select("item", "p1", ["id"], {}),
        select("item", "p2", ["id"], {}),
        {"type": "add_inherited_role", "args": {"role_name": "kid", "role_set": ["p1", "p2"]}},
    ]
    r = s.client.post("/v1/metadata", json={"type": "bulk", "args": steps})
    assert r.status_code == 200, r.text
    try:
        yield s
    finally:
        s.stop()


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(scenario=scenarios())
def test_inherited_answer_is_the_union_of_the_parents(
    prop_srv: ServerProcess, scenario: Any
) -> None:
    rows, parents = scenario
    values = ", ".join(
        "(" + ", ".join(_sql_value(r[k]) for k in ("id", "a", "b", "c", "d")) + ")" for r in rows
    )
    steps: list[Any] = [
        {
            "type": "run_sql",
            "args": {
                "sql": f"DELETE FROM note; DELETE FROM item; INSERT INTO item VALUES {values};"
            },
        },
    ]
    for role, (filter_, columns) in zip(("p1", "p2"), parents, strict=True):
        steps.append({"type": "pg_drop_select_permission", "args": {"table": "item", "role": role}})
        steps.append(select("item", role, ["id", *columns], filter_))
    r = prop_srv.client.post("/v1/metadata", json={"type": "bulk", "args": steps})
    assert r.status_code == 200, r.text

    def answer(role: str, columns: list[str]) -> dict[int, dict[str, Any]]:
        fields = " ".join(["id", *columns])
        body = gql(prop_srv, f"{{ item(order_by: {{id: asc}}) {{ {fields} }} }}", role)
        assert "errors" not in body, (role, body)
        return {row["id"]: row for row in body["data"]["item"]}

    seen = [answer(role, cols) for role, (_, cols) in zip(("p1", "p2"), parents, strict=True)]
    union_columns = [c for c in COLUMNS if any(c in cols for _, cols in parents)]
    expected: dict[int, dict[str, Any]] = {}
    for row_id in sorted(set(seen[0]) | set(seen[1])):
        row: dict[str, Any] = {"id": row_id}
        for col in union_columns:
            shown = [s[row_id][col] for s in seen if row_id in s and col in s[row_id]]
            row[col] = shown[0] if shown else None
        expected[row_id] = row
    assert answer("kid", union_columns) == expected


# -- functions and actions ----------------------------------------------------------------


def test_function_and_action_permissions_are_inherited(pg_url: str) -> None:
    """The reference's rule for function and action permissions of an inherited role
    (`mkBooleanPermissionMap`, and the note "Roles Inheritance" of
    `Hasura/RQL/DDL/Schema/Cache.hs`: "actions and custom function permissions can be
    thought of as a boolean"): the role has one when any role it inherits from, at any
    depth, has one. Functions under `SVC_GRAPHQL_INFER_FUNCTION_PERMISSIONS=false`, so
    only explicit function permissions count."""
    env = {"SVC_GRAPHQL_INFER_FUNCTION_PERMISSIONS": "false"}
    s = ServerProcess(create_database(pg_url), env=env)
    fn_sql = (
        "CREATE FUNCTION items_over(lo int) RETURNS SETOF item AS "
        "$$ SELECT * FROM item WHERE a > lo $$ LANGUAGE sql STABLE"
    )
    action = {
        "name": "ping",
        "definition": {
            "kind": "synchronous",
            "type": "query",
            "arguments": [],
            "output_type": "Pong",
            "handler": "http://127.0.0.1:9/ping",
        },
    }
    steps = [
        {"type": "run_sql", "args": {"sql": SQL}},
        {"type": "run_sql", "args": {"sql": fn_sql}},
        {"type": "pg_track_table", "args": {"table": "item"}},
        {"type": "pg_track_function", "args": {"function": "items_over"}},
        select("item", "low", ["id", "a"], {}),
        select("item", "high", ["id", "a"], {}),
        {
            "type": "pg_create_function_permission",
            "args": {"function": "items_over", "role": "high"},
        },
        {
            "type": "set_custom_types",
            "args": {"objects": [{"name": "Pong", "fields": [{"name": "ok", "type": "Boolean"}]}]},
        },
        {"type": "create_action", "args": action},
        {"type": "create_action_permission", "args": {"action": "ping", "role": "low"}},
        {"type": "add_inherited_role", "args": {"role_name": "both", "role_set": ["low", "high"]}},
        {"type": "add_inherited_role", "args": {"role_name": "nested", "role_set": ["both"]}},
    ]
    try:
        r = s.client.post("/v1/metadata", json={"type": "bulk", "args": steps})
        assert r.status_code == 200, r.text

        def roots(role: str) -> set[str]:
            body = gql(s, "{ __schema { queryType { fields { name } } } }", role)
            return {f["name"] for f in body["data"]["__schema"]["queryType"]["fields"]}

        assert "items_over" not in roots("low") and "ping" in roots("low")
        assert "items_over" in roots("high") and "ping" not in roots("high")
        for role in ("both", "nested"):
            assert {"items_over", "ping"} <= roots(role), role
            called = gql(s, "{ items_over(args: {lo: 20}) { id } }", role)
            assert called == {"data": {"items_over": [{"id": 3}, {"id": 4}]}}, role
    finally:
        s.stop()
