"""A driver for the conformance corpus's scenario files (`<area>/scenarios/*.yaml`, format in
`../shared/conformance/FIXTURES.md` section 2) against a live svc, for the steps the
subscription scenarios use: `ws_open`, `ws_send`, `ws_expect`, `ws_expect_silence`,
`ws_expect_closed`, `reopen`, `wait_s`, `note`, `case_file` and `case_file_ws` (section
3.3). Any other step fails its test with "unsupported step" (webhook, timer and fixture
server steps belong to the other areas' drivers).

`run_scenario(server_url, path)` returns `{test name: "pass" | reason}`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import websockets

from tests.conformance.runner import CORPUS, PASS, compare_body, compare_step, decode, load_yaml

APOLLO, TRANSPORT = "apollo", "graphql-transport-ws"
KEEPALIVE_PAYLOAD = {"message": "keepalive"}


class StepFailed(Exception):
    """A step did not hold; the message is the test's failure reason."""


def is_keepalive(frame: Any) -> bool:
    """Apollo `ka` and graphql-transport-ws keep-alive pings are ignored everywhere."""
    if not isinstance(frame, dict):
        return False
    kind = frame.get("type")
    return kind == "ka" or (kind == "ping" and frame.get("payload") == KEEPALIVE_PAYLOAD)


@dataclass(eq=False)
class Conn:
    """One client websocket: frames read in the background, queued until consumed."""

    protocol: str
    path: str
    ws: Any = None
    frames: list[Any] = field(default_factory=list)
    closed_code: int | None = None
    closed: asyncio.Event = field(default_factory=asyncio.Event)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)
    initialised: bool = False
    reader: asyncio.Task[None] | None = None

    async def open(self, base_ws: str) -> None:
        """Connect (`apollo`: no `Sec-WebSocket-Protocol` header)."""
        protocols = [TRANSPORT] if self.protocol == TRANSPORT else None
        self.ws = await websockets.connect(
            base_ws + self.path, subprotocols=protocols, open_timeout=10, max_size=None
        )
        self.reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        try:
            async for message in self.ws:
                frame = json.loads(message)
                if not is_keepalive(frame):
                    self.frames.append(frame)
                    self.arrived.set()
        except websockets.ConnectionClosed:
            pass
        finally:
            code = self.ws.close_code  # the code the server sent (1005: none, 1006: no close)
            self.closed_code = code if code is not None else 1006
            self.closed.set()
            self.arrived.set()

    async def send(self, frame: Any) -> None:
        """Send one JSON frame."""
        await self.ws.send(json.dumps(frame))

    async def take(self, op_id: str | None, within_s: float) -> Any:
        """The next unconsumed frame with id `op_id` (None: the next frame without id)."""
        deadline = time.monotonic() + within_s
        while True:
            for i, frame in enumerate(self.frames):
                if frame.get("id") == op_id:
                    return self.frames.pop(i)
            left = deadline - time.monotonic()
            if left <= 0 or self.closed.is_set():
                why = f"closed ({self.closed_code})" if self.closed.is_set() else "timeout"
                raise StepFailed(f"no frame for id {op_id!r} within {within_s} s ({why})")
            self.arrived.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.arrived.wait(), left)

    async def close(self) -> None:
        """Close the client side."""
        if self.ws is not None:
            await self.ws.close()
        if self.reader is not None:
            await self.reader


def at_path(value: Any, path: str) -> Any:
    """The value at a dotted path with `[i]` indexes (`.` is the whole value)."""
    if path in (".", ""):
        return value
    for part in path.replace("[", ".[").split("."):
        if not part:
            continue
        value = value[int(part[1:-1])] if part.startswith("[") else value[part]
    return value


def frame_diff(expected: dict[str, Any], got: Any) -> str | None:
    """Each key of the expected frame equal in the received one (values exactly)."""
    for key, value in expected.items():
        if not isinstance(got, dict) or key not in got:
            return f"frame {json.dumps(got)[:300]}: missing {key}"
        if got[key] != value:
            return f"{key}: expected {json.dumps(value)[:300]}, got {json.dumps(got[key])[:300]}"
    return None


