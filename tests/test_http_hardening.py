"""HTTP hardening (issue 11, findings 2, 5, 6, 11, 12) replayed against real servers.

Every case asserts the status, the error code and a non-empty JSON body with an
`x-request-id`: bodies that are not UTF-8, JSON nested 20,000 deep, bodies past
`--max-body-size`, duplicate credential headers, an auth webhook answering 500, Postgres
down (`/healthz`, metadata, GraphQL), `/healthz?strict=true` with inconsistent metadata,
`/healthz` answering fast while four 20 MB requests are processed, and a client that
disconnects cancelling its statement in Postgres.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from svc.config import Config
from svc.embedded import EmbeddedPostgres
from svc.server.app import App, Request
from tests.support import (
    ServerProcess,
    active_statements,
    create_database,
    free_port,
    server_with,
)

TWO_WORKERS = {"SVC_GRAPHQL_SERVER_WORKERS": "2"}
SETUP = """
create table author (id serial primary key, name text not null);
insert into author (name) values ('ann'), ('bob');
create view slow_author as select a.*, pg_sleep(30)::text as slept from author a where a.id = 1;
"""
QUERY = "{ author(order_by: {id: asc}) { id name } }"
SLOW = "{ slow_author { id slept } }"
ENDPOINTS = ["/v1/graphql", "/v1/query", "/v1/metadata", "/v1/graphql/explain", "/api/rest/authors"]


def _steps() -> list[dict[str, Any]]:
    return [
        {"type": "run_sql", "args": {"sql": SETUP}},
        {"type": "track_table", "args": {"name": "author"}},
        {"type": "track_table", "args": {"name": "slow_author"}},
        {
            "type": "create_query_collection",
            "args": {"name": "c", "definition": {"queries": [{"name": "all", "query": QUERY}]}},
        },
        {
            "type": "create_rest_endpoint",
            "args": {
                "name": "authors",
                "url": "authors",
                "methods": ["GET", "POST"],
                "definition": {"query": {"collection_name": "c", "query_name": "all"}},
            },
        },
    ]


@pytest.fixture(scope="module")
def srv(pg_url: str) -> Iterator[ServerProcess]:
    with server_with(pg_url, _steps(), env=TWO_WORKERS) as s:
        yield s


def json_error(r: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """Assert a JSON error answer of `status` and `code` (either body shape); returns it."""
    assert r.status_code == status, (r.status_code, r.text)
    assert r.content, "empty body"
    assert r.headers.get("x-request-id")
    body: dict[str, Any] = r.json()
    found = body["errors"][0]["extensions"]["code"] if "errors" in body else body["code"]
    assert found == code, body
    return body


def test_bodies_that_are_not_utf8_are_invalid_json(srv: ServerProcess) -> None:
    for path in ENDPOINTS:
        for raw in (b'\xff\xfe{"query": "{ author { id } }"}', b'{"query": "\xff"}'):
            r = srv.client.post(path, content=raw, headers={"content-type": "application/json"})
            json_error(r, 400, "invalid-json")


def test_json_nested_20000_deep_is_a_400(srv: ServerProcess) -> None:
    deep = "[" * 20_000 + "]" * 20_000
    query = "query ($v: jsonb) { __typename }"
    bodies = {
        "/v1/graphql": f'{{"query": "{query}", "variables": {{"v": {deep}}}}}',
        "/v1/graphql/explain": f'{{"query": {{"query": "{query}", "variables": {deep}}}}}',
        "/v1/query": f'{{"type": "bulk", "args": {deep}}}',
        "/v1/metadata": f'{{"type": "export_metadata", "args": {deep}}}',
    }
    for path, body in bodies.items():
        r = srv.client.post(path, content=body.encode())
        assert "nested too deeply" in json.dumps(json_error(r, 400, "invalid-json")), path
    # The server is unharmed.
    assert srv.graphql(QUERY)["data"]["author"][0]["name"] == "ann"


def test_request_id_is_echoed_or_generated(srv: ServerProcess) -> None:
    r = srv.client.post("/v1/graphql", json={"query": QUERY}, headers={"x-request-id": "abc-1"})
    assert r.headers["x-request-id"] == "abc-1"
    one = srv.client.get("/healthz").headers["x-request-id"]
    two = srv.client.get("/healthz").headers["x-request-id"]
    assert len(one) == 36 and one != two


def test_generated_request_ids_are_uuid4_shaped_and_differ_across_forks() -> None:
    import os
    import uuid

    from svc.server.app import request_id

    ids = [request_id(None) for _ in range(1000)]
    assert len(set(ids)) == 1000
    assert all(uuid.UUID(i).version == 4 and str(uuid.UUID(i)) == i for i in ids)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # a forked worker makes its own prefix
        os.write(write, request_id(None).encode())
        os._exit(0)
    os.waitpid(pid, 0)
    child = os.read(read, 64).decode()
    os.close(read)
    os.close(write)
    assert uuid.UUID(child).version == 4
    assert child[:24] != ids[0][:24]


def test_duplicate_credential_headers_are_refused(srv: ServerProcess) -> None:
    cases = [
        [("x-svc-admin-secret", "wrong"), ("x-svc-admin-secret", "right")],
        [("authorization", "Bearer a"), ("authorization", "Bearer b")],
        [("x-svc-role", "user"), ("X-Svc-Role", "admin")],
        [("x-svc-user-id", "1"), ("x-svc-user-id", "2")],
    ]
    for headers in cases:
        for path, body in (("/v1/graphql", {"query": QUERY}), ("/v1/query", {"type": "x"})):
            r = srv.client.post(path, json=body, headers=headers)
            body_out = json_error(r, 400, "invalid-headers")
            assert headers[0][0].lower() in json.dumps(body_out)
    # Other repeated headers are fine.
    r = srv.client.post("/v1/graphql", json={"query": QUERY}, headers=[("accept", "a/b")] * 2)
    assert r.status_code == 200 and "errors" not in r.json()


def test_body_size_limit(pg_url: str) -> None:
    limit = 100_000
    env = {**TWO_WORKERS, "SVC_GRAPHQL_MAX_BODY_SIZE": str(limit)}
    with server_with(pg_url, [], env=env) as s:
        big = json.dumps({"query": "#" + "x" * limit + "\n{ __typename }"}).encode()
        for path in ("/v1/graphql", "/v1/query", "/v1/graphql/explain"):
            # With a content-length (refused before reading) and chunked (counted).
            json_error(s.client.post(path, content=big), 413, "invalid-params")
            chunks = (big[i : i + 8192] for i in range(0, len(big), 8192))
            body = json_error(s.client.post(path, content=chunks), 413, "invalid-params")
            assert "too large" in json.dumps(body)
        small = json.dumps({"query": "#" + "x" * (limit - 100) + "\n{ __typename }"})
        r = s.client.post("/v1/graphql", content=small.encode())
        assert r.json() == {"data": {"__typename": "query_root"}}


def test_healthz_answers_while_four_20mb_requests_run(srv: ServerProcess) -> None:
    big = json.dumps({"query": "#" + "x" * 20_000_000 + "\n{ __typename }"}).encode()
    answers: list[Any] = []

    def post() -> None:
        with httpx.Client(base_url=srv.url, timeout=120) as c:
            answers.append(c.post("/v1/graphql", content=big).json())

    threads = [threading.Thread(target=post) for _ in range(4)]
    for t in threads:
        t.start()
    times: list[float] = []
    with httpx.Client(base_url=srv.url, timeout=10) as c:
        while any(t.is_alive() for t in threads):
            started = time.perf_counter()
            assert c.get("/healthz").text == "OK"
            times.append(time.perf_counter() - started)
            time.sleep(0.05)
    for t in threads:
        t.join()
    assert answers == [{"data": {"__typename": "query_root"}}] * 4
    assert len(times) >= 3
    # Before: parsing on the event loop stalled /healthz ~10 s. Now the parse threads only
    # compete for the GIL (and, on a busy 2-core machine, the CPU): a bound on the 90th
    # percentile and a looser one on the slowest.
    times.sort()
    p90 = times[int(len(times) * 0.9) - 1] if len(times) >= 10 else times[-1]
    assert p90 < 0.5, f"/healthz 90th percentile {p90:.2f} s"
    assert times[-1] < 2.0, f"/healthz took {times[-1]:.2f} s"


def test_client_disconnect_cancels_the_statement(srv: ServerProcess, pg_url: str) -> None:
    database = srv.proc.args[srv.proc.args.index("--database-url") + 1].rsplit("/", 1)[1]
    body = json.dumps({"query": SLOW}).encode()
    request = (
        f"POST /v1/graphql HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    ).encode() + body
    for _ in range(2):  # twice: the connection came back healthy and is used again
        with socket.create_connection(("127.0.0.1", srv.port)) as sock:
            sock.sendall(request)
            deadline = time.monotonic() + 5
            while active_statements(pg_url, database, "slow_author") == 0:
                assert time.monotonic() < deadline, "the slow statement never started"
                time.sleep(0.05)
        gone = time.monotonic()
        while active_statements(pg_url, database, "slow_author"):
            assert time.monotonic() - gone < 1.5, "statement still running after disconnect"
            time.sleep(0.05)
    assert srv.graphql(QUERY)["data"]["author"][1]["name"] == "bob"


class _Hook(BaseHTTPRequestHandler):
    """An auth webhook answering 500 to everything."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        payload = b"internal trouble"
        self.send_response(500)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


