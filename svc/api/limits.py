"""API limits for GraphQL requests: depth, node count, batch size, rate, time, introspection.

The rules are the reference's (Hasura's enterprise "API limits", docs `security/api-limits`):

- **depth** of an operation: the deepest nesting of fields that have a selection set, with
  fragments expanded (`viewer { name }` is 1, `viewer { albums { title } }` is 2). The
  reference exempts introspection-only operations from configured depth limits; svc holds
  them to the server default (`--default-depth-limit`) only, so a deep `__type { ofType … }`
  chain is still bounded.
- **nodes**: the number of fields with a selection set, fragments expanded (each spread
  counts its fragment again).
- **batch**: the number of operations in a JSON-array request.
- **rate**: GraphQL operations per minute per role, or per role and client IP, or per role
  and the values of some session variables (`unique_params`), over a sliding window.
- **time**: the statement timeout of the role's queries and mutations, in seconds (passed
  to `Database.query_json` / `execute_mutation`; without one, the server's
  `--statement-timeout` applies).
- None of the metadata limits applies to `admin` (reference: "All API limits are not
  applied for the admin role"); the server defaults (`--default-depth-limit`,
  `--default-node-limit`, `--statement-timeout`) apply to every role.

Depth and nodes are measured once per prepared document (`measure`, cached with it) and the
limits of a role once per `State` (`RoleLimits`), so a request pays two integer comparisons.

Refusals (GraphQL errors, no database round trip): `depth-limit-exceeded`,
`node-limit-exceeded`, `batch-limit-exceeded`, `rate-limit-exceeded`, and `access-denied`
"Introspection disabled" for `__schema`/`__type` as a role whose introspection is off. The
reference's enforcement is closed source: the introspection error follows a public
reimplementation of its hook (`throw401 "Introspection disabled"`); the codes of the other
refusals are svc's.

**Rate counting across workers.** Granian's workers are processes; `svc serve` creates one
shared file (`SVC_GRAPHQL_RATE_LIMIT_FILE`, under `/dev/shm` when it exists) that every
worker maps: a table of `SLOTS` counters (key hash, minute, previous and current minute's
count) updated under an exclusive `fcntl` lock, so a limit holds for the whole server, not
per worker. Without the file (another ASGI server), counts are per process. Several svc
instances do not share counts.
"""

from __future__ import annotations

import fcntl
import hashlib
import mmap
import os
import struct
import sys
import tempfile
import time
from dataclasses import dataclass

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
)

from svc.errors import SvcError
from svc.metadata.limits import ApiLimits, IntrospectionOptions, RateRule
from svc.session_vars import is_admin

UNLIMITED = sys.maxsize
INTROSPECTION_FIELDS = frozenset({"__schema", "__type"})

# `Measure.introspection`: no `__schema`/`__type` root, some, or only introspection roots.
NO_INTROSPECTION, SOME_INTROSPECTION, ONLY_INTROSPECTION = 0, 1, 2


@dataclass(frozen=True, slots=True)
class Measure:
    """What the limits look at in one operation: `depth` and `nodes` (see the module doc)
    and whether its root fields introspect (`NO_`/`SOME_`/`ONLY_INTROSPECTION`)."""

    depth: int
    nodes: int
    introspection: int


UNMEASURED = Measure(0, 0, NO_INTROSPECTION)


def measure(
    operation: OperationDefinitionNode, fragments: dict[str, FragmentDefinitionNode]
) -> Measure:
    """Depth, node count and introspection of `operation` with `fragments` expanded; each
    fragment is measured once, so the cost is linear in the document even when the expanded
    operation is exponential. A fragment cycle (refused by validation anyway) counts 0; a
    document too deep to walk measures `UNLIMITED`."""
    memo: dict[str, tuple[int, int]] = {}
    active: set[str] = set()

    def selection(node: SelectionSetNode) -> tuple[int, int]:
        depth = nodes = 0
        for sel in node.selections:
            if isinstance(sel, FieldNode):
                if sel.selection_set is not None:
                    d, n = selection(sel.selection_set)
                    depth, nodes = max(depth, d + 1), nodes + n + 1
            elif isinstance(sel, InlineFragmentNode):
                d, n = selection(sel.selection_set)
                depth, nodes = max(depth, d), nodes + n
            elif isinstance(sel, FragmentSpreadNode):
                d, n = spread(sel.name.value)
                depth, nodes = max(depth, d), nodes + n
        return depth, nodes

    def spread(name: str) -> tuple[int, int]:
        found = memo.get(name)
        if found is not None:
            return found
        fragment = fragments.get(name)
        if fragment is None or name in active:
            return 0, 0
        active.add(name)
        found = memo[name] = selection(fragment.selection_set)
        active.discard(name)
        return found

    try:
        depth, nodes = selection(operation.selection_set)
    except RecursionError:
        return Measure(UNLIMITED, UNLIMITED, NO_INTROSPECTION)
    roots = _root_names(operation.selection_set, fragments, set())
    intro = roots & INTROSPECTION_FIELDS
    if not intro:
        kind = NO_INTROSPECTION
    elif roots <= INTROSPECTION_FIELDS | {"__typename"}:
        kind = ONLY_INTROSPECTION
    else:
        kind = SOME_INTROSPECTION
    return Measure(depth, nodes, kind)


