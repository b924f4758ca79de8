"""One GraphQL websocket connection, whatever the server interface: reads client
frames, authenticates `connection_init`, keeps the connection alive, and hands operations
to `ws_operations.Operations`.

Behaviour is the reference's (reference-notes-wave2 section 1, conformance FIXTURES 3.1):

- `connection_init`: `payload.headers` merged over the upgrade request's headers, then
  the ordinary authentication (`svc.server.auth.Authenticator`). Success: `connection_ack`
  and, from the first, a keep-alive every `keepalive_s` (Apollo `ka`, graphql-transport-ws
  `ping` `{"message":"keepalive"}`). Failure: Apollo `connection_error` with the error
  text (the socket stays open), graphql-transport-ws close 4403 "Forbidden" (Hasura v2
  `WebSocket/Server.hs` `mkWSServerErrorCode ConnInitFailed`). A later `connection_init`
  authenticates again (its own payload headers over the upgrade headers) and is
  acknowledged again (never 4429: Hasura's `onConnInit`).
- Token expiry: when the session of the last successful `connection_init` has an expiry
  (a JWT's `exp`, `Authenticator.session_until`), the connection ends at that time, both
  protocols: its operations stop and it closes without a status code and without a
  frame (Hasura v2 `WebSocket.hs` `tokenExpiryHandler`: the connection's threads end,
  no close frame is sent). A later `connection_init` replaces the expiry with its own.
- No `connection_init` within `init_timeout_s` → close 4408 "Connection initialisation
  timeout" (graphql-transport-ws's code; the Apollo protocol defines no close codes, and
  its sockets get the same so that none stays open unauthenticated).
- A frame that is no client message: Apollo `connection_error` "parsing ClientMessage
  failed: ..." (open), graphql-transport-ws close 4400.
- `start` before a successful init, with a duplicate id, or past `max_operations`:
  `error` (code `start-failed`) then `complete`; graphql-transport-ws then closes (1000,
  reason "4400: <text>", as the reference's `mkConnectionCloseAction`; it never sends
  4401 or 4409, see `ws_protocol`).
- `ping` → `pong` with its payload; a `pong` whose payload is not the keep-alive → `ping`
  with that payload. `connection_terminate` → the server closes, no frame.
- A frame longer than `max_message_bytes` (`--max-body-size`) closes with 1009.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import svc.server.ws_protocol as wp
from svc.config import Config
from svc.errors import ErrorCode, SvcError
from svc.outbound.forwarded import set_client_headers
from svc.server.auth import Authenticator, Session
from svc.server.ws_operations import Operations, Subscriber
from svc.server.ws_protocol import Protocol as WsProtocol

# Upgrade headers that are about the websocket handshake, not the client (the reference
# drops them before authenticating).
HANDSHAKE_HEADERS = frozenset(
    {"sec-websocket-key", "sec-websocket-version", "upgrade", "connection"}
)


@dataclass(frozen=True, slots=True)
class WsSettings:
    """Websocket limits and timers: `keepalive_s` seconds between keep-alives
    (`SVC_GRAPHQL_WEBSOCKET_KEEPALIVE`, 5), `init_timeout_s` for graphql-transport-ws's
    `connection_init` (`SVC_GRAPHQL_WEBSOCKET_CONNECTION_INIT_TIMEOUT`, 3; the reference's
    defaults), `max_message_bytes` per client frame (`--max-body-size`),
    `max_operations` running at once per connection
    (`SVC_GRAPHQL_WEBSOCKET_MAX_OPERATIONS`, 1,000)."""

    keepalive_s: float = 5.0
    init_timeout_s: float = 3.0
    max_message_bytes: int = 32 * 1024 * 1024
    max_operations: int = 1000

    @classmethod
    def of(cls, config: Config) -> WsSettings:
        """Settings from `config` (its `SVC_GRAPHQL_WEBSOCKET_*` values and
        `max_body_size`)."""
        return cls(
            config.websocket_keepalive,
            config.websocket_init_timeout,
            config.max_body_size,
            config.websocket_max_operations,
        )


@dataclass(eq=False)
class WsContext:
    """What every connection of one app shares: authentication, the engine (None while
    it starts), settings, and the open sessions (closed with 1001 on shutdown)."""

    auth: Authenticator
    engine: Callable[[], Subscriber | None]
    settings: WsSettings
    sessions: set[WsSession] = field(default_factory=set)

    async def close_all(self) -> None:
        """Close every open session with 1001 (the worker is stopping)."""
        await asyncio.gather(*(s.going_away() for s in list(self.sessions)))


class WsSocket(Protocol):
    """An accepted websocket, as the interface adapters (`ws_asgi`, `ws_rsgi`) give it."""

    async def receive(self) -> str | bytes | None:
        """The next text or binary frame; None once the connection is closed."""

    async def send(self, data: bytes) -> None:
        """Send one text frame (`data` is UTF-8 JSON)."""

    async def close(self, code: int, reason: str) -> None:
        """Close with `code` and `reason` (at most 123 bytes); `CLOSE_NO_STATUS`: end the
        connection without a status code."""


@dataclass(frozen=True, slots=True)
class _InitFailed:
    message: str


class WsSession:
    """One connection: `run()` reads frames until the socket closes, then stops every
    operation. `headers`: the upgrade request's (lower-case names); `legacy`: the
    `/v1alpha1/graphql` error form; `relay`: the Relay API's (`/v1beta1/relay`)."""

    def __init__(
        self,
        ctx: WsContext,
        socket: WsSocket,
        protocol: WsProtocol,
        headers: dict[str, str],
        legacy: bool = False,
        relay: bool = False,
    ) -> None:
        self.ctx = ctx
        self.socket = socket
        self.protocol = protocol
        self.legacy = legacy
        self.headers = {k: v for k, v in headers.items() if k not in HANDSHAKE_HEADERS}
        self.auth: Session | _InitFailed | None = None
        self.closed = False
        self.ops = Operations(
            self._send, protocol, legacy, ctx.settings.max_operations, relay=relay
        )
        self._lock = asyncio.Lock()
        self._keepalive: asyncio.Task[None] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._expiry: asyncio.TimerHandle | None = None
        self._reader: asyncio.Task[Any] | None = None
        self._closing: tuple[int, str] | None = None
        self._closed_sent = False

    async def run(self) -> None:
        """Serve the connection until either side closes it."""
        self._reader = asyncio.current_task()
        self.ctx.sessions.add(self)
        # Both protocols: an Apollo socket that never sends `connection_init` held a
        # connection slot forever; it closes with the same code.
        self._timer = asyncio.get_running_loop().call_later(
            self.ctx.settings.init_timeout_s, self._init_timeout
        )
        try:
            await self._read()
        finally:
            await self._release()

    async def _read(self) -> None:
        """Read and dispatch frames until the socket closes or a close is requested; a
        close requested by another task cancels this reader, which then sends it."""
        try:
            while self._closing is None:
                frame = await self.socket.receive()
                if frame is None:
                    return
                if len(frame) > self.ctx.settings.max_message_bytes:
                    await self.close(wp.CLOSE_TOO_BIG, "message too large (--max-body-size)")
                    return
                await self._dispatch(frame)
        except asyncio.CancelledError:
            if self._closing is None or self._reader is None:
                raise
            self._reader.uncancel()
        await self._close_now()

    async def _release(self) -> None:
        self.closed = True
        self.ctx.sessions.discard(self)
        if self._timer is not None:
            self._timer.cancel()
        if self._expiry is not None:
            self._expiry.cancel()
        if self._keepalive is not None:
            self._keepalive.cancel()
        await self.ops.stop_all()

    async def _send(self, frame: bytes) -> None:
        """Write one frame; one at a time (Granian refuses concurrent sends). Frames to a
        closed or closing socket are dropped."""
        if self.closed:
            return
        async with self._lock:
            try:
                await self.socket.send(frame)
            except Exception:  # the peer went away: the reader sees it and cleans up
                self.closed = True

    async def close(self, code: int, reason: str) -> None:
        """Close the connection (after any frame being written).

        The close is sent by the reader: Granian (ASGI and RSGI) sends no close frame while
        a read is pending, so from another task this cancels the reader's read instead."""
        if self._closing is not None:
            return
        self._closing = (code, reason)
        self.closed = True  # nothing more is sent but the close
        if self._reader is not None and asyncio.current_task() is not self._reader:
            self._reader.cancel()
        else:
            await self._close_now()

    async def _close_now(self) -> None:
        if self._closing is None or self._closed_sent:
            return
        self._closed_sent = True
        code, reason = self._closing
        async with self._lock:
            with contextlib.suppress(Exception):
                await self.socket.close(code, reason.encode()[:123].decode(errors="ignore"))

    async def going_away(self) -> None:
        """Shutdown: stop the operations, then close with 1001 after the frame in flight."""
        await self.ops.stop_all()
        await self.close(wp.CLOSE_GOING_AWAY, "server shutting down")

    def _init_timeout(self) -> None:
        if self.auth is None:
            self._close_soon(wp.CLOSE_INIT_TIMEOUT, "Connection initialisation timeout")

    def _expired(self) -> None:
        """The session's token expired: end the connection without a status code."""
        self._close_soon(wp.CLOSE_NO_STATUS, "")

    def _close_soon(self, code: int, reason: str) -> None:
        """`close` from a timer callback: the reader, cancelled, sends it."""
        if self._closing is None:
            self._closing = (code, reason)
            self.closed = True
            if self._reader is not None:
                self._reader.cancel()

    async def _dispatch(self, frame: str | bytes) -> None:
        try:
            msg = wp.parse_client(frame)
        except wp.ParseFailure as exc:
            text = f"parsing ClientMessage failed: {exc}"
            if self.protocol is WsProtocol.APOLLO:
                await self._send(wp.control("connection_error", text))
            else:
                await self.close(wp.CLOSE_BAD_REQUEST, text)
            return
        if isinstance(msg, wp.Init):
            await self._init(msg.headers)
        elif isinstance(msg, wp.Start):
            await self._start(msg)
        elif isinstance(msg, wp.Stop):
            await self.ops.stop(msg.id)
        elif isinstance(msg, wp.Terminate):
            await self.close(wp.CLOSE_NORMAL, "")
        elif isinstance(msg, wp.Ping):
            await self._send(wp.control("pong", msg.payload))
        elif msg.payload is not None and msg.payload != wp.KEEPALIVE_PAYLOAD:
            await self._send(wp.control("ping", msg.payload))

    async def _init(self, payload_headers: dict[str, str]) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        # Operations start in tasks made from this one: they inherit the headers an
        # action forwards (`forward_client_headers`).
        set_client_headers({**self.headers, **payload_headers})
        try:
            self.auth, expiry = await self.ctx.auth.session_until(
                {**self.headers, **payload_headers}
            )
        except Exception as exc:
            message = exc.message if isinstance(exc, SvcError) else "authentication failed"
            self.auth = _InitFailed(message)
            if self.protocol is WsProtocol.APOLLO:
                await self._send(wp.control("connection_error", message))
            else:
                await self.close(wp.CLOSE_FORBIDDEN, "Forbidden")
            return
        self._expire_at(expiry)
        await self._send(wp.ACK)
        if self._keepalive is None:
            self._keepalive = asyncio.ensure_future(self._keep_alive())

    def _expire_at(self, expiry: float | None) -> None:
        """End the connection at `expiry` (seconds since the epoch; None: never), in
        place of any earlier expiry."""
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry = None
        if expiry is not None:
            delay = max(0.0, expiry - time.time())
            self._expiry = asyncio.get_running_loop().call_later(delay, self._expired)

    async def _keep_alive(self) -> None:
        frame = wp.keepalive(self.protocol)
        while not self.closed:
            await asyncio.sleep(self.ctx.settings.keepalive_s)
            await self._send(frame)

    async def _start(self, msg: wp.Start) -> None:
        auth = self.auth
        if auth is None:
            problem: str | None = "start received before the connection is initialised"
        elif isinstance(auth, _InitFailed):
            problem = f"cannot start as connection_init failed with : {auth.message}"
        else:
            problem = self.ops.check_new(msg.id)
        engine = self.ctx.engine()
        if problem is None and engine is None:
            problem = "the server is starting"
        if problem is not None or not isinstance(auth, Session) or engine is None:
            await self._start_failed(msg.id, problem or "")
            return
        self.ops.start(msg.id, msg.payload, engine, auth)

    async def _start_failed(self, op_id: str, message: str) -> None:
        err = SvcError(ErrorCode.START_FAILED, message)
        obj = wp.error_object(err, self.legacy, admin=False)
        await self._send(wp.error(op_id, wp.error_payload(self.protocol, self.legacy, [obj])))
        await self._send(wp.complete(op_id))
        if self.protocol is WsProtocol.TRANSPORT:
            await self.close(wp.CLOSE_NORMAL, f"4400: {message}")
