"""Preparing a large GraphQL body off the event loop.

graphql-core's parser is pure Python: a 20 MB body takes seconds to parse. The server
runs `prepare_large_body` in a worker thread; it leaves the parsed, validated and planned
operations in the service's caches, so the loop then only executes them.
"""

from __future__ import annotations

from typing import Any

from svc.api.graphql import GraphQLService, decode_json, decode_request, prepare
from svc.api.state import State
from svc.errors import SvcError
from svc.session_vars import is_admin


def prepare_large_body(
    service: GraphQLService, state: State, body: bytes, role: str, *, allowlist: bool
) -> tuple[Any, SvcError | None]:
    """`(decoded body, error)`: the body's JSON, and the error to answer with when the
    document itself is invalid (parse, validation: the error the engine would raise
    first), else None. Raises 400 `invalid-json`. With the allow-list on (`allowlist`), a
    non-admin document is not prepared (the allow-list is checked first)."""
    raw = decode_json(body)
    if allowlist and not is_admin(role):
        return raw, None
    for item in raw if isinstance(raw, list) else [raw]:
        try:
            service.compile(state, role, decode_request(item))
        except SvcError:
            if isinstance(raw, dict):  # was it the document (parse, validation)?
                try:
                    req = decode_request(raw)
                    prepare(state.schema(role), req.query, req.operationName)
                except SvcError as exc:
                    return raw, exc
        except Exception:  # the loop meets it again and answers it
            pass
    return raw, None
