"""Named durations reported by the layers below the server (`/v1/metrics`).

A layer that times something calls `record(name, seconds)`; whoever wants the figures
(`svc.server.metrics`) adds a listener. Layer 0 with no dependencies, so `svc/api`
can report without importing the HTTP layer. Names in use: `schema_build` (one role's
GraphQL schema built and validated, `svc.api.state.State.schema`), `ir_build`
(metadata resolved against the catalog, `State.build`).
"""

from __future__ import annotations

from collections.abc import Callable

Listener = Callable[[str, float], None]

_listeners: list[Listener] = []


def record(name: str, seconds: float) -> None:
    """Report that `name` took `seconds` (wall-clock); a listener that raises is ignored,
    because a metric must never fail the work it measures."""
    for listener in _listeners:
        try:
            listener(name, seconds)
        except Exception:  # metrics are best effort
            continue


def listen(listener: Listener) -> Callable[[], None]:
    """Call `listener(name, seconds)` on every `record`; returns the function that removes
    it again."""
    _listeners.append(listener)

    def remove() -> None:
        if listener in _listeners:
            _listeners.remove(listener)

    return remove
