"""Auth webhook mode (spec section 5) against a real local webhook server.

Most cases drive `AuthWebhook` directly; two real svc servers (GET and POST mode, one
database) check the whole path: hook → session → permission-filtered rows, error mapping
on `/v1/graphql` and `/v1/query`, caching, and the admin secret bypassing the hook.

The hook's behaviour is chosen by the bearer token the client sends (`Authorization:
Bearer <kind>[#anything]`, the part after `#` only makes the token, hence the cache key,
unique); it counts calls per token and records every request it receives.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from email.utils import formatdate
from typing import Any

import pytest

from svc.errors import SvcError
from svc.server.session import parse_expires, parse_max_age
from svc.server.webhook_auth import INVALID_RESPONSE, REQUEST_FAILED, UNAUTHORIZED, AuthWebhook
from svc.session_vars import SVC_NAMES
from tests.http_fixture import HttpFixture, Recorded, Reply, Route
from tests.support import ServerProcess, create_database, free_port

SECRET = "s3cret"
SLOW_SECONDS = 1.0
SHORT_TIMEOUT = 0.3


class Hook:
    """What the hook server saw: calls per token and every request, thread-safe."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls: Counter[str] = Counter()
        self.requests: list[dict[str, Any]] = []
        self.url = ""

    def record(self, token: str, request: dict[str, Any]) -> None:
        with self.lock:
            self.calls[token] += 1
            self.requests.append(request)

    def reset(self) -> None:
        with self.lock:
            self.calls.clear()
            self.requests.clear()

    def last(self, token: str) -> dict[str, Any]:
        with self.lock:
            return [r for r in self.requests if r["token"] == token][-1]


def _answer(kind: str) -> tuple[int, bytes, dict[str, str]]:
    """(status, body, extra response headers) for a token kind."""
    user: dict[str, Any] = {"X-Svc-Role": "user"}
    head: dict[str, str] = {}
    if kind.startswith("user-"):
        user |= {"X-Svc-User-Id": kind[5:], "Cache-Control": "max-age=60"}
    elif kind.startswith("nocache-"):
        user |= {"X-Svc-User-Id": kind[8:]}
    elif kind == "expiring":
        user |= {"X-Svc-User-Id": "1", "Cache-Control": "max-age=1"}
    elif kind == "expires-past":
        user |= {"X-Svc-User-Id": "1", "Expires": formatdate(time.time() - 60, usegmt=True)}
    elif kind == "expires-soon":
        user |= {"X-Svc-User-Id": "1", "Expires": formatdate(time.time() + 3, usegmt=True)}
    elif kind == "header-cache":
        user |= {"X-Svc-User-Id": "1"}
        head = {"Cache-Control": "max-age=60"}
    elif kind == "body-wins":
        user |= {"X-Svc-User-Id": "1", "cache-control": "max-age=1"}
        head = {"Cache-Control": "max-age=60"}
    elif kind == "no-store":
        user |= {"X-Svc-User-Id": "1", "Cache-Control": "no-store"}
        head = {"Cache-Control": "max-age=60"}
    elif kind == "admin":
        user = {"X-Svc-Role": "admin", "Cache-Control": "max-age=60"}
    elif kind == "types":
        user = {
            "x-svc-role": "user",
            "X-SVC-User-Id": 7,
            "X-Svc-Flag": True,
            "X-Svc-Ratio": 1.5,
            "X-Svc-Groups": ["a", "b c", 'q"'],
            "X-Svc-Meta": {"k": 1},
            "X-Svc-Nothing": None,
            "X-Svc-Admin-Secret": "nope",
            "Other": "x",
        }
    elif kind == "norole":
        user = {"X-Svc-User-Id": "1"}
    elif kind == "deny":
        return 401, b'{"message": "no"}', {}
    elif kind == "boom":
        return 500, b"internal trouble", {}
    elif kind == "teapot":
        return 418, b"{}", {}
    elif kind == "badjson":
        return 200, b"{nope", {}
    elif kind == "array":
        return 200, b'["X-Svc-Role", "user"]', {}
    else:
        return 400, b"unknown token", {}
    return 200, json.dumps(user).encode(), head


