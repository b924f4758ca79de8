"""Cancelling a request whose client went away, at a cost per request
of a dict insertion and removal.

Watching a connection for its close costs, per request, a pending `receive()` under ASGI or
Granian's `client_disconnect()` future under RSGI, plus a task or callback; a fast request
should not pay it. So a request is watched only once it has run `ARM_SECONDS`: it is
registered in its worker's `Sweeper` on arrival, and one timer per worker (running only
while requests are registered) arms, every `ARM_SECONDS`, those registered for at least
that long. A timer per request (`loop.call_later` and its cancellation) cost ~15 µs of
CPU per request under uvloop, measured in-process against the sweep (ARCHITECTURE.md
"Serving"). A disconnect that happens before arming is still seen when it arms: both
interfaces keep it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

# A request running longer than this (seconds) starts watching for its client going away;
# a request is armed between one and two of these after it started.
ARM_SECONDS = 0.05

Receive = Callable[[], Any]


class Watch:
    """One request's watch: `arm()` starts watching (subclasses), `stop()` ends it;
    `disconnected` turns true when the client went away and the task was cancelled.
    `task`: the request's task (default: the current one; a caller that has it already
    passes it, saving a lookup per request)."""

    __slots__ = ("disconnected", "since", "sweeper", "task")

    def __init__(self, sweeper: Sweeper, task: asyncio.Task[Any] | None = None) -> None:
        self.sweeper = sweeper
        self.task = task or asyncio.current_task()
        self.disconnected = False
        self.since = sweeper.register(self)

    def arm(self) -> None:
        """Start watching the connection (the sweep calls it once)."""
        raise NotImplementedError

    def stop(self) -> None:
        """The request is over: unregister, and disarm when armed."""
        self.sweeper.pending.pop(self, None)

    def gone(self) -> None:
        """The client went away: cancel the request's task."""
        if self.task is not None:
            self.disconnected = True
            self.task.cancel()


class AsgiWatch(Watch):
    """ASGI: once armed, a task waits for `http.disconnect` (the server's next message
    after the body)."""

    __slots__ = ("receive", "waiter")

    def __init__(
        self, sweeper: Sweeper, receive: Receive, task: asyncio.Task[Any] | None = None
    ) -> None:
        self.receive = receive
        self.waiter: asyncio.Task[None] | None = None
        super().__init__(sweeper, task)

    def arm(self) -> None:
        self.waiter = asyncio.ensure_future(self._wait())

    async def _wait(self) -> None:
        # Anything but `http.disconnect` ends the watch rather than spinning on a server
        # that answers at once.
        if (await self.receive())["type"] == "http.disconnect" and self.waiter is not None:
            self.gone()

    def stop(self) -> None:
        super().stop()
        waiter, self.waiter = self.waiter, None
        if waiter is not None:
            waiter.cancel()


class RsgiWatch(Watch):
    """RSGI: once armed, Granian's `client_disconnect()` future, done when the client
    goes away."""

    __slots__ = ("future", "protocol")

    def __init__(self, sweeper: Sweeper, protocol: Any) -> None:
        self.protocol = protocol
        self.future: Any = None
        super().__init__(sweeper)

    def arm(self) -> None:
        self.future = self.protocol.client_disconnect()
        self.future.add_done_callback(self._done)

    def _done(self, future: Any) -> None:
        if self.future is not None and not future.cancelled():
            self.gone()

    def stop(self) -> None:
        super().stop()
        future, self.future = self.future, None
        if future is not None:
            future.cancel()


class Sweeper:
    """The requests of one worker not armed yet, oldest first, and the one timer that arms
    them. Created lazily on the worker's running loop."""

    __slots__ = ("loop", "pending", "timer")

    def __init__(self) -> None:
        self.pending: dict[Watch, None] = {}  # insertion order: oldest first
        self.timer: asyncio.TimerHandle | None = None
        self.loop: asyncio.AbstractEventLoop | None = None

    def register(self, watch: Watch) -> float:
        """Register `watch`; its start time (the loop's clock, seconds)."""
        loop = self.loop
        if loop is None:
            loop = self.loop = asyncio.get_running_loop()
        self.pending[watch] = None
        if self.timer is None:
            self.timer = loop.call_later(ARM_SECONDS, self._sweep)
        return loop.time()

    def _sweep(self) -> None:
        self.timer = None
        assert self.loop is not None
        due = self.loop.time() - ARM_SECONDS
        for watch in list(self.pending):
            if watch.since > due:
                break
            del self.pending[watch]
            watch.arm()
        if self.pending:
            self.timer = self.loop.call_later(ARM_SECONDS, self._sweep)
