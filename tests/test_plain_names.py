"""Names of metadata objects that are not GraphQL names (`svc/metadata/plain_names.py`):
empty (the reference's `NonEmptyText`: "empty string not allowed") or holding a control
character (NUL: a cron trigger so named answered 500; newline, tab) are refused with 400
`parse-failed`, nothing written, and the server keeps answering (issue 31)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import ServerProcess, server_with

HOOK = "http://127.0.0.1:9/hook"
QUERY = {"name": "q", "query": "query { t { id } }"}


@pytest.fixture(scope="module")
def srv(pg_url: str) -> Iterator[ServerProcess]:
    collection = {"name": "c", "definition": {"queries": [QUERY]}}
    steps: list[Any] = [
        {"type": "run_sql", "args": {"sql": "CREATE TABLE t (id int PRIMARY KEY)"}},
        {"type": "track_table", "args": {"table": "t"}},
        {"type": "create_query_collection", "args": collection},
    ]
    with server_with(pg_url, steps) as server:
        yield server


def operations(bad: str) -> list[dict[str, Any]]:
    """Each operation with `bad` as a name."""
    select = {"columns": "*", "filter": {}}
    endpoint = {"collection_name": "c", "query_name": "q"}
    return [
        {
            "type": "create_select_permission",
            "args": {"table": "t", "role": bad, "permission": select},
        },
        {"type": "add_inherited_role", "args": {"role_name": bad, "role_set": ["user"]}},
        {"type": "create_query_collection", "args": {"name": bad, "definition": {"queries": []}}},
        {
            "type": "create_query_collection",
            "args": {
                "name": "c2",
                "definition": {"queries": [{"name": bad, "query": "{ t { id } }"}]},
            },
        },
        {
            "type": "create_rest_endpoint",
            "args": {
                "name": bad,
                "url": "u",
                "methods": ["GET"],
                "definition": {"query": endpoint},
            },
        },
        {
            "type": "create_rest_endpoint",
            "args": {
                "name": "e",
                "url": bad,
                "methods": ["GET"],
                "definition": {"query": endpoint},
            },
        },
        {
            "type": "create_cron_trigger",
            "args": {
                "name": bad,
                "webhook": HOOK,
                "schedule": "* * * * *",
                "include_in_metadata": True,
            },
        },
        {
            "type": "create_event_trigger",
            "args": {"name": bad, "table": "t", "webhook": HOOK, "insert": {"columns": "*"}},
        },
    ]


@pytest.mark.parametrize("bad", ["", "a\x00b", "line\nbreak", "tab\there", "del\x7f"])
def test_bad_names_are_refused(srv: ServerProcess, bad: str) -> None:
    before = srv.query({"type": "export_metadata", "args": {}}).json()
    for op in operations(bad):
        r = srv.query(op)
        assert r.status_code == 400, (op["type"], r.text)
        body = r.json()
        assert body["code"] == "parse-failed", (op["type"], body)
        expected = "empty string not allowed" if bad == "" else "control characters"
        assert expected in body["error"], (op["type"], body)
    assert srv.query({"type": "export_metadata", "args": {}}).json() == before
    assert srv.graphql("{ __typename }") == {"data": {"__typename": "query_root"}}
