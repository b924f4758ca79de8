"""The outbound HTTP client and its templates (`svc.outbound`), against a real local HTTP
server (`tests/http_fixture.py`)."""

from __future__ import annotations

import asyncio
import random
import re
import time
from collections.abc import Iterator

import msgspec
import pytest

from svc.errors import SvcError
from svc.outbound import (
    HeaderConf,
    OutboundClient,
    OutboundError,
    check_header,
    close_shared,
    configure_shared,
    env_value,
    parse_template,
    render_template,
    resolve_headers,
    shared_client,
)
from svc.outbound.templates import Variable
from tests.http_fixture import HttpFixture, Recorded, Reply
from tests.support import free_port


@pytest.fixture(scope="module")
def server() -> Iterator[HttpFixture]:
    with HttpFixture() as srv:
        srv.route("/echo", lambda r: Reply(201, r.body, {"X-Seen": r.headers.get("x-in", "")}))
        srv.route("/slow", lambda r: Reply(200, b"late", delay=0.3))
        srv.route("/hang", lambda r: Reply(hang_up=True))
        srv.route("/twice", lambda r: Reply(200, b"", {"Cache-Control": "max-age=5"}))
        yield srv


@pytest.fixture
def srv(server: HttpFixture) -> HttpFixture:
    server.reset()
    return server


# ---------------------------------------------------------------- templates


ENV = {"BASE": "http://127.0.0.1:9", "PORT": "5594", " SPACED ": "odd"}


@pytest.mark.parametrize(
    ("text", "rendered"),
    [
        ("{{BASE}}/trigger", "http://127.0.0.1:9/trigger"),
        ("http://host:{{PORT}}/a?b={{PORT}}", "http://host:5594/a?b=5594"),
        ("no variables", "no variables"),
        ("", ""),
        ("{{ SPACED }}", "odd"),  # the name is taken as written, spaces included
        ("a{{PORT", "a{{PORT"),  # never closed: literal
        ("x}}{{PORT}}{", "x}}5594{"),
        ("{single}", "{single}"),
    ],
)
def test_templates_render_from_the_environment(text: str, rendered: str) -> None:
    assert render_template(text, ENV) == rendered


def test_the_grammar_agrees_with_the_reference_scan() -> None:
    """Hasura's parser: text up to the first `{{`, a variable up to the next `}}`; a regex
    scanning the same way is the oracle, on 2,000 random strings of braces and letters."""
    rng = random.Random(12)
    for _ in range(2000):
        text = "".join(rng.choice("{{}}ab\n") for _ in range(rng.randrange(0, 24)))
        names = re.findall(r"\{\{([\s\S]*?)\}\}", text)
        env = {name: f"<{name}>" for name in names}
        expected = re.sub(r"\{\{([\s\S]*?)\}\}", lambda m: f"<{m.group(1)}>", text)
        assert parse_template(text).variables == tuple(names), text
        assert render_template(text, env) == expected, text


def test_a_template_lists_its_parts() -> None:
    template = parse_template("{{BASE}}/v1/{{PORT}}")
    assert template.parts == (Variable("BASE"), "/v1/", Variable("PORT"))
    assert template.variables == ("BASE", "PORT")


def test_missing_variables_are_named_in_one_error() -> None:
    with pytest.raises(SvcError) as info:
        render_template("{{NOPE}}/{{BASE}}/{{ALSO_NOPE}}", ENV)
    err = info.value
    assert (err.status, err.code) == (400, "unexpected")  # Hasura resolveWebhook
    assert err.message == "Value for environment variables not found: NOPE, ALSO_NOPE"


def test_the_process_environment_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SVC_TEST_OUTBOUND_HOST", "hooks.example")
    assert render_template("https://{{SVC_TEST_OUTBOUND_HOST}}/x") == "https://hooks.example/x"
    assert env_value("SVC_TEST_OUTBOUND_HOST") == "hooks.example"
    monkeypatch.delenv("SVC_TEST_OUTBOUND_HOST")
    with pytest.raises(SvcError) as info:
        env_value("SVC_TEST_OUTBOUND_HOST")
    assert (info.value.code, info.value.message) == (
        "not-found",
        "environment variable 'SVC_TEST_OUTBOUND_HOST' not set",
    )


# ---------------------------------------------------------------- headers


