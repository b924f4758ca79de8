"""The compiled state one process serves: metadata, catalog, IR, schemas, plan cache.

A `State` is built whole and swapped atomically when metadata or the database changes;
requests hold a reference to the state they started with.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from graphql import GraphQLSchema

from svc.catalog.introspect import DbCatalog
from svc.config import Config
from svc.errors import SvcError
from svc.ir import Inconsistency, Ir, build_ir
from svc.ir.role_view import RoleView, role_view
from svc.metadata.model import Metadata, MetadataDecoder
from svc.schema.lazy import is_whole
from svc.schema.lazy_roots import carry_root_index
from svc.schema.names import carry_names
from svc.schema.remote_registry import RemoteRegistry, remote_issues
from svc.schema.role_schema import RoleSchema, known_issues, role_schema, schema_roles
from svc.session_vars import is_admin
from svc.timings import record

PLAN_CACHE_BYTES = 64 * 1024 * 1024  # per state, unless `Resources.plan_cache_bytes` says
LARGEST_ENTRY = 8  # an entry may take at most 1/8 of the cache: larger ones are not kept
# Estimates of what entries hold, checked with tracemalloc (`document_bytes`, `plan_bytes`):
ENTRY_BYTES = 4096  # an entry's fixed cost: key tuple, dict slots, the small objects of a plan
NODE_BYTES = 160  # an AST node (graphql-core object, its name node and its slots dict)
PLAN_PER_SQL_BYTE = 8  # plan nodes and the statement, per byte of the statement's SQL
OBJECT_BYTES = 64  # a small Python object and the pointer to it


def text_bytes(*parts: Any) -> int:
    """Estimated bytes of `parts` as a cache holds them: `str`/`bytes` (one byte a character
    for ASCII in CPython, plus the object), tuples and lists (looked into: a list argument
    of 100,000 strings is 100,000 objects), anything else as a small object."""
    total = 0
    stack: list[Any] = list(parts)
    while stack:
        part = stack.pop()
        if isinstance(part, str | bytes):
            total += OBJECT_BYTES + len(part)
        elif isinstance(part, tuple | list):
            total += OBJECT_BYTES + 8 * len(part)
            stack.extend(part)
        else:
            total += OBJECT_BYTES
    return total


_SEPARATORS = (" ", ",", "\n", "{", "(", ":", "$", "@", "\t", "!", "[", ".")


def document_bytes(text: str) -> int:
    """Estimated bytes of a parsed GraphQL document of `text` with the text itself: one AST
    node per token at most, and a token ends at a separator, so `NODE_BYTES` per separator
    (an overestimate inside string literals, never an underestimate), plus the text twice
    (the text, and the AST's copies of its names and string values). Measured with
    tracemalloc: 41 bytes a character for 2,000 aliased fields (estimated 53); 2.0 for a
    1 MB string literal (estimated 2.0)."""
    nodes = sum(map(text.count, _SEPARATORS))
    return 2 * len(text) + NODE_BYTES * nodes


def plan_bytes(sql: str, shape: Any = ()) -> int:
    """Estimated bytes a compiled plan adds to its document's entry: its plan nodes and
    statement (`PLAN_PER_SQL_BYTE` per byte of SQL, which grows with the plan) and the
    plan's shape key (the structural variables' JSON)."""
    return ENTRY_BYTES + PLAN_PER_SQL_BYTE * len(sql) + text_bytes(shape)


class PlanCache:
    """A least-recently-used map bounded in bytes: each entry is put with an estimate of
    its size (`text_bytes`, `document_bytes`, `plan_bytes`), may `grow` later (a document
    gains a plan per variable shape), and the least recently used entries are evicted while
    the total exceeds `bound`. An entry larger than `bound // LARGEST_ENTRY` is not kept
    (its request is answered, just not remembered), so no single request can flush the
    cache. `get` is a dict lookup and an O(1) move to the end.

    Large requests are prepared in a worker thread (`svc.server.app`), so changes hold a
    lock; `get` takes none (each OrderedDict operation is atomic under the GIL, and an
    entry evicted between its lookup and its move is simply returned once more).
    """

    __slots__ = ("_entries", "_lock", "_sizes", "bound", "used")

    def __init__(self, bound: int | None = None) -> None:
        self._entries: OrderedDict[Any, Any] = OrderedDict()
        self._sizes: dict[Any, int] = {}
        self._lock = threading.Lock()
        self.bound = PLAN_CACHE_BYTES if bound is None else bound
        self.used = 0  # estimated bytes of the entries kept

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: Any) -> bool:
        return key in self._entries

    def get(self, key: Any) -> Any | None:
        """The entry of `key`, now the most recently used, or None."""
        value = self._entries.get(key)
        if value is not None:
            try:  # noqa: SIM105 (contextlib.suppress costs a context manager per hit)
                self._entries.move_to_end(key)
            except KeyError:  # evicted meanwhile by another thread
                pass
        return value

    def put(self, key: Any, value: Any, size: int) -> None:
        """Keep `value` under `key`, `size` estimated bytes (with its key), evicting the
        least recently used entries to stay within `bound`; too large an entry is not
        kept (and replaces nothing)."""
        with self._lock:
            if size > self.bound // LARGEST_ENTRY:
                self._discard(key)
                return
            self.used += size - self._sizes.get(key, 0)
            self._sizes[key] = size
            self._entries[key] = value
            self._entries.move_to_end(key)
            self._evict()

    def grow(self, key: Any, size: int) -> None:
        """Account `size` more bytes to the entry of `key` (dropped when it became too
        large); nothing when the entry is gone."""
        with self._lock:
            old = self._sizes.get(key)
            if old is None:
                return
            if old + size > self.bound // LARGEST_ENTRY:
                self._discard(key)
                return
            self._sizes[key] = old + size
            self.used += size
            self._evict()

    def discard(self, key: Any) -> None:
        """Forget the entry of `key`, if any."""
        with self._lock:
            self._discard(key)

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._entries.clear()
            self._sizes.clear()
            self.used = 0

    def _discard(self, key: Any) -> None:
        size = self._sizes.pop(key, None)
        if size is not None:
            del self._entries[key]
            self.used -= size

    def _evict(self) -> None:
        entries, sizes = self._entries, self._sizes
        while self.used > self.bound and entries:
            key, _ = entries.popitem(last=False)
            self.used -= sizes.pop(key)


@dataclass(frozen=True, slots=True)
class Resources:
    """What every `State` of one engine is built with: the registry of remote schema
    introspections (filled by metadata loads and operations, read by schema builds and
    remote calls), the decoder of its stored documents, the byte bound of each state's
    plan cache (`--plan-cache-bytes`) and `--infer-function-permissions` (spec 4.6)."""

    remotes: RemoteRegistry = field(default_factory=RemoteRegistry)
    # Reads each stored document, sharing the previous one's unchanged table entries.
    documents: MetadataDecoder = field(default_factory=MetadataDecoder)
    plan_cache_bytes: int = PLAN_CACHE_BYTES
    infer_function_permissions: bool = True

    @classmethod
    def of(cls, config: Config) -> Resources:
        """The resources of an engine configured by `config` (a new, empty registry)."""
        return cls(
            plan_cache_bytes=max(0, config.plan_cache_bytes),
            infer_function_permissions=config.infer_function_permissions,
        )


@dataclass(frozen=True, slots=True)
class State:
    """One consistent view; `role_views`, `schemas` and `plans` are caches filled on
    demand (a role's `RoleView` once per IR: its schema and plans read it); `resources`
    are its engine's, shared with the states before and after it.

    `backend_only`: this state serves requests allowed `backend_only` writes (Hasura's
    `BOFAAllowed`): a sibling of the same IR made once by `serving`, with its own
    caches, so the role's two schemas never share a cached document or plan and the
    usual request's lookups stay what they were."""

    version: int
    metadata: Metadata
    catalog: DbCatalog
    ir: Ir
    resources: Resources
    role_views: dict[str, RoleView] = field(default_factory=dict)
    schemas: dict[str, GraphQLSchema] = field(default_factory=dict)
    backend_only: bool = False
    siblings: dict[bool | str, State] = field(default_factory=dict, compare=False, repr=False)
    # Serves the Relay API (`/v1beta1/relay`): its schemas are `svc.schema.relay`'s.
    relay: bool = False
    plans: PlanCache = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "plans", PlanCache(self.resources.plan_cache_bytes))

    @property
    def remotes(self) -> RemoteRegistry:
        """The engine's remote schema introspections (`Resources.remotes`)."""
        return self.resources.remotes

    @classmethod
    def build(
        cls,
        version: int,
        metadata: Metadata,
        catalog: DbCatalog,
        resources: Resources | None = None,
        previous: Ir | None = None,
    ) -> State:
        """Resolve `metadata` against `catalog` (inconsistencies are kept in the IR),
        keeping what is unchanged from the `previous` IR (`build_ir`); `resources`: the
        engine's (None: new ones, with the defaults and an empty registry)."""
        started = time.perf_counter()
        ir = build_ir(metadata, catalog, previous)
        if previous is not None:
            carry_names(previous, ir)  # its schema-name check, from what changed
            carry_root_index(previous, ir)  # and its lazy roots' name index
        record("ir_build", time.perf_counter() - started)  # /v1/metrics
        return cls(version, metadata, catalog, ir, resources or Resources())

    def serving(self, role: str, backend_only: bool, relay: bool = False) -> State:
        """The state a request of `role` is served from: this one, or — for a request
        allowed `backend_only` writes by a role that is not admin (admin sees every
        write already) — its `backend_only` sibling (made on first use, then kept);
        `relay`: that state's Relay sibling (`relay_state`)."""
        if relay:
            return self.serving(role, backend_only).relay_state()
        if not backend_only or self.backend_only or is_admin(role):
            return self
        found = self.siblings.get(True)
        if found is None:
            found = self.siblings[True] = State(
                self.version,
                self.metadata,
                self.catalog,
                self.ir,
                self.resources,
                backend_only=True,
            )
        return found

    def relay_state(self) -> State:
        """The sibling serving the Relay API from the same IR (made on first use, then
        kept): its own schemas (`svc.schema.relay`), prepared documents and plans, so a
        query text never shares a cache entry across the two APIs."""
        if self.relay:
            return self
        found = self.siblings.get("relay")
        if found is None:
            found = self.siblings["relay"] = State(
                self.version,
                self.metadata,
                self.catalog,
                self.ir,
                self.resources,
                backend_only=self.backend_only,
                relay=True,
            )
        return found

    def role_view(self, role: str) -> RoleView:
        """What `role` may do with this IR (made on first use, then kept)."""
        found = self.role_views.get(role)
        if found is None:
            found = self.role_views[role] = role_view(
                self.ir,
                role,
                infer_functions=self.resources.infer_function_permissions,
                backend_only=self.backend_only,
            )
        return found

    def schema(self, role: str) -> GraphQLSchema:
        """The GraphQL schema of `role` (built on first use).

        Objects the schema cannot be built with are left out of it and reported as
        inconsistent (`svc.schema.role_schema`: `issues`, `get_inconsistent_metadata`,
        `/healthz`). Raises 500 `unexpected` (a JSON answer, never an empty one) only when
        no schema can be built for the role even without them."""
        found = self.schemas.get(role)
        if found is not None:
            return found
        started = time.perf_counter()
        result = self.role_schema(role)
        record("schema_build", time.perf_counter() - started)  # /v1/metrics
        if result.schema is None:
            reason = result.issues[0].reason if result.issues else "no schema"
            raise SvcError("unexpected", reason.removeprefix("Inconsistent object: "), status=500)
        self.schemas[role] = result.schema
        return result.schema

    def role_schema(self, role: str, fresh: bool = False) -> RoleSchema:
        """`role`'s schema and what it was built without (`svc.schema.role_schema`,
        remembered on the IR unless `fresh`); the Relay API's for a Relay state
        (`relay_state`)."""
        return role_schema(
            self.ir,
            self.metadata,
            role,
            self.remotes,
            infer_functions=self.resources.infer_function_permissions,
            backend_only=self.backend_only,
            relay=self.relay,
            fresh=fresh,
        )

    def whole_schema(self, role: str) -> GraphQLSchema:
        """`role`'s schema, for a reader of every type (introspection's `__schema { types
        }`): the served one (`schema`) when it is whole already (naming conventions,
        namespaces and remote schemas make it whole); otherwise a fresh build of it, which
        the caller makes whole and drops, so that one introspection does not keep every
        type of the role for the rest of the metadata version (~300 MB a role at 10,000
        tables, `bench.scale`). Raises as `schema`."""
        served = self.schema(role)
        if is_whole(served):
            return served
        fresh = self.role_schema(role, fresh=True).schema
        return served if fresh is None else fresh

    def check_role(self, role: str) -> tuple[Inconsistency, ...]:
        """Build `role`'s schema if not built yet (kept for its requests); its issues.
        Never raises (the engine checks every role in the background after a change)."""
        with contextlib.suppress(SvcError):
            self.schema(role)
        return self.role_schema(role).issues

    def roles(self) -> tuple[str, ...]:
        """Every role the metadata shapes a schema for (`schema_roles`)."""
        return schema_roles(self.metadata)

    def issues(self) -> list[Inconsistency]:
        """What this state serves as inconsistent: the IR's inconsistencies, the remote
        schemas that could not be introspected and the objects left out of the role
        schemas built so far (`/healthz`)."""
        known = known_issues(self.ir, self.metadata, self.remotes)
        return [*self.ir.inconsistencies, *remote_issues(self.metadata, self.remotes), *known]

    def remember(self, key: Any, value: Any, size: int | None = None) -> None:
        """Store a plan-cache entry of `size` estimated bytes (None: its key's texts and
        `ENTRY_BYTES`), evicting the least recently used (`PlanCache`)."""
        if size is None:
            size = ENTRY_BYTES + text_bytes(key)
        self.plans.put(key, value, size)
