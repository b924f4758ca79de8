"""Fixture `scheduled` (127.0.0.1:5594, FIXTURES.md §5): the scheduled-trigger webhook, a
second instance of the `events` recorder (§4.1 routes: `/fail` 500, `/sleep_2s`, `/block`,
anything else 204), here `tests/webhook_recorder.py`.

`recorder` is the running instance while `serve()` is entered (scenario drivers read it).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from tests.webhook_recorder import WebhookRecorder

PORT = 5594
recorder: WebhookRecorder | None = None


@contextlib.contextmanager
def serve() -> Iterator[WebhookRecorder]:
    """Listen on 127.0.0.1:5594 until exit; raises OSError when the port is taken."""
    global recorder
    with WebhookRecorder(port=PORT) as running:
        recorder = running
        try:
            yield running
        finally:
            recorder = None
