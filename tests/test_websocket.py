"""GraphQL over websockets (issues 13 and 23) against real `svc serve` processes under the
default server interface (ASGI, `svc/server/ws_asgi.py`): Python `gql` with both protocols
(query, mutation, subscription with a change, stop); raw `websockets` clients for
authentication, every close code the protocols define (sent or, where the reference never
sends it, the reference's behaviour in its place: `svc/server/ws_protocol.py`), keep-alive,
malformed frames, the operation bound, the message size bound, shutdown and JWT expiry.

A small section runs `--server-interface rsgi`: an upgrade asking for a sub-protocol is
refused with HTTP 501 and a log line naming `--server-interface asgi`; one without a
sub-protocol is served with Apollo's protocol (`svc/server/ws_rsgi.py`).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import jwt
import pytest
import websockets
from gql import Client, gql
from gql.transport.websockets import WebsocketsTransport

from tests.support import ServerProcess, create_database

SECRET = "ws-secret"
JWT_KEY = "ws-tests-hmac-key-of-at-least-32-characters"
JWT_CONFIG = json.dumps({"type": "HS256", "key": JWT_KEY})
CLAIMS_NS = "https://svc.io/jwt/claims"
ENV = {"SVC_GRAPHQL_WEBSOCKET_KEEPALIVE": "1", "SVC_GRAPHQL_WEBSOCKET_MAX_OPERATIONS": "3"}
SETUP = [
    {
        "type": "run_sql",
        "args": {"sql": "CREATE TABLE item (id serial PRIMARY KEY, name text NOT NULL)"},
    },
    {"type": "track_table", "args": {"schema": "public", "name": "item"}},
]
USER_CAN_READ = {
    "type": "create_select_permission",
    "args": {
        "table": "item",
        "role": "user",
        "permission": {"columns": ["id", "name"], "filter": {}},
    },
}
TRANSPORT = "graphql-transport-ws"
QUERY = {"query": "{ item { id } }"}
# Server kinds: the arguments each starts with (none names --server-interface but "rsgi").
KINDS: dict[str, list[str]] = {
    "open": ["--max-body-size", "20000"],
    "secured": ["--admin-secret", SECRET],
    "jwt": ["--admin-secret", SECRET, "--jwt-secret", JWT_CONFIG],
    "rsgi": ["--server-interface", "rsgi"],
}


class Transport(WebsocketsTransport):
    """gql's websockets transport reading the accepted sub-protocol case-insensitively:
    gql 4.0 looks up `Sec-WebSocket-Protocol` in a plain dict of the raw response headers,
    and Granian (hyper) sends header names in lower case, as HTTP/1.1 allows; without
    this gql would assume Apollo's protocol on a graphql-transport-ws connection."""

    async def _after_connect(self) -> None:
        headers = {k.lower(): v for k, v in self.response_headers.items()}
        self.subprotocol = headers.get("sec-websocket-protocol", self.APOLLO_SUBPROTOCOL)


class Servers(dict[str, ServerProcess]):
    """Server kind (`KINDS`) → a server with `item` tracked, started on first use."""

    def __init__(self, pg_url: str) -> None:
        super().__init__()
        self.pg_url = pg_url

    def __missing__(self, kind: str) -> ServerProcess:
        args = KINDS[kind]
        server = ServerProcess(create_database(self.pg_url), *args, env=ENV)
        headers = {"x-svc-admin-secret": SECRET} if "--admin-secret" in args else {}
        steps = [*SETUP, USER_CAN_READ] if kind == "jwt" else SETUP
        r = server.query({"type": "bulk", "args": steps}, headers=headers)
        assert r.status_code == 200, r.text
        self[kind] = server
        return server


@pytest.fixture(scope="module")
def servers(pg_url: str) -> Iterator[Servers]:
    found = Servers(pg_url)
    try:
        yield found
    finally:
        for server in found.values():
            server.stop()


async def get(servers: Servers, kind: str = "open") -> ServerProcess:
    """The server, started in a thread (its start blocks, and creating its database runs
    an event loop of its own)."""
    return await asyncio.to_thread(servers.__getitem__, kind)


