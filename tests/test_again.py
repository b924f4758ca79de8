"""A repeated GraphQL query answered before anything of the HTTP request is built
(`svc/server/again.py`, `App._again`) and the per-worker disconnect sweep
(`svc/server/disconnect.py`), against a real `svc serve` under its default interface (ASGI)
and worker count.

Keep-alive clients keep a connection on one worker, so every request after a connection's
first meets the credentials and request bytes that worker remembered; fresh connections
spread over the workers. Every check is about what must not change on that path: bytes,
request ids, roles, refusals, metadata changes, `@cached`, JWT mode, metrics, and a client
going away during a repeated slow query.

Nothing outside tells which path answered, so the checks hold on either. (At the commit
these tests were written, Granian's ASGI interface delivered every body as a message with
`more_body: True` followed by an empty one, so `App._http` never called `_again`; checked
against a copy where it does, these tests pass and catch a memo mixing sessions, `_again`
answering `@cached` queries and `_again` not watching for disconnects.)
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import time
from collections.abc import Iterator
from typing import Any

import asyncpg
import httpx
import jwt
import pytest

from tests.support import ServerProcess, active_statements, create_database, with_database
from tests.test_metrics import scrape, value

SECRET = "again-admin-secret"
ADMIN = {"x-svc-admin-secret": SECRET}
U1 = {**ADMIN, "x-svc-role": "user", "x-svc-user-id": "1"}
U2 = {**ADMIN, "x-svc-role": "user", "x-svc-user-id": "2"}
WRONG = {"x-svc-admin-secret": "not-the-secret"}

SQL = """
create table item (id int primary key, user_id int not null, name text not null);
insert into item values (1, 1, 'one'), (2, 2, 'two'), (3, 1, 'three'), (4, 3, 'four');
create table note (id int primary key, body text not null);
insert into note values (1, 'first');
create table delay (secs float8 not null);
insert into delay values (0);
create view slow_item as
  select i.id, pg_sleep((select secs from delay))::text as slept from item i where i.id = 1;