def _root_names(
    node: SelectionSetNode, fragments: dict[str, FragmentDefinitionNode], seen: set[str]
) -> set[str]:
    """Names of the root fields, through fragments."""
    names: set[str] = set()
    for sel in node.selections:
        if isinstance(sel, FieldNode):
            names.add(sel.name.value)
        elif isinstance(sel, InlineFragmentNode):
            names |= _root_names(sel.selection_set, fragments, seen)
        elif isinstance(sel, FragmentSpreadNode) and sel.name.value not in seen:
            seen.add(sel.name.value)
            fragment = fragments.get(sel.name.value)
            if fragment is not None:
                names |= _root_names(fragment.selection_set, fragments, seen)
    return names


@dataclass(frozen=True, slots=True)
class Defaults:
    """Server-wide limits (configuration): `depth` and `nodes` (0: none) for every role
    (the statement timeout default is the database layer's `--statement-timeout`);
    `list_items`, the most list items a request's variables may hold; `pattern_length`,
    the longest regular expression (`_regex`, `_similar`, …) a role other than admin may
    send; `answer_rows` and `answer_bytes`, the answer bounds of a role other than admin
    (`svc.api.answer_limits`) (0: none)."""

    depth: int = 0
    nodes: int = 0
    list_items: int = 0
    pattern_length: int = 0
    answer_rows: int = 0  # estimated rows a query of a role other than admin may answer
    answer_bytes: int = 0  # bytes such an answer may have (`svc.api.answer_limits`)


@dataclass(frozen=True, slots=True)
class RoleLimits:
    """The limits of one role under one `State`. Counts are `UNLIMITED` when there is
    none; `intro_depth` is the depth limit of introspection-only operations; `timeout` is
    the statement timeout in seconds (0: none; None: the server's `--statement-timeout`);
    `rate` the role's rate rule or None; `introspection` whether
    `__schema`/`__type` are allowed."""

    depth: int
    intro_depth: int
    nodes: int
    batch: int
    timeout: float | None
    rate: RateRule | None
    introspection: bool

    def check(self, m: Measure, role: str) -> None:
        """Raise the refusal of an operation measured `m` (see the module doc), if any."""
        if m.introspection:
            if not self.introspection:
                raise SvcError("access-denied", "Introspection disabled", path="$")
            limit = self.intro_depth if m.introspection == ONLY_INTROSPECTION else self.depth
        else:
            limit = self.depth
        if m.depth > limit:
            raise SvcError(
                "depth-limit-exceeded",
                f"the query's depth {_count(m.depth)} exceeds the depth limit {limit} of "
                f"role {role!r}",
                path="$",
            )
        if m.nodes > self.nodes:
            raise SvcError(
                "node-limit-exceeded",
                f"the query has {_count(m.nodes)} nodes (fields with a selection set), more "
                f"than the node limit {self.nodes} of role {role!r}",
                path="$",
            )

    def check_batch(self, size: int, role: str) -> None:
        """Raise `batch-limit-exceeded` when a batch of `size` operations is too large."""
        if size > self.batch:
            raise SvcError(
                "batch-limit-exceeded",
                f"the batch has {size} operations, more than the batch limit {self.batch} "
                f"of role {role!r}",
                path="$",
            )


def _count(value: int) -> str:
    return "too large to measure" if value == UNLIMITED else str(value)


def _cap(value: int) -> int:
    return value if value > 0 else UNLIMITED


def role_limits(
    role: str,
    api: ApiLimits | None,
    introspection: IntrospectionOptions | None,
    defaults: Defaults,
) -> RoleLimits:
    """Resolve the limits of `role`: the metadata's per-role value, else its global one,
    else the server default; `admin` and `disabled` limits get only the defaults. A
    `time_limit` of 0 means no time limit (as Postgres's `statement_timeout = 0`)."""
    depth, nodes = _cap(defaults.depth), _cap(defaults.nodes)
    batch, rate, timeout = UNLIMITED, None, None
    intro_depth = depth
    if api is not None and not api.disabled and not is_admin(role):
        if api.depth_limit is not None:
            depth = api.depth_limit.of(role)
        if api.node_limit is not None:
            nodes = api.node_limit.of(role)
        if api.batch_limit is not None:
            batch = api.batch_limit.of(role)
        if api.time_limit is not None:
            timeout = api.time_limit.of(role)
        if api.rate_limit is not None:
            rate = api.rate_limit.of(role)
    allowed = (
        is_admin(role) or introspection is None or role not in introspection.disabled_for_roles
    )
    return RoleLimits(depth, intro_depth, nodes, batch, timeout, rate, allowed)


