"""`svc compile`: type-check a metadata directory against a database before deploying it.

Loads the directory, config v2 or v3 (`svc.cli.metadata.load_directory`), introspects the
database once (`svc.execute.db`), builds the IR (`svc.ir.build_ir`) and the GraphQL schema
of every role (`svc.schema.build_schema`: admin and every role named in a permission), and
prints every problem as `file: path: reason` on stderr, where `path` is a JSON path inside
the file (`$[3].select_permissions[0]`). Problems are the IR's inconsistencies (what the server
lists in `get_inconsistent_metadata`, spec 2.11), among them the whole-document checks of
`svc.ir.checks` (duplicate declarations, root-field name clashes, allow-list entries and
REST endpoints naming missing collections or queries, collection queries that do not
parse), the sources svc does not serve (`svc.ir.sources`), plus schemas graphql-core
rejects. In a config v3 directory the file is the one the entry was read from, through its
includes (`databases/default/tables/public_author.yaml: $.select_permissions[0]`:
`svc.metadata.directory_v3.v3_place`).

Exit status: 0 consistent, 1 problems (or a query that does not compile), 2 the directory
or database could not be read. `--print-schema ROLE` writes the role's SDL and
`--print-sql FILE --role R` the SQL of the operation in FILE on stdout, its other steps
(action and remote-schema requests, joins) as comment lines (both also when
there are problems: they show what a server would serve).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from dataclasses import dataclass, field
from typing import Any

from graphql import (
    GraphQLSchema,
    print_schema,
)

from svc.api.graphql import coerce_variables, prepare
from svc.catalog.introspect import DbCatalog
from svc.cli.metadata import load_directory
from svc.config import Config
from svc.errors import SvcError
from svc.execute.db import Sources
from svc.ir import Inconsistency, Ir, build_ir
from svc.ir.action_issues import locate_action
from svc.ir.checks import CheckIssue
from svc.ir.role_view import metadata_permissions, metadata_roles, permission_index
from svc.ir.sources import SOURCES_FILE, ReplicaIssue, SourceIssue
from svc.ir.unsupported_issues import locate_unsupported
from svc.metadata.directory import ALL_FILES, KEY_ORDER, DirectoryError
from svc.metadata.directory_v3 import v3_place
from svc.metadata.model import DEFAULT_SOURCE, Metadata
from svc.metadata.permission_model import Permission
from svc.metadata.remote_schemas import RemoteSchema, remote_schemas
from svc.plan.mutation import Insert, NestedUpdate
from svc.plan.nodes import Const, Param, QueryPlan, SessionJson, SessionRef, VarRef
from svc.plan.operation import PlanInput, plan_operation
from svc.plan.steps import ActionLogStep, DatabaseStep, HttpStep, JoinStep, StepKind
from svc.schema import build_schema
from svc.schema.remote_registry import RemoteRegistry
from svc.schema.role_schema import role_schema
from svc.sql.mutation import render_write
from svc.sql.nested_update import tree_statements
from svc.sql.render import Statement, render_query, render_root


@dataclass(frozen=True, slots=True)
class Problem:
    """One line of output: `file: path: reason`."""

    file: str
    path: str
    reason: str

    def __str__(self) -> str:
        return f"{self.file}: {self.path}: {self.reason}"


@dataclass
class Result:
    """What `compile_metadata` found: the IR, each role's schema, every problem."""

    ir: Ir
    roles: tuple[str, ...]
    schemas: dict[str, GraphQLSchema] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    remotes: tuple[RemoteSchema, ...] = ()  # the metadata's remote schemas


def run(args: argparse.Namespace) -> int:
    """Run `svc compile`; returns the exit status."""
    try:
        loaded = load_directory(args.dir)
    except DirectoryError as exc:
        print(f"{args.dir / exc.file}: {exc.path}: {exc.message}", file=sys.stderr)
        return 2
    md = loaded.md
    try:
        catalog = asyncio.run(introspect(args.database_url, md))
    except SvcError as exc:
        detail = (exc.internal or {}).get("message") if isinstance(exc.internal, dict) else None
        print(f"svc compile: {exc.message}" + (f" ({detail})" if detail else ""), file=sys.stderr)
        return 2
    infer = Config.from_env().infer_function_permissions
    result = compile_metadata(md, catalog, infer_function_permissions=infer)
    if loaded.v3 is not None:  # where each problem is written in the v3 directory
        dd = loaded.v3
        result.problems = [
            Problem(*v3_place(dd, md, p.file, p.path), p.reason) for p in result.problems
        ]
    for problem in result.problems:
        print(problem, file=sys.stderr)
    status = 1 if result.problems else 0
    try:
        if args.print_schema is not None:
            print(print_sdl(result, args.print_schema, infer), end="")
        if args.print_sql is not None:
            status = max(status, _print_sql(args, result, infer))
    except (TypeError, ValueError, RecursionError) as exc:  # a schema that cannot be built
        print(f"svc compile: {exc}", file=sys.stderr)
        status = 1
    summary = f"{len(result.problems)} problem(s)" if result.problems else "consistent"
    print(
        f"svc compile: {len(md.tables)} tables, {len(md.functions)} functions, "
        f"{len(result.roles)} roles: {summary}",
        file=sys.stderr,
    )
    return status


