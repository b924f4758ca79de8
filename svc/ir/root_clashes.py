"""Root fields that two tables or functions give one name (a check of `svc.ir.checks`).

The admin schema has every root field, so a name given twice there is a clash for every
role; the schema would keep one of them. The walk that says who clashes runs only when
`ROOT_COUNTS`, kept across IR builds, finds a name counted twice.
"""

from __future__ import annotations

from collections.abc import Iterator
from threading import Lock
from typing import Any

from svc.ir.model import Function, Table
from svc.metadata.model import Metadata, QualifiedName

# (file, JSON path, reason, definition) of one clash
Clash = tuple[str, str, str, Any]


class _RootCounts:
    """How many tables give each root field name (`root.name`), kept across builds: only
    the tables whose `Table` object changed since the previous call are counted again
    (the IR keeps an unchanged table's object), so a build pays a dict walk."""

    def __init__(self) -> None:
        self.tables: dict[QualifiedName, Table] = {}
        self.counts: dict[str, int] = {}
        self.shared = 0  # names counted more than once
        self.lock = Lock()

    def any_clash(
        self, tables: dict[QualifiedName, Table], functions: dict[QualifiedName, Function]
    ) -> bool:
        """Whether any root field name is given twice (perhaps by one owner, which
        `root_field_clashes` then finds is no clash)."""
        with self.lock:
            old = self.tables
            for name, table in tables.items():
                before = old.get(name)
                if before is not table:
                    self._count(before, -1)
                    self._count(table, 1)
            for name, table in old.items():
                if name not in tables:
                    self._count(table, -1)
            self.tables = dict(tables)
            if self.shared:
                return True
            names = [key for fn in functions.values() for key in _function_keys(fn)]
            return len(set(names)) < len(names) or any(k in self.counts for k in names)

    def _count(self, table: Table | None, step: int) -> None:
        if table is None or not table.gql_name:
            return
        counts = self.counts
        for root, name in _table_roots(table):
            key = f"{root}.{name}"
            n = counts.get(key, 0) + step
            if n:
                counts[key] = n
            else:
                del counts[key]
            if (n, step) in ((2, 1), (1, -1)):
                self.shared += step


def _function_keys(fn: Function) -> list[str]:
    root = "query_root" if fn.exposed_as == "query" else "mutation_root"
    keys = [f"{root}.{fn.gql_name}"]
    if fn.exposed_as == "query" and fn.returns_set:
        keys.append(f"{root}.{fn.gql_name}_aggregate")
    return keys


ROOT_COUNTS = _RootCounts()


class _Roots:
    """Owners of root field names; `claim` makes the issue for a second owner."""

    def __init__(self) -> None:
        self.owners: dict[tuple[str, str], str] = {}

    def claim(self, root: str, name: str, what: str, file: str, path: str) -> Clash | None:
        other = self.owners.setdefault((root, name), what)
        if other == what:
            return None
        reason = f'{root} field "{name}" of {what} conflicts with the one of {other}'
        return file, path, reason, {"root": root, "field": name}


def root_field_clashes(
    md: Metadata,
    tables: dict[QualifiedName, Table],
    functions: dict[QualifiedName, Function],
) -> Iterator[Clash]:
    """Two tables or functions of `md` (resolved as `tables` and `functions`) giving one
    root field name, reported at the later declaration in file order; nothing, after a
    dict walk, when no name is given twice (`ROOT_COUNTS`)."""
    if not ROOT_COUNTS.any_clash(tables, functions):
        return
    roots = _Roots()
    for i, entry in enumerate(md.tables):
        table = tables.get(entry.table)
        if table is None or not table.gql_name:
            continue
        what = f"table {table.name.quoted()}"
        for root, name in _table_roots(table):
            found = roots.claim(root, name, what, "tables.yaml", f"$[{i}]")
            if found is not None:
                yield found
    for i, raw in enumerate(md.functions):
        fn = functions.get(raw.name)
        if fn is None:
            continue
        root = "query_root" if fn.exposed_as == "query" else "mutation_root"
        names = [fn.gql_name]
        if fn.exposed_as == "query" and fn.returns_set:
            names.append(f"{fn.gql_name}_aggregate")
        for name in names:
            found = roots.claim(
                root, name, f"function {fn.name.quoted()}", "functions.yaml", f"$[{i}]"
            )
            if found is not None:
                yield found


def _table_roots(table: Table) -> Iterator[tuple[str, str]]:
    """(root type, field name) of every root field `table` gives the admin schema."""
    rf = table.root_fields
    yield "query_root", rf.select
    yield "query_root", rf.select_aggregate
    if table.primary_key:
        yield "query_root", rf.select_by_pk
    writes = (
        (table.insertable, (rf.insert, rf.insert_one)),
        (table.updatable_rows, (rf.update, rf.update_by_pk, rf.update_many)),
        (table.deletable, (rf.delete, rf.delete_by_pk)),
    )
    for allowed, names in writes:
        for name in names if allowed else ():
            yield "mutation_root", name