# -- rate counting ------------------------------------------------------------------------

SLOTS = 65536
PROBES = 8
_SLOT = struct.Struct("<QqQQ")  # key hash, minute, previous minute's count, this minute's
WINDOW = 60.0


def create_rate_file() -> str:
    """Create the shared counter file `svc serve` hands its workers (zeros, `SLOTS`
    slots); returns its path. The caller removes it at exit."""
    folder = "/dev/shm" if os.path.isdir("/dev/shm") else None
    fd, path = tempfile.mkstemp(prefix="svc-rate-limits-", dir=folder)
    try:
        os.ftruncate(fd, SLOTS * _SLOT.size)
    finally:
        os.close(fd)
    return path


class RateCounter:
    """Sliding-window request counts per key (a role and its unique parameters).

    The estimate of the last minute is `previous minute's count x the part of it still in
    the window + this minute's count`, so a key costs one slot whatever its rate. Keys hash
    (BLAKE2b, the same in every process) into `SLOTS` slots, probing `PROBES` of them; when
    all are held by other live keys the first is shared, which can only refuse early.
    """

    def __init__(self, path: str | None = None) -> None:
        self._fd: int | None = None
        if path:
            self._fd = os.open(path, os.O_RDWR)
            self._map = mmap.mmap(self._fd, SLOTS * _SLOT.size)
        else:
            self._map = mmap.mmap(-1, SLOTS * _SLOT.size)

    def close(self) -> None:
        """Unmap and close the shared file."""
        self._map.close()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def hit(self, key: str, limit: int, now: float | None = None) -> bool:
        """Count one request for `key` unless that would pass `limit` requests per minute;
        True when the request is allowed."""
        digest = hashlib.blake2b(key.encode(), digest_size=8).digest()
        h = int.from_bytes(digest, "little") or 1
        now = time.time() if now is None else now
        minute = int(now // WINDOW)
        part = 1.0 - (now % WINDOW) / WINDOW
        fd = self._fd
        if fd is not None:
            fcntl.lockf(fd, fcntl.LOCK_EX)
        try:
            return self._hit(h, minute, part, limit)
        finally:
            if fd is not None:
                fcntl.lockf(fd, fcntl.LOCK_UN)

    def _hit(self, h: int, minute: int, part: float, limit: int) -> bool:
        buf, size = self._map, _SLOT.size
        first = h % SLOTS
        chosen = free = -1
        for i in range(PROBES):
            index = (first + i) % SLOTS
            key, at, _, _ = _SLOT.unpack_from(buf, index * size)
            if key == h:
                chosen = index
                break
            if free < 0 and at < minute - 1:  # empty (0) or stale
                free = index
        if chosen < 0:
            chosen = free if free >= 0 else first
        key, at, previous, current = _SLOT.unpack_from(buf, chosen * size)
        if key != h and at < minute - 1:  # empty or stale: this key's now
            key, at, previous, current = h, minute, 0, 0
        # else key == h, or a live slot shared with another key (counts together)
        if at == minute - 1:
            at, previous, current = minute, current, 0
        elif at != minute:
            at, previous, current = minute, 0, 0
        allowed: bool = previous * part + current + 1 <= limit
        _SLOT.pack_into(buf, chosen * size, key, at, previous, current + allowed)
        return allowed


def rate_key(role: str, rule: RateRule, session: dict[str, str], client: str | None) -> str:
    """The key a request is counted under: the role, plus the client address (`"IP"`) or
    the listed session variables' values. Without a client address (the server did not
    give one) an `"IP"` rule counts per role."""
    params = rule.unique_params
    if params is None:
        return role
    if isinstance(params, str):
        return f"{role}\x00ip\x00{client or ''}"
    return "\x00".join((role, *(session.get(name, "") for name in params)))


def rate_limited(role: str, rule: RateRule) -> SvcError:
    """The refusal of a request over its rate limit: `rate-limit-exceeded`."""
    return SvcError(
        "rate-limit-exceeded",
        f"rate limit exceeded: at most {rule.max_reqs_per_min} requests per minute for role "
        f"{role!r}",
        path="$",
    )
