"""Enum tables (Hasura's `is_enum`) on a real server and a real Postgres.

References followed (hasura/graphql-engine):
- `server/src-lib/Hasura/RQL/DDL/Schema/Enum.hs` and its successor
  `Hasura/Backends/Postgres/DDL/Table.hs` (`fetchAndValidateEnumValues`: the rules, the
  messages with `•` bullets and a typographic apostrophe, `resolveEnumReferences`);
- `Hasura/GraphQL/Schema/Column.hs` (`columnParser`, `ColumnEnumReference`: the enum type
  wherever a column value is read or written) and `Hasura/GraphQL/Schema/Common.hs`
  (`mkEnumTypeName`: `<table or custom name>_enum`);
- `Hasura/Backends/Postgres/Instances/Schema.hs` (`comparisonExps`: only the equality
  operators for an enum reference) and `Hasura/GraphQL/Schema/Select.hs`
  (`onlyComparableCols`: no max/min of an enum column);
- `server/tests-py/queries/v1/set_table_is_enum/` (reload behaviour, inconsistent objects).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from svc.cli.compile import compile_metadata, introspect
from svc.ir.enums import problems
from svc.metadata.model import metadata_from_obj
from tests.support import ServerProcess, create_database

SQL = """
CREATE TABLE colors (value text PRIMARY KEY, comment text);
INSERT INTO colors VALUES ('red', '#FF0000'), ('green', '#00FF00'), ('blue', '#0000FF');
CREATE TABLE users (
  id serial PRIMARY KEY, name text NOT NULL,
  favorite_color text NOT NULL REFERENCES colors);