def ws_url(server: ServerProcess, path: str = "/v1/graphql") -> str:
    return "ws" + server.url.removeprefix("http") + path


@pytest.fixture
async def raw(servers: Servers) -> AsyncIterator[Any]:
    """`open(protocols=None, kind="open", path=...)` → a websockets client."""
    opened: list[Any] = []

    async def open_ws(protocols: list[str] | None = None, kind: str = "open", **kw: Any) -> Any:
        server = await get(servers, kind)
        ws = await websockets.connect(
            ws_url(server, kw.get("path", "/v1/graphql")), subprotocols=protocols
        )
        opened.append(ws)
        return ws

    yield open_ws
    for ws in opened:
        await ws.close()


async def frames(ws: Any, n: int, within: float = 5.0, keepalive: bool = False) -> list[Any]:
    """The next `n` frames (keep-alives skipped unless `keepalive`)."""
    out: list[Any] = []
    deadline = time.monotonic() + within
    while len(out) < n:
        frame = json.loads(await asyncio.wait_for(ws.recv(), deadline - time.monotonic()))
        if keepalive or frame.get("type") not in ("ka", "ping"):
            out.append(frame)
    return out


async def closed_with(ws: Any, within: float) -> tuple[int | None, str, list[Any]]:
    """Wait for the server to close `ws`: (its close code, None when the close frame had no
    status; its reason; the frames received meanwhile, keep-alives included)."""
    deadline = time.monotonic() + within
    seen: list[Any] = []
    with pytest.raises(websockets.ConnectionClosed):
        while True:
            seen.append(json.loads(await asyncio.wait_for(ws.recv(), deadline - time.monotonic())))
    code: int | None = ws.close_code
    return (None if code == 1005 else code), ws.close_reason or "", seen


async def closed_code(ws: Any, within: float) -> int | None:
    """Wait for the server to close `ws`; its close code (None: no code sent)."""
    code, _, _ = await closed_with(ws, within)
    return code


async def gql_round_trip(transport: WebsocketsTransport, name: str) -> None:
    """Query, mutation, subscription (first result, then the change a mutation makes), stop."""
    async with Client(transport=transport, fetch_schema_from_transport=False) as session:
        first = await session.execute(gql("query { item(order_by: {id: asc}) { name } }"))
        assert first == {"item": []}
        sub = session.subscribe(
            gql(f'subscription {{ item(where: {{name: {{_eq: "{name}"}}}}) {{ name }} }}')
        )
        assert await asyncio.wait_for(anext(sub), 10) == {"item": []}
        inserted = await session.execute(
            gql(f'mutation {{ insert_item(objects: [{{name: "{name}"}}]) {{ affected_rows }} }}')
        )
        assert inserted == {"insert_item": {"affected_rows": 1}}
        assert await asyncio.wait_for(anext(sub), 10) == {"item": [{"name": name}]}
        await sub.aclose()  # gql sends stop / complete


async def test_gql_apollo(servers: Servers) -> None:
    """gql's Apollo transport (subscriptions-transport-ws protocol)."""
    server = await get(servers)
    server.query({"type": "run_sql", "args": {"sql": "TRUNCATE item"}})
    apollo = WebsocketsTransport.APOLLO_SUBPROTOCOL
    await gql_round_trip(Transport(url=ws_url(server), subprotocols=[apollo]), "a")


async def test_gql_graphql_transport_ws(servers: Servers) -> None:
    """gql's graphql-ws transport (graphql-transport-ws protocol)."""
    server = await get(servers)
    server.query({"type": "run_sql", "args": {"sql": "TRUNCATE item"}})
    proto = WebsocketsTransport.GRAPHQLWS_SUBPROTOCOL
    transport = Transport(url=ws_url(server), subprotocols=[proto])
    await asyncio.wait_for(gql_round_trip(transport, "g"), 30)


