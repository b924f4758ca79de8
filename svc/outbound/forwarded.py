"""The current request's client headers, for callers that forward them
(`forward_client_headers` of actions): set by the HTTP layer when it routes a request,
read by the outbound caller in the same task. A context variable, so concurrent
requests never see each other's headers; outside a request it is empty."""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar

_CLIENT_HEADERS: ContextVar[tuple[tuple[str, str], ...]] = ContextVar(
    "svc_client_headers", default=()
)


def set_client_headers(headers: Mapping[str, str]) -> None:
    """Record the request's headers (lower-case names) for the current task."""
    _CLIENT_HEADERS.set(tuple(headers.items()))


def client_headers() -> list[tuple[str, str]]:
    """The current request's headers as `(name, value)` pairs (empty outside one)."""
    return list(_CLIENT_HEADERS.get())
