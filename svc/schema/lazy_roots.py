"""Root fields found by name: a role's roots over 10,000 tables without making 100,000 fields.

`lazy_roots(builder)` gives the three roots' fields as `LazyDict`s (`svc.schema.lazy`):
looking a root field up makes the fields of the tables that can have that name (an index
of every table's root field names, made once per IR) and of the functions and actions
(made at once: few); reading a root whole makes every table's, in the eager order
(`SchemaBuilder.root_fields`, `mutation_fields`), from the same field objects. The
lookup keeps the eager precedence: functions and actions over tables (`query.update`),
a later table (by GraphQL name) over an earlier one, `x_stream` only where no other
subscription field has the name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from graphql import GraphQLField

from svc.ir.model import ROOT_FIELD_KINDS, Ir, Table, tables_not_shared
from svc.schema.lazy import FILL_LOCK, LazyDict

if TYPE_CHECKING:
    from svc.schema.build import SchemaBuilder

Roots = tuple[LazyDict, LazyDict | None, LazyDict | None]
_QUERY_KINDS = ("select", "select_aggregate", "select_by_pk")
_MUTATION_KINDS = frozenset({"insert", "update", "delete"})
_NAME_KINDS = ROOT_FIELD_KINDS


# Tables changed between two IRs beyond which `carry_root_index` leaves the index to be
# made whole (each changed table costs a few dict updates and a sort of a short tuple).
_CARRY_MAX = 1000


def root_name_index(ir: Ir) -> dict[str, tuple[Table, ...]]:
    """Per root field name, the tables (by GraphQL name) that may have a field of that
    name; remembered on `ir` (every role's roots read it). 0.1 s at 10,000 tables, so a
    newer IR starts from its predecessor's (`carry_root_index`)."""
    memo: dict[str, Any] = ir.derived.setdefault(__name__, {})
    found: dict[str, tuple[Table, ...]] | None = memo.get("index")
    if found is None:
        index: dict[str, list[Table]] = {}
        tables = sorted((t for t in ir.tables.values() if t.gql_name), key=lambda t: t.gql_name)
        for table in tables:
            for name in _root_names(table):
                index.setdefault(name, []).append(table)
        found = memo["index"] = {name: tuple(ts) for name, ts in index.items()}
        memo["ties"] = len({t.gql_name for t in tables}) < len(tables)
    return found


def carry_root_index(before: Ir, after: Ir) -> None:
    """Give `after` the root name index of `before` (when made) updated for the tables
    they do not share (by identity: an IR keeps an unchanged table's object), equal to
    the one `root_name_index(after)` would make: a metadata change then costs what it
    changed, not a walk of every table. Leaves it to be made whole when many tables
    changed or two tables share a GraphQL name (their order is the tables' order in
    `after`, which the update does not know)."""
    memo = before.derived.get(__name__, {})
    old = memo.get("index")
    if old is None or memo.get("ties", True) or __name__ in after.derived:
        return
    gone, new = tables_not_shared(before, after)
    if len(gone) + len(new) > _CARRY_MAX:
        return
    dropped = {id(t) for t in gone}
    added: dict[str, list[Table]] = {}  # each touched name → the new tables giving it
    for table in new:
        for name in _root_names(table):
            added.setdefault(name, []).append(table)
    index = dict(old)
    for name in {name for table in gone for name in _root_names(table)} | added.keys():
        kept = [t for t in index.get(name, ()) if id(t) not in dropped]
        kept.extend(added.get(name, ()))
        kept.sort(key=lambda t: t.gql_name)
        if len({t.gql_name for t in kept}) < len(kept):
            return
        if kept:
            index[name] = tuple(kept)
        else:
            index.pop(name, None)
    after.derived[__name__] = {"index": index, "ties": False}


def _root_names(table: Table) -> set[str]:
    """The root field names `table` may give (every kind; a role has some of them)."""
    rf = table.root_fields
    return {getattr(rf, kind) for kind in _NAME_KINDS}


def lazy_roots(b: SchemaBuilder) -> Roots | None:
    """`(query, mutation, subscription)` root fields found by name (None: no such root);
    None when the query root would be `no_queries_available` alone (the eager roots are
    then small)."""
    roots = _LazyRoots(b)
    if not roots.has_query():
        return None
    lock = getattr(b.t, "lock", FILL_LOCK)  # the build's (`svc.schema.lazy`)
    query = LazyDict({}, lambda: b.root_fields()[0], roots.query_field, lock)
    mutation = (
        LazyDict({}, b.mutation_fields, roots.mutation_field, lock)
        if roots.has_mutation()
        else None
    )
    subscription = (
        LazyDict({}, lambda: b.root_fields()[1], roots.subscription_field, lock)
        if roots.has_subscription()
        else None
    )
    return query, mutation, subscription


class _LazyRoots:
    """The lookups of one role's roots."""

    def __init__(self, b: SchemaBuilder) -> None:
        self.b = b
        self.index = root_name_index(b.ir)

    # -- what exists ------------------------------------------------------------------------
    def shared(self) -> dict[str, GraphQLField]:
        """Functions and actions, in the query and subscription roots."""
        return self.b.shared_fields("query")

    def shared_mutation(self) -> dict[str, GraphQLField]:
        """Functions exposed as mutations and mutation actions."""
        return self.b.shared_fields("mutation")

    def has_query(self) -> bool:
        return bool(self.shared()) or any(
            self._has_select(t, self.b.view.table(t.name).query_roots)
            for t in self.b.tables.values()
        )

    def has_subscription(self) -> bool:
        b = self.b
        if self.shared():
            return True
        for table in b.tables.values():
            kinds = b.view.table(table.name).subscription_roots
            if self._has_select(table, kinds) or (b.streaming and "select_stream" in kinds):
                return True
        return False

    def has_mutation(self) -> bool:
        b = self.b
        return bool(self.shared_mutation()) or any(
            b.view.table(t.name).root_fields & _MUTATION_KINDS for t in b.view.write_candidates()
        )

    def _has_select(self, table: Table, kinds: frozenset[str]) -> bool:
        if "select" in kinds or "select_aggregate" in kinds:
            return True
        return "select_by_pk" in kinds and self.b.pk_arguments(table) is not None

    # -- lookups --------------------------------------------------------------------------
    def query_field(self, name: str) -> GraphQLField | None:
        found = self.shared().get(name)
        return found if found is not None else self._select(name, lambda a: a.query_roots)

    def subscription_field(self, name: str) -> GraphQLField | None:
        found = self.shared().get(name)
        if found is None:
            found = self._select(name, lambda a: a.subscription_roots)
        if found is None and self.b.streaming:
            found = self._stream(name)
        return found

    def mutation_field(self, name: str) -> GraphQLField | None:
        found = self.shared_mutation().get(name)
        if found is not None:
            return found
        for table in self.index.get(name, ()):
            found = self.b.mutation_group(table).get(name, found)
        return found

    def _select(self, name: str, kinds_of: Callable[[Any], frozenset[str]]) -> GraphQLField | None:
        b = self.b
        found = None
        for listed in self.index.get(name, ()):
            table = b.tables.get(listed.name)
            if table is None:
                continue
            kinds = kinds_of(b.view.table(table.name))
            for kind, field_name, f in b._table_query_fields(table):
                if field_name == name and kind in kinds:
                    found = f
        return found

    def _stream(self, name: str) -> GraphQLField | None:
        b = self.b
        found = None
        for listed in self.index.get(name, ()):
            table = b.tables.get(listed.name)
            if table is None or table.root_fields.select_stream != name:
                continue
            if "select_stream" in b.view.table(table.name).subscription_roots:
                found = b.stream_group(table)
        return found
