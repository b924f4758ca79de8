"""Metadata operations of issue 5 over real HTTP: `/v1/metadata` `pg_` names, comments as
descriptions, `set_table_custom_fields`, function permissions, inconsistent metadata kept
and dropped, and the resource-version check for concurrent writers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import ServerProcess, create_database

SQL = """
create table item (id serial primary key, name text not null, owner int not null);
insert into item (name, owner) values ('a', 1), ('b', 2);
create function items_named(q text) returns setof item as
  $$ select * from item where name = q $$ language sql stable;
"""


@pytest.fixture(scope="module")
def srv(pg_url: str) -> Iterator[ServerProcess]:
    """Function permissions are explicit here: `--infer-function-permissions` is off."""
    s = ServerProcess(
        create_database(pg_url), env={"SVC_GRAPHQL_INFER_FUNCTION_PERMISSIONS": "false"}
    )
    r = s.client.post(
        "/v1/metadata",
        json={
            "type": "bulk",
            "args": [
                {"type": "run_sql", "args": {"sql": SQL}},
                {"type": "pg_track_table", "args": {"source": "default", "table": "item"}},
                {
                    "type": "pg_create_select_permission",
                    "args": {
                        "source": "default",
                        "table": "item",
                        "role": "user",
                        "permission": {"columns": ["id", "name"], "filter": {}},
                    },
                },
                {"type": "pg_track_function", "args": {"function": "items_named"}},
            ],
        },
    )
    assert r.status_code == 200, r.text
    try:
        yield s
    finally:
        s.stop()


def meta(s: ServerProcess, type_: str, args: Any, **extra: Any) -> Any:
    return s.client.post("/v1/metadata", json={"type": type_, "args": args, **extra})


USER = {"headers": {"X-Svc-Role": "user"}}
CALL = '{ items_named(args: {q: "a"}) { name } }'


def test_function_permission_is_explicit(srv: ServerProcess) -> None:
    assert srv.graphql(CALL, **USER)["errors"][0]["extensions"]["code"] == "validation-failed"
    r = meta(srv, "pg_create_function_permission", {"function": "items_named", "role": "user"})
    assert r.status_code == 200, r.text
    assert srv.graphql(CALL, **USER) == {"data": {"items_named": [{"name": "a"}]}}
    again = meta(srv, "pg_create_function_permission", {"function": "items_named", "role": "user"})
    assert again.status_code == 400 and again.json()["code"] == "already-exists"
    r = meta(srv, "pg_drop_function_permission", {"function": "items_named", "role": "user"})
    assert r.status_code == 200, r.text
    assert "errors" in srv.graphql(CALL, **USER)


def test_custom_fields_and_relationship_comment(srv: ServerProcess) -> None:
    r = meta(
        srv,
        "set_table_custom_fields",
        {"table": "item", "custom_root_fields": {"select": "things"}, "custom_column_names": {}},
        version=2,
    )
    assert r.status_code == 200, r.text
    assert srv.graphql("{ things(order_by: {id: asc}) { name } }") == {
        "data": {"things": [{"name": "a"}, {"name": "b"}]}
    }
    rel = {
        "table": "item",
        "name": "self",
        "using": {"manual_configuration": {"remote_table": "item", "column_mapping": {"id": "id"}}},
    }
    assert meta(srv, "pg_create_object_relationship", rel).status_code == 200
    r = meta(srv, "pg_set_relationship_comment", {"table": "item", "name": "self", "comment": "me"})
    assert r.status_code == 200, r.text
    body = srv.graphql('{ __type(name: "item") { fields { name description } } }')
    fields = {f["name"]: f["description"] for f in body["data"]["__type"]["fields"]}
    assert fields["self"] == "me"
    meta(srv, "pg_drop_relationship", {"table": "item", "relationship": "self"})
    meta(srv, "set_table_customization", {"table": "item", "configuration": {}})


def test_inconsistent_objects_are_kept_then_dropped(srv: ServerProcess) -> None:
    exported = meta(srv, "export_metadata", {}).json()
    broken = {
        **exported,
        "tables": [*exported["tables"], {"table": {"schema": "public", "name": "missing"}}],
    }
    refused = meta(srv, "replace_metadata", broken)
    assert refused.status_code == 400
    r = meta(srv, "replace_metadata", {"metadata": broken, "allow_inconsistent_metadata": True})
    assert r.status_code == 200, r.text
    assert r.json()["is_consistent"] is False
    listed = meta(srv, "get_inconsistent_metadata", {}).json()
    assert [o["definition"] for o in listed["inconsistent_objects"]] == [
        {"schema": "public", "name": "missing"}
    ]
    # Everything consistent is still served.
    assert "data" in srv.graphql("{ item { id } }")
    assert meta(srv, "drop_inconsistent_metadata", {}).status_code == 200
    assert meta(srv, "get_inconsistent_metadata", {}).json()["is_consistent"] is True
    assert meta(srv, "export_metadata", {}).json() == exported


def test_resource_version_guards_concurrent_writers(srv: ServerProcess) -> None:
    current = meta(srv, "export_metadata", {}, version=2).json()
    version = current["resource_version"]
    args = {"table": "item", "role": "reader", "permission": {"columns": ["id"], "filter": {}}}
    ok = meta(srv, "pg_create_select_permission", args, resource_version=version)
    assert ok.status_code == 200, ok.text
    stale = meta(
        srv,
        "pg_drop_select_permission",
        {"table": "item", "role": "reader"},
        resource_version=version,
    )
    assert stale.status_code == 409 and stale.json()["code"] == "conflict"
    assert meta(srv, "export_metadata", {}, version=2).json()["resource_version"] > version
