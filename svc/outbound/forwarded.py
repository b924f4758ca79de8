"""Headers crossing between the client and outbound calls, per request:

- the client's headers, for callers that forward them (`forward_client_headers` of
  actions): set by the HTTP layer when it routes a request, read by the outbound caller;
- headers an outbound answer passes back to the client (an action handler's
  `Set-Cookie`): added by the caller, taken by the HTTP layer for its response.

Context variables, so concurrent requests never see each other's; the caller runs in the
request's own task (awaited, not spawned), so what it sets is seen when it returns."""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar

_CLIENT_HEADERS: ContextVar[Mapping[str, str] | None] = ContextVar(
    "svc_client_headers", default=None
)


_RESPONSE_HEADERS: ContextVar[list[tuple[str, str]] | None] = ContextVar(
    "svc_response_headers", default=None
)


def set_client_headers(headers: Mapping[str, str]) -> None:
    """Record the request's headers (lower-case names) for the current task, and start
    its list of headers to pass back."""
    _CLIENT_HEADERS.set(headers)  # not copied: on every request's path, rarely read
    _RESPONSE_HEADERS.set(None)


def pass_back(name: str, value: str) -> None:
    """Add a header to the current request's response (outside a request: dropped)."""
    found = _RESPONSE_HEADERS.get()
    if found is None:
        found = []
        _RESPONSE_HEADERS.set(found)
    found.append((name, value))


def passed_back() -> list[tuple[str, str]]:
    """The headers to add to the current response (taken: a second call gets none)."""
    found = _RESPONSE_HEADERS.get()
    _RESPONSE_HEADERS.set(None)
    return found or []


def client_headers() -> list[tuple[str, str]]:
    """The current request's headers as `(name, value)` pairs (empty outside one)."""
    found = _CLIENT_HEADERS.get()
    return list(found.items()) if found is not None else []