async def test_gql_default_protocols(servers: Servers) -> None:
    """gql offering both protocols (its default): the server picks graphql-transport-ws."""
    server = await get(servers)
    server.query({"type": "run_sql", "args": {"sql": "TRUNCATE item"}})
    transport = Transport(url=ws_url(server))
    await gql_round_trip(transport, "d")
    assert transport.subprotocol == TRANSPORT


async def test_subprotocol_echoed(raw: Any) -> None:
    ws = await raw([TRANSPORT])
    assert ws.subprotocol == TRANSPORT
    ws = await raw(["graphql-ws"])
    assert ws.subprotocol == "graphql-ws"
    ws = await raw()
    assert ws.subprotocol is None


async def test_other_paths_refused(raw: Any) -> None:
    with pytest.raises(websockets.InvalidStatus) as caught:
        await raw(path="/v1/query")
    assert caught.value.response.status_code == 404
    assert b"only '/v1/graphql'" in caught.value.response.body


async def test_auth_apollo(raw: Any) -> None:
    """Apollo: init without the admin secret fails with connection_error and the socket
    stays open (a start is then refused); with it in payload.headers it is acknowledged."""
    ws = await raw(kind="secured")
    await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
    (error,) = await frames(ws, 1)
    assert error == {
        "type": "connection_error",
        "payload": "x-svc-admin-secret required, but not found",
    }
    await ws.send(json.dumps({"id": "1", "type": "start", "payload": {"query": "{ item { id } }"}}))
    failed, complete = await frames(ws, 2)
    assert failed["payload"]["errors"][0]["extensions"]["code"] == "start-failed"
    assert "connection_init failed" in failed["payload"]["errors"][0]["message"]
    assert complete == {"type": "complete", "id": "1"}
    headers = {"X-Svc-Admin-Secret": SECRET}
    await ws.send(json.dumps({"type": "connection_init", "payload": {"headers": headers}}))
    assert await frames(ws, 1) == [{"type": "connection_ack"}]
    await ws.send(json.dumps({"id": "2", "type": "start", "payload": {"query": "{ item { id } }"}}))
    data, complete = await frames(ws, 2)
    assert data["type"] == "data" and "data" in data["payload"]


# -- close codes (graphql-transport-ws; `svc/server/ws_protocol.py` names the source of each)


async def test_close_4400_invalid_message(raw: Any) -> None:
    """A frame that is no client message (not JSON; `complete` without `id`) closes the
    socket with 4400 and the parse error as reason."""
    for bad in ("not json", '{"type": "complete"}'):
        ws = await raw([TRANSPORT])
        await ws.send(json.dumps({"type": "connection_init"}))
        assert await frames(ws, 1) == [{"type": "connection_ack"}]
        await ws.send(bad)
        code, reason, _ = await closed_with(ws, 3)
        assert code == 4400
        assert reason.startswith("parsing ClientMessage failed: Error in $"), reason


async def test_close_4403_forbidden_init(raw: Any) -> None:
    """connection_init whose authentication fails (no admin secret; a wrong one) closes
    the socket with 4403 "Forbidden" before any frame (Hasura's `mkWSServerErrorCode`)."""
    for payload in ({}, {"headers": {"X-Svc-Admin-Secret": "wrong"}}):
        ws = await raw([TRANSPORT], kind="secured")
        await ws.send(json.dumps({"type": "connection_init", "payload": payload}))
        assert await closed_with(ws, 3) == (4403, "Forbidden", [])
    ws = await raw([TRANSPORT], kind="secured")  # the right secret: acknowledged
    headers = {"X-Svc-Admin-Secret": SECRET}
    await ws.send(json.dumps({"type": "connection_init", "payload": {"headers": headers}}))
    assert await frames(ws, 1) == [{"type": "connection_ack"}]


async def test_close_4408_init_timeout(raw: Any) -> None:
    """No connection_init within 3 s: closed 4408 "Connection initialisation timeout"."""
    ws = await raw([TRANSPORT])
    started = time.monotonic()
    assert await closed_with(ws, 6) == (4408, "Connection initialisation timeout", [])
    assert 2.5 < time.monotonic() - started < 5