def test_configured_headers_resolve_values_and_environment() -> None:
    confs = [
        HeaderConf("x-static", value="v"),
        HeaderConf("x-from-env", value_from_env="PORT"),
        HeaderConf("x-template", value="{{BASE}}/cb"),
    ]
    assert resolve_headers(confs, ENV) == [
        ("x-static", "v"),
        ("x-from-env", "5594"),
        ("x-template", "http://127.0.0.1:9/cb"),
    ]
    with pytest.raises(SvcError) as info:
        resolve_headers([HeaderConf("x", value_from_env="UNSET_VAR")], ENV)
    assert (info.value.code, info.value.message) == (
        "not-found",
        "environment variable 'UNSET_VAR' not set",
    )


def test_header_forms_round_trip_and_bad_forms_are_refused() -> None:
    raw = b'[{"name":"a","value":"1"},{"name":"b","value_from_env":"B"}]'
    confs = msgspec.json.decode(raw, type=list[HeaderConf])
    assert msgspec.json.encode(confs) == raw
    assert [check_header(c) for c in confs] == confs
    cases = [
        (HeaderConf("x"), "expecting value or value_from_env keys"),
        (HeaderConf("x", "1", "E"), "expecting only one of value or value_from_env keys"),
        (
            HeaderConf("x", value_from_env="SVC_GRAPHQL_CLIENT_NAME"),
            'env variables starting with "SVC_GRAPHQL_" are not allowed in value_from_env: '
            "SVC_GRAPHQL_CLIENT_NAME",
        ),
    ]
    for conf, message in cases:
        with pytest.raises(SvcError) as info:
            check_header(conf, "$.definition.headers[0]")
        err = info.value
        assert (err.code, err.message, err.path) == (
            "parse-failed",
            message,
            "$.definition.headers[0]",
        )


# ---------------------------------------------------------------- calls


@pytest.fixture(params=["aiohttp", "httpx"])
def library(request: pytest.FixtureRequest) -> str:
    """Each call test runs on both libraries `svc.outbound` can use
    (`SVC_GRAPHQL_OUTBOUND_CLIENT`): they must answer and fail alike."""
    return str(request.param)


async def test_a_call_returns_status_headers_body_and_elapsed(
    srv: HttpFixture, library: str
) -> None:
    client = OutboundClient(library=library)
    response = await client.request(
        "POST", srv.url("/echo?q=1"), headers=[("x-in", "hello")], content=b'{"a": 1}'
    )
    assert (response.status, response.body, response.header("X-SEEN")) == (
        201,
        b'{"a": 1}',
        "hello",
    )
    assert response.json() == {"a": 1}
    assert 0 < response.elapsed < 5
    seen: Recorded = srv.requests[0]
    assert (seen.method, seen.path, seen.body) == ("POST", "/echo?q=1", b'{"a": 1}')
    assert seen.headers["user-agent"].startswith("svc/")
    await client.close()


async def test_headers_go_as_given(srv: HttpFixture, library: str) -> None:
    """Only the caller's headers and svc's User-Agent (unless removed): no content type
    the caller did not give (aiohttp would add octet-stream), none of `without`."""
    client = OutboundClient(library=library)
    await client.request("POST", srv.url("/echo"), headers={"x-in": "a"}, content=b"raw")
    await client.request(
        "POST",
        srv.url("/echo"),
        headers=[(b"Content-Type", b"application/json"), (b"x-in", b"b")],
        content=b"{}",
        without=["User-Agent", "x-in"],
    )
    first, second = (r.headers for r in srv.requests)
    assert "content-type" not in first and first["user-agent"].startswith("svc/")
    assert second["content-type"] == "application/json"
    assert "user-agent" not in second and "x-in" not in second
    await client.close()