async def introspect(url: str, md: Metadata | None = None) -> DbCatalog:
    """The catalog of the database at `url` (one read-only transaction), with the values
    of `md`'s enum tables read as the server reads them (`Database.introspect`); raises
    `SvcError` `postgres-error` when it cannot be reached."""
    sources = await Sources.connect({DEFAULT_SOURCE: url}, min_size=1, max_size=1)
    db = sources.default  # other sources `md` serves are connected and introspected too
    try:
        async with db.transaction(read_only=True) as conn:
            return await db.introspect(conn, md)
    finally:
        await sources.close()


def roles_of(md: Metadata) -> tuple[str, ...]:
    """`admin` and every role named in a table or function permission, sorted after admin
    (`svc.ir.role_view.metadata_roles`)."""
    return metadata_roles(md)


def compile_metadata(
    md: Metadata, catalog: DbCatalog, *, infer_function_permissions: bool = True
) -> Result:
    """Build the IR and every role's schema; collect every problem (never raises for bad
    metadata). Problems come sorted by file (the sources of `svc.ir.sources` first, then
    `ALL_FILES` order) and position in the file."""
    ir = build_ir(md, catalog)
    result = Result(ir, roles_of(md), remotes=tuple(remote_schemas(md)))
    result.problems.extend(
        Problem(*locate(md, issue), issue.reason) for issue in ir.inconsistencies
    )
    for role in result.roles:
        # As the server builds it: the objects a role's schema cannot be built with are
        # left out and reported (`svc.schema.role_schema`; remotes are not introspected).
        built = role_schema(
            ir, md, role, RemoteRegistry(), infer_functions=infer_function_permissions
        )
        if built.schema is not None:
            result.schemas[role] = built.schema
        result.problems.extend(Problem(*locate(md, i), i.reason) for i in built.issues)
    result.problems.sort(key=lambda p: (_FILE_RANK.get(p.file, -1), _path_key(p.path)))
    return result


_FILE_RANK = {file: i for i, file in enumerate(ALL_FILES)}


_STEP = re.compile(r"\[(\d+)\]|\.([^.\[]+)")
# Keys of a table entry in the order they are written (`svc.metadata.directory.KEY_ORDER`).
_KEY_RANK = {k: i for i, k in enumerate(KEY_ORDER["tables"])}


def _path_key(path: str) -> list[tuple[int, int, str]]:
    """Sort key of a JSON path in file order: indices numerically (`$[10]` after `$[9]`),
    the keys of a table entry in the order they are written."""
    return [
        (0, int(i), "") if i else (1, _KEY_RANK.get(k, len(_KEY_RANK)), k)
        for i, k in _STEP.findall(path)
    ]


# -- where an inconsistency is written -----------------------------------------------------

_MISSING_COLUMN = re.compile(r'no such column exists : "([^"]+)"')


def locate(md: Metadata, issue: Inconsistency) -> tuple[str, str]:
    """`(file, JSON path)` of the metadata entry an IR inconsistency is about.

    Tables, relationships, permissions and computed fields are found in `tables.yaml` by the
    table name and the relationship / role / computed-field name the inconsistency carries
    (`svc.ir.build`); functions in `functions.yaml` by name. A permission naming a missing
    column points at that column in `columns` or `set` when it is there. A whole-document
    check (`svc.ir.checks.CheckIssue`) carries its own place.
    """
    if isinstance(issue, CheckIssue):
        return issue.file, issue.path
    if isinstance(issue, SourceIssue):  # in the order `metadata_to_obj` writes sources
        return SOURCES_FILE, f"$[{issue.index}]"
    if isinstance(issue, ReplicaIssue):  # the served source is written first
        return SOURCES_FILE, f"$[0].configuration.connection_info.read_replicas[{issue.index}]"
    found = locate_unsupported(md, issue)  # kept sections, remote relationships
    if found is not None:
        return found
    found = locate_action(md, issue)  # actions and custom types
    if found is not None:
        return found
    if issue.type == "function":
        wanted = issue.target().function
        for i, fn in enumerate(md.functions):
            if fn.name == wanted:
                return "functions.yaml", f"$[{i}]"
        return "functions.yaml", "$"
    ti = next((i for i, e in enumerate(md.tables) if e.table == issue.table), None)
    if ti is None:
        return "tables.yaml", "$"
    entry, base = md.tables[ti], f"$[{ti}]"
    if issue.type in ("object_relation", "array_relation"):
        kind = issue.type.removesuffix("_relation")
        rels = getattr(entry, f"{kind}_relationships")
        j = next((j for j, r in enumerate(rels) if r.name == issue.relationship), None)
        return "tables.yaml", base if j is None else f"{base}.{kind}_relationships[{j}]"
    if issue.type.endswith("_permission"):
        kind = issue.type.removesuffix("_permission")
        role = issue.definition.get("role") if isinstance(issue.definition, dict) else None
        perms = metadata_permissions(entry, kind)
        j = permission_index(perms, role)
        if j is None:
            return "tables.yaml", base
        return "tables.yaml", f"{base}.{kind}_permissions[{j}]" + _column_in(perms[j], issue)
    if issue.type == "computed_field":
        j = next(
            (j for j, c in enumerate(entry.computed_fields) if c.name == issue.relationship),
            None,
        )
        return "tables.yaml", base if j is None else f"{base}.computed_fields[{j}]"
    return "tables.yaml", base