INSERT INTO users (name, favorite_color) VALUES ('Alyssa', 'red'), ('Ben', 'blue');
CREATE TABLE sizes (size text PRIMARY KEY);
INSERT INTO sizes VALUES ('small'), ('large');
CREATE TABLE shirts (id serial PRIMARY KEY, size text REFERENCES sizes);
INSERT INTO shirts (size) VALUES ('small');
"""


def q(s: ServerProcess, type_: str, args: Any, url: str = "/v1/query") -> Any:
    return s.client.post(url, json={"type": type_, "args": args})


def gql(s: ServerProcess, query: str, variables: Any = None, role: str | None = None) -> Any:
    headers = {"X-Svc-Role": role} if role else {}
    return s.graphql(query, variables, headers=headers)


@pytest.fixture(scope="module")
def srv(pg_url: str) -> Iterator[ServerProcess]:
    s = ServerProcess(create_database(pg_url))
    r = q(
        s,
        "bulk",
        [
            {"type": "run_sql", "args": {"sql": SQL}},
            {"type": "track_table", "args": {"table": "colors", "is_enum": True}},
            {"type": "track_table", "args": "users"},
            # the reference's older name of track_table version 1, then the flag alone
            {"type": "add_existing_table_or_view", "args": "sizes"},
            {"type": "set_table_is_enum", "args": {"table": "sizes", "is_enum": True}},
            {"type": "track_table", "args": "shirts"},
            {
                "type": "create_select_permission",
                "args": {
                    "table": "users",
                    "role": "anonymous",
                    "permission": {"columns": ["id", "name", "favorite_color"], "filter": {}},
                },
            },
        ],
    )
    assert r.status_code == 200, r.text
    try:
        yield s
    finally:
        s.stop()


def type_of(s: ServerProcess, name: str, role: str | None = None) -> Any:
    query = (
        '{ __type(name: "' + name + '") { name kind enumValues { name description } '
        "fields { name type { name ofType { name } } } "
        "inputFields { name type { name ofType { name ofType { name ofType { name } } } } } } }"
    )
    body = gql(s, query, role=role)
    assert "errors" not in body, body
    return body["data"]["__type"]


def test_enum_type_and_column_types(srv: ServerProcess) -> None:
    """`colors_enum` holds the keys, described by the comments, in name order; the
    referencing column takes it in output, `where`, insert and `_set` inputs."""
    enum = type_of(srv, "colors_enum")
    assert enum["kind"] == "ENUM"
    assert enum["enumValues"] == [
        {"name": "blue", "description": "#0000FF"},
        {"name": "green", "description": "#00FF00"},
        {"name": "red", "description": "#FF0000"},
    ]
    users = {f["name"]: f["type"] for f in type_of(srv, "users")["fields"]}
    assert users["favorite_color"]["ofType"]["name"] == "colors_enum"
    assert [f["name"] for f in type_of(srv, "users")["fields"]] == ["favorite_color", "id", "name"]
    where = {f["name"]: f["type"] for f in type_of(srv, "users_bool_exp")["inputFields"]}
    assert where["favorite_color"]["name"] == "colors_enum_comparison_exp"
    ops = type_of(srv, "colors_enum_comparison_exp")["inputFields"]
    assert [o["name"] for o in ops] == ["_eq", "_in", "_is_null", "_neq", "_nin"]
    for input_type in ("users_insert_input", "users_set_input"):
        fields = {f["name"]: f["type"] for f in type_of(srv, input_type)["inputFields"]}
        assert fields["favorite_color"]["name"] == "colors_enum", input_type
    # a nullable reference and an enum table without a comment column
    shirts = {f["name"]: f["type"] for f in type_of(srv, "shirts")["fields"]}
    assert shirts["size"]["name"] == "sizes_enum"
    assert [v["description"] for v in type_of(srv, "sizes_enum")["enumValues"]] == [None, None]
    # no max/min over an enum column (the reference's `onlyComparableCols`)
    maxes = type_of(srv, "users_max_fields")["fields"]
    assert [f["name"] for f in maxes] == ["id", "name"]
    # the enum table's own key stays text
    colors = {f["name"]: f["type"] for f in type_of(srv, "colors")["fields"]}
    assert colors["value"]["ofType"]["name"] == "String"


def test_select_where_and_variables(srv: ServerProcess) -> None:
    """Enum literals and variables filter; values print as plain text."""
    body = gql(srv, "{ users(order_by: {id: asc}) { name favorite_color } }")
    assert body == {
        "data": {
            "users": [
                {"name": "Alyssa", "favorite_color": "red"},
                {"name": "Ben", "favorite_color": "blue"},
            ]
        }
    }
    query = """query ($c: colors_enum!, $cs: [colors_enum!]) {
      eq: users(where: {favorite_color: {_eq: $c}}) { name }
      in: users(where: {favorite_color: {_in: $cs}}, order_by: {id: asc}) { name }
      nin: users(where: {favorite_color: {_nin: [red]}}) { name }
    }"""
    body = gql(srv, query, {"c": "blue", "cs": ["red", "blue"]})
    assert body["data"] == {
        "eq": [{"name": "Ben"}],
        "in": [{"name": "Alyssa"}, {"name": "Ben"}],
        "nin": [{"name": "Ben"}],
    }
    for bad in (
        '{ users(where: {favorite_color: {_eq: "red"}}) { name } }',
        "{ users(where: {favorite_color: {_eq: purple}}) { name } }",
    ):
        errors = gql(srv, bad)["errors"]
        assert errors[0]["extensions"]["code"] == "validation-failed", bad
    errors = gql(srv, query, {"c": "purple"})["errors"]
    assert errors[0]["extensions"]["code"] == "validation-failed"


def test_insert_and_update_with_enum_values(srv: ServerProcess) -> None:
    """Insert and update take enum values (literals and variables); Postgres's foreign
    key still guards the data."""
    body = gql(
        srv,
        'mutation ($c: colors_enum!) { insert_users_one(object: {name: "Cy", '
        "favorite_color: $c}) { id favorite_color } }",
        {"c": "green"},
    )
    assert body["data"]["insert_users_one"]["favorite_color"] == "green", body
    new_id = body["data"]["insert_users_one"]["id"]
    body = gql(
        srv,
        "mutation ($id: Int!) { update_users_by_pk(pk_columns: {id: $id}, "
        "_set: {favorite_color: red}) { favorite_color } }",
        {"id": new_id},
    )
    assert body["data"]["update_users_by_pk"] == {"favorite_color": "red"}, body
    body = gql(
        srv,
        'mutation { update_users(where: {favorite_color: {_eq: red}, name: {_eq: "Cy"}}, '
        "_set: {favorite_color: green}) { affected_rows returning { favorite_color } } }",
    )
    assert body["data"]["update_users"] == {
        "affected_rows": 1,
        "returning": [{"favorite_color": "green"}],
    }
    errors = gql(
        srv, 'mutation { insert_users_one(object: {name: "D", favorite_color: "red"}) { id } }'
    )["errors"]
    assert errors[0]["extensions"]["code"] == "validation-failed"
    gql(srv, "mutation ($id: Int!) { delete_users_by_pk(id: $id) { id } }", {"id": new_id})


def test_role_without_the_enum_table(srv: ServerProcess) -> None:
    """A role that cannot select `colors` has no `colors` type but has `colors_enum`,
    and filters with it."""
    assert type_of(srv, "colors", role="anonymous") is None
    enum = type_of(srv, "colors_enum", role="anonymous")
    assert [v["name"] for v in enum["enumValues"]] == ["blue", "green", "red"]
    body = gql(srv, "{ users(where: {favorite_color: {_eq: red}}) { name } }", role="anonymous")
    assert body == {"data": {"users": [{"name": "Alyssa"}]}}


def test_export_keeps_is_enum(srv: ServerProcess) -> None:
    tables = {t["table"]["name"]: t for t in q(srv, "export_metadata", {}).json()["tables"]}
    assert tables["colors"]["is_enum"] is True and tables["sizes"]["is_enum"] is True
    assert "is_enum" not in tables["users"]


def test_compile_reads_the_same_values(srv: ServerProcess, pg_url: str) -> None:
    """`svc compile` introspects through `Database.introspect(conn, metadata)`, so its
    schema has the server's enum (type, values, column type)."""
    md = metadata_from_obj(q(srv, "export_metadata", {}).json())
    database_url = srv.proc.args[srv.proc.args.index("--database-url") + 1]  # type: ignore[index]
    catalog = asyncio.run(introspect(database_url, md))
    result = compile_metadata(md, catalog)
    assert not result.problems, result.problems
    schema = result.schemas["admin"]
    enum = schema.get_type("colors_enum")
    live = [v["name"] for v in type_of(srv, "colors_enum")["enumValues"]]
    assert enum is not None and sorted(enum.values) == live  # type: ignore[attr-defined]
    field_type = schema.get_type("users").fields["favorite_color"].type  # type: ignore[union-attr]
    assert field_type.of_type is enum