async def test_proxies_from_the_environment(
    srv: HttpFixture, library: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`HTTP_PROXY` sends plain-HTTP calls through the proxy (absolute-form target), as
    httpx and the reference's HTTP manager (`proxyEnvironment`) do; `NO_PROXY` exempts."""
    for name in ("NO_PROXY", "no_proxy", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", srv.url(""))
    client = OutboundClient(library=library)
    await client.request("GET", "http://svc-proxied.invalid/x")
    assert srv.requests[0].path == "http://svc-proxied.invalid/x"
    await client.close()
    monkeypatch.setenv("NO_PROXY", "svc-direct.invalid")
    client = OutboundClient(library=library)
    with pytest.raises(OutboundError) as info:
        await client.request("GET", "http://svc-direct.invalid/x", timeout=5)
    assert info.value.kind == "connection" and len(srv.requests) == 1
    await client.close()


async def test_any_status_is_an_answer(srv: HttpFixture, library: str) -> None:
    client = OutboundClient(library=library)
    response = await client.request("GET", srv.url("/missing"))
    assert (response.status, response.body) == (404, b"not found")
    await client.close()


async def test_failures_are_typed(srv: HttpFixture, library: str) -> None:
    client = OutboundClient(connect_timeout=2, library=library)
    cases = [
        (srv.url("/slow"), 0.1, "timeout", "Response timeout"),
        (f"http://127.0.0.1:{free_port()}/", None, "connection", "Connection failure"),
        (srv.url("/hang"), None, "invalid-response", "Invalid response"),
        ("not a url", None, "invalid-url", "Invalid URL"),
        ("ftp://127.0.0.1/x", None, "invalid-url", "Invalid URL"),
    ]
    for url, timeout, kind, message in cases:
        started = time.monotonic()
        with pytest.raises(OutboundError) as info:
            await client.request("GET", url, timeout=timeout)
        err = info.value
        assert (err.kind, err.message, err.code, err.status, err.url) == (
            kind,
            message,
            "unexpected",
            500,
            url,
        )
        assert time.monotonic() - started < 0.3 if timeout else True  # the timeout held
    await client.close()


async def test_connections_are_reused(srv: HttpFixture, library: str) -> None:
    client = OutboundClient(library=library)
    for _ in range(10):
        assert (await client.request("GET", srv.url("/twice"))).status == 200
    assert len({r.port for r in srv.requests}) == 1  # one keep-alive connection
    await client.close()
    await client.request("GET", srv.url("/twice"))  # after close: a new connection
    assert len({r.port for r in srv.requests}) == 2
    await client.close()


async def test_concurrent_calls_are_bounded_by_the_pool(srv: HttpFixture, library: str) -> None:
    client = OutboundClient(pool_size=3, library=library)
    started = time.monotonic()
    answers = await asyncio.gather(*(client.request("GET", srv.url("/slow")) for _ in range(9)))
    took = time.monotonic() - started
    assert [a.status for a in answers] == [200] * 9
    assert srv.max_in_flight == 3  # never more than the pool's connections at once
    assert len({r.port for r in srv.requests}) == 3
    assert 0.85 < took < 3  # three waves of 0.3 s
    await client.close()


async def test_a_pool_of_several_shards_keeps_its_bound(srv: HttpFixture, library: str) -> None:
    """pool_size 25 is three httpx pools (10, 10, 5): all 25 connections are used, never
    more, and the other calls wait for a free one as with one pool."""

    def gate(request: Recorded) -> Reply:
        deadline = time.monotonic() + 3  # answer once 25 are held (or after 3 s)
        while srv.in_flight < 25 and time.monotonic() < deadline:
            time.sleep(0.01)
        return Reply(200, b"ok")

    srv.route("/gate", gate)
    client = OutboundClient(pool_size=25, library=library)
    answers = await asyncio.gather(*(client.request("GET", srv.url("/gate")) for _ in range(50)))
    assert [a.status for a in answers] == [200] * 50
    assert srv.max_in_flight == 25
    assert len({r.port for r in srv.requests}) == 25
    await client.close()


def test_the_shared_client_survives_event_loops(server: HttpFixture) -> None:
    """One client per process; each test (and each `asyncio.run`) has its own loop: the
    client opens new connections on the loop that calls it."""
    configure_shared(pool_size=4, connect_timeout=1.0, timeout=5.0)
    client = shared_client()
    assert (client.pool_size, client.connect_timeout, client.timeout) == (4, 1.0, 5.0)

    async def call() -> int:
        return (await shared_client().request("GET", server.url("/twice"))).status

    assert asyncio.run(call()) == 200
    assert asyncio.run(call()) == 200  # a new loop: the old loop's client is dropped
    asyncio.run(close_shared())
    assert shared_client() is client
    configure_shared()


def test_the_library_is_chosen_by_configuration() -> None:
    """aiohttp unless `SVC_GRAPHQL_OUTBOUND_CLIENT=httpx`; another name stops the server at
    start (`Config.from_env`), naming the variable."""
    from svc.config import Config, outbound_client

    assert outbound_client({}) == "aiohttp"
    assert outbound_client({"SVC_GRAPHQL_OUTBOUND_CLIENT": " HTTPX "}) == "httpx"
    with pytest.raises(ValueError, match="SVC_GRAPHQL_OUTBOUND_CLIENT"):
        Config.from_env({"SVC_GRAPHQL_OUTBOUND_CLIENT": "curl"})
    assert OutboundClient(library="httpx").library == "httpx"
    with pytest.raises(ValueError, match="unknown outbound client library"):
        OutboundClient(library="curl")
