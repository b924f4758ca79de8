"""Actions and custom types against database changes and inconsistent metadata (issue 16,
spec 4.8): what `run_sql`, `cascade`, `replace_metadata` with
`allow_inconsistent_metadata` and `drop_inconsistent_metadata` do to them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import ServerProcess, create_database

TYPES = {
    "objects": [
        {
            "name": "O",
            "fields": [{"name": "id", "type": "Int"}],
            "relationships": [
                {"name": "t", "type": "object", "remote_table": "t", "field_mapping": {"id": "id"}}
            ],
        }
    ]
}


@pytest.fixture
def srv(pg_url: str) -> Iterator[ServerProcess]:
    s = ServerProcess(create_database(pg_url, prefix="act_md"), "--workers", "1")
    steps = [
        {"type": "run_sql", "args": {"sql": "create table t (id int primary key);"}},
        {"type": "track_table", "args": {"table": "t"}},
        {"type": "set_custom_types", "args": TYPES},
        {
            "type": "create_action",
            "args": {
                "name": "a",
                "definition": {"type": "query", "output_type": "O", "handler": "http://h"},
            },
        },
    ]
    r = s.query({"type": "bulk", "args": steps})
    assert r.status_code == 200, r.text
    try:
        yield s
    finally:
        s.stop()


def exported(srv: ServerProcess) -> Any:
    return srv.query({"type": "export_metadata", "args": {}}).json()


def test_dropping_a_related_table_needs_cascade(srv: ServerProcess) -> None:
    r = srv.query({"type": "run_sql", "args": {"sql": "drop table t"}})
    assert r.status_code == 400 and r.json()["code"] == "dependency-error"
    assert exported(srv)["custom_types"] == TYPES  # nothing changed
    r = srv.query({"type": "run_sql", "args": {"sql": "drop table t", "cascade": True}})
    assert r.status_code == 200, r.text
    assert exported(srv)["custom_types"]["objects"][0]["relationships"] == []
    inconsistent = srv.query({"type": "get_inconsistent_metadata", "args": {}}).json()
    assert inconsistent == {"is_consistent": True, "inconsistent_objects": []}
    assert srv.graphql('{ __type(name: "O") { fields { name } } }') == {
        "data": {"__type": {"fields": [{"name": "id"}]}}
    }


def test_drop_inconsistent_metadata_drops_a_broken_action(srv: ServerProcess) -> None:
    md = exported(srv)
    md["actions"].append(
        {"name": "broken", "definition": {"output_type": "Nope", "handler": "http://h"}}
    )
    r = srv.query(
        {"type": "replace_metadata", "args": {"metadata": md, "allow_inconsistent_metadata": True}}
    )
    assert r.status_code == 200, r.text
    (issue,) = r.json()["inconsistent_objects"]
    assert issue["type"] == "action" and issue["definition"]["name"] == "broken"
    assert issue["reason"].startswith('Inconsistent object: in action "broken"; the type')
    assert "broken" not in str(srv.graphql("{ __schema { mutationType { fields { name } } } }"))
    assert srv.query({"type": "drop_inconsistent_metadata", "args": {}}).status_code == 200
    assert [a["name"] for a in exported(srv)["actions"]] == ["a"]


def test_a_query_actions_kind_is_ignored(srv: ServerProcess) -> None:
    """The reference's `ActionDefinition` parser reads `kind` for mutations only (`"query"
    -> pure ActionQuery`): a query action with `kind: ""` (seen in published projects) or
    `asynchronous` is accepted, served as a query and exported without `kind`."""
    for kind in ("", "asynchronous", "anything"):
        definition = {"type": "query", "kind": kind, "output_type": "O", "handler": "http://h"}
        r = srv.query({"type": "update_action", "args": {"name": "a", "definition": definition}})
        assert r.status_code == 200, r.text
        (action,) = exported(srv)["actions"]
        assert "kind" not in action["definition"] and action["definition"]["type"] == "query"
    whole = exported(srv)
    whole["actions"][0]["definition"]["kind"] = ""
    r = srv.query({"type": "replace_metadata", "args": whole})
    assert r.status_code == 200, r.text
    schema = srv.graphql("{ __schema { queryType { fields { name } } } }")
    assert "a" in [f["name"] for f in schema["data"]["__schema"]["queryType"]["fields"]]


def test_a_mutation_actions_kind_must_be_a_kind(srv: ServerProcess) -> None:
    definition = {"type": "mutation", "kind": "", "output_type": "O", "handler": "http://h"}
    r = srv.query({"type": "create_action", "args": {"name": "m", "definition": definition}})
    assert r.status_code == 400 and r.json()["code"] == "parse-failed", r.text
    assert [a["name"] for a in exported(srv)["actions"]] == ["a"]
