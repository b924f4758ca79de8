"""Input validation webhooks (`validate_input` of insert, update and delete permissions),
against a real svc server and a real local webhook (`tests/webhook_recorder.py`).

Followed: the reference's docs page "Postgres: Input Validations" (request
`{version: 1, role, session_variables, data: {input: [...]}}`, per mutation type; 200
proceeds, 400 `{"message"}` is forwarded; the transaction starts only after every
webhook agreed) and its source, `Hasura.Backends.Postgres.Instances.Execute`
(`convertInsert`/`convertUpdate`/`convertDelete`) and
`Hasura.Backends.Postgres.Execute.Mutation` (`validateInsertRows`: columns by name,
relationships as `{"data": …}`, the root table's rows first and one call per nested
table; `validateUpdateMutation`: the field's arguments, `updates` for `_many`;
`validateDeleteMutation`: `where`, or `pk_columns` for `_by_pk`; `validateMutation`:
`throw400 ValidationFailed` with the message, `throw500WithDetail` "received invalid
response from input validation webhook", "internal error when validating input data",
"http exception when validating input data"; `timeout` seconds, default 10).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import ServerProcess, create_database
from tests.webhook_recorder import WebhookRecorder


def _validate(path: str, **definition: Any) -> dict[str, Any]:
    return {
        "type": "http",
        "definition": {"url": "{{VALIDATE_HOOK_BASE}}" + path, **definition},
    }


def _steps() -> list[dict[str, Any]]:
    author_validate = _validate(
        "/author-insert",
        headers=[{"name": "X-Validate-Key", "value": "k1"}],
        forward_client_headers=True,
    )
    return [
        {
            "type": "run_sql",
            "args": {
                "sql": "CREATE TABLE author (id int PRIMARY KEY, name text NOT NULL);"
                "CREATE TABLE article (id int PRIMARY KEY,"
                " author_id int NOT NULL REFERENCES author(id), title text NOT NULL);"
                "CREATE TABLE slow (id int PRIMARY KEY);"
            },
        },
        *(
            {"type": "track_table", "args": {"schema": "public", "name": n}}
            for n in ("author", "article", "slow")
        ),
        {
            "type": "create_array_relationship",
            "args": {
                "table": "author",
                "name": "articles",
                "using": {"foreign_key_constraint_on": {"table": "article", "column": "author_id"}},
            },
        },
        *(
            {
                "type": "create_select_permission",
                "args": {
                    "table": t,
                    "role": "user",
                    "permission": {"columns": "*", "filter": {}},
                },
            }
            for t in ("author", "article", "slow")
        ),
        {
            "type": "create_insert_permission",
            "args": {
                "table": "author",
                "role": "user",
                "permission": {
                    "columns": ["id", "name"],
                    "check": {},
                    "validate_input": author_validate,
                },
            },
        },
        {
            "type": "create_insert_permission",
            "args": {
                "table": "article",
                "role": "user",
                "permission": {
                    "columns": ["id", "title"],
                    "check": {},
                    "set": {"author_id": "x-svc-user-id"},
                    "validate_input": _validate("/article-insert"),
                },
            },
        },
        {
            "type": "create_update_permission",
            "args": {
                "table": "author",
                "role": "user",
                "permission": {
                    "columns": ["name"],
                    "filter": {},
                    "validate_input": _validate("/author-update"),
                },
            },
        },
        {
            "type": "create_delete_permission",
            "args": {
                "table": "author",
                "role": "user",
                "permission": {"filter": {}, "validate_input": _validate("/author-delete")},
            },
        },
        {
            "type": "create_insert_permission",
            "args": {
                "table": "slow",
                "role": "user",
                "permission": {
                    "columns": ["id"],
                    "check": {},
                    "validate_input": _validate("/slow", timeout=1),
                },
            },
        },
    ]


USER = {"x-svc-role": "user", "x-svc-user-id": "7"}
SESSION = {"x-svc-role": "user", "x-svc-user-id": "7"}


@pytest.fixture(scope="module")
def hook() -> Iterator[WebhookRecorder]:
    with WebhookRecorder() as rec:
        yield rec


@pytest.fixture(scope="module")
def srv(pg_url: str, hook: WebhookRecorder) -> Iterator[ServerProcess]:
    base = hook.url("/").rstrip("/")
    s = ServerProcess(create_database(pg_url), env={"VALIDATE_HOOK_BASE": base})
    try:
        r = s.query({"type": "bulk", "args": _steps()})
        assert r.status_code == 200, r.text
        r = s.query({"type": "get_inconsistent_metadata", "args": {}})
        assert r.json()["inconsistent_objects"] == [], r.text
        yield s
    finally:
        s.stop()


@pytest.fixture(autouse=True)
def _clean(srv: ServerProcess, hook: WebhookRecorder) -> Iterator[None]:
    for path in ("/author-insert", "/article-insert", "/author-update", "/author-delete"):
        hook.rule(path, status=200)
    hook.rule("/slow", status=200, delay=2.0)
    hook.drain()
    yield
    srv.query({"type": "run_sql", "args": {"sql": "DELETE FROM article; DELETE FROM author;"}})
    hook.drain()


def _rows(srv: ServerProcess, table: str) -> list[Any]:
    r = srv.query({"type": "run_sql", "args": {"sql": f"SELECT id FROM {table} ORDER BY id"}})
    return [int(row[0]) for row in r.json()["result"][1:]]


def _payload(rows: list[Any]) -> dict[str, Any]:
    return {"version": 1, "role": "user", "session_variables": SESSION, "data": {"input": rows}}


NESTED = """mutation {
  insert_author(objects: [{id: 1, name: "Ann", articles: {data: [{id: 10, title: "T"}]}}]) {
    affected_rows
  }
}"""


def test_insert_body_headers_and_nested_tables(srv: ServerProcess, hook: WebhookRecorder) -> None:
    """A nested insert calls the root table's webhook with the rows as given (nested data
    under `data`), then the nested table's with its rows; presets are not input; both
    agreed (200), so the rows are written."""
    body = srv.graphql(NESTED, headers={**USER, "X-Custom": "abc"})
    assert body == {"data": {"insert_author": {"affected_rows": 2}}}, body
    first, second = hook.pop(), hook.pop()
    assert first.path == "/author-insert" and second.path == "/article-insert"
    assert first.json == _payload(
        [{"id": 1, "name": "Ann", "articles": {"data": [{"id": 10, "title": "T"}]}}]
    )
    assert second.json == _payload([{"id": 10, "title": "T"}])
    assert first.method == "POST"
    assert first.headers["x-validate-key"] == "k1"
    assert first.headers["content-type"] == "application/json"
    assert first.headers["x-custom"] == "abc"  # forward_client_headers
    assert "x-svc-role" not in first.headers  # the session is in the body
    assert "x-custom" not in second.headers  # that webhook does not forward them
    assert _rows(srv, "author") == [1] and _rows(srv, "article") == [10]


def test_rejection_writes_nothing(srv: ServerProcess, hook: WebhookRecorder) -> None:
    """400 `{"message"}` from the nested table's webhook: `validation-failed` with that
    message, and neither table is written."""
    hook.rule("/article-insert", status=400, body=b'{"message": "Title invalid"}')
    body = srv.graphql(NESTED, headers=USER)
    assert body == {
        "errors": [
            {"extensions": {"path": "$", "code": "validation-failed"}, "message": "Title invalid"}
        ]
    }, body
    assert _rows(srv, "author") == [] and _rows(srv, "article") == []


def test_rejection_stops_before_the_transaction(srv: ServerProcess, hook: WebhookRecorder) -> None:
    """A root field whose webhook refuses: the earlier root fields of the mutation are not
    written either (every webhook is called before the transaction starts)."""
    hook.rule("/author-update", status=400, body=b'{"message": "no renames"}')
    doc = """mutation {
      insert_author_one(object: {id: 5, name: "Eve"}) { id }
      update_author(where: {id: {_eq: 5}}, _set: {name: "X"}) { affected_rows }
    }"""
    body = srv.graphql(doc, headers=USER)
    assert body["errors"][0]["message"] == "no renames", body
    assert _rows(srv, "author") == []


def test_update_and_delete_bodies(srv: ServerProcess, hook: WebhookRecorder) -> None:
    """Update: the field's arguments (`where`, `_set`, `pk_columns`), `updates` of `_many`;
    delete: `where`, or `pk_columns` of `_by_pk`."""
    srv.graphql(
        'mutation { insert_author(objects: [{id: 1, name: "A"}, {id: 2, name: "B"}]) '
        "{ affected_rows } }",
        headers=USER,
    )
    hook.drain()
    cases = [
        (
            'mutation { update_author(where: {id: {_eq: 1}}, _set: {name: "Bo"}) '
            "{ affected_rows } }",
            "/author-update",
            [{"where": {"id": {"_eq": 1}}, "_set": {"name": "Bo"}}],
        ),
        (
            'mutation { update_author_by_pk(pk_columns: {id: 1}, _set: {name: "Cy"}) { id } }',
            "/author-update",
            [{"pk_columns": {"id": 1}, "_set": {"name": "Cy"}}],
        ),
        (
            "mutation U($u: [author_updates!]!) { update_author_many(updates: $u) "
            "{ affected_rows } }",
            "/author-update",
            [{"where": {"id": {"_eq": 2}}, "_set": {"name": "Di"}}],
        ),
        (
            "mutation { delete_author(where: {id: {_eq: 1}}) { affected_rows } }",
            "/author-delete",
            [{"where": {"id": {"_eq": 1}}}],
        ),
        (
            "mutation { delete_author_by_pk(id: 2) { id } }",
            "/author-delete",
            [{"pk_columns": {"id": 2}}],
        ),
    ]
    variables = {"u": [{"where": {"id": {"_eq": 2}}, "_set": {"name": "Di"}}]}
    for doc, path, expected in cases:
        body = srv.graphql(doc, variables if "$u" in doc else None, headers=USER)
        assert "errors" not in body, body
        got = hook.pop()
        assert got.path == path, (doc, got.path)
        assert got.json == _payload(expected), (doc, got.json)
    assert _rows(srv, "author") == []


def test_invalid_400_and_other_status(srv: ServerProcess, hook: WebhookRecorder) -> None:
    """A 400 without `{"message"}` and a 500 are `unexpected` with the reference's
    messages; nothing is written."""
    doc = 'mutation { insert_author_one(object: {id: 3, name: "C"}) { id } }'
    hook.rule("/author-insert", status=400, body=b"not json")
    body = srv.graphql(doc, headers=USER)
    error = body["errors"][0]
    assert error["extensions"]["code"] == "unexpected", body
    assert error["message"] == "received invalid response from input validation webhook"
    hook.rule("/author-insert", status=500, body=b"{}")
    body = srv.graphql(doc, headers=USER)
    assert body["errors"][0]["message"] == "internal error when validating input data", body
    assert _rows(srv, "author") == []


def test_timeout(srv: ServerProcess, hook: WebhookRecorder) -> None:
    """A webhook slower than its `timeout` (1 s; it answers after 2 s): `unexpected`
    "http exception when validating input data", within about the timeout; no row."""
    started = time.monotonic()
    body = srv.graphql("mutation { insert_slow_one(object: {id: 1}) { id } }", headers=USER)
    elapsed = time.monotonic() - started
    assert body["errors"][0]["message"] == "http exception when validating input data", body
    assert body["errors"][0]["extensions"]["code"] == "unexpected"
    assert elapsed < 1.9, elapsed
    assert _rows(srv, "slow") == []
    assert hook.pop(within=5.0).path == "/slow"  # recorded once answered: not left over


def test_bad_definition_is_inconsistent(srv: ServerProcess) -> None:
    """A `validate_input` of another type is an inconsistent permission (not served)."""
    r = srv.query(
        {
            "type": "create_delete_permission",
            "args": {
                "table": "article",
                "role": "user",
                "permission": {"filter": {}, "validate_input": {"type": "grpc", "definition": {}}},
            },
        }
    )
    assert r.status_code == 400, r.text
    assert "validate_input" in r.text
