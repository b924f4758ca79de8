"""Fixture `actions` (127.0.0.1:5593, FIXTURES.md §6.1): the action handler of the
conformance corpus, written from the fixture's description; and `actions_remote_join`
(127.0.0.1:4001, §6.2), the small remote schema an action output may join.

Single-threaded HTTP/1.0; every JSON answer carries exactly `Content-Type:
application/json` then `Set-Cookie: abcd` and ends when the connection closes. Some routes
call back into the engine's `/v1/graphql` as admin: the engine is `engine_url` when a
driver set it, else `SVC_ACTIONS_ENGINE_URL`, else the last `svc serve` started by
`tests.support.ServerProcess` (the conformance runner's).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import httpx

PORT = 5593
engine_url: str | None = None

EMAIL = re.compile(r"^[\w]+([.-]?[\w]+)*@[\w]+([.-]?[\w]+)*(\.\w{2,3})+$")
NESTED = {
    "address": {"city": "New York", "country": "USA"},
    "addresses": [
        {"city": "Bangalore", "country": "India"},
        {"city": "Melbourne", "country": "Australia"},
    ],
}
FIXED: dict[str, Any] = {
    "/null-response": None,
    "/scalar-response": "some-string",
    "/json-response": {"foo": "bar"},
    "/custom-scalar-array-response": [{"foo": "bar"}],
    "/scalar-array-response": ["foo", "bar", None],
    "/recursive-output": {
        "direct": {"id": 1, "this": {"id": 2, "this": {"id": 3}}},
        "list": {"id": 1, "these": [{"id": 2, "these": [{"id": 3}]}, {"id": 4}]},
        "mutual": {"id": 1, "that": {"id": 2, "other": {"id": 3, "that": {"id": 4}}}},
    },
    "/get-results": {"result_ids": [1, 2, 3, 4]},
    "/typed-nested-null": {"id": 1, "child": None},
    "/typed-nested-null-wrong-field": {"id": None, "child": None},
    "/get_messages": [
        {"content": "baz", "user_name": "foo"},
        {"content": "foo", "user_name": "bar"},
    ],
}


class Failed(Exception):
    """Answer 400 with `body`."""

    def __init__(self, body: Any) -> None:
        super().__init__("handler error")
        self.body = body


def _engine() -> str:
    if engine_url:
        return engine_url
    if os.environ.get("SVC_ACTIONS_ENGINE_URL"):
        return os.environ["SVC_ACTIONS_ENGINE_URL"]
    from tests.support import ServerProcess

    assert ServerProcess.latest_url is not None, "no engine for the actions fixture"
    return ServerProcess.latest_url


def _graphql(query: str, variables: dict[str, Any]) -> Any:
    """Run a query on the engine as admin; `Failed` (the reference's "GraphQL query
    execution failed") when it answers errors."""
    r = httpx.post(
        _engine() + "/v1/graphql", json={"query": query, "variables": variables}, timeout=30
    )
    body = r.json()
    if "errors" in body:
        raise Failed({"message": "GraphQL query execution failed", "code": "unexpected"})
    return body["data"]


def _email(value: Any, message: str = "Given email address is not valid") -> None:
    if not isinstance(value, str) or not EMAIL.match(value):
        raise Failed({"message": message, "code": "invalid-email"})


def _create_user(inp: dict[str, Any]) -> Any:
    _email(inp.get("email"))
    data = _graphql(
        "mutation ($email: String!, $name: String!) "
        "{ insert_user_one(object: {email: $email, name: $name}) { id } }",
        {"email": inp["email"], "name": inp["name"]},
    )
    return data["insert_user_one"]


def _create_users(inp: dict[str, Any]) -> Any:
    for user in inp["users"]:
        _email(user.get("email"), f"Email address is not valid: {user.get('email')}")
    data = _graphql(
        "mutation ($users: [user_insert_input!]!) "
        "{ insert_user(objects: $users) { returning { id } } }",
        {"users": [{"email": u["email"], "name": u["name"]} for u in inp["users"]]},
    )
    return data["insert_user"]["returning"]


def _users_by_email(inp: dict[str, Any]) -> list[Any]:
    _email(inp.get("email"))
    data = _graphql(
        "query ($email: String!) "
        "{ user(where: {email: {_eq: $email}}, order_by: {id: asc}) { id } }",
        {"email": inp["email"]},
    )
    return list(data["user"])


def _nested(row: Any) -> Any:
    return {"id": row["id"], **NESTED, "user_id": {"id": row["id"]}}


ROUTES: dict[str, Callable[[dict[str, Any], dict[str, Any]], Any]] = {
    "/create-user": lambda inp, _: _create_user(inp),
    "/create-user-timeout": lambda inp, _: (time.sleep(3), _create_user(inp))[1],
    "/create-users": lambda inp, _: _create_users(inp),
    "/create-user-nested": lambda inp, _: {"userObj": _create_user(inp)},
    "/mirror-action": lambda inp, _: inp.get("arg"),
    "/get-user-by-email": lambda inp, _: (_users_by_email(inp) or [None])[0],
    "/get-users-by-email": lambda inp, _: _users_by_email(inp),
    "/get-user-by-email-nested": lambda inp, _: _nested((_users_by_email(inp) or [{}])[0]),
    "/get-users-by-email-nested": lambda inp, _: [_nested(r) for r in _users_by_email(inp)],
}


class Handler(BaseHTTPRequestHandler):
    """The routes of FIXTURES.md §6.1."""

    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _json(self, status: int, body: Any, raw: bytes | None = None) -> None:
        text = raw if raw is not None else json.dumps(body).encode()
        reason = {200: "OK", 400: "Bad Request"}.get(status, "OK")
        head = (
            f"HTTP/1.0 {status} {reason}\r\nContent-Type: application/json\r\n"
            "Set-Cookie: abcd\r\n\r\n"
        )
        self.wfile.write(head.encode() + text)

    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        payload = json.loads(self.rfile.read(length) or b"null")
        inp = (payload or {}).get("input") or {}
        path = self.path
        if path == "/mirror-headers":
            headers = [{"name": k, "value": v} for k, v in self.headers.items()]
            return self._json(200, {"headers": headers})
        if path == "/intentional-error":
            return self._json(400, inp.get("blob"))
        if path in FIXED:
            return self._json(200, FIXED[path])
        route = ROUTES.get(path)
        if route is None:
            self.send_response(204)
            self.end_headers()
            return None
        try:
            return self._json(200, route(inp, payload))
        except Failed as exc:
            return self._json(400, exc.body)


def _bind(
    port: int, handler: type[BaseHTTPRequestHandler] = Handler, wait_s: float = 120.0
) -> HTTPServer:
    """The server on `port`, waiting while another run of the corpus holds the port."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            return HTTPServer(("127.0.0.1", port), handler)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


REMOTE_JOIN_PORT = 4001
REMOTE_JOIN_SDL = """
interface Communication { id: Int!  msg: String! }
type Message implements Communication { id: Int!  name: String!  msg: String!  errorMsg: String }
type Query { hello: String  message(id: Int!): Message }
"""
MESSAGES = {
    1: {"id": 1, "name": "Clarke", "msg": "Welcome to the team, Clarke"},
    2: {"id": 2, "name": "Alice", "msg": "Welcome to the team, Alice"},
}


def _remote_join_schema() -> Any:
    """FIXTURES.md §6.2's schema with its resolvers (graphql-core)."""
    from graphql import build_schema

    schema = build_schema(REMOTE_JOIN_SDL)
    query = schema.query_type
    assert query is not None
    query.fields["hello"].resolve = lambda *_: "world"
    query.fields["message"].resolve = lambda _, __, id: MESSAGES.get(id)

    def error_msg(*_: Any) -> None:
        raise ValueError("intentional-error")

    message = schema.get_type("Message")
    message.fields["errorMsg"].resolve = error_msg  # type: ignore[union-attr]
    message.is_type_of = lambda value, _: isinstance(value, dict)  # type: ignore[union-attr]
    return schema


class RemoteJoinHandler(BaseHTTPRequestHandler):
    """`actions_remote_join` (127.0.0.1:4001): a GraphQL server answering as Apollo Server
    2 does (errors carry only `message`, `locations`, `path`)."""

    schema: Any = None

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        from graphql import graphql_sync

        length = int(self.headers.get("Content-Length") or 0)
        req = json.loads(self.rfile.read(length) or b"{}")
        result = graphql_sync(
            type(self).schema,
            req.get("query") or "",
            variable_values=req.get("variables"),
            operation_name=req.get("operationName"),
        )
        body: dict[str, Any] = {"data": result.data}
        if result.errors:
            body["errors"] = [
                {k: v for k, v in e.formatted.items() if k in ("message", "locations", "path")}
                for e in result.errors
            ]
        text = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(text)))
        self.end_headers()
        self.wfile.write(text)


@contextlib.contextmanager
def _running(server: HTTPServer) -> Iterator[HTTPServer]:
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def serve(port: int = PORT) -> Iterator[HTTPServer]:
    """The `actions` fixture on 127.0.0.1:`port` (and `actions_remote_join` on 4001, with
    the default port) until the block ends."""
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(_running(_bind(port)))
        if port == PORT:
            RemoteJoinHandler.schema = _remote_join_schema()
            remote = _bind(REMOTE_JOIN_PORT, RemoteJoinHandler)
            stack.enter_context(_running(remote))
        yield server