ERROR_HEAD = 'Inconsistent object: the table "users" cannot be used as an enum '


def test_tables_that_cannot_be_enums(srv: ServerProcess) -> None:
    """400 `invalid-configuration` at `$.args`, the reference's full text, the table under
    `internal`; nothing changes."""
    r = q(srv, "set_table_is_enum", {"table": "users", "is_enum": True})
    assert r.status_code == 400
    body = r.json()
    message = (
        ERROR_HEAD + "for the following reasons:\n"
        '  • the table\u2019s primary key ("id") must have type "text", not type "integer"\n'
        "  • the table must have exactly one primary key and optionally one comment column,"
        " not 3 columns (favorite_color, id, name)\n"
    )
    assert body == {
        "code": "invalid-configuration",
        "error": message,
        "path": "$.args",
        "internal": [
            {
                "definition": {"schema": "public", "name": "users"},
                "reason": message,
                "name": "table users in source default",
                "type": "table",
            }
        ],
    }
    sql = """
    CREATE TABLE bad_names (v text PRIMARY KEY); INSERT INTO bad_names VALUES ('ok'), ('a b');
    CREATE TABLE bad_many (v text PRIMARY KEY);
    INSERT INTO bad_many VALUES ('true'), ('1x'), ('a-b'), ('fine');
    CREATE TABLE empty_enum (v text PRIMARY KEY, note text);
    CREATE TABLE two_keys (a text, b text, PRIMARY KEY (a, b));
    CREATE TABLE int_comment (v text PRIMARY KEY, n int); INSERT INTO int_comment VALUES ($$a$$, 1);
    """
    assert q(srv, "run_sql", {"sql": sql}).status_code == 200
    expected = {
        "bad_names": 'because the value "a b" is not a valid GraphQL enum value name',
        "bad_many": 'because the values 1x, a-b, and "true" are not valid GraphQL enum value names',
        "empty_enum": "because the table must have at least one row",
        # an invalid key counts among the columns, as in the reference
        "two_keys": "for the following reasons:\n"
        "  • the table\u2019s primary key must not span multiple columns (a, b)\n"
        "  • the table must have exactly one primary key and optionally one comment column,"
        " not 2 columns (a, b)\n",
        "int_comment": 'because the table\u2019s comment column ("n") must have type "text", not '
        'type "integer"',
    }
    for table, reason in expected.items():
        r = q(srv, "track_table", {"table": table, "is_enum": True})
        assert r.status_code == 400, (table, r.text)
        assert r.json()["error"] == (
            f'Inconsistent object: the table "{table}" cannot be used as an enum {reason}'
        )
    tables = [t["table"]["name"] for t in q(srv, "export_metadata", {}).json()["tables"]]
    assert not set(expected) & set(tables)
    q(srv, "run_sql", {"sql": "DROP TABLE bad_names, bad_many, empty_enum, two_keys, int_comment"})