def _route(hook: Hook) -> Route:
    """The `/auth` route: records the request under its token, answers per token kind."""

    def answer(req: Recorded) -> Reply:
        body = json.loads(req.body) if req.body else None
        headers = list(req.headers.items())
        source = req.headers if req.method == "GET" else body["headers"]
        token = source.get("authorization", "").removeprefix("Bearer ")
        seen = {"token": token, "method": req.method, "path": req.path, "headers": headers}
        hook.record(token, seen | {"body": body})
        kind = token.split("#")[0]
        if kind == "hangup":  # no answer at all
            return Reply(hang_up=True)
        delay = SLOW_SECONDS if kind == "slow" else 0.0
        status, payload, extra = _answer("user-1" if kind == "slow" else kind)
        headers_out = {"Content-Type": "application/json", **extra}
        return Reply(status, payload, headers_out, delay=delay)

    return answer


@pytest.fixture(scope="module")
def hook_server() -> Iterator[Hook]:
    hook = Hook()
    with HttpFixture() as srv:
        srv.route("/auth", _route(hook))
        hook.url = srv.url("/auth?src=svc")
        yield hook


@pytest.fixture
def hook(hook_server: Hook) -> Hook:
    hook_server.reset()
    return hook_server


def bearer(token: str, **more: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}", **more}


async def fails(webhook: AuthWebhook, headers: dict[str, str]) -> SvcError:
    with pytest.raises(SvcError) as info:
        await webhook.session(headers)
    return info.value


# ---------------------------------------------------------------- the request


IGNORED = {
    "content-length": "17",
    "content-type": "application/json",
    "content-md5": "Q2hlY2sgSW50ZWdyaXR5IQ==",
    "user-agent": "client-ua/1.0",
    "host": "svc.example:8080",
    "origin": "https://app.example",
    "referer": "https://app.example/page",
    "accept": "text/client",
    "accept-encoding": "client-enc",
    "accept-language": "fr",
    "accept-datetime": "Thu, 31 May 2007 20:35:00 GMT",
    "cache-control": "no-cache",
    "connection": "client-conn",
    "dnt": "1",
}


async def test_get_forwards_client_headers_except_the_ignored_list(hook: Hook) -> None:
    webhook = AuthWebhook(hook.url)
    client = {**IGNORED, "transfer-encoding": "chunked", "x-custom": "v", "cookie": "a=b"}
    client |= bearer("user-1", **{"x-svc-role": "admin"})
    session = await webhook.session(client)
    await webhook.close()
    seen = hook.last("user-1")
    assert (seen["method"], seen["path"], seen["body"]) == ("GET", "/auth?src=svc", None)
    got = dict(seen["headers"])
    for name in ("authorization", "x-custom", "cookie", "x-svc-role"):
        assert got[name] == client[name]
    for name, value in IGNORED.items():
        assert got.get(name) != value, name  # absent, or svc's own value (host, user-agent)
    assert "transfer-encoding" not in got
    assert got["user-agent"].startswith("svc/")
    # The hook's role wins over the client's X-Svc-Role (Hasura webhook mode).
    assert session.role == "user"
    assert session.variables == {"x-svc-role": "user", "x-svc-user-id": "1"}


async def test_post_sends_every_client_header_in_the_body(hook: Hook) -> None:
    webhook = AuthWebhook(hook.url, "post")
    client = {**IGNORED, **bearer("user-2"), "x-custom": "v"}
    session = await webhook.session(client)
    await webhook.close()
    seen = hook.last("user-2")
    assert seen["method"] == "POST"
    assert dict(seen["headers"])["content-type"] == "application/json"
    assert seen["body"] == {"headers": client}
    assert (session.role, session.variables["x-svc-user-id"]) == ("user", "2")


