"""`GET /v1/metrics` (issue 18): scraped from a real `svc serve` (default worker count)
with prometheus-client's own parser; counters move by exactly what was sent whichever
worker answered (multiprocess mode); `--metrics-secret`; JSON logs and `--log-level`."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import websockets
from prometheus_client.parser import text_string_to_metric_families

from svc.server.metric_labels import endpoint_label, error_code, operation_type
from tests.support import ServerProcess, author_article_steps, create_database, server_with

SECRET = "scrape-me"
AUTH = {"authorization": f"Bearer {SECRET}"}


# One worker runs the whole module in order (pytest-xdist): the figures are read from
# one server across tests, as in a single-process run.
pytestmark = pytest.mark.xdist_group(name="metrics")


@pytest.fixture(scope="module")
def srv(pg_url: str) -> Iterator[ServerProcess]:
    steps = [{"type": "run_sql", "args": {"sql": SETUP}}, *author_article_steps()]
    with server_with(pg_url, steps, "--metrics-secret", SECRET) as s:
        yield s


SETUP = """
CREATE TABLE IF NOT EXISTS author (id serial PRIMARY KEY, name text NOT NULL);
CREATE TABLE IF NOT EXISTS article (id serial PRIMARY KEY, title text,
  author_id integer REFERENCES author(id));
