"""Build the IR from a metadata document and an introspected catalog.

Collects every inconsistency instead of stopping at the first (design brief 2): the caller
decides whether a new one refuses a metadata write (`svc.api.metadata`) or is reported by
`get_inconsistent_metadata`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, TypeVar

import msgspec

from svc.catalog.introspect import DbCatalog, DbColumn, DbTable
from svc.config import remote_schema_permissions
from svc.errors import ErrorCode, SvcError
from svc.ir.actions import build_actions
from svc.ir.cache import IrCache, Recorder, Seen, TableBuild, looked_at, same, unchanged
from svc.ir.checks import metadata_checks
from svc.ir.enums import enum_issue, enum_values, left_out_enums, onto_left_out
from svc.ir.functions import resolve_computed_field, resolve_function
from svc.ir.inherited import remote_conflicts, write_conflicts
from svc.ir.model import (
    SCALAR_NAMES,
    Column,
    ComputedField,
    Function,
    Inconsistency,
    Ir,
    Relationship,
    RootFields,
    Table,
    default_root_fields,
    make_table,
)
from svc.ir.permissions import (
    FilterResolver,
    TableShape,
    delete_permission,
    insert_permission,
    select_permission,
    update_permission,
)
from svc.ir.relationships import relationships
from svc.ir.source_tables import with_sources
from svc.ir.sources import source_issues
from svc.ir.unsupported_issues import (
    event_trigger_issues,
    kept_issues,
    permission_error,
    remote_relationship_issues,
    remote_type_relationship_issues,
)
from svc.metadata.inherited_roles import parents as inherited_parents
from svc.metadata.model import DEFAULT_SOURCE, Metadata, QualifiedName, TableEntry, plain
from svc.metadata.names import is_graphql_name
from svc.metadata.remote_schemas import is_to_source, remote_schemas, remote_sdls
from svc.metadata.sources import view_source
from svc.session_vars import is_admin

V = TypeVar("V")


def scalar_name(col: DbColumn) -> str:
    """GraphQL scalar of a column type (Hasura's names: `Int`, `bigint`, `String`, …)."""
    return SCALAR_NAMES.get(col.type_name, col.type_name)


def _elem_scalar(col: DbColumn) -> str | None:
    """The GraphQL scalar of an array column's elements (None for other columns)."""
    if col.type_category != "A" or col.elem_type_name is None:
        return None
    return SCALAR_NAMES.get(col.elem_type_name, col.elem_type_name)


def build_ir(md: Metadata, catalog: DbCatalog, previous: Ir | None = None) -> Ir:
    """Resolve `md` against `catalog`; never raises for bad metadata, records it instead.

    Every table, function and relationship built names its source: `default`'s, whose
    database `catalog` describes, and each other source `md` serves over its catalog in
    `catalog.sources` (`svc.ir.source_tables`). See `build_source` for `previous`.
    """
    own = build_source(md, catalog, previous, view_source(md))
    return with_sources(own, md, catalog, previous, build_source)


def build_source(
    md: Metadata, catalog: DbCatalog, previous: Ir | None = None, source: str = DEFAULT_SOURCE
) -> Ir:
    """The IR of `md`'s `default` source (its tables and functions, and what the whole
    document holds: actions, remote schemas, inherited roles) over `catalog`; with
    `source`, of that source's view (`svc.metadata.sources.source_view`): its tables are
    stamped with its name, so a `to_source` relationship names its own source truly.

    With `previous` (the IR of an earlier document, over any catalog), only the tables
    whose entry or catalog table changed, and the tables that looked at those, are built
    again, and of those only the stages whose inputs changed; every other table keeps its
    build and its `Table` object (`svc.ir.cache`). A metadata operation then costs what it
    touches, not the size of the document. The result equals a build without `previous`,
    inconsistencies in the same order. Documents must not be changed in place once built:
    unchanged entries are recognised by identity (`svc.metadata.apply` copies on write).
    """
    index = catalog.table_index()
    issues: list[Inconsistency] = source_issues(md)  # sources svc does not serve
    entries, dbs = _resolved(md, index, issues)
    cache = previous.cache if previous is not None and previous.cache is not None else _EMPTY
    run = _Run(entries, dbs, cache, catalog, index, source)
    builds = run.builds()
    dropped = left_out_enums(issues)
    for attribute in ("relationship_issues", "computed_field_issues", "permission_issues"):
        for build in builds.values():
            found = getattr(build, attribute)
            if found and dropped and attribute == "relationship_issues":
                found = onto_left_out(found, dropped)
            if found:
                issues.extend(found)
    functions = _functions(md, run.fn_index, set(entries), issues)
    tables = {name: build.table for name, build in builds.items()}
    issues.extend(metadata_checks(md, tables, functions))  # the document as a whole
    issues.extend(remote_relationship_issues(md, tables))
    if source == DEFAULT_SOURCE:  # the whole document's (a view's are the same objects)
        issues.extend(remote_type_relationship_issues(md, tables))
    issues.extend(event_trigger_issues(md, tables))
    issues.extend(kept_issues(md))  # what svc keeps but does not apply
    parents = inherited_parents(md)
    issues.extend(write_conflicts(tables, parents))
    if remote_schema_permissions() and source == DEFAULT_SOURCE:  # built when enabled
        remotes = ((e.name, remote_sdls(e)) for e in remote_schemas(md))
        issues.extend(remote_conflicts(remotes, parents))
    actions = build_actions(md, tables, catalog)
    issues.extend(actions.issues)
    return Ir(
        tables=tables,
        inconsistencies=tuple(issues),
        functions=functions,
        cache=IrCache(builds, catalog.functions, run.dependents(builds)),
        actions=actions,
        inherited_roles=parents,
    )


class _Run:
    """One build of the tables of `entries` (whose catalog tables are `dbs`) over a previous
    build's `cache` (empty for a full build): which tables to redo, and each stage for all
    tables."""

    def __init__(
        self,
        entries: dict[QualifiedName, TableEntry],
        dbs: dict[QualifiedName, DbTable],
        cache: IrCache,
        catalog: DbCatalog,
        index: dict[tuple[str, str], DbTable],
        source: str = DEFAULT_SOURCE,
    ) -> None:
        self.entries, self.dbs, self.cache, self.index = entries, dbs, cache, index
        self.source = source
        self.old = cache.tables
        functions_same = same(cache.functions, catalog.functions)
        self.fn_index = catalog.function_index()
        self.old_functions = self.old if functions_same else {}  # computed fields read them
        self.changed = _changed(entries, dbs, self.old, functions_same)
        # Base tables and tracking change only for `changed`; relationships and computed
        # fields read nothing else, so only these and the tables that looked at them are
        # redone.
        self.first = _reach(self.changed, cache.dependents, entries)
        self.second = self.first  # and those whose permissions read a changed shape
        self.pool: dict[Any, Any] = {}  # equal parts built in this run, shared (`_share`)

    def builds(self) -> dict[QualifiedName, TableBuild]:
        """Every table's build, in document order."""
        old, entries, dbs = self.old, self.entries, self.dbs
        bases = {
            name: _base(entry, dbs[name], old.get(name), self.source, self.pool)
            if name in self.first
            else old[name].base
            for name, entry in entries.items()
        }
        early = self._early_stages(bases)
        shapes = {
            name: _shape(bases[name], stages[0][0], stages[1][0], old.get(name))
            if (stages := early.get(name)) is not None
            else old[name].shape
            for name in entries
        }
        # Permissions read shapes: redo them also where a shape they read has changed (the
        # readers of a table no longer tracked are in `first` already).
        reshaped = {n for n in early if n not in old or shapes[n] is not old[n].shape}
        self.second = self.first | _reach(reshaped, self.cache.dependents, entries)
        builds: dict[QualifiedName, TableBuild] = {}
        for name, entry in entries.items():
            prev, db = old.get(name), dbs[name]
            if name not in self.second:
                assert prev is not None  # a table new to this build is in `changed`
                builds[name] = _kept(prev, entry, db)
                continue
            rels, computed = early[name] if name in early else _stages(prev)
            perms = _permission_stage(entry, bases[name], shapes, prev, self.pool)
            table = _final(bases[name], rels[0], computed[0], perms[0], prev)
            builds[name] = TableBuild(
                entry, db, bases[name], *rels, *computed, shapes[name], *perms, table=table
            )
        return builds

    def _early_stages(
        self, bases: dict[QualifiedName, Table]
    ) -> dict[QualifiedName, tuple[_Stage, _Stage]]:
        """Relationships and computed fields of the tables in `first`."""
        tracked = dict.fromkeys(self.entries, True)
        out: dict[QualifiedName, tuple[_Stage, _Stage]] = {}
        for name in (n for n in self.entries if n in self.first):
            entry, db = self.entries[name], self.dbs[name]
            prev, base = self.old.get(name), bases[name]
            rels = _relationship_stage(entry, db, base, bases, self.index, prev)
            computed = _computed_stage(
                entry, base, rels[0], self.fn_index, tracked, self.old_functions
            )
            out[name] = (rels, computed)
        return out

    def dependents(
        self, builds: dict[QualifiedName, TableBuild]
    ) -> dict[QualifiedName, frozenset[QualifiedName]]:
        """The previous `dependents` updated for the tables built again or dropped."""
        redone = self.second | {n for n in self.changed if n not in self.entries}
        return _dependents(self.cache, builds, redone)


# A stage's result, its inconsistencies, and the other tables it looked at.
_Stage = tuple[Any, tuple[Inconsistency, ...], Seen]
_NOTHING: _Stage = ((), (), ())
_EMPTY = IrCache({}, (), {})


def _changed(
    entries: dict[QualifiedName, TableEntry],
    dbs: dict[QualifiedName, DbTable],
    old: dict[QualifiedName, TableBuild],
    functions_same: bool,
) -> set[QualifiedName]:
    """Tables tracked or untracked since the previous build, and tables whose entry or
    catalog table differs from it (or that have computed fields, when the catalog's
    functions differ)."""
    out = {name for name in old if name not in entries}
    for name, entry in entries.items():
        prev = old.get(name)
        if (
            prev is None
            or not same(prev.entry, entry)
            or not same(prev.db, dbs[name])
            or (entry.computed_fields and not functions_same)
        ):
            out.add(name)
    return out


def _reach(
    names: set[QualifiedName],
    dependents: Mapping[QualifiedName, frozenset[QualifiedName]],
    tracked: Mapping[QualifiedName, object],
) -> set[QualifiedName]:
    """`names` and the tables that looked at one of them, among the `tracked` ones."""
    out = {n for n in names if n in tracked}
    for name in names:
        out.update(d for d in dependents.get(name, ()) if d in tracked)
    return out


def _kept(prev: TableBuild, entry: TableEntry, db: DbTable) -> TableBuild:
    """`prev` for an unchanged table, holding the current (equal) entry and catalog table,
    so the next build finds them by identity."""
    if prev.entry is entry and prev.db is db:
        return prev
    return replace(prev, entry=entry, db=db)


def _stages(prev: TableBuild | None) -> tuple[_Stage, _Stage]:
    """The relationship and computed-field stages of a previous build."""
    assert prev is not None  # only tables with unchanged inputs skip those stages
    return (
        (prev.relationships, prev.relationship_issues, prev.relationship_seen),
        (prev.computed_fields, prev.computed_field_issues, prev.computed_field_seen),
    )


def _dependents(
    cache: IrCache, builds: dict[QualifiedName, TableBuild], redone: set[QualifiedName]
) -> dict[QualifiedName, frozenset[QualifiedName]]:
    """`cache.dependents` updated for the tables built again (or dropped) in `redone`."""
    out = dict(cache.dependents)
    edited: dict[QualifiedName, set[QualifiedName]] = {}
    for name in redone:
        before = looked_at(cache.tables.get(name))
        after = looked_at(builds.get(name))
        for other in before - after:
            edited.setdefault(other, set(out.get(other, ()))).discard(name)
        for other in after - before:
            edited.setdefault(other, set(out.get(other, ()))).add(name)
    for other, names in edited.items():
        if names:
            out[other] = frozenset(names)
        else:
            out.pop(other, None)
    return out


def _resolved(
    md: Metadata, index: dict[tuple[str, str], DbTable], issues: list[Inconsistency]
) -> tuple[dict[QualifiedName, TableEntry], dict[QualifiedName, DbTable]]:
    """The entries of the tracked tables that exist, in document order (the last entry of
    a table tracked twice, at its first place), and their catalog tables; an inconsistency
    for each table that does not exist. (Two dicts rather than one of pairs: a pair per
    table would be thousands of objects for the garbage collector to count per build.)"""
    entries: dict[QualifiedName, TableEntry] = {}
    dbs: dict[QualifiedName, DbTable] = {}
    for entry in md.tables:
        name = entry.table
        db = index.get((name.schema, name.name))
        if db is None:
            issues.append(
                Inconsistency(
                    "table",
                    msgspec.to_builtins(name),
                    f"no such table/view exists in postgres : {name.quoted()}",
                    ErrorCode.NOT_EXISTS,
                    str(name),
                    name,
                )
            )
            continue
        if entry.is_enum:
            issue = enum_issue(name, db)
            if issue is not None:  # not tracked as far as the rest is concerned (Hasura)
                issues.append(issue)
                continue
        entries[name] = entry
        dbs[name] = db
    return entries, dbs


def _base(
    entry: TableEntry,
    db: DbTable,
    prev: TableBuild | None,
    source: str = DEFAULT_SOURCE,
    pool: dict[Any, Any] | None = None,
) -> Table:
    """The table without relationships, computed fields and permissions: it depends only
    on the entry's configuration and the catalog table."""
    if (
        prev is not None
        and same(prev.entry.configuration, entry.configuration)
        and prev.entry.is_enum == entry.is_enum
        and same(prev.db, db)
    ):
        return prev.base
    return _table(entry, db, source, pool)


def _share(pool: dict[Any, Any] | None, key: Any, value: V) -> V:
    """The object equal to `value` built first in this run under `key` (so the IR of
    thousands of alike tables holds one column `id integer`, one permission of a role
    over `(id, name)`), else `value`, now the one kept. `key` is hashable and equal only
    for equal values; the found object is checked equal, so sharing never changes a value.
    IR parts are never changed once built, which makes sharing them safe."""
    if pool is None:
        return value
    found = pool.setdefault(key, value)
    return found if found is value or found == value else value


def _relationship_stage(
    entry: TableEntry,
    db: DbTable,
    base: Table,
    bases: dict[QualifiedName, Table],
    index: dict[tuple[str, str], DbTable],
    prev: TableBuild | None,
) -> _Stage:
    """Relationships read the owner's and targets' base tables and catalog tables (a
    target's foreign keys, which its `Table` does not hold): a base table is kept only
    with an equal catalog table, so the targets' base tables are compared by identity."""
    if (
        prev is not None
        and prev.base is base
        and (
            prev.entry is entry
            or (
                same(prev.entry.object_relationships, entry.object_relationships)
                and same(prev.entry.array_relationships, entry.array_relationships)
                and same(prev.entry.remote_relationships, entry.remote_relationships)
            )
        )
        and unchanged(prev.relationship_seen, bases, identical=True)
    ):
        return prev.relationships, prev.relationship_issues, prev.relationship_seen
    to_source = any(is_to_source(r) for r in entry.remote_relationships)
    if not entry.object_relationships and not entry.array_relationships and not to_source:
        return _NOTHING
    seen = Recorder(bases)
    found: list[Inconsistency] = []
    rels = relationships(entry, db, base, seen, index, found)
    return tuple(rels), tuple(found), seen.record()


def _computed_stage(
    entry: TableEntry,
    base: Table,
    rels: tuple[Relationship, ...],
    fn_index: dict[tuple[str, str], list[Any]],
    tracked: dict[QualifiedName, bool],
    old: dict[QualifiedName, TableBuild],
) -> _Stage:
    """Computed fields read the table's columns and relationship names, the catalog's
    functions (`old` is empty when those changed) and which tables are tracked."""
    if not entry.computed_fields:
        return _NOTHING
    prev = old.get(entry.table)
    if (
        prev is not None
        and prev.base is base
        and same(prev.relationships, rels)
        and (prev.entry is entry or same(prev.entry.computed_fields, entry.computed_fields))
        and unchanged(prev.computed_field_seen, tracked)
    ):
        return prev.computed_fields, prev.computed_field_issues, prev.computed_field_seen
    seen = Recorder(tracked)
    found: list[Inconsistency] = []
    taken = {r.name for r in rels}
    computed = _computed_fields(entry, base, taken, fn_index, seen, found)
    return computed, tuple(found), seen.record()


def _shape(
    base: Table,
    rels: tuple[Relationship, ...],
    computed: tuple[ComputedField, ...],
    prev: TableBuild | None,
) -> TableShape:
    """What permission filters over the table may name."""
    if (
        prev is not None
        and prev.base is base
        and same(prev.relationships, rels)
        and same(prev.computed_fields, computed)
    ):
        return prev.shape
    return TableShape(
        frozenset(c.name for c in base.columns),
        {r.name: r.target for r in rels if not r.to_source},
        {c.name: c.returns_table for c in computed},
        {c.name: c.type_name for c in base.columns},
    )


_PERMISSION_FIELDS = tuple(
    f"{kind}_permissions" for kind in ("select", "insert", "update", "delete")
)


def _permission_stage(
    entry: TableEntry,
    base: Table,
    shapes: dict[QualifiedName, TableShape],
    prev: TableBuild | None,
    pool: dict[Any, Any] | None = None,
) -> _Stage:
    """Permissions read the table's columns and the shapes of every table their filters
    reach (its own included)."""
    if (
        prev is not None
        and prev.base is base
        and (
            prev.entry is entry
            or all(same(getattr(prev.entry, f), getattr(entry, f)) for f in _PERMISSION_FIELDS)
        )
        and unchanged(prev.permission_seen, shapes)
    ):
        return prev.permissions, prev.permission_issues, prev.permission_seen
    seen = Recorder(shapes)
    resolver = FilterResolver(seen)
    found: list[Inconsistency] = []
    perms = {
        f"{kind}_permissions": _permissions(kind, entry, base, resolver, found, pool)
        for kind in PERMISSION_KINDS
    }
    return perms, tuple(found), seen.record()


def _final(
    base: Table,
    rels: tuple[Relationship, ...],
    computed: tuple[ComputedField, ...],
    perms: dict[str, dict[str, Any]],
    prev: TableBuild | None,
) -> Table:
    """The frozen table: the previous object when it would be equal, the base table when
    there is nothing to add to it (saves a copy of every bare table)."""
    if (
        prev is not None
        and prev.base is base
        and same(prev.relationships, rels)
        and same(prev.computed_fields, computed)
        and same(prev.permissions, perms)
    ):
        return prev.table
    if not rels and not computed and not any(perms.values()):
        return base
    return base.with_parts(relationships=rels, computed_fields=computed, **perms)


# Each resolves its own kind's rule: `(role, rule, all columns, table, resolver)`.
PERMISSION_KINDS: dict[str, Callable[..., Any]] = {
    "select": select_permission,
    "insert": insert_permission,
    "update": update_permission,
    "delete": delete_permission,
}


def _permissions(
    kind: str,
    entry: TableEntry,
    table: Table,
    resolver: FilterResolver,
    issues: list[Inconsistency],
    pool: dict[Any, Any] | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    all_columns = tuple(c.name for c in table.columns)
    make = PERMISSION_KINDS[kind]
    for item in getattr(entry, f"{kind}_permissions"):
        role = item.role
        try:
            if is_admin(role):  # the reference's `buildPermission` (RQL/DDL/Schema/Cache)
                raise SvcError(
                    ErrorCode.CONSTRAINT_VIOLATION, "cannot define permission for admin role"
                )
            permission_error(item.permission)  # a key svc cannot honour: not served
            made = make(role, item.permission, all_columns, table.name, resolver)
            # `repr` tells apart what `==` would not (`1` and `True`, a name and a dict).
            out[role] = _share(pool, (kind, repr(made)), made)
        except SvcError as exc:
            issues.append(
                Inconsistency(
                    f"{kind}_permission",
                    {"table": msgspec.to_builtins(table.name), **plain(item)},
                    f"Inconsistent object: in table {table.name.quoted()}: in permission for "
                    f'role "{role}": {exc}',
                    exc.code,  # `validation-failed` but for root fields (permissions.py)
                    f"{kind}_permission {role} in table {table.name} in source default",
                    table.name,
                    f"{role}.{kind}",
                )
            )
    return out


def _computed_fields(
    entry: TableEntry,
    table: Table,
    relationships: set[str],
    index: dict[tuple[str, str], list[Any]],
    tracked: Mapping[QualifiedName, bool],
    issues: list[Inconsistency],
) -> tuple[ComputedField, ...]:
    out: list[ComputedField] = []
    for item in entry.computed_fields:
        name = item.name
        try:
            if not is_graphql_name(name):  # a document stored before names were checked
                raise SvcError(
                    ErrorCode.NOT_SUPPORTED,
                    f'the computed field "{name}" cannot be added to table '
                    f'{table.name.quoted()} because "{name}" is not valid GraphQL name',
                )
            if (
                table.column(name) is not None
                or name in relationships
                or any(c.gql_name == name for c in table.columns)
            ):
                raise SvcError(
                    ErrorCode.ALREADY_EXISTS, f'column/relationship "{name}" already exists'
                )
            out.append(resolve_computed_field(item, table.name, index, tracked))
        except SvcError as exc:
            issues.append(
                Inconsistency(
                    "computed_field",
                    {"table": msgspec.to_builtins(table.name), **plain(item)},
                    f"Inconsistent object: in table {table.name.quoted()}: in computed field "
                    f'"{name}": {exc.message}',
                    exc.code,
                    f"computed_field {name} in table {table.name} in source default",
                    table.name,
                    name,
                )
            )
    return tuple(out)


def _functions(
    md: Metadata,
    index: dict[tuple[str, str], list[Any]],
    tracked: set[QualifiedName],
    issues: list[Inconsistency],
) -> dict[QualifiedName, Function]:
    out: dict[QualifiedName, Function] = {}
    for entry in md.functions:
        name = entry.name
        try:
            out[name] = resolve_function(entry, index, tracked)
        except SvcError as exc:
            issues.append(
                Inconsistency(
                    "function",
                    plain(entry),
                    f"Inconsistent object: in function {name.quoted()}: {exc.message}",
                    exc.code,
                    f"function {name} in source default",
                )
            )
    return out


def _table(
    entry: TableEntry,
    db: DbTable,
    source: str = DEFAULT_SOURCE,
    pool: dict[Any, Any] | None = None,
) -> Table:
    config = entry.configuration
    custom_columns: dict[str, str] = {}
    comments: dict[str, str] = {}  # `column_config.<column>.comment`: the field's description
    if config is not None:
        custom_columns.update(config.custom_column_names)
        for col_name, col_conf in config.column_config.items():
            if isinstance(col_conf, dict) and isinstance(col_conf.get("custom_name"), str):
                custom_columns[col_name] = col_conf["custom_name"]
            if isinstance(col_conf, dict) and isinstance(col_conf.get("comment"), str):
                comments[col_name] = col_conf["comment"]
    gql_name = (config.custom_name if config else None) or default_gql_name(entry.table)
    if not is_graphql_name(gql_name):
        gql_name = ""  # tracked, but absent from GraphQL until given a custom_name (Hasura)
    columns = tuple(
        _share(pool, column, column)  # Columns are hashable, their fields plain
        for column in (
            Column(
                name=c.name,
                gql_name=custom_columns.get(c.name, c.name),
                pg_type=_cast_type(c),
                type_name=c.type_name,
                scalar=scalar_name(c),
                nullable=c.nullable,
                has_default=c.has_default,
                is_array=c.type_category == "A",
                comment=comments.get(c.name, c.comment),
                elem_scalar=_elem_scalar(c),
            )
            for c in db.columns
            if is_graphql_name(custom_columns.get(c.name, c.name))
        )
    )
    pk = next((k.columns for k in db.constraints if k.kind == "p"), ())
    uniques = tuple((k.name, k.columns) for k in db.constraints)
    return make_table(
        name=entry.table,
        gql_name=gql_name,
        kind=db.kind,
        columns=columns,
        primary_key=pk,
        unique_constraints=uniques,
        relationships=(),
        root_fields=_root_fields(gql_name, config.custom_root_fields if config else None),
        comment=(config.comment if config and config.comment else None) or db.comment,
        updatable=db.updatable if db.kind in ("v", "f") else (28 if db.kind in ("r", "p") else 0),
        source=source,  # the source whose view `md` is (`build_source`)
        enum_values=enum_values(db) if entry.is_enum else None,
        foreign_keys=tuple(
            (fk.columns[0], QualifiedName(fk.ref_table, fk.ref_schema), fk.ref_columns[0])
            for fk in db.foreign_keys
            if len(fk.columns) == 1
        ),
    )


# Casting to these without a length would truncate: `::character` is `char(1)`.
_UNBOUNDED = {"bpchar": "bpchar", "bit": "varbit"}


def _cast_type(col: DbColumn) -> str:
    """The type values are cast to: Postgres's spelling, except the length-bounded ones."""
    return _UNBOUNDED.get(col.type_name, col.type)


def default_gql_name(name: QualifiedName) -> str:
    """`author` for `public.author`, `s_author` for `s.author` (Hasura's scheme)."""
    return name.name if name.schema == "public" else f"{name.schema}_{name.name}"


def _root_fields(base: str, custom: Any) -> RootFields:
    def pick(key: str, default: str) -> str:
        value = getattr(custom, key, None) if custom is not None else None
        return value if is_graphql_name(value) else default

    defaults = default_root_fields(base)
    return RootFields(**{k: pick(k, getattr(defaults, k)) for k in RootFields.__slots__})
