"""Websockets over Granian's RSGI interface (`scope.proto == "ws"`).

Granian 2.8.7's RSGI websocket protocol has `accept()` without arguments and `close(status)`
(its source: the upgrade response is built without a `Sec-WebSocket-Protocol` header, and a
close after accept sends no status code: clients see 1005). Clients that list a sub-protocol
(every GraphQL client: browsers, Node's `ws`, Apollo Client, urql, graphql-ws, `gql`)
require it echoed, or speak a protocol the server cannot confirm. So under RSGI, an
explicit `--server-interface rsgi` for HTTP-only deployments (the default is ASGI,
`ws_asgi`, which serves websockets completely):

- an upgrade that asks for a sub-protocol is refused before the handshake with HTTP 501
  (no half-open socket), and the worker logs a line naming `--server-interface asgi`;
- an upgrade without `Sec-WebSocket-Protocol` is served with the Apollo protocol
  (`subscriptions-transport-ws`, what such a client speaks), but close codes (4400, 4408,
  1001, 1009) do not reach it;
- a refused upgrade (unknown path) is an HTTP 404 with an empty body.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from svc.server.ws_endpoint import ws_route
from svc.server.ws_protocol import CLOSE_NORMAL, Protocol, requested_protocols
from svc.server.ws_session import WsContext, WsSession

_log = logging.getLogger(__name__)


class RsgiSocket:
    """`WsSocket` over Granian's RSGI websocket protocol and its accepted transport.

    Granian closes the connection only once the transport object (which holds the read
    half) is freed, not at `protocol.close()`: `close` drops this socket's reference, the
    only one, so the close does not wait for the garbage collector (sessions sit in
    reference cycles)."""

    __slots__ = ("_protocol", "_transport")

    def __init__(self, protocol: Any, transport: Any) -> None:
        self._protocol = protocol
        self._transport: Any = transport

    async def receive(self) -> str | bytes | None:
        """The next frame's data; None once the connection is closed (message kind 0, the
        transport raising `RSGIProtocolClosed`, or its pending read cancelled by the close)."""
        transport = self._transport
        if transport is None:
            return None
        try:
            message = await transport.receive()
        except asyncio.CancelledError:
            if self._transport is None:  # our own close cancelled the read
                return None
            raise
        except Exception:  # RSGIProtocolClosed / RSGIProtocolError: the socket is gone
            return None
        if message.kind == 0:
            return None
        data: str | bytes = message.data
        return data

    async def send(self, data: bytes) -> None:
        """One text frame; raises ConnectionError once closed."""
        transport = self._transport
        if transport is None:
            raise ConnectionError("websocket closed")
        await transport.send_str(data.decode())

    async def close(self, code: int, reason: str) -> None:
        """Close the connection; RSGI cannot send `code` or `reason` (module docstring)."""
        self._transport = None
        self._protocol.close(code)


# The HTTP status of an upgrade refused because it asks for a sub-protocol RSGI cannot echo.
SUBPROTOCOL_REFUSED = 501


def _log_refusal(requested: str) -> None:
    """One JSON log line per refused upgrade (a client retrying floods nothing: each try
    is one line, as each HTTP request is)."""
    entry = {
        "type": "websocket-log",
        "level": "error",
        "status": SUBPROTOCOL_REFUSED,
        "message": (
            f"websocket refused: the client asked for sub-protocol(s) {requested!r}, which "
            "Granian's RSGI interface cannot echo; serve with --server-interface asgi "
            "(the default) for GraphQL subscriptions"
        ),
    }
    _log.error(entry)


async def serve_rsgi(ctx: WsContext, scope: Any, protocol: Any, graphql_on: bool) -> None:
    """Serve one RSGI websocket connection to its end (refused: HTTP 404, empty body)."""
    route = ws_route(scope.path, graphql_on)
    if route.refusal is not None:
        protocol.close(404)
        return
    headers = dict(scope.headers.items())
    requested = requested_protocols(headers.get("sec-websocket-protocol"))
    if requested:
        _log_refusal(", ".join(requested))
        protocol.close(SUBPROTOCOL_REFUSED)
        return
    transport = await protocol.accept()
    socket = RsgiSocket(protocol, transport)
    try:
        await WsSession(ctx, socket, Protocol.APOLLO, headers, route.legacy, route.relay).run()
    finally:
        # Also after the client's close: until the transport is freed Granian does not
        # answer it, and the client waits out its close timeout (10 s for websockets).
        await socket.close(CLOSE_NORMAL, "")