async def test_an_apollo_socket_without_init_is_closed_too(raw: Any) -> None:
    """subscriptions-transport-ws defines no close codes; a socket that never sends
    connection_init was kept open forever (issue 31): it gets the same 4408 after 3 s."""
    ws = await raw(["graphql-ws"])
    started = time.monotonic()
    assert await closed_with(ws, 6) == (4408, "Connection initialisation timeout", [])
    assert 2.5 < time.monotonic() - started < 5


async def test_no_4401_subscribe_before_ack(raw: Any) -> None:
    """The reference never sends 4401: a subscribe before connection_init is answered
    `error` (`start-failed`) and `complete`, then the socket closes with 1000, reason
    "4400: start received before the connection is initialised"."""
    ws = await raw([TRANSPORT])
    await ws.send(
        json.dumps({"id": "1", "type": "subscribe", "payload": {"query": "{ item { id } }"}})
    )
    message = "start received before the connection is initialised"
    code, reason, seen = await closed_with(ws, 3)
    assert (code, reason) == (1000, f"4400: {message}")
    error, complete = seen
    assert error["type"] == "error" and error["id"] == "1"
    assert error["payload"][0]["message"] == message
    assert error["payload"][0]["extensions"]["code"] == "start-failed"
    assert complete == {"type": "complete", "id": "1"}


async def test_no_4409_duplicate_subscriber(raw: Any) -> None:
    """The reference never sends 4409: a subscribe reusing the id of a running
    subscription is answered `error` and `complete`, then the socket closes with 1000,
    reason "4400: an operation already exists with this id: 1"."""
    ws = await raw([TRANSPORT])
    await ws.send(json.dumps({"type": "connection_init"}))
    sub = {"query": "subscription { item { id } }"}
    await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": sub}))
    ack, first = await frames(ws, 2)
    assert ack == {"type": "connection_ack"} and first["type"] == "next"
    await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": sub}))
    message = "an operation already exists with this id: 1"
    code, reason, seen = await closed_with(ws, 3)
    assert (code, reason) == (1000, f"4400: {message}")
    errors = [f for f in seen if f["type"] == "error"]
    assert [e["payload"][0]["message"] for e in errors] == [message]
    assert seen[-1] == {"type": "complete", "id": "1"}


async def test_no_4429_second_init(raw: Any) -> None:
    """The reference never sends 4429: a second connection_init is acknowledged again and
    the connection keeps serving."""
    ws = await raw([TRANSPORT])
    await ws.send(json.dumps({"type": "connection_init"}))
    await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
    assert await frames(ws, 2) == [{"type": "connection_ack"}] * 2
    await ws.send(
        json.dumps({"id": "q", "type": "subscribe", "payload": {"query": "{ item { id } }"}})
    )
    data, complete = await frames(ws, 2)
    assert data["type"] == "next" and complete == {"type": "complete", "id": "q"}


async def test_close_1009_message_too_large(raw: Any) -> None:
    """A frame over --max-body-size (20,000 bytes here) closes the socket with 1009."""
    for protocols in (None, [TRANSPORT]):
        ws = await raw(protocols)
        await ws.send(json.dumps({"type": "connection_init", "payload": {"x": "y" * 30_000}}))
        assert await closed_code(ws, 3) == 1009


async def test_close_1001_on_sigterm(pg_url: str) -> None:
    """SIGTERM: open sockets of both protocols are closed with 1001 at once, so the server
    stops well inside its 30 s grace period."""
    server = await asyncio.to_thread(lambda: ServerProcess(create_database(pg_url)))
    try:
        server.query({"type": "bulk", "args": SETUP})
        sockets = []
        for protocols, start, data in ((None, "start", "data"), ([TRANSPORT], "subscribe", "next")):
            ws = await websockets.connect(ws_url(server), subprotocols=protocols)
            await ws.send(json.dumps({"type": "connection_init"}))
            sub = {"query": "subscription { item { id } }"}
            await ws.send(json.dumps({"id": "1", "type": start, "payload": sub}))
            assert [f["type"] for f in await frames(ws, 2)] == ["connection_ack", data]
            sockets.append(ws)
        started = time.monotonic()
        server.proc.terminate()
        for ws in sockets:
            assert await closed_code(ws, 10) == 1001
        await asyncio.to_thread(server.proc.wait, 20)
        assert time.monotonic() - started < 10
    finally:
        server.stop()


