"""`@cached` on `/v1/graphql` (the reference's query response cache): a query
whose operation carries `@cached(ttl: Int! = 60, refresh: Boolean! = false)` is answered
from a bounded in-memory cache for `ttl` seconds. The key is the metadata version, the
role, the session variables, the query text, the operation name and the variables
(canonical JSON), so no answer crosses roles, users or schema versions. `refresh: true`
runs the query and replaces the entry. Answers with errors are not kept. Per worker
process (the reference keeps its cache in Redis; here every worker fills its own).

Bounds: `MAX_ENTRIES` entries and `MAX_BYTES` bytes of answers, least recently used
evicted first; an answer over a quarter of `MAX_BYTES` is not kept.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from functools import lru_cache
from typing import Any

import msgspec
from graphql import (
    BooleanValueNode,
    GraphQLError,
    IntValueNode,
    OperationDefinitionNode,
    OperationType,
    parse,
)

from svc.metadata.query_text import CACHED_DEFAULT_TTL

MAX_ENTRIES = 10_000
MAX_BYTES = 64 * 1024 * 1024
MAX_TTL = 3600  # seconds: longer ttls are cut to an hour

Key = tuple[Any, ...]


@lru_cache(maxsize=1024)
def cached_directive(query: str, operation_name: str | None) -> tuple[int, bool] | None:
    """`(ttl seconds, refresh)` of the chosen query operation's `@cached`, or None (no
    directive, not a query, a document that does not parse: the ordinary path answers
    those). A ttl given as a variable counts as the default (60 s)."""
    try:
        document = parse(query, no_location=True)
    except GraphQLError:
        return None
    ops = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    if operation_name is not None:
        ops = [d for d in ops if d.name is not None and d.name.value == operation_name]
    if len(ops) != 1 or ops[0].operation is not OperationType.QUERY:
        return None
    for directive in ops[0].directives or ():
        if directive.name.value != "cached":
            continue
        ttl, refresh = CACHED_DEFAULT_TTL, False
        for arg in directive.arguments or ():
            if arg.name.value == "ttl" and isinstance(arg.value, IntValueNode):
                ttl = int(arg.value.value)
            elif arg.name.value == "refresh" and isinstance(arg.value, BooleanValueNode):
                refresh = arg.value.value
        return max(0, min(ttl, MAX_TTL)), refresh
    return None


class ResponseCache:
    """Answers of `@cached` queries: `answer(...)` returns the cached bytes or runs
    `run()` and keeps its answer."""

    def __init__(self, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.entries: OrderedDict[Key, tuple[float, bytes]] = OrderedDict()
        self.size = 0
        self.hits = 0
        self.misses = 0

    async def answer(
        self,
        body: bytes,
        version: int,
        role: str,
        session: dict[str, str],
        run: Callable[[], Awaitable[bytes]],
    ) -> bytes:
        """The answer to the GraphQL request `body` under metadata `version`; `run()` is
        the ordinary pipeline (its errors propagate, `invalid-json` included)."""
        found = self._lookup(body, version, role, session)
        if found is None:
            return await run()
        key, ttl, refresh = found
        now = time.monotonic()
        entry = None if refresh else self.entries.get(key)
        if entry is not None and entry[0] > now:
            self.entries.move_to_end(key)
            self.hits += 1
            return entry[1]
        self.misses += 1
        answer = await run()
        if ttl > 0 and not answer.startswith(b'{"errors"') and b'"errors":' not in answer:
            self._put(key, now + ttl, answer)
        return answer

    @staticmethod
    def _lookup(
        body: bytes, version: int, role: str, session: dict[str, str]
    ) -> tuple[Key, int, bool] | None:
        try:
            raw = msgspec.json.decode(body)
        except msgspec.DecodeError:
            return None
        if not isinstance(raw, dict) or not isinstance(raw.get("query"), str):
            return None
        name = raw.get("operationName")
        directive = cached_directive(raw["query"], name if isinstance(name, str) else None)
        if directive is None:
            return None
        variables = msgspec.json.encode(raw.get("variables") or {}, order="sorted")
        key = (version, role, tuple(sorted(session.items())), raw["query"], name, variables)
        return key, directive[0], directive[1]

    def _put(self, key: Key, expires: float, answer: bytes) -> None:
        if len(answer) > self.max_bytes // 4:
            return
        old = self.entries.pop(key, None)
        if old is not None:
            self.size -= len(old[1])
        self.entries[key] = (expires, answer)
        self.size += len(answer)
        while self.entries and (len(self.entries) > self.max_entries or self.size > self.max_bytes):
            _, (_, dropped) = self.entries.popitem(last=False)
            self.size -= len(dropped)
