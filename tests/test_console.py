"""The console (issue 18): `/console` serves the vendored GraphiQL (no CDN), `/`
redirects there, assets come gzip-encoded or plain, the console is off unless enabled; in
headless Chromium the page asks for the admin secret, runs a query and shows the answer
(screenshot kept in tests/artifacts/console.png), and runs a subscription whose pushed
update it renders (issue 23: under the default interface and worker count, with and without
an admin secret, with the headers editor's role); `GET /favicon.ico` answers svc's icon."""

from __future__ import annotations

import gzip
import json
import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser import Browser, chromium
from tests.support import ServerProcess, create_database

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
SECRET = "console-secret"
SETUP = """
CREATE TABLE author (id serial PRIMARY KEY, name text NOT NULL);
INSERT INTO author (name) VALUES ('Ada Lovelace'), ('Grace Hopper');
"""

# the `reader` role (srv only) sees every author but Ada
READER_FILTER = {"name": {"_nlike": "Ada%"}}


@pytest.fixture(scope="module")
def srv(pg_url: str) -> Iterator[ServerProcess]:
    s = ServerProcess(create_database(pg_url), "--admin-secret", SECRET, "--enable-console", "true")
    try:
        admin = {"x-svc-admin-secret": SECRET}
        steps = [
            {"type": "run_sql", "args": {"sql": SETUP}},
            {"type": "track_table", "args": "author"},
            {
                "type": "create_select_permission",
                "args": {
                    "table": "author",
                    "role": "reader",
                    "permission": {"columns": ["id", "name"], "filter": READER_FILTER},
                },
            },
        ]
        r = s.query({"type": "bulk", "args": steps}, headers=admin)
        assert r.status_code == 200, r.text
        yield s
    finally:
        s.stop()


def test_page_and_redirect(srv: ServerProcess) -> None:
    r = srv.client.get("/", follow_redirects=False)
    assert r.status_code == 302 and r.headers["location"] == "/console"
    page = srv.client.get("/console")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    refs = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    # svc's icon, then 2 styles and 5 scripts
    assert refs[0] == "/favicon.ico" and len(refs) == 8, refs
    # everything the page loads comes from this server: it works offline
    assert all(ref.startswith("/console/assets/") for ref in refs[1:]), refs
    for ref in refs:
        assert srv.client.get(ref).status_code == 200, ref


def test_assets_gzip_or_plain(srv: ServerProcess) -> None:
    zipped = srv.client.get("/console/assets/graphiql.js", headers={"accept-encoding": "gzip"})
    assert zipped.headers["content-encoding"] == "gzip"
    assert zipped.headers["content-type"].startswith("text/javascript")
    assert "immutable" in zipped.headers["cache-control"]
    plain = srv.client.get("/console/assets/react.js", headers={"accept-encoding": "identity"})
    assert "content-encoding" not in plain.headers
    assert b"React" in plain.content[:2000] or b"react" in plain.content[:2000]
    raw = gzip.decompress(
        (
            Path(__file__).resolve().parent.parent / "svc/server/console_assets/react.js.gz"
        ).read_bytes()
    )
    assert plain.content == raw
    for missing in ("nope.js", "VERSIONS", "LICENSES", "../config.py", "console.js.gz"):
        assert srv.client.get(f"/console/assets/{missing}").status_code == 404


def test_console_off_by_default_with_a_database_url(pg_url: str) -> None:
    s = ServerProcess(create_database(pg_url), "--workers", "1")
    try:
        assert s.client.get("/console").status_code == 404
        assert s.client.get("/").status_code == 404
    finally:
        s.stop()


CHROMIUM = chromium()
NEEDS_CHROMIUM = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium installed (Debian: apt-get install chromium)"
)


@NEEDS_CHROMIUM
def test_console_in_headless_chromium(srv: ServerProcess) -> None:
    assert CHROMIUM is not None
    with Browser(CHROMIUM) as browser:
        browser.goto(srv.url + "/console")
        # the admin secret is asked for first; a wrong one is refused
        browser.wait_for("!document.getElementById('svc-login').hidden")
        browser.evaluate(_login("wrong"))
        browser.wait_for("document.getElementById('svc-login-message').textContent")
        browser.evaluate(_login(SECRET))
        browser.wait_for("!!document.querySelector('.graphiql-query-editor .CodeMirror')")
        browser.evaluate(
            "document.querySelector('.graphiql-query-editor .CodeMirror').CodeMirror"
            ".setValue('{ author(order_by: {id: asc}) { id name } }')"
        )
        browser.evaluate("document.querySelector('.graphiql-execute-button').click()")
        answer = browser.wait_for(
            "(document.querySelector('.graphiql-response .CodeMirror') || {CodeMirror: null})"
            ".CodeMirror?.getValue()?.includes('Grace Hopper') && "
            "document.querySelector('.graphiql-response .CodeMirror').CodeMirror.getValue()"
        )
        assert '"Ada Lovelace"' in answer and '"errors"' not in answer
        # the documentation explorer lists the table's generated types
        browser.evaluate(
            "document.querySelector('[aria-label=\"Show Documentation Explorer\"]')?.click()"
        )
        browser.wait_for("document.body.innerText.includes('author_bool_exp')")
        assert browser.evaluate("typeof GraphiQLPluginExplorer.explorerPlugin") == "function"
        shot = browser.screenshot(ARTIFACTS / "console.png")
    assert shot.stat().st_size > 10_000