def test_only_get_and_post_modes_exist() -> None:
    with pytest.raises(ValueError):
        AuthWebhook("http://127.0.0.1:1/", "PUT")


# ---------------------------------------------------------------- the answer


async def test_answer_values_become_session_variable_strings(hook: Hook) -> None:
    webhook = AuthWebhook(hook.url)
    session = await webhook.session(bearer("types"))
    await webhook.close()
    assert session.role == "user"
    assert session.variables == {
        "x-svc-role": "user",
        "x-svc-user-id": "7",
        "x-svc-flag": "true",
        "x-svc-ratio": "1.5",
        "x-svc-groups": '{a,"b c","q\\""}',
        "x-svc-meta": '{"k":1}',
    }


async def test_statuses_map_to_hasura_errors(hook: Hook) -> None:
    webhook = AuthWebhook(hook.url)
    cases = {
        "deny": (401, "access-denied", UNAUTHORIZED),
        "boom": (500, "unexpected", INVALID_RESPONSE),
        "teapot": (500, "unexpected", INVALID_RESPONSE),
        "norole": (400, "invalid-params", SVC_NAMES.role_not_found),
        "hangup": (500, "unexpected", REQUEST_FAILED),
    }
    for token, expected in cases.items():
        err = await fails(webhook, bearer(token))
        assert (err.status, err.code, err.message) == expected, token
    for token in ("badjson", "array"):
        err = await fails(webhook, bearer(token))
        assert (err.status, err.code) == (500, "unexpected")
        assert err.message.startswith(INVALID_RESPONSE + ": ")
        assert err.internal is None
    # Errors are never cached.
    for _ in range(2):
        await fails(webhook, bearer("deny"))
    assert hook.calls["deny"] == 3
    await webhook.close()


async def test_a_slow_hook_times_out(hook: Hook) -> None:
    webhook = AuthWebhook(hook.url, timeout=SHORT_TIMEOUT)
    started = time.monotonic()
    err = await fails(webhook, bearer("slow"))
    assert time.monotonic() - started < SLOW_SECONDS
    assert (err.status, err.code, err.message) == (500, "unexpected", REQUEST_FAILED)
    await webhook.close()


async def test_an_unreachable_hook_is_a_500() -> None:
    webhook = AuthWebhook(f"http://127.0.0.1:{free_port()}/auth", timeout=2)
    err = await fails(webhook, bearer("user-1"))
    assert (err.status, err.code, err.message) == (500, "unexpected", REQUEST_FAILED)
    await webhook.close()


# ---------------------------------------------------------------- caching


async def test_max_age_caches_per_credentials(hook: Hook) -> None:
    webhook = AuthWebhook(hook.url)
    for i in range(20):  # transport headers are not credentials: same cache entry
        session = await webhook.session(bearer("user-1", **{"user-agent": f"ua/{i}"}))
        assert session.variables == {"x-svc-role": "user", "x-svc-user-id": "1"}
    assert hook.calls["user-1"] == 1
    # Concurrent first requests may each ask the hook; the cache stays consistent.
    sessions = await asyncio.gather(*(webhook.session(bearer("user-2")) for _ in range(10)))
    assert {s.variables["x-svc-user-id"] for s in sessions} == {"2"}
    first = hook.calls["user-2"]
    assert 1 <= first <= 10
    assert (await webhook.session(bearer("user-1"))).variables["x-svc-user-id"] == "1"
    assert (await webhook.session(bearer("user-2"))).variables["x-svc-user-id"] == "2"
    assert (hook.calls["user-1"], hook.calls["user-2"]) == (1, first)
    # A returned session is a copy: changing it does not change the cache.
    (await webhook.session(bearer("user-1"))).variables["x-svc-user-id"] = "999"
    assert (await webhook.session(bearer("user-1"))).variables["x-svc-user-id"] == "1"
    await webhook.close()


