"""Mutation types and root fields (reference notes, "Generated GraphQL names"):
`insert_x`, `insert_x_one`, `update_x`, `update_x_by_pk`, `update_x_many`, `delete_x`,
`delete_x_by_pk`, with `x_insert_input`, `x_obj_rel_insert_input`,
`x_arr_rel_insert_input`, `x_on_conflict`, `x_constraint`, `x_update_column`,
`x_set_input`, `x_inc_input`, jsonb operator inputs, `x_pk_columns_input`, `x_updates`
and `x_mutation_response`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from graphql import (
    GraphQLArgument,
    GraphQLEnumType,
    GraphQLEnumValue,
    GraphQLField,
    GraphQLInputField,
    GraphQLInputObjectType,
    GraphQLInt,
    GraphQLList,
    GraphQLObjectType,
    GraphQLString,
)

from svc.ir.model import Column, Table
from svc.schema.info import info as _info
from svc.schema.info import list_nn as _list_nn
from svc.schema.info import nn as _nn

if TYPE_CHECKING:
    from svc.schema.build import SchemaBuilder

JSONB_UPDATE_OPS = ("_append", "_prepend", "_delete_key", "_delete_elem", "_delete_at_path")


class MutationTypes:
    """Builds mutation types for one `SchemaBuilder` (shares its memo and scalars)."""

    def __init__(self, b: SchemaBuilder) -> None:
        self.b = b

    # -- what the role may write (Hasura's rules) ---------------------------------------
    def insert_cols(self, table: Table) -> tuple[Column, ...] | None:
        """Columns the role may give on insert (presets excluded); None: no insert."""
        return self._writable(table, "insert") if table.insertable else None

    def update_cols(self, table: Table) -> tuple[Column, ...] | None:
        """Columns the role may set on update (presets excluded); None: no update. Updates
        need a select permission too (their `where` reads the table)."""
        if not table.updatable_rows or table.name not in self.b.tables:
            return None
        return self._writable(table, "update")

    def _writable(self, table: Table, kind: str) -> tuple[Column, ...] | None:
        if self.b.role == "admin":
            return table.columns
        perm = getattr(table, f"{kind}_permissions").get(self.b.role)
        if perm is None or perm.backend_only:
            return None
        return tuple(c for c in table.columns if c.name in perm.columns and c.name not in perm.set)

    def can_delete(self, table: Table) -> bool:
        """Whether the role may delete (which needs a select permission too)."""
        if not table.deletable or table.name not in self.b.tables:
            return False
        if self.b.role == "admin":
            return True
        perm = table.delete_permissions.get(self.b.role)
        return perm is not None and not perm.backend_only

    def can_select(self, table: Table) -> bool:
        """Whether the role may read rows back (`returning`, `_one`, `_by_pk`)."""
        return table.name in self.b.tables

    def pk_visible(self, table: Table) -> bool:
        """Whether every primary key column is selectable (needed by `_by_pk` fields)."""
        if not table.primary_key or not self.can_select(table):
            return False
        visible = {c.name for c in self.b.cols(table)}
        return all(c in visible for c in table.primary_key)

    def _input(self, name: str, fields: Any, description: str = "") -> GraphQLInputObjectType:
        return self.b._memo(  # type: ignore[no-any-return]
            name, lambda: GraphQLInputObjectType(name, fields, description=description or None)
        )

    def insert_input(self, table: Table) -> GraphQLInputObjectType:
        """`x_insert_input`: every column, plus relationship inserts."""

        def fields() -> dict[str, GraphQLInputField]:
            cols = self.insert_cols(table) or ()
            f = {c.gql_name: GraphQLInputField(self.b.scalar(c.scalar)) for c in cols}
            for rel in table.relationships:
                target = self.b.ir.tables.get(rel.target)
                if target is None or not target.gql_name or self.insert_cols(target) is None:
                    continue
                if rel.kind == "object":
                    f[rel.name] = GraphQLInputField(self.obj_rel_input(target))
                else:
                    f[rel.name] = GraphQLInputField(self.arr_rel_input(target))
            return f

        return self._input(
            f"{table.gql_name}_insert_input",
            fields,
            f'input type for inserting data into table "{table.name}"',
        )

    def obj_rel_input(self, table: Table) -> GraphQLInputObjectType:
        """`x_obj_rel_insert_input {data, on_conflict}`."""
        return self._rel_input(table, "obj_rel_insert_input", _nn(self.insert_input(table)))

    def arr_rel_input(self, table: Table) -> GraphQLInputObjectType:
        """`x_arr_rel_insert_input {data, on_conflict}`."""
        data = _nn(_list_nn(self.insert_input(table)))
        return self._rel_input(table, "arr_rel_insert_input", data)

    def _rel_input(self, table: Table, suffix: str, data: Any) -> GraphQLInputObjectType:
        fields: dict[str, GraphQLInputField] = {"data": GraphQLInputField(data)}
        conflict = self.on_conflict(table)
        if conflict is not None:
            fields["on_conflict"] = GraphQLInputField(conflict)
        return self._input(f"{table.gql_name}_{suffix}", fields)

    def on_conflict(self, table: Table) -> GraphQLInputObjectType | None:
        """`x_on_conflict {constraint, update_columns, where}`: only with a unique key, and
        for a role only with an update permission (an upsert updates)."""
        if not table.unique_constraints or self.update_cols(table) is None:
            return None
        constraint = self.b._memo(
            f"{table.gql_name}_constraint",
            lambda: GraphQLEnumType(
                f"{table.gql_name}_constraint",
                {name: GraphQLEnumValue(name) for name, _ in table.unique_constraints},
                description=f'unique or primary key constraints on table "{table.name}"',
            ),
        )
        fields = {
            "constraint": GraphQLInputField(_nn(constraint)),
            "update_columns": GraphQLInputField(
                _nn(_list_nn(self.update_column(table))), default_value=[]
            ),
            "where": GraphQLInputField(self.b.bool_exp(table)),
        }
        return self._input(f"{table.gql_name}_on_conflict", fields)

    def update_column(self, table: Table) -> GraphQLEnumType:
        """`x_update_column`: the columns an upsert may update."""
        name = f"{table.gql_name}_update_column"
        values = {c.gql_name: GraphQLEnumValue(c.name) for c in self.update_cols(table) or ()}
        return self.b._memo(  # type: ignore[no-any-return]
            name, lambda: GraphQLEnumType(name, values or {"_PLACEHOLDER": GraphQLEnumValue("")})
        )

    def _columns_input(
        self, table: Table, suffix: str, cols: list[Column], scalar: Any = None
    ) -> GraphQLInputObjectType:
        return self._input(
            f"{table.gql_name}_{suffix}",
            {c.gql_name: GraphQLInputField(scalar or self.b.scalar(c.scalar)) for c in cols},
        )

    def update_args(self, table: Table) -> dict[str, GraphQLArgument]:
        """`_set`, `_inc` and the jsonb operators an update takes."""
        cols = list(self.update_cols(table) or ())
        args = {"_set": GraphQLArgument(self._columns_input(table, "set_input", cols))}
        numeric = [c for c in cols if c.is_numeric and not c.is_array]
        if numeric:
            args["_inc"] = GraphQLArgument(self._columns_input(table, "inc_input", numeric))
        jsonb = [c for c in cols if c.type_name == "jsonb"]
        if jsonb:
            scalar = self.b.scalar("jsonb")
            args["_append"] = GraphQLArgument(self._columns_input(table, "append_input", jsonb))
            args["_prepend"] = GraphQLArgument(self._columns_input(table, "prepend_input", jsonb))
            args["_delete_key"] = GraphQLArgument(
                self._columns_input(table, "delete_key_input", jsonb, GraphQLString)
            )
            args["_delete_elem"] = GraphQLArgument(
                self._columns_input(table, "delete_elem_input", jsonb, GraphQLInt)
            )
            args["_delete_at_path"] = GraphQLArgument(
                self._columns_input(table, "delete_at_path_input", jsonb, _list_nn(GraphQLString))
            )
            del scalar
        return args

    def pk_columns(self, table: Table) -> GraphQLInputObjectType:
        """`x_pk_columns_input`."""
        fields = {}
        for name in table.primary_key:
            col = table.column_map[name]
            fields[col.gql_name] = GraphQLInputField(_nn(self.b.scalar(col.scalar)))
        return self._input(
            f"{table.gql_name}_pk_columns_input",
            fields,
            f"primary key columns input for table: {table.name}",
        )

    def response(self, table: Table) -> GraphQLObjectType:
        """`x_mutation_response {affected_rows, returning}`; `returning` only for a role that
        may select the table."""
        name = f"{table.gql_name}_mutation_response"

        def fields() -> dict[str, GraphQLField]:
            f = {"affected_rows": GraphQLField(_nn(GraphQLInt), extensions=_info("affected_rows"))}
            if self.can_select(table):
                f["returning"] = GraphQLField(
                    _nn(_list_nn(self.b.object_type(table))), extensions=_info("returning")
                )
            return f

        return self.b._memo(  # type: ignore[no-any-return]
            name,
            lambda: GraphQLObjectType(
                name, fields, description=f'response of any mutation on the table "{table.name}"'
            ),
        )

    def fields(self, table: Table) -> dict[str, GraphQLField]:
        """The mutation root fields of one table."""
        rf = table.root_fields
        out: dict[str, GraphQLField] = {}
        has_pk = self.pk_visible(table)
        if self.insert_cols(table) is not None:
            args = {"objects": GraphQLArgument(_nn(_list_nn(self.insert_input(table))))}
            one = {"object": GraphQLArgument(_nn(self.insert_input(table)))}
            conflict = self.on_conflict(table)
            if conflict is not None:
                args["on_conflict"] = GraphQLArgument(conflict)
                one["on_conflict"] = GraphQLArgument(conflict)
            out[rf.insert] = GraphQLField(
                self.response(table),
                args,
                extensions=_info("insert", table=table),
                description=f'insert data into the table: "{table.name}"',
            )
            if self.can_select(table):
                out[rf.insert_one] = GraphQLField(
                    self.b.object_type(table),
                    one,
                    extensions=_info("insert_one", table=table),
                    description=f'insert a single row into the table: "{table.name}"',
                )
        if self.update_cols(table) is not None:
            upd = self.update_args(table)
            out[rf.update] = GraphQLField(
                self.response(table),
                {**upd, "where": GraphQLArgument(_nn(self.b.bool_exp(table)))},
                extensions=_info("update", table=table),
                description=f'update data of the table: "{table.name}"',
            )
            if has_pk:
                out[rf.update_by_pk] = GraphQLField(
                    self.b.object_type(table),
                    {**upd, "pk_columns": GraphQLArgument(_nn(self.pk_columns(table)))},
                    extensions=_info("update_by_pk", table=table),
                    description=f'update single row of the table: "{table.name}"',
                )
            updates = self._input(
                f"{table.gql_name}_updates",
                {
                    **{k: GraphQLInputField(a.type) for k, a in upd.items()},
                    "where": GraphQLInputField(_nn(self.b.bool_exp(table))),
                },
            )
            out[rf.update_many] = GraphQLField(
                GraphQLList(self.response(table)),
                {"updates": GraphQLArgument(_nn(_list_nn(updates)))},
                extensions=_info("update_many", table=table),
                description=f'update multiples rows of table: "{table.name}"',
            )
        if self.can_delete(table):
            out[rf.delete] = GraphQLField(
                self.response(table),
                {"where": GraphQLArgument(_nn(self.b.bool_exp(table)))},
                extensions=_info("delete", table=table),
                description=f'delete data from the table: "{table.name}"',
            )
            if has_pk:
                out[rf.delete_by_pk] = GraphQLField(
                    self.b.object_type(table),
                    {
                        table.column_map[c].gql_name: GraphQLArgument(
                            _nn(self.b.scalar(table.column_map[c].scalar))
                        )
                        for c in table.primary_key
                    },
                    extensions=_info("delete_by_pk", table=table),
                    description=f'delete single row from the table: "{table.name}"',
                )
        return out