"""
USER_PERMISSION = {
    "type": "create_select_permission",
    "args": {
        "table": "item",
        "role": "user",
        "permission": {"columns": ["id", "name"], "filter": {"user_id": "X-Svc-User-Id"}},
    },
}
STEPS = [
    {"type": "run_sql", "args": {"sql": SQL}},
    {"type": "track_table", "args": "item"},
    {"type": "track_table", "args": "note"},
    {"type": "track_table", "args": "slow_item"},
    USER_PERMISSION,
]

SLOW_ROWS = {"data": {"slow_item": [{"id": 1, "slept": ""}]}}
ITEMS = "{ item(order_by: {id: asc}) { id name } }"
ITEMS_BODY = json.dumps({"query": ITEMS}).encode()
ALL_ROWS = [
    {"id": 1, "name": "one"},
    {"id": 2, "name": "two"},
    {"id": 3, "name": "three"},
    {"id": 4, "name": "four"},
]
ROWS = {
    "admin": ALL_ROWS,
    "user1": [ALL_ROWS[0], ALL_ROWS[2]],
    "user2": [ALL_ROWS[1]],
}


def start(pg_url: str, *args: str, env: dict[str, str] | None = None) -> ServerProcess:
    """A server with `--admin-secret` (plus `args`) on a new database after `STEPS`."""
    s = ServerProcess(create_database(pg_url), "--admin-secret", SECRET, *args, env=env)
    r = s.query({"type": "bulk", "args": STEPS}, headers=ADMIN)
    assert r.status_code == 200, r.text
    return s


@pytest.fixture(scope="module")
def srv(pg_url: str) -> Iterator[ServerProcess]:
    """Default interface and worker count, admin secret, request logging on (the 499
    line)."""
    s = start(pg_url, env={"SVC_GRAPHQL_LOG_REQUESTS": "true"})
    try:
        yield s
    finally:
        s.stop()


def clients(s: ServerProcess, n: int) -> list[httpx.Client]:
    """`n` keep-alive clients: one connection each, each on one worker."""
    return [httpx.Client(base_url=s.url, timeout=30) for _ in range(n)]


def fresh(s: ServerProcess) -> httpx.Client:
    """A client opening a new connection per request."""
    return httpx.Client(
        base_url=s.url, timeout=30, limits=httpx.Limits(max_keepalive_connections=0)
    )


def post(c: httpx.Client, headers: Any, body: bytes = ITEMS_BODY) -> httpx.Response:
    return c.post(
        "/v1/graphql",
        content=body,
        headers=[("content-type", "application/json"), *_pairs(headers)],
    )


def _pairs(headers: Any) -> list[tuple[str, str]]:
    return list(headers.items()) if isinstance(headers, dict) else list(headers)


def rows(r: httpx.Response) -> Any:
    assert r.status_code == 200, (r.status_code, r.text)
    answer = r.json()
    assert "errors" not in answer, answer
    return answer["data"]["item"]


def graphql_error(r: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert r.status_code == status, (r.status_code, r.text)
    answer: dict[str, Any] = r.json()
    assert "data" not in answer, answer
    assert answer["errors"][0]["extensions"]["code"] == code, answer
    assert r.headers.get("x-request-id"), r.headers
    return answer


# -- bytes and request ids ----------------------------------------------------------------


def test_a_repeated_query_answers_the_same_bytes_with_its_own_request_id(
    srv: ServerProcess,
) -> None:
    query = """{ a: item(order_by: {id: desc}, limit: 3) { id name }
      n: item_aggregate(where: {id: {_gt: 1}}) { aggregate { count max { id } } } }"""
    body = json.dumps({"query": query}).encode()
    expected = {
        "data": {
            "a": [ALL_ROWS[3], ALL_ROWS[2], ALL_ROWS[1]],
            "n": {"aggregate": {"count": 3, "max": {"id": 4}}},
        }
    }
    answers: list[httpx.Response] = []
    given: dict[int, str] = {}
    pool = [*clients(srv, 4), fresh(srv)]
    try:
        for i in range(25):  # 5 rounds over 4 keep-alive connections and fresh ones
            headers = dict(ADMIN)
            if i % 3 == 0:
                given[i] = f"again-{i}-given"
                headers["x-request-id"] = given[i]
            answers.append(post(pool[i % len(pool)], headers, body))
    finally:
        for c in pool:
            c.close()
    first = answers[0]
    assert first.status_code == 200 and first.json() == expected, first.text
    ids = []
    for i, r in enumerate(answers):
        assert r.status_code == 200, (i, r.text)
        assert r.content == first.content, (i, r.content, first.content)
        assert r.headers["content-type"].startswith("application/json"), r.headers
        assert r.headers["content-type"] == first.headers["content-type"]
        ids.append(r.headers["x-request-id"])
        if i in given:
            assert ids[-1] == given[i]
        else:
            assert len(ids[-1]) == 36, ids[-1]
    assert len(set(ids)) == len(ids), ids


# -- roles and refusals ---------------------------------------------------------------------


def test_roles_are_never_mixed_and_refusals_stay_refusals(srv: ServerProcess) -> None:
    # The same body as admin, user 1 and user 2, interleaved on the same connections (each
    # connection meets every session again), plus a wrong secret and no credentials, which
    # never resolve to a session and so are refused each time.
    sessions: list[tuple[str, Any]] = [
        ("admin", ADMIN),
        ("user1", U1),
        ("wrong", WRONG),
        ("user2", U2),
        ("none", {}),
        # the same credentials in another order: another key, the same session
        ("user1", [("x-svc-user-id", "1"), ("x-svc-role", "user"), *ADMIN.items()]),
        ("user2", {"X-Svc-Role": "user", "X-Svc-User-Id": "2", **ADMIN}),
    ]
    refused: dict[str, Any] = {}
    pool = [*clients(srv, 3), fresh(srv)]
    try:
        for rnd in range(6):
            order = sessions if rnd % 2 == 0 else sessions[::-1]
            for k, (who, headers) in enumerate(order):
                c = pool[(rnd + k) % len(pool)]
                r = post(c, headers)
                what = (rnd, who)
                if who in ("wrong", "none"):
                    # /v1/graphql answers an authentication error with HTTP 200 (as the
                    # reference does; /v1/query says 401).
                    answer = graphql_error(r, 200, "access-denied")
                    assert answer == refused.setdefault(who, answer), what
                    assert ("invalid" in json.dumps(answer)) == (who == "wrong"), answer
                else:
                    assert rows(r) == ROWS[who], what
    finally:
        for c in pool:
            c.close()
    r = srv.query({"type": "export_metadata", "args": {}}, headers=WRONG)
    assert (r.status_code, r.json()["code"]) == (401, "access-denied"), r.text


def test_duplicate_credential_headers_are_refused_after_the_single_ones_were_seen(
    srv: ServerProcess,
) -> None:
    twice_role = [*ADMIN.items(), ("x-svc-role", "user"), ("x-svc-role", "user")]
    twice_role += [("x-svc-user-id", "1")]
    twice_user = [*ADMIN.items(), ("x-svc-role", "user")]
    twice_user += [("x-svc-user-id", "1"), ("x-svc-user-id", "1")]
    twice_secret = [*ADMIN.items(), *ADMIN.items()]
    pool = [*clients(srv, 2), fresh(srv)]
    try:
        for c in pool:
            for _ in range(2):  # the single versions are remembered on this connection
                assert rows(post(c, U1)) == ROWS["user1"]
                assert rows(post(c, ADMIN)) == ROWS["admin"]
        for _ in range(3):
            for c in pool:
                for headers in (twice_role, twice_user, twice_secret):
                    answer = graphql_error(post(c, headers), 400, "invalid-headers")
                    assert "more than once" in answer["errors"][0]["message"], answer
                assert rows(post(c, U1)) == ROWS["user1"]  # the single one still answers
    finally:
        for c in pool:
            c.close()


# -- metadata changes -----------------------------------------------------------------------


def test_dropping_and_recreating_a_permission_is_honoured(srv: ServerProcess) -> None:
    pool = [*clients(srv, 3), fresh(srv)]
    drop = {"type": "drop_select_permission", "args": {"table": "item", "role": "user"}}
    try:
        for _ in range(3):
            for c in pool:
                assert rows(post(c, U1)) == ROWS["user1"]
        r = srv.client.post("/v1/metadata", json=drop, headers=ADMIN)
        assert r.status_code == 200, r.text
        try:
            for _ in range(3):
                for c in pool:
                    answer = graphql_error(post(c, U1), 200, "validation-failed")
                    message = answer["errors"][0]["message"]
                    assert message == """field "item" not found in type: 'query_root'""", answer
                    assert rows(post(c, ADMIN)) == ROWS["admin"]  # admin unaffected
        finally:
            r = srv.client.post("/v1/metadata", json=USER_PERMISSION, headers=ADMIN)
            assert r.status_code == 200, r.text
        for _ in range(3):
            for c in pool:
                assert rows(post(c, U1)) == ROWS["user1"]
                assert rows(post(c, U2)) == ROWS["user2"]
    finally:
        for c in pool:
            c.close()


# -- @cached --------------------------------------------------------------------------------


def test_cached_queries_still_use_the_response_cache(srv: ServerProcess) -> None:
    cached = json.dumps(
        {"query": "query C @cached(ttl: 60) { note(order_by: {id: asc}) { body } }"}
    ).encode()
    plain = json.dumps({"query": "query P { note(order_by: {id: asc}) { body } }"}).encode()
    update = json.dumps(
        {
            "query": 'mutation { update_note_by_pk(pk_columns: {id: 1}, _set: {body: "second"}) '
            "{ id } }"
        }
    ).encode()
    (c,) = clients(srv, 1)  # one connection: one worker, one cache
    try:
        first = post(c, ADMIN, cached)
        assert first.json() == {"data": {"note": [{"body": "first"}]}}, first.text
        again = post(c, ADMIN, cached)
        assert again.status_code == 200 and again.content == first.content
        assert "errors" not in post(c, ADMIN, update).json()
        assert post(c, ADMIN, plain).json() == {"data": {"note": [{"body": "second"}]}}
        # Still the cached answer, however often it is sent on this worker (an answer from
        # the statement alone would read "second").
        for _ in range(5):
            r = post(c, ADMIN, cached)
            assert r.status_code == 200 and r.content == first.content, r.text
    finally:
        c.close()
        r = srv.graphql(
            'mutation { update_note_by_pk(pk_columns: {id: 1}, _set: {body: "first"}) { id } }',
            headers=ADMIN,
        )
        assert "errors" not in r, r


# -- metrics --------------------------------------------------------------------------------


def test_metrics_count_repeated_answers(srv: ServerProcess) -> None:
    ok = {"endpoint": "/v1/graphql", "status": "200", "operation_type": "query"}
    duration = {"endpoint": "/v1/graphql", "operation_type": "query"}
    # Earlier requests may still be on their way to the shared values (every 2 s per
    # worker): start from values that held still for one flush period.
    before = scrape(srv, ADMIN)
    for _ in range(5):
        time.sleep(2.2)
        settled = scrape(srv, ADMIN)
        if value(settled, "svc_http_requests_total", **ok) == value(
            before, "svc_http_requests_total", **ok
        ):
            break
        before = settled
    n = 30
    pool = clients(srv, 3)
    try:
        for i in range(n):
            assert rows(post(pool[i % 3], U2)) == ROWS["user2"]
    finally:
        for c in pool:
            c.close()
    # Workers add their counts to the shared values every 2 s.
    deadline = time.monotonic() + 6
    while True:
        after = scrape(srv, ADMIN)
        moved = value(after, "svc_http_requests_total", **ok) - value(
            before, "svc_http_requests_total", **ok
        )
        if moved >= n:
            break
        assert time.monotonic() < deadline, f"only {moved} of {n} requests counted"
        time.sleep(0.25)
    assert moved == n
    count = "svc_http_request_duration_seconds_count"
    assert value(after, count, **duration) - value(before, count, **duration) == n
    total = "svc_http_request_duration_seconds_sum"
    assert value(after, total, **duration) > value(before, total, **duration)


# -- a client going away during a repeated slow query ---------------------------------------


def _log_entries(s: ServerProcess) -> list[dict[str, Any]]:
    out = []
    for line in s.log_path.read_text(errors="replace").splitlines():
        if line.startswith("{"):
            with contextlib.suppress(ValueError):
                out.append(json.loads(line))
    return out


def test_a_client_leaving_a_repeated_slow_query_cancels_its_statement(
    srv: ServerProcess, pg_url: str
) -> None:
    # The same bytes must be remembered (answered once, fast) and then slow: the view
    # sleeps for the seconds in `delay`, changed in Postgres directly (no metadata change,
    # so the remembered statement stays).
    database = srv.proc.args[srv.proc.args.index("--database-url") + 1].rsplit("/", 1)[1]
    body = json.dumps({"query": "{ slow_item { id slept } }"}).encode()
    headers = {"content-type": "application/json", **ADMIN}

    def set_delay(seconds: float) -> None:
        # Straight to Postgres: `run_sql` would be a metadata change, after which nothing
        # is remembered.
        async def go() -> None:
            conn = await asyncpg.connect(with_database(pg_url, database))
            try:
                await conn.execute("update delay set secs = $1", seconds)
            finally:
                await conn.close()

        asyncio.run(go())

    for attempt in range(2):  # twice: the worker is sound afterwards
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
        try:
            for _ in range(2):  # remembered on this connection's worker
                conn.request("POST", "/v1/graphql", body=body, headers=headers)
                answer = conn.getresponse()
                assert answer.status == 200
                assert json.loads(answer.read()) == SLOW_ROWS
            logged = len([e for e in _log_entries(srv) if e.get("status") == 499])
            set_delay(30)
            conn.request("POST", "/v1/graphql", body=body, headers=headers)
            deadline = time.monotonic() + 5
            while active_statements(pg_url, database, "slow_item") == 0:
                assert time.monotonic() < deadline, "the slow statement never started"
                time.sleep(0.05)
            time.sleep(0.3)
        finally:
            conn.close()
        gone = time.monotonic()
        while active_statements(pg_url, database, "slow_item"):
            assert time.monotonic() - gone < 3, f"statement still running ({attempt})"
            time.sleep(0.05)
        set_delay(0)
        deadline = time.monotonic() + 5
        while True:
            entries = [e for e in _log_entries(srv) if e.get("status") == 499]
            if len(entries) > logged:
                break
            assert time.monotonic() < deadline, "no 499 line in the server log"
            time.sleep(0.1)
        entry = entries[-1]
        assert (entry["method"], entry["path"]) == ("POST", "/v1/graphql"), entry
        assert entry["error"]["code"] == "client-disconnected", entry
    with fresh(srv) as c:
        r = post(c, headers, body)
        assert r.json() == SLOW_ROWS, r.text


# -- JWT mode: no memo ----------------------------------------------------------------------

HS_SECRET = "a shared secret that is longer than 32 characters"
NS = "https://svc.io/jwt/claims"


def token(user: str, expires_in: int = 300) -> dict[str, str]:
    claims = {
        "x-svc-allowed-roles": ["user"],
        "x-svc-default-role": "user",
        "x-svc-user-id": user,
    }
    body = {"sub": f"u{user}", "exp": int(time.time()) + expires_in, NS: claims}
    return {"authorization": f"Bearer {jwt.encode(body, HS_SECRET, algorithm='HS256')}"}


def test_jwt_mode_answers_each_token_with_its_own_rows(pg_url: str) -> None:
    conf = json.dumps({"type": "HS256", "key": HS_SECRET})
    s = start(pg_url, "--jwt-secret", conf)
    try:
        one, two, expired = token("1"), token("2"), token("1", expires_in=-120)
        pool = [*clients(s, 2), fresh(s)]
        try:
            for rnd in range(5):
                for k, c in enumerate(pool):
                    sent = [("user1", one), ("user2", two), ("user1", one), ("user2", two)]
                    for who, headers in sent if (rnd + k) % 2 == 0 else sent[::-1]:
                        assert rows(post(c, headers)) == ROWS[who], (rnd, k, who)
                    answer = graphql_error(post(c, expired), 200, "invalid-jwt")
                    assert answer["errors"][0]["message"] == "Could not verify JWT: JWTExpired"
        finally:
            for c in pool:
                c.close()
    finally:
        s.stop()
