"""What `build_ir` remembers about how it built each table, so the next build can keep it.

A table is built in stages: its base (columns, keys, root fields: from its configuration and
its catalog entry), its relationships, its computed fields, its permissions, and finally
the frozen `Table`. Each stage of a `TableBuild` records its inputs and every other table
it looked at, with what it found there (`Seen`). A stage is kept when its own inputs are
unchanged and every table it looked at still holds the same thing; so a metadata operation
rebuilds only the tables it touched and those that refer to them, and every other table
keeps its `Table` object (which lets later caches key on identity).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from svc.catalog.introspect import DbFunction, DbTable
from svc.ir.model import ComputedField, Inconsistency, Relationship, Table
from svc.ir.permissions import TableShape
from svc.metadata.model import QualifiedName, TableEntry

V = TypeVar("V")

# `(table name, what the lookup found)`; None when the table was not there.
Seen = tuple[tuple[QualifiedName, Any], ...]


def same(a: object, b: object) -> bool:
    """True when `a` and `b` are one object or equal (identity first: it is the common case
    for parts shared between successive documents and builds, and costs nothing)."""
    return a is b or a == b


class Recorder(Mapping[QualifiedName, V], Generic[V]):
    """A read-only view of `found` that remembers each name looked up and the value it had
    (None when absent): a stage's dependencies on other tables.

    Every lookup goes through `__getitem__` (`get` and `in` of `Mapping` call it), so no
    access escapes the record; iterating depends on every table, and records them all.
    """

    __slots__ = ("_found", "seen")

    def __init__(self, found: Mapping[QualifiedName, V]) -> None:
        self._found = found
        self.seen: dict[QualifiedName, V | None] = {}

    def __getitem__(self, name: QualifiedName) -> V:
        value = self._found.get(name)
        self.seen[name] = value
        if value is None:
            raise KeyError(name)
        return value

    def __iter__(self) -> Iterator[QualifiedName]:
        self.seen.update(self._found)
        return iter(self._found)

    def __len__(self) -> int:
        self.seen.update(self._found)
        return len(self._found)

    def record(self) -> Seen:
        """The lookups so far, as `unchanged` checks them."""
        return tuple(self.seen.items())


def unchanged(seen: Seen, now: Mapping[QualifiedName, Any], *, identical: bool = False) -> bool:
    """True when every recorded lookup would find the same thing in `now`: the same object
    with `identical` (for values that do not hold all that was read through them), else
    an equal one."""
    if identical:
        return all(now.get(name) is value for name, value in seen)
    return all(same(now.get(name), value) for name, value in seen)


@dataclass(frozen=True, slots=True)
class TableBuild:
    """How one table was built: the metadata entry and catalog table it came from, and each
    stage's result, issues and lookups of other tables.

    `permissions` maps `{kind}_permissions` to `{role: permission}`, as `Table` takes them.
    """

    entry: TableEntry
    db: DbTable
    base: Table  # no relationships, computed fields or permissions yet
    relationships: tuple[Relationship, ...]
    relationship_issues: tuple[Inconsistency, ...]
    relationship_seen: Seen  # base tables of targets (by identity: see `_relationship_stage`)
    computed_fields: tuple[ComputedField, ...]
    computed_field_issues: tuple[Inconsistency, ...]
    computed_field_seen: Seen  # whether returned tables are tracked
    shape: TableShape
    permissions: dict[str, dict[str, Any]]
    permission_issues: tuple[Inconsistency, ...]
    permission_seen: Seen  # shapes of the tables filters name
    table: Table


def looked_at(build: TableBuild | None) -> set[QualifiedName]:
    """Every table name a build's stages looked up (none for no build)."""
    if build is None:
        return set()
    seen = (build.relationship_seen, build.computed_field_seen, build.permission_seen)
    return {name for lookups in seen for name, _ in lookups}


@dataclass(frozen=True, slots=True)
class IrCache:
    """The builds of an `Ir`'s tables (by name), the catalog functions they used, and for
    each table name the tables whose build looked it up (`dependents`, the reverse of the
    builds' `Seen`): what to build again when that table changes."""

    tables: dict[QualifiedName, TableBuild]
    functions: tuple[DbFunction, ...]
    dependents: dict[QualifiedName, frozenset[QualifiedName]]