# -- keep-alive, malformed frames, operations


async def test_keepalive_and_ping(raw: Any) -> None:
    """Keep-alives every SVC_GRAPHQL_WEBSOCKET_KEEPALIVE (1 s here) after the ack; a client
    ping is answered with pong and its payload."""
    apollo = await raw()
    await apollo.send(json.dumps({"type": "connection_init"}))
    got = await frames(apollo, 3, within=4, keepalive=True)
    assert got == [{"type": "connection_ack"}, {"type": "ka"}, {"type": "ka"}]
    new = await raw([TRANSPORT])
    await new.send(json.dumps({"type": "connection_init"}))
    await new.send(json.dumps({"type": "ping", "payload": {"n": 1}}))
    got = await frames(new, 3, within=4, keepalive=True)
    assert got[:2] == [{"type": "connection_ack"}, {"type": "pong", "payload": {"n": 1}}]
    assert got[2] == {"type": "ping", "payload": {"message": "keepalive"}}


async def test_malformed_frames_apollo(raw: Any) -> None:
    """Apollo: a frame that is no client message gets connection_error; the socket stays."""
    ws = await raw()
    for bad in ("not json", "[1]", '{"type": "start", "id": 1, "payload": {}}', '{"type":"x"}'):
        await ws.send(bad)
        (frame,) = await frames(ws, 1)
        assert frame["type"] == "connection_error"
        assert frame["payload"].startswith("parsing ClientMessage failed: ")


async def test_operation_bound_and_stop(raw: Any) -> None:
    """At most SVC_GRAPHQL_WEBSOCKET_MAX_OPERATIONS (3 here) run at once; a stopped one
    frees its place and sends nothing more."""
    ws = await raw()
    await ws.send(json.dumps({"type": "connection_init"}))
    await frames(ws, 1)
    for i in range(4):
        sub = {"query": f"subscription {{ item(limit: {i + 1}) {{ id }} }}"}
        await ws.send(json.dumps({"id": str(i), "type": "start", "payload": sub}))
    got = await frames(ws, 5)
    refused = [f for f in got if f["id"] == "3"]
    assert [f["type"] for f in refused] == ["error", "complete"]
    assert "too many operations" in refused[0]["payload"]["errors"][0]["message"]
    await ws.send(json.dumps({"id": "0", "type": "stop"}))
    await ws.send(json.dumps({"id": "9", "type": "start", "payload": {"query": "{ item { id } }"}}))
    assert [f["type"] for f in await frames(ws, 2)] == ["data", "complete"]
    with pytest.raises(TimeoutError):
        await frames(ws, 1, within=2.5)


# -- JWT expiry


def _token(exp: float) -> str:
    claims = {"x-svc-allowed-roles": ["user"], "x-svc-default-role": "user"}
    return jwt.encode({"exp": int(exp), CLAIMS_NS: claims}, JWT_KEY, algorithm="HS256")


