"""Which websocket upgrades svc serves (reference-notes-wave2 section 1):
`/v1/graphql` and `/v1alpha1/graphql` (legacy `{path, error, code}` errors); any other
path is refused with HTTP 404 and the reference's message. `/v1beta1/relay` serves the
Relay API (`svc.schema.relay`) with the same protocols.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from svc.errors import ErrorCode, SvcError

REFUSED = "only '/v1/graphql', '/v1alpha1/graphql' and '/v1beta1/relay' are supported on websockets"
_PATHS = {"/v1/graphql": False, "/v1alpha1/graphql": True, "/v1beta1/relay": False}
RELAY_PATH = "/v1beta1/relay"


@dataclass(frozen=True, slots=True)
class WsRoute:
    """Where an upgrade goes: `legacy` for `/v1alpha1/graphql`; `refusal` is the 404 body
    (`{path, error, code}`) when the upgrade is refused, else None; `relay` for the Relay
    API's `/v1beta1/relay`."""

    legacy: bool
    refusal: dict[str, Any] | None
    relay: bool = False


def ws_route(path: str, graphql_on: bool) -> WsRoute:
    """The route of an upgrade to `path` (a trailing `/` ignored); every path is refused
    when the `graphql` API is disabled (`--enabled-apis`)."""
    path = path.rstrip("/") or "/"
    legacy = _PATHS.get(path)
    if legacy is None or not graphql_on:
        body = SvcError(ErrorCode.NOT_FOUND, REFUSED, status=404).to_query_body()
        return WsRoute(False, body)
    return WsRoute(legacy, None, path == RELAY_PATH)
