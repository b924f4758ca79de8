"""The corpus's `graphql_query/relay` case files over the websocket, as the reference's
class runs them a second time (WAVE3.md section 4: "http + ws"; FIXTURES.md section 3.3
`case_file_ws`, mode `query`): per case, on one shared connection to the case's `url`
path (`/v1beta1/relay`), `start`/`subscribe` with id `hge_test` and the case's query,
the next frame for it compared with the expected response as an HTTP body would be
(`tests.conformance.runner.compare_body`; an error frame may carry expected errors), then
`complete` for the id (after an error frame too). Both protocols: Apollo `graphql-ws`
and `graphql-transport-ws`.

The HTTP run of the same files is the conformance suite's
(`SVC_CONFORMANCE_ONLY=graphql_query/relay`); the runner has no websocket transport.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import websockets

from tests.conformance.runner import CORPUS, SERVER_ARGS, SKIP_REASON, compare_body, load_yaml
from tests.support import ServerProcess, create_database

RELAY = CORPUS / "graphql_query" / "relay" / "basic"
FIXTURES = {"setup.yaml", "teardown.yaml"}
CASES = sorted(p for p in RELAY.rglob("*.yaml") if p.name not in FIXTURES) if RELAY.is_dir() else []
pytestmark = pytest.mark.skipif(not CASES, reason=SKIP_REASON)


@pytest.fixture(scope="module")
def srv(pg_url: str) -> Iterator[ServerProcess]:
    """A server (the corpus's options) with the class fixture `setup.yaml` posted."""
    s = ServerProcess(create_database(pg_url), *SERVER_ARGS)
    try:
        r = s.query(load_yaml(RELAY / "setup.yaml"))
        assert r.status_code == 200, r.text
        yield s
    finally:
        s.stop()


async def _run(url: str, protocol: str | None, steps: list[dict[str, Any]]) -> list[str]:
    """Every case over one connection; the problems found (empty: all passed)."""
    problems: list[str] = []
    subprotocols: Any = [protocol] if protocol else None
    async with websockets.connect(url, subprotocols=subprotocols) as ws:
        await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
        ack = json.loads(await asyncio.wait_for(ws.recv(), 15))
        assert ack["type"] == "connection_ack", ack
        new = protocol == "graphql-transport-ws"
        for step in steps:
            kind = "subscribe" if new else "start"
            await ws.send(json.dumps({"id": "hge_test", "type": kind, "payload": step["query"]}))
            while True:
                frame = json.loads(await asyncio.wait_for(ws.recv(), 15))
                if frame.get("id") == "hge_test":
                    break
            expected = step["response"]
            payload = frame.get("payload")
            if "errors" in expected and frame["type"] == "error":
                payload = payload if isinstance(payload, dict) else {"errors": payload}
            elif frame["type"] != ("next" if new else "data"):
                problems.append(f"{step['file']}: frame {frame}")
                continue
            diff = compare_body(step["url"], expected, payload)
            if diff:
                problems.append(f"{step['file']}: {diff}")
            done = json.loads(await asyncio.wait_for(ws.recv(), 15))
            if done != {"id": "hge_test", "type": "complete"}:
                problems.append(f"{step['file']}: expected complete, got {done}")
    return problems


@pytest.mark.parametrize("protocol", [None, "graphql-transport-ws"], ids=["apollo", "new"])
def test_relay_cases_over_websockets(srv: ServerProcess, protocol: str | None) -> None:
    """All 27 case files answer over the websocket as over HTTP."""
    steps = []
    for path in CASES:
        step = load_yaml(path)
        step["file"] = str(Path(path).relative_to(RELAY))
        steps.append(step)
    assert len(steps) == 27
    url = "ws" + srv.url.removeprefix("http") + steps[0]["url"]
    assert asyncio.run(_run(url, protocol, steps)) == []