def test_auth_webhook_500_is_a_500_everywhere(pg_url: str) -> None:
    hook = ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
    hook.daemon_threads = True
    threading.Thread(target=hook.serve_forever, daemon=True).start()
    env = {
        **TWO_WORKERS,
        "SVC_GRAPHQL_ADMIN_SECRET": "s3cret",
        "SVC_GRAPHQL_AUTH_HOOK": f"http://127.0.0.1:{hook.server_address[1]}/auth",
    }
    try:
        s = ServerProcess(create_database(pg_url), env=env)
        try:
            r = s.client.post("/v1/graphql", json={"query": "{ __typename }"})
            json_error(r, 500, "unexpected")
            r = s.query({"type": "export_metadata", "args": {}})
            json_error(r, 500, "unexpected")
            # Wrong and missing admin secrets: messages name only the header svc reads.
            r = s.query(
                {"type": "export_metadata", "args": {}}, headers={"x-svc-admin-secret": "no"}
            )
            assert json_error(r, 401, "access-denied")["error"] == "invalid x-svc-admin-secret"
            assert "access-key" not in r.text
        finally:
            s.stop()
    finally:
        hook.shutdown()
        hook.server_close()


def test_missing_admin_secret_message(pg_url: str) -> None:
    env = {**TWO_WORKERS, "SVC_GRAPHQL_ADMIN_SECRET": "s"}
    s = ServerProcess(create_database(pg_url), env=env)
    try:
        r = s.client.post("/v1/query", json={"type": "export_metadata", "args": {}})
        body = json_error(r, 401, "access-denied")
        assert body["error"] == "x-svc-admin-secret required, but not found"
    finally:
        s.stop()