async def test_without_an_expiry_every_request_calls_the_hook(hook: Hook) -> None:
    webhook = AuthWebhook(hook.url)
    for token in ("nocache-1", "expires-past", "no-store"):
        for _ in range(3):
            assert (await webhook.session(bearer(token))).role == "user"
        assert hook.calls[token] == 3, token
    for _ in range(3):  # the HTTP response header counts when the body says nothing
        await webhook.session(bearer("header-cache"))
    assert hook.calls["header-cache"] == 1
    await webhook.close()


async def test_cached_answers_expire(hook: Hook) -> None:
    webhook = AuthWebhook(hook.url)
    started = time.monotonic()
    tokens = ("expiring", "expires-soon", "body-wins")
    for _ in range(2):
        for token in tokens:
            await webhook.session(bearer(token))
    assert [hook.calls[t] for t in tokens] == [1, 1, 1]
    await asyncio.sleep(1.2)
    for token in tokens:
        await webhook.session(bearer(token))
    # max-age=1 is over (also when the HTTP header said 60: the body wins); Expires
    # (now + 3 s, whole seconds) is not.
    assert [hook.calls[t] for t in tokens] == [2, 1, 2]
    await asyncio.sleep(max(0.0, started + 3.2 - time.monotonic()))
    await webhook.session(bearer("expires-soon"))
    assert hook.calls["expires-soon"] == 2
    await webhook.close()


async def test_the_cache_is_bounded(hook: Hook) -> None:
    webhook = AuthWebhook(hook.url, cache_size=5)
    for i in range(12):
        await webhook.session(bearer(f"user-{i}"))
    await webhook.session(bearer("user-11"))  # the newest is kept
    assert hook.calls["user-11"] == 1
    await webhook.session(bearer("user-0"))  # the oldest was dropped
    assert hook.calls["user-0"] == 2
    await webhook.close()
    await webhook.session(bearer("user-20"))  # usable after close: a new client
    await webhook.close()


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("max-age=60", 60.0),
        ("public, Max-Age=5", 5.0),
        ("s-maxage=7", 7.0),
        ('max-age="9"', 9.0),
        ("no-store, max-age=60", 0.0),
        ("no-cache", 0.0),
        ("private", None),
        ("max-age=soon", None),
        ("max-age=-1", None),
        ("max-age=\u00b2", None),
    ],
)
def test_parse_max_age(value: str, seconds: float | None) -> None:
    assert parse_max_age(value) == seconds


@pytest.mark.parametrize(
    ("value", "posix"),
    [
        ("Thu, 01 Jan 2037 00:00:00 GMT", 2114380800.0),
        ("Wed, 21 Oct 2015 07:28:00 GMT", 1445412480.0),
        ("Wed, 31 Feb 2015 07:28:00 GMT", None),
        ("Wed, 21 Oct 2015 07:28:00 UTC", None),
        ("2015-10-21T07:28:00Z", None),
    ],
)
def test_parse_expires(value: str, posix: float | None) -> None:
    assert parse_expires(value) == posix


# ---------------------------------------------------------------- through real servers

SETUP = """
create table note (id serial primary key, owner_id int not null, body text);
insert into note (owner_id, body) values (1, 'a'), (2, 'b'), (1, 'c'), (3, 'd');
"""
NOTES = "{ note(order_by: {id: asc}) { id body } }"