class Scenario:
    """Runs one scenario file's steps against `base_url`."""

    def __init__(self, base_url: str, http: httpx.Client) -> None:
        self.base_url = base_url
        self.base_ws = "ws" + base_url.removeprefix("http")
        self.http = http
        self.conns: dict[str, Conn] = {}

    def post_setup(self, items: list[Any]) -> None:
        """POST fixture bodies (file paths or `{url, body}`) to `/v1/query`; 200 each."""
        for item in items:
            if isinstance(item, str):
                url, body = "/v1/query", load_yaml(CORPUS / item)
            else:
                url, body = item.get("url", "/v1/query"), item["body"]
            r = self.http.post(url, json=body, timeout=60)
            if r.status_code != 200:
                raise StepFailed(f"fixture {item!r}: status {r.status_code}: {r.text[:300]}")

    async def conn(self, name: str, path: str = "/v1/graphql", protocol: str = APOLLO) -> Conn:
        """Connection `name`, opened when it does not exist or was closed."""
        conn = self.conns.get(name)
        if conn is None or conn.closed.is_set():
            conn = Conn(protocol, path)
            await conn.open(self.base_ws)
            self.conns[name] = conn
        return conn

    async def init(self, conn: Conn, payload: Any) -> None:
        """`connection_init` and its `connection_ack`."""
        frame: dict[str, Any] = {"type": "connection_init"}
        if payload is not None:
            frame["payload"] = payload
        await conn.send(frame)
        ack = await conn.take(None, 10)
        if ack.get("type") != "connection_ack":
            raise StepFailed(f"expected connection_ack, got {ack}")
        conn.initialised = True

    async def step(self, step: dict[str, Any]) -> None:
        """Run one step; raises StepFailed."""
        (kind, arg), *_ = step.items()
        handler = getattr(self, f"_{kind}", None)
        if handler is None:
            raise StepFailed(f"unsupported step: {kind}")
        await handler(arg)

    async def _note(self, _: Any) -> None:
        return

    async def _wait_s(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    async def _ws_open(self, arg: dict[str, Any]) -> None:
        old = self.conns.pop(arg["conn"], None)
        if old is not None:
            await old.close()
        await self.conn(arg["conn"], arg["path"], arg["protocol"])

    async def _ws_send(self, arg: dict[str, Any]) -> None:
        await self.conns[arg["conn"]].send(arg["frame"])

    async def _ws_expect(self, arg: dict[str, Any]) -> None:
        conn, expected = self.conns[arg["conn"]], arg["frame"]
        got = await conn.take(expected.get("id"), arg["within_s"])
        problem = frame_diff(expected, got)
        for path, value in (arg.get("equal") or {}).items():
            problem = problem or (None if at_path(got, path) == value else f"{path} != {value}")
        if problem:
            raise StepFailed(problem)

    async def _ws_expect_silence(self, arg: dict[str, Any]) -> None:
        conn = self.conns[arg["conn"]]
        await asyncio.sleep(arg["seconds"])
        if conn.frames:
            raise StepFailed(f"expected silence, got {json.dumps(conn.frames)[:300]}")

    async def _ws_expect_closed(self, arg: dict[str, Any]) -> None:
        conn = self.conns[arg["conn"]]
        try:
            await asyncio.wait_for(conn.closed.wait(), arg["within_s"])
        except TimeoutError:
            raise StepFailed(f"not closed within {arg['within_s']} s") from None
        if "code" in arg and conn.closed_code != arg["code"]:
            raise StepFailed(f"close code: expected {arg['code']}, got {conn.closed_code}")

    async def _reopen(self, name: str) -> None:
        conn = self.conns[name]
        if conn.closed.is_set():
            fresh = await self.conn(name, conn.path, conn.protocol)
            await self.init(fresh, {})

    async def _case_file(self, rel: str) -> None:
        doc = load_yaml(CORPUS / rel)
        for i, case in enumerate(doc if isinstance(doc, list) else [doc]):
            headers = {str(k): str(v) for k, v in (case.get("headers") or {}).items()}
            r = self.http.post(case["url"], json=case.get("query"), headers=headers, timeout=30)
            problem = compare_step(case, r.status_code, decode(r), r.headers)
            if problem:
                raise StepFailed(f"{rel}#{i}: {problem}")

    async def _case_file_ws(self, arg: dict[str, Any]) -> None:
        doc = load_yaml(CORPUS / arg["file"])
        for case in doc if isinstance(doc, list) else [doc]:
            path = "/" + case["url"].split("/", 1)[1] if "://" in case["url"] else case["url"]
            conn = await self.conn(arg["conn"], path, arg["protocol"])
            await self._case_over_ws(conn, case, arg["mode"])

    async def _case_over_ws(self, conn: Conn, case: dict[str, Any], mode: str) -> None:
        """FIXTURES 3.3: one case step over a websocket."""
        if case.get("headers"):
            await self.init(conn, {"headers": case["headers"]})
        elif not conn.initialised:
            await self.init(conn, {})
        query = dict(case["query"])
        if mode == "subscription":
            text = query["query"].strip()
            if not text.startswith("query"):
                raise StepFailed("subscription mode needs a query starting with `query`")
            text = "subscription" + text[len("query") :]
            query["query"] = text.replace("{", "@_multiple_top_level_fields {", 1)
        new = conn.protocol == TRANSPORT
        await conn.send(
            {"id": "hge_test", "type": "subscribe" if new else "start", "payload": query}
        )
        frame = await conn.take("hge_test", 15)
        expected = case.get("response")
        await self._check_case_frame(frame, expected, new, case["url"])
        if mode == "query":
            done = await conn.take("hge_test", 15)
            if done.get("type") != "complete":
                raise StepFailed(f"expected complete, got {done}")
        else:
            await conn.send({"id": "hge_test", "type": "complete" if new else "stop"})
            if not new and any("id" not in f for f in conn.frames):
                raise StepFailed(f"id-less frame pending after stop: {conn.frames}")

    @staticmethod
    async def _check_case_frame(frame: Any, expected: Any, new: bool, url: str) -> None:
        kinds = {"next"} if new else {"data"}
        payload = frame.get("payload")
        if isinstance(expected, dict) and "errors" in expected:
            kinds = {"data", "next", "error"}
            if new and isinstance(payload, list):
                payload = {"errors": payload}
        if frame.get("type") not in kinds:
            raise StepFailed(f"frame type: expected one of {sorted(kinds)}, got {frame}")
        problem = compare_body(url, expected, payload)
        if problem:
            raise StepFailed(problem)

    async def close_all(self) -> None:
        """Close every client connection."""
        for conn in self.conns.values():
            await conn.close()
        self.conns.clear()


async def _run_steps(sc: Scenario, steps: list[dict[str, Any]]) -> str:
    for i, step in enumerate(steps):
        try:
            await sc.step(step)
        except StepFailed as exc:
            return f"step {i} ({next(iter(step))}): {exc}"
        except (OSError, websockets.WebSocketException) as exc:
            return f"step {i} ({next(iter(step))}): {type(exc).__name__}: {exc}"
    return PASS


async def _run(base_url: str, doc: dict[str, Any]) -> dict[str, str]:
    results: dict[str, str] = {}
    per_test = doc.get("fixture_scope") == "test"
    with httpx.Client(base_url=base_url) as http:
        sc = Scenario(base_url, http)
        try:
            if not per_test:
                sc.post_setup(doc.get("setup") or [])
            before = await _run_steps(sc, doc.get("before_tests") or [])
            for test in doc["tests"]:
                if before != PASS:
                    results[test["name"]] = f"before_tests failed: {before}"
                    continue
                if per_test:
                    sc.post_setup(doc.get("setup") or [])
                results[test["name"]] = await _run_steps(sc, test["steps"])
                sc.post_setup(doc.get("test_teardown") or [])
                if per_test:
                    sc.post_setup(doc.get("teardown") or [])
        finally:
            await sc.close_all()
            if not per_test:
                sc.post_setup(doc.get("teardown") or [])
    return results


def run_scenario(base_url: str, path: Path) -> dict[str, str]:
    """Run the scenario file at `path` against the svc at `base_url`; test name → "pass"
    or the first failing step's reason."""
    return asyncio.run(_run(base_url, load_yaml(path)))