def test_problem_texts_without_a_database() -> None:
    """The two-value form quotes both values (the reference's `value1 <<> " and "`)."""
    from svc.catalog.introspect import DbColumn, DbConstraint, DbEnumRows, DbTable

    col = DbColumn("v", 1, "text", "text", "pg_catalog", "b", "S", None, False, False, False, None)
    table = DbTable(
        1,
        "public",
        "t",
        "r",
        None,
        28,
        (col,),
        (DbConstraint("t_pkey", "p", ("v",)),),
        (),
        (),
        DbEnumRows(rows=(("x y", None), ("a-b", None))),
    )
    assert problems(table) == ['the values "a-b" and "x y" are not valid GraphQL enum value names']


def test_values_are_read_when_the_schema_is_built(pg_url: str) -> None:
    """Rows written by `run_sql` show only after `reload_metadata` (on every worker: the
    server runs two); a key that is no GraphQL name then makes the table and the
    relationship onto it inconsistent, `drop_inconsistent_metadata` removes both and the
    column is text again."""
    s = ServerProcess(create_database(pg_url), "--workers", "2")
    try:
        r = q(
            s,
            "bulk",
            [
                {"type": "run_sql", "args": {"sql": SQL}},
                {"type": "track_table", "args": {"table": "colors", "is_enum": True}},
                {"type": "track_table", "args": "users"},
                {
                    "type": "create_object_relationship",
                    "args": {
                        "table": "users",
                        "name": "color",
                        "using": {"foreign_key_constraint_on": "favorite_color"},
                    },
                },
            ],
        )
        assert r.status_code == 200, r.text
        before = s.client.post(
            "/v1/metadata", json={"type": "export_metadata", "version": 2, "args": {}}
        ).json()["resource_version"]
        assert (
            q(s, "run_sql", {"sql": "INSERT INTO colors VALUES ('teal', null)"}).status_code == 200
        )
        after = s.client.post(
            "/v1/metadata", json={"type": "export_metadata", "version": 2, "args": {}}
        ).json()["resource_version"]
        assert after == before  # rows only: no new metadata version, no rebuild
        for _ in range(6):  # both workers
            names = [v["name"] for v in type_of(s, "colors_enum")["enumValues"]]
            assert names == ["blue", "green", "red"]
        r = q(s, "reload_metadata", {})
        assert r.json() == {"message": "success", "is_consistent": True}
        for _ in range(6):
            names = [v["name"] for v in type_of(s, "colors_enum")["enumValues"]]
            assert names == ["blue", "green", "red", "teal"]
        assert (
            q(s, "run_sql", {"sql": "INSERT INTO colors VALUES ('not+ok', '')"}).status_code == 200
        )
        body = q(s, "reload_metadata", {}).json()
        assert body["is_consistent"] is False
        assert [(o["type"], o["name"], o["reason"]) for o in body["inconsistent_objects"]] == [
            (
                "table",
                "table colors in source default",
                'Inconsistent object: the table "colors" cannot be used as an enum because '
                'the value "not+ok" is not a valid GraphQL enum value name',
            ),
            (
                "object_relation",
                "object_relation color in table users in source default",
                'Inconsistent object: table "colors" is not tracked',
            ),
        ]
        assert type_of(s, "colors_enum") is None
        assert q(s, "drop_inconsistent_metadata", {}).status_code == 200
        tables = {t["table"]["name"]: t for t in q(s, "export_metadata", {}).json()["tables"]}
        assert set(tables) == {"users"} and "object_relationships" not in tables["users"]
        users = {f["name"]: f["type"] for f in type_of(s, "users")["fields"]}
        assert users["favorite_color"]["ofType"]["name"] == "String"
    finally:
        s.stop()
