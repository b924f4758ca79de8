"""A worker's part in the bounded shutdown of `svc serve` (the parent's part is
`svc/cli/shutdown.py`).

On SIGTERM or Ctrl-C, Granian stops accepting and lets in-flight requests finish; when the
graceful-shutdown period is over, `svc serve` sends each worker still running
`SHUTDOWN_CANCEL_SIGNAL` (SIGUSR1). The handler installed here cancels every request still
being answered (`InFlight`; with them their Postgres statements: the database layer sends
a cancel request for a cancelled query) and asks Granian to stop (SIGTERM to itself, a
no-op when it already is stopping). The worker then gives those cancellations up to
`SETTLE_BOUND_S` to reach Postgres and the engine's shutdown up to `SHUTDOWN_BOUND_S`
(`shut_down`). Granian's `workers_kill_timeout` (grace + `CANCEL_WINDOW_S`) SIGKILLs any
worker still alive after that.

Signals that arrive while uvloop is between two runs of the loop are sent again once it
runs (`_redeliver_when_running`): uvloop would only act on them at a next signal.

A worker also asks Linux to send it `SHUTDOWN_CANCEL_SIGNAL` when its parent dies
(`prctl(PR_SET_PDEATHSIG)`), so a SIGKILLed `svc serve` leaves no worker behind holding the
port and database connections.

A stop signal that reaches a worker while it boots (before Granian installed its worker
handlers, when the parent's, inherited over fork, are still in place) is raised again once
they are (`note_early_stop`): without that the worker would serve on after a Ctrl-C.

Only workers of `svc serve` (`SVC_GRAPHQL_SERVE_PID` names their parent, set before Granian
forks) do any of this: under another ASGI server the app leaves signals alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from types import FrameType
from typing import Any

from svc.config import SHUTDOWN_CANCEL_SIGNAL, serve_pid
from svc.errors import ErrorCode, SvcError

_log = logging.getLogger(__name__)

#: Seconds the engine's shutdown (closing the connection pools) may take in a worker.
SHUTDOWN_BOUND_S = 3.0
#: Seconds a worker waits, after cancelling its requests, for the cancellation of their
#: statements to reach Postgres (`InFlight.settle`).
SETTLE_BOUND_S = 2.0

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def serve_parent() -> int | None:
    """The pid of the `svc serve` this process is (or was, if it died) a worker of, from
    `SVC_GRAPHQL_SERVE_PID`, which `svc serve` sets before Granian forks; None elsewhere."""
    return serve_pid()


#: The answer to a request cancelled at the end of the grace period (HTTP 503).
SHUTTING_DOWN = SvcError(
    ErrorCode.UNEXPECTED,
    "the server is shutting down: the request was cancelled at the end of the "
    "graceful-shutdown period (--graceful-shutdown-timeout)",
    status=503,
)


class InFlight:
    """The tasks answering requests right now: what the end of the grace period cancels.

    `with in_flight:` around the handling of one request registers the current task
    (a set insertion and removal per request). `stopping` turns true when they are
    cancelled: a request handler that sees `CancelledError` then answers `SHUTTING_DOWN`."""

    __slots__ = ("consequences", "stopping", "tasks")

    def __init__(self) -> None:
        self.tasks: set[asyncio.Task[Any]] = set()
        self.stopping = False
        # Tasks the cancelled requests started while unwinding (cancel requests to
        # Postgres and the wait for their acknowledgement); known once all have ended.
        self.consequences: set[asyncio.Task[Any]] = set()

    def __enter__(self) -> None:
        task = asyncio.current_task()
        if task is not None:
            self.tasks.add(task)

    def __exit__(self, *exc: object) -> None:
        task = asyncio.current_task()
        if task is not None:
            self.tasks.discard(task)

    async def settle(self, seconds: float = SETTLE_BOUND_S) -> None:
        """After a cancellation, wait up to `seconds` for the tasks the cancelled requests
        started (the cancel requests sent to Postgres for their statements, and the
        database layer's wait for the acknowledgement): closing the connections first
        would drop a cancel request not sent yet, and leave its statement running."""
        pending = {task for task in self.consequences if not task.done()}
        if pending:
            await asyncio.wait(pending, timeout=seconds)


# A stop signal this process got while it was a booting worker: forked by Granian with
# the parent's Python signal handlers, before Granian installed the worker's own, a
# SIGINT/SIGTERM would otherwise be swallowed and the worker serve on (Granian 2.8 then
# waits for it forever unless `workers_kill_timeout` is set).
_early_stop: int | None = None


def note_early_stop(signum: int) -> None:
    """Remember `signum` for `prepare_worker` to raise again once Granian's worker handlers
    are installed (called by `svc serve`'s handlers when they run in a forked worker)."""
    global _early_stop
    _early_stop = signum


def prepare_worker(
    loop: asyncio.AbstractEventLoop,
    in_flight: InFlight,
    on_stop: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Install the grace-period-over handler on `loop` (it cancels `in_flight.tasks`, see
    the module docstring) and ask for `SHUTDOWN_CANCEL_SIGNAL` at the parent's death; a
    worker whose parent already died stops at once. `on_stop` runs on the loop when the
    stop signal (SIGTERM) arrives, before Granian stops (`stop_after_hook`): closing the
    websockets with 1001, which Granian would otherwise drop.

    Does nothing outside `svc serve` (`serve_parent()` None). Call from the worker's loop
    thread after Granian installed its worker signal handlers (RSGI `__rsgi_init__`, ASGI
    lifespan startup)."""
    parent = serve_parent()
    if parent is None:
        return
    loop.add_signal_handler(SHUTDOWN_CANCEL_SIGNAL, cancel_requests, in_flight)
    for sig in (signal.SIGTERM, SHUTDOWN_CANCEL_SIGNAL):
        _redeliver_when_running(loop, sig)
    global _on_stop  # read by svc serve's worker SIGTERM handler (svc/cli/shutdown.py)
    _on_stop = on_stop
    if sys.platform == "linux":
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(SHUTDOWN_CANCEL_SIGNAL), 0, 0, 0)
    # Raised once the loop runs: uvloop reads signals only while it runs (one sent now
    # would wait for the next signal), and Granian's handler then stops the worker.
    if os.getppid() != parent:  # orphaned before prctl took effect
        loop.call_soon(os.kill, os.getpid(), signal.SIGTERM)
    elif _early_stop is not None:
        loop.call_soon(os.kill, os.getpid(), _early_stop)


def _redeliver_when_running(loop: asyncio.AbstractEventLoop, sig: int) -> None:
    """Make a `sig` that arrives while `loop` is not running reach its loop handler.

    uvloop (0.23) reads signals from its wakeup socket only while the loop runs; one that
    arrives between two runs (in a Granian worker: before `__rsgi_init__` runs the startup,
    and between the end of the startup and the start of serving) is only noted, and acted
    on at the next signal, which may never come: such a worker ignored a Ctrl-C. Wrapped
    here: the Python-level handler uvloop installed still runs, and when the loop is not
    running the signal is sent again as soon as it is."""
    installed = signal.getsignal(sig)

    def handler(signum: int, frame: FrameType | None) -> None:
        if callable(installed):
            installed(signum, frame)
        if not loop.is_running() and not loop.is_closed():
            loop.call_soon_threadsafe(os.kill, os.getpid(), signum)

    signal.signal(sig, handler)


#: Seconds a worker's stop waits for `prepare_worker`'s `on_stop` (closing websockets).
ON_STOP_BOUND_S = 1.0
_on_stop: Callable[[], Awaitable[None]] | None = None
_stop_tasks: set[asyncio.Task[None]] = set()


def stop_after_hook(stop: Callable[[], None]) -> None:
    """Call `stop` (Granian's worker stop, from `svc/cli/shutdown.py`'s SIGTERM handler on
    the worker's loop) once the `on_stop` given to `prepare_worker` finished, at most
    `ON_STOP_BOUND_S` later; at once when there is none. Granian drops open websockets
    when it stops, so their 1001 close frames must be out first."""
    hook = _on_stop
    if hook is None:
        stop()
        return

    async def run() -> None:
        try:
            await asyncio.wait_for(hook(), ON_STOP_BOUND_S)
        except Exception as exc:  # the stop must happen whatever the hook did
            _log.error(f"svc: worker {os.getpid()}: on-stop hook failed: {exc!r}")
        finally:
            stop()

    task = asyncio.ensure_future(run())
    _stop_tasks.add(task)
    task.add_done_callback(_stop_tasks.discard)


def cancel_requests(in_flight: InFlight) -> int:
    """Cancel every unfinished task of `in_flight`, then send this process SIGTERM so
    Granian stops serving (a no-op when it already is); returns how many were cancelled.
    Once all of them have ended, the tasks they started meanwhile are recorded in
    `in_flight.consequences` (for `InFlight.settle`).

    Only request tasks are cancelled: Granian's own task in the loop must finish normally
    for `__rsgi_del__` / the lifespan shutdown (which stops the engine's tasks) to run."""
    in_flight.stopping = True
    before = set(asyncio.all_tasks())
    cancelled = [task for task in in_flight.tasks if not task.done()]
    remaining = [len(cancelled)]

    def ended(_: object) -> None:
        remaining[0] -= 1
        if remaining[0] == 0:
            in_flight.consequences = set(asyncio.all_tasks()) - before

    for task in cancelled:
        task.cancel("svc: graceful-shutdown period over")
        task.add_done_callback(ended)
    _log.warning(f"svc: worker {os.getpid()}: cancelled {len(cancelled)} request(s)")
    os.kill(os.getpid(), signal.SIGTERM)
    return len(cancelled)


async def shut_down(
    stop: Awaitable[None], in_flight: InFlight, seconds: float = SHUTDOWN_BOUND_S
) -> None:
    """A worker's last step: `in_flight.settle()` (at most `SETTLE_BOUND_S`), then await
    `stop` (the engine's shutdown) for at most `seconds`; past that, give up on it (the
    process is about to exit, which closes its sockets) and say so on stdout."""
    await in_flight.settle()
    try:
        await asyncio.wait_for(stop, seconds)
    except TimeoutError:
        _log.warning(f"svc: worker {os.getpid()}: shutdown took over {seconds:g} s; exiting")
