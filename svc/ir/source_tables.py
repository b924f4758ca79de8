"""The tables and functions of the sources served besides `default`, in the one IR.

Each served source (`svc.metadata.sources`) is built as `default` is, from its own view
of the document (`source_view`) over its own database's catalog (`DbCatalog.sources`),
into an IR of its own (kept in `Ir.sources` for the operations that run on that source,
`svc.api.source_focus`). Its tables and functions then join `default`'s in `Ir.tables`
and `Ir.functions` under source-qualified names (`SourcedName`), every name inside them
rewritten the same way and every `source` set, so the schema, the planner and the
executor read one map and a relationship still finds its target in its own source. Two
sources may track tables of one `{schema, name}`; their GraphQL names must differ (as in
the reference, whose fix is a `custom_name`).

A served source that cannot be read (its database unreachable, its tables not
readable) is an inconsistent object of type `source`, as the reference reports it; the
other sources keep serving.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import msgspec

from svc.catalog.introspect import DbCatalog
from svc.errors import ErrorCode, SvcError
from svc.ir.model import (
    Function,
    FunctionArg,
    Inconsistency,
    Ir,
    RootFields,
    Table,
    default_root_fields,
)
from svc.ir.source_joins import source_joins
from svc.ir.sources import SourceIssue
from svc.metadata.model import DEFAULT_SOURCE, Metadata, QualifiedName
from svc.metadata.qualified import in_source
from svc.metadata.sources import served_sources, source_view
from svc.naming import HASURA_DEFAULT, field_case, source_naming

Build = Callable[[Metadata, DbCatalog, "Ir | None", str], Ir]


@dataclasses.dataclass(frozen=True, slots=True)
class ServedSourceIssue(SourceIssue):
    """A served source that is not served now: its database could not be introspected or
    its document part does not read (`reason` says which); `index` as `SourceIssue`'s
    (where `svc compile` reports it), and dropped as one."""


def with_sources(ir: Ir, md: Metadata, catalog: DbCatalog, previous: Ir | None, build: Build) -> Ir:
    """`ir` (`default`'s) joined by every other source `md` serves, each built by `build`
    (`svc.ir.build.build_ir` without sources) from its view and catalog; `ir` itself
    when `md` serves no other source."""
    served = served_sources(md)
    if _customized(md.default_source):
        ir = _customize(ir, md.default_source)
    if served:
        ir = _joined(ir, md, catalog, previous, build, served)
    if not any(e.remote_relationships for e in md.tables) and not served:
        return ir
    joins, problems = source_joins(md, ir.tables)
    if not joins and not problems:
        return ir
    issues = (*ir.inconsistencies, *problems)
    return dataclasses.replace(ir, source_joins=joins, inconsistencies=issues)


def _joined(
    ir: Ir, md: Metadata, catalog: DbCatalog, previous: Ir | None, build: Build, served: Any
) -> Ir:
    """`ir` with the tables and functions of every other served source (the module)."""
    tables, functions = dict(ir.tables), dict(ir.functions)
    issues = list(ir.inconsistencies)
    seen = {i.key for i in issues}
    built: dict[str, Ir] = {}
    for name in served:
        one = _build_one(md, name, catalog, previous, build)
        if isinstance(one, Inconsistency):
            issues.append(one)
            continue
        built[name] = one
        memo: dict[int, Any] = {}
        if _customized(served[name]):
            one = _customize(one, served[name])
        for table in one.tables.values():
            moved = rekey(table, name, memo)
            tables[moved.name] = moved
        for function in one.functions.values():
            moved = rekey(function, name, memo)
            functions[moved.name] = moved
        for issue in one.inconsistencies:
            if issue.key not in seen:
                seen.add(issue.key)
                issues.append(_in_source(issue, name))
    return dataclasses.replace(
        ir, tables=tables, functions=functions, inconsistencies=tuple(issues), sources=built
    )


def affixes(source: Any, key: str) -> tuple[str, str]:
    """`(prefix, suffix)` of a source's `customization.<key>` (`root_fields` or
    `type_names`; the reference's `SourceCustomization`: concatenated verbatim around
    every root field name, every type name generated for the source's tables and
    functions), empty strings when not set."""
    custom = source.get("customization") if isinstance(source, dict) else None
    found = custom.get(key) if isinstance(custom, dict) else None
    if not isinstance(found, dict):
        return "", ""
    prefix, suffix = found.get("prefix") or "", found.get("suffix") or ""
    return (prefix, suffix) if isinstance(prefix, str) and isinstance(suffix, str) else ("", "")


def namespaces(md: Metadata) -> dict[str, tuple[str, tuple[str, str]]]:
    """Each source of `md` with a root field namespace: source → (namespace, its type
    name prefix and suffix) (`svc.schema.namespaces`)."""
    out: dict[str, tuple[str, tuple[str, str]]] = {}
    for name, source in [(DEFAULT_SOURCE, md.default_source), *served_sources(md).items()]:
        custom = source.get("customization") if isinstance(source, dict) else None
        fields = custom.get("root_fields") if isinstance(custom, dict) else None
        space = fields.get("namespace") if isinstance(fields, dict) else None
        if isinstance(space, str) and space:
            out[name] = (space, affixes(source, "type_names"))
    return out


def _customized(source: Any) -> bool:
    return source_naming(source) != HASURA_DEFAULT or any(
        affixes(source, key) != ("", "") for key in ("root_fields", "type_names")
    )


def _customize(ir: Ir, source: Any) -> Ir:
    """`ir` (one source's) with its customization applied to tables and functions: the
    naming convention first (`_named`), then the root field prefix and suffix around
    every root field name, verbatim (the reference's `MkRootFieldName`: `test` +
    `authorLocal` + `Query`)."""
    roots, types = affixes(source, "root_fields"), affixes(source, "type_names")
    naming = source_naming(source)
    tables = {k: _affixed(_named(t, naming), roots, types) for k, t in ir.tables.items()}
    functions = {
        k: dataclasses.replace(
            _named_function(f, naming), root_affixes=roots, type_affixes=types, naming=naming
        )
        for k, f in ir.functions.items()
    }
    return dataclasses.replace(ir, tables=tables, functions=functions)


def _named(table: Table, naming: str) -> Table:
    """`table` with its root fields and columns named by `naming` (`svc.naming`): a root
    field or column keeps a custom name verbatim (one that differs from the generated
    default), the others are converted (`field_case`); a table `custom_name` is the base
    of the generated names and so is converted with them (`authorDetails_by_pk` ->
    `authorDetailsByPk`), as the reference's `getTableIdentifierName` at the corpus'
    commit. Relationship and computed field names are the user's and stay verbatim."""
    if naming == HASURA_DEFAULT:
        return table
    defaults = default_root_fields(table.gql_name)
    roots = {
        f.name: field_case(naming, getattr(defaults, f.name))
        for f in dataclasses.fields(RootFields)
        if getattr(table.root_fields, f.name) == getattr(defaults, f.name)
    }
    columns = tuple(
        dataclasses.replace(c, gql_name=field_case(naming, c.name)) if c.gql_name == c.name else c
        for c in table.columns
    )
    computed = tuple(
        dataclasses.replace(cf, args=_args(cf.args, naming), arg_order=_order(cf.arg_order, naming))
        for cf in table.computed_fields
    )
    return table.with_parts(
        root_fields=dataclasses.replace(table.root_fields, **roots),
        columns=columns,
        computed_fields=computed,
        naming=naming,
    )


def _named_function(fn: Function, naming: str) -> Function:
    """`fn` with its GraphQL name (unless custom: one other than the generated default)
    and its arguments' names converted by `naming`."""
    if naming == HASURA_DEFAULT:
        return fn
    generated = default_function_name(fn.name)
    return dataclasses.replace(
        fn,
        gql_name=field_case(naming, fn.gql_name) if fn.gql_name == generated else fn.gql_name,
        args=_args(fn.args, naming),
        arg_order=_order(fn.arg_order, naming),
    )


def default_function_name(name: QualifiedName) -> str:
    """The GraphQL name of a function without a `custom_name` (`fn`, `s_fn` outside
    `public`; `svc.ir.functions.resolve_function`)."""
    return name.name if name.schema == "public" else f"{name.schema}_{name.name}"


def _args(args: tuple[FunctionArg, ...], naming: str) -> tuple[FunctionArg, ...]:
    """Function arguments named by `naming` (the reference's `applyFieldNameCaseCust` of
    each argument name)."""
    return tuple(dataclasses.replace(a, gql_name=field_case(naming, a.gql_name)) for a in args)


def _order(order: tuple[tuple[str, str], ...], naming: str) -> tuple[tuple[str, str], ...]:
    return tuple(
        (kind, field_case(naming, name) if kind == "input" else name) for kind, name in order
    )


def _affixed(table: Table, roots: tuple[str, str], types: tuple[str, str]) -> Table:
    prefix, suffix = roots
    names = {
        f.name: f"{prefix}{getattr(table.root_fields, f.name)}{suffix}"
        for f in dataclasses.fields(table.root_fields)
    }
    fields = dataclasses.replace(table.root_fields, **names)
    return dataclasses.replace(table, root_fields=fields, type_affixes=types)


def _build_one(
    md: Metadata, name: str, catalog: DbCatalog, previous: Ir | None, build: Build
) -> Ir | Inconsistency:
    """Source `name`'s own IR, or the inconsistency that keeps it from being served."""
    found = catalog.sources.get(name)
    if found is None:
        why = catalog.unreachable.get(name, "its database was not introspected")
        return _issue(md, name, why)
    try:
        view = source_view(md, name)
    except SvcError as exc:
        return _issue(md, name, exc.message)
    before = previous.sources.get(name) if previous is not None else None
    return build(view, found, before, name)


def _issue(md: Metadata, name: str, why: str) -> ServedSourceIssue:
    first = 1 if md.default_source is not None or md.tables or md.functions else 0
    index = next((j for j, s in enumerate(md.other_sources) if s.get("name") == name), 0)
    return ServedSourceIssue(
        "source",
        name,
        f"Inconsistent object: {why}",
        ErrorCode.INVALID_CONFIGURATION,
        name=f"source {name}",
        index=first + index,
    )


def _in_source(issue: Inconsistency, name: str) -> Inconsistency:
    """`issue` of source `name`'s own build, named in that source."""
    said = f'in source "{name}"'
    return dataclasses.replace(
        issue,
        reason=issue.reason.replace('in source "default"', said),
        name=issue.name.replace(f"in source {DEFAULT_SOURCE}", f"in source {name}"),
        table=None if issue.table is None else in_source(issue.table, name),  # what drops it
    )


_SOURCE_FIELDS = frozenset({"source", "target_source"})
_ATOMS = (str, int, float, bool, bytes, type(None))


def rekey(value: Any, source: str, memo: dict[int, Any]) -> Any:
    """`value` (a part of source `source`'s IR) with every `QualifiedName` in it made
    `in_source(…, source)` and every `source`/`target_source` field saying `source`;
    objects without either are returned as they are (`memo`: what was rewritten, by id,
    so shared parts stay shared). Walks dataclasses, msgspec structs, tuples, lists,
    dicts and frozensets."""
    if isinstance(value, _ATOMS):
        return value
    done = memo.get(id(value))
    if done is not None:
        return done[1]
    out = _rekeyed(value, source, memo)
    memo[id(value)] = (value, out)  # the original kept alive: its id stays its own
    return out


def _rekeyed(value: Any, source: str, memo: dict[int, Any]) -> Any:
    if isinstance(value, QualifiedName):
        return in_source(value, source)
    if isinstance(value, tuple):
        items = [rekey(v, source, memo) for v in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if isinstance(value, list):
        return [rekey(v, source, memo) for v in value]
    if isinstance(value, frozenset):
        return frozenset(rekey(v, source, memo) for v in value)
    if isinstance(value, dict):
        return {rekey(k, source, memo): rekey(v, source, memo) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        names = [f.name for f in dataclasses.fields(value) if f.init]
        return _rebuilt(value, names, source, memo, dataclasses.replace)
    if isinstance(value, msgspec.Struct):
        names = list(value.__struct_fields__)
        return _rebuilt(value, names, source, memo, msgspec.structs.replace)
    return value


def _rebuilt(value: Any, names: list[str], source: str, memo: dict[int, Any], replace: Any) -> Any:
    changes: dict[str, Any] = {}
    for name in names:
        old = getattr(value, name)
        if name in _SOURCE_FIELDS and old == DEFAULT_SOURCE:
            changes[name] = source
            continue
        new = rekey(old, source, memo)
        if new is not old:
            changes[name] = new
    return replace(value, **changes) if changes else value
