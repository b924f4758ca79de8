"""An action named like a table's root field is refused, as the reference refuses two
definitions of one root field (`safeSelectionSet`: 500 `unexpected`, "Encountered
conflicting definitions in the selection set for 'query_root' for field …"). It was
accepted and broke that field for every role (issue 31); nothing is written on refusal."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import ServerProcess, server_with

OUT = {"objects": [{"name": "Out", "fields": [{"name": "ok", "type": "Boolean"}]}]}


@pytest.fixture(scope="module")
def srv(pg_url: str) -> Iterator[ServerProcess]:
    steps: list[Any] = [
        {"type": "run_sql", "args": {"sql": "CREATE TABLE posts (id int PRIMARY KEY)"}},
        {"type": "track_table", "args": {"table": "posts"}},
        {"type": "set_custom_types", "args": OUT},
    ]
    with server_with(pg_url, steps) as server:
        yield server


def action(name: str, operation: str, **extra: Any) -> dict[str, Any]:
    definition = {
        "type": operation,
        "output_type": "Out",
        "handler": "http://127.0.0.1:9/h",
        **extra,
    }
    return {"type": "create_action", "args": {"name": name, "definition": definition}}


@pytest.mark.parametrize(
    ("name", "kind", "extra", "root"),
    [
        ("posts", "query", {}, "query_root"),
        ("posts_aggregate", "query", {}, "query_root"),
        ("insert_posts", "mutation", {}, "mutation_root"),
        ("posts_by_pk", "mutation", {"kind": "asynchronous"}, "query_root"),  # its result query
    ],
)
def test_an_action_named_like_a_root_field_is_refused(
    srv: ServerProcess, name: str, kind: str, extra: dict[str, Any], root: str
) -> None:
    before = srv.query({"type": "export_metadata", "args": {}}).json()
    r = srv.query(action(name, kind, **extra))
    assert r.status_code == 500, r.text
    body = r.json()
    assert body["code"] == "unexpected"
    assert f"selection set for '{root}' for field '{name}'" in body["error"]
    assert f"action {name}" in body["error"]
    assert srv.query({"type": "export_metadata", "args": {}}).json() == before
    assert srv.graphql("{ posts { id } }") == {"data": {"posts": []}}


def test_a_mutation_action_may_share_a_query_field_name(srv: ServerProcess) -> None:
    """Roots are separate: a synchronous mutation named like a query field is fine."""
    r = srv.query(action("posts_by_pk", "mutation"))
    assert r.status_code == 200, r.text
    assert srv.graphql("{ posts_by_pk(id: 1) { id } }") == {"data": {"posts_by_pk": None}}
