"""Websockets over Granian's RSGI interface (`scope.proto == "ws"`; issue 13).

Granian 2.8.7's RSGI websocket protocol has `accept()` without arguments and `close(status)`
(its source: the upgrade response is built without a `Sec-WebSocket-Protocol` header, and a
close after accept sends no status code: clients see 1005). So under RSGI:

- the sub-protocol cannot be echoed, so the first one the client listed is spoken
  (`ws_protocol.choose_protocol`, `can_echo=False`: what `gql` assumes); clients
  that require the echo (browsers, npm `ws`, so Apollo Client, urql, graphql-ws and
  subscriptions-transport-ws in Node) refuse the handshake; Python `websockets`, `gql` and
  clients sending no `Sec-WebSocket-Protocol` connect;
- close codes (4400, 4408, 1001, 1009) do not reach the client;
- a refused upgrade is an HTTP 404 with an empty body.

`svc serve --server-interface asgi` serves websockets completely (`ws_asgi`). A worker
says so once on stdout the first time a client asks for a sub-protocol under RSGI.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from svc.server.ws_endpoint import ws_route
from svc.server.ws_protocol import CLOSE_NORMAL, choose_protocol, requested_protocols
from svc.server.ws_session import WsContext, WsSession

_warned = False


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


def _warn_no_echo(requested: str) -> None:
    global _warned
    if _warned:
        return
    _warned = True
    sys.stdout.write(
        f"svc: a websocket client asked for sub-protocol(s) {requested!r}; Granian's RSGI "
        "interface cannot echo it (nor send close codes), so browsers and Node clients "
        "refuse the connection: serve websockets with --server-interface asgi\n"
    )
    sys.stdout.flush()


async def serve_rsgi(ctx: WsContext, scope: Any, protocol: Any, graphql_on: bool) -> None:
    """Serve one RSGI websocket connection to its end (refused: HTTP 404, empty body)."""
    route = ws_route(scope.path, graphql_on)
    if route.refusal is not None:
        protocol.close(404)
        return
    headers = dict(scope.headers.items())
    requested = requested_protocols(headers.get("sec-websocket-protocol"))
    ws_protocol, _ = choose_protocol(requested, can_echo=False)
    if requested:
        _warn_no_echo(", ".join(requested))
    transport = await protocol.accept()
    socket = RsgiSocket(protocol, transport)
    try:
        await WsSession(ctx, socket, ws_protocol, headers, route.legacy).run()
    finally:
        # Also after the client's close: until the transport is freed Granian does not
        # answer it, and the client waits out its close timeout (10 s for websockets).
        await socket.close(CLOSE_NORMAL, "")