def _column_in(item: Permission[Any], issue: Inconsistency) -> str:
    """`.permission.columns[k]` / `.permission.set.<c>` when the reason names a column
    written there; "" otherwise."""
    m = _MISSING_COLUMN.search(issue.reason)
    if m is None:
        return ""
    column = m.group(1)
    columns = getattr(item.permission, "columns", None)
    if isinstance(columns, tuple) and column in columns:
        return f".permission.columns[{columns.index(column)}]"
    presets = getattr(item.permission, "set", None)
    if isinstance(presets, dict) and column in presets:
        return f".permission.set.{column}"
    return ""


# -- outputs ------------------------------------------------------------------------------


def print_sdl(result: Result, role: str, infer_function_permissions: bool = True) -> str:
    """SDL of `role`'s schema (graphql-core's `print_schema`); a role named in no
    permission gets the schema such a role would see."""
    schema = result.schemas.get(role)
    if schema is None:
        schema = build_schema(
            result.ir, role, infer_function_permissions=infer_function_permissions
        )
    return print_schema(schema) + "\n"


def _print_sql(args: argparse.Namespace, result: Result, infer: bool) -> int:

    try:
        text = args.print_sql.read_text(encoding="utf-8")
        variables = json.loads(args.variables) if args.variables else None
    except (OSError, ValueError) as exc:
        print(f"svc compile: --print-sql: {exc}", file=sys.stderr)
        return 2
    schema = result.schemas.get(args.role) or build_schema(
        result.ir, args.role, infer_function_permissions=infer
    )
    try:
        statements = operation_sql(
            schema,
            result.ir,
            text,
            role=args.role,
            operation_name=args.operation_name,
            variables=variables,
            stringify=args.stringify_numeric_types,
            remotes=result.remotes,
        )
    except SvcError as exc:
        print(f"{args.print_sql}: {exc.path}: {exc.message}", file=sys.stderr)
        return 1
    print(format_statements(statements), end="")
    return 0


Output = Statement | HttpStep | ActionLogStep | JoinStep | None


def operation_sql(
    schema: GraphQLSchema,
    ir: Ir,
    text: str,
    *,
    role: str,
    operation_name: str | None = None,
    variables: dict[str, Any] | None = None,
    stringify: bool = False,
    remotes: tuple[RemoteSchema, ...] = (),
) -> list[tuple[str, Output]]:
    """`(label, step)` of the operation in `text` for `role`, through the server's own
    pipeline (`svc.api.graphql.prepare`, `svc.plan.operation.plan_operation`, `svc.sql`).

    The database roots of a query or subscription are one statement (label `query`; what
    `/v1/graphql` runs); of a mutation one per write of each root field (label: the
    alias), `None` for a nested insert, whose statements depend on the rows it writes.
    Remote-schema and action root fields are their outgoing request (`HttpStep`) or
    stored call (`ActionLogStep`), relationships to or from them `JoinStep`s (label: the
    root aliases, `join`). Raises `SvcError` (`validation-failed` for a document the
    role's schema rejects).
    """
    prepared = prepare(schema, text, operation_name)
    values = coerce_variables(schema, prepared, variables)
    planned = plan_operation(
        PlanInput(
            schema,
            ir.tables,
            prepared.operation,
            prepared.fragments,
            values,
            stringify,
            role,
            remotes,
            source_joins=bool(ir.source_joins),
        )
    )
    out: list[tuple[str, Output]] = []
    for step in planned.steps:
        if isinstance(step, DatabaseStep):
            out += _database_sql(step)
        elif isinstance(step, HttpStep):
            out.append((", ".join(step.aliases), step))
        elif isinstance(step, ActionLogStep):
            out.append((step.alias, step))
        else:
            out.append(("join", step))
    return out


