"""Live queries: websocket operations started by `Engine.subscribe`.

`subscribe` (start one operation), `LiveHandle` (what the transport holds),
`LiveQueries` (the process's multiplexed pollers), `cohort_vars` (a subscriber's cohort
variables). ARCHITECTURE.md "Live queries" describes the design.
"""

from svc.api.live.cohort import cohort_vars
from svc.api.live.handle import LiveHandle
from svc.api.live.registry import LiveQueries
from svc.api.live.subscribe import subscribe

__all__ = ["LiveHandle", "LiveQueries", "cohort_vars", "subscribe"]