# the result pane as rendered (CodeMirror's lines in the page, not its model), decoded
RENDERED = (
    "(() => { const pane = document.querySelector('.graphiql-response');"
    " try { return JSON.parse(pane.innerText.replaceAll('\\u00a0', ' ')); }"
    " catch (e) { return null; } })()"
)
QUERY_EDITOR = "document.querySelector('.graphiql-query-editor .CodeMirror').CodeMirror"
SUBSCRIPTION = "subscription { author(order_by: {id: asc}) { name } }"


@pytest.fixture(scope="module")
def open_srv(pg_url: str) -> Iterator[ServerProcess]:
    """The console on, no admin secret: the page opens GraphiQL at once."""
    s = ServerProcess(create_database(pg_url), "--enable-console", "true")
    try:
        steps = [
            {"type": "run_sql", "args": {"sql": SETUP}},
            {"type": "track_table", "args": "author"},
        ]
        r = s.query({"type": "bulk", "args": steps})
        assert r.status_code == 200, r.text
        yield s
    finally:
        s.stop()


@NEEDS_CHROMIUM
@pytest.mark.parametrize("secret", [None, SECRET], ids=["no-admin-secret", "admin-secret"])
def test_console_subscription_in_headless_chromium(
    srv: ServerProcess, open_srv: ServerProcess, secret: str | None
) -> None:
    """Under the default interface and worker count, a `subscription` run from GraphiQL goes
    over one graphql-transport-ws websocket (the server echoes the sub-protocol) whose
    connection_init payload is `{"headers": ...}` with the admin secret when one is set; the
    result pane renders the table as a query over HTTP reads it, then, after an insert over
    HTTP, renders the pushed update (received on that websocket, not a new request)."""
    server = srv if secret else open_srv
    headers = {"x-svc-admin-secret": secret} if secret else {}
    with Browser(_chromium()) as browser:
        _open_console(browser, server, secret)
        socket = _run_subscription(browser, server, SUBSCRIPTION)
        before = _names(server, headers)
        assert {"Ada Lovelace", "Grace Hopper"} <= set(before)
        _see(browser, {"data": {"author": [{"name": n} for n in before]}}, "first result")
        init = json.loads(_frames(browser, socket, "Sent")[0])
        assert init == {"type": "connection_init", "payload": {"headers": headers}}
        added = f"Edsger Dijkstra {uuid.uuid4().hex[:6]}"
        _insert(server, added, headers)
        expected = {"data": {"author": [{"name": n} for n in [*before, added]]}}
        _see(browser, expected, "pushed update", timeout=15)
        assert any(added in f for f in _frames(browser, socket, "Received"))
        assert len(browser.events("Network.webSocketCreated")) == 1
        browser.screenshot(ARTIFACTS / f"console-subscription-{'secret' if secret else 'open'}.png")


@NEEDS_CHROMIUM
def test_console_subscription_carries_the_headers_editor(srv: ServerProcess) -> None:
    """A role typed into GraphiQL's headers editor reaches the subscription: connection_init's
    `payload.headers` holds it with the admin secret (GraphiQL alone puts it beside
    `headers`, where the server does not read it, and the subscription ran as admin), so
    the rendered rows are the `reader` role's: its permission hides "Ada Lovelace", also in
    the pushed update."""
    role = {"x-svc-role": "reader"}
    with Browser(_chromium()) as browser:
        _open_console(browser, srv, SECRET)
        browser.evaluate(
            "Array.from(document.querySelectorAll('button'))"
            ".find(b => b.textContent === 'Headers').click()"
        )
        editor = (
            "document.querySelector("
            "'.graphiql-editor-tool .graphiql-editor:not(.hidden) .CodeMirror')"
        )
        browser.wait_for(f"!!{editor}")
        browser.evaluate(f"{editor}.CodeMirror.setValue({json.dumps(json.dumps(role))}); true")
        socket = _run_subscription(browser, srv, SUBSCRIPTION)
        admin = {"x-svc-admin-secret": SECRET}
        visible = [n for n in _names(srv, admin) if not n.startswith("Ada")]
        assert "Grace Hopper" in visible
        _see(browser, {"data": {"author": [{"name": n} for n in visible]}}, "reader's rows")
        init = json.loads(_frames(browser, socket, "Sent")[0])
        assert init["type"] == "connection_init"
        assert init["payload"]["headers"] == {"x-svc-admin-secret": SECRET, **role}
        added = f"Barbara Liskov {uuid.uuid4().hex[:6]}"
        _insert(srv, added, admin)
        expected = {"data": {"author": [{"name": n} for n in [*visible, added]]}}
        _see(browser, expected, "reader's pushed update", timeout=15)