@pytest.mark.parametrize("protocols", [None, [TRANSPORT]], ids=["apollo", TRANSPORT])
async def test_jwt_expiry_ends_connection(
    raw: Any, servers: Servers, protocols: list[str] | None
) -> None:
    """A connection initialised with a JWT whose `exp` is 2 s ahead serves until then and
    is ended at `exp` without a status code and without a frame (Hasura v2 `WebSocket.hs`
    `tokenExpiryHandler`: the connection's threads end, no close frame; svc's server then
    sends a close frame without status, 1005). An admin-secret connection opened at the
    same time on the same server stays open."""
    start = "start" if protocols is None else "subscribe"
    await get(servers, "jwt")  # started before the clock runs
    exp = int(time.time()) + 3  # whole seconds: `exp` is 2 to 3 s ahead
    user = await raw(protocols, kind="jwt")
    headers = {"Authorization": f"Bearer {_token(exp)}"}
    await user.send(json.dumps({"type": "connection_init", "payload": {"headers": headers}}))
    sub = {"query": "subscription { item { id } }"}
    await user.send(json.dumps({"id": "1", "type": start, "payload": sub}))
    ack, first = await frames(user, 2)
    assert ack == {"type": "connection_ack"}
    assert first["payload"] == {"data": {"item": []}}
    admin = await raw(protocols, kind="jwt")
    secret = {"X-Svc-Admin-Secret": SECRET}
    await admin.send(json.dumps({"type": "connection_init", "payload": {"headers": secret}}))
    assert await frames(admin, 1) == [{"type": "connection_ack"}]

    code, reason, seen = await closed_with(user, exp - time.time() + 2)
    closed_at = time.time()
    assert (code, reason) == (None, "")
    assert [f for f in seen if f["type"] not in ("ka", "ping")] == []
    assert exp - 0.1 <= closed_at < exp + 1.5, closed_at - exp
    keepalive = await frames(admin, 1, within=3, keepalive=True)  # still served
    assert keepalive[0]["type"] in ("ka", "ping")


async def test_jwt_expired_token_refused(raw: Any) -> None:
    """A token already expired is refused at connection_init (graphql-transport-ws: 4403;
    Apollo: connection_error naming JWTExpired)."""
    headers = {"Authorization": f"Bearer {_token(time.time() - 60)}"}
    ws = await raw([TRANSPORT], kind="jwt")
    await ws.send(json.dumps({"type": "connection_init", "payload": {"headers": headers}}))
    assert await closed_with(ws, 3) == (4403, "Forbidden", [])
    ws = await raw(kind="jwt")
    await ws.send(json.dumps({"type": "connection_init", "payload": {"headers": headers}}))
    assert await frames(ws, 1) == [
        {"type": "connection_error", "payload": "Could not verify JWT: JWTExpired"}
    ]


# -- --server-interface rsgi


async def _log_line(server: ServerProcess, needle: str, within: float = 5.0) -> dict[str, Any]:
    """The first JSON line of the server's output (`ServerProcess.log_path`: its stdout and
    stderr) that contains `needle`; fails after `within` seconds."""
    deadline = time.monotonic() + within
    while True:
        for line in server.log_path.read_text(errors="replace").splitlines():
            if needle in line and line.startswith("{"):
                entry: dict[str, Any] = json.loads(line)
                return entry
        assert time.monotonic() < deadline, f"no log line with {needle!r}"
        await asyncio.sleep(0.1)


async def test_rsgi_refuses_subprotocol_with_501(raw: Any, servers: Servers) -> None:
    """Under --server-interface rsgi an upgrade that asks for a sub-protocol gets HTTP 501
    and the server logs a line naming --server-interface asgi."""
    for protocols in ([TRANSPORT], ["graphql-ws"]):
        with pytest.raises(websockets.InvalidStatus) as caught:
            await raw(protocols, kind="rsgi")
        assert caught.value.response.status_code == 501
    entry = await _log_line(await get(servers, "rsgi"), "websocket refused")
    assert entry["type"] == "websocket-log" and entry["status"] == 501
    assert "--server-interface asgi" in entry["message"]


async def test_rsgi_serves_apollo_without_subprotocol(raw: Any) -> None:
    """Under --server-interface rsgi an upgrade without a sub-protocol is served with
    Apollo's protocol."""
    ws = await raw(kind="rsgi")
    assert ws.subprotocol is None
    await ws.send(json.dumps({"type": "connection_init"}))
    assert await frames(ws, 1) == [{"type": "connection_ack"}]
    await ws.send(json.dumps({"id": "1", "type": "start", "payload": {"query": "{ item { id } }"}}))
    data, complete = await frames(ws, 2)
    assert data == {"type": "data", "id": "1", "payload": {"data": {"item": []}}}
    assert complete == {"type": "complete", "id": "1"}


