"""Plan a validated GraphQL query operation into `QueryPlan` nodes.

Input: the role's schema, the operation, its fragments and the coerced variables. The walk
follows graphql-core's field collection (fragments, `@skip`/`@include`) and reads each
field's meaning from `extensions["svc"]` (`svc.schema.FieldInfo`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    GraphQLSchema,
    OperationDefinitionNode,
    OperationType,
    SelectionSetNode,
    get_named_type,
)
from graphql.execution.collect_fields import collect_fields, collect_sub_fields

from svc.errors import SvcError, pattern_too_long
from svc.ir.agg_predicates import AGG_PREDICATES
from svc.ir.model import ComputedField, FunctionArg, Relationship, Table
from svc.ir.operators import CAST_OPERATOR, CASTS, GEO_TYPES, OPERATORS, Operand
from svc.json_path import parse_json_path
from svc.metadata.model import QualifiedName
from svc.plan.calls import build_call
from svc.plan.groups import plan_groups
from svc.plan.namespaces import NAMESPACE_EXTENSION, flat_alias
from svc.plan.nodes import (
    TRUE,
    AggAggregate,
    AggCount,
    AggItem,
    AggLeaf,
    AggNodes,
    AggOp,
    Aggregate,
    And,
    BoolExp,
    Cast,
    ColumnField,
    Compare,
    Compared,
    ComputedValue,
    Const,
    CountFilter,
    Exists,
    Field,
    FnCall,
    Hop,
    IsNull,
    Not,
    Or,
    OrderKey,
    Param,
    QueryPlan,
    Redacted,
    RelField,
    RootField,
    Rows,
    Select,
    Typename,
    VarRef,
)
from svc.plan.permissions import filter_exp, operator_exp
from svc.plan.stream import plan_stream
from svc.plan.values import ValueReader
from svc.schema.build import schema_view
from svc.schema.info import FieldInfo, FieldKind

ORDER_DIRECTIONS = {
    "asc": (False, False),
    "asc_nulls_last": (False, False),
    "asc_nulls_first": (False, True),
    "desc": (True, True),
    "desc_nulls_first": (True, True),
    "desc_nulls_last": (True, False),
}
# Operands the planner reads whole (a variable inside one changes the plan's shape).
CONCRETE_OPERANDS = frozenset({Operand.BOOLEAN, Operand.D_WITHIN})


class Planner:
    """Plans one operation; `reader.structural` afterwards names the variables it read."""

    def __init__(
        self,
        schema: GraphQLSchema,
        tables: dict[QualifiedName, Table],
        fragments: dict[str, FragmentDefinitionNode],
        variables: dict[str, Any],
        *,
        stringify: bool,
        role: str,
        pattern_limit: int = 0,
    ) -> None:
        self.schema = schema
        self.tables = tables
        self.role = role
        self.pattern_limit = pattern_limit  # longest regular expression operand (0: any)
        # Permissions come from the view the schema was built from (one decision).
        self.view = schema_view(schema)
        self.fragments = fragments
        self.variables = variables
        self.reader = ValueReader(variables)
        self.stringify = stringify

    # -- entry --------------------------------------------------------------------------
    def plan(self, op: OperationDefinitionNode) -> QueryPlan:
        """Plan a query or subscription operation."""
        root_type = (
            self.schema.subscription_type
            if op.operation == OperationType.SUBSCRIPTION
            else self.schema.query_type
        )
        assert root_type is not None
        roots: list[RootField] = []
        for alias, nodes in collect_fields(
            self.schema, self.fragments, self.variables, root_type, op.selection_set
        ).items():
            name = nodes[0].name.value
            if name == "__typename":
                roots.append(RootField(alias, Typename(root_type.name)))
            elif name.startswith("__"):
                roots.append(RootField(alias, None))
            elif NAMESPACE_EXTENSION in root_type.fields[name].extensions:
                roots += self._namespace(alias, root_type.fields[name], nodes)
            else:
                field = root_type.fields[name]
                roots.append(RootField(alias, self._root(field.extensions["svc"], field, nodes)))
        return QueryPlan(op.operation.value, tuple(roots))

    def _namespace(self, alias: str, field: Any, nodes: list[FieldNode]) -> list[RootField]:
        """The root fields inside a source's namespace field (`svc.plan.namespaces`),
        under flattened aliases."""
        space = get_named_type(field.type)
        selection = SelectionSetNode(
            selections=tuple(
                s for n in nodes for s in (n.selection_set.selections if n.selection_set else ())
            )
        )
        out: list[RootField] = []
        for given, found in collect_fields(
            self.schema, self.fragments, self.variables, space, selection
        ).items():
            name, key = found[0].name.value, flat_alias(alias, given)
            if name == "__typename":
                out.append(RootField(key, Typename(space.name)))
            else:
                fdef = space.fields[name]
                out.append(RootField(key, self._root(fdef.extensions["svc"], fdef, found)))
        return out

    def _root(self, info: FieldInfo, field: Any, nodes: list[FieldNode]) -> Select | Aggregate:
        table = info.table
        assert table is not None
        args = self._args(field, nodes[0])
        if info.function is not None:
            fn = info.function
            call = self.call(fn.name, fn.args, fn.arg_order, args.get("args"))
            rows = self._rows(table, args, call)
            if info.kind == FieldKind.FUNCTION_AGGREGATE:
                return aggregate_of(rows, self._agg_fields(table, field, nodes))
            return Select(rows, self._fields(table, field, nodes), single=not fn.returns_set)
        if info.kind == FieldKind.SELECT:
            return Select(self._rows(table, args), self._fields(table, field, nodes))
        if info.kind == FieldKind.SELECT_AGGREGATE:
            return aggregate_of(self._rows(table, args), self._agg_fields(table, field, nodes))
        if info.kind == FieldKind.SELECT_BY_PK:
            where = And(
                tuple(
                    Compare(c, "_eq", self._param(args[table.column_map[c].gql_name], table, c))
                    for c in table.primary_key
                )
            )
            rows = Rows(table.name, self._restricted(table, where))
            return Select(rows, self._fields(table, field, nodes), single=True)
        if info.kind == FieldKind.SELECT_STREAM:
            return plan_stream(self, table, args, self._fields(table, field, nodes))
        if info.kind == FieldKind.SELECT_GROUPS:
            return plan_groups(self, table, field, nodes, args)
        raise SvcError("not-supported", f"root field kind {info.kind} is not supported yet")

    # -- arguments ----------------------------------------------------------------------
    def _args(self, field: Any, node: FieldNode) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for arg in node.arguments or ():
            definition = field.args.get(arg.name.value)
            if definition is not None:
                # `out_name`: the generated name of a renamed argument (`svc.schema.naming`)
                key = definition.out_name or arg.name.value
                out[key] = self.reader.read(arg.value, definition.type)
        return out

    def call(
        self,
        function: QualifiedName,
        defs: tuple[FunctionArg, ...],
        order: tuple[tuple[str, str], ...],
        given: Any,
    ) -> FnCall:
        """A call of `function` with the `args` argument as read (see `build_call`)."""
        return build_call(function, defs, order, self.reader.concrete(given) or {})

    def computed_call(self, cf: ComputedField, given: Any) -> FnCall:
        """The call of a computed field's function on the current row."""
        return self.call(cf.function, cf.args, cf.arg_order, given)

    def permission_filter(self, table: Table) -> BoolExp:
        """The role's row filter on `table` (true for admin)."""
        rule = self.view.table(table.name).filter
        return TRUE if rule is None else filter_exp(self.tables, table, rule)

    def redact(
        self, table: Table, column: str | FnCall, name: str | None = None
    ) -> str | FnCall | Redacted:
        """`column` of `table` (a computed field's call: `name` its field name) as the
        role reads it: redacted when an inherited role shows it in some rows only
        (`TableAccess.cases`, `Redacted`), else itself."""
        cases = self.view.table(table.name).cases
        rule = cases.get(name or str(column)) if cases else None
        if rule is None:
            return column
        return Redacted(column, filter_exp(self.tables, table, rule))

    def _restricted(self, table: Table, where: BoolExp) -> BoolExp:
        check = self.permission_filter(table)
        if check == TRUE:
            return where
        return check if where == TRUE else And((where, check))

    def _rows(self, table: Table, args: dict[str, Any], function: FnCall | None = None) -> Rows:
        where = self._restricted(table, self.bool_exp(table, args.get("where")))
        cap = self.view.table(table.name).limit
        order = self._order_by(table, args.get("order_by"))
        distinct = tuple(self.reader.concrete(args.get("distinct_on")) or ())
        if distinct:
            self._check_distinct(distinct, order)
        return Rows(
            table.name,
            where,
            order,
            self._window(args.get("limit"), "limit"),
            self._window(args.get("offset"), "offset"),
            tuple(self.redact(table, c) for c in distinct),
            cap,
            function,
        )

    def _window(self, value: Any, name: str) -> Param | None:
        if value is None:
            return None
        if isinstance(value, VarRef):
            return Param(value, "integer")
        if isinstance(value, int) and value < 0:
            raise SvcError(
                "validation-failed",
                f"unexpected negative value for {name}",
                path=f"$.selectionSet.{name}",
            )
        return Param(Const(value), "integer")

    def _check_distinct(self, distinct: tuple[str, ...], order: tuple[OrderKey, ...]) -> None:
        leading = [plain_leaf(k.leaf) for k in order[: len(distinct)] if not k.path]
        if order and set(leading) != set(distinct):
            raise SvcError(
                "validation-failed",
                '"distinct_on" columns must match initial "order_by" columns',
                path="$.args",
            )

    def _param(self, value: Any, table: Table, column: str, *, is_list: bool = False) -> Param:
        col = table.column_map[column]
        source = value if isinstance(value, VarRef) else Const(value)
        return Param(source, col.pg_type, is_list)

    # -- boolean expressions ------------------------------------------------------------
    def bool_exp(self, table: Table, value: Any) -> BoolExp:
        """Plan a `x_bool_exp` value (already read); `None` or `{}` is true."""
        value = self.reader.concrete(value)
        if not value:
            return TRUE
        items: list[BoolExp] = []
        by_gql = {c.gql_name: c for c in table.columns}
        for key, sub in value.items():
            if key == "_and":
                items.append(And(tuple(self.bool_exp(table, v) for v in sub or ())))
            elif key == "_or":
                items.append(Or(tuple(self.bool_exp(table, v) for v in sub or ())))
            elif key == "_not":
                if sub is not None:
                    items.append(Not(self.bool_exp(table, sub)))
            elif key in by_gql:
                col = by_gql[key]
                items.extend(self._column_ops(self.redact(table, col.name), col.pg_type, sub))
            elif key in table.relationship_map:
                rel = table.relationship_map[key]
                target = self._target(rel)
                inner = self._restricted(target, self.bool_exp(target, sub))
                items.append(Exists(target.name, rel.mapping, inner))
            elif key in table.computed_field_map:
                items.extend(self._computed_exp(table, table.computed_field_map[key], sub))
            elif key.endswith("_aggregate") and key[: -len("_aggregate")] in table.relationship_map:
                rel = table.relationship_map[key[: -len("_aggregate")]]
                items.extend(self._aggregate_filter(rel, sub))
        return items[0] if len(items) == 1 else And(tuple(items))

    def _aggregate_filter(self, rel: Relationship, sub: Any) -> list[BoolExp]:
        """`<rel>_aggregate: {<fn>: {arguments, distinct, filter, predicate}}`
        (`svc.schema.agg_bool_exp`, `svc.ir.agg_predicates`): the aggregate of the related
        rows the role's filter admits. Exactly one predicate, as the reference's parser
        requires (400 `validation-failed` otherwise)."""
        given = {
            k: v
            for k, v in (self.reader.concrete(sub) or {}).items()
            if self.reader.concrete(v) is not None
        }
        if len(given) != 1:
            raise SvcError("validation-failed", "exactly one predicate should be specified")
        ((name, value),) = given.items()
        fn = AGG_PREDICATES[name]
        spec = self.reader.concrete(value)
        target = self._target(rel)
        where = self._restricted(target, self.bool_exp(target, spec.get("filter")))
        arguments = self.reader.concrete(spec.get("arguments"))
        if fn.arg_type is None:
            names = tuple(str(self.reader.concrete(c)) for c in arguments or ())
        elif fn.arg_names:
            named = arguments or {}
            names = tuple(str(self.reader.concrete(named[a])) for a in fn.arg_names)
        else:
            names = (str(arguments),)
        columns = tuple(self.redact(target, c) for c in names)
        predicate = self._column_ops("count", fn.returns, spec.get("predicate"))
        distinct = bool(self.reader.concrete(spec.get("distinct")))
        exp = CountFilter(
            target.name, rel.mapping, where, columns, distinct, And(tuple(predicate)), fn.name
        )
        return [exp]

    def _computed_exp(self, table: Table, cf: ComputedField, sub: Any) -> list[BoolExp]:
        call = self.computed_call(cf, None)
        if cf.returns_table is None:
            return self._column_ops(self.redact(table, call, cf.name), cf.pg_type or "text", sub)
        target = self.tables[cf.returns_table]
        inner = self._restricted(target, self.bool_exp(target, sub))
        return [Exists(target.name, (), inner, call)]

    def _column_ops(self, column: Compared, pg_type: str, ops: Any) -> list[BoolExp]:
        ops = self.reader.concrete(ops) or {}
        out: list[BoolExp] = []
        for op, value in ops.items():
            if value is None:
                continue  # Hasura: a null operand makes the comparison true
            if op == CAST_OPERATOR:
                out.extend(self._cast_ops(column, pg_type, value))
                continue
            if OPERATORS[op].operand in CONCRETE_OPERANDS:
                value = self.reader.concrete(value)
            exp = operator_exp(column, pg_type, op, value, self._any_param)
            if self.pattern_limit and OPERATORS[op].pattern and isinstance(exp, Compare):
                exp = self._bounded(exp)
            out.append(exp)
        return out

    def _bounded(self, exp: Compare) -> Compare:
        """A regular expression operand held to `pattern_limit` characters: a literal now,
        a variable's value when the statement's arguments are resolved."""
        param, limit = exp.value, self.pattern_limit
        if isinstance(param.source, Const) and isinstance(param.source.value, str):
            if len(param.source.value) > limit:
                raise pattern_too_long(len(param.source.value), limit)
            return exp
        return replace(exp, value=replace(param, max_chars=limit))

    def _cast_ops(self, column: Compared, pg_type: str, value: Any) -> list[BoolExp]:
        """`_cast: {<Target>: <comparison>}`: each comparison on the value cast to the
        target (`CASTS` of the compared type; the schema offers no other key)."""
        targets = CASTS[pg_type.rsplit(".", 1)[-1]]
        out: list[BoolExp] = []
        for name, ops in (self.reader.concrete(value) or {}).items():
            target = targets[name].pg_type
            out.extend(self._column_ops(Cast(column, target), target, ops))
        return out

    def _any_param(self, value: Any, pg_type: str, *, is_list: bool) -> Param:
        return self._list_param(value, pg_type) if is_list else self._scalar_param(value, pg_type)

    def _scalar_param(self, value: Any, pg_type: str) -> Param:
        return Param(value if isinstance(value, VarRef) else Const(value), pg_type)

    def _list_param(self, value: Any, pg_type: str) -> Param:
        if isinstance(value, list) and any(isinstance(v, VarRef) for v in value):
            value = [self.reader.concrete(v) for v in value]
        return Param(value if isinstance(value, VarRef) else Const(value), pg_type, True)

    def _target(self, rel: Relationship) -> Table:
        return self.tables[rel.target]

    # -- ordering -----------------------------------------------------------------------
    def _order_by(self, table: Table, value: Any) -> tuple[OrderKey, ...]:
        value = self.reader.concrete(value)
        if value is None:
            return ()
        if isinstance(value, dict):
            value = [value]
        keys: list[OrderKey] = []
        for item in value:
            keys.extend(self._order_item(table, self.reader.concrete(item) or {}, ()))
        return tuple(keys)

    def _order_item(
        self, table: Table, item: dict[str, Any], path: tuple[Hop, ...]
    ) -> list[OrderKey]:
        keys: list[OrderKey] = []
        by_gql = {c.gql_name: c for c in table.columns}
        for key, sub in item.items():
            sub = self.reader.concrete(sub)
            if sub is None:
                continue
            if key in by_gql:
                keys.append(_key(path, self.redact(table, by_gql[key].name), sub))
            elif key in table.computed_field_map:
                cf = table.computed_field_map[key]
                call = self.computed_call(cf, None)
                keys.append(_key(path, self.redact(table, call, cf.name), sub))
            elif (
                key.endswith("_aggregate") and key[: -len("_aggregate")] in table.computed_field_map
            ):
                cf = table.computed_field_map[key[: -len("_aggregate")]]
                assert cf.returns_table is not None
                target = self.tables[cf.returns_table]
                keys.extend(self._agg_order(path, target, (), sub, self.computed_call(cf, None)))
            elif key in table.relationship_map:
                rel = table.relationship_map[key]
                target = self._target(rel)
                hop = Hop(target.name, rel.mapping, self.permission_filter(target))
                keys.extend(self._order_item(target, sub, (*path, hop)))
            elif key.endswith("_aggregate") and key[: -len("_aggregate")] in table.relationship_map:
                rel = table.relationship_map[key[: -len("_aggregate")]]
                keys.extend(self._agg_order(path, self._target(rel), rel.mapping, sub, None))
        return keys

    def _agg_order(
        self,
        path: tuple[Hop, ...],
        target: Table,
        mapping: tuple[tuple[str, str], ...],
        sub: dict[str, Any],
        function: FnCall | None,
    ) -> list[OrderKey]:
        keys: list[OrderKey] = []
        where = self.permission_filter(target)
        for op, cols in sub.items():
            cols = self.reader.concrete(cols)
            if cols is None:
                continue
            if op == "count":
                leaf = AggLeaf(target.name, mapping, "count", None, function, where)
                keys.append(_key(path, leaf, cols))
                continue
            tcols = {c.gql_name: c for c in target.columns}
            for col_name, direction in (cols or {}).items():
                direction = self.reader.concrete(direction)
                if direction is None:
                    continue
                column = self.redact(target, tcols[col_name].name)
                leaf = AggLeaf(target.name, mapping, op, column, function, where)
                keys.append(_key(path, leaf, direction))
        return keys

    # -- selections ---------------------------------------------------------------------
    def _sub(self, field: Any, nodes: list[FieldNode]) -> dict[str, list[FieldNode]]:
        return collect_sub_fields(
            self.schema, self.fragments, self.variables, get_named_type(field.type), nodes
        )

    def _fields(
        self, table: Table, field: Any, nodes: list[FieldNode]
    ) -> tuple[tuple[str, Field], ...]:
        obj_type = get_named_type(field.type)
        out: list[tuple[str, Field]] = []
        for alias, sub_nodes in self._sub(field, nodes).items():
            name = sub_nodes[0].name.value
            if name == "__typename":
                out.append((alias, Typename(obj_type.name)))
                continue
            sub_field = obj_type.fields[name]
            info: FieldInfo = sub_field.extensions["svc"]
            out.append((alias, self._cased(table, info, self._field(info, sub_field, sub_nodes))))
        return tuple(out)

    def _cased(self, table: Table, info: FieldInfo, f: Field) -> Field:
        """`f` with an inherited role's case filter: its value only in the rows a parent
        granting it admits (`svc.ir.inherited`, `TableAccess.cases`)."""
        if not isinstance(f, ColumnField | ComputedValue):
            return f
        cases = self.view.table(table.name).cases
        named = info.column if isinstance(f, ColumnField) else info.computed
        rule = cases.get(named.name) if cases and named is not None else None
        if rule is None:
            return f
        return replace(f, case=filter_exp(self.tables, table, rule))

    def _field(self, info: FieldInfo, field: Any, nodes: list[FieldNode]) -> Field:
        if info.kind == FieldKind.COLUMN:
            col = info.column
            assert col is not None
            args = self._args(field, nodes[0])
            path = self.reader.concrete(args.get("path"))
            keys = list(parse_json_path(path)) if path is not None else None
            return ColumnField(
                col.name,
                self.stringify and col.stringifiable,
                Param(Const(keys), "text", True) if keys is not None else None,
                col.type_name in GEO_TYPES,
            )
        if info.computed is not None:
            cf = info.computed
            args = self._args(field, nodes[0])
            call = self.computed_call(cf, args.get("args"))
            if cf.returns_table is None:
                return ComputedValue(call, self.stringify and cf.stringifiable)
            returned = self.tables[cf.returns_table]
            return RelField(
                (), Select(self._rows(returned, args, call), self._fields(returned, field, nodes))
            )
        rel = info.relationship
        target = info.table
        assert rel is not None and target is not None
        args = self._args(field, nodes[0])
        if info.kind == FieldKind.OBJECT_REL:
            rows = Rows(target.name, self.permission_filter(target))
            sel = Select(rows, self._fields(target, field, nodes), single=True)
        elif info.kind == FieldKind.ARRAY_REL:
            sel = Select(self._rows(target, args), self._fields(target, field, nodes))
        elif info.kind == FieldKind.ARRAY_GROUPS:
            return RelField(rel.mapping, plan_groups(self, target, field, nodes, args))
        else:
            return RelField(
                rel.mapping,
                aggregate_of(self._rows(target, args), self._agg_fields(target, field, nodes)),
            )
        return RelField(rel.mapping, sel, rel.unique and info.kind == FieldKind.OBJECT_REL)

    def _agg_fields(
        self, table: Table, field: Any, nodes: list[FieldNode]
    ) -> tuple[tuple[str, AggAggregate | AggNodes | Typename], ...]:
        agg_type = get_named_type(field.type)
        out: list[tuple[str, AggAggregate | AggNodes | Typename]] = []
        for alias, sub_nodes in self._sub(field, nodes).items():
            name = sub_nodes[0].name.value
            if name == "__typename":
                out.append((alias, Typename(agg_type.name)))
            elif name == "nodes":
                out.append((alias, AggNodes(self._fields(table, agg_type.fields[name], sub_nodes))))
            else:
                out.append((alias, self._aggregate(table, agg_type.fields[name], sub_nodes)))
        return tuple(out)

    def _aggregate(self, table: Table, field: Any, nodes: list[FieldNode]) -> AggAggregate:
        fields_type = get_named_type(field.type)
        items: list[tuple[str, AggItem]] = []
        for alias, sub_nodes in self._sub(field, nodes).items():
            name = sub_nodes[0].name.value
            if name == "__typename":
                items.append((alias, Typename(fields_type.name)))
                continue
            sub_field = fields_type.fields[name]
            if name == "count":
                args = self._args(sub_field, sub_nodes[0])
                cols = tuple(
                    self.redact(table, c) for c in self.reader.concrete(args.get("columns")) or ()
                )
                items.append(
                    (alias, AggCount(cols, bool(self.reader.concrete(args.get("distinct")))))
                )
                continue
            op_type = get_named_type(sub_field.type)
            cols_out: list[tuple[str, Compared, bool]] = []
            for col_alias, col_nodes in self._sub(sub_field, sub_nodes).items():
                col_name = col_nodes[0].name.value
                if col_name == "__typename":
                    cols_out.append((col_alias, "", False))
                    continue
                info: FieldInfo = op_type.fields[col_name].extensions["svc"]
                assert info.column is not None
                # Hasura stringifies by the source column's type, whatever the operator.
                as_text = self.stringify and info.column.stringifiable
                cols_out.append((col_alias, self.redact(table, info.column.name), as_text))
            # the operator, whatever the field's name (`svc.schema.naming`: `stddevPop`)
            op = getattr(sub_field.extensions.get("svc"), "op", "") or name
            items.append((alias, AggOp(op, tuple(cols_out), op_type.name)))
        return AggAggregate(tuple(items))


