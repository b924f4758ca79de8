"""Plan mutation root fields: inserts (nested through relationships, upserts), updates with
every operator, deletes, and what each answers (`affected_rows`/`returning`, or a row).

Mutations run in order inside one transaction (`svc.api.mutation`); each plan here is
rendered to one statement, except nested inserts, which need the keys of the rows they
insert first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from graphql import FieldNode, GraphQLField, GraphQLObjectType, get_named_type

from svc.errors import ErrorCode, SvcError, validation_failed
from svc.ir.model import Table
from svc.ir.role_view import WriteAccess
from svc.metadata.model import QualifiedName
from svc.plan.build import Planner
from svc.plan.nodes import (
    TRUE,
    And,
    BoolExp,
    Compare,
    Const,
    Field,
    Param,
    Select,
    SessionRef,
    Typename,
    VarRef,
)
from svc.plan.permissions import filter_exp
from svc.schema.info import FieldInfo, FieldKind
from svc.session_vars import is_session_variable

UPDATE_OPS = (
    "_set",
    "_inc",
    "_append",
    "_prepend",
    "_delete_key",
    "_delete_elem",
    "_delete_at_path",
)


@dataclass(frozen=True, slots=True)
class OnConflict:
    """`ON CONFLICT ON CONSTRAINT … DO UPDATE SET cols WHERE …` (no columns: DO NOTHING)."""

    constraint: str
    update_columns: tuple[str, ...]
    where: BoolExp


@dataclass(frozen=True, slots=True)
class NestedInsert:
    """Rows inserted through a relationship; `mapping` pairs (parent column, child column)."""

    mapping: tuple[tuple[str, str], ...]
    insert: Insert


@dataclass(frozen=True, slots=True)
class InsertRow:
    """One object: its column values and the relationship inserts it carries."""

    values: tuple[tuple[str, Param], ...]
    objects: tuple[NestedInsert, ...] = ()
    arrays: tuple[NestedInsert, ...] = ()


@dataclass(frozen=True, slots=True)
class Insert:
    """Rows for one table."""

    table: QualifiedName
    rows: tuple[InsertRow, ...]
    on_conflict: OnConflict | None = None
    check: BoolExp = TRUE  # the role's insert check, on every new row

    @property
    def nested(self) -> bool:
        """True when some row inserts through a relationship."""
        return any(r.objects or r.arrays for r in self.rows)


@dataclass(frozen=True, slots=True)
class UpdateSet:
    """`column = <op applied to column and value>`."""

    column: str
    op: str
    value: Param


@dataclass(frozen=True, slots=True)
class Update:
    """`UPDATE … SET … WHERE …`."""

    table: QualifiedName
    where: BoolExp
    sets: tuple[UpdateSet, ...]
    check: BoolExp = TRUE  # the role's update check, on every updated row


@dataclass(frozen=True, slots=True)
class RelWrites:
    """Nested update: writes through relationship `name` of the rows the level above
    matched, in the order they run: `delete`, then `updates`, then `insert`. `mapping`
    pairs (parent column, related column); `kind` is `object` or `array`; `types` the
    Postgres types of the parent columns, in `mapping`'s order (`svc.plan.nested_update`)."""

    name: str
    kind: str
    target: QualifiedName
    mapping: tuple[tuple[str, str], ...]
    delete: Delete | None = None
    updates: tuple[NestedUpdate, ...] = ()
    insert: Insert | None = None
    types: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NestedUpdate:
    """A nested update level: an update (no `sets`: the rows are only read, locked) and
    the writes through the relationships of the rows it matched."""

    update: Update
    nested: tuple[RelWrites, ...] = ()


@dataclass(frozen=True, slots=True)
class Delete:
    """`DELETE … WHERE …`."""

    table: QualifiedName
    where: BoolExp


@dataclass(frozen=True, slots=True)
class AffectedRows:
    """The `affected_rows` field."""


@dataclass(frozen=True, slots=True)
class Returning:
    """The `returning` field: the written rows."""

    fields: tuple[tuple[str, Field], ...]


OutputItem = AffectedRows | Returning | Typename


@dataclass(frozen=True, slots=True)
class MutationRoot:
    """One mutation root field. `single`: answers one row (`_one`, `_by_pk`) with
    `row_fields`; otherwise a mutation response with `output`; `many` for `update_x_many`."""

    alias: str
    writes: tuple[Insert | Update | Delete | NestedUpdate, ...]
    table: Table
    single: bool
    output: tuple[tuple[str, OutputItem], ...] = ()
    row_fields: tuple[tuple[str, Field], ...] = ()
    many: bool = False
    query: Select | None = None  # a function exposed as a mutation: its rows


