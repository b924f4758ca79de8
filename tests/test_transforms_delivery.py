"""Request and response transforms applied to real deliveries (`svc.outbound.transform`)
on a real `svc serve`, Postgres and a real local HTTP server (`tests.http_fixture`) that
records what arrives: an action (sync), an event trigger, a cron trigger and a one-off
scheduled event, each with a url/method/query_params/headers transform, and the run-time
failures.

What is expected follows the reference: `Hasura/RQL/DDL/Webhook/Transform.hs` and
`Transform/*.hs` (each part computed from the original request; query parameters
replacing the URL's; headers removed then added; form bodies), `Transform/Response.hs`
(`$body`, `$response.status`), `Hasura/GraphQL/Execute/Action.hs` (`callWebhook`:
"Request Transformation Failed" / "Response Transformation Failed", 500-style
`unexpected` with the error bundle as `internal`), `Eventing/HTTP.hs` `mkRequest` (an
event's `$session_variables` from its body) and `Eventing/EventTrigger.hs` (a failed
transform errors the event without a retry)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.http_fixture import HttpFixture, Recorded, Reply
from tests.support import ServerProcess, create_database

FAST = {"SVC_GRAPHQL_EVENTS_FETCH_INTERVAL": "0.1"}
TYPES = {
    "objects": [
        {
            "name": "Converted",
            "fields": [{"name": "id", "type": "Int!"}, {"name": "status", "type": "Int"}],
        }
    ]
}


@pytest.fixture(scope="module")
def hook() -> Iterator[HttpFixture]:
    with HttpFixture() as srv:
        srv.route("/act/converted", _json({"value": 5}))
        srv.route("/act/failing", _json({"value": 5}))
        for path in ("/evt/moved", "/cron/moved", "/oneoff/moved", "/evt"):
            srv.route(path, lambda req: Reply(200, b"{}"))
        yield srv


def _json(body: Any, status: int = 200) -> Any:
    return lambda req: Reply(
        status, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )


@pytest.fixture(scope="module")
def srv(pg_url: str, hook: HttpFixture) -> Iterator[ServerProcess]:
    env = {**FAST, "HOOK_BASE": hook.url("").rstrip("/")}
    s = ServerProcess(create_database(pg_url, prefix="xfd"), env=env)
    try:
        yield s
    finally:
        s.stop()


def ok(srv: ServerProcess, body: Any) -> Any:
    r = srv.client.post("/v1/metadata", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def sql(srv: ServerProcess, text: str) -> list[list[Any]]:
    rows: list[list[Any]] | None = ok(srv, {"type": "run_sql", "args": {"sql": text}})["result"]
    return rows[1:] if rows else []


def arrived(hook: HttpFixture, prefix: str, within: float = 15.0) -> Recorded:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        for req in list(hook.requests):
            if req.path.startswith(prefix):
                return req
        time.sleep(0.05)
    raise AssertionError(f"nothing arrived at {prefix}: {[r.path for r in hook.requests]}")


ACTION_TRANSFORM = {
    "version": 2,
    "template_engine": "Kriti",
    "url": "{{$base_url}}/converted",
    "method": "PUT",
    "query_params": {"id": "{{$body.input.id}}", "drop": "{{$body.input?.nothing}}"},
    "request_headers": {
        "remove_headers": ["content-type"],
        "add_headers": {
            "content-type": "application/x-www-form-urlencoded",
            "x-name": "{{$body.input.name}}",
        },
    },
    "body": {
        "action": "x_www_form_urlencoded",
        "form_template": {"name": "{{$body.input.name}}", "n": "{{$body.input.id}}"},
    },
}
RESPONSE_TRANSFORM = {
    "version": 2,
    "body": {
        "action": "transform",
        "template": '{"id": {{$body.value}}, "status": {{$response.status}}}',
    },
}


def test_action_request_and_response_transform(srv: ServerProcess, hook: HttpFixture) -> None:
    ok(srv, {"type": "set_custom_types", "args": TYPES})
    args = [{"name": "id", "type": "Int!"}, {"name": "name", "type": "String!"}]
    definition = {
        "handler": "{{HOOK_BASE}}/act",
        "output_type": "Converted",
        "type": "query",
        "arguments": args,
        "request_transform": ACTION_TRANSFORM,
        "response_transform": RESPONSE_TRANSFORM,
    }
    ok(srv, {"type": "create_action", "args": {"name": "convert", "definition": definition}})
    got = srv.graphql('{ convert(id: 7, name: "Ada Lovelace") { id status } }')
    assert got == {"data": {"convert": {"id": 5, "status": 200}}}, got
    req = arrived(hook, "/act/converted")
    assert req.method == "PUT"
    assert req.path == "/act/converted?id=7"  # "drop" rendered null: left out
    assert req.headers["content-type"] == "application/x-www-form-urlencoded"
    assert req.headers["x-name"] == "Ada Lovelace"
    assert req.body == b"name=Ada%20Lovelace&n=7"


def test_action_transform_failures_are_reference_errors(
    srv: ServerProcess, hook: HttpFixture
) -> None:
    ok(srv, {"type": "set_custom_types", "args": TYPES})  # the module's tests may run apart
    failing = {"version": 2, "body": {"action": "transform", "template": "{{ $body.input.nope }}"}}
    definition = {
        "handler": "{{HOOK_BASE}}/act/failing",
        "output_type": "Converted",
        "type": "query",
        "request_transform": failing,
    }
    ok(srv, {"type": "create_action", "args": {"name": "broken", "definition": definition}})
    got = srv.graphql("{ broken { id } }")
    [error] = got["errors"]
    assert error["message"] == "Request Transformation Failed"
    assert error["extensions"]["code"] == "unexpected"
    assert error["extensions"]["internal"][0]["error_code"] == "Attribute Error"
    response = {"version": 2, "body": {"action": "transform", "template": "{{ $body.nope }}"}}
    definition = {**definition, "request_transform": None, "response_transform": response}
    ok(srv, {"type": "update_action", "args": {"name": "broken", "definition": definition}})
    got = srv.graphql("{ broken { id } }")
    [error] = got["errors"]
    assert error["message"] == "Response Transformation Failed"
    assert error["extensions"]["internal"][0]["error_code"] == "Attribute Error"


def test_event_trigger_delivery_is_transformed(srv: ServerProcess, hook: HttpFixture) -> None:
    sql(srv, "create table item (id int primary key, name text)")
    ok(srv, {"type": "pg_track_table", "args": {"table": "item"}})
    transform = {
        "version": 2,
        "url": "{{$base_url}}/moved",
        "method": "PUT",
        "query_params": {"op": "{{$body.event.op}}"},
        "request_headers": {
            "remove_headers": ["user-agent"],
            "add_headers": {"x-id": "{{$body.event.data.new.id}}"},
        },
        "body": {"action": "transform", "template": "{{$body.event.data.new}}"},
    }
    trigger = {
        "name": "item_moved",
        "table": {"schema": "public", "name": "item"},
        "webhook": "{{HOOK_BASE}}/evt",
        "insert": {"columns": "*"},
        "request_transform": transform,
        "response_transform": {"version": 2, "body": {"action": "remove"}},
    }
    ok(srv, {"type": "pg_create_event_trigger", "args": trigger})
    exported = ok(srv, {"type": "export_metadata", "args": {}})
    kept = _find_trigger(exported, "item_moved")  # kept and exported (EventTriggerConf)
    assert (kept["request_transform"], kept["response_transform"]) == (
        transform,
        trigger["response_transform"],
    )
    sql(srv, "insert into item values (1, 'one')")
    req = arrived(hook, "/evt/moved")
    assert (req.method, req.path) == ("PUT", "/evt/moved?op=INSERT")
    assert req.headers["x-id"] == "1"
    assert "user-agent" not in req.headers
    assert req.json() == {"id": 1, "name": "one"}
    # Eventing/HTTP.hs invokeRequest: the logged answer is the transformed one
    deadline = time.monotonic() + 10
    rows: list[list[Any]] = []
    while not rows and time.monotonic() < deadline:
        rows = sql(
            srv,
            "select l.response::text from hdb_catalog.event_invocation_logs l "
            "join hdb_catalog.event_log e on e.id = l.event_id "
            "where e.trigger_name = 'item_moved'",
        )
        time.sleep(0.1)
    assert rows, "no invocation logged"
    assert json.loads(rows[0][0])["data"]["body"] == "null"


def _find_trigger(doc: Any, name: str) -> Any:
    if isinstance(doc, dict):
        for trigger in doc.get("event_triggers") or ():
            if trigger.get("name") == name:
                return trigger
        values: Any = doc.values()
    else:
        values = doc if isinstance(doc, list) else ()
    for value in values:
        found = _find_trigger(value, name)
        if found is not None:
            return found
    return None


def test_event_trigger_transform_failure_errors_the_event(srv: ServerProcess) -> None:
    sql(srv, "create table thing (id int primary key)")
    ok(srv, {"type": "pg_track_table", "args": {"table": "thing"}})
    trigger = {
        "name": "thing_broken",
        "table": {"schema": "public", "name": "thing"},
        "webhook": "{{HOOK_BASE}}/evt",
        "insert": {"columns": "*"},
        "retry_conf": {"num_retries": 3, "interval_sec": 1},
        "request_transform": {"version": 2, "url": "{{$base_url}}/{{$body.event.nope}}"},
    }
    ok(srv, {"type": "pg_create_event_trigger", "args": trigger})
    sql(srv, "insert into thing values (1)")
    deadline = time.monotonic() + 15
    rows: list[list[Any]] = []
    while time.monotonic() < deadline:
        rows = sql(
            srv,
            "select e.error, e.delivered, e.tries, l.response::text from hdb_catalog.event_log e "
            "join hdb_catalog.event_invocation_logs l on l.event_id = e.id "
            "where e.trigger_name = 'thing_broken'",
        )
        if rows:
            break
        time.sleep(0.1)
    assert rows, "no invocation logged"
    error, delivered, tries, response = rows[0]
    assert (error, delivered, tries) == ("t", "f", "1")  # errored at once, not retried
    assert "Request Transformation Failed" in response
    assert "Attribute Error" in response


def test_cron_trigger_delivery_is_transformed(srv: ServerProcess, hook: HttpFixture) -> None:
    transform = {
        "version": 2,
        "method": "PATCH",
        "url": "{{$base_url}}/moved",
        "query_params": "name={{$body.name}}&x=a+b",
        "request_headers": {"add_headers": {"x-cron": "{{$body.payload.k}}"}},
    }
    args = {
        "name": "every_second",
        "webhook": "{{HOOK_BASE}}/cron",
        "schedule": "* * * * * *",
        "include_in_metadata": True,
        "payload": {"k": "v"},
        "request_transform": transform,
    }
    ok(srv, {"type": "create_cron_trigger", "args": args})
    try:
        req = arrived(hook, "/cron/moved")
    finally:
        ok(srv, {"type": "delete_cron_trigger", "args": {"name": "every_second"}})
    assert (req.method, req.path) == ("PATCH", "/cron/moved?name=every_second&x=a%20b")
    assert req.headers["x-cron"] == "v"
    assert req.json()["payload"] == {"k": "v"}
    exported = ok(srv, {"type": "export_metadata", "args": {}})
    assert "cron_triggers" not in exported or not exported["cron_triggers"]


def test_one_off_scheduled_event_delivery_is_transformed(
    srv: ServerProcess, hook: HttpFixture
) -> None:
    transform = {
        "version": 2,
        "method": "PUT",
        "url": "{{$base_url}}/moved",
        "query_params": {"c": "{{$body.comment}}"},
        "request_headers": {"add_headers": {"x-one-off": "yes"}},
        "body": {"action": "remove"},
    }
    args = {
        "webhook": "{{HOOK_BASE}}/oneoff",
        "schedule_at": datetime.now(UTC).isoformat(),
        "comment": "hello there",
        "request_transform": transform,
    }
    ok(srv, {"type": "create_scheduled_event", "args": args})
    req = arrived(hook, "/oneoff/moved")
    assert (req.method, req.path) == ("PUT", "/oneoff/moved?c=hello%20there")
    assert req.headers["x-one-off"] == "yes"
    assert req.body == b""
