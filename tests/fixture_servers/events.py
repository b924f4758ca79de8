"""Fixture `events` (127.0.0.1:5592, FIXTURES.md §4.1): the event-trigger webhook recorder
(`/fail` 500, `/sleep_2s` 204 after 2 s, `/block`, anything else 204; requests recorded
after answering), here `tests/webhook_recorder.py`.

`recorder` is the running instance while `serve()` is entered (scenario drivers read it).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from tests.webhook_recorder import WebhookRecorder

PORT = 5592
recorder: WebhookRecorder | None = None


@contextlib.contextmanager
def serve() -> Iterator[WebhookRecorder]:
    """Listen on 127.0.0.1:5592 until exit; raises OSError when the port is taken."""
    global recorder
    with WebhookRecorder(port=PORT) as running:
        recorder = running
        try:
            yield running
        finally:
            recorder = None
