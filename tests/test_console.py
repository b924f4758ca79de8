"""The console (issue 18): `/console` serves the vendored GraphiQL (no CDN), `/`
redirects there, assets come gzip-encoded or plain, the console is off unless enabled; in
headless Chromium the page asks for the admin secret, runs a query and shows the answer
(screenshot kept in tests/artifacts/console.png)."""

from __future__ import annotations

import gzip
import re
import time
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


@pytest.fixture(scope="module")
def srv(pg_url: str) -> Iterator[ServerProcess]:
    s = ServerProcess(create_database(pg_url), "--admin-secret", SECRET, "--enable-console", "true")
    try:
        admin = {"x-svc-admin-secret": SECRET}
        steps = [
            {"type": "run_sql", "args": {"sql": SETUP}},
            {"type": "track_table", "args": "author"},
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
    assert len(refs) == 7
    # everything the page loads comes from this server: it works offline
    assert all(ref.startswith("/console/assets/") for ref in refs), refs
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


@pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium installed (Debian: apt-get install chromium)"
)
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


@pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium installed (Debian: apt-get install chromium)"
)
def test_console_subscription_in_headless_chromium(pg_url: str) -> None:
    """A subscription from the console (graphql-transport-ws) sees a later insert. Under
    ASGI: browsers need the sub-protocol echo that Granian's RSGI does not send."""
    assert CHROMIUM is not None
    s = ServerProcess(
        create_database(pg_url),
        "--admin-secret",
        SECRET,
        "--enable-console",
        "true",
        "--server-interface",
        "asgi",
        "--workers",
        "1",
    )
    admin = {"x-svc-admin-secret": SECRET}
    try:
        steps = [
            {"type": "run_sql", "args": {"sql": SETUP}},
            {"type": "track_table", "args": "author"},
        ]
        assert s.query({"type": "bulk", "args": steps}, headers=admin).status_code == 200
        with Browser(CHROMIUM) as browser:
            browser.goto(s.url + "/console")
            browser.wait_for("!document.getElementById('svc-login').hidden")
            browser.evaluate(_login(SECRET))
            browser.wait_for("!!document.querySelector('.graphiql-query-editor .CodeMirror')")
            browser.evaluate(
                "document.querySelector('.graphiql-query-editor .CodeMirror').CodeMirror"
                ".setValue('subscription { author(order_by: {id: asc}) { name } }')"
            )
            # GraphiQL re-parses the editor's text after a pause; the parsed document is
            # what sends a subscription over the websocket
            time.sleep(1)
            browser.evaluate("document.querySelector('.graphiql-execute-button').click()")
            response = (
                "(document.querySelector('.graphiql-response .CodeMirror') || "
                "{CodeMirror: null}).CodeMirror?.getValue() || ''"
            )
            try:
                browser.wait_for(f"({response}).includes('Grace Hopper')")
            except TimeoutError:
                browser.screenshot(ARTIFACTS / "console-subscription-failed.png")
                raise AssertionError(browser.evaluate(response)) from None
            insert = 'mutation { insert_author_one(object: {name: "Edsger Dijkstra"}) { id } }'
            assert "errors" not in s.graphql(insert, headers=admin)
            browser.wait_for(f"({response}).includes('Edsger Dijkstra')", timeout=15)
            browser.screenshot(ARTIFACTS / "console-subscription.png")
    finally:
        s.stop()


def _login(secret: str) -> str:
    """JavaScript that types `secret` into the console's form and submits it."""
    return (
        f"document.getElementById('svc-secret').value = {secret!r};"
        "document.getElementById('svc-login').requestSubmit(); true"
    )
