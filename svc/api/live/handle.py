"""One running websocket operation as the engine sees it: `LiveHandle`.

The transport (`svc.server.ws_operations`) gets a handle from `Engine.subscribe`, and
calls `stop()` when the client stops the operation or the socket closes. Results reach the
transport through the `push` callback it gave; a subscription's results go through
`deliver`, which keeps at most one result waiting per subscriber (a newer result replaces
one not yet sent: a slow client gets the latest state, not a backlog), sent by one task.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

Push = Callable[[bytes], Awaitable[None]]

STOP_WAIT_S = 5.0  # how long stop() lets a push in flight finish before cancelling it


class LiveHandle:
    """A started operation.

    - `stop()`: end it (idempotent). Once it returns nothing more is pushed: a push in
      flight may finish (up to `STOP_WAIT_S` seconds, then it is cancelled), no new one
      starts. A subscription's subscriber leaves its cohort (`release`), and the cohort is
      dropped with its last subscriber.
    - `done`: an `asyncio.Event` set when the operation ended on its own: a query's or
      mutation's one answer was pushed. A live subscription never sets it (it ends by
      `stop()`); an error while polling is pushed as `{"errors": [...]}` and polling goes on.
    """

    __slots__ = ("_pending", "_push", "_queue", "_sender", "done", "release", "stopped")

    def __init__(self, push: Push) -> None:
        self._push = push
        self.done = asyncio.Event()
        self.stopped = False
        # Called once by `stop()` (the live-query registry sets it: leave the cohort);
        # what it returns, when not None, is awaited (the last subscriber of a live query
        # waits for its poller to end).
        self.release: Callable[[LiveHandle], Awaitable[Any] | None] | None = None
        self._pending: bytes | None = None
        # Payloads sent in order, none replaced: a streaming subscription's batches.
        self._queue: deque[bytes] = deque()
        self._sender: asyncio.Task[None] | None = None

    def deliver(self, payload: bytes) -> None:
        """Send `payload` (a whole `{"data": …}` or `{"errors": …}` body) soon, replacing
        a payload of this subscriber not yet sent. Never blocks; nothing after `stop()`."""
        if self.stopped:
            return
        self._pending = payload
        if self._sender is None:
            self._sender = asyncio.get_running_loop().create_task(self._send())

    def enqueue(self, payload: bytes) -> None:
        """Send `payload` after every payload enqueued before it (a streaming batch: none
        may be lost or replaced). Never blocks; nothing after `stop()`."""
        if self.stopped:
            return
        self._queue.append(payload)
        if self._sender is None:
            self._sender = asyncio.get_running_loop().create_task(self._send())

    @property
    def backlog(self) -> int:
        """Enqueued payloads not sent yet (the streaming poller waits while it is high)."""
        return len(self._queue)

    async def _send(self) -> None:
        try:
            while not self.stopped:
                if self._queue:
                    payload = self._queue.popleft()
                elif self._pending is not None:
                    payload, self._pending = self._pending, None
                else:
                    break
                try:
                    await self._push(payload)
                except Exception as exc:  # the transport failed (socket gone): stop sending
                    _log(f"svc: live query push failed: {exc!r}")
                    self._pending = None
                    self._queue.clear()
                    return
        finally:
            self._sender = None

    async def push_once(self, payload: bytes) -> None:
        """Push a query's or mutation's answer and set `done` (not after `stop()`)."""
        if not self.stopped:
            await self._push(payload)
        self.done.set()

    async def stop(self) -> None:
        """End the operation; see the class docstring."""
        if not self.stopped:
            self.stopped = True
            self._pending = None
            self._queue.clear()
            release, self.release = self.release, None
            ending = release(self) if release is not None else None
            if ending is not None:
                await ending
        sender = self._sender
        if sender is not None and sender is not asyncio.current_task():
            done, _ = await asyncio.wait((sender,), timeout=STOP_WAIT_S)
            if not done:
                sender.cancel()
                await asyncio.wait((sender,))


def _log(line: str) -> None:
    logging.getLogger(__name__).error(line)
