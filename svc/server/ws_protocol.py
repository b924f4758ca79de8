"""The two GraphQL-over-WebSocket protocols as pure functions: which one a connection
speaks, client frames parsed into messages, server frames encoded to bytes.

- Apollo `graphql-ws` (subscriptions-transport-ws): `connection_init`, `start`, `stop`,
  `connection_terminate`; the server answers `connection_ack`, `ka`, `connection_error`,
  `data`, `error`, `complete`.
- `graphql-transport-ws` (the graphql-ws library): `connection_init`, `subscribe`,
  `complete`, `ping`, `pong`; the server answers `connection_ack`, `ping`, `pong`, `next`,
  `error`, `complete`.

As in the reference (Hasura v2 `Transport/WebSocket/Protocol.hs`, reference-notes-wave2
section 1) one parser reads every client message type whatever the protocol, so `start`
and `subscribe` (and `stop` and `complete`) are the same message.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

import msgspec

from svc.errors import SvcError

_encode = msgspec.json.encode
_decode = msgspec.json.decode

#: The payload of the keep-alive `ping` of `graphql-transport-ws`.
KEEPALIVE_PAYLOAD = {"message": "keepalive"}

# Close codes. The graphql-ws library's PROTOCOL.md defines 4400, 4401, 4403, 4408, 4409 and
# 4429 for graphql-transport-ws; Hasura v2 declares all of them
# (`Transport/WebSocket/Protocol.hs`, `ServerErrorCode`) but sends only some
# (`Transport/WebSocket.hs`, `Transport/WebSocket/Server.hs`, `Transport/WSServerApp.hs`),
# and svc sends what it sends:
#
# - 4400: a frame that is no client message (`mkWSServerErrorCode ClientMessageParseFailed`).
# - 4403 "Forbidden": `connection_init` whose authentication fails
#   (`mkWSServerErrorCode ConnInitFailed` for graphql-ws; older v2 releases used 4400).
# - 4408: no `connection_init` within the init timeout (`createServerApp`'s timer).
# - 4401 is never sent: a `subscribe` before `connection_ack` gets `error` (`start-failed`,
#   "start received before the connection is initialised") and the connection closes
#   with 1000, reason "4400: <message>" (`onStart` `sendStartErr`, `mkConnectionCloseAction`).
# - 4409 is never sent: a `subscribe` reusing a running id is answered the same way with
#   "an operation already exists with this id: <id>" (`onStart`).
# - 4429 is never sent: a second `connection_init` authenticates again and is
#   acknowledged again (`onConnInit`).
# - 1001 on shutdown (the reference sends 1012 "shutting server down", `Server.hs`
#   `shutdown`; svc sends 1001 Going Away, RFC 6455's code for a server going down).
# - No status at all when the session's token expires (the reference's
#   `tokenExpiryHandler` ends the connection without a close frame): `CLOSE_NO_STATUS`.
CLOSE_NORMAL = 1000
CLOSE_GOING_AWAY = 1001
#: Not a code on the wire (RFC 6455 7.4.1): end the connection without a status code.
CLOSE_NO_STATUS = 1005
CLOSE_TOO_BIG = 1009
CLOSE_BAD_REQUEST = 4400
CLOSE_FORBIDDEN = 4403
CLOSE_INIT_TIMEOUT = 4408


class Protocol(enum.Enum):
    """The sub-protocol a connection speaks; the value is its `Sec-WebSocket-Protocol`."""

    APOLLO = "graphql-ws"
    TRANSPORT = "graphql-transport-ws"


def requested_protocols(header: str | None) -> list[str]:
    """The names a `Sec-WebSocket-Protocol` header value lists (comma-separated, RFC 6455
    section 11.3.4), in order; [] for no header."""
    if not header:
        return []
    return [name.strip() for name in header.split(",") if name.strip()]


def choose_protocol(requested: list[str]) -> tuple[Protocol, str | None]:
    """(protocol spoken, sub-protocol to echo in the handshake, or None) for the names a
    client requested: `graphql-transport-ws` selects that protocol, anything else (or
    nothing) Apollo's (reference-notes-wave2 section 1). Only a requested name is echoed:
    a client that asked for none refuses a handshake that names one (RFC 6455 4.1)."""
    if Protocol.TRANSPORT.value in requested:
        return Protocol.TRANSPORT, Protocol.TRANSPORT.value
    if Protocol.APOLLO.value in requested:
        return Protocol.APOLLO, Protocol.APOLLO.value
    return Protocol.APOLLO, None


# --------------------------------------------------------------------------------------
# Client messages


@dataclass(frozen=True, slots=True)
class Init:
    """`connection_init`; `headers`: `payload.headers` with lower-case names ({} if none)."""

    headers: dict[str, str]


@dataclass(frozen=True, slots=True)
class Start:
    """`start` / `subscribe`: operation `id` and its GraphQL request `payload` (a JSON
    object, checked by the engine)."""

    id: str
    payload: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Stop:
    """`stop` / `complete` for operation `id`."""

    id: str


@dataclass(frozen=True, slots=True)
class Terminate:
    """`connection_terminate` (Apollo): the client is leaving."""


@dataclass(frozen=True, slots=True)
class Ping:
    """`ping` with its optional payload (graphql-transport-ws)."""

    payload: Any


@dataclass(frozen=True, slots=True)
class Pong:
    """`pong` with its optional payload (graphql-transport-ws)."""

    payload: Any


ClientMessage = Init | Start | Stop | Terminate | Ping | Pong


class ParseFailure(Exception):
    """A frame that is not a client message; `str()` is the reason, which Apollo sends as
    `parsing ClientMessage failed: <reason>` and graphql-transport-ws as the close reason."""


def parse_client(frame: str | bytes) -> ClientMessage:
    """The client message in one text or binary frame.

    Raises ParseFailure: not JSON, not an object, an unknown `type`, or a field missing or
    of the wrong type (`id` must be a string, `start`'s `payload` an object)."""
    try:
        raw = _decode(frame)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        raise ParseFailure(f"Error in $: {exc}") from None
    if not isinstance(raw, dict):
        raise ParseFailure("Error in $: expected Object")
    kind = raw.get("type")
    if kind == "connection_init":
        return Init(_init_headers(raw.get("payload")))
    if kind in ("start", "subscribe"):
        payload = raw.get("payload")
        if not isinstance(payload, dict):
            raise ParseFailure('Error in $: key "payload" not found or not an object')
        return Start(_operation_id(raw), payload)
    if kind in ("stop", "complete"):
        return Stop(_operation_id(raw))
    if kind == "connection_terminate":
        return Terminate()
    if kind == "ping":
        return Ping(raw.get("payload"))
    if kind == "pong":
        return Pong(raw.get("payload"))
    raise ParseFailure(f"Error in $: unexpected type for ClientMessage: {kind}")


def _operation_id(raw: dict[str, Any]) -> str:
    op_id = raw.get("id")
    if not isinstance(op_id, str):
        raise ParseFailure('Error in $: key "id" not found or not a string')
    return op_id


def _init_headers(payload: Any) -> dict[str, str]:
    """`payload.headers` with lower-case names and values as text (a non-string value is
    its JSON, as the reference reads header values from the payload)."""
    if payload is None:
        return {}
    if not isinstance(payload, dict):
        raise ParseFailure("Error in $.payload: expected Object")
    headers = payload.get("headers")
    if headers is None:
        return {}
    if not isinstance(headers, dict):
        raise ParseFailure("Error in $.payload.headers: expected Object")
    return {
        str(k).lower(): v if isinstance(v, str) else _encode(v).decode() for k, v in headers.items()
    }


# --------------------------------------------------------------------------------------
# Server frames


ACK = b'{"type":"connection_ack"}'
KEEPALIVE_APOLLO = b'{"type":"ka"}'
KEEPALIVE_TRANSPORT = b'{"type":"ping","payload":{"message":"keepalive"}}'


def keepalive(protocol: Protocol) -> bytes:
    """The keep-alive frame: Apollo `ka`, graphql-transport-ws `ping` with
    `KEEPALIVE_PAYLOAD`."""
    return KEEPALIVE_APOLLO if protocol is Protocol.APOLLO else KEEPALIVE_TRANSPORT


def control(kind: str, payload: Any = None) -> bytes:
    """`{"type": kind}` with `payload` when it is not None (`ping`, `pong`,
    `connection_error`)."""
    if payload is None:
        return _encode({"type": kind})
    return _encode({"type": kind, "payload": payload})


def result(protocol: Protocol, op_id: str, payload: bytes) -> bytes:
    """A `data` (Apollo) / `next` frame carrying the engine's result JSON `payload` as is
    (spliced, not re-encoded)."""
    kind = b"data" if protocol is Protocol.APOLLO else b"next"
    return b'{"type":"' + kind + b'","id":' + _encode(op_id) + b',"payload":' + payload + b"}"


def error(op_id: str, payload: Any) -> bytes:
    """An `error` frame for operation `op_id`."""
    return _encode({"type": "error", "id": op_id, "payload": payload})


def complete(op_id: str) -> bytes:
    """A `complete` frame for operation `op_id`."""
    return _encode({"type": "complete", "id": op_id})


def error_object(exc: SvcError, legacy: bool, admin: bool) -> dict[str, Any]:
    """One error in the endpoint's form: `/v1/graphql` `{extensions: {path, code},
    message}`, `/v1alpha1/graphql` (`legacy`) `{path, error, code}`; `internal` detail for
    admins only, as over HTTP."""
    return exc.to_query_body(admin=admin) if legacy else exc.to_graphql_error(admin=admin)


def error_payload(protocol: Protocol, legacy: bool, errors: list[dict[str, Any]]) -> Any:
    """The payload of an `error` frame: graphql-transport-ws the bare list; Apollo
    `{"errors": [...]}` on `/v1/graphql`, the first error object on `/v1alpha1/graphql`."""
    if protocol is Protocol.TRANSPORT:
        return errors
    if legacy:
        return errors[0] if errors else {}
    return {"errors": errors}


def legacy_errors(payload: bytes) -> bytes:
    """A result payload for `/v1alpha1/graphql`: `{"errors": [...]}` becomes the first
    error as `{path, error, code}`; any other payload is returned unchanged."""
    if not payload.startswith(b'{"errors"'):
        return payload
    body = _decode(payload)
    errors = body.get("errors") if isinstance(body, dict) else None
    if not isinstance(errors, list) or not errors or not isinstance(errors[0], dict):
        return payload
    first = errors[0]
    found = first.get("extensions")
    ext: dict[str, Any] = found if isinstance(found, dict) else {}
    legacy = {"path": ext.get("path", "$"), "error": first.get("message"), "code": ext.get("code")}
    if "internal" in ext:
        legacy["internal"] = ext["internal"]
    return _encode(legacy)


def decode(payload: bytes) -> Any:
    """JSON bytes decoded."""
    return _decode(payload)


def result_errors(payload: bytes) -> list[Any] | None:
    """The `errors` list of a result payload that carries errors and no data (what
    graphql-transport-ws sends as an `error` frame), else None."""
    if not payload.startswith(b'{"errors"'):
        return None
    body = _decode(payload)
    if isinstance(body, dict) and "data" not in body and isinstance(body.get("errors"), list):
        errors: list[Any] = body["errors"]
        return errors
    return None
