"""The parent's part in the bounded shutdown of `svc serve` (the
workers' part is `svc/server/lifecycle.py`).

What Granian 2.8 does on its own (read from `granian/server/common.py`, `mp.py`,
`_signals.py`): the main process's SIGINT/SIGTERM handler only sets a flag; its main loop
then sends SIGTERM to every worker and joins each for `workers_kill_timeout` seconds
before SIGKILL (without that option it joins forever). A worker's SIGINT/SIGTERM handler
stops its listener; the worker then waits for every open connection task, i.e. for every
in-flight request, however long, before `__rsgi_del__` / the ASGI lifespan shutdown runs.
A Ctrl-C at a terminal reaches the workers directly as well (same process group).

Two traps found on the way (finding 9's hang): `WorkerSignal.set()`, which the worker's
handler calls on every SIGINT/SIGTERM, blocks with the GIL held once its one-slot channel is
full (a Ctrl-C plus the parent's SIGTERM while the worker still boots): the worker froze
in its signal handler and Granian joined it forever. And a signal reaching a worker
before Granian installed its handlers, or while uvloop is between two runs of the loop,
was swallowed or left pending until a next signal.

What `svc serve` adds:

- `guard_granian_worker_signals`: a worker stops on the parent's SIGTERM (its handler
  calls `set()` once) and leaves SIGINT to the parent.
- `ShutdownSignals.install` runs as a Granian startup hook, after Granian installed its
  handlers, and chains onto them: the first SIGINT/SIGTERM starts the grace period
  (`--graceful-shutdown-timeout`, seconds); when it is over, every worker still alive gets
  `SHUTDOWN_CANCEL_SIGNAL` and cancels what it still runs. A second signal ends the grace
  period at once. A worker forked while booting inherits these handlers; in it they only
  note a SIGTERM for the worker to act on once Granian's worker handlers are installed
  (Granian's own main handler, inherited the same way, would swallow it: a worker started
  just before a Ctrl-C then served on, and without a kill timeout Granian waited forever).
- `kill_timeout(grace)` is Granian's `workers_kill_timeout`: grace + `CANCEL_WINDOW_S`, so
  a worker that still has not exited (stuck anywhere, even in a signal handler) is killed;
  after a second signal the grace thread kills a worker still alive `CANCEL_WINDOW_S`
  after its cancel itself (Granian's timeout would still count the whole grace period).
- Before Granian has taken over the signals (while the embedded Postgres starts), a
  signal is remembered and acted on once the start has finished, so `pg_ctl start`/`initdb`
  are never interrupted half-way; a second one raises `KeyboardInterrupt` at once.
  `serve()` always stops the embedded Postgres in a `finally`, with signals ignored.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from svc.config import SHUTDOWN_CANCEL_SIGNAL
from svc.server.lifecycle import note_early_stop

#: Seconds a worker gets, after the grace period, to cancel its requests, close its
#: connections and exit before Granian kills it.
CANCEL_WINDOW_S = 6

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

Handler = Callable[[int, FrameType | None], Any] | int | None


def guard_granian_worker_signals() -> None:
    """Make a Granian worker stop on its first SIGTERM only, and not on SIGINT.

    Granian 2.8's worker handler (`granian._signals.set_loop_signals`) calls
    `WorkerSignal.set()` on every SIGINT/SIGTERM, and `set()` blocks, holding the GIL, once
    its one-slot channel is full: a second signal before the worker started serving (a
    Ctrl-C reaches the worker directly, then the parent's SIGTERM follows), or a third one
    after, froze the worker for good. And a worker stopping on the terminal's SIGINT by
    itself races the parent, which then reports an "unexpected exit" and exits 1. This
    wraps `set_loop_signals` (the worker looks it up when it starts, after the fork, so
    patching it here in the parent reaches every worker): its handlers are replaced by one
    that calls `set()` on the first SIGTERM and by a no-op for SIGINT, so workers stop
    when the parent tells them to (a worker whose parent died is told by the kernel,
    `svc.server.lifecycle`). Idempotent."""
    import granian._signals as granian_signals

    from svc.server.lifecycle import stop_after_hook

    original: Callable[[Any], Any] = granian_signals.set_loop_signals
    if getattr(original, "svc_once", False):
        return

    def set_loop_signals(loop: Any) -> Any:
        event = original(loop)
        fired: list[int] = []

        def stop() -> None:
            if not fired:
                fired.append(1)
                # websockets are closed (1001) first: Granian drops them when it stops
                stop_after_hook(event.set)

        loop.add_signal_handler(signal.SIGTERM, stop)
        loop.add_signal_handler(signal.SIGINT, _no_op)
        return event

    set_loop_signals.svc_once = True  # type: ignore[attr-defined]
    granian_signals.set_loop_signals = set_loop_signals


def _no_op() -> None:
    """A worker's SIGINT handler: the terminal's Ctrl-C is the parent's to act on."""


def kill_timeout(grace: float) -> int:
    """Granian's `workers_kill_timeout` for a grace period of `grace` seconds: whole
    seconds, `ceil(grace) + CANCEL_WINDOW_S`."""
    return math.ceil(grace) + CANCEL_WINDOW_S


def granian_worker_pids(server: Any) -> list[int]:
    """Pids of the worker processes of a Granian `MPServer` that are still our children.

    Reads `server.wrks` (Granian 2.8: `WorkerProcess` objects wrapping a
    `multiprocessing.Process` as `inner`) without reaping anything, and keeps only pids
    whose parent, per `/proc/<pid>/stat`, is this process (so a reused pid is never
    signalled)."""
    me = str(os.getpid())
    pids: list[int] = []
    for wrk in list(getattr(server, "wrks", None) or ()):
        pid = getattr(getattr(wrk, "inner", None), "pid", None)
        if not isinstance(pid, int):
            continue
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if len(fields) > 1 and fields[1] == me and fields[0] not in ("Z", "X"):
            pids.append(pid)
    return pids


class ShutdownSignals:
    """SIGINT/SIGTERM handling of one `svc serve` run.

    `grace`: seconds in-flight requests get (>= 0). `worker_pids`: returns the pids of the
    live workers (read when the grace period ends). `log`: one-line messages."""

    def __init__(
        self, grace: float, worker_pids: Callable[[], list[int]], log: Callable[[str], None]
    ) -> None:
        self.grace = grace
        self._pid = os.getpid()
        self._worker_pids = worker_pids
        self._log = log
        self.early = 0  # signals received before Granian took over
        self._signals = 0
        self._cancel_now = threading.Event()
        self._closed = threading.Event()
        self._previous: dict[int, Handler] = {}

    # -- before Granian --------------------------------------------------------------
    def defer(self) -> None:
        """Until `install`: remember SIGINT/SIGTERM (a second one raises
        `KeyboardInterrupt`)."""
        for sig in _STOP_SIGNALS:
            signal.signal(sig, self._early)

    def _early(self, signum: int, frame: FrameType | None) -> None:
        self.early += 1
        if self.early > 1:
            raise KeyboardInterrupt

    # -- while Granian serves --------------------------------------------------------
    def install(self, interrupt: Callable[[], None]) -> None:
        """Chain onto the handlers Granian installed (call from Granian's startup hook).
        `interrupt`: asks Granian to stop, used when a signal came before this call."""
        for sig in _STOP_SIGNALS:
            self._previous[sig] = signal.getsignal(sig)
            signal.signal(sig, self._on_signal)
        if self.early:
            self._begin()
            interrupt()

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if os.getpid() != self._pid:  # inherited by a worker Granian forked, still booting
            if signum == signal.SIGTERM:  # the parent's; SIGINT is the parent's to act on
                note_early_stop(signum)
            return
        previous = self._previous.get(signum)
        if callable(previous):
            previous(signum, frame)
        self._begin()

    def _begin(self) -> None:
        self._signals += 1
        if self._signals == 1:
            threading.Thread(target=self._grace, name="svc-grace", daemon=True).start()
        else:
            self._cancel_now.set()

    def _grace(self) -> None:
        self._log(
            f"stopping: in-flight requests have up to {self.grace:g} s "
            "(--graceful-shutdown-timeout; a second Ctrl-C cancels them now)"
        )
        self._cancel_now.wait(self.grace)
        if self._closed.is_set():
            return
        pids = self._worker_pids()
        if pids:
            self._log(f"grace period over: cancelling what {len(pids)} worker(s) still run")
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, SHUTDOWN_CANCEL_SIGNAL)
        # Granian's own kill timeout counts from its first signal (grace + the window), so
        # after a second Ctrl-C a worker that does not exit could hold the exit for the
        # whole grace period: the window is counted from the cancel here instead.
        if not pids or self._closed.wait(CANCEL_WINDOW_S):
            return
        for pid in self._worker_pids():
            self._log(f"worker {pid} still runs {CANCEL_WINDOW_S} s after the cancel: killed")
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    # -- after Granian ---------------------------------------------------------------
    def close(self) -> None:
        """Granian has returned: no more worker signals; SIGINT/SIGTERM are ignored from
        now on, until the process exits (the embedded Postgres is being stopped, which must
        not be interrupted). `SIG_IGN`, not a Python no-op: the interpreter resets Python
        handlers to the default when it finalizes, and a late second Ctrl-C then killed
        the process (exit status -2) after a clean shutdown; an ignored signal stays
        ignored. `pg_ctl stop` inherits it, harmlessly."""
        self._closed.set()
        self._cancel_now.set()
        for sig in _STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
