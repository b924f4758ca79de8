"""Bounds on the calls to each remote schema in one worker process (svc extension; the
reference has none, its users ask for both: hasura/graphql-engine issues on remote
schemas that are down or overloaded).

- **Concurrency**: at most `RemoteGuardConfig.concurrency` calls to one remote in flight;
  a call waits for a free place at most its own timeout, then answers 500 `unexpected`
  "too many calls in flight".
- **Circuit breaker** (purgatory's `AsyncCircuitBreakerFactory`, one breaker per remote):
  after `threshold` calls in a row that got no usable answer (no connection, a timeout,
  an answer that is not JSON), calls answer at once, without reaching the remote, 503
  `unexpected` "remote schema '<name>' is unavailable …" for `cooldown` seconds; then
  one call is let through, and its success closes the breaker again. An answer with
  GraphQL `errors` is an answer: it does not count.

Used by `svc.api.remote_call.post_graphql` (remote root fields, remote joins,
introspection).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from purgatory import AsyncCircuitBreakerFactory
from purgatory.domain.model import OpenedState

from svc.config import RemoteGuardConfig, remote_guard_config
from svc.errors import ErrorCode, SvcError


class RemoteGuard:
    """The process's bounds on remote calls (see the module); `config` is read once."""

    def __init__(self, config: RemoteGuardConfig) -> None:
        self.config = config
        self._places: dict[str, asyncio.Semaphore] = {}
        self._breakers = AsyncCircuitBreakerFactory(
            default_threshold=max(config.threshold, 1),
            default_ttl=config.cooldown,
            exclude=[asyncio.CancelledError],  # a client that went away is no failure
        )

    @asynccontextmanager
    async def call(self, name: str, timeout: float) -> AsyncIterator[None]:
        """A place for one call to remote `name`; an exception leaving the block is a
        failed call. Raises SvcError 500 `unexpected` when no place frees up within
        `timeout` seconds, 503 `unexpected` while the remote's breaker is open."""
        places = self._places.setdefault(name, asyncio.Semaphore(self.config.concurrency))
        try:
            await asyncio.wait_for(places.acquire(), timeout)
        except TimeoutError:
            raise SvcError(
                ErrorCode.UNEXPECTED,
                f"remote schema {name!r}: too many calls in flight "
                f"({self.config.concurrency}, SVC_GRAPHQL_REMOTE_SCHEMA_CONCURRENCY)",
            ) from None
        try:
            if not self.config.threshold:
                yield
                return
            breaker = await self._breakers.get_breaker(name)
            try:
                async with breaker:
                    yield
            except OpenedState:
                raise SvcError(
                    ErrorCode.UNEXPECTED,
                    f"remote schema {name!r} is unavailable: its last "
                    f"{self.config.threshold} calls failed; calls resume within "
                    f"{self.config.cooldown:g} s",
                    status=503,
                ) from None
        finally:
            places.release()


_guard: list[RemoteGuard] = []  # the process's one guard, as `svc.outbound.shared_client`


def remote_guard() -> RemoteGuard:
    """This process's guard, made on first use from the environment
    (`svc.config.remote_guard_config`)."""
    if not _guard:
        _guard.append(RemoteGuard(remote_guard_config()))
    return _guard[0]
