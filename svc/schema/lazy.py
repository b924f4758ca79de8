"""Schemas built on first use: types filled when read, a type map filled when looked up.

A role's schema over 10,000 tables is some 370,000 types; a request reads a handful. So
(`build_schema` with `LazyTypes`, the default when the IR's names are plain):

- the root types are built as before (their fields name the first types of each table,
  created empty);
- an object or input type made with a thunk is a `LazyObjectType`/`LazyInputObjectType`
  whose `fields` runs the thunk on first read (under its build's lock: a role's schema is
  read by the event loop, the role check's thread and introspection's thread; one lock
  per build, since a build's types reach only each other and its builder's memo, so a
  fresh schema made whole in a thread never holds up the served one's fills), stores the
  dict on the
  object and makes it the plain graphql-core class again, so later reads are plain
  attribute reads and `type(t) is GraphQLObjectType` holds for every filled type;
- `GraphQLSchema.type_map` is a `LazyTypeMap`: a name is looked up among the types made so
  far, then found by the builder (`SchemaBuilder.find_type`: the tables and scalars the
  name can come from, filling only their types); reading the whole map (introspection's
  `__schema { types }`, a remote schema merge, naming conventions) fills every type first
  and orders the map as `GraphQLSchema` would (`Types.schema`'s walk), so the schema seen
  whole is the eager one.

Every type the builder makes is made while filling a type reachable from the roots, so the
types made so far are exactly the reachable ones found so far: a lookup never answers a
type the eager schema lacks. The validation graphql-core would run on the schema finds
only empty types here (`svc.schema.types`), which the reference serves anyway: lazy
schemas are marked valid.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, ItemsView, Iterator, KeysView, ValuesView
from typing import Any

from graphql import GraphQLError, GraphQLInputObjectType, GraphQLObjectType

# The lock of fills made outside a build's own (`LazyTypes.lock`): fills are short (one
# type's fields) and may nest within one build (a thunk reading another type), so
# re-entrant locks, and never two builds' locks held at once.
FILL_LOCK = threading.RLock()


def new_fill_lock() -> Any:
    """A lock for the fills of one schema build (module docstring)."""
    return threading.RLock()


def _fill(t: Any) -> dict[str, Any]:
    """Run `t`'s thunk once (see the module docstring); its fields."""
    with getattr(t, "_lock", FILL_LOCK):
        found: dict[str, Any] | None = t.__dict__.get("fields")
        if found is not None:
            return found  # another thread, or a nested read, filled it
        try:
            own: dict[str, Any] = t._thunk()
        except Exception as error:
            # graphql-core's message for a thunk that fails
            cls = GraphQLError if isinstance(error, GraphQLError) else TypeError
            raise cls(f"{t.name} fields cannot be resolved. {error}") from error
        t._fields = own
        t.__dict__["fields"] = own  # published: later reads never reach `_LazyFields`
        t.__class__ = t._plain
        del t._thunk, t._plain, t._lock  # a plain graphql-core object again
        return own


class _LazyFields:
    """`fields` of a type not filled yet: a non-data descriptor, so once the instance holds
    `fields` Python reads it directly."""

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        return _fill(obj)


class LazyObjectType(GraphQLObjectType):
    """A `GraphQLObjectType` whose fields are made on first read (module docstring)."""

    fields = _LazyFields()


class LazyInputObjectType(GraphQLInputObjectType):
    """A `GraphQLInputObjectType` whose fields are made on first read."""

    fields = _LazyFields()


LAZY_CLASSES = {GraphQLObjectType: LazyObjectType, GraphQLInputObjectType: LazyInputObjectType}


def lazy(plain: type, t: Any, thunk: Callable[[], dict[str, Any]], lock: Any = FILL_LOCK) -> None:
    """Make the new, empty named type `t` (of graphql-core class `plain`) fill itself with
    `thunk()` on first read, under `lock` (its build's)."""
    t.__class__ = LAZY_CLASSES[plain]
    t._thunk = thunk
    t._plain = plain
    t._lock = lock


def filled(t: Any) -> Any:
    """`t` with its fields made (for code that compares classes)."""
    if type(t) in _LAZY:
        _fill(t)
    return t


_LAZY = (LazyObjectType, LazyInputObjectType)


class LazyDict(dict[str, Any]):
    """A dict whose entries are found by name on lookup (`get`, `[]`, `in`: `find(name)`,
    None for no entry) and which is made whole (`whole()`, in its order) before anything
    reads it whole (iteration, `len`, `keys`, `values`, `items`, copies, `repr`, `==`).
    Once whole it is a plain dict (writes too: namespaces move root fields)."""

    def __init__(
        self,
        known: dict[str, Any],
        whole: Callable[[], dict[str, Any]],
        find: Callable[[str], Any | None] | None = None,
        lock: Any = FILL_LOCK,
    ) -> None:
        super().__init__(known)
        self._find = find
        self._whole: Callable[[], dict[str, Any]] | None = whole
        self._lock = lock  # its build's (module docstring)

    @property
    def made_whole(self) -> bool:
        """Whether every entry is made (reading it whole costs nothing more)."""
        return self._whole is None

    def finding(self, find: Callable[[str], Any | None]) -> None:
        """Look names up with `find`."""
        self._find = find

    def whole(self) -> dict[str, Any]:
        """Every entry (made whole first), as a plain dict."""
        self.make_whole()
        return dict(dict.items(self))

    def _found(self, value: Any) -> Any:
        return value

    def get(self, name: str, default: Any = None) -> Any:
        found = dict.get(self, name)
        if found is None and self._whole is not None:
            with self._lock:
                found = dict.get(self, name)
                if found is None and self._whole is not None:
                    found = self._find(name) if self._find is not None else None
                    if found is not None:
                        dict.__setitem__(self, name, found)
        return default if found is None else self._found(found)

    def __getitem__(self, name: str) -> Any:
        found = self.get(name)
        if found is None:
            raise KeyError(name)
        return found

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def make_whole(self) -> None:
        """Make every entry, in `whole()`'s order."""
        if self._whole is None:
            return
        with self._lock:
            if self._whole is None:
                return
            every = self._whole()
            dict.clear(self)
            dict.update(self, every)
            self._whole = self._find = None

    def __iter__(self) -> Iterator[str]:
        self.make_whole()
        return dict.__iter__(self)

    def __len__(self) -> int:
        self.make_whole()
        return dict.__len__(self)

    def keys(self) -> KeysView[str]:  # type: ignore[override]
        self.make_whole()
        return dict.keys(self)

    def values(self) -> ValuesView[Any]:  # type: ignore[override]
        self.make_whole()
        return dict.values(self)

    def items(self) -> ItemsView[str, Any]:  # type: ignore[override]
        self.make_whole()
        return dict.items(self)

    def copy(self) -> dict[str, Any]:
        return self.whole()

    def __repr__(self) -> str:
        self.make_whole()
        return dict.__repr__(self)

    def __eq__(self, other: object) -> bool:
        self.make_whole()
        return dict.__eq__(self, other)

    __hash__ = None


class LazyTypeMap(LazyDict):
    """`GraphQLSchema.type_map` of a lazy schema (module docstring): a type found is
    handed out filled (code that compares classes sees graphql-core's)."""

    def _found(self, value: Any) -> Any:
        return filled(value)


def is_whole(schema: Any) -> bool:
    """Whether `schema`'s type map is whole: an eager schema's, or a lazy one made whole
    (reading every type then makes nothing)."""
    type_map = schema.type_map
    return not isinstance(type_map, LazyDict) or type_map.made_whole