def test_healthz_strict_reports_inconsistent_metadata(pg_url: str) -> None:
    with server_with(pg_url, [], env=TWO_WORKERS) as s:
        assert (
            s.client.get("/healthz?strict=true").status_code,
            s.client.get("/healthz").text,
        ) == (
            200,
            "OK",
        )
        missing = {"table": {"schema": "public", "name": "nowhere"}}
        metadata = {
            "version": 3,
            "sources": [
                {"name": "default", "kind": "postgres", "tables": [missing], "configuration": {}}
            ],
        }
        r = s.query(
            {
                "type": "replace_metadata",
                "args": {"metadata": metadata, "allow_inconsistent_metadata": True},
            }
        )
        assert r.status_code == 200, r.text
        deadline = time.monotonic() + 5
        while s.client.get("/healthz").text != "WARN: inconsistent objects in schema":
            assert time.monotonic() < deadline
            time.sleep(0.1)
        for _ in range(4):  # every worker
            r = s.client.get("/healthz", params={"strict": "true"})
            assert (r.status_code, r.text) == (500, "ERROR: inconsistent objects in schema")
            r = s.client.get("/healthz", params={"strict": "false"})
            assert (r.status_code, r.text) == (200, "WARN: inconsistent objects in schema")


def test_postgres_down(tmp_path: Path) -> None:
    pg = EmbeddedPostgres(tmp_path / "pgdata", port=free_port())  # the same port again
    url = pg.start()
    try:
        s = ServerProcess(url, env=TWO_WORKERS)
        try:
            assert s.client.get("/healthz").text == "OK"
            pg.stop()
            started = time.perf_counter()
            r = s.client.get("/healthz")
            assert (r.status_code, r.text) == (500, "ERROR")
            assert time.perf_counter() - started < 3
            for body in (
                {"type": "export_metadata", "args": {}},
                {"type": "run_sql", "args": {"sql": "select 1"}},
            ):
                json_error(s.query(body), 500, "postgres-error")
            r = s.client.post("/v1/graphql", json={"query": "{ __typename }"})
            assert r.status_code in (200, 500) and r.json()  # JSON either way
            r = s.client.post("/v1/graphql", json={"query": "mutation { __typename }"})
            assert r.content and r.json()
            pg.start()
            deadline = time.monotonic() + 10
            while s.client.get("/healthz").text != "OK":
                assert time.monotonic() < deadline, "healthz did not recover"
                time.sleep(0.1)
            assert s.query({"type": "export_metadata", "args": {}}).status_code == 200
        finally:
            s.stop()
    finally:
        pg.destroy()


@pytest.fixture
def fresh_database(pg_url: str) -> str:
    return create_database(pg_url)


async def test_an_unexpected_exception_is_a_json_500(fresh_database: str) -> None:
    """An exception no route expects (here: the body cannot be read) is 500 `unexpected`
    with a JSON body naming the request id, on both body shapes."""
    app = App(Config(database_url=fresh_database, log_requests=False))
    await app.startup()
    try:

        async def broken() -> bytes:
            raise RuntimeError("the body vanished")

        for path in ("/v1/query", "/v1/graphql"):
            request = Request("POST", path, None, b"", {}, broken, "rid-1")
            status, payload, headers = await app.handle(request)
            body = json.loads(payload)
            assert status == 500
            assert ("x-request-id", "rid-1") in headers
            error = body["errors"][0] if "errors" in body else body
            assert "rid-1" in (error.get("message") or error.get("error"))
            assert request.error is not None and "RuntimeError" in request.error["exception"]
    finally:
        await app.shutdown()
