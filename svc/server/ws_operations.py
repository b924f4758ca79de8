"""The operations of one websocket connection: each `start`/`subscribe` runs the engine's
`Engine.subscribe` in its own task, results go out as `data`/`next` frames, and a
finished query or mutation is followed by `complete`.

A client `stop`/`complete` unregisters the operation first, so nothing more is sent for
it (the reference sends no reply to a stop); a stop for an unknown id is ignored. Closing
the connection stops every operation (`stop_all`).
"""

from __future__ import annotations

import asyncio
import logging
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import svc.server.ws_protocol as wp
from svc.api.engine import anonymous_request
from svc.errors import ErrorCode, SvcError
from svc.server.session import Session
from svc.server.ws_protocol import Protocol as WsProtocol

Send = Callable[[bytes], Awaitable[None]]
Push = Callable[[bytes], Awaitable[None]]


class Handle(Protocol):
    """What `Engine.subscribe` returns: `stop()` ends the operation (idempotent), `done`
    is awaitable (or an `asyncio.Event`) and completes once the operation ended on its own
    (a query's or mutation's one result was pushed)."""

    done: Any

    async def stop(self) -> None:
        """End the operation; no push follows."""


class Subscriber(Protocol):
    """The engine entry the transport needs (`svc.api.engine.Engine.subscribe`)."""

    async def subscribe(
        self,
        raw: dict[str, Any],
        role: str,
        session: dict[str, str],
        push: Push,
        *,
        backend_only: bool = False,
        relay: bool = False,
    ) -> Handle:
        """Start one operation (`backend_only`: the session may use `backend_only`
        writes; `relay`: the Relay API's); raises SvcError before execution."""


@dataclass(eq=False)
class _Op:
    """One running operation: its task and, once started, the engine's handle."""

    id: str
    task: asyncio.Task[None] | None = None
    handle: Handle | None = None
    stopped: bool = field(default=False)


async def _wait_done(handle: Handle) -> None:
    done = handle.done
    waiter = getattr(done, "wait", None)
    await (waiter() if callable(waiter) else done)


class Operations:
    """The operations of one connection, keyed by client id.

    `send` writes one frame (serialised by the session); `protocol` and `legacy`
    (`/v1alpha1/graphql`) choose the frame and error forms; `limit` bounds how many run at
    once; `relay`: operations of the Relay API (`/v1beta1/relay`)."""

    def __init__(
        self, send: Send, protocol: WsProtocol, legacy: bool, limit: int, *, relay: bool = False
    ) -> None:
        self.relay = relay
        self.send = send
        self.protocol = protocol
        self.legacy = legacy
        self.limit = limit
        self.ops: dict[str, _Op] = {}

    def __len__(self) -> int:
        return len(self.ops)

    def check_new(self, op_id: str) -> str | None:
        """Why operation `op_id` cannot start now (duplicate id, limit reached), or None."""
        if op_id in self.ops:
            return f"an operation already exists with this id: {op_id}"
        if len(self.ops) >= self.limit:
            return f"too many operations on this connection (the limit is {self.limit})"
        return None

    def start(
        self, op_id: str, payload: dict[str, Any], engine: Subscriber, session: Session
    ) -> None:
        """Register `op_id` and run it in its own task (the reader keeps reading)."""
        op = _Op(op_id)
        self.ops[op_id] = op
        op.task = asyncio.ensure_future(self._run(op, payload, engine, session))

    async def stop(self, op_id: str) -> None:
        """The client's `stop`/`complete`: nothing more is sent for `op_id`."""
        op = self.ops.pop(op_id, None)
        if op is not None:
            await self._end(op)

    async def stop_all(self) -> None:
        """Stop every operation (the connection is closing)."""
        ops, self.ops = list(self.ops.values()), {}
        for op in ops:
            await self._end(op)

    async def _end(self, op: _Op) -> None:
        op.stopped = True
        if op.handle is not None:
            await op.handle.stop()
        # Still inside Engine.subscribe, or waiting for a `done` a stopped subscription
        # never sets: the task would wait forever.
        if op.task is not None and not op.task.done() and op.task is not asyncio.current_task():
            op.task.cancel()

    def _live(self, op: _Op) -> bool:
        return self.ops.get(op.id) is op

    async def _run(
        self, op: _Op, payload: dict[str, Any], engine: Subscriber, session: Session
    ) -> None:
        if session.anonymous:  # this task's statements (and its pollers') share
            anonymous_request()
        try:
            handle = await engine.subscribe(
                payload,
                session.role,
                session.variables,
                self._pusher(op),
                backend_only=session.backend_only,
                relay=self.relay,
            )
        except SvcError as exc:
            await self._pre_execution_error(op, exc, admin=session.is_admin)
            return
        except asyncio.CancelledError:
            return
        except Exception as exc:  # a bug: the client gets `unexpected`, the log the trace
            _log_exception(exc)
            failure = SvcError(ErrorCode.UNEXPECTED, "unexpected error starting the operation")
            await self._pre_execution_error(op, failure, admin=False)
            return
        op.handle = handle
        if op.stopped:
            await handle.stop()
            return
        await _wait_done(handle)
        if self._live(op):
            del self.ops[op.id]
            await self.send(wp.complete(op.id))

    def _pusher(self, op: _Op) -> Push:
        async def push(payload: bytes) -> None:
            if self._live(op):
                await self.send(self._result_frame(op.id, payload))

        return push

    def _result_frame(self, op_id: str, payload: bytes) -> bytes:
        """`data`/`next`, or for graphql-transport-ws an `error` frame when the result
        carries errors and no data (reference-notes-wave2 section 1)."""
        if self.protocol is WsProtocol.TRANSPORT:
            errors = wp.result_errors(payload)
            if errors is not None:
                if self.legacy:
                    errors = [wp.decode(wp.legacy_errors(payload))]
                return wp.error(op_id, errors)
        if self.legacy:
            payload = wp.legacy_errors(payload)
        return wp.result(self.protocol, op_id, payload)

    async def _pre_execution_error(self, op: _Op, exc: SvcError, admin: bool) -> None:
        """`error` then `complete` for an operation that did not start."""
        if not self._live(op):
            return
        del self.ops[op.id]
        obj = wp.error_object(exc, self.legacy, admin)
        await self.send(wp.error(op.id, wp.error_payload(self.protocol, self.legacy, [obj])))
        await self.send(wp.complete(op.id))


def _log_exception(exc: BaseException) -> None:
    trace = "".join(traceback.format_exception(exc)).strip()
    logging.getLogger(__name__).error(f"svc: websocket operation failed: {trace}")