def aggregate_of(
    rows: Rows, fields: tuple[tuple[str, AggAggregate | AggNodes | Typename], ...]
) -> Aggregate:
    """An `x_aggregate` over `rows`. With `aggregate` selected, a permission's row limit
    caps `nodes` only and the aggregate is computed over every permitted row in the
    request's window, as the reference does (`Hasura/Backends/Postgres/Translate/Select/
    Internal/Process.hs` `mkPermissionLimitSubQuery`: `PLSQRequired` keeps the permission
    limit off the base select and `withJsonAggExtr` applies it to the nodes' `json_agg`)."""
    cap = rows.limit_cap
    if cap is None or not any(isinstance(f, AggAggregate) for _, f in fields):
        return Aggregate(rows, fields)
    return Aggregate(replace(rows, limit_cap=None), fields, cap)


def plain_leaf(leaf: Any) -> Any:
    """An order leaf without its redaction (what `distinct_on` names)."""
    return leaf.column if isinstance(leaf, Redacted) else leaf


def _key(
    path: tuple[Hop, ...], leaf: str | AggLeaf | FnCall | Redacted, direction: Any
) -> OrderKey:
    descending, nulls_first = ORDER_DIRECTIONS[direction or "asc"]
    return OrderKey(path, leaf, descending, nulls_first)


def plan_query(
    schema: GraphQLSchema,
    tables: dict[QualifiedName, Table],
    op: OperationDefinitionNode,
    fragments: dict[str, FragmentDefinitionNode],
    variables: dict[str, Any],
    *,
    stringify: bool,
    role: str,
    pattern_limit: int = 0,
    kind: type[Planner] | None = None,
) -> tuple[QueryPlan, frozenset[str], frozenset[str]]:
    """Plan `op` for `role`; returns the plan, the structural and the leaf variables used.
    `pattern_limit`: the longest regular expression operand (0: any); `kind`: the
    planner class (None: `Planner`; the Relay API's `RelayPlanner`)."""
    planner = (kind or Planner)(
        schema,
        tables,
        fragments,
        variables,
        stringify=stringify,
        role=role,
        pattern_limit=pattern_limit,
    )
    plan = planner.plan(op)
    return plan, frozenset(planner.reader.structural), frozenset(planner.reader.leaf_vars)


__all__ = ["Exists", "IsNull", "Not", "Or", "plan_query"]