CYCLES = 1000
SUBSCRIBE = json.dumps(
    {"id": "1", "type": "start", "payload": {"query": "subscription { item { id } }"}}
)
INIT = json.dumps({"type": "connection_init"})


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def _worker_pid(server: ServerProcess) -> int:
    children = Path(f"/proc/{server.proc.pid}/task/{server.proc.pid}/children").read_text().split()
    assert len(children) == 1, children
    return int(children[0])


async def test_cycles_real_server_no_growth(pg_url: str) -> None:
    """1,000 connect / init / subscribe / first result / close cycles over real sockets
    against one worker (default interface): its RSS grows by less than 8 MB after a
    200-cycle warm-up and its open descriptors return to where they were."""
    server = await asyncio.to_thread(
        lambda: ServerProcess(create_database(pg_url), "--workers", "1")
    )
    try:
        server.query({"type": "bulk", "args": SETUP})
        worker = _worker_pid(server)

        async def cycle() -> None:
            async with websockets.connect(ws_url(server)) as ws:
                await ws.send(INIT)
                await ws.send(SUBSCRIBE)
                assert [f["type"] for f in await frames(ws, 2)] == ["connection_ack", "data"]

        for _ in range(200):
            await cycle()
        await asyncio.sleep(0.5)
        rss, fds = _rss_kb(worker), len(os.listdir(f"/proc/{worker}/fd"))
        for _ in range(CYCLES):
            await cycle()
        await asyncio.sleep(0.5)
        grown = _rss_kb(worker) - rss
        assert grown < 8 * 1024, f"worker RSS grew by {grown} kB over {CYCLES} cycles"
        assert len(os.listdir(f"/proc/{worker}/fd")) <= fds
    finally:
        server.stop()


class _AsgiPeer:
    """Drives the ASGI app's websocket directly (in memory): what a server would do."""

    def __init__(self) -> None:
        self.inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    async def frame(self) -> Any:
        message = await asyncio.wait_for(self.outbox.get(), 10)
        assert message["type"] == "websocket.send", message
        return json.loads(message["text"])

    def receive(self, text: str) -> None:
        self.inbox.put_nowait({"type": "websocket.receive", "text": text})


async def test_cycles_in_process_release_everything(pg_url: str) -> None:
    """1,000 cycles through the ASGI app in this process (real engine and Postgres, the
    server replaced by in-memory queues): afterwards no session, live query, cohort or
    subscriber is left and the event loop holds as many tasks as before."""
    from svc.config import Config
    from svc.server.app import App

    url = await asyncio.to_thread(create_database, pg_url)
    app = App(Config.from_env({}, database_url=url, log_requests=False))
    await app.startup()
    assert app.engine is not None
    try:
        await app.engine.metadata({"type": "bulk", "args": SETUP}, "admin", {"x-svc-role": "admin"})

        async def cycle() -> None:
            peer = _AsgiPeer()
            peer.inbox.put_nowait({"type": "websocket.connect"})
            scope = {"type": "websocket", "path": "/v1/graphql", "headers": []}
            task = asyncio.ensure_future(app(scope, peer.inbox.get, peer.outbox.put))
            assert (await peer.outbox.get())["type"] == "websocket.accept"
            peer.receive(INIT)
            assert (await peer.frame())["type"] == "connection_ack"
            peer.receive(SUBSCRIBE)
            assert (await peer.frame())["type"] == "data"
            peer.inbox.put_nowait({"type": "websocket.disconnect", "code": 1000})
            await asyncio.wait_for(task, 10)

        for _ in range(50):
            await cycle()
        await asyncio.sleep(0.2)
        tasks = len(asyncio.all_tasks())
        for _ in range(CYCLES):
            await cycle()
        await asyncio.sleep(0.2)
        assert len(app.ws.sessions) == 0
        assert app.engine.live.counts() == (0, 0, 0)
        assert len(asyncio.all_tasks()) <= tasks
    finally:
        await app.shutdown()
