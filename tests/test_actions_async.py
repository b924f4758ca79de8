"""Asynchronous actions (issue 16) on real `svc serve` processes: the mutation answers an
id at once, a background worker calls the handler and stores the result, `<action>(id)`
reads it (only by the session that made it), and a call whose process was SIGKILLed
half-way is completed by a restarted process (at-least-once)."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest
import websockets

from tests.http_fixture import HttpFixture, Recorded, Reply
from tests.support import ServerProcess, create_database

LOCK_TIMEOUT_S = 2
ENV = {"SVC_GRAPHQL_ASYNC_ACTIONS_LOCK_TIMEOUT": str(LOCK_TIMEOUT_S)}
RESULT = "query ($id: uuid!) { signup(id: $id) { id errors output { id user { name } } } }"
# A role without a select permission on `u` does not see the relationship.
RESULT_USER = "query ($id: uuid!) { signup(id: $id) { id errors output { id } } }"


def setup_steps(base: str) -> list[dict[str, Any]]:
    return [
        {
            "type": "run_sql",
            "args": {
                "sql": "create table u (id int primary key, name text);"
                "insert into u values (1, 'Ada');"
            },
        },
        {"type": "track_table", "args": {"table": "u"}},
        {
            "type": "set_custom_types",
            "args": {
                "objects": [
                    {
                        "name": "Out",
                        "fields": [{"name": "id", "type": "Int!"}],
                        "relationships": [
                            {
                                "name": "user",
                                "type": "object",
                                "remote_table": "u",
                                "field_mapping": {"id": "id"},
                            }
                        ],
                    }
                ]
            },
        },
        {
            "type": "create_action",
            "args": {
                "name": "signup",
                "definition": {
                    "kind": "asynchronous",
                    "output_type": "Out",
                    "handler": base + "/signup",
                    "arguments": [{"name": "n", "type": "String!"}],
                },
            },
        },
        {"type": "create_action_permission", "args": {"action": "signup", "role": "user"}},
    ]


@pytest.fixture(scope="module")
def hook() -> Iterator[HttpFixture]:
    with HttpFixture() as srv:
        yield srv


@pytest.fixture(scope="module")
def database(pg_url: str, hook: HttpFixture) -> str:
    return create_database(pg_url, prefix="act_async")


@pytest.fixture(scope="module")
def srv(database: str, hook: HttpFixture) -> Iterator[ServerProcess]:
    s = ServerProcess(database, env=ENV)
    r = s.query({"type": "bulk", "args": setup_steps(hook.url("").rstrip("/"))})
    assert r.status_code == 200, r.text
    try:
        yield s
    finally:
        s.stop()


def call(srv: ServerProcess, headers: dict[str, str] | None = None) -> str:
    body = srv.graphql('mutation { signup(n: "x") }', headers=headers or {})
    call_id: str = body["data"]["signup"]
    return call_id


def wait_result(
    srv: ServerProcess, call_id: str, headers: dict[str, str] | None = None, within: float = 15
) -> Any:
    deadline = time.monotonic() + within
    query = RESULT_USER if headers else RESULT
    while True:
        body = srv.graphql(query, {"id": call_id}, headers=headers or {})
        assert "data" in body, body
        found = body["data"]["signup"]
        if found is not None and (found["output"] is not None or found["errors"] is not None):
            return found
        assert time.monotonic() < deadline, body
        time.sleep(0.2)


def test_result_is_stored_and_read_by_id(srv: ServerProcess, hook: HttpFixture) -> None:
    seen: list[Recorded] = []

    def signup(req: Recorded) -> Reply:
        seen.append(req)
        return Reply(200, json.dumps({"id": 1}).encode())

    hook.route("/signup", signup)
    started = time.monotonic()
    call_id = call(srv)
    assert time.monotonic() - started < 1.0  # answered before the handler is called
    found = wait_result(srv, call_id)
    assert found == {"id": call_id, "errors": None, "output": {"id": 1, "user": {"name": "Ada"}}}
    body = seen[-1].json()
    assert body["action"] == {"name": "signup"} and body["input"] == {"n": "x"}
    assert body["session_variables"] == {"x-svc-role": "admin"}


def test_a_role_sees_only_its_sessions_calls(srv: ServerProcess, hook: HttpFixture) -> None:
    hook.route("/signup", lambda req: Reply(200, b'{"id": 1}'))
    mine = {"X-Svc-Role": "user", "X-Svc-User-Id": "1"}
    other = {"X-Svc-Role": "user", "X-Svc-User-Id": "2"}
    call_id = call(srv, mine)
    assert wait_result(srv, call_id, mine)["output"]["id"] == 1
    assert srv.graphql(RESULT_USER, {"id": call_id}, headers=other) == {"data": {"signup": None}}
    assert wait_result(srv, call_id)["id"] == call_id  # admin sees every call


def test_handler_errors_are_stored(srv: ServerProcess, hook: HttpFixture) -> None:
    hook.route("/signup", lambda req: Reply(400, b'{"message": "no", "code": "invalid-email"}'))
    found = wait_result(srv, call(srv))
    assert found["errors"] == {"code": "invalid-email", "path": "$", "error": "no"}
    assert found["output"] is None
    hook.route("/signup", lambda req: Reply(200, b'{"nope": 1}'))
    found = wait_result(srv, call(srv))
    assert found["errors"]["error"] == 'field "id" expected in webhook response, but not found'


def test_drop_action_clears_its_calls(srv: ServerProcess, hook: HttpFixture) -> None:
    hook.route("/signup", lambda req: Reply(200, b'{"id": 1}'))
    call_id = call(srv)
    wait_result(srv, call_id)
    sql = "select count(*) from hdb_catalog.hdb_action_log"
    count = srv.query({"type": "run_sql", "args": {"sql": sql}}).json()["result"][1][0]
    assert int(count) >= 1
    steps = setup_steps(hook.url("").rstrip("/"))
    assert srv.query({"type": "drop_action", "args": {"name": "signup"}}).status_code == 200
    after = srv.query({"type": "run_sql", "args": {"sql": sql}}).json()["result"][1][0]
    assert int(after) == 0
    assert srv.query({"type": "bulk", "args": steps[3:]}).status_code == 200


def test_a_subscription_follows_the_call(srv: ServerProcess, hook: HttpFixture) -> None:
    """`subscription { signup(id) }` pushes the pending call, then its stored result."""
    hook.route("/signup", lambda req: Reply(200, b'{"id": 1}', delay=1.5))
    call_id = call(srv)
    query = "subscription ($id: uuid!) { signup(id: $id) { id output { id user { name } } } }"

    async def follow() -> list[Any]:
        url = "ws" + srv.url.removeprefix("http") + "/v1/graphql"
        async with websockets.connect(url) as ws:  # no sub-protocol: Apollo graphql-ws
            await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
            frames = []
            start = {"query": query, "variables": {"id": call_id}}
            await ws.send(json.dumps({"id": "1", "type": "start", "payload": start}))
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                frame = json.loads(await asyncio.wait_for(ws.recv(), 15))
                if frame.get("type") == "data":
                    frames.append(frame["payload"])
                    if frame["payload"]["data"]["signup"]["output"] is not None:
                        break
            await ws.send(json.dumps({"id": "1", "type": "stop"}))
            return frames

    frames = asyncio.run(follow())
    assert frames[0] == {"data": {"signup": {"id": call_id, "output": None}}}
    assert frames[-1] == {
        "data": {"signup": {"id": call_id, "output": {"id": 1, "user": {"name": "Ada"}}}}
    }
    assert len(frames) == 2  # pushed only when the answer changed


def test_a_call_survives_a_sigkill(database: str, hook: HttpFixture, srv: ServerProcess) -> None:
    arrived: list[float] = []

    def signup(req: Recorded) -> Reply:
        arrived.append(time.monotonic())
        if len(arrived) == 1:
            return Reply(200, b'{"id": 1}', delay=30)  # the first process dies meanwhile
        return Reply(200, b'{"id": 1}')

    hook.route("/signup", signup)
    srv.stop()  # the only process that can deliver the call is the victim
    victim = ServerProcess(database, env=ENV)
    try:
        call_id = call(victim)
        deadline = time.monotonic() + 10
        while not arrived:
            assert time.monotonic() < deadline, "the handler was never called"
            time.sleep(0.05)
        victim.proc.send_signal(signal.SIGKILL)
        victim.proc.wait(timeout=10)
    finally:
        victim.stop()
    restarted = ServerProcess(database, env=ENV)
    try:
        found = wait_result(restarted, call_id, within=20)
        assert found["output"] == {"id": 1, "user": {"name": "Ada"}}
        assert len(arrived) == 2  # delivered again by the restarted process
        assert arrived[1] - arrived[0] >= LOCK_TIMEOUT_S - 0.5  # once the claim went stale
    finally:
        restarted.stop()