def test_favicon_with_the_console_on_and_off(srv: ServerProcess, pg_url: str) -> None:
    """`GET /favicon.ico` answers 200, `image/x-icon`, an ICO file (header 00 00 01 00: a
    reserved zero, type 1 = icon) that is svc's own, with the console on and with it off
    (no admin secret needed either way)."""
    icon = Path(__file__).resolve().parent.parent / "svc/server/console_assets/favicon.ico"
    off = ServerProcess(create_database(pg_url), "--workers", "1")
    try:
        for server in (srv, off):
            r = server.client.get("/favicon.ico")
            assert r.status_code == 200, (server.url, r.text)
            assert r.headers["content-type"] == "image/x-icon"
            assert r.content[:4] == b"\x00\x00\x01\x00"
            assert r.content == icon.read_bytes()
        assert off.client.get("/console").status_code == 404
    finally:
        off.stop()


def _chromium() -> str:
    assert CHROMIUM is not None
    return CHROMIUM


def _open_console(browser: Browser, server: ServerProcess, secret: str | None) -> None:
    """Open /console (recording the page's network), log in when `secret` is given, and
    wait for GraphiQL's query editor."""
    browser.record_network()
    browser.goto(server.url + "/console")
    if secret:
        browser.wait_for("!document.getElementById('svc-login').hidden")
        browser.evaluate(_login(secret))
    browser.wait_for("!!document.querySelector('.graphiql-query-editor .CodeMirror')")


def _run_subscription(browser: Browser, server: ServerProcess, text: str) -> str:
    """Put `text` in the query editor and run it; the request id of the websocket it opened
    (to this server's /v1/graphql, the sub-protocol graphql-transport-ws echoed)."""
    browser.evaluate(f"{QUERY_EDITOR}.setValue({json.dumps(text)}); true")
    # GraphiQL parses the editor's text after a short pause; the parsed operation is what
    # sends a subscription over the websocket instead of HTTP
    browser.wait_for(f"{QUERY_EDITOR}.operations?.[0]?.operation === 'subscription'")
    browser.evaluate("document.querySelector('.graphiql-execute-button').click(); true")
    _wait_event(browser, "Network.webSocketHandshakeResponseReceived")
    (created,) = browser.events("Network.webSocketCreated")
    assert created["url"] == server.url.replace("http://", "ws://") + "/v1/graphql"
    (handshake,) = browser.events("Network.webSocketHandshakeResponseReceived")
    assert handshake["response"]["status"] == 101
    assert handshake["response"]["headers"]["sec-websocket-protocol"] == "graphql-transport-ws"
    socket: str = created["requestId"]
    return socket


def _wait_event(browser: Browser, method: str, timeout: float = 30) -> None:
    """Poll the page (collecting DevTools events) until an event named `method` came."""
    deadline = time.monotonic() + timeout
    while not browser.events(method):
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {method} within {timeout} s")
        browser.evaluate("true")
        time.sleep(0.1)


def _frames(browser: Browser, socket: str, direction: str) -> list[str]:
    """The text frames the page sent (`direction` "Sent") or received ("Received") on the
    websocket `socket`, oldest first."""
    return [
        e["response"]["payloadData"]
        for e in browser.events(f"Network.webSocketFrame{direction}")
        if e["requestId"] == socket
    ]


def _see(browser: Browser, expected: object, what: str, timeout: float = 30) -> None:
    """Wait until the result pane renders `expected`; on a timeout, fail with what it shows
    (screenshot in tests/artifacts/console-subscription-failed.png)."""
    try:
        compact = json.dumps(expected, separators=(",", ":"))  # as JSON.stringify writes it
        browser.wait_for(f"JSON.stringify({RENDERED}) === {json.dumps(compact)}", timeout=timeout)
    except TimeoutError:
        browser.screenshot(ARTIFACTS / "console-subscription-failed.png")
        shown = browser.evaluate(RENDERED)
        raise AssertionError(f"{what}: the page shows {shown!r}, not {expected!r}") from None


def _names(server: ServerProcess, headers: dict[str, str]) -> list[str]:
    """The authors' names by id, read with a query over HTTP."""
    body = server.graphql("{ author(order_by: {id: asc}) { name } }", headers=headers)
    assert "errors" not in body, body
    return [a["name"] for a in body["data"]["author"]]


def _insert(server: ServerProcess, name: str, headers: dict[str, str]) -> None:
    """Insert an author over HTTP (a mutation)."""
    mutation = "mutation ($n: String!) { insert_author_one(object: {name: $n}) { id } }"
    body = server.graphql(mutation, {"n": name}, headers=headers)
    assert "errors" not in body, body


def _login(secret: str) -> str:
    """JavaScript that types `secret` into the console's form and submits it."""
    return (
        f"document.getElementById('svc-secret').value = {secret!r};"
        "document.getElementById('svc-login').requestSubmit(); true"
    )
