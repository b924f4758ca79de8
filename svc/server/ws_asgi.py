"""Websockets over ASGI (`scope["type"] == "websocket"`): the upgrade is routed,
the sub-protocol chosen and echoed, and the accepted socket served by `WsSession`.

Any ASGI server works; under Granian the ASGI interface is the one that can echo a
sub-protocol and send close codes (Granian 2.8's RSGI can do neither: `ws_rsgi`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from svc.server.ws_endpoint import ws_route
from svc.server.ws_protocol import CLOSE_NO_STATUS, choose_protocol, requested_protocols
from svc.server.ws_session import WsContext, WsSession

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class AsgiSocket:
    """`WsSocket` over ASGI `receive`/`send`; frames go out as text."""

    __slots__ = ("_receive", "_send")

    def __init__(self, receive: Receive, send: Send) -> None:
        self._receive = receive
        self._send = send

    async def receive(self) -> str | bytes | None:
        """The next frame's text (or bytes); None on `websocket.disconnect`."""
        while True:
            message = await self._receive()
            kind = message["type"]
            if kind == "websocket.receive":
                text = message.get("text")
                data: str | bytes = text if text is not None else message.get("bytes") or b""
                return data
            if kind == "websocket.disconnect":
                return None

    async def send(self, data: bytes) -> None:
        """One text frame."""
        await self._send({"type": "websocket.send", "text": data.decode()})

    async def close(self, code: int, reason: str) -> None:
        """`websocket.close` with `code` and `reason`; for `CLOSE_NO_STATUS` nothing is
        sent: the app returns without a close, and the server ends the connection with a
        close frame that has no status code (Granian 2.8; clients see 1005). Either way
        this socket lets go of `receive`/`send`: Granian ends a connection whose app
        returned without a close only once they are freed, and sessions sit in reference
        cycles that only the garbage collector would break (seconds later, or never)."""
        send = self._send
        self._receive = _gone_receive
        self._send = _gone_send
        if code != CLOSE_NO_STATUS:
            await send({"type": "websocket.close", "code": code, "reason": reason})


async def _gone_receive() -> dict[str, Any]:
    """`receive` of a closed `AsgiSocket`: the connection is over."""
    return {"type": "websocket.disconnect", "code": CLOSE_NO_STATUS}


async def _gone_send(_: dict[str, Any]) -> None:
    """`send` of a closed `AsgiSocket`: raises ConnectionError."""
    raise ConnectionError("websocket closed")


def _headers(scope: dict[str, Any]) -> dict[str, str]:
    """Lower-case names, the first value of a repeated header, UTF-8 (latin-1 fallback)."""
    out: dict[str, str] = {}
    for raw_name, raw_value in scope.get("headers", ()):
        name = raw_name.decode("latin-1").lower()
        if name not in out:
            try:
                out[name] = raw_value.decode()
            except UnicodeDecodeError:
                out[name] = raw_value.decode("latin-1")
    return out


async def serve_asgi(
    ctx: WsContext, scope: dict[str, Any], receive: Receive, send: Send, graphql_on: bool
) -> None:
    """Serve one ASGI websocket connection to its end. `graphql_on`: the `graphql` API is
    enabled (else every path is refused)."""
    message = await receive()
    if message["type"] != "websocket.connect":
        return
    route = ws_route(scope.get("path", ""), graphql_on)
    if route.refusal is not None:
        await _reject(scope, send, route.refusal)
        return
    headers = _headers(scope)
    protocol, echo = choose_protocol(requested_protocols(headers.get("sec-websocket-protocol")))
    await send({"type": "websocket.accept", "subprotocol": echo})
    await WsSession(
        ctx, AsgiSocket(receive, send), protocol, headers, route.legacy, route.relay
    ).run()


async def _reject(scope: dict[str, Any], send: Send, refusal: Any) -> None:
    """Refuse the upgrade with HTTP 404 and the reference's JSON error when the server
    supports ASGI's websocket denial response, else with a plain close (HTTP 403)."""
    if "websocket.http.response" in (scope.get("extensions") or {}):
        headers = [(b"content-type", b"application/json; charset=utf-8")]
        await send({"type": "websocket.http.response.start", "status": 404, "headers": headers})
        body = msgspec.json.encode(refusal)
        await send({"type": "websocket.http.response.body", "body": body})
    else:
        await send({"type": "websocket.close", "code": 1000})