class MutationPlanner(Planner):
    """Plans mutation root fields, reusing the query planner for filters and selections."""

    def mutation_root(
        self, alias: str, field: GraphQLField, nodes: list[FieldNode]
    ) -> MutationRoot:
        """Plan one mutation root field."""
        info: FieldInfo = field.extensions["svc"]
        table = info.table
        assert table is not None
        if info.function is not None:
            query = self._root(info, field, nodes)
            assert isinstance(query, Select)
            return MutationRoot(alias, (), table, query.single, query=query)
        args = self._args(field, nodes[0])
        kind = info.kind
        if kind in (FieldKind.INSERT, FieldKind.INSERT_ONE):
            objects = args.get("objects") if kind == FieldKind.INSERT else [args.get("object")]
            write: Insert | Update | Delete = self._insert(
                table, self.reader.concrete(objects) or [], args.get("on_conflict")
            )
            return self._answer(alias, (write,), table, field, nodes, kind == FieldKind.INSERT_ONE)
        if kind == FieldKind.UPDATE_MANY:
            updates = self.reader.concrete(args.get("updates")) or []
            writes = tuple(
                self._update_or_nested(table, u, self.bool_exp(table, u.get("where")))
                for u in updates
            )
            return self._answer(alias, writes, table, field, nodes, False, many=True)
        if kind in (FieldKind.UPDATE, FieldKind.UPDATE_BY_PK):
            where = (
                self.bool_exp(table, args.get("where"))
                if kind == FieldKind.UPDATE
                else self._pk_where(table, self.reader.concrete(args.get("pk_columns")) or {})
            )
            return self._answer(
                alias,
                (self._update_or_nested(table, args, where),),
                table,
                field,
                nodes,
                kind == FieldKind.UPDATE_BY_PK,
            )
        if kind == FieldKind.DELETE:
            write = self._delete(table, self.bool_exp(table, args.get("where")))
            return self._answer(alias, (write,), table, field, nodes, False)
        if kind == FieldKind.DELETE_BY_PK:
            write = self._delete(table, self._pk_where(table, args))
            return self._answer(alias, (write,), table, field, nodes, True)
        raise SvcError("not-supported", f"mutation field kind {kind} is not supported")

    def _answer(
        self,
        alias: str,
        writes: tuple[Insert | Update | Delete | NestedUpdate, ...],
        table: Table,
        field: GraphQLField,
        nodes: list[FieldNode],
        single: bool,
        *,
        many: bool = False,
    ) -> MutationRoot:
        if single:
            return MutationRoot(
                alias, writes, table, True, row_fields=self._fields(table, field, nodes)
            )
        resp_type = get_named_type(field.type)
        assert isinstance(resp_type, GraphQLObjectType)
        output: list[tuple[str, OutputItem]] = []
        for key, sub_nodes in self._sub(field, nodes).items():
            name = sub_nodes[0].name.value
            if name == "__typename":
                output.append((key, Typename(resp_type.name)))
            elif _kind(resp_type.fields[name]) == FieldKind.AFFECTED_ROWS:
                output.append((key, AffectedRows()))
            else:
                fields = self._fields(table, resp_type.fields[name], sub_nodes)
                output.append((key, Returning(fields)))
        return MutationRoot(alias, writes, table, False, tuple(output), many=many)

    def _pk_where(self, table: Table, values: dict[str, Any]) -> BoolExp:
        by_gql = {table.column_map[c].gql_name: c for c in table.primary_key}
        return And(
            tuple(
                Compare(col, "_eq", self._param(values.get(gql), table, col))
                for gql, col in by_gql.items()
            )
        )

    # -- permissions --------------------------------------------------------------------
    def _write(self, table: Table, kind: str) -> WriteAccess:
        """The role's `kind` rule on `table`; the schema offers no field without one."""
        rule = self.view.table(table.name).write(kind)
        if rule is None:
            raise SvcError(
                ErrorCode.PERMISSION_ERROR,
                f'{kind} on "{table.name}" for role "{self.role}" is not allowed',
            )
        return rule

    def _filter(self, table: Table, kind: str) -> BoolExp:
        """The role's `filter` of an update or delete permission (true for admin)."""
        rule = self._write(table, kind).filter
        return TRUE if rule is None else filter_exp(self.tables, table, rule)

    def _check(self, table: Table, kind: str) -> BoolExp:
        """The role's `check` of an insert or update permission (true for admin)."""
        rule = self._write(table, kind).check
        return TRUE if rule is None else filter_exp(self.tables, table, rule)

    def _presets(self, table: Table, kind: str) -> list[tuple[str, Param]]:
        """Column presets (`set`) of the role's permission; session variables are read at
        execution like any other session value."""
        presets = self._write(table, kind).presets
        out: list[tuple[str, Param]] = []
        for column, value in presets.items():
            pg_type = table.column_map[column].pg_type
            source = SessionRef(value.lower()) if is_session_variable(value) else Const(value)
            out.append((column, Param(source, pg_type)))
        return out

    @staticmethod
    def _and(a: BoolExp, b: BoolExp) -> BoolExp:
        if a == TRUE:
            return b
        return a if b == TRUE else And((a, b))

    def _delete(self, table: Table, where: BoolExp) -> Delete:
        return Delete(table.name, self._and(where, self._filter(table, "delete")))

    # -- inserts ------------------------------------------------------------------------
    def _insert(self, table: Table, objects: list[Any], on_conflict: Any) -> Insert:
        rows = tuple(self._insert_row(table, o) for o in objects)
        return Insert(
            table.name,
            rows,
            self._on_conflict(table, on_conflict),
            self._check(table, "insert"),
        )

    def _insert_row(self, table: Table, obj: Any) -> InsertRow:
        obj = self.reader.concrete(obj) or {}
        by_gql = {c.gql_name: c for c in table.columns}
        values: list[tuple[str, Param]] = []
        objects: list[NestedInsert] = []
        arrays: list[NestedInsert] = []
        for key, value in obj.items():
            if key in by_gql:
                col = by_gql[key]
                source = value if isinstance(value, VarRef) else Const(value)
                values.append((col.name, Param(source, col.pg_type)))
            elif key in table.relationship_map:
                rel = table.relationship_map[key]
                target = self.tables[rel.target]
                value = self.reader.concrete(value) or {}
                data = self.reader.concrete(value.get("data"))
                if rel.kind == "object":
                    insert = self._insert(target, [data], value.get("on_conflict"))
                    objects.append(NestedInsert(rel.mapping, insert))
                else:
                    insert = self._insert(target, list(data or []), value.get("on_conflict"))
                    arrays.append(NestedInsert(rel.mapping, insert))
        presets = self._presets(table, "insert")
        if presets:
            preset_names = {name for name, _ in presets}
            values = [v for v in values if v[0] not in preset_names] + presets
        return InsertRow(tuple(values), tuple(objects), tuple(arrays))

    def _on_conflict(self, table: Table, value: Any) -> OnConflict | None:
        value = self.reader.concrete(value)
        if not value:
            return None
        columns = tuple(self.reader.concrete(value.get("update_columns")) or ())
        where = self.bool_exp(table, value.get("where"))
        if columns:  # the upsert updates: the role's update filter applies (Hasura)
            where = self._and(where, self._filter(table, "update"))
        return OnConflict(str(self.reader.concrete(value.get("constraint"))), columns, where)

    # -- updates ------------------------------------------------------------------------
    def _update_or_nested(
        self, table: Table, args: dict[str, Any], where: BoolExp
    ) -> Update | NestedUpdate:
        """An update field's write; `svc.plan.nested_update.NestedUpdatePlanner` (the
        planner `plan_operation` uses) plans one with a `_nested` argument as a tree."""
        return self._update(table, args, where)

    def _update(self, table: Table, args: dict[str, Any], where: BoolExp) -> Update:
        by_gql = {c.gql_name: c for c in table.columns}
        sets: list[UpdateSet] = []
        present = False
        for op in UPDATE_OPS:
            values = self.reader.concrete(args.get(op))
            if values is None:
                continue
            present = True
            for key, value in values.items():
                col = by_gql[key]
                source = value if isinstance(value, VarRef) else Const(value)
                pg_type = {
                    "_delete_key": "text",
                    "_delete_elem": "integer",
                    "_delete_at_path": "text",
                }.get(op, col.pg_type)
                sets.append(
                    UpdateSet(col.name, op, Param(source, pg_type, op == "_delete_at_path"))
                )
        seen: dict[str, str] = {}
        for s in sets:
            if s.column in seen and seen[s.column] != s.op:
                raise validation_failed(
                    f'column found in multiple operators; "{s.column}" in {seen[s.column]}, {s.op}',
                    "$.selectionSet",
                )
            seen[s.column] = s.op
        if not present:
            raise validation_failed(
                "at least any one of _set, _inc, _append, _prepend, _delete_key, _delete_elem, "
                "_delete_at_path is expected",
                "$.selectionSet",
            )
        for column, param in self._presets(table, "update"):
            sets = [x for x in sets if x.column != column]
            sets.append(UpdateSet(column, "_set", param))
        where = self._and(where if where is not None else TRUE, self._filter(table, "update"))
        return Update(table.name, where, tuple(sets), self._check(table, "update"))


def _kind(field: Any) -> FieldKind | None:
    """The `FieldInfo.kind` of a schema field (a renamed `affected_rows` is found by it,
    `svc.schema.naming`)."""
    info = field.extensions.get("svc") if field.extensions else None
    return info.kind if isinstance(info, FieldInfo) else None
