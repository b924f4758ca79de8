"""Inconsistencies of the document as a whole, that no single table or function build sees.

`metadata_checks(md, tables, functions)` finds (they were `svc compile`'s own
checks before, and the server resolved them silently):

- a declaration made twice: a table, a role's permission of one kind, a computed field,
  a function, a query collection, a query of a collection (the server keeps one; Hasura
  refuses them: `multiple declarations exist`);
- allow-list entries and REST endpoints naming a collection or query that does not exist,
  and collection queries that do not parse;
- two tables or functions giving one root field name in the admin schema, which has every
  root field (the schema would keep one).

Each is a `CheckIssue`: an `Inconsistency` that also says where it is written in a
config-v2 metadata directory (`file`, JSON `path`), so `svc compile` prints it as before
(`file: path: reason`) and the server lists it in `get_inconsistent_metadata`. A metadata
write never refuses a `CheckIssue` as such: a new root-field clash is refused with the
reference's error by `svc.schema.names.schema_problem`, collections and endpoints by
`svc.api.collections`, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from graphql import GraphQLError, parse

from svc.ir.model import Function, Inconsistency, Table
from svc.ir.role_view import PERMISSION_KINDS, metadata_permissions
from svc.ir.root_clashes import root_field_clashes
from svc.metadata.model import Metadata, QualifiedName, TableEntry, plain


@dataclass(frozen=True, slots=True)
class CheckIssue(Inconsistency):
    """An inconsistency of the whole document, located in a metadata directory: `file`
    (`tables.yaml`, …) and the JSON `path` inside it (`$[3].select_permissions[1]`)."""

    file: str = "tables.yaml"
    path: str = "$"


def metadata_checks(
    md: Metadata,
    tables: dict[QualifiedName, Table],
    functions: dict[QualifiedName, Function],
) -> list[CheckIssue]:
    """Every problem listed in the module docstring, per file in document order (never
    raises for bad metadata). Runs on every IR build, so per-table results are kept by
    identity (`_Kept`, `svc.ir.root_clashes.ROOT_COUNTS`) and the walk that locates a
    clash runs only when there is one."""
    _ENTRY_DUPLICATES.bound(2 * len(md.tables) + 64)
    out = list(_duplicates(md, len(tables)))
    collections = _collections(md, out)
    out.extend(_references(md, collections))
    for file, path, reason, definition in root_field_clashes(md, tables, functions):
        out.append(_issue("conflicting_root_field", file, path, reason, definition))
    return out


def _issue(kind: str, file: str, path: str, reason: str, definition: Any) -> CheckIssue:
    return CheckIssue(
        kind,
        plain(definition),
        reason,
        name=f"{file}: {path}",
        file=file,
        path=path,
    )


def _twice(what: str, first: str) -> str:
    return f"{what} is declared more than once (also {first})"


class _Seen:
    """First declarations by key; `dup` makes the issue for a later one."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.first: dict[Any, str] = {}

    def dup(self, key: Any, path: str, what: str, definition: Any) -> CheckIssue | None:
        first = self.first.setdefault(key, path)
        if first == path:
            return None
        return _issue("duplicate_declaration", self.file, path, _twice(what, first), definition)