@pytest.fixture(scope="module")
def servers(pg_url: str, hook_server: Hook) -> Iterator[dict[str, ServerProcess]]:
    """A GET-mode and a POST-mode server on one database with `note` readable by `user`."""
    db = create_database(pg_url)
    get = ServerProcess(db, "--admin-secret", SECRET, "--auth-hook", hook_server.url)
    started = [get]
    try:
        admin = {"x-svc-admin-secret": SECRET}
        steps = [
            {"type": "run_sql", "args": {"sql": SETUP}},
            {"type": "track_table", "args": {"schema": "public", "name": "note"}},
            {
                "type": "create_select_permission",
                "args": {
                    "table": "note",
                    "role": "user",
                    "permission": {
                        "columns": ["id", "body"],
                        "filter": {"owner_id": {"_eq": "X-Svc-User-Id"}},
                    },
                },
            },
        ]
        r = get.query({"type": "bulk", "args": steps}, headers=admin)
        assert r.status_code == 200, r.text
        post = ServerProcess(
            db,
            "--admin-secret",
            SECRET,
            env={"SVC_GRAPHQL_AUTH_HOOK": hook_server.url, "SVC_GRAPHQL_AUTH_HOOK_MODE": "POST"},
        )
        started.append(post)
        yield {"GET": get, "POST": post}
    finally:
        for s in started:
            s.stop()


@pytest.mark.parametrize("mode", ["GET", "POST"])
def test_hook_session_filters_rows_end_to_end(
    servers: dict[str, ServerProcess], hook_server: Hook, mode: str
) -> None:
    srv = servers[mode]
    one = f"user-1#{mode}"
    assert srv.graphql(NOTES, headers=bearer(one)) == {
        "data": {"note": [{"id": 1, "body": "a"}, {"id": 3, "body": "c"}]}
    }
    three = f"user-3#{mode}"
    assert srv.graphql(NOTES, headers=bearer(three, **{"x-svc-role": "admin"})) == {
        "data": {"note": [{"id": 4, "body": "d"}]}
    }
    seen = hook_server.last(one)
    assert seen["method"] == mode
    if mode == "POST":
        assert seen["body"]["headers"]["authorization"] == f"Bearer {one}"
        assert "content-type" in seen["body"]["headers"]
    else:
        assert "content-type" not in dict(seen["headers"])
    # The hook's answer (max-age=60) is cached by the server.
    for _ in range(20):
        assert len(srv.graphql(NOTES, headers=bearer(one))["data"]["note"]) == 2
    assert hook_server.calls[one] == 1


def test_hook_errors_on_graphql_and_query(
    servers: dict[str, ServerProcess], hook_server: Hook
) -> None:
    srv = servers["GET"]
    cases = {
        "deny": (401, "access-denied"),
        "boom": (500, "unexpected"),
        "hangup": (500, "unexpected"),
        "norole": (400, "invalid-params"),
    }
    for token, (status, code) in cases.items():
        r = srv.client.post("/v1/graphql", json={"query": NOTES}, headers=bearer(token))
        # A hook answering other than 200/401 is HTTP 500 on GraphQL too (spec section 5).
        assert r.status_code == (500 if status == 500 else 200), token
        assert r.json()["errors"][0]["extensions"]["code"] == code, token
        r = srv.query({"type": "export_metadata", "args": {}}, headers=bearer(token))
        assert (r.status_code, r.json()["code"]) == (status, code), token
    # A user may not use the metadata API; a hook may grant admin.
    r = srv.query({"type": "export_metadata", "args": {}}, headers=bearer("user-1#q"))
    assert (r.status_code, r.json()["code"]) == (400, "access-denied")
    r = srv.query({"type": "export_metadata", "args": {}}, headers=bearer("admin"))
    assert r.status_code == 200


def test_admin_secret_bypasses_the_hook(
    servers: dict[str, ServerProcess], hook_server: Hook
) -> None:
    for srv in servers.values():
        token = f"user-1#bypass-{srv.port}"
        headers = bearer(token, **{"x-svc-admin-secret": SECRET})
        assert len(srv.graphql(NOTES, headers=headers)["data"]["note"]) == 4
        assert srv.query({"type": "export_metadata", "args": {}}, headers=headers).is_success
        assert hook_server.calls[token] == 0