"""


def scrape(s: ServerProcess, headers: dict[str, str] | None = None) -> dict[tuple[str, ...], float]:
    """Every sample of `/v1/metrics` as {(name, label=value, …): value}."""
    r = s.client.get("/v1/metrics", headers=AUTH if headers is None else headers)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain")
    out: dict[tuple[str, ...], float] = {}
    for family in text_string_to_metric_families(r.text):
        for sample in family.samples:
            labels = tuple(f"{k}={v}" for k, v in sorted(sample.labels.items()))
            out[(sample.name, *labels)] = sample.value
    return out


def value(samples: dict[tuple[str, ...], float], name: str, **labels: str) -> float:
    """The sample `name` with exactly `labels` (0 when absent)."""
    key = (name, *sorted(f"{k}={v}" for k, v in labels.items()))
    return samples.get(key, 0.0)


def fresh_client(s: ServerProcess) -> httpx.Client:
    """A client that opens a new connection per request, so the workers share the work."""
    return httpx.Client(
        base_url=s.url, timeout=30, limits=httpx.Limits(max_keepalive_connections=0)
    )


def test_counters_move_by_what_was_sent(srv: ServerProcess) -> None:
    before = scrape(srv)
    n = 24
    with fresh_client(srv) as c:
        for i in range(n):
            r = c.post("/v1/graphql", json={"query": f"query Q{i} {{ author {{ id }} }}"})
            assert "errors" not in r.json(), r.text
        for _ in range(3):
            m = {"query": 'mutation { insert_author_one(object: {name: "x"}) { id } }'}
            assert "errors" not in c.post("/v1/graphql", json=m).json()
        for _ in range(2):
            bad = c.post("/v1/graphql", json={"query": "{ no_such_field }"}).json()
            assert bad["errors"][0]["extensions"]["code"] == "validation-failed"
    ok = {"endpoint": "/v1/graphql", "status": "200"}
    # Each worker adds its counts to the shared values every 2 s (and the scraped one at
    # once): within 5 s every request is counted, whichever worker answered it.
    deadline = time.monotonic() + 5
    while True:
        after = scrape(srv)
        total = value(after, "svc_http_requests_total", operation_type="query", **ok)
        if total - value(before, "svc_http_requests_total", operation_type="query", **ok) >= n + 2:
            break
        assert time.monotonic() < deadline, "requests not counted within 5 s"
        time.sleep(0.2)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert moved("svc_http_requests_total", operation_type="query", **ok) == n + 2
    assert moved("svc_http_requests_total", operation_type="mutation", **ok) == 3
    q = {"endpoint": "/v1/graphql", "operation_type": "query"}
    assert moved("svc_http_request_duration_seconds_count", **q) == n + 2
    assert moved("svc_http_request_duration_seconds_sum", **q) > 0
    assert moved("svc_errors_total", endpoint="/v1/graphql", code="validation-failed") == 2


def test_gauges_and_build_times(srv: ServerProcess) -> None:
    srv.graphql("{ author { id } }")
    samples = scrape(srv)
    assert value(samples, "svc_metadata_resource_version") >= 1
    assert value(samples, "svc_postgres_connections", state="open") >= 1
    assert value(samples, "svc_metadata_inconsistent_objects") == 0
    assert value(samples, "svc_asyncio_tasks") >= 1  # at least the answering worker's own
    builds = value(samples, "svc_schema_build_seconds_count", stage="schema")
    assert builds >= 1 and value(samples, "svc_schema_build_seconds_count", stage="ir") >= 1
    # a metadata change is a new version and new schemas
    srv.query({"type": "run_sql", "args": {"sql": "CREATE TABLE IF NOT EXISTS m1 (id int)"}})
    assert srv.query({"type": "track_table", "args": "m1"}).status_code == 200
    srv.graphql("{ m1 { id } }")
    later = scrape(srv)
    version = value(samples, "svc_metadata_resource_version")
    assert value(later, "svc_metadata_resource_version") > version
    assert value(later, "svc_schema_build_seconds_count", stage="schema") > builds


def test_websocket_figures(srv: ServerProcess) -> None:
    async def run() -> tuple[float, float]:
        url = srv.url.replace("http", "ws") + "/v1/graphql"
        async with websockets.connect(url, subprotocols=["graphql-ws"]) as ws:  # type: ignore[list-item]
            await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
            assert json.loads(await ws.recv())["type"] == "connection_ack"
            start = {"query": "subscription { author { id } }"}
            await ws.send(json.dumps({"id": "1", "type": "start", "payload": start}))
            while json.loads(await ws.recv())["type"] != "data":
                pass
            deadline = time.monotonic() + 30  # a loaded machine samples late
            while True:  # gauges are sampled every 2 s in the worker holding the socket
                samples = await asyncio.to_thread(scrape, srv)
                open_ws = value(samples, "svc_websocket_connections")
                subscribers = value(samples, "svc_live_subscribers")
                if (open_ws >= 1 and subscribers >= 1) or time.monotonic() > deadline:
                    return open_ws, subscribers
                await asyncio.sleep(0.5)

    open_ws, subscribers = asyncio.run(run())
    assert open_ws == 1
    assert subscribers == 1


def test_metrics_secret(srv: ServerProcess) -> None:
    assert srv.client.get("/v1/metrics").status_code == 401
    wrong = srv.client.get("/v1/metrics", headers={"authorization": "Bearer nope"})
    assert wrong.status_code == 401
    assert wrong.json()["code"] == "access-denied"


def test_admin_only_without_metrics_secret(pg_url: str) -> None:
    s = ServerProcess(create_database(pg_url), "--admin-secret", "adm", "--workers", "1")
    try:
        assert s.client.get("/v1/metrics").status_code == 401
        assert scrape(s, {"x-svc-admin-secret": "adm"})
    finally:
        s.stop()


def json_lines(s: ServerProcess) -> list[dict[str, Any]]:
    """The JSON lines the server wrote so far."""
    out = []
    for line in s.log_path.read_text().splitlines():
        if line.startswith("{"):
            out.append(json.loads(line))
    return out


@pytest.mark.parametrize(("level", "logged"), [("info", True), ("error", False)])
def test_json_logs_and_level(pg_url: str, level: str, logged: bool) -> None:
    env = {"SVC_GRAPHQL_LOG_REQUESTS": "true"}
    with server_with(pg_url, [], "--log-level", level, "--workers", "1", env=env) as s:
        r = s.client.post(
            "/v1/graphql", json={"query": "{ __typename }"}, headers={"x-request-id": "rid-1"}
        )
        assert r.headers["x-request-id"] == "rid-1"
        time.sleep(0.3)
        lines = [e for e in json_lines(s) if e.get("request_id") == "rid-1"]
    if logged:
        assert lines and lines[0]["type"] == "http-log" and lines[0]["level"] == "info"
        assert lines[0]["path"] == "/v1/graphql" and lines[0]["status"] == 200
    else:
        assert lines == []


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        (b'{"query": "{ a }"}', "query"),
        (b'{"query": "query Q { a }"}', "query"),
        (b'{"query":"mutation M { a }"}', "mutation"),
        (b'{"query":"{a}"}', "query"),
        (b'{"query" : "subscription($v: Int) { a }"}', "subscription"),
        (b'{"query": "mutations_are_not_this { a }"}', "query"),
        (b'{"query": "\\n  # note\\n subscription { a }"}', "subscription"),
        (b'{"query": "fragment F on T { a } mutation { b { ...F } }"}', "mutation"),
        (b'[{"query": "{ a }"}]', "batch"),
        (b'{"variables": {}, "query": "mutation { a }"}', "mutation"),
        (b"not json", "query"),
    ],
)
def test_operation_type(body: bytes, kind: str) -> None:
    assert operation_type(body) == kind


def test_labels_are_bounded() -> None:
    assert endpoint_label("/v1/graphql/") == "/v1/graphql"
    assert endpoint_label("/api/rest/users/1") == "/api/rest"
    assert endpoint_label("/console/assets/graphiql.js") == "/console"
    assert endpoint_label("/wp-admin.php") == "other"
    assert error_code(b'{"errors":[{"extensions":{"code":"not-found"}}]}') == "not-found"
    assert error_code(b'{"data":{}}') is None


def test_queue_figures(srv: ServerProcess) -> None:
    exists = srv.query(
        {
            "type": "run_sql",
            "args": {"sql": "SELECT to_regclass('hdb_catalog.hdb_action_log') IS NOT NULL"},
        }
    ).json()["result"][1][0]
    if exists != "t":
        pytest.skip("no hdb_catalog.hdb_action_log in this build (asynchronous actions)")
    before = value(scrape(srv), "svc_queue_events", kind="async_action", state="failed")
    failed = (
        "INSERT INTO hdb_catalog.hdb_action_log (action_name, input_payload, request_headers,"
        " session_variables, status) VALUES ('x', '{}', '[]', '{}', 'error')"
    )
    assert srv.query({"type": "run_sql", "args": {"sql": failed}}).status_code == 200
    after = value(scrape(srv), "svc_queue_events", kind="async_action", state="failed")
    assert after == before + 1