def _database_sql(step: DatabaseStep) -> list[tuple[str, Output]]:
    """The statements of a database step (see `operation_sql`)."""
    plan = step.plan
    if isinstance(plan, QueryPlan):
        statement, aliases = render_query(plan)
        return [("query", statement)] if aliases else []
    out: list[tuple[str, Output]] = []
    for alias, root in plan.roots:
        if root is None or isinstance(root, str):  # `__typename`
            continue
        if root.query is not None:
            out.append((alias, render_root(root.query)))
            continue
        for write in root.writes:
            if isinstance(write, NestedUpdate):  # a statement per level, then the answer
                out.extend((alias, s) for s in tree_statements(write))
                continue
            nested = isinstance(write, Insert) and (write.nested or not write.rows)
            out.append((alias, None if nested else render_write(write, root)))
    return out


def format_statements(statements: list[tuple[str, Output]]) -> str:
    """SQL text: per statement a `-- label` line, the SQL with `;`, and one comment line per
    parameter saying where its value comes from; other steps as comment lines
    (`describe_step`)."""
    if not statements:
        return "-- no SQL: the operation reads only introspection fields\n"
    lines: list[str] = []
    for label, statement in statements:
        lines.append(f"-- {label}")
        if statement is None:
            lines.append("-- a nested insert: written row by row, statements depend on the rows")
            continue
        if not isinstance(statement, Statement):
            lines.extend(f"-- {line}" if line else "--" for line in describe_step(statement))
            continue
        lines.append(statement.sql + ";")
        lines.extend(
            f"-- ${n}: {describe_param(p)}" for n, p in enumerate(statement.params, start=1)
        )
    return "\n".join(lines) + "\n"


def describe_step(step: HttpStep | ActionLogStep | JoinStep) -> list[str]:
    """Lines showing a step that is not SQL: an HTTP step as its request (method, URL,
    headers, body; a remote's GraphQL document on lines of its own), a stored call, a
    join with what it joins on."""
    if isinstance(step, ActionLogStep):
        what = "stores the call, answered with its id" if step.store else "reads a stored call"
        return [f'asynchronous action "{step.name}": {what} (hdb_catalog.hdb_action_log)']
    if isinstance(step, JoinStep):
        return _describe_join(step)
    what = "remote schema" if step.kind == StepKind.REMOTE_SCHEMA else "action"
    lines = [f'{what} "{step.name}": {step.method} {step.url}']
    lines += [f"header {name}: {value}" for name, value in step.headers]
    body = _readable(step.body)
    if step.kind == StepKind.REMOTE_SCHEMA and isinstance(body, dict):
        lines.append("query:")
        lines += [f"  {line}" for line in str(body.pop("query")).splitlines()]
        lines += [f"{key}: {json.dumps(value)}" for key, value in body.items()]
    else:
        lines.append(f"body: {json.dumps(body)}")
    return lines


def _describe_join(step: JoinStep) -> list[str]:
    pairs = ", ".join(f"{a} -> {b}" for a, b in step.mapping)
    if step.kind == StepKind.REMOTE_JOIN:
        return [
            f'remote relationship {step.relationship} -> remote schema "{step.target}": '
            f"POST {step.url}, one request for all rows of step {step.source}",
            f"field: {json.dumps(step.remote_field)}",
            f"join columns: {pairs}",
        ]
    return [
        f"action relationship {step.relationship} -> table {step.target}: one statement "
        f"over the answers of step {step.source}",
        f"join fields: {pairs}",
    ]


def _readable(value: Any) -> Any:
    """`value` with `Param` leaves as `<where the value comes from>` strings."""
    if isinstance(value, Param):
        described = describe_param(value)
        return f"<{described.removesuffix(' (json)')}>"
    if isinstance(value, dict):
        return {k: _readable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_readable(v) for v in value]
    return value


def describe_param(param: Any) -> str:
    """Where a parameter's value comes from: a literal, a variable, the session."""
    source = param.source
    kind = f"{param.pg_type}[]" if param.is_list else param.pg_type
    if isinstance(source, Const):
        return f"{json.dumps(source.value)} ({kind})"
    if isinstance(source, VarRef):
        return f"variable ${source.name} ({kind})"
    if isinstance(source, SessionRef):
        return f"session variable {source.name} ({kind})"
    if isinstance(source, SessionJson):
        return f"the session variables as JSON ({kind})"
    return f"{source!r} ({kind})"