class _Kept:
    """`fn(obj)` per object, kept while that very object is passed again: metadata
    entries and IR tables are never changed in place (copy on write, `svc.ir.cache`), so
    an unchanged one is the same object in the next build. Holds at most `bound` objects
    (all are dropped past it)."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn
        self.found: dict[int, tuple[Any, Any]] = {}

    def bound(self, limit: int) -> None:
        if len(self.found) > limit:
            self.found.clear()

    def each(self, objs: Iterable[Any]) -> Iterator[Any]:
        """`fn(obj)` for each of `objs`, in order."""
        found, fn = self.found, self.fn
        for obj in objs:
            hit = found.get(id(obj))
            if hit is None or hit[0] is not obj:
                hit = found[id(obj)] = (obj, fn(obj))
            yield hit[1]


# (path suffix, what, suffix of the first declaration, definition) per repeated declaration
_Repeat = tuple[str, str, str, Any]


def _entry_duplicates(entry: TableEntry) -> tuple[_Repeat, ...]:
    """Permissions of one role and kind, and computed fields, declared twice in `entry`."""
    out: list[_Repeat] = []
    for kind in PERMISSION_KINDS:
        perms = metadata_permissions(entry, kind)
        if len(perms) > 1:
            roles: dict[Any, str] = {}
            for j, perm in enumerate(perms):
                role, path = perm.role, f".{kind}_permissions[{j}]"
                first = roles.setdefault(role, path)
                if first != path:
                    out.append((path, f'{kind} permission of role "{role}"', first, perm))
    names: dict[Any, str] = {}
    for j, cf in enumerate(entry.computed_fields if len(entry.computed_fields) > 1 else ()):
        name, path = cf.name, f".computed_fields[{j}]"
        first = names.setdefault(name, path)
        if first != path:
            out.append((path, f'computed field "{name}"', first, cf))
    return tuple(out)


_ENTRY_DUPLICATES = _Kept(_entry_duplicates)


def _duplicates(md: Metadata, resolved: int) -> Iterator[CheckIssue]:
    """Tables, permissions of one role and kind, computed fields, functions declared
    twice (reported at every declaration after the first). `resolved`: how many tables
    the IR has (as many as entries: no table is declared twice)."""
    twice = resolved < len(md.tables) and len({e.table for e in md.tables}) < len(md.tables)
    tables = _Seen("tables.yaml")
    repeats = _ENTRY_DUPLICATES.each(md.tables)
    for i, (entry, repeated) in enumerate(zip(md.tables, repeats, strict=True)):
        if twice:
            what = f"table {entry.table.quoted()}"
            found = tables.dup(entry.table, f"$[{i}]", what, entry.table)
            if found is not None:
                yield found
        for suffix, what, first, definition in repeated:
            path, reason = f"$[{i}]{suffix}", _twice(what, f"$[{i}]{first}")
            yield _issue("duplicate_declaration", "tables.yaml", path, reason, definition)
    functions = _Seen("functions.yaml")
    for i, fn in enumerate(md.functions):
        qualified = fn.name
        found = functions.dup(qualified, f"$[{i}]", f"function {qualified.quoted()}", fn)
        if found is not None:
            yield found


def _collections(md: Metadata, out: list[CheckIssue]) -> dict[str, set[str]]:
    """Query names per collection name; appends to `out` collections and queries declared
    twice and queries that do not parse."""
    file = "query_collections.yaml"
    collections = _Seen(file)
    queries: dict[str, set[str]] = {}
    for i, coll in enumerate(md.query_collections):
        name = coll.name
        found = collections.dup(name, f"$[{i}]", f'collection "{name}"', {"name": name})
        if found is not None:
            out.append(found)
        names = queries.setdefault(name, set())
        seen = _Seen(file)
        for j, q in enumerate(coll.definition.queries):
            path = f"$[{i}].definition.queries[{j}]"
            found = seen.dup(q.name, path, f'query "{q.name}"', q)
            if found is not None:
                out.append(found)
            names.add(q.name)
            error = _parse_error(q.query)
            if error is not None:
                out.append(_issue("query_collection", file, path + ".query", error, q))
    return queries


@lru_cache(maxsize=1024)
def _parse_error(text: str) -> str | None:
    """graphql-core's message when `text` does not parse (cached: documents are checked
    again on every build)."""
    try:
        parse(text)
    except GraphQLError as exc:
        return exc.message
    return None


def _references(md: Metadata, queries: dict[str, set[str]]) -> Iterator[CheckIssue]:
    """Allow-list entries and REST endpoints naming a missing collection or query."""
    for i, item in enumerate(md.allowlist):
        name = item.collection
        if name not in queries:
            reason = f'collection "{name}" does not exist in query_collections.yaml'
            yield _issue("allowlist", "allow_list.yaml", f"$[{i}].collection", reason, item)
    for i, ep in enumerate(md.rest_endpoints):
        coll_name, query = ep.reference
        if coll_name not in queries:
            reason = f'collection "{coll_name}" does not exist in query_collections.yaml'
        elif query not in queries[coll_name]:
            reason = f'query "{query}" does not exist in collection "{coll_name}"'
        else:
            continue
        path = f"$[{i}].definition.query"
        yield _issue("rest_endpoint", "rest_endpoints.yaml", path, reason, ep)
